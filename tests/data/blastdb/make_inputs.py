"""Write the FASTA inputs of the BLAST database fixtures (deterministic; see README.md)."""

import random

rng = random.Random(4141)


def rs(n):
    return "".join(rng.choice("ACGT") for _ in range(n))


def write(path, records):
    with open(path, "w") as fh:
        for name, seq in records:
            fh.write(f">{name}\n")
            for i in range(0, len(seq), 60):
                fh.write(seq[i:i + 60] + "\n")


db = [
    ("gi|9626243|ref|NC_001416.1| Enterobacteria phage lambda, complete genome", rs(3000)),
    ("NC_000913.3 Escherichia coli str. K-12 substr. MG1655, complete genome" + " long title" * 40, rs(2000)),
    ("contig_7 some description", rs(700) + "N" * 50 + rs(700) + "RYKM" + rs(300)),
    ("lcl|mylocal desc here", rs(1200)),
    ("gnl|SRA|SRR123.1 gnl id", rs(900)),
    ("emb|CAA12345.1| embl entry", rs(800)),
    ("plainword", "ACGTNNNNNWSACGT" + rs(500) + "N" * 5000 + rs(301)),
    ("short_runs only runs of a few ambiguous bases (BLAST+'s older, one-word encoding)",
     rs(600) + "NNNNN" + rs(7) + "W" + rs(100) + "YR" + rs(300)),
]
write("db.fa", db)
many = [(f"seq{i} record {i} of many", rs(1500 + 37 * i)) for i in range(12)]
write("many.fa", many)
queries = []
for name, seq in db + many:
    s = list(seq[100:600])
    for k in range(0, len(s), 41):  # a substitution every 41 bases
        s[k] = "ACGT"[("ACGT".index(s[k]) + 1) % 4] if s[k] in "ACGT" else "A"
    queries.append((f"q_{name.split()[0].replace('|', '_')} query", "".join(s)))
write("queries.fa", queries)

"""Inputs of the blastn-short and dc-megablast fixtures (deterministic, seeded; README.md).

``db.fa``: 24 simulated genes (coding sequences of 600-1,800 bp: random codons between a start and a
stop) in 6 records with random spacers, and the first 8,000 bp of the embedded lambda genome.
``short.fa``: 60 primers and probes of 20-30 bp cut from ``db.fa`` (either strand), a third of them
with one or two substitutions, and 6 random ones. ``dc.fa``: each gene as a "cross-species"
ortholog: codons changed synonymously-like (the third base at 45 %, the first two at 5 %), a few
codon indels, 20-30 % divergent overall; and 4 lambda pieces of 1-2 kb at 25 % uniform divergence.
"""

from __future__ import annotations

import numpy as np

from gseek.datasets import lambda_genome
from gseek.seqio import read_fastx

BASES = "ACGT"
COMP = str.maketrans("ACGT", "TGCA")


def _random(rng, n: int) -> str:
    return "".join(BASES[i] for i in rng.integers(0, 4, n))


def _gene(rng) -> str:
    stops = {"TAA", "TAG", "TGA"}
    codons, n = [], int(rng.integers(200, 600))
    while len(codons) < n:
        c = _random(rng, 3)
        if c not in stops:
            codons.append(c)
    return "ATG" + "".join(codons) + "TAA"


def _diverge_codons(rng, gene: str, third: float, first_two: float) -> str:
    out = []
    for k in range(0, len(gene) - 2, 3):
        codon = list(gene[k:k + 3])
        for j, rate in ((0, first_two), (1, first_two), (2, third)):
            if rng.random() < rate:
                codon[j] = BASES[(BASES.index(codon[j]) + int(rng.integers(1, 4))) % 4]
        if rng.random() < 0.004:  # a codon lost or gained
            continue
        out.append("".join(codon))
        if rng.random() < 0.004:
            out.append(_random(rng, 3))
    return "".join(out)


def _diverge(rng, seq: str, rate: float) -> str:
    return "".join(BASES[(BASES.index(c) + int(rng.integers(1, 4))) % 4] if rng.random() < rate else c for c in seq)


def _write(path: str, records: list[tuple[str, str]]) -> None:
    with open(path, "w") as f:
        for name, seq in records:
            f.write(f">{name}\n")
            for k in range(0, len(seq), 70):
                f.write(seq[k:k + 70] + "\n")


def main(out: str = ".", n_records: int = 6, probes: int = 60, seed: int = 41, lambda_bases: int = 8000,
         harder: float = 0.0) -> None:
    """The fixtures (the defaults), or a larger set of the same kinds (``benchmarks/tools/blast_tasks_recall.py``):
    ``n_records`` records of 4 genes each, ``probes`` primers and probes; ``harder`` added to the
    orthologs' third-base rate (a third of it to the other two) and to the lambda pieces' rate."""
    rng = np.random.default_rng(seed)
    genes = [_gene(rng) for _ in range(4 * n_records)]
    records = []
    for r in range(n_records):
        parts = [_random(rng, int(rng.integers(200, 800)))]
        for g in genes[4 * r:4 * r + 4]:
            parts += [g, _random(rng, int(rng.integers(200, 800)))]
        records.append((f"contig{r + 1}", "".join(parts)))
    lam = read_fastx(lambda_genome()).sequence(0)[:lambda_bases]
    records.append(("lambda8k", lam))
    _write(f"{out}/db.fa", records)
    text = "".join(s for _, s in records)
    short = []
    for k in range(probes):
        n = int(rng.integers(20, 31))
        rec = records[int(rng.integers(0, len(records)))][1]
        a = int(rng.integers(0, len(rec) - n))
        p = rec[a:a + n]
        for _ in range(k % 3):  # 0, 1 or 2 substitutions
            i = int(rng.integers(0, n))
            p = p[:i] + BASES[(BASES.index(p[i]) + 1) % 4] + p[i + 1:]
        if rng.random() < 0.5:
            p = p.translate(COMP)[::-1]
        short.append((f"probe{k + 1}", p))
    short += [(f"random{k + 1}", _random(rng, int(rng.integers(20, 31)))) for k in range(6)]
    _write(f"{out}/short.fa", short)
    dc = []
    for k, g in enumerate(genes):
        o = _diverge_codons(rng, g, 0.5 + 0.1 * (k % 3) + harder, 0.05 + 0.02 * (k % 2) + harder / 3)
        dc.append((f"ortholog{k + 1}", o if k % 2 else o.translate(COMP)[::-1]))
    for k in range(4):
        a = int(rng.integers(0, len(lam) - 2000))
        dc.append((f"lambda_div{k + 1}", _diverge(rng, lam[a:a + int(rng.integers(1000, 2000))], 0.25 + harder / 2)))
    _write(f"{out}/dc.fa", dc)
    assert len(text) > 20000


if __name__ == "__main__":
    main()

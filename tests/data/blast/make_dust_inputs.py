"""Write dust.fa and dust_n.fa: hand-made low-complexity records for the dustmasker runs of README.md (poly-A,
di- and trinucleotide repeats of varied lengths inside seeded random sequence, an N inside a repeat,
repeats at a record's ends, repeats a few bases apart, one random record with nothing to mask),
and dust_n.fa: runs of N inside and at the ends of records; dust_mixed_n.fa: 200 seeded records
mixing random stretches, runs of N (1-120), homopolymers (2-140, so that blastn's masker restarts),
short-period repeats and N-sprinkled stretches, for blastn's own DUST (blastn_dust.py).
Deterministic: run it again and the file comes out byte-identical."""

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def main() -> None:
    rng = np.random.default_rng(2006)

    def rand(n: int) -> str:
        return "".join("ACGT"[i] for i in rng.integers(0, 4, n))

    records = {
        "random_300": rand(300),
        "polyA_8": rand(80) + "A" * 8 + rand(80),
        "polyA_12": rand(80) + "A" * 12 + rand(80),
        "polyA_30": rand(100) + "A" * 30 + rand(100),
        "polyT_90": rand(50) + "T" * 90 + rand(50),
        "AC_10": rand(80) + "AC" * 10 + rand(80),
        "AG_25": rand(100) + "AG" * 25 + rand(100),
        "CA_100": rand(60) + "CA" * 100 + rand(60),
        "CAG_7": rand(80) + "CAG" * 7 + rand(80),
        "CAG_20": rand(100) + "CAG" * 20 + rand(100),
        "GTT_40": rand(70) + "GTT" * 40 + rand(70),
        "AT_N_AT": rand(80) + "AT" * 15 + "N" + "AT" * 15 + rand(80),
        "polyA_N_polyA": rand(80) + "A" * 20 + "N" + "A" * 20 + rand(80),
        "start_polyA": "A" * 40 + rand(100),
        "end_TG": rand(100) + "TG" * 20,
        "gap_1": rand(80) + "A" * 14 + rand(1) + "C" * 14 + rand(80),
        "gap_2": rand(80) + "A" * 14 + "GT" + "C" * 14 + rand(80),
        "gap_3": rand(80) + "A" * 14 + "GTG" + "C" * 14 + rand(80),
        "gap_6": rand(80) + "A" * 14 + "GTCGTG" + "T" * 14 + rand(80),
        "mixed": rand(40) + "AAGAAGAAGAGAAGAAAG" * 3 + rand(40) + "TTTTCTTTTTCTTTT" + rand(40),
        "short_AAAA": "AAAAA",
        "tie_TG": "TGTGTGTGTGTGTGCTGTG",  # at level 10, the whole record ties a stretch inside it
        "all_N": "NNNNNNNNNN",
    }
    text = "".join(f">{name}\n{seq}\n" for name, seq in records.items())
    (HERE / "dust.fa").write_text(text)

    # Runs of N: where gseek (every N read as A) and dustmasker agree, and where not (docs/blast.md).
    left, right = rand(60), rand(60)
    n_records = {f"N{k}_mid": left + "N" * k + right for k in (1, 4, 7, 8, 12)}
    n_records.update({f"{b}6_N_{b}6": left + b * 6 + "N" + b * 6 + right for b in "ACGT"})
    n_records.update({f"C8_N{k}_C8": left + "C" * 8 + "N" * k + "C" * 8 + right for k in (1, 2, 4)})
    n_records.update({"A4_N4_A4": left + "AAAANNNNAAAA" + right, "N8_start": "N" * 8 + right,
                      "N8_end": left + "N" * 8, "N8_only": "N" * 8})
    (HERE / "dust_n.fa").write_text("".join(f">{name}\n{seq}\n" for name, seq in n_records.items()))

    # blastn reads an N as a random base, reading some bases twice (gseek/blast/dust.py): runs of N
    # beside homopolymers and repeats, at either end, several per record.
    mixed = np.random.default_rng(2015)

    def letters(alphabet: str, n: int) -> str:
        return "".join(alphabet[i] for i in mixed.integers(0, len(alphabet), n))

    def part() -> str:
        kind = mixed.random()
        if kind < 0.3:
            return letters("ACGT", int(mixed.integers(1, 81)))
        if kind < 0.55:
            return "N" * int(mixed.integers(1, 121))
        if kind < 0.75:
            return letters("ACGT", 1) * int(mixed.integers(2, 141))
        if kind < 0.9:
            return letters("ACGT", int(mixed.integers(1, 4))) * int(mixed.integers(2, 31))
        return letters("ACGTN", int(mixed.integers(1, 41)))

    blastn_records = ["".join(part() for _ in range(int(mixed.integers(1, 7)))) for _ in range(200)]
    (HERE / "dust_mixed_n.fa").write_text("".join(f">m{i}\n{seq.ljust(4, 'C')}\n"
                                                 for i, seq in enumerate(blastn_records)))


if __name__ == "__main__":
    main()

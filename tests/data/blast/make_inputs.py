"""Write db.fa (the first 20 kb of the embedded lambda genome) and queries.fa (slices of it with
seeded substitutions and indels) for the blastn runs of README.md. Deterministic: run it again and
the files come out byte-identical."""

from pathlib import Path

import numpy as np

from gseek.datasets import lambda_genome

HERE = Path(__file__).resolve().parent
DB_LENGTH = 20_000
#: (name, start, length, substitution rate, indel rate) of each query.
QUERIES = [("q1", 1_000, 300, 0.02, 0.0), ("q2", 5_500, 420, 0.08, 0.01),
           ("q3", 12_000, 500, 0.15, 0.02), ("q4", 17_000, 350, 0.25, 0.03)]


def _genome() -> str:
    lines = lambda_genome().read_text().splitlines()
    return "".join(line.strip() for line in lines if not line.startswith(">")).upper()


def _mutate(seq: str, rng: np.random.Generator, sub: float, indel: float) -> str:
    out = []
    for base in seq:
        roll = rng.random()
        if roll < indel / 2:                     # deletion
            continue
        if roll < indel:                         # insertion after the base
            out.append(base + "ACGT"[rng.integers(4)])
        elif roll < indel + sub:                 # substitution
            out.append("ACGT".replace(base, "")[rng.integers(3)])
        else:
            out.append(base)
    return "".join(out)


def main() -> None:
    genome = _genome()
    (HERE / "db.fa").write_text(f">lambda_20k\n{genome[:DB_LENGTH]}\n")
    rng = np.random.default_rng(16)
    records = [f">{name}\n{_mutate(genome[start:start + length], rng, sub, indel)}\n"
               for name, start, length, sub, indel in QUERIES]
    (HERE / "queries.fa").write_text("".join(records))


if __name__ == "__main__":
    main()

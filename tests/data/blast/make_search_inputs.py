"""Write search_queries.fa for the end-to-end blastn comparison of tests/test_blast_search.py
(commands in README.md). The database is the embedded lambda genome itself
(``gseek.datasets.lambda_genome()``, 48,502 bp, one record). Deterministic: run it again and the
file comes out byte-identical.

Records: 40 simulated queries (``gseek.datasets.simulate.blast_queries``, 200-3000 bp, 8 %
substitutions, 1 % indels, 4 random negatives), then hand-made ones:

* ``h_lower``: a lambda slice with a lowercase run in its middle (blastn searches it as usual:
  no ``-lcase_masking``);
* ``h_nrun``: a lambda slice with a run of 40 N in its middle;
* ``h_polya``: two lambda slices around a 120 bp poly-A stretch (DUST masks it);
* ``h_chimera``: 500 bp of lambda near 3 kb, then 500 bp near 40 kb;
* ``h_minus``: the reverse complement of a lambda slice, with a few substitutions;
* ``h_short``: 20 bp of lambda, shorter than megablast's word;
* ``h_negative``: random sequence (no significant hit);
* ``h_lowcomp``: 40 bp of lambda around its T-rich low-complexity stretch at 35,660 between
  random flanks: DUST masks every seed of it (a hit only with ``-dust no``).
"""

from pathlib import Path

import numpy as np

from gseek.datasets import lambda_genome
from gseek.datasets.simulate import blast_queries

HERE = Path(__file__).resolve().parent
SEED = 1616
_COMP = str.maketrans("ACGT", "TGCA")


def _genome() -> str:
    lines = lambda_genome().read_text().splitlines()
    return "".join(line.strip() for line in lines if not line.startswith(">")).upper()


def _substitute(seq: str, rng: np.random.Generator, rate: float) -> str:
    out = list(seq)
    for i in np.flatnonzero(rng.random(len(out)) < rate).tolist():
        out[i] = "ACGT".replace(out[i], "")[rng.integers(3)]
    return "".join(out)


def hand_made(genome: str, rng: np.random.Generator) -> list[tuple[str, str]]:
    lower = _substitute(genome[8_000:8_900], rng, 0.03)
    lower = lower[:300] + lower[300:600].lower() + lower[600:]
    nrun = _substitute(genome[15_000:15_800], rng, 0.03)
    nrun = nrun[:380] + "N" * 40 + nrun[420:]
    polya = _substitute(genome[22_000:22_400], rng, 0.02) + "A" * 120 + _substitute(genome[22_400:22_800], rng, 0.02)
    chimera = _substitute(genome[3_000:3_500], rng, 0.04) + _substitute(genome[40_000:40_500], rng, 0.04)
    minus = _substitute(genome[30_000:31_200].translate(_COMP)[::-1], rng, 0.05)
    short = genome[26_000:26_020]
    negative = "".join("ACGT"[c] for c in rng.integers(0, 4, 700).tolist())
    flank = ["".join("ACGT"[c] for c in rng.integers(0, 4, 150).tolist()) for _ in range(2)]
    lowcomp = flank[0] + genome[35_652:35_692] + flank[1]
    return [("h_lower", lower), ("h_nrun", nrun), ("h_polya", polya), ("h_chimera", chimera),
            ("h_minus", minus), ("h_short", short), ("h_negative", negative), ("h_lowcomp", lowcomp)]


def main() -> None:
    genome = _genome()
    sim = blast_queries(lambda_genome(), 40, (200, 3000), seed=SEED, sub_rate=0.08, indel_rate=0.01)
    rng = np.random.default_rng(SEED)
    records = list(sim.records) + hand_made(genome, rng)
    with open(HERE / "search_queries.fa", "w") as out:
        for name, seq in records:
            out.write(f">{name}\n")
            for i in range(0, len(seq), 80):
                out.write(seq[i:i + 80] + "\n")


if __name__ == "__main__":
    main()

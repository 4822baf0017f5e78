"""Write hard_mask_stats.fa: queries whose κ λ H (1/-2 scoring, computed by blastn) change in their printed
digits with the one base just past a hard-masked interval (make.sh has the blastn commands).

Pieces of db.fa's first record (seeded), each with either a lowercase run (``lc*``: ``-lcase_masking``) or a
low-complexity run DUST masks (``dust*``: CAG repeats) inside, at least 60 bases from either end; a piece is
kept where counting the letters with and without the base past the masked interval gives other digits
(:func:`gseek.blast.karlin.ungapped_karlin`, held to blastn's digits by test_blast_karlin.py). Run from this folder.
"""

import random
from pathlib import Path

import numpy as np

from gseek.alphabet import encode_dna
from gseek.blast.dust import dust_intervals
from gseek.blast.karlin import ungapped_karlin

rng = random.Random(4142)
subject = "".join(open("db.fa").read().split(">")[1].splitlines()[1:])


def digits(seq: str, lo: int, hi: int) -> str:
    kept = seq[:lo] + seq[hi:]
    return " ".join(f"{v:.15g}" for v in ungapped_karlin(1, -2, tuple(kept.upper().count(b) for b in "ACGT")))


records = []
while len(records) < 4:  # lowercase runs
    n = rng.randint(200, 400)
    start = rng.randint(0, len(subject) - n)
    seq = subject[start:start + n]
    lo = rng.randint(60, n - 100)
    hi = lo + rng.randint(10, 40)
    if digits(seq, lo, hi) != digits(seq, lo, hi + 1):
        records.append((f"lc{len(records)}", seq[:lo] + seq[lo:hi].lower() + seq[hi:]))
while len(records) < 8:  # DUST's intervals
    n = rng.randint(200, 400)
    start = rng.randint(0, len(subject) - n)
    seq = subject[start:start + n]
    at = rng.randint(60, n - 100)
    seq = seq[:at] + "CAG" * rng.randint(8, 15) + seq[at:]
    runs = dust_intervals(encode_dna(seq), np.array([0, len(seq)])).tolist()
    if len(runs) == 1 and 0 < runs[0][1] < len(seq) and digits(seq, *runs[0]) != digits(seq, runs[0][0], runs[0][1] + 1):
        records.append((f"dust{len(records) - 4}", seq))
Path("hard_mask_stats.fa").write_text("".join(f">{name}\n{seq}\n" for name, seq in records))

"""Write the inputs of the paired-end bowtie 1 fixture: r1.fq.gz, r2.fq.gz, the truth (seeded, deterministic).

The reference is ``tests/data/bowtie/ref.fa`` (lambda plus a mutated,
reverse-complemented copy of 3 kb of it: mates of that region map twice).
Usage: python make_inputs.py OUTDIR
"""

import sys
from pathlib import Path

from gseek.datasets.simulate import kmismatch_pairs

out = Path(sys.argv[1])
pairs = kmismatch_pairs(out.parent / "bowtie" / "ref.fa", 600, 50, (80, 400), 3, seed=7, random_fraction=0.05)
pairs.write(out / "r1.fq.gz", out / "r2.fq.gz")

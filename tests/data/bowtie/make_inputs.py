"""Write the inputs of the bowtie 1 fixture: ref.fa and reads.fq.gz (seeded, deterministic).

The reference is the lambda genome plus a second contig holding a mutated,
reverse-complemented copy of 3 kb of it (a planted repeat, so that reads map
more than once). bowtie never reports alignments that overlap a reference N,
so the reference has none. Usage: python make_inputs.py OUTDIR
"""

import sys
from pathlib import Path

import numpy as np

from gseek.alphabet import decode_dna
from gseek.datasets import lambda_genome
from gseek.datasets.simulate import kmismatch_reads
from gseek.seqio import read_fastx, write_fasta

out = Path(sys.argv[1])
genome = read_fastx(lambda_genome())
seq = decode_dna(genome.codes)
rng = np.random.default_rng(2024)
copy = list(seq[20000:23000])
for p in rng.choice(len(copy), 30, replace=False):
    copy[p] = "ACGT"[("ACGT".index(copy[p]) + int(rng.integers(1, 4))) % 4]
copy = "".join(copy)[::-1].translate(str.maketrans("ACGT", "TGCA"))
flank = "".join(rng.choice(list("ACGT"), 500))
write_fasta(out / "ref.fa", [("lambda", seq), ("lambda_repeat", flank + copy + flank)])
reads = kmismatch_reads(out / "ref.fa", 3000, (20, 150), 4, seed=5, n_rate=0.003, random_fraction=0.05)
reads.write(out / "reads.fq.gz", out / "reads.truth.tsv")

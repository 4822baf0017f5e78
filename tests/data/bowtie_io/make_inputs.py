"""Write the reads of the bowtie input/summary fixture (README.md) into the folder given.

The first 150 reads of at least 30 bp of ../bowtie/reads.fq.gz (simulated on
../bowtie/ref.fa), every third with a description; as Phred+33 FASTQ, as
Phred+64 FASTQ (qualities + 31) and as FASTA.
"""

import gzip
import sys
from pathlib import Path

here = Path(__file__).parent
out = Path(sys.argv[1] if len(sys.argv) > 1 else here)
with gzip.open(here.parent / "bowtie" / "reads.fq.gz", "rt") as fh:
    lines = fh.read().splitlines()
records = []
for i in range(0, len(lines), 4):
    name, seq, qual = lines[i][1:], lines[i + 1], lines[i + 3]
    if len(seq) >= 30:
        records.append((name + (f" sample=s{len(records)}" if len(records) % 3 == 0 else ""), seq, qual))
    if len(records) == 150:
        break
with open(out / "reads.fq", "w") as fq, open(out / "reads64.fq", "w") as fq64, open(out / "reads.fa", "w") as fa:
    for header, seq, qual in records:
        fq.write(f"@{header}\n{seq}\n+\n{qual}\n")
        fq64.write(f"@{header}\n{seq}\n+\n{''.join(chr(ord(c) + 31) for c in qual)}\n")
        fa.write(f">{header}\n{seq}\n")

"""Fast FASTA/FASTQ input and output as struct-of-arrays batches.

Reading streams a file (plain or gzip, detected by its magic bytes) in bounded
chunks through a Numba parser; each chunk becomes a :class:`SequenceBatch` of
numpy arrays, so a 50 GB FASTQ never sits in memory and no per-record Python
object is built.

>>> import io, gzip, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "r.fq")
>>> _ = open(path, "w").write("@r1 first\\nACGTn\\n+\\nIIIII\\n@r2\\nGG\\n+\\n!!\\n")
>>> batch = read_fastx(path)
>>> len(batch), batch.name(0), batch.description(0), batch.sequence(0)
(2, 'r1', 'first', 'ACGTN')
>>> batch.lengths.tolist(), batch.quality(1)
([5, 2], '!!')
>>> batch.soft_mask.tolist()     # the lowercase 'n' at offset 4
[[4, 5]]
"""

from .atomic import open_output
from .batch import SequenceBatch, mask_runs
from .reader import DEFAULT_CHUNK_BYTES, FastxReader, iter_fastx, looks_phred64, open_input, read_fastx
from .writers import write_fasta, write_fastq

__all__ = [
    "SequenceBatch",
    "FastxReader",
    "read_fastx",
    "iter_fastx",
    "open_input",
    "looks_phred64",
    "write_fasta",
    "write_fastq",
    "open_output",
    "mask_runs",
    "DEFAULT_CHUNK_BYTES",
]

"""FM-index of a DNA reference: build, on-disk format, load, exact count and locate.

``gseek index ref.fa`` and :meth:`Index.build` make it; :meth:`Index.load`
opens it memory-mapped on the CPU or uploads it to a GPU once. The parts
(``docs/index-format.md``): contig and segment tables, 2-bit forward text
with the runs of N, BWT with Occ checkpoints interleaved in 64-byte blocks,
sorted dollar rows, sampled SA (marks + samples), w-gram table.

Modules: :mod:`~gseek.index.build` (construction), :mod:`~gseek.index.format`
(directory, header, checksums), :mod:`~gseek.index.search` (count/locate
stages over the ``fmindex`` kernels), :mod:`~gseek.index.core` (:class:`Index`).

>>> import os, tempfile
>>> fasta = os.path.join(tempfile.mkdtemp(), "ref.fa")
>>> _ = open(fasta, "w").write(">a\\nGATTACA\\n>b\\nTACAGAT\\n")
>>> idx = Index.build(fasta, wgram=2, device="cpu")
>>> idx.count(["TACA", "GAT", "CAT"]).tolist()
[2, 2, 0]
>>> idx.locate("GAT")
Occurrences(pattern=array([0, 0]), contig=array([0, 1], dtype=int32), position=array([0, 4]))
"""

from .core import PART_GROUPS, ContigTable, Index, Occurrence, Occurrences
from .format import FORMAT_VERSION, IndexFormatError

__all__ = ["Index", "ContigTable", "Occurrence", "Occurrences", "IndexFormatError", "FORMAT_VERSION", "PART_GROUPS"]

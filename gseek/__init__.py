"""gseek: a GPU sequence search engine with an identical CPU backend.

FM-index k-mismatch read mapping, BLASTN-style seed-and-extend search and
batched Needleman-Wunsch / Smith-Waterman DP with trace-back, on CuPy kernels
(GPU) or their Numba twins (CPU). One configured object per job, a thin
function on top:

* :class:`Index` -- ``Index.build("ref.fa").save("ref.gseek")``, ``Index.load``;
  ``index.locate(reads)``: exact matches (:class:`Occurrences`);
* :class:`BlastSearcher` -- ``BlastSearcher("ref.gseek", task="megablast").search(queries)``:
  BLAST+'s megablast / blastn search, options as :class:`BlastOptions`, HSPs as
  :class:`BlastHits` (``-outfmt 6`` columns); files with :func:`blast_files`
  (``gseek search --task megablast``);
* :class:`Mapper` -- ``Mapper("ref.gseek", mismatches=3).map(reads)`` (a batch: a
  struct-of-arrays :class:`MappingResult`; ``map(seq)``, one read as a ``str``, and
  ``map_file(path)``: per-read :class:`Hit` lists, mappy-style); files to SAM/BAM with
  :func:`map_files` (or :func:`map_reads`, in the caller's thread);
* :class:`PairAligner` with :class:`Scoring` -- ``PairAligner(mode="local").align(q, t)``
  (:class:`AlignmentResults` of :class:`Alignment` rows); query files against targets
  with :func:`align_files`;
* :func:`run_pipeline` -- many query files, an output folder, ``summary.tsv``;
* :class:`FastxReader` / :func:`read_fastx` -- FASTA/FASTQ as struct-of-arrays batches;
* :func:`get_backend` -- ``"auto"``, ``"cpu"``, ``"gpu"``, ``"gpu:N"``; errors in :mod:`gseek.errors`.

Results print as their text output (SAM, BLAST tabular, TSV) and convert to
tables with those column names: ``to_pandas()`` / ``to_arrow()`` (the ``tables``
extra; ``docs/python-api.md``). Names are loaded on first use: ``import gseek``
imports neither Numba nor CuPy.

>>> import gseek
>>> gseek.PairAligner(mode="global", device="cpu").align("ACGTACGT", "ACGACGT").score
7
>>> from gseek.datasets import lambda_genome
>>> genome = gseek.read_fastx(lambda_genome()).sequence(0)
>>> searcher = gseek.BlastSearcher(gseek.Index.build(lambda_genome(), parts="text", device="cpu"), device="cpu")
>>> for hsp in searcher.search([("q1", genome[1000:1500])]):
...     print(hsp.qaccver, hsp.pident, hsp.length, hsp.sstart, hsp.send, hsp.evalue)
q1 100.0 500 1001 1500 0.0
>>> "Mapper" in dir(gseek), "BlastSearcher" in dir(gseek), "importlib" in dir(gseek)
(True, True, False)
"""

__version__ = "0.1.0"

from ._lazy import lazy_names  # noqa: E402
from .errors import (  # noqa: E402 - after __version__, which gseek.errors' users may read
    BackendError,
    FastxError,
    GseekError,
    IndexFormatError,
    KernelCompileError,
    OptionError,
    OutputClash,
)

#: Public name -> the module that defines it (imported on first use).
_LAZY = {
    "Backend": "gseek.backend",
    "CpuBackend": "gseek.backend",
    "GpuBackend": "gseek.backend",
    "get_backend": "gseek.backend",
    "FastxReader": "gseek.seqio",
    "SequenceBatch": "gseek.seqio",
    "iter_fastx": "gseek.seqio",
    "read_fastx": "gseek.seqio",
    "write_fasta": "gseek.seqio",
    "write_fastq": "gseek.seqio",
    "Index": "gseek.index",
    "Occurrences": "gseek.index",
    "Mapper": "gseek.mapper",
    "MappingResult": "gseek.mapper",
    "MappedRead": "gseek.mapper",
    "Hit": "gseek.mapper",
    "BlastSearcher": "gseek.blast.searcher",
    "BlastHits": "gseek.blast.hits",
    "BlastOptions": "gseek.blast.options",
    "MapOptions": "gseek.options",
    "ReadOptions": "gseek.options",
    "SamOptions": "gseek.options",
    "PairOptions": "gseek.options",
    "AlignOptions": "gseek.align.options",
    "PairAligner": "gseek.align",
    "AlignmentResults": "gseek.align",
    "Alignment": "gseek.align",
    "Scoring": "gseek.dp",
    "map_files": "gseek.pipeline",
    "map_reads": "gseek.pipeline",
    "align_files": "gseek.pipeline",
    "align_pairs_files": "gseek.pipeline",
    "blast_files": "gseek.pipeline",
    "run_pipeline": "gseek.pipeline",
    "Client": "gseek.serve.client",
}

__all__ = [
    "__version__",
    "GseekError",
    "FastxError",
    "BackendError",
    "KernelCompileError",
    "OptionError",
    "OutputClash",
    "IndexFormatError",
    *_LAZY,
]


#: Lazy exports: ``import gseek`` does not load the index, the kernels or Numba.
__getattr__ = lazy_names(__name__, _LAZY, globals())


def __dir__():
    """The public names only (``__all__``), not the modules and helpers the package holds."""
    return sorted(__all__)

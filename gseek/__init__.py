"""gseek: a GPU sequence search engine with an identical CPU backend.

FM-index k-mismatch read mapping, BLASTN-style seed-and-extend search and
batched Needleman-Wunsch / Smith-Waterman DP with trace-back, on CuPy kernels
(GPU) or their Numba twins (CPU).

>>> import gseek
>>> backend = gseek.get_backend("cpu")
>>> backend.name
'cpu'
"""

__version__ = "0.1.0"

from .backend import Backend, CpuBackend, GpuBackend, get_backend
from .errors import BackendError, FastxError, GseekError, IndexFormatError, KernelCompileError, OptionError
from .seqio import FastxReader, SequenceBatch, iter_fastx, read_fastx, write_fasta, write_fastq

__all__ = [
    "__version__",
    "Backend",
    "CpuBackend",
    "GpuBackend",
    "get_backend",
    "GseekError",
    "FastxError",
    "BackendError",
    "KernelCompileError",
    "OptionError",
    "IndexFormatError",
    "FastxReader",
    "SequenceBatch",
    "iter_fastx",
    "read_fastx",
    "write_fasta",
    "write_fastq",
    "Mapper",
    "MappingResult",
    "map_reads",
]


def __getattr__(name: str):
    """Lazy exports: ``import gseek`` does not load the index and kernels."""
    if name in ("Mapper", "MappingResult", "map_reads"):
        from . import mapper

        return getattr(mapper, name)
    raise AttributeError(f"module 'gseek' has no attribute {name!r}")


"""gseek: a GPU sequence search engine with an identical CPU backend.

FM-index k-mismatch read mapping, BLASTN-style seed-and-extend search and
batched Needleman-Wunsch / Smith-Waterman DP with trace-back, on CuPy kernels
(GPU) or their Numba twins (CPU). One configured object per job, a thin
function on top:

* :class:`Index` -- ``Index.build("ref.fa").save("ref.gseek")``, ``Index.load``;
* :class:`Mapper` -- ``Mapper(index, mismatches=3).map(reads)`` (a batch: a
  struct-of-arrays :class:`MappingResult`; ``map(seq)`` and ``map_file(path)``:
  per-read hits, mappy-style); files to SAM/BAM with :func:`map_files` (or
  :func:`map_reads`, in the caller's thread);
* :class:`PairAligner` with :class:`Scoring` -- ``PairAligner(mode="local").align(q, t)``;
  query files against targets with :func:`align_files`;
* :func:`run_pipeline` -- many query files, an output folder, ``summary.tsv``;
* :class:`FastxReader` / :func:`read_fastx` -- FASTA/FASTQ as struct-of-arrays batches;
* :func:`get_backend` -- ``"auto"``, ``"cpu"``, ``"gpu"``, ``"gpu:N"``; errors in :mod:`gseek.errors`.

Names are loaded on first use: ``import gseek`` imports neither Numba nor CuPy.

>>> import gseek
>>> gseek.PairAligner(mode="global", device="cpu").align("ACGTACGT", "ACGACGT").score
7
>>> "Mapper" in dir(gseek)
True
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

from .errors import (  # noqa: E402 - after __version__, which gseek.errors' users may read
    BackendError,
    FastxError,
    GseekError,
    IndexFormatError,
    KernelCompileError,
    OptionError,
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
    "Mapper": "gseek.mapper",
    "MappingResult": "gseek.mapper",
    "PairAligner": "gseek.align",
    "AlignmentResults": "gseek.align",
    "Scoring": "gseek.dp",
    "map_files": "gseek.pipeline",
    "map_reads": "gseek.pipeline",
    "align_files": "gseek.pipeline",
    "align_pairs_files": "gseek.pipeline",
    "run_pipeline": "gseek.pipeline",
}

__all__ = [
    "__version__",
    "GseekError",
    "FastxError",
    "BackendError",
    "KernelCompileError",
    "OptionError",
    "IndexFormatError",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    """Lazy exports: ``import gseek`` does not load the index, the kernels or Numba."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gseek' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

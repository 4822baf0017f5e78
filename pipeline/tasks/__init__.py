"""The pipeline's tasks: the stages a :class:`~gseek.pipeline.engine.Dispatcher` runs, one module a job.

* :mod:`.map` -- read mapping (:class:`MapTask`; its options as values, :func:`~.map.map_values`);
* :mod:`.align` -- batched DP against a target set (:class:`AlignTask`) and of named or all pairs
  (:class:`PairsTask`);
* :mod:`.blast` -- the BLAST-style search (:class:`BlastTask`);
* :mod:`._base` -- what they share: the :class:`Task` protocol, the picklable :class:`TaskSpec`, the
  lazy output sink, job sizing, the host warm-up.

The front doors over them (``map_files``, ``blast_files``, ``align_files``, ...) are
:mod:`gseek.pipeline.front`.
"""

from gseek._lazy import lazy_names

from ._base import Task, TaskSpec, batch_nbytes, warm_host

_LAZY = {"AlignTask": f"{__name__}.align", "PairsTask": f"{__name__}.align", "BlastTask": f"{__name__}.blast",
         "MapTask": f"{__name__}.map"}  # name -> its module

__all__ = ["Task", "TaskSpec", "MapTask", "AlignTask", "PairsTask", "BlastTask", "batch_nbytes", "warm_host"]


#: A task class, its module loaded on first use (a BLAST search loads neither the mapper nor the DP).
__getattr__ = lazy_names(__name__, _LAZY, globals())


def __dir__():
    return sorted(set(globals()) | set(__all__))

"""The pipeline's tasks: the stages a :class:`~gseek.pipeline.engine.Dispatcher` runs, one module a job.

* :mod:`.map` -- read mapping (:class:`MapTask`, :func:`map_files`, :func:`map_reads`);
* :mod:`.align` -- batched DP against a target set (:class:`AlignTask`,
  :func:`align_files`) and of named or all pairs (:class:`PairsTask`,
  :func:`align_pairs_files`);
* :mod:`.blast` -- the BLAST-style search (:class:`BlastTask`, :func:`blast_files`);
* :mod:`._base` -- what they share: the picklable :class:`TaskSpec`, the lazy
  output sink, job sizing, the host warm-up.
"""

from ._base import TaskSpec, batch_nbytes, warm_host
from .align import AlignTask, PairsTask, align_files, align_pairs_files
from .blast import BlastTask, blast_files
from .map import MapTask, map_files, map_reads

__all__ = ["TaskSpec", "MapTask", "AlignTask", "PairsTask", "BlastTask", "map_files", "map_reads", "align_files",
           "align_pairs_files", "blast_files", "batch_nbytes", "warm_host"]

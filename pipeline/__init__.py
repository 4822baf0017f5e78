"""The threaded query/job/prelim/result pipeline: one engine behind ``gseek search``, ``align`` and ``pipeline``.

* :mod:`gseek.pipeline.engine` -- :class:`Dispatcher`, the bounded, ordered
  dispatcher over query files; it knows nothing about mapping.
* :mod:`gseek.pipeline.tasks` -- the tasks (stages and their picklable
  :class:`TaskSpec`, the :class:`Task` protocol): :class:`MapTask` (read
  mapping), :class:`BlastTask` (the BLAST-style search), :class:`AlignTask`
  (batched DP of each query file against a target set) and
  :class:`PairsTask` (named pairs or all-vs-all).
* :mod:`gseek.pipeline.front` -- the front doors, one a job, through one
  runner (:func:`run_one`: ``workers``, ``progress``, ``client=``):
  :func:`map_files`, :func:`map_reads`, :func:`blast_files`,
  :func:`align_files`, :func:`align_pairs_files`.
* :mod:`gseek.pipeline.runner` -- :func:`run_pipeline`: a query list, an
  output folder, ``summary.tsv``, resume, progress bars.

``docs/pipeline.md`` draws the threads and queues and says how to tune them.
"""

from .engine import Chunk, Dispatcher, FileResult, Job, Progress, QueryFile, QueueBounds
from .runner import PipelineSummary, QueryListError, read_query_list, run_pipeline
from .front import align_files, align_pairs_files, blast_files, map_files, map_reads, run_one
from .tasks import AlignTask, BlastTask, MapTask, PairsTask, Task, TaskSpec

__all__ = [  # the engine, the runner, the front doors, the tasks
    "align_files", "align_pairs_files", "AlignTask", "blast_files", "BlastTask", "Chunk", "Dispatcher",
    "FileResult", "Job", "map_files", "map_reads", "MapTask", "PairsTask", "PipelineSummary", "Progress",
    "QueryFile", "QueryListError", "QueueBounds", "read_query_list", "run_one", "run_pipeline", "Task",
    "TaskSpec",
]

"""The threaded query/job/prelim/result pipeline: one engine behind ``gseek search``, ``align`` and ``pipeline``.

* :mod:`gseek.pipeline.engine` -- :class:`Dispatcher`, the bounded, ordered
  dispatcher over query files; it knows nothing about mapping.
* :mod:`gseek.pipeline.tasks` -- the tasks (stages and their picklable
  :class:`TaskSpec`): :class:`MapTask` (read mapping; :func:`map_files`,
  :func:`map_reads`), :class:`AlignTask` (batched DP of each query file
  against a target set; :func:`align_files`) and :class:`PairsTask` (named
  pairs or all-vs-all; :func:`align_pairs_files`).
* :mod:`gseek.pipeline.runner` -- :func:`run_pipeline`: a query list, an
  output folder, ``summary.tsv``, resume, progress bars.

``docs/pipeline.md`` draws the threads and queues and says how to tune them.
"""

from .engine import Chunk, Dispatcher, FileResult, Job, Progress, QueryFile, QueueBounds
from .runner import PipelineSummary, QueryListError, read_query_list, run_pipeline
from .tasks import (
    AlignTask,
    MapTask,
    PairsTask,
    TaskSpec,
    align_files,
    align_pairs_files,
    map_files,
    map_reads,
)

__all__ = [
    "Chunk",
    "Dispatcher",
    "FileResult",
    "Job",
    "Progress",
    "QueryFile",
    "QueueBounds",
    "AlignTask",
    "MapTask",
    "PairsTask",
    "TaskSpec",
    "align_files",
    "align_pairs_files",
    "map_files",
    "map_reads",
    "PipelineSummary",
    "QueryListError",
    "read_query_list",
    "run_pipeline",
]

"""The threaded query/job/prelim/result pipeline (``gseek pipeline``, issue 6).

* :mod:`gseek.pipeline.engine` -- :class:`Dispatcher`, the bounded, ordered
  dispatcher over query files; it knows nothing about mapping.
* :mod:`gseek.pipeline.tasks` -- :class:`MapTask` (read mapping as stages),
  :func:`map_files` (one query through the engine: ``gseek search`` and
  ``gseek.mapper.map_reads``) and :class:`AlignTask` (batched DP of each
  query file against a target set: ``gseek pipeline --task align``).
* :mod:`gseek.pipeline.runner` -- :func:`run_pipeline`: a query list, an
  output folder, ``summary.tsv``, resume, progress bars.

``docs/pipeline.md`` draws the threads and queues and says how to tune them.
"""

from .engine import Chunk, Dispatcher, FileResult, Job, Progress, QueryFile, QueueBounds
from .runner import PipelineSummary, QueryListError, read_query_list, run_pipeline
from .tasks import AlignTask, MapTask, map_files

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
    "map_files",
    "PipelineSummary",
    "QueryListError",
    "read_query_list",
    "run_pipeline",
]

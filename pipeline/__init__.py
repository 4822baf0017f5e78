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

from gseek._lazy import lazy_names

_LAZY = {  # name -> the module that defines it, imported on first use (a BLAST search loads no mapper)
    **dict.fromkeys(("Chunk", "Dispatcher", "FileResult", "Job", "Progress", "QueryFile", "QueueBounds"),
                    "gseek.pipeline.engine"),
    **dict.fromkeys(("PipelineSummary", "QueryListError", "read_query_list", "run_pipeline"), "gseek.pipeline.runner"),
    **dict.fromkeys(("align_files", "align_pairs_files", "blast_files", "map_files", "map_reads", "run_one"),
                    "gseek.pipeline.front"),
    **dict.fromkeys(("AlignTask", "BlastTask", "MapTask", "PairsTask", "Task", "TaskSpec"), "gseek.pipeline.tasks"),
}

__all__ = sorted(_LAZY, key=str.lower)  # the engine, the runner, the front doors, the tasks


#: The names of :data:`__all__`, each loaded with its module on first use: ``gseek search --task megablast``
#: imports the engine, the BLAST task and its front door, not the mapper, the DP, the SAM writers, the runner or
#: the cluster (0.1 s and ~10 MB of a 1 s command on the 2-core VM).
__getattr__ = lazy_names(__name__, _LAZY, globals())


def __dir__():
    return sorted(set(globals()) | set(__all__))

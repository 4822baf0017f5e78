"""Runs beyond one machine on Dask distributed: query files and pair tiles as Dask tasks (``docs/cluster.md``).

Two shapes, both on the tasks' own code (a :class:`~gseek.pipeline.tasks.TaskSpec`
sent to the workers, each building its runtime once per process):

* **one task per query file** (:class:`ClusterFiles`, ``gseek pipeline
  --scheduler``, ``run_pipeline(client=)``): a worker runs the task's
  :class:`~gseek.pipeline.engine.Dispatcher` over one file and writes its
  output into the output folder (shared storage) under a temporary name,
  renamed when complete; the client keeps the lock, the resume manifest and
  ``summary.tsv``.
* **one task per job** (:func:`remote_dispatcher`, ``gseek align
  --scheduler``, ``align_files(client=)``, ``align_pairs_files(client=)``):
  the client's dispatcher reads the jobs (tiles of the pair triangle, pairs
  of a list, batches of a query file), each job's prelim and finalize stages
  run on a worker, and the client writes the rows in the single-process
  order: the output is byte for byte the local one.
* **one task per job and database shard** (:func:`shard_dispatcher`, ``gseek
  pipeline --task megablast|blastn --split database --scheduler``): the
  BLAST database in one shard per worker, each worker searching every job
  against its shard (with the whole database's statistics), the client
  merging the shards' HSPs (:func:`~gseek.blast.shards.merge_hits`),
  formatting and writing them: the unsplit search's output, byte for byte.

A worker lost mid-run costs only time: the scheduler runs its tasks again on
the others (and ``retries`` reruns a task that raised), outputs are renamed
into place only when complete, so each holds every record once. The client
reports the workers that left while its tasks ran (the scheduler's
``remove-worker`` events).

``distributed`` is imported only here, when a cluster is asked for; without it
the options fail with one line (:func:`import_distributed`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import sys
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from gseek.errors import ClusterError, GseekError, OptionError, one_line

from .engine import FileResult, Progress, QueryFile

__all__ = ["RETRIES", "ClusterFiles", "cluster_client", "cluster_spec", "describe_cluster", "import_distributed",
           "runtime"]

#: Times a task that raised is run again (on any worker) before the run fails;
#: a task whose worker died is run again by the scheduler in any case
#: (``distributed.scheduler.allowed-failures`` times, default 3).
RETRIES = 2
#: The scheduler's ``worker-saturation`` for a cluster started here: a worker holds only the
#: task it runs, so a worker that dies takes no queued file with it (each task it held counts
#: towards that task's ``allowed-failures``), and a file waits for the first free worker.
WORKER_SATURATION = 1.0
#: How long a cluster started here waits for a lost worker to come back before it closes its slot
#: (Dask's default, 15 s, closes the slot of a worker lost twice in that time while its nanny restarts it).
LOST_WORKER_TIMEOUT = "1h"
#: How long a database split waits for a first worker when the cluster has none (starting, or its
#: workers restarting after a loss: their nannies bring them back in seconds); shards are cut for
#: the workers there when it starts.
WORKER_WAIT_SECONDS = 60.0
#: Task runtimes a worker process keeps (index loaded, aligners built), newest first.
KEEP_RUNTIMES = 2
#: Seconds between two looks at the run's stop signal while a job runs on the cluster.
POLL_SECONDS = 0.2
#: A job still running after this many seconds, and this many times the run's median job, is
#: sent a second time when a worker has nothing to do (a backup copy: the first result is taken,
#: the other cancelled; both are the same rows). A slow worker (a CPU among GPUs) then cannot hold
#: the run's end, nor the in-order writer (which waits for the oldest job while the queues behind
#: it fill and the fast workers idle). None: never.
BACKUP_AFTER: float | None = 2.0
#: A worker whose jobs take this many times the run's median job (and at least ``BACKUP_AFTER``
#: seconds) gets no new job while a faster worker is up, and no backup copy: each job it took would
#: only hold the writer until its copy ran elsewhere, and keep it busy with a cancelled job (a CPU
#: worker beside a GPU one, 50-100 times slower at DP). A copy it lost counts as a job of at
#: least the seconds it had run.
SLOW_WORKER = 10.0
#: Seconds a job run waits, at its start, for each worker to say whether its stages run on a GPU.
KIND_WAIT_SECONDS = 120.0
#: Set (to anything), a cluster run ends with a line of the jobs (``align``: and the backup copies) or
#: query files each worker ran (``benchmarks/run.py cluster-hetero`` reads it).
STATS_ENV = "GSEEK_CLUSTER_STATS"
#: ``log`` default: ``sys.stderr`` as it is when the report is written.
STDERR = "stderr"
#: What ``pip`` needs for the cluster options.
INSTALL_HINT = "pip install 'gseek[dask]' (distributed>=2024.1)"


def import_distributed() -> Any:
    """The ``distributed`` module, or an :class:`~gseek.errors.OptionError` saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise OptionError(f"a Dask cluster (--scheduler, --local-cluster, client=) needs the 'distributed' "
                          f"package: {INSTALL_HINT}") from None
    return distributed


@contextlib.contextmanager
def cluster_client(scheduler: str | None = None, local_cluster: int | None = None,
                   timeout: str = "10s") -> Iterator[Any]:
    """A ``distributed.Client`` of the scheduler at ``scheduler`` (``tcp://HOST:PORT``), or of a
    ``LocalCluster`` of ``local_cluster`` worker processes started here (one thread each, no
    memory limit, no dashboard); closed, and the local cluster stopped, at the end."""
    if (scheduler is None) == (local_cluster is None):
        raise OptionError("give a scheduler address or a local cluster size (one of them)")
    distributed = import_distributed()
    if local_cluster is not None:
        if int(local_cluster) < 1:
            raise OptionError(f"local cluster: give at least one worker, not {local_cluster}")
        import logging

        import dask

        # read as the cluster runs: a worker its nanny restarts after a second loss is not given up on
        with dask.config.set({"distributed.scheduler.worker-saturation": WORKER_SATURATION,
                              "distributed.deploy.lost-worker-timeout": LOST_WORKER_TIMEOUT}):
            cluster = distributed.LocalCluster(n_workers=int(local_cluster), processes=True, threads_per_worker=1,
                                               memory_limit=0, dashboard_address=None, silence_logs=logging.ERROR,
                                               scheduler_kwargs={"dashboard_address": ":0"})  # HTTP: any free port
            try:
                with distributed.Client(cluster) as client:
                    yield client
            finally:
                cluster.close()
        return
    try:
        client = distributed.Client(scheduler, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise OptionError(f"scheduler {scheduler}: cannot connect ({one_line(exc)})") from None
    with client:
        yield client


def describe_cluster(client: Any) -> str:
    """``Dask cluster tcp://...: N workers, T threads`` (the device line of a cluster run)."""
    info = client.scheduler_info()
    workers = info.get("workers", {})
    threads = sum(int(w.get("nthreads", 1)) for w in workers.values())
    return f"Dask cluster {info.get('address', '?')}: {len(workers)} workers, {threads} threads"


def cluster_spec(spec: Any, device: Any = None, devices: Sequence[Any] | None = None,
                 threads: int | None = None) -> Any:
    """``spec`` with the devices a worker should use: ``devices`` (names or backends), else
    ``device`` unless ``auto`` (each worker then takes its GPU if it has one, else its CPU)."""
    if devices is None and device is not None and device != "auto":
        devices = [device]
    if threads is None:  # a backend object's threads travel with it
        threads = next((d.threads for d in devices or () if getattr(d, "threads", None)), None)
    names = None if devices is None else tuple(d if isinstance(d, str) else d.spec for d in devices)
    return dataclasses.replace(spec, devices=names, threads=threads)


# --------------------------------------------------------------------------- worker side


_RUNTIMES: dict[Any, tuple[Any, threading.Lock]] = {}
_RUNTIMES_LOCK = threading.Lock()


def _state(path: str) -> tuple:
    """Size and mtime of a file, or of each file of a folder (an index): a changed source is a new runtime."""
    try:
        if os.path.isdir(path):
            return tuple(sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in os.scandir(path)
                                if e.is_file()))
        st = os.stat(path)
        return (st.st_size, st.st_mtime_ns)
    except OSError:
        return ()


def runtime(spec: Any) -> tuple[Any, threading.Lock]:
    """The task ``spec`` builds, built once per process (the index loaded once per worker) and
    kept while its source files are unchanged, with the lock that lets one file task use it at a
    time (job tasks take a free prelim stage instead: :func:`_free_stage`)."""
    paths = [spec.source, *(v for _, v in spec.options if isinstance(v, str) and os.path.exists(v))]
    try:
        key: Any = (hash(spec), spec)
    except TypeError:  # an option that does not hash (a Scoring with its matrix): its pickle does
        key = pickle.dumps(spec)
    key = (key, tuple(_state(p) for p in paths))
    with _RUNTIMES_LOCK:
        found = _RUNTIMES.pop(key, None)
        if found is None:
            found = (spec.build(), threading.Lock())
        _RUNTIMES[key] = found  # newest last
        while len(_RUNTIMES) > KEEP_RUNTIMES:
            _RUNTIMES.pop(next(iter(_RUNTIMES)))
    return found


def _portable(exc: BaseException | None) -> BaseException | None:
    """``exc``, or a :class:`~gseek.errors.GseekError` with its one line when it does not pickle."""
    if exc is None:
        return None
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - any failure to travel: send its text
        return GseekError(one_line(exc))


def _fingerprint(spec: Any) -> str:
    return runtime(spec)[0].fingerprint()


def _prelim_slots(task: Any) -> list[tuple[Any, threading.Lock]]:
    """The task's prelim stages (one per mapper, aligner or searcher: two per GPU for the DP and
    BLAST tasks, each on its own stream), each with a lock of its own, made once per runtime: a
    worker with several threads runs that many jobs at once, each on a free stage."""
    with _RUNTIMES_LOCK:
        slots = task.__dict__.get("_cluster_slots")
        if slots is None:
            slots = task._cluster_slots = [(prelim, threading.Lock()) for prelim in task.prelims()]
    return slots


def _run_file(spec: Any, query: QueryFile, options: dict[str, Any]) -> FileResult:
    """One query file through the task's dispatcher on this worker (its output written in place)."""
    task, lock = runtime(spec)
    with lock, contextlib.ExitStack() as held:
        for _, slot in _prelim_slots(task):  # the dispatcher uses every stage: no job task beside it
            held.enter_context(slot)
        result, = task.dispatcher(**options).run([query])
    return FileResult(result.query, result.status, dict(result.counts), result.seconds, _portable(result.error))


class _Payloads:
    """The part of a :class:`~gseek.pipeline.engine.Job` a prelim stage reads."""

    __slots__ = ("payloads",)

    def __init__(self, payloads: list[Any]) -> None:
        self.payloads = payloads


class _FileFailure:
    """A file error raised by a remote stage, sent back as a value (a raised one would be retried)."""

    def __init__(self, error: BaseException) -> None:
        self.error = _portable(error)


def _free_stage(task: Any) -> tuple[Any, threading.Lock]:
    """A prelim stage of the task and its lock, acquired: a free one, else the first to come free."""
    slots = _prelim_slots(task)
    for prelim, slot in slots:
        if slot.acquire(blocking=False):
            return prelim, slot
    while True:
        for prelim, slot in slots:
            if slot.acquire(timeout=0.01):
                return prelim, slot


def _index_checked(task: Any) -> None:
    """Wait for the SHA-256 check of the index this worker loaded (its task's, beside the work): a
    corrupted copy on a worker fails the job (``IndexFormatError``, not a file's error) instead of
    sending back results computed from it."""
    check = getattr(task, "index_check", None)
    if check is not None:
        check.result()


def _run_stages(spec: Any, payloads: list[Any]) -> Any:
    """Prelim and finalize of one job's payloads on this worker: its chunks (one per payload)."""
    task, _ = runtime(spec)
    try:
        return task.finalize(_prelim_here(task, payloads))
    except task.file_errors as exc:
        return _FileFailure(exc)


def _prelim_here(task: Any, payloads: list[Any]) -> Any:
    """A job's prelim on a free prelim stage of this worker's task, then its index check waited for."""
    prelim, slot = _free_stage(task)
    try:
        partial = prelim(_Payloads(payloads))
    finally:
        slot.release()
    _index_checked(task)
    return partial


def _run_shard(spec: Any, payloads: list[Any], keep_queries: bool) -> list[Any]:
    """One database shard's HSPs of a job's query batches on this worker (``spec`` names the shard).

    Sent back without the shard's text (the client formats with its own copy of the database)
    and, unless ``keep_queries``, without the query sequences (the first shard's serve all).
    """
    task, _ = runtime(spec)
    partial = _prelim_here(task, payloads)
    empty = np.zeros(0, np.uint8)
    return [dataclasses.replace(hits, _ref=(), **({} if keep_queries else {"_query_codes": empty,
                                                                            "_query_offsets": empty}))
            for _, hits in partial]


def _device_kind(spec: Any) -> str:
    """``gpu`` when the task ``spec`` builds on this worker runs a stage on a GPU, else ``cpu`` (the
    runtime is built, as the worker's first job would build it)."""
    task, _ = runtime(spec)
    return "gpu" if any(b.name == "gpu" for b in task.backends) else "cpu"


def _run_job(spec: Any, payloads: list[Any]) -> tuple[float, Any]:
    """:func:`_run_stages` on this worker and the seconds it took (the client's measure of the worker's speed)."""
    started = time.perf_counter()
    out = _run_stages(spec, payloads)
    return time.perf_counter() - started, out


# --------------------------------------------------------------------------- client side


def _lost_workers(client: Any, token: str) -> list[tuple[str, int]]:
    """Workers removed while tasks of this run (keys holding ``token``) were on them, with those tasks' count."""
    try:
        events = client.get_events("all")
    except Exception:  # noqa: BLE001 - a report, never the run's failure
        return []
    lost = []
    for _, msg in events:
        if not isinstance(msg, dict) or msg.get("action") != "remove-worker":
            continue
        keys = [k for part in ("processing-tasks", "lost-computed-tasks") for k in (msg.get(part) or ())
                if token in str(k)]
        if keys:
            lost.append((str(msg.get("worker", "?")), len(keys)))
    return lost


def _report_lost(client: Any, token: str, log: Any) -> list[tuple[str, int]]:
    lost = _lost_workers(client, token)
    if log == STDERR:
        log = sys.stderr
    if log is not None:
        for worker, n in lost:
            print(f"gseek: worker {worker} was lost during the run; its {n} task(s) were run again on other "
                  "workers", file=log)
    return lost


class ClusterFiles:
    """Each query file as one Dask task: the worker runs the task's dispatcher over it and writes its output.

    The interface of a :class:`~gseek.pipeline.engine.Dispatcher` for
    :func:`~gseek.pipeline.runner.run_pipeline`: :meth:`run` returns one
    :class:`~gseek.pipeline.engine.FileResult` per query, in order (file
    errors recorded, other errors raised once the task's retries are spent);
    ``progress`` hears of each file as it completes. A file whose worker died
    ``allowed-failures`` times (``KilledWorker``) fails alone.

    Arguments:
        client: a ``distributed.Client``.
        spec: the task's :class:`~gseek.pipeline.tasks.TaskSpec` (see :func:`cluster_spec`).
        options: the dispatcher options each worker's run takes (``workers``,
            ``job_bytes``, ``bounds``, ``max_inflight_bytes``).
        retries: reruns of a task that raised.
        log: where lost workers are reported (None: nowhere; default stderr).
    """

    def __init__(self, client: Any, spec: Any, *, options: dict[str, Any] | None = None,
                 progress: Progress | None = None, retries: int = RETRIES, log: Any = STDERR) -> None:
        self.client, self.spec, self.options = client, spec, dict(options or {})
        self.progress = progress or Progress()
        self.retries, self.log = int(retries), log
        self.results: list[FileResult] = []
        self.stats: dict[str, Any] = {}
        self.lost: list[tuple[str, int]] = []

    def fingerprint(self) -> str:
        """The task's fingerprint, computed by a worker (which builds, and keeps, the runtime); an
        error building it (a missing index, bad targets) is the same on every worker: not retried."""
        return self.client.submit(_fingerprint, self.spec, pure=False).result()

    def run(self, queries: Iterable[QueryFile]) -> list[FileResult]:
        distributed = import_distributed()
        queries = list(queries)
        token = uuid.uuid4().hex[:12]
        futures = {self.client.submit(_run_file, self.spec, q, self.options, key=f"gseek-file-{token}-{i}",
                                      retries=self.retries, pure=False): i for i, q in enumerate(queries)}
        done: dict[int, FileResult] = {}
        by_worker: dict[str, int] = {}
        self.results = []
        try:
            for future in distributed.as_completed(futures):
                i = futures[future]
                query = queries[i]
                try:
                    remote = future.result()
                    result = FileResult(query, remote.status, remote.counts, remote.seconds, remote.error)
                except distributed.KilledWorker as exc:
                    result = FileResult(query, "failed", error=ClusterError(
                        f"its worker died each time it ran ({one_line(exc)})"))
                else:
                    where = _name_of(self.client, _holder(self.client, future))
                    by_worker[where] = by_worker.get(where, 0) + 1
                future.release()  # done with: the scheduler forgets it (a lost worker must not recompute it)
                done[i] = result
                self.results = [done[k] for k in sorted(done)]
                self.progress.start(query)
                self.progress.update(query, result.counts)
                self.progress.finish(result)
        except BaseException:
            self.client.cancel(list(futures))
            raise
        finally:
            futures.clear()
            self.results = [done[k] for k in sorted(done)]
            self.stats = {"tasks": len(queries), "files_by_worker": by_worker}
            self.lost = _report_lost(self.client, token, self.log)
            self.stats["lost_workers"] = len(self.lost)
            if os.environ.get(STATS_ENV):
                shares = ", ".join(f"{w} {n}" for w, n in sorted(by_worker.items()))
                print(f"gseek: files per worker: {shares}", file=sys.stderr)
        return list(self.results)


def _holder(client: Any, future: Any) -> str | None:
    """The address of the worker holding a finished future's result (None when unknown)."""
    try:
        return next(iter(client.who_has(future).get(future.key, ())), None)
    except Exception:  # noqa: BLE001 - only a statistic: never fail a run for it
        return None


def _name_of(client: Any, address: str | None) -> str:
    """A worker's name (its address when it has none; ``?`` when unknown)."""
    try:
        info = client.scheduler_info().get("workers", {}).get(address, {}) if address else {}
        return str(info.get("name", address or "?"))
    except Exception:  # noqa: BLE001 - only a statistic: never fail a run for it
        return "?"

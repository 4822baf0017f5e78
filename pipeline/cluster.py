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
import itertools
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

from .engine import Dispatcher, FileResult, Progress, QueryFile, QueueBounds

__all__ = ["RETRIES", "ClusterFiles", "cluster_client", "cluster_spec", "describe_cluster", "import_distributed",
           "remote_dispatcher", "runtime", "shard_dispatcher"]

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
        prelim, slot = _free_stage(task)
        try:
            partial = prelim(_Payloads(payloads))
        finally:
            slot.release()
        _index_checked(task)
        return task.finalize(partial)
    except task.file_errors as exc:
        return _FileFailure(exc)


def _run_shard(spec: Any, payloads: list[Any], keep_queries: bool) -> list[Any]:
    """One database shard's HSPs of a job's query batches on this worker (``spec`` names the shard).

    Sent back without the shard's text (the client formats with its own copy of the database)
    and, unless ``keep_queries``, without the query sequences (the first shard's serve all).
    """
    task, _ = runtime(spec)
    prelim, slot = _free_stage(task)
    try:
        partial = prelim(_Payloads(payloads))
    finally:
        slot.release()
    _index_checked(task)
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


class _RemoteStage:
    """A prelim stage that runs the job's prelim and finalize on a worker and waits for its chunks
    (and sends a straggling job to an idle worker too, :data:`BACKUP_AFTER`; a slow worker gets no
    more jobs, :data:`SLOW_WORKER`)."""

    def __init__(self, client: Any, spec: Any, token: str, retries: int) -> None:
        self.client, self.spec, self.token, self.retries = client, spec, token, retries
        self._serial = itertools.count()
        self._lock = threading.Lock()
        #: The dispatcher running this stage: once it stops, waiting jobs are cancelled.
        self.dispatcher: Dispatcher | None = None
        #: Jobs sent, the seconds each finished job ran on its worker, the jobs done by each worker
        #: (its name), backup copies sent and used.
        self.sent = 0
        self.seconds: list[float] = []
        self.by_worker: dict[str, int] = {}
        self.backups = [0, 0]
        #: Each worker's (address) job seconds: its finished jobs; and the seconds a copy it lost had
        #: run (a lower bound of its time for that job, not a time: a backup copy lost soon after it
        #: was sent says little; an original lost after many seconds, that it is at least that slow).
        self.timings: dict[str, list[float]] = {}
        self.lower: dict[str, list[float]] = {}
        #: Jobs sent with a worker restriction (some workers were slow, or CPU workers beside GPU ones).
        self.restricted = 0
        #: Each worker's (address) kind, ``gpu`` or ``cpu`` (:func:`_device_kind`; ``?`` when it did not say).
        self.kinds: dict[str, str] = {}
        self._asking: dict[str, Any] = {}
        self._waited = False
        self._kinds_lock = threading.Lock()

    def _typical(self) -> float:
        """The run's median job seconds (0 while none has finished)."""
        with self._lock:
            return sorted(self.seconds)[len(self.seconds) // 2] if self.seconds else 0.0

    def _estimate(self, worker: str) -> float | None:
        """A worker's job seconds: the median of its finished jobs; for a worker none of whose jobs
        was used, the longest a copy it lost had run; None while it has neither. (A lost copy's
        seconds, counted from its submission, include its wait in a queue: a worker that finishes
        jobs is timed by them only.)"""
        with self._lock:
            seen = sorted(self.timings.get(worker, ()))
            lower = max(self.lower.get(worker, ()), default=None)
        return seen[len(seen) // 2] if seen else lower

    def _slow(self) -> set[str]:
        """The workers too slow for new jobs (:data:`SLOW_WORKER`)."""
        typical = self._typical()
        with self._lock:
            workers = set(self.timings) | set(self.lower)
        if BACKUP_AFTER is None or not typical:
            return set()
        least = max(BACKUP_AFTER, SLOW_WORKER * typical)
        return {w for w in workers if (self._estimate(w) or 0.0) >= least}

    def _learn_kinds(self, workers: set[str]) -> None:
        """Ask each worker not asked yet whether its stages run on a GPU (a task pinned to it, which
        builds its runtime as its first job would). The run's first job waits for the answers until a
        GPU worker has answered, or every worker (:data:`KIND_WAIT_SECONDS` at most); a worker that
        answers later, or comes later, gets jobs only once it has answered (:meth:`_left_out`)."""
        with self._kinds_lock:
            for w in sorted(workers - set(self.kinds) - set(self._asking)):
                self._asking[w] = self.client.submit(_device_kind, self.spec, key=f"gseek-kind-{self.token}-{w}",
                                                     pure=False, workers=[w], allow_other_workers=False)
            self._collect_kinds()
            if not self._waited and self._asking:  # the first job: until a GPU worker answers, or all have
                self._waited = True
                end = time.monotonic() + KIND_WAIT_SECONDS
                while self._asking and "gpu" not in self.kinds.values() and time.monotonic() < end:
                    try:
                        import_distributed().wait(list(self._asking.values()), timeout=end - time.monotonic(),
                                                  return_when="FIRST_COMPLETED")
                    except Exception:  # noqa: BLE001 - a timeout: those that did not answer are asked on
                        pass
                    self._collect_kinds()

    def _collect_kinds(self) -> None:
        """The answers that came (a failed one: ``?``, a worker of no known kind, timed as any)."""
        for w, f in list(self._asking.items()):
            if f.status in ("finished", "error", "cancelled", "lost"):
                self.kinds[w] = f.result() if f.status == "finished" else "?"
                f.release()
                del self._asking[w]

    def _left_out(self, workers: set[str]) -> set[str]:
        """The workers that get no job now: those still to say their kind, and the CPU workers while a
        GPU worker is up. A job of the GPU-bound tasks that run as jobs (DP, BLAST) takes a CPU worker
        tens to thousands of times longer (DP: ~0.4 GCUPS a core against ~1,400 a GPU), so it would
        only hold the in-order writer until its copy ran on the GPU (three CPU workers beside the
        H100 took the run from 31.0 to 37.0 s). (Never all of them: :meth:`_placement`.)"""
        with self._kinds_lock:
            out = {w for w in workers if w in self._asking}
            if any(self.kinds.get(w) == "gpu" for w in workers):
                out |= {w for w in workers if self.kinds.get(w) == "cpu"}
        return out

    def _placement(self) -> dict[str, Any]:
        """``submit``'s worker restriction for a new job: the workers that are not slow, nor CPU
        workers beside GPU ones (:meth:`_left_out`), when some are. Strict: Dask's work stealing
        moves a loosely restricted task (``allow_other_workers``) to an idle worker, so the slow
        workers, idle once their copies are cancelled, took queued jobs of the fast ones (30 copies
        of 191 jobs on the H100 host). Should every fast worker leave, a job waiting for one gets a
        backup copy on an idle slow worker once it has waited twice that worker's time
        (:meth:`_backup_worker`)."""
        try:
            workers = set(self.client.nthreads())
            self._learn_kinds(workers)
        except Exception:  # noqa: BLE001 - a placement hint, never the run's failure
            return {}
        slow = self._slow() | self._left_out(workers)
        fast = sorted(workers - slow)
        return {"workers": fast, "allow_other_workers": False} if slow and fast else {}

    def _straggler(self, started: float) -> bool:
        """Whether a job running since ``started`` gets a backup copy now (:data:`BACKUP_AFTER`): it
        has run that many seconds and that many times the run's median job (any time while no job
        has finished). The caller sends it only to a worker with nothing to do: at the run's end, or
        while the in-order writer waits for this job and holds every other job back."""
        if BACKUP_AFTER is None:
            return False
        running = time.monotonic() - started
        return running >= BACKUP_AFTER and running >= BACKUP_AFTER * self._typical()

    def _idle_workers(self) -> list[str]:
        try:
            return [w for w, keys in self.client.processing().items() if not keys]
        except Exception:  # noqa: BLE001 - no idle worker known: no copy
            return []

    def _backup_worker(self, running: float) -> str | None:
        """The idle worker for a backup copy of a job that has run ``running`` seconds: one expected to
        finish it in less than half that (its median job), else one not timed yet (the fastest
        first), never one left out (:meth:`_left_out`, among the workers up now); None if no idle
        worker fits."""
        fit = []
        idle = self._idle_workers()
        try:
            left_out = self._left_out(set(self.client.nthreads()))
        except Exception:  # noqa: BLE001 - no worker known: none left out
            left_out = set()
        for worker in idle:
            if worker in left_out:
                continue
            estimate = self._estimate(worker)
            if estimate is None or estimate < running / 2:
                fit.append((estimate is None, estimate or 0.0, worker))
        return min(fit)[2] if fit else None

    def _drop(self, copies: list[tuple[Any, float]]) -> None:
        """Cancels the copies of a job not used; a worker that was running one is timed as slower
        than the seconds it had run (its thread stays busy until the job ends)."""
        running = [(f, since) for f, since in copies if f.status == "pending"]
        try:
            processing = self.client.processing() if running else {}
        except Exception:  # noqa: BLE001 - a timing, never the run's failure
            processing = {}
        now = time.monotonic()
        for f, since in running:
            where = next((w for w, keys in processing.items() if f.key in keys), None)
            if where is not None:
                with self._lock:
                    self.lower.setdefault(where, []).append(now - since)
        for f, _ in copies:
            f.cancel()

    def _wait(self, future: Any, started: float, job: Any) -> tuple[Any, Any]:
        """The job's ``(seconds, chunks)`` and the future that made them (the job's, or its backup
        copy's); once the run stops (another job's error, Ctrl-C), the job is cancelled."""
        copies = [(future, started)]
        while True:
            for f, _ in copies:
                if f.status == "finished":
                    self._drop([c for c in copies if c[0] is not f])
                    if f is not future:
                        self.backups[1] += 1
                    return f.result(), f
            if future.status in ("error", "cancelled") and all(f.status != "pending" for f, _ in copies):
                return future.result(), future  # raises its error (its retries are spent)
            if len(copies) == 1 and future.status == "pending" and self._straggler(started):
                worker = self._backup_worker(time.monotonic() - started)
                if worker is not None:
                    copies.append((self.client.submit(_run_job, self.spec, job.payloads, key=f"{future.key}-backup",
                                                      retries=self.retries, pure=False, workers=[worker],
                                                      allow_other_workers=True), time.monotonic()))
                    self.backups[0] += 1
            try:
                import_distributed().wait([f for f, _ in copies], timeout=POLL_SECONDS, return_when="FIRST_COMPLETED")
            except TimeoutError:
                pass
            if self.dispatcher is not None and self.dispatcher.stopping:
                for f, _ in copies:
                    f.cancel()
                raise ClusterError("stopped while its job ran on the cluster") from None

    def __call__(self, job: Any) -> Any:
        with self._lock:
            n = next(self._serial)
            self.sent += 1
        placement = self._placement()
        if placement:
            with self._lock:
                self.restricted += 1
        future = self.client.submit(_run_job, self.spec, job.payloads, key=f"gseek-job-{self.token}-{n}",
                                    retries=self.retries, pure=False, **placement)
        used = future
        try:
            (seconds, out), used = self._wait(future, time.monotonic(), job)
        except import_distributed().KilledWorker as exc:  # the rows cannot be complete: the run stops
            raise ClusterError(f"job {job_name(job)}: its worker died each time it ran ({one_line(exc)})") from None
        finally:
            where = _holder(self.client, used) if used.status == "finished" else None
            for f in (future,) if used is future else (future, used):
                f.release()  # done with: the scheduler forgets it (a lost worker must not recompute it)
        name = _name_of(self.client, where) if where is not None else None
        with self._lock:
            self.seconds.append(seconds)
            if where is not None:
                self.timings.setdefault(where, []).append(seconds)
            if name is not None:
                self.by_worker[name] = self.by_worker.get(name, 0) + 1
        if isinstance(out, _FileFailure):
            raise out.error
        return out


def job_name(job: Any) -> str:
    """A job as an error names it: its serial number and its pairs or records."""
    first = job.payloads[0] if job.payloads else None
    if isinstance(first, tuple) and len(first) == 2:  # pair indices
        return f"{job.serial} ({sum(len(p[0]) for p in job.payloads)} pairs)"
    return f"{job.serial} ({sum(len(p) for p in job.payloads)} records)"


def _chunks(partial: Any) -> Any:
    """Finalize on the client: the worker already made the chunks."""
    return partial


class _RemoteDispatcher(Dispatcher):
    """A dispatcher whose prelim stages run on a Dask cluster; reports lost workers after a run."""

    token: str
    client: Any
    log: Any
    lost: list[tuple[str, int]]

    stage: _RemoteStage

    def run(self, queries: Iterable[QueryFile]) -> list[FileResult]:
        try:
            return super().run(queries)
        finally:
            stage = self.stage
            for f in getattr(stage, "_asking", {}).values():  # kinds never answered: nothing left running
                f.cancel()
            self.lost = _report_lost(self.client, self.token, self.log)
            self.stats.update(jobs_sent=stage.sent, jobs_by_worker=dict(stage.by_worker), backups_sent=stage.backups[0],
                              backups_used=stage.backups[1])
            if os.environ.get(STATS_ENV):
                shares = ", ".join(f"{w} {n}" for w, n in sorted(stage.by_worker.items()))
                print(f"gseek: jobs per worker: {shares}; backup copies sent {stage.backups[0]}, "
                      f"used {stage.backups[1]}", file=sys.stderr)
                timed = "; ".join(f"{_name_of(stage.client, w)}: {len(stage.timings.get(w, ()))} jobs, estimate "
                                  f"{stage._estimate(w) or 0:.2f} s, copies lost {len(stage.lower.get(w, ()))}"
                                  for w in sorted(set(stage.timings) | set(stage.lower)))
                kinds = ", ".join(f"{_name_of(stage.client, w)} {k}" for w, k in sorted(stage.kinds.items()))
                print(f"gseek: worker timings: {timed}; slow: {len(stage._slow())}; kinds: {kinds}; jobs sent "
                      f"restricted {stage.restricted} of {stage.sent}", file=sys.stderr)


def remote_dispatcher(client: Any, task: Any, spec: Any, *, slots: int | None = None, retries: int = RETRIES,
                      log: Any = STDERR, job_bytes: int | None = None, bounds: QueueBounds | None = None,
                      **options: Any) -> Dispatcher:
    """A :class:`~gseek.pipeline.engine.Dispatcher` of ``task`` whose jobs run on the cluster.

    The client reads the jobs with ``task.read`` and writes their chunks to
    ``task.open_output``'s sinks in input order, as a local run does; each
    job's prelim and finalize run on a worker, on the runtime ``spec`` builds
    there. ``slots`` jobs are on the cluster at a time (default: twice its
    threads). Small files are combined into one job unless the task says
    ``combine = False`` (BLAST: a job per file at least, as in one process).
    File errors of a job come back as the local ones do.
    """
    if slots is None:
        threads = sum(int(n) for n in client.nthreads().values())
        slots = max(2, 2 * threads)
    stage = _RemoteStage(client, spec, uuid.uuid4().hex[:12], retries)
    if bounds is None:
        bounds = QueueBounds(query=2, job=slots, prelim=slots, result=2 * slots)
    dispatcher = _RemoteDispatcher(task.read, [stage] * slots, _chunks, task.open_output,
                                   job_bytes=job_bytes or task.job_bytes, combine=getattr(task, "combine", True),
                                   bounds=bounds,
                                   size=task.payload_bytes, file_errors=task.file_errors, **options)
    dispatcher.token, dispatcher.client, dispatcher.log, dispatcher.lost = stage.token, client, log, []
    dispatcher.stage = stage
    stage.dispatcher = dispatcher
    return dispatcher



class _ShardStage:
    """A prelim stage that searches a job on every database shard, one Dask task each (shard ``i``
    on worker ``i``, another worker when that one is lost), and merges the shards' HSPs into the
    unsplit search's (:func:`~gseek.blast.shards.merge_hits`): ``(batch, hits)`` per query batch,
    what :meth:`BlastTask.finalize <gseek.pipeline.tasks.blast.BlastTask.finalize>` formats."""

    def __init__(self, client: Any, specs: list[tuple[Any, str]], whole: Any, options: Any, token: str,
                 retries: int) -> None:
        self.client, self.specs, self.whole, self.token, self.retries = client, specs, whole, token, retries
        self.max_target_seqs, self.max_hsps = options.max_target_seqs, options.max_hsps
        self._serial = itertools.count()
        self._lock = threading.Lock()
        self.dispatcher: Dispatcher | None = None
        #: Jobs sent, shard tasks run per worker (its name), backup copies (none: each shard has its worker).
        self.sent = 0
        self.by_worker: dict[str, int] = {}
        self.backups = [0, 0]

    def __call__(self, job: Any) -> list[tuple[Any, Any]]:
        from gseek.blast.shards import merge_hits

        distributed = import_distributed()
        with self._lock:
            n = next(self._serial)
            self.sent += 1
        futures = [self.client.submit(_run_shard, spec, job.payloads, k == 0, key=f"gseek-shard-{self.token}-{n}-{k}",
                                      retries=self.retries, pure=False, workers=[where], allow_other_workers=True)
                   for k, (spec, where) in enumerate(self.specs)]
        try:
            while not all(f.done() for f in futures):
                try:
                    distributed.wait(futures, timeout=POLL_SECONDS)
                except TimeoutError:
                    pass
                if self.dispatcher is not None and self.dispatcher.stopping:
                    raise ClusterError("stopped while its job ran on the cluster")
            parts = [f.result() for f in futures]
            holders = [self.client.who_has(f).get(f.key, ()) for f in futures]
        except distributed.KilledWorker as exc:  # the rows cannot be complete: the run stops
            raise ClusterError(f"job {job_name(job)}: a worker died each time it ran ({one_line(exc)})") from None
        finally:
            for f in futures:
                f.cancel() if not f.done() else f.release()
        with self._lock:
            for where in holders:
                name = _name_of(self.client, next(iter(where), None))
                self.by_worker[name] = self.by_worker.get(name, 0) + 1
        out = []
        for b, batch in enumerate(job.payloads):
            first = parts[0][b]
            shard_hits = [dataclasses.replace(p[b], _ref=self.whole, _query_codes=first._query_codes,
                                              _query_offsets=first._query_offsets) for p in parts]
            out.append((batch, merge_hits(shard_hits, self.max_target_seqs, self.max_hsps)))
        return out


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


def shard_dispatcher(client: Any, task: Any, spec: Any, *, shards: int | None = None, slots: int | None = None,
                     retries: int = RETRIES, log: Any = STDERR, job_bytes: int | None = None,
                     bounds: QueueBounds | None = None, **options: Any) -> Dispatcher:
    """A :class:`~gseek.pipeline.engine.Dispatcher` of a BLAST task with the database split
    across the cluster's workers (``gseek pipeline --task megablast|blastn --split database
    --scheduler``; ``docs/cluster.md``).

    ``task``: a :class:`~gseek.pipeline.tasks.blast.BlastTask` on this process (it reads the
    query files, formats and writes the outputs: it holds the database's text, which formatting
    reads); ``spec``: its :class:`~gseek.pipeline.tasks.TaskSpec` for the workers. The database
    is cut into ``shards`` (default: one per worker when the run starts) and shard ``i`` goes to
    the ``i``-th worker (by address), which builds its searcher once; every job is searched on
    every shard and the hits merged here, so the output is the unsplit search's, byte for byte.
    ``slots`` jobs are on the cluster at a time (default 2).
    """
    from gseek.index.text import shard_ranges

    workers = sorted(client.scheduler_info().get("workers", {}))
    if not workers:  # a cluster starting, or its workers restarting after a loss: they may come
        try:
            client.wait_for_workers(1, timeout=WORKER_WAIT_SECONDS)
        except Exception:  # noqa: BLE001 - a timeout (asyncio's or Dask's), or the cluster closing
            raise ClusterError(f"the cluster has no worker (waited {WORKER_WAIT_SECONDS:g} s)") from None
        workers = sorted(client.scheduler_info().get("workers", {}))
        if not workers:  # lost again meanwhile
            raise ClusterError("the cluster has no worker")
    n = int(shards) if shards is not None else len(workers)
    if n < 1:
        raise OptionError(f"shards: at least 1, not {shards}")
    whole = task.searchers[0].ref
    base = {k: v for k, v in spec.options if k != "split"}
    specs = [(dataclasses.replace(spec, options=tuple(sorted({**base, "shard": (i, n)}.items()))),
              workers[i % len(workers)]) for i, (a, b) in enumerate(shard_ranges(whole.contig_offsets, n)) if b > a]
    stage = _ShardStage(client, specs, whole, task.searchers[0].options, uuid.uuid4().hex[:12], retries)
    slots = max(1, int(slots or 2))
    if bounds is None:
        bounds = QueueBounds(query=2, job=slots, prelim=slots, result=2 * slots)
    dispatcher = _RemoteDispatcher(task.read, [stage] * slots, task.finalize, task.open_output,
                                   job_bytes=job_bytes or task.job_bytes, combine=False, bounds=bounds,
                                   size=task.payload_bytes, file_errors=task.file_errors, **options)
    dispatcher.token, dispatcher.client, dispatcher.log, dispatcher.lost = stage.token, client, log, []
    dispatcher.stage = stage  # type: ignore[assignment]  # the same report as a remote stage's
    stage.dispatcher = dispatcher
    return dispatcher

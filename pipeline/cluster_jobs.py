"""Runs beyond one machine, the client's side of a job a task (``docs/cluster.md``): the prelim stage
that sends each job to a worker and waits for its chunks (:func:`remote_dispatcher`: backup copies of
stragglers, slow workers, worker kinds), and the one that sends every job to each database shard's
worker and merges their HSPs (:func:`shard_dispatcher`). The workers' side, the client and the per-file
tasks are :mod:`gseek.pipeline.cluster`, whose constants these read (a test may set them there).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterable
from typing import Any


from gseek.errors import ClusterError, OptionError, one_line

from . import cluster
from .engine import Dispatcher, FileResult, QueryFile, QueueBounds

__all__ = ["remote_dispatcher", "shard_dispatcher", "job_name"]


class _RemoteStage:
    """A prelim stage that runs the job's prelim and finalize on a worker and waits for its chunks
    (and sends a straggling job to an idle worker too, :data:`cluster.BACKUP_AFTER`; a slow worker gets no
    more jobs, :data:`cluster.SLOW_WORKER`)."""

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
        #: Each worker's (address) kind, ``gpu`` or ``cpu`` (:func:`cluster._device_kind`; ``?`` when it did not say).
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
        """The workers too slow for new jobs (:data:`cluster.SLOW_WORKER`)."""
        typical = self._typical()
        with self._lock:
            workers = set(self.timings) | set(self.lower)
        if cluster.BACKUP_AFTER is None or not typical:
            return set()
        least = max(cluster.BACKUP_AFTER, cluster.SLOW_WORKER * typical)
        return {w for w in workers if (self._estimate(w) or 0.0) >= least}

    def _learn_kinds(self, workers: set[str]) -> None:
        """Ask each worker not asked yet whether its stages run on a GPU (a task pinned to it, which
        builds its runtime as its first job would). The run's first job waits for the answers until a
        GPU worker has answered, or every worker (:data:`cluster.KIND_WAIT_SECONDS` at most); a worker that
        answers later, or comes later, gets jobs only once it has answered (:meth:`_left_out`)."""
        with self._kinds_lock:
            for w in sorted(workers - set(self.kinds) - set(self._asking)):
                self._asking[w] = self.client.submit(cluster._device_kind, self.spec, key=f"gseek-kind-{self.token}-{w}",
                                                     pure=False, workers=[w], allow_other_workers=False)
            self._collect_kinds()
            if not self._waited and self._asking:  # the first job: until a GPU worker answers, or all have
                self._waited = True
                end = time.monotonic() + cluster.KIND_WAIT_SECONDS
                while self._asking and "gpu" not in self.kinds.values() and time.monotonic() < end:
                    try:
                        cluster.import_distributed().wait(list(self._asking.values()), timeout=end - time.monotonic(),
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
        of 191 jobs on the H100 host). While a GPU worker is up, jobs are restricted even when no
        worker is left out (the others restarting: CI saw a CPU worker take a job as it came back).
        Should every fast worker leave, a job waiting for one gets a backup copy on an idle slow
        worker once it has waited twice that worker's time (:meth:`_backup_worker`)."""
        try:
            workers = set(self.client.nthreads())
            self._learn_kinds(workers)
        except Exception:  # noqa: BLE001 - a placement hint, never the run's failure
            return {}
        slow = self._slow() | self._left_out(workers)
        fast = sorted(workers - slow)
        # a GPU worker up alone is restricted to as well: a job sent unrestricted while a CPU worker
        # restarts waits in the scheduler's queue, and the CPU worker takes it as it comes back
        gpu_up = any(self.kinds.get(w) == "gpu" for w in fast)
        return {"workers": fast, "allow_other_workers": False} if (slow or gpu_up) and fast else {}

    def _straggler(self, started: float) -> bool:
        """Whether a job running since ``started`` gets a backup copy now (:data:`cluster.BACKUP_AFTER`): it
        has run that many seconds and that many times the run's median job (any time while no job
        has finished). The caller sends it only to a worker with nothing to do: at the run's end, or
        while the in-order writer waits for this job and holds every other job back."""
        if cluster.BACKUP_AFTER is None:
            return False
        running = time.monotonic() - started
        return running >= cluster.BACKUP_AFTER and running >= cluster.BACKUP_AFTER * self._typical()

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
        copy's); once the run stops (another job's error, Ctrl-C), the job is cancelled, also while
        its result is gathered."""
        copies = [(future, started)]
        while True:
            for f, _ in copies:
                if f.status == "finished":
                    self._drop([c for c in copies if c[0] is not f])
                    if f is not future:
                        self.backups[1] += 1
                    return _gathered(self.client, f, self.dispatcher), f
            if future.status in ("error", "cancelled") and all(f.status != "pending" for f, _ in copies):
                return future.result(), future  # raises its error (its retries are spent)
            if len(copies) == 1 and future.status == "pending" and self._straggler(started):
                worker = self._backup_worker(time.monotonic() - started)
                if worker is not None:
                    copies.append((self.client.submit(cluster._run_job, self.spec, job.payloads, key=f"{future.key}-backup",
                                                      retries=self.retries, pure=False, workers=[worker],
                                                      allow_other_workers=True), time.monotonic()))
                    self.backups[0] += 1
            try:
                cluster.import_distributed().wait([f for f, _ in copies], timeout=cluster.POLL_SECONDS, return_when="FIRST_COMPLETED")
            except TimeoutError:
                pass
            _give_up_if_stopped(self.dispatcher, [f for f, _ in copies])

    def __call__(self, job: Any) -> Any:
        with self._lock:
            n = next(self._serial)
            self.sent += 1
        placement = self._placement()
        if placement:
            with self._lock:
                self.restricted += 1
        future = self.client.submit(cluster._run_job, self.spec, job.payloads, key=f"gseek-job-{self.token}-{n}",
                                    retries=self.retries, pure=False, **placement)
        used = future
        try:
            (seconds, out), used = self._wait(future, time.monotonic(), job)
        except cluster.import_distributed().KilledWorker as exc:  # the rows cannot be complete: the run stops
            raise ClusterError(f"job {job_name(job)}: its worker died each time it ran ({one_line(exc)})") from None
        finally:
            where = cluster._holder(self.client, used) if used.status == "finished" else None
            for f in (future,) if used is future else (future, used):
                f.release()  # done with: the scheduler forgets it (a lost worker must not recompute it)
        name = cluster._name_of(self.client, where) if where is not None else None
        with self._lock:
            self.seconds.append(seconds)
            if where is not None:
                self.timings.setdefault(where, []).append(seconds)
            if name is not None:
                self.by_worker[name] = self.by_worker.get(name, 0) + 1
        if isinstance(out, cluster._FileFailure):
            raise out.error
        return out


def _give_up_if_stopped(dispatcher: Dispatcher | None, futures: list[Any]) -> None:
    """Once the run stops (another job's error, Ctrl-C): the job's ``futures`` are cancelled and it
    gives up (the run's error is already decided; this one is not reported)."""
    if dispatcher is not None and dispatcher.stopping:
        for f in futures:
            f.cancel()
        raise ClusterError("stopped while its job ran on the cluster") from None


def _gathered(client: Any, futures: Any, dispatcher: Dispatcher | None) -> Any:
    """The results of finished ``futures`` (one or a list), gathered unless the run stops first: a
    worker lost as it sends a result has the scheduler run the job again, and ``result()`` would wait
    for that (and its own worker deaths) after the run had failed, holding the job on the scheduler.
    The gather runs on the client's loop and is looked at every :data:`cluster.POLL_SECONDS`, not
    restarted (a large result may take longer than that to arrive)."""
    import asyncio
    import concurrent.futures

    gathering = asyncio.run_coroutine_threadsafe(client.gather(futures, asynchronous=True), client.loop.asyncio_loop)
    while True:
        try:
            return gathering.result(timeout=cluster.POLL_SECONDS)
        except concurrent.futures.TimeoutError:
            if dispatcher is not None and dispatcher.stopping:
                gathering.cancel()
                _give_up_if_stopped(dispatcher, futures if isinstance(futures, list) else [futures])


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
            self.lost = cluster._report_lost(self.client, self.token, self.log)
            self.stats.update(jobs_sent=stage.sent, jobs_by_worker=dict(stage.by_worker), backups_sent=stage.backups[0],
                              backups_used=stage.backups[1])
            if os.environ.get(cluster.STATS_ENV):
                shares = ", ".join(f"{w} {n}" for w, n in sorted(stage.by_worker.items()))
                print(f"gseek: jobs per worker: {shares}; backup copies sent {stage.backups[0]}, "
                      f"used {stage.backups[1]}", file=sys.stderr)
                timed = "; ".join(f"{cluster._name_of(stage.client, w)}: {len(stage.timings.get(w, ()))} jobs, estimate "
                                  f"{stage._estimate(w) or 0:.2f} s, copies lost {len(stage.lower.get(w, ()))}"
                                  for w in sorted(set(stage.timings) | set(stage.lower)))
                kinds = ", ".join(f"{cluster._name_of(stage.client, w)} {k}" for w, k in sorted(stage.kinds.items()))
                print(f"gseek: worker timings: {timed}; slow: {len(stage._slow())}; kinds: {kinds}; jobs sent "
                      f"restricted {stage.restricted} of {stage.sent}", file=sys.stderr)


def remote_dispatcher(client: Any, task: Any, spec: Any, *, slots: int | None = None, retries: int = cluster.RETRIES,
                      log: Any = cluster.STDERR, job_bytes: int | None = None, bounds: QueueBounds | None = None,
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

        distributed = cluster.import_distributed()
        with self._lock:
            n = next(self._serial)
            self.sent += 1
        futures = [self.client.submit(cluster._run_shard, spec, job.payloads, k == 0, key=f"gseek-shard-{self.token}-{n}-{k}",
                                      retries=self.retries, pure=False, workers=[where], allow_other_workers=True)
                   for k, (spec, where) in enumerate(self.specs)]
        try:
            while not all(f.done() for f in futures):
                try:
                    distributed.wait(futures, timeout=cluster.POLL_SECONDS)
                except TimeoutError:
                    pass
                _give_up_if_stopped(self.dispatcher, futures)
            parts = _gathered(self.client, futures, self.dispatcher)
            holders = [self.client.who_has(f).get(f.key, ()) for f in futures]
        except distributed.KilledWorker as exc:  # the rows cannot be complete: the run stops
            raise ClusterError(f"job {job_name(job)}: a worker died each time it ran ({one_line(exc)})") from None
        finally:
            for f in futures:
                f.cancel() if not f.done() else f.release()
        with self._lock:
            for where in holders:
                name = cluster._name_of(self.client, next(iter(where), None))
                self.by_worker[name] = self.by_worker.get(name, 0) + 1
        out = []
        for b, batch in enumerate(job.payloads):
            first = parts[0][b]
            shard_hits = [dataclasses.replace(p[b], _ref=self.whole, _query_codes=first._query_codes,
                                              _query_offsets=first._query_offsets) for p in parts]
            out.append((batch, merge_hits(shard_hits, self.max_target_seqs, self.max_hsps)))
        return out


def shard_dispatcher(client: Any, task: Any, spec: Any, *, shards: int | None = None, slots: int | None = None,
                     retries: int = cluster.RETRIES, log: Any = cluster.STDERR, job_bytes: int | None = None,
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
            client.wait_for_workers(1, timeout=cluster.WORKER_WAIT_SECONDS)
        except Exception:  # noqa: BLE001 - a timeout (asyncio's or Dask's), or the cluster closing
            raise ClusterError(f"the cluster has no worker (waited {cluster.WORKER_WAIT_SECONDS:g} s)") from None
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

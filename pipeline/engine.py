"""A bounded, ordered dispatcher over many query files (G-BLASTN's pipeline mode).

Four bounded queues connect the stages; the caller's thread is the writer::

    master ──query queue──▶ job builder ──job queue──▶ prelim workers (one per device)
                                 │                          │
                                 │                     prelim queue
                                 │                          ▼
                                 └──result queue──▶ writer ◀── finalize workers (CPU threads)
                                    (jobs in input order;  (they complete the jobs the
                                     the writer waits on    writer waits for)
                                     each in turn)

The engine knows nothing about mapping: a task gives it plain callables,

* ``read(query, chunk_bytes) -> iterable of payloads`` (the batches of one
  query file; runs on the job builder thread),
* ``prelim(job) -> partial`` (one callable per device; ``job.payloads`` are
  the batches; runs on that device's prelim thread),
* ``finalize(partial) -> Chunk | data`` or a list of them, one per payload
  of the job (runs on the finalize threads),
* ``open_output(query) -> sink`` with ``write(data)``, ``commit()``,
  ``abort()`` (runs on the writer, i.e. the caller's thread).

A *job* holds one or more payloads. Big files are split into many jobs (by
``chunk_bytes``); with ``combine=True`` the batches of small files are
gathered into one job until it holds ``job_bytes``, so each device launch
stays large. Jobs carry the file events (start, end, read failure) in input
order, and the writer handles them in that order, so every output gets its
chunks in input order whatever the worker counts and timings.

Back-pressure: every queue is bounded (:class:`QueueBounds`), and the job
builder also waits while the payloads in flight exceed ``max_inflight_bytes``
(at least one job is always let through). A full queue blocks its producer
until a consumer catches up; the result queue bounds how far reading can run
ahead of writing.

Faults: an exception of a type in ``file_errors`` (default: FASTA/FASTQ
errors and ``OSError``) fails the query file it belongs to, alone: its output
is aborted (nothing under the final name), its error is recorded in its
:class:`FileResult`, and the other files go on. A job that holds several
files and fails is re-run payload by payload so that the error lands on the
file that caused it. Any other exception (a bug, ``MemoryError``,
``KeyboardInterrupt`` raised in a stage) sets the stop signal, which every
thread checks between items; the caller's thread re-raises the exception
object after all threads are joined and every open output is aborted. A
``KeyboardInterrupt`` in the caller's thread (Ctrl-C) does the same.

``workers=0`` runs the same stage functions in the caller's thread, in
order (read, prelim, finalize, write), with no threads and no queues: the
single-thread path is the same code.

>>> chunks = {}
>>> class Sink:
...     def __init__(self, query): self.query, self.parts = query, []
...     def write(self, data): self.parts.append(data)
...     def commit(self): chunks[self.query.output] = b"".join(self.parts)
...     def abort(self): pass
>>> d = Dispatcher(read=lambda q, n: [p.encode() for p in q.paths], prelim=lambda job: job.payloads[0],
...                finalize=bytes.upper, open_output=Sink, workers=2)
>>> results = d.run([QueryFile(("ab", "cd"), "x"), QueryFile(("ef",), "y")])
>>> [(r.query.output, r.status, r.seconds >= 0) for r in results], chunks
([('x', 'ok', True), ('y', 'ok', True)], {'x': b'ABCD', 'y': b'EF'})
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from gseek.errors import FastxError

from .work import (  # noqa: F401 - the engine's names too (Sink)
    _END, _STOP, Chunk, FileResult, Job, Progress, QueryFile, QueueBounds, Sink, _End, _Failed, _FileState,
    _OneAtATime, _Piece, _ReadFailed, _Start, _wake)

__all__ = [
    "Chunk",
    "Dispatcher",
    "FileResult",
    "Job",
    "Progress",
    "QueryFile",
    "QueueBounds",
    "DEFAULT_JOB_BYTES",
    "DEFAULT_MAX_INFLIGHT_BYTES",
]

#: Input bytes a job aims for (the reader's chunk size; small files are combined up to it).
DEFAULT_JOB_BYTES = 16 << 20
#: Cap on the payload bytes between the job builder and the writer.
DEFAULT_MAX_INFLIGHT_BYTES = 1 << 30
#: Seconds between two looks at the stop signal while a thread waits on a queue.
_POLL = 0.05
#: After a run fails or is interrupted, seconds to wait for the stage threads to end before leaving them
#: (daemon threads; a CLI process then ends with ``os._exit``): a stage that never returns (a compute that
#: cannot be interrupted, or a lock left held by the interrupted caller) must not keep the run alive.
_JOIN_AFTER_ERROR = 10.0
#: Environment variable: a JSON file to write the stage spans of every run to
#: (stage, thread, start, end, job; ``benchmarks/tools/trace_summary.py`` reads it).
TRACE_ENV = "GSEEK_TRACE"
#: Thread names start with this (tests look for leaks by it).
THREAD_PREFIX = "gseek-pipeline"




# --------------------------------------------------------------------------- the dispatcher


class Dispatcher:
    """Run ``read -> prelim -> finalize -> write`` over query files, bounded and ordered.

    Arguments:
        read: ``read(query, chunk_bytes)`` yields the payloads of one query.
        prelim: one callable per device (or a single callable): ``prelim(job) -> partial``.
        finalize: ``finalize(partial)`` returns one :class:`Chunk` (or raw
            data) per payload of the job: a list, or a single item for a
            one-payload job.
        open_output: ``open_output(query)`` returns a sink (``write``,
            ``commit``, ``abort``); it must write under a temporary name and
            rename on ``commit``.
        workers: finalize threads; 0 runs every stage in the caller's thread.
        job_bytes: the reader's chunk size, and with ``combine`` the size up
            to which the batches of small files are gathered into one job.
        combine: gather payloads of several files into one job (``finalize``
            must then return one chunk per payload).
        bounds: :class:`QueueBounds`.
        max_inflight_bytes: cap on the payload bytes read but not yet written.
        size: ``size(payload) -> bytes`` (default ``payload.nbytes`` or 0).
        file_errors: exception types that fail one file rather than the run.
        progress: a :class:`Progress`.
        setup: one callable per prelim stage, run by its worker thread before
            its first job (device warm-up while the first batch is read).
        plan: ``plan(queries) -> job_bytes or None``, called by :meth:`run` with
            the query files before any is read: a job size chosen from all of
            them (the BLAST-style search: the input shared out among its searchers).

    After :meth:`run`, :attr:`stats` holds the peak jobs and bytes in flight
    and how often each queue was found full (back-pressure).
    """

    def __init__(
        self,
        read: Callable[[QueryFile, int], Iterable[Any]],
        prelim: Callable[[Job], Any] | Sequence[Callable[[Job], Any]],
        finalize: Callable[[Any], Any],
        open_output: Callable[[QueryFile], Any],
        *,
        workers: int = 2,
        job_bytes: int = DEFAULT_JOB_BYTES,
        combine: bool = False,
        bounds: QueueBounds | None = None,
        max_inflight_bytes: int = DEFAULT_MAX_INFLIGHT_BYTES,
        size: Callable[[Any], int] | None = None,
        file_errors: tuple[type[BaseException], ...] = (FastxError, OSError),
        progress: Progress | None = None,
        setup: Sequence[Callable[[], None]] | None = None,
        plan: Callable[[list[QueryFile]], int | None] | None = None,
    ) -> None:
        prelims = [prelim] if callable(prelim) else list(prelim)
        if not prelims:
            raise ValueError("at least one prelim stage is needed")
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
            raise ValueError(f"workers must be an integer >= 0, not {workers!r}")
        if job_bytes < 1 or max_inflight_bytes < 1:
            raise ValueError("job_bytes and max_inflight_bytes must be positive")
        self.read = read
        self.prelims = [_OneAtATime(p) for p in prelims]
        if setup is not None and len(setup) != len(prelims):
            raise ValueError("setup: give one callable per prelim stage")
        self.setup = list(setup) if setup is not None else [None] * len(prelims)
        self.finalize = finalize
        self.open_output = open_output
        self.workers = workers
        self.job_bytes = int(job_bytes)
        self.combine = bool(combine)
        self.bounds = bounds or QueueBounds()
        self.max_inflight_bytes = int(max_inflight_bytes)
        self.size = size or (lambda payload: int(getattr(payload, "nbytes", 0)))
        self.file_errors = tuple(file_errors)
        self.progress = progress or Progress()
        self.results: list[FileResult] = []
        self.stats: dict[str, int] = {}
        self.plan = plan

    @property
    def stopping(self) -> bool:
        """True once a run is stopping (a fatal error, Ctrl-C): a stage that waits on something
        else (a remote worker) may give up instead of finishing its job."""
        stop = getattr(self, "_stop", None)
        return stop is not None and stop.is_set()

    def __repr__(self) -> str:
        return (f"Dispatcher(prelims={len(self.prelims)}, workers={self.workers}, job_bytes={self.job_bytes}, "
                f"combine={self.combine}, {self.bounds})")

    # ------------------------------------------------------------------ run

    def run(self, queries: Iterable[QueryFile]) -> list[FileResult]:
        """Process ``queries``; return one :class:`FileResult` per query, in order.

        File errors are recorded, not raised. Any other exception (from a
        stage, a sink or Ctrl-C) stops every thread, aborts the open outputs
        and is re-raised here; :attr:`results` then holds the files finished
        before it.
        """
        self.results = []
        if self.plan is not None:
            queries = list(queries)
            planned = self.plan(queries)
            if planned:
                self.job_bytes = max(1, int(planned))
        self._trace_path = os.environ.get(TRACE_ENV) or None
        self._trace: list[tuple[str, str, float, float, int]] = []
        self._t0 = time.perf_counter()
        self._epoch = time.time()  # the trace's t0 on the wall clock (start-up = it - the command's start)
        self.stats = dict(peak_jobs=0, peak_bytes=0, full_query=0, full_job=0, full_prelim=0, full_result=0,
                          jobs=0)
        self._stop = threading.Event()
        self._fatal: BaseException | None = None
        self._open: dict[int, _FileState] = {}
        self._cv = threading.Condition()
        self._inflight_bytes = 0
        self._inflight_jobs = 0
        try:
            if self.workers == 0:
                self._run_inline(queries)
            else:
                self._run_threaded(queries)
        finally:
            self._abort_open()
            if self._trace_path:
                try:
                    self._write_trace()
                except OSError as exc:  # the run's own outcome matters more than its trace
                    print(f"gseek: {TRACE_ENV}: cannot write {self._trace_path}: {exc}", file=sys.stderr)
        return list(self.results)

    # ------------------------------------------------------------------ trace (GSEEK_TRACE=file.json)

    @contextlib.contextmanager
    def _span(self, stage: str, serial: int = -1) -> Iterator[None]:
        """Record ``stage``'s time on this thread when tracing is on."""
        if not self._trace_path:
            yield
            return
        start = time.perf_counter()
        try:
            yield
        finally:
            self._trace.append((stage, threading.current_thread().name, start - self._t0,
                                time.perf_counter() - self._t0, serial))

    def _write_trace(self) -> None:
        rows = [dict(stage=a, thread=b, start=round(c, 6), end=round(d, 6), job=e) for a, b, c, d, e in self._trace]
        with open(self._trace_path, "w", encoding="utf-8") as fh:  # type: ignore[arg-type]
            json.dump(dict(wall=time.perf_counter() - self._t0, epoch=self._epoch, spans=rows), fh)

    def _run_inline(self, queries: Iterable[QueryFile]) -> None:
        for setup in self.setup:
            if setup is not None:
                setup()
        jobs = self._jobs(iter(queries))
        try:
            for job in jobs:
                self._count_in(job)
                if job.items and job.pieces:
                    self._run_prelim(job, self.prelims[job.serial % len(self.prelims)])
                    self._run_finalize(job)
                self._write(job)
                self._count_out(job)
        finally:
            jobs.close()

    def _run_threaded(self, queries: Iterable[QueryFile]) -> None:
        b = self.bounds
        query_q: queue.Queue = queue.Queue(b.query)
        job_q: queue.Queue = queue.Queue(b.job)
        prelim_q: queue.Queue = queue.Queue(b.prelim)
        result_q: queue.Queue = queue.Queue(b.result)
        roles: list[tuple[str, Callable[..., None], tuple]] = [
            ("master", self._master, (queries, query_q)),
            ("builder", self._builder, (query_q, job_q, result_q)),
        ]
        roles += [(f"prelim-{i}", self._prelim_worker, (p, job_q, prelim_q, self.setup[i]))
                  for i, p in enumerate(self.prelims)]
        roles += [(f"finalize-{i}", self._finalize_worker, (prelim_q,)) for i in range(self.workers)]
        threads = [threading.Thread(target=self._guard, args=(fn, *args), name=f"{THREAD_PREFIX}-{role}",
                                    daemon=True) for role, fn, args in roles]
        failed = True
        try:
            for t in threads:
                t.start()
            while True:
                job = self._get(result_q)
                if job is _END:
                    break
                while not job.done.wait(_POLL):
                    self._check_fatal()
                self._check_fatal()
                self._write(job)
                self._count_out(job)
            failed = False
        finally:
            self._stop.set()
            _wake(query_q, 1)  # the idle workers stop now, not at their next poll (_POLL: 50 ms a command)
            _wake(job_q, len(self.prelims))
            _wake(prelim_q, self.workers)
            deadline = time.monotonic() + _JOIN_AFTER_ERROR
            for t in threads:
                if t.ident is not None:
                    t.join(max(0.0, deadline - time.monotonic()) if failed else None)

    # ------------------------------------------------------------------ threads

    def _guard(self, fn: Callable[..., None], *args: Any) -> None:
        """Run a thread's loop; a fatal exception is kept for the caller and stops everyone."""
        try:
            fn(*args)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            if self._fatal is None:
                self._fatal = exc
            self._stop.set()

    def _check_fatal(self) -> None:
        if self._fatal is not None:
            raise self._fatal

    def _get(self, q: queue.Queue) -> Any:
        """Caller's thread: the next item, re-raising a worker's fatal exception."""
        while True:
            self._check_fatal()
            try:
                return q.get(timeout=_POLL)
            except queue.Empty:
                pass

    def _take(self, q: queue.Queue) -> Any:
        """Worker: the next item, or ``_STOP`` once the stop signal is set."""
        while not self._stop.is_set():
            try:
                return q.get(timeout=_POLL)
            except queue.Empty:
                pass
        return _STOP

    def _give(self, q: queue.Queue, item: Any, name: str) -> bool:
        """Worker: put ``item``, waiting while ``q`` is full; False once stopped."""
        full = False
        while not self._stop.is_set():
            try:
                q.put(item, timeout=_POLL if full else 0)
                return True
            except queue.Full:
                if not full:
                    self.stats[f"full_{name}"] += 1
                full = True
        return False

    def _master(self, queries: Iterable[QueryFile], query_q: queue.Queue) -> None:
        for query in queries:
            if not self._give(query_q, query, "query"):
                return
        self._give(query_q, _END, "query")

    def _builder(self, query_q: queue.Queue, job_q: queue.Queue, result_q: queue.Queue) -> None:
        def incoming() -> Iterator[QueryFile]:
            while (query := self._take(query_q)) is not _END and query is not _STOP:
                yield query

        jobs = self._jobs(incoming())
        try:
            for job in jobs:
                if not self._acquire(job):
                    return
                if not job.pieces:
                    job.done.set()
                if not self._give(result_q, job, "result"):
                    return
                if job.pieces and not self._give(job_q, job, "job"):
                    return
            self._give(result_q, _END, "result")
        finally:
            jobs.close()

    def _prelim_worker(self, prelim: Callable[[Job], Any], job_q: queue.Queue, prelim_q: queue.Queue,
                       setup: Callable[[], None] | None = None) -> None:
        if setup is not None:
            with self._span("setup"):
                setup()
        while (job := self._take(job_q)) is not _STOP:
            self._run_prelim(job, prelim)
            if not self._give(prelim_q, job, "prelim"):
                return

    def _finalize_worker(self, prelim_q: queue.Queue) -> None:
        while (job := self._take(prelim_q)) is not _STOP:
            self._run_finalize(job)
            job.done.set()

    # ------------------------------------------------------------------ back-pressure by bytes

    def _acquire(self, job: Job) -> bool:
        with self._cv:
            while self._inflight_jobs and self._inflight_bytes + job.nbytes > self.max_inflight_bytes:
                if self._stop.is_set():
                    return False
                self._cv.wait(_POLL)
            self._count_in(job)
            return True

    def _count_in(self, job: Job) -> None:
        self._inflight_bytes += job.nbytes
        self._inflight_jobs += 1
        self.stats["jobs"] += 1
        self.stats["peak_bytes"] = max(self.stats["peak_bytes"], self._inflight_bytes)
        self.stats["peak_jobs"] = max(self.stats["peak_jobs"], self._inflight_jobs)

    def _count_out(self, job: Job) -> None:
        with self._cv:
            self._inflight_bytes -= job.nbytes
            self._inflight_jobs -= 1
            self._cv.notify_all()

    # ------------------------------------------------------------------ stages

    def _jobs(self, queries: Iterator[QueryFile]) -> Iterator[Job]:
        """The job builder: cut each query into payloads and group them into jobs."""
        serial = 0
        pending = Job(serial)
        for query in queries:
            state = _FileState(query)
            pending.items.append(_Start(state))
            reader: Any = None
            try:
                reader = iter(self.read(query, self.job_bytes))
                while True:
                    with self._span("read", serial):
                        payload = next(reader, _END)
                    if payload is _END:
                        break
                    pending.items.append(_Piece(state, payload))
                    pending.nbytes += int(self.size(payload))
                    if pending.nbytes >= self.job_bytes or not self.combine:
                        yield pending
                        serial += 1
                        pending = Job(serial)
                    if state.stop_reading:
                        break
            except self.file_errors as exc:
                pending.items.append(_ReadFailed(state, exc))
            finally:
                close = getattr(reader, "close", None)
                if close is not None:
                    close()
            pending.items.append(_End(state))
            if not self.combine:
                yield pending
                serial += 1
                pending = Job(serial)
        if pending.items:
            yield pending

    def _run_prelim(self, job: Job, prelim: Callable[[Job], Any]) -> None:
        job.prelim = prelim
        try:
            with self._span("prelim", job.serial):
                job.partials = [(job, prelim(job))]
        except self.file_errors as exc:
            pieces = job.pieces
            if len(pieces) == 1:
                pieces[0].state.stop_reading = True
                job.partials = [(job, _Failed(exc))]
                return
            job.partials = []  # several files: find the one at fault, payload by payload
            for piece in pieces:
                one = Job(job.serial, [piece])
                try:
                    job.partials.append((one, prelim(one)))
                except self.file_errors as error:
                    piece.state.stop_reading = True
                    job.partials.append((one, _Failed(error)))

    def _run_finalize(self, job: Job) -> None:
        outcomes: list[Any] = []
        for part, partial in job.partials or ():
            n = len(part.pieces)
            if isinstance(partial, _Failed):
                outcomes += [partial] * n
                continue
            try:
                with self._span("finalize", job.serial):
                    outcomes += self._chunks(part, self.finalize(partial))
            except self.file_errors as exc:
                if n == 1:
                    part.pieces[0].state.stop_reading = True
                    outcomes.append(_Failed(exc))
                    continue
                for piece in part.pieces:  # several files: re-run payload by payload
                    one = Job(job.serial, [piece])
                    try:
                        outcomes += self._chunks(one, self.finalize(job.prelim(one)))  # type: ignore[misc]
                    except self.file_errors as error:
                        piece.state.stop_reading = True
                        outcomes.append(_Failed(error))
        job.partials = None
        job.outcomes = outcomes

    @staticmethod
    def _chunks(job: Job, out: Any) -> list[Any]:
        chunks = list(out) if isinstance(out, list) else [out]
        if len(chunks) != len(job.pieces):
            raise RuntimeError(f"finalize returned {len(chunks)} chunk(s) for a job of {len(job.pieces)} payload(s)")
        return [c if isinstance(c, Chunk) else Chunk(c) for c in chunks]

    # ------------------------------------------------------------------ writer (caller's thread)

    def _write(self, job: Job) -> None:
        outcomes = iter(job.outcomes or ())
        item_serial = job.serial
        for item in job.items:
            state = item.state
            if isinstance(item, _Piece):
                outcome = next(outcomes)
                if state.error is not None:
                    continue
                if isinstance(outcome, _Failed):
                    self._fail(state, outcome.error)
                    continue
                try:
                    with self._span("write", item_serial):
                        state.sink.write(outcome.data)
                except self.file_errors as exc:
                    self._fail(state, exc)
                    continue
                for key, value in outcome.counts.items():
                    state.counts[key] = state.counts.get(key, 0) + int(value)
                self.progress.update(state.query, outcome.counts)
            elif isinstance(item, _End):
                if state.error is None:
                    try:
                        with self._span("commit", item_serial):
                            state.sink.commit()
                    except self.file_errors as exc:
                        self._fail(state, exc)
                    else:
                        self._open.pop(id(state), None)
                        state.sink = None
                self._finish(state)
            elif isinstance(item, _ReadFailed):
                if state.error is None:
                    self._fail(state, item.error)
            else:  # _Start
                self.progress.start(state.query)
                try:
                    state.sink = self.open_output(state.query)
                except self.file_errors as exc:
                    self._fail(state, exc)
                else:
                    self._open[id(state)] = state

    def _fail(self, state: _FileState, error: BaseException) -> None:
        state.error = error
        state.stop_reading = True
        sink, state.sink = state.sink, None
        self._open.pop(id(state), None)
        if sink is not None:
            sink.abort()

    def _finish(self, state: _FileState) -> None:
        state.done = True
        result = FileResult(state.query, "ok" if state.error is None else "failed", dict(state.counts),
                            time.perf_counter() - state.started, state.error)
        self.results.append(result)
        self.progress.finish(result)

    def _abort_open(self) -> None:
        """Abort the outputs still open (after an exception): nothing under a final name."""
        for state in list(self._open.values()):
            sink, state.sink = state.sink, None
            if sink is not None:
                try:
                    sink.abort()
                except Exception:  # noqa: BLE001 - the first exception is the one to report
                    pass
        self._open.clear()


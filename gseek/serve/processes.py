"""Worker processes of ``gseek serve`` (``--workers N``): each search's host work in an interpreter of its own.

A search's host work (the query side, the seed and gapped stages' host
passes and round trips, the HSPs shared out, the text) is mostly Python
holding the interpreter: two device *threads* of one process answered fewer
requests than one (``benchmarks/RESULTS.md``, 2026-11-28). So the service's
own process (the *front*, :class:`WorkerPool`) does HTTP, checks the
requests, parses their queries and batches them; each group goes to a free
*worker process* (:class:`WorkerProcess`), which holds every database on its
device (an :class:`~gseek.serve.engine.Engine` of that device, loaded and
warmed at start), runs the joined search, shares out its HSPs, writes each
request's bytes and sends them back — or each request's error as the JSON
refusal its client gets.

Processes are started with ``multiprocessing``'s ``spawn`` context (a fresh
interpreter: no CUDA state inherited), ``workers`` a device (``--gpus``: each
GPU; else the one ``--device``), all at once; the service says it listens
once every worker is warm. A worker ignores SIGINT and SIGTERM (a terminal's
Ctrl-C or systemd's stop reach the whole process group: the front drains the
requests in flight, then ends its workers), and ends when the front tells it
to or its pipe closes (the front gone). Its files live in the front's private
folder, removed at exit.

A worker process that ends during a search (killed, crashed) fails that
search's requests only (503 ``resources``, "try again") and is started again
in the background; the others keep answering meanwhile (while every worker
is down the groups wait, within each request's time limit). One that cannot
be started again is *gone*: the others take its share, and with none left a
request is refused at once (503).

A worker process that is alive but does not answer (*hung*: stuck in a
kernel, a deadlock, stopped) is killed by the pool's watchdog once the group
it was sent has been out :func:`hung_after` seconds (the request time limit
and a grace: every request of the group has had its 504 by then, nobody
waits for the answer): SIGKILL to that process only, the group's requests
failed with 504 ``timeout``, the worker started again as one that ended.
The BLAST stage seconds a worker reported (``/healthz``'s ``blast_stages``)
are kept across its restarts.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import multiprocessing
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing.reduction import ForkingPickler
from typing import Any

from gseek.errors import GseekError, OptionError, one_line, signals_held

from .engine import Database, Front, Limits, RequestError, SearchRequest, add_seconds, database_specs
from .slots import SlotDown

__all__ = ["WorkerPool", "WorkerProcess"]

#: Seconds a worker process may take to load and warm every database.
READY_S = 3600.0
#: Seconds a worker process is given to end when told to, then killed.
STOP_S = 10.0
#: Longest grace past the request time limit before a worker that has not answered is killed (:func:`hung_after`).
HUNG_GRACE_S = 10.0
#: Seconds between two looks of the watchdog at the worker processes.
WATCH_S = 0.25
#: Longest wait of the front's main thread for its workers to start: a signal's Python handler runs in the main
#: thread, once it runs Python again, while the kernel may hand the signal to another thread (a worker's thread,
#: as it unblocks SIGTERM after starting its process, is the one that takes it when the machine is loaded); an
#: untimed wait left SIGTERM unanswered until every worker had loaded.
SIGNAL_LOOK_S = 0.5


def hung_after(timeout: float) -> float:
    """Seconds a worker process may take over a group before it is taken as hung and killed: the
    request time limit ``timeout`` and as much again, at most :data:`HUNG_GRACE_S` more.

    >>> hung_after(300.0), hung_after(4.0)
    (310.0, 8.0)
    """
    return timeout + min(timeout, HUNG_GRACE_S)


def _status(process: Any) -> str:
    """How a process ended, in words (``signal 9``, ``exit 1``)."""
    code = process.exitcode
    if code is None:
        return "still running"
    return f"signal {-code}" if code < 0 else f"exit {code}"


def _outgoing(req: SearchRequest) -> SearchRequest:
    """``req`` as it travels to a worker process: its database by name, and of its queries only
    what the worker reads (a SAM mapping request's files, else the parsed batches and the files' names)."""
    if req.task == "map" and req.outfmt != "mapping":
        return dataclasses.replace(req, database=req.database.name, parsed=None)
    return dataclasses.replace(req, database=req.database.name, files=[(name, b"") for name, _ in req.files])


def _outcome(answer: Any) -> Any:
    """An answer as it travels back: the bytes, or the error as its JSON refusal (a bug's traceback
    printed here, in the service's log)."""
    from .engine import request_error

    if not isinstance(answer, BaseException):
        return answer
    refusal = request_error(answer)
    if refusal.status == 500:
        traceback.print_exception(type(answer), answer, answer.__traceback__, file=sys.stderr)
    return refusal.as_json()


def worker_main(conn: Any, taken: Any, device: str, verify: bool, databases: list[str], threads: int | None,
                warm: bool, workdir: str) -> None:
    """A worker process: load (``verify``: checking every part's SHA-256) and warm ``databases`` on
    ``device``, say so, then answer groups until told to end (``None``) or the front is gone, counting
    in ``taken`` (shared memory) the groups it has taken."""
    from .engine import Engine

    for sig in (signal.SIGINT, signal.SIGTERM):  # the front drains, then ends us
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})  # (blocked from its birth)
    try:
        engine = Engine(databases, device=device, threads=threads, workdir=workdir, verify=verify)
        if warm:
            engine.warm()
    except BaseException as exc:  # noqa: BLE001 - reported to the front, which refuses to start
        conn.send(("failed", (isinstance(exc, OptionError), one_line(exc))))
        return
    conn.send(("ready", {"device": engine.backend.spec,
                         "databases": [(db.name, db.path, db.tasks, db.sequences, db.bases)
                                       for db in engine.databases.values()]}))
    try:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):  # the front is gone
                break
            if message is None:
                break
            taken.value += 1  # its requests are in flight: were it to end now, they fail
            name, options, reqs = message
            db = engine.databases[name]
            reqs = [dataclasses.replace(req, database=db) for req in reqs]
            try:
                answers = engine.answer((db, options), reqs)
            except Exception as exc:  # noqa: BLE001 - every request's error
                answers = [exc] * len(reqs)
            conn.send(([_outcome(a) for a in answers], engine.stage_seconds()))
    finally:
        engine.close(wait=False)


class WorkerProcess:
    """One worker process and the thread of the front that talks to it (a slot of the batcher,
    :mod:`gseek.serve.slots`): ``number``, ``device`` (as the worker's backend names it once
    started), ``executor``, ``up``, ``gone``; ``pid``, ``restarts``; ``on_change`` (called from its
    thread when it comes up again or is gone); ``hung_s``: seconds it may take over a group before
    :meth:`kill_if_hung` kills it (None: no bound)."""

    def __init__(self, number: int, device: str, args: tuple, log: Callable[[str], None],
                 hung_s: float | None = None) -> None:
        self.number, self.device = number, device
        self._args, self._log, self.hung_s = args, log, hung_s
        self.executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"gseek-serve-worker{number}")
        self.up = self.gone = self.closing = self._calling = False
        self.process: Any = None
        self._conn: Any = None
        self.restarts = 0
        #: The databases as the worker describes them (name, path, tasks, sequences, bases).
        self.described: list[tuple] = []
        #: The BLAST searches' seconds by stage of this worker's processes before the one running now, and
        #: the one running now's (its last answer's: the totals of its searchers); both under ``_watch``.
        self._stages_before: dict[str, float] = {}
        self._stages_now: dict[str, float] = {}
        #: When the group out now is taken as hung (``time.monotonic()``; None: none out, or killed over it),
        #: and whether the watchdog killed the process over it (:meth:`kill_if_hung`); both under ``_watch``.
        self._deadline: float | None = None
        self._hung = False
        self._watch = threading.Lock()
        self.on_change: Callable[[], None] | None = None
        self._taken: Any = None
        self._sent = 0
        #: Held while deciding to write to the pipe: a group (:meth:`call`) and the end (:meth:`ask_to_stop`)
        #: never write at once, and the end is not written between a group's check and its message.
        self._pipe = threading.Lock()

    def __repr__(self) -> str:
        return f"WorkerProcess({self.number}, {self.device}, pid {self.pid})"

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    @property
    def stages(self) -> dict[str, float]:
        """The BLAST searches' seconds by stage of every process this worker has been (restarts kept)."""
        with self._watch:
            return add_seconds(self._stages_before, self._stages_now)

    def kill_if_hung(self, now: float) -> bool:
        """Kill the process (SIGKILL) when the group out now has been out past :attr:`hung_s` seconds
        at ``now`` (``time.monotonic()``); its send or wait in :meth:`call` then fails as for a
        process that ended. True when it did."""
        with self._watch:
            if self._deadline is None or now < self._deadline:
                return False
            self._deadline, self._hung = None, True
            self.process.kill()
        return True

    def _arm(self) -> None:
        """A group goes out: the watchdog's clock starts."""
        if self.hung_s is not None:
            with self._watch:
                self._deadline = time.monotonic() + self.hung_s

    def _disarm(self) -> bool:
        """The group's answer came, or the process ended: whether the watchdog killed it over the group."""
        with self._watch:
            self._deadline, hung, self._hung = None, self._hung, False
        return hung

    def start(self, verify: bool = False) -> None:
        """Start the process and wait until it has loaded (``verify``: checking every part's SHA-256)
        and warmed every database; a :class:`~gseek.errors.GseekError` (an
        :class:`~gseek.errors.OptionError` for a bad ``-x``) with its one-line reason when it cannot."""
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe()
        self._taken, self._sent = context.RawValue("q", 0), 0  # groups the worker took, groups sent to it
        process = context.Process(target=worker_main, args=(theirs, self._taken, self.device, verify, *self._args),
                                  name=f"gseek-serve-worker{self.number}")
        # born with SIGINT and SIGTERM blocked (the mask survives fork and exec), until worker_main ignores
        # them: a stop sent to the whole process group while it starts does not end it before the drain
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        theirs.close()  # ours alone: the worker's end closes with it (EOF here when it ends)
        self.process, self._conn = process, ours
        deadline = time.monotonic() + READY_S
        while not ours.poll(1.0) and not self.closing:  # (poll is true at EOF too)
            if time.monotonic() > deadline:
                break
        try:
            kind, info = ours.recv() if ours.poll(0) else ("failed", (False, "stopped while loading" if self.closing
                                                                          else f"not ready within {READY_S:g} s"))
        except (EOFError, OSError):
            process.join(STOP_S)
            kind, info = "failed", (False, f"ended ({_status(process)}) while loading; see the messages above")
        if kind != "ready":
            self._end()
            usage, message = info
            raise (OptionError if usage else GseekError)(message)
        self.device = info["device"]
        self.described = info["databases"]
        self.up = True

    def call(self, target: tuple[Database, Any], reqs: list[SearchRequest]) -> list[Any]:
        """The answers of a group (:meth:`~gseek.serve.engine.Front.answer`), from the worker; a
        :class:`~gseek.serve.engine.RequestError` (503) for each when the worker ends meanwhile;
        :class:`~gseek.serve.slots.SlotDown` when it ended before it took the group (the batcher sends
        the group on)."""
        db, options = target
        # pickled first: a message that cannot be pickled fails here, before it counts as sent
        message = ForkingPickler.dumps((db.name, options, [_outgoing(req) for req in reqs]))
        with self._pipe:
            if not self.up:  # found ended by a group before this one (queued behind it): being started again
                raise SlotDown(f"worker process {self.number} is down ({_status(self.process)})")
            self._calling = True
        try:
            self._sent += 1
            self._arm()
            self._conn.send_bytes(message)
            answers, stages = self._conn.recv()
            with self._watch:
                self._stages_now = stages
        except (EOFError, OSError):  # (BrokenPipeError too): the worker ended, or the watchdog killed it
            if self._disarm():  # hung: every request of the group is past its time limit (504 already)
                self._lost(len(reqs), hung=True)
                raise RequestError(504, "timeout", f"the worker process searching this request did not answer "
                                                   f"within {self.hung_s:g} s (killed)") from None
            taken = self._taken.value >= self._sent  # it had the group: its requests were in flight
            self._lost(len(reqs) if taken else 0)
            if not taken:  # it ended before it took the group: nothing failed, the group goes to another
                raise SlotDown(f"worker process {self.number} ended ({_status(self.process)})") from None
            raise RequestError(503, "resources", f"the worker process searching this request ended "
                                                 f"({_status(self.process)}); try again") from None
        finally:
            self._disarm()  # (a kill as the answer came: the next group finds the process ended)
            self._calling = False
        return [RequestError(a["status"], a["kind"], a["error"]) if isinstance(a, dict) else a for a in answers]

    def _lost(self, requests: int, hung: bool = False) -> None:
        self.up = False
        self.process.join(STOP_S)
        with self._watch:  # what it reported, kept for /healthz
            self._stages_before, self._stages_now = add_seconds(self._stages_before, self._stages_now), {}
        again = "" if self.closing else "; starting it again"
        during = f"during a search of {requests} request(s)" if requests else "while idle (no request lost)"
        if hung:
            during = f"hung: no answer to a search of {requests} request(s) within {self.hung_s:g} s, killed"
        self._log(f"gseek serve: worker process {self.number} ({self.device}, pid {self.pid}) ended "
                  f"({_status(self.process)}) {during}{again}")
        if not self.closing:
            self.executor.submit(self._restart)

    def _restart(self) -> None:
        self._end()
        try:
            self.start()
            self.restarts += 1
            self._log(f"gseek serve: worker process {self.number} ({self.device}) started again (pid {self.pid})")
        except Exception as exc:  # noqa: BLE001 - the others keep answering
            self.gone = True
            if self.closing:  # (its start cut short: the service is ending)
                return
            self._log(f"gseek serve: worker process {self.number} ({self.device}) cannot be started again: "
                      f"{one_line(exc)}")
        if self.on_change is not None:
            self.on_change()

    def _end(self) -> None:
        """The process ended (killed where it does not end by itself), its pipe closed."""
        if self.process is not None:
            if self.process.is_alive():
                self.process.kill()
            self.process.join(STOP_S)
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def ask_to_stop(self) -> None:
        """Tell the worker to end once idle (it takes no group after)."""
        with self._pipe:
            self.closing, self.up = True, False
            if self.process is not None and self.process.is_alive() and not self._calling and self._conn is not None:
                try:
                    self._conn.send(None)
                except OSError:
                    pass

    def stop(self) -> None:
        """End the worker: told to (:meth:`ask_to_stop`) and given :data:`STOP_S` where it is idle,
        else killed; then its thread."""
        if not self.closing:
            self.ask_to_stop()
        if self.process is not None and not self._calling:
            self.process.join(STOP_S)
        if self.process is not None and self.process.is_alive():
            self.process.kill()
        self.executor.shutdown(wait=True, cancel_futures=True)  # (a call in flight ends with its process)
        self._end()


class WorkerPool(Front):
    """The front of a service whose searches run in worker processes: ``workers`` a device of
    ``devices`` (names: ``cpu``, ``gpu:N``, ``auto``; a Backend by its ``spec``), each loading
    ``databases`` (``-x`` specs) with ``threads`` and warming them (``warm``); ``log`` gets a line when
    a worker ends or starts again.
    Started at once, all together; a watchdog thread kills a worker that has not answered a group
    within :func:`hung_after` the request time limit; :meth:`close` ends them."""

    def __init__(self, databases: list[str], devices: list[Any], workers: int = 1, threads: int | None = None,
                 limits: Limits | None = None, warm: bool = True, log: Callable[[str], None] | None = None) -> None:
        specs = database_specs(databases)  # a bad -x refused before any process starts
        if workers < 1:
            raise OptionError(f"--workers {workers}: at least 1 for worker processes")
        super().__init__(limits, None, max(2, 2 * len(devices) * workers))
        log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        args = ([f"{name}={path}" for name, path in specs], threads, warm, self.workdir)
        hung_s = hung_after(self.limits.timeout)
        # a Backend object as its spec (``gpu:N``, ``cpu``): the name that builds it again in the worker process
        names = [str(getattr(d, "spec", d)) for d in devices]
        self.slots = [WorkerProcess(n, device, args, log, hung_s)
                      for n, device in enumerate(d for d in names for _ in range(workers))]
        self._closed = threading.Event()
        self._watchdog = threading.Thread(target=self._watch, name="gseek-serve-watchdog", daemon=True)
        try:  # the first checks the index's parts (each loads them: the others need not hash them again)
            # a signal meanwhile raised once every start's thread is known to its executor, so close() waits for
            # it and it ends the process it started (raised inside Thread.start, it left that thread unknown to
            # close(), and the service ended with the thread's worker process still loading)
            with signals_held():
                starts = [slot.executor.submit(slot.start, slot.number == 0) for slot in self.slots]
            for started in starts:
                while not concurrent.futures.wait([started], SIGNAL_LOOK_S).done:
                    pass  # (timed waits: see SIGNAL_LOOK_S)
                started.result()
        except BaseException:
            self.close(wait=False)
            raise
        self.databases = {name: Database(name, path, tuple(tasks), sequences, bases)
                          for name, path, tasks, sequences, bases in self.slots[0].described}
        self._watchdog.start()

    def _watch(self) -> None:
        """Every :data:`WATCH_S` seconds until closed: kill the workers hung over a group."""
        while not self._closed.wait(WATCH_S):
            now = time.monotonic()
            for slot in self.slots:
                slot.kill_if_hung(now)

    def answer(self, target: tuple[Database, Any], reqs: list[SearchRequest], slot: Any) -> list[Any]:
        return slot.call(target, reqs)

    def stage_seconds(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for slot in self.slots:
            out = add_seconds(out, slot.stages)
        return out

    def close(self, wait: bool = True) -> None:
        """End every worker process (after the drain: those still searching are killed) and the threads."""
        self._closed.set()
        if self._watchdog.is_alive():
            self._watchdog.join()
        for slot in self.slots:
            slot.ask_to_stop()
        for slot in self.slots:
            slot.stop()
        super().close(wait)

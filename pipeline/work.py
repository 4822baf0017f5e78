"""What flows through the pipeline engine (:class:`~gseek.pipeline.engine.Dispatcher`): the query
files, the bounds of its queues, the jobs, the chunks a finalize makes, each file's result, the
progress hook and the sink protocol (the engine's names too: ``from gseek.pipeline.engine import
QueryFile`` keeps working)."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


__all__ = ["QueryFile", "QueueBounds", "Chunk", "FileResult", "Progress", "Sink", "Job"]

@dataclass(frozen=True)
class QueryFile:
    """One entry of the work: input files read in order into one ``output``.

    ``name`` is what summaries and progress bars show (default: the first
    path); ``line`` is the entry's line in the query list, if any.
    """

    paths: tuple[str, ...]
    output: str
    name: str = ""
    line: int | None = None
    #: ``paths`` are the mate 1 and mate 2 files of paired-end reads (read side by side).
    paired: bool = False

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", self.paths[0] if self.paths else self.output)


@dataclass(frozen=True)
class QueueBounds:
    """Sizes of the four queues: ``query`` (files), ``job`` (jobs waiting for a
    prelim worker), ``prelim`` (jobs waiting for a finalize worker),
    ``result`` (jobs read but not yet written: how far reading runs ahead)."""

    query: int = 2
    job: int = 4
    prelim: int = 4
    result: int = 16

    def __post_init__(self) -> None:
        for name in ("query", "job", "prelim", "result"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"queue bound {name!r} must be a positive integer, not {value!r}")


@dataclass
class Chunk:
    """The finalised output of one payload: ``data`` for the sink, and counts
    summed per file (``records`` and ``hits`` go to the summary)."""

    data: Any
    counts: dict[str, int] = field(default_factory=dict)


@dataclass
class FileResult:
    """What happened to one query file: ``status`` ``ok``, ``failed`` or
    ``skipped``; counts summed over its chunks; wall seconds from its first
    read to its commit; the exception that failed it."""

    query: QueryFile
    status: str
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    error: BaseException | None = None

    @property
    def records(self) -> int:
        return int(self.counts.get("records", 0))

    @property
    def hits(self) -> int:
        return int(self.counts.get("hits", 0))


class Progress:
    """Hooks the writer calls (in the caller's thread); subclass what you need."""

    def start(self, query: QueryFile) -> None:
        """A file's first job reached the writer."""

    def update(self, query: QueryFile, counts: dict[str, int]) -> None:
        """A chunk of ``query`` was written; ``counts`` are the chunk's."""

    def finish(self, result: FileResult) -> None:
        """A file is complete (committed) or failed."""


class Sink(Protocol):  # pragma: no cover - typing only
    def write(self, data: Any) -> None: ...
    def commit(self) -> None: ...
    def abort(self) -> None: ...


# --------------------------------------------------------------------------- jobs


class _FileState:
    """Mutable state of one query file while it flows through the pipeline."""

    __slots__ = ("query", "started", "counts", "sink", "error", "stop_reading", "done")

    def __init__(self, query: QueryFile) -> None:
        self.query = query
        self.started = time.perf_counter()
        self.counts: dict[str, int] = {}
        self.sink: Any = None
        self.error: BaseException | None = None
        self.stop_reading = False  # a worker found the file bad: the builder stops reading it
        self.done = False


class _Start:
    __slots__ = ("state",)

    def __init__(self, state: _FileState) -> None:
        self.state = state


class _End(_Start):
    __slots__ = ()


class _ReadFailed(_Start):
    __slots__ = ("error",)

    def __init__(self, state: _FileState, error: BaseException) -> None:
        super().__init__(state)
        self.error = error


class _Piece(_Start):
    __slots__ = ("payload",)

    def __init__(self, state: _FileState, payload: Any) -> None:
        super().__init__(state)
        self.payload = payload


class _Failed:
    """Outcome of a payload whose file error was caught by a worker."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class Job:
    """A unit of work: ``payloads`` (batches, possibly of several files) and
    the file events around them, in input order. ``serial`` numbers jobs from 0."""

    __slots__ = ("serial", "items", "nbytes", "done", "partials", "outcomes", "prelim")

    def __init__(self, serial: int, items: list | None = None) -> None:
        self.serial = serial
        self.items: list[_Start] = [] if items is None else items
        self.nbytes = 0
        self.done = threading.Event()
        self.partials: list[tuple[Job, Any]] | None = None
        self.outcomes: list[Any] | None = None
        self.prelim: Callable[[Job], Any] | None = None

    @property
    def pieces(self) -> list[_Piece]:
        return [item for item in self.items if isinstance(item, _Piece)]

    @property
    def payloads(self) -> list[Any]:
        """The batches of this job, in input order."""
        return [item.payload for item in self.items if isinstance(item, _Piece)]

    def __repr__(self) -> str:
        return f"Job(serial={self.serial}, payloads={len(self.pieces)}, nbytes={self.nbytes})"


class _OneAtATime:
    """A prelim stage that runs one call at a time: its worker's, or a finalize
    thread's re-run of a failed job payload by payload (a stage's device state,
    workspace and stream are not for two threads at once)."""

    __slots__ = ("stage", "lock")

    def __init__(self, stage: Callable[[Job], Any]) -> None:
        self.stage = stage
        self.lock = threading.Lock()

    def __call__(self, job: Job) -> Any:
        with self.lock:
            return self.stage(job)


_END = object()  # end of a queue's stream
_STOP = object()  # returned to a waiting thread when the stop signal is set


def _wake(q: queue.Queue, waiting: int) -> None:
    """Put ``_STOP`` into ``q`` for each of its ``waiting`` readers, as room allows (a reader that finds
    none sees the stop signal at its next poll)."""
    for _ in range(waiting):
        try:
            q.put_nowait(_STOP)
        except queue.Full:
            return


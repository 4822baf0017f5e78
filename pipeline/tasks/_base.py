"""What every pipeline task shares: the picklable task spec, the lazy output sink, job sizing, warm-up.

A task (``MapTask``, ``AlignTask``, ``PairsTask``) is two things: its
:class:`TaskSpec` -- the task's name, its source file and its options, small
and picklable, the same on every machine -- and the runtime the spec builds
(:meth:`TaskSpec.build`): the index or targets loaded, one mapper or aligner
per device with its workspaces. A local run builds the runtime once; the
Dask runner sends the spec and each worker builds its own.
"""

from __future__ import annotations

import importlib
import os
import threading
from dataclasses import dataclass
from collections.abc import Callable, Iterator
from typing import Any, Protocol, runtime_checkable

import numpy as np

from gseek.backend import numba_guard
from gseek.errors import FastxError
from gseek.seqio import FastxReader, SequenceBatch
from gseek.seqio.reader import PARALLEL_MIN_CHUNK_BYTES

from ..engine import QueryFile

__all__ = ["Task", "TaskSpec", "LazySink", "batch_nbytes", "warm_host", "GPU_JOB_BYTES", "MAX_PARSE_THREADS", "TASK_CLASSES"]

#: Input per job on a GPU (``DEFAULT_JOB_BYTES`` on the CPU): fewer, larger launches
#: (search of 1M reads on the H200: 0.16 s in 16 MiB batches, 0.08 s in 64 MiB ones).
GPU_JOB_BYTES = 64 << 20
#: At most this many threads parse one query file.
MAX_PARSE_THREADS = 8

#: Task name -> "module:class" of its runtime (imported when a spec is built).
TASK_CLASSES = {
    "map": "gseek.pipeline.tasks.map:MapTask",
    "align": "gseek.pipeline.tasks.align:AlignTask",
    "pairs": "gseek.pipeline.tasks.align:PairsTask",
    "blast": "gseek.pipeline.tasks.blast:BlastTask",
}


@runtime_checkable
class Task(Protocol):
    """What the engine (:class:`~gseek.pipeline.engine.Dispatcher`), the runner (``run_pipeline``,
    resume), the cluster and the front doors (:mod:`gseek.pipeline.front`) need of a task; every
    task (:class:`~.map.MapTask`, :class:`~.blast.BlastTask`, :class:`~.align.AlignTask`,
    :class:`~.align.PairsTask`) is one (``tests/test_tasks.py``)."""

    #: The task's name (:data:`TASK_CLASSES`), and its outputs' suffix in a pipeline's folder.
    name: str
    output_suffix: str
    #: What rebuilds it on another process (None: an index never saved).
    spec: TaskSpec | None
    #: Query input per job when the caller sets none.
    job_bytes: int

    def fingerprint(self) -> str:
        """Hash of everything that changes the output (``--resume``)."""

    @staticmethod
    def check_output_name(path: str | os.PathLike, **options: Any) -> None:
        """Refuse an output name the task cannot write (before any work)."""

    def read(self, query: QueryFile, chunk_bytes: int) -> Iterator[Any]:
        """The query's payloads, in order."""

    def prelims(self) -> list[Callable[[Any], Any]]:
        """One prelim callable per device worker."""

    def finalize(self, partial: Any) -> list[Any]:
        """A job's chunks (text and counts), on a host thread."""

    def open_output(self, query: QueryFile) -> LazySink:
        """The query's output sink."""

    def dispatcher(self, **options: Any) -> Any:
        """A :class:`~gseek.pipeline.engine.Dispatcher` over these stages."""


@dataclass(frozen=True)
class TaskSpec:
    """A task without its runtime: picklable, rebuilt anywhere by :meth:`build`.

    ``task``: a :data:`TASK_CLASSES` name; ``source``: the index (map) or the
    targets / sequences file (align, pairs); ``options``: the task's keyword
    arguments (sorted name, value pairs); ``devices``/``threads``: where the
    runtime runs (None: as the building process chooses).

    >>> spec = TaskSpec("align", "t.fa", (("mode", "local"),))
    >>> import pickle; pickle.loads(pickle.dumps(spec)) == spec
    True
    """

    task: str
    source: str
    options: tuple[tuple[str, Any], ...] = ()
    devices: tuple[str, ...] | None = None
    threads: int | None = None

    @classmethod
    def of(cls, task: str, source: str | os.PathLike, options: dict[str, Any], devices: Any = None,
           threads: int | None = None) -> TaskSpec:
        names = None if devices is None else tuple(d if isinstance(d, str) else d.spec for d in devices)
        return cls(task, os.fspath(source), tuple(sorted(options.items())), names, threads)

    def build(self, **overrides: Any) -> Any:
        """The task's runtime on this machine (``overrides``: e.g. other ``devices``)."""
        module, name = TASK_CLASSES[self.task].split(":")
        cls = getattr(importlib.import_module(module), name)
        kwargs: dict[str, Any] = dict(self.options)
        kwargs.update(devices=self.devices, threads=self.threads)
        kwargs.update(overrides)
        return cls(self.source, **kwargs)


class LazySink:
    """One output file of a task, opened at its first write: a query file without
    records (empty, missing) writes nothing (not even a header on stdout) before
    its error. Subclasses say how to open the writer and put one chunk's data."""

    #: A query file without records is an error (``gseek search``, ``gseek align -q``); else
    #: the output is written all the same (a header alone).
    empty_error = True

    def __init__(self, query: QueryFile) -> None:
        self.query = query
        self.writer: Any = None
        self.records = 0

    def open(self) -> Any:  # pragma: no cover - abstract
        """The entered writer (a context manager)."""
        raise NotImplementedError

    def put(self, data: Any) -> int:  # pragma: no cover - abstract
        """Write one chunk's data; return its records."""
        raise NotImplementedError

    def before_commit(self) -> None:
        """Checks that must pass before the output is renamed into place."""

    def write(self, data: Any) -> None:
        if self.writer is None:
            self.writer = self.open()
        self.records += self.put(data)

    def commit(self) -> None:
        self.before_commit()
        if self.records == 0 and self.empty_error:
            error = FastxError(", ".join(self.query.paths), None, "no FASTA/FASTQ records (empty file)")
            self.abort()
            raise error
        if self.writer is None:
            self.writer = self.open()
        writer, self.writer = self.writer, None
        writer.__exit__(None, None, None)

    def abort(self) -> None:
        if self.writer is not None:
            writer, self.writer = self.writer, None
            writer.__exit__(RuntimeError, None, None)


def batch_nbytes(batch: SequenceBatch) -> int:
    """Bytes held by a batch's arrays (the in-flight memory it costs)."""
    if hasattr(batch, "mate1"):  # paired-end reads (a PairedBatch): both mates
        return batch_nbytes(batch.mate1) + batch_nbytes(batch.mate2)  # type: ignore[attr-defined]
    arrays = (batch.codes, batch.offsets, batch.quals, batch.names, batch.name_offsets, batch.descriptions,
              batch.description_offsets, batch.lines)
    return int(sum(a.nbytes for a in arrays if a is not None))


def parse_threads(threads: int | None, most: int = MAX_PARSE_THREADS) -> int:
    """Threads that parse one query file: the task's threads, at most ``most``."""
    return max(1, min(most, threads or os.cpu_count() or 1))


def warm_host(task: str = "map") -> threading.Thread:
    """Start loading the host-side Numba code of ``task`` on a thread and return it (join it when
    done): the parser, and for ``map`` the selection and the SAM formatter (``blast``: the parser as
    the BLAST task reads its queries, by threads; a BLAST command imports neither of the others).

    The first Numba function a process loads from the cache pays for LLVM's
    set-up (~0.35 s on the H200 host; 0.11 s there in a megablast command's
    reader, before its first search could start); done here it overlaps the
    CUDA context and the index load instead of delaying the first batch. The
    records parsed come through a pipe, not a file: nothing is written, so a
    signal that ends the command during its start leaves nothing behind.
    """
    if task not in ("map", "blast"):
        raise ValueError(f"warm_host: task 'map' or 'blast', not {task!r}")

    def run() -> None:
        try:
            with numba_guard(True):
                warm()
        except Exception:  # noqa: BLE001 - only a head start; the real call reports any problem
            pass

    def warm() -> None:
        text = b"@w\nACGT\n+\nIIII\n" if task == "map" else b">w\nACGT\n"
        read, write = os.pipe()
        try:
            os.write(write, text)  # (a few bytes: the pipe holds them)
            os.close(write)
            write = -1
            if task == "blast":  # as BlastTask.read: by threads (the skim that splits chunks, then the parse)
                for _ in FastxReader(f"/dev/fd/{read}", threads=2, chunk_bytes=PARALLEL_MIN_CHUNK_BYTES):
                    pass
                return
            from gseek.mapper import select
            from gseek.output.sam import format_unmapped

            for batch in FastxReader(f"/dev/fd/{read}"):
                select.group(np.zeros(1, np.int64), 1)
                select.name_hashes(batch.names, batch.name_offsets)
                format_unmapped(batch, np.arange(1))
        finally:
            for fd in (read, write):
                if fd >= 0:
                    os.close(fd)

    thread = threading.Thread(target=run, name="gseek-warm-host", daemon=True)
    thread.start()
    return thread


__all__ += ["parse_threads"]

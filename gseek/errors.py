"""Exceptions raised by gseek.

Each subclasses the built-in exception a Python user would expect and names the
input it is about (file, line or record) and the rule broken, so the CLI can
print it as one line.
"""

from __future__ import annotations

import os
import threading

__all__ = [
    "one_line",
    "GseekError",
    "FastxError",
    "BackendError",
    "KernelCompileError",
    "OptionError",
    "IndexFormatError",
    "OutputBusyError",
    "OutputError",
    "OutputClash",
    "ClusterError",
    "Terminated",
    "deliver_signal",
    "signals_held",
    "GseekWarning",
]


class GseekError(Exception):
    """Base class of every error gseek raises on purpose.

    Its subclasses in :mod:`gseek.errors` also derive from the built-in
    exception a Python user would expect (``ValueError`` for bad input or options, ``RuntimeError``
    for the machine), so ``except GseekError`` catches them all and
    ``except ValueError`` still works. Arguments: as :class:`Exception`.

    >>> try:
    ...     raise OptionError("mismatches must be 0..8, not 9")
    ... except GseekError as exc:
    ...     print(type(exc).__name__, isinstance(exc, ValueError), exc)
    OptionError True mismatches must be 0..8, not 9
    """


class FastxError(GseekError, ValueError):
    """Malformed FASTA/FASTQ input (or a sequence file that cannot be opened or read).

    The message reads ``path:line: rule broken``, e.g.
    ``reads.fq:4123: quality length 99 != sequence length 100``, or
    ``path: rule broken`` when it is not about one line.

    Arguments:
        path: the file (kept as ``.path``).
        line: 1-based line number (``.line``), or None.
        message: the rule broken (``.rule``).

    >>> err = FastxError("reads.fq", 4123, "quality length 99 != sequence length 100")
    >>> str(err), err.line, isinstance(err, ValueError)
    ('reads.fq:4123: quality length 99 != sequence length 100', 4123, True)
    >>> str(FastxError("reads.fq", None, "no FASTA/FASTQ records (empty file)"))
    'reads.fq: no FASTA/FASTQ records (empty file)'
    """

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.rule = message
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}")

    def __reduce__(self) -> tuple:  # pickled as its arguments (a Dask worker's error reaches the client)
        return type(self), (self.path, self.line, self.rule)


class BackendError(GseekError, RuntimeError):
    """The requested compute backend cannot be used (e.g. no GPU found, or an unknown device name).

    Arguments: the message, as :class:`RuntimeError`.

    >>> from gseek import get_backend
    >>> get_backend("tpu")
    Traceback (most recent call last):
    ...
    gseek.errors.BackendError: unknown device 'tpu' (expected auto, cpu, gpu or gpu:N)
    >>> issubclass(BackendError, RuntimeError)
    True
    """


class KernelCompileError(GseekError, RuntimeError):
    """A ``.cu`` kernel failed to compile; the message names file and line.

    Raised by the GPU backend when NVRTC rejects a kernel family (the CPU
    backend compiles no CUDA). The message is NVRTC's first error, as
    ``kernels/FAMILY.cu:LINE: error ...``. Arguments: the message, as
    :class:`RuntimeError`.

    >>> err = KernelCompileError('kernels/dp.cu:120: error: identifier "H" is undefined')
    >>> print(err)
    kernels/dp.cu:120: error: identifier "H" is undefined
    >>> isinstance(err, RuntimeError)
    True
    """


class OptionError(GseekError, ValueError):
    """An invalid option or combination of options.

    Arguments: the message, as :class:`ValueError`; it names the option and
    what it accepts.

    >>> from gseek import PairAligner
    >>> PairAligner(mode="fast", device="cpu")
    Traceback (most recent call last):
    ...
    gseek.errors.OptionError: mode must be one of global, local, semiglobal, not 'fast'
    >>> issubclass(OptionError, ValueError)
    True
    """


class _AtPath:
    """An error about one path: ``path`` and ``rule`` kept, the message ``PATH: rule``, pickled
    as its two arguments (a Dask worker's error reaches the client as itself)."""

    def __init__(self, path: str | os.PathLike, message: str) -> None:
        self.path = os.fspath(path)
        self.rule = message
        super().__init__(f"{self.path}: {message}")

    def __reduce__(self) -> tuple:
        return type(self), (self.path, self.rule)


class IndexFormatError(_AtPath, GseekError, ValueError):
    """An index directory that cannot be used (bad part, format version or header).

    A part may be missing, truncated or corrupted, the format version wrong,
    the header unreadable. The message reads ``path: what is wrong``.

    Arguments:
        path: the index directory or part (kept as ``.path``).
        message: what is wrong (``.rule``).

    >>> err = IndexFormatError("ref.gseek", "not a gseek index (no header.json)")
    >>> str(err), err.rule
    ('ref.gseek: not a gseek index (no header.json)', 'not a gseek index (no header.json)')
    >>> import os, tempfile
    >>> from gseek import Index
    >>> Index.load(os.path.join(tempfile.mkdtemp(), "missing.gseek"), device="cpu")
    Traceback (most recent call last):
    ...
    gseek.errors.IndexFormatError: .../missing.gseek: no such index directory
    """


class OutputBusyError(_AtPath, GseekError, RuntimeError):
    """An output folder another gseek run is writing to (it holds the folder's
    lock). The message reads ``DIR: in use by ...``."""


class OutputError(_AtPath, GseekError, ValueError):
    """An output that would destroy what the run reads: the same file as an
    input, or a file inside an index in use. Refused before any work starts;
    the message reads ``PATH: what is wrong``."""


class OutputClash(OutputError):
    """An output that is (or writes into) what the run reads: an input file by
    any name (``-``: the file on standard input), a descriptor open on one, a
    file inside the index in use. The command line names one file as both, so
    the ``gseek`` command treats it as a usage error: ``exit_status`` 2, nothing
    read or written. The message reads ``PATH: what is wrong``."""

    exit_status = 2


class ClusterError(GseekError, RuntimeError):
    """Work a Dask cluster could not do: a task whose worker died each time it
    ran it (``distributed.KilledWorker``), named by what it held. Arguments:
    the message, as :class:`RuntimeError`.

    >>> print(ClusterError("s1.fq: its worker died each time it ran (3 workers)"))
    s1.fq: its worker died each time it ran (3 workers)
    """


class GseekWarning(UserWarning):
    """Input gseek reads but doubts, e.g. FASTQ qualities that look Phred+64 read
    as Phred+33. The message names the input; the ``gseek`` command prints it
    as one line (``gseek: warning: ...``), ``--quiet`` drops it.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn(GseekWarning("r.fq: qualities look Phred+64"))
    >>> str(caught[0].message), issubclass(GseekWarning, UserWarning)
    ('r.fq: qualities look Phred+64', True)
    """


class Terminated(BaseException):
    """SIGTERM or SIGHUP, raised in the main thread of the ``gseek`` command.

    A ``BaseException`` like ``KeyboardInterrupt`` (nothing that catches
    ``Exception`` stops it), so it unwinds through the same context managers
    as Ctrl-C: temporary outputs are removed, the pipeline's threads are
    stopped and its ``summary.tsv`` is rewritten. ``exit_status`` is
    128 + the signal number (143 for SIGTERM, 129 for SIGHUP), as a shell
    reports a process killed by that signal.
    """

    def __init__(self, signum: int) -> None:
        import signal

        self.signum = int(signum)
        self.exit_status = 128 + self.signum
        super().__init__(f"terminated by {signal.Signals(self.signum).name}")

    def __reduce__(self) -> tuple:
        return type(self), (self.signum,)


class signals_held:
    """Within the block, the exception a signal raises (:func:`deliver_signal`:
    :class:`Terminated`, ``KeyboardInterrupt``) waits for the block's end.

    For a block that makes something only it can undo, such as a child
    process: raised inside ``Popen`` after the fork, the exception would leave
    the child running with its pid unknown. Raised at the block's end, the
    thing is known and the caller's clean-up undoes it. The main thread's
    blocks only (signal handlers run there); elsewhere it does nothing.
    Blocks nest; the first signal is the one raised.

    >>> try:
    ...     with signals_held():
    ...         deliver_signal(Terminated(15))
    ...         print("the block ends")
    ... except Terminated as exc:
    ...     print("then:", exc)
    the block ends
    then: terminated by SIGTERM
    """

    def __enter__(self) -> signals_held:
        if threading.current_thread() is threading.main_thread():
            _HELD.depth += 1
            self._counted = True
        else:
            self._counted = False
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if not self._counted:
            return
        _HELD.depth -= 1
        if _HELD.depth == 0 and _HELD.pending is not None:
            pending, _HELD.pending = _HELD.pending, None
            raise pending


class _Held:
    depth = 0
    pending: BaseException | None = None


_HELD = _Held()


def deliver_signal(exc: BaseException) -> None:
    """What a signal handler does with the exception it raises: raise it now,
    or keep it for the end of the :class:`signals_held` block running."""
    if _HELD.depth and threading.current_thread() is threading.main_thread():
        if _HELD.pending is None:
            _HELD.pending = exc
        return
    raise exc


def one_line(exc: BaseException | None) -> str:
    """An exception as the one line the CLI and the pipeline summary print
    (an ``OSError`` as ``file: reason``; "" for None)."""
    if exc is None:
        return ""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}"
    return " ".join(text.split())

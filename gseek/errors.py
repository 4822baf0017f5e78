"""Exceptions raised by gseek.

Each subclasses the built-in exception a Python user would expect and names the
input it is about (file, line or record) and the rule broken, so the CLI can
print it as one line.
"""

from __future__ import annotations

import os

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
    "Terminated",
]


class GseekError(Exception):
    """Base class of every error gseek raises on purpose."""


class FastxError(GseekError, ValueError):
    """Malformed FASTA/FASTQ input.

    The message reads ``path:line: rule broken``, e.g.
    ``reads.fq:4123: quality length 99 != sequence length 100``.
    """

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.rule = message
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}")


class BackendError(GseekError, RuntimeError):
    """The requested compute backend cannot be used (e.g. no GPU found)."""


class KernelCompileError(GseekError, RuntimeError):
    """A ``.cu`` kernel failed to compile; the message names file and line."""


class OptionError(GseekError, ValueError):
    """An invalid option or combination of options."""


class IndexFormatError(GseekError, ValueError):
    """An index directory that cannot be used: missing, truncated or corrupted
    part, wrong format version, unreadable header. The message reads
    ``path: what is wrong``."""

    def __init__(self, path: str | os.PathLike, message: str) -> None:
        self.path = os.fspath(path)
        self.rule = message
        super().__init__(f"{self.path}: {message}")


class OutputBusyError(GseekError, RuntimeError):
    """An output folder another gseek run is writing to (it holds the folder's
    lock). The message reads ``DIR: in use by ...``."""

    def __init__(self, path: str | os.PathLike, message: str) -> None:
        self.path = os.fspath(path)
        self.rule = message
        super().__init__(f"{self.path}: {message}")


class OutputError(GseekError, ValueError):
    """An output that would destroy what the run reads: the same file as an
    input, or a file inside an index in use. Refused before any work starts;
    the message reads ``PATH: what is wrong``."""

    def __init__(self, path: str | os.PathLike, message: str) -> None:
        self.path = os.fspath(path)
        self.rule = message
        super().__init__(f"{self.path}: {message}")


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


def one_line(exc: BaseException | None) -> str:
    """An exception as the one line the CLI and the pipeline summary print
    (an ``OSError`` as ``file: reason``; "" for None)."""
    if exc is None:
        return ""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}"
    return " ".join(text.split())

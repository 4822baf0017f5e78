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


def one_line(exc: BaseException | None) -> str:
    """An exception as the one line the CLI and the pipeline summary print
    (an ``OSError`` as ``file: reason``; "" for None)."""
    if exc is None:
        return ""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}"
    return " ".join(text.split())

"""Outputs written whole or not at all: :class:`open_output`, the one atomic writer of gseek.

A regular file (or a path that does not exist yet) is written under a
temporary name beside it, ``.NAME.tmp-PID``, and renamed over the final name
with one ``os.replace`` when complete: readers see the old file or the whole
new one, never a part, and an error or a signal leaves nothing behind. Other
outputs are written in place, because renaming a file over them would
destroy them: ``-`` (standard output), character devices (``/dev/null``,
``/dev/full``), FIFOs, sockets and the ``/dev/std*`` names.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import sys
from pathlib import Path
from typing import IO

__all__ = ["open_output", "STDOUT", "temporary_name", "is_special"]

#: The output name that means standard output.
STDOUT = "-"


def temporary_name(path: str | os.PathLike, pid: int | None = None) -> Path:
    """The name an output is written under until it is complete."""
    path = Path(path)
    return path.with_name(f".{path.name}.tmp-{os.getpid() if pid is None else pid}")


def is_special(path: str | os.PathLike) -> bool:
    """Whether ``path`` is written in place: ``-``, or an existing file that is not a
    regular file (a character device, FIFO or socket; ``/dev/stdout`` included)."""
    if os.fspath(path) == STDOUT:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


class _StdoutBytes(io.RawIOBase):
    """Bytes to the current ``sys.stdout``, which stays open: its binary layer
    (after what its text layer holds), or the text itself, decoded as latin-1,
    for a text-only stream (``io.StringIO``)."""

    def __init__(self) -> None:
        self._text = sys.stdout
        self._text.flush()
        self._bytes = getattr(self._text, "buffer", None)

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        if self._bytes is None:
            self._text.write(bytes(view).decode("latin-1"))
        else:
            self._bytes.write(view)
        return len(view)

    def close(self) -> None:
        if not self.closed:
            (self._bytes or self._text).flush()
        super().close()


class open_output:
    """Write a file under a temporary name and rename it when complete.

    Use as a context manager; on an exception the temporary file is removed
    and nothing appears under the final name (an existing file of that name
    stays as it was). A name ending in ``.gz`` is gzip-compressed. ``-`` is
    standard output and special files are written in place (see the module).
    ``mode`` is ``"wb"`` (a binary file), ``"w"`` (ASCII text) or ``"path"``:
    no file is opened and the context gives the path to write by name (for
    a tool such as htslib that opens files itself); it is renamed all the same.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> with open_output(os.path.join(d, "x.txt")) as fh:
    ...     _ = fh.write(b"hello\\n")
    >>> sorted(os.listdir(d))
    ['x.txt']
    """

    def __init__(self, path: str | os.PathLike, mode: str = "wb") -> None:
        if mode not in ("wb", "w", "path"):
            raise ValueError(f"mode must be 'wb', 'w' or 'path', not {mode!r}")
        self.path = Path(path)
        self.mode = mode
        self.in_place = is_special(path)
        #: the file actually written: the temporary name, or the path itself in place
        self.tmp = self.path if self.in_place else temporary_name(self.path)

    def __enter__(self) -> IO:
        if self.mode == "path":
            self._fh = self._raw = None
            return Path("/dev/stdout") if os.fspath(self.path) == STDOUT else self.tmp  # type: ignore[return-value]
        if os.fspath(self.path) == STDOUT:
            raw: IO = _StdoutBytes()
        else:
            raw = open(self.tmp, "wb")
        if self.path.name.endswith(".gz"):
            self._raw = raw
            fh: IO = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0)  # type: ignore[assignment]
        else:
            self._raw = None
            fh = raw
        if "b" not in self.mode:
            fh = io.TextIOWrapper(fh, encoding="ascii", newline="\n")  # type: ignore[arg-type]
        self._fh = fh
        return fh

    def __exit__(self, exc_type, exc, tb) -> None:
        complete = False
        try:
            if self._fh is not None:
                self._fh.close()
            if self._raw is not None:
                self._raw.close()
            complete = exc_type is None  # only a file whose closes succeeded gets its final name
        finally:
            if self.in_place:
                pass
            elif complete:
                os.replace(self.tmp, self.path)
            else:
                try:
                    os.unlink(self.tmp)
                except FileNotFoundError:
                    pass

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
import shutil
import stat
import sys
from pathlib import Path
from typing import IO

__all__ = ["open_output", "STDOUT", "temporary_name", "is_special", "remove_stale_temporaries", "write_all"]

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


def write_all(fh: IO, data) -> None:
    """Write all of ``data`` to the binary stream ``fh``: an unbuffered stream (``python -u``,
    ``PYTHONUNBUFFERED``) may write only part of it to a pipe in one call."""
    view = memoryview(data).cast("B")
    while view.nbytes:
        n = fh.write(view)
        if n is None:  # a non-blocking stream that would block: try again
            continue
        view = view[n:]


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
            write_all(self._bytes, view)
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


def remove_stale_temporaries(final: str | os.PathLike, *, every: bool = False) -> list[Path]:
    """Remove what a killed writer of ``final`` left beside it and return it
    (``every=True``: ``final`` is a folder, and every temporary in it goes).

    Outputs are written as ``.NAME.tmp-PID`` (a BAM's SAM text as
    ``.NAME.sam.tmp-PID``; an index as a ``.NAME.tmp-PID`` folder) and
    renamed when complete; a SIGKILL or a power loss leaves them. A
    temporary is stale when its PID is this process's (a run before this
    one had the same PID) or no running process's; one of a running process
    (a concurrent run) is left alone.
    """
    final = Path(final)
    removed = []
    patterns = (".*.tmp-*",) if every else (f".{final.name}.tmp-*", f".{final.name}.sam.tmp-*")
    try:
        candidates = [p for pattern in patterns for p in (final if every else final.parent).glob(pattern)]
    except OSError:
        return removed
    for stale in candidates:
        pid = stale.name.rsplit("-", 1)[1]
        if not pid.isdigit() or (int(pid) != os.getpid() and _running(int(pid))):
            continue
        try:
            if stale.is_dir() and not stale.is_symlink():
                shutil.rmtree(stale)
            else:
                stale.unlink()
        except FileNotFoundError:
            continue
        except OSError:
            continue  # not ours to remove (permissions): the run's own output is what matters
        removed.append(stale)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process (OverflowError: not a PID; leave it alone)
    return True

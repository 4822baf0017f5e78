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

import contextlib
import errno
import glob
import gzip
import io
import os
import re
import shutil
import stat
import sys
from pathlib import Path
from typing import IO

from gseek.errors import OutputClash

__all__ = ["open_output", "STDOUT", "temporary_name", "is_special", "descriptor_of", "remove_stale_temporaries", "write_all",
           "check_output", "named_error", "OutputFile", "STDIN", "INDEX_SUFFIXES",
           "index_files", "read_only_fs"]

#: The output name that means standard output.
STDOUT = "-"


def temporary_name(path: str | os.PathLike, pid: int | None = None) -> Path:
    """The name an output is written under until it is complete."""
    path = Path(path)
    return path.with_name(f".{path.name}.tmp-{os.getpid() if pid is None else pid}")


_FD_PATH = re.compile(r"/(?:dev/fd|proc/(?:self|\d+)/fd)/(\d+)")


def descriptor_of(path: str | os.PathLike) -> int | None:
    """The file descriptor a name stands for (``-`` and ``/dev/stdout``: 1,
    ``/dev/fd/N``, ``/proc/self/fd/N`` or a link to one), or None. Such a name is
    never renamed over: it would replace the link, not write where the descriptor points."""
    if os.fspath(path) == STDOUT:
        return 1
    p = os.path.abspath(os.fspath(path))
    for _ in range(16):  # a chain of links, as the kernel follows it
        match = _FD_PATH.fullmatch(p)
        if match:
            return int(match.group(1))
        try:
            target = os.readlink(p)
        except OSError:
            return None
        p = os.path.abspath(os.path.join(os.path.dirname(p), target))
    return None


def is_special(path: str | os.PathLike) -> bool:
    """Whether ``path`` is written in place: ``-``, a name of a file descriptor
    (``/dev/stdout``, ``/dev/fd/N``: whatever it points to, a redirected file too),
    or an existing file that is not a regular file (a character device, FIFO or socket)."""
    if descriptor_of(path) is not None:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def named_error(exc: OSError, path: str | os.PathLike) -> OSError:
    """``exc`` as an ``OSError`` naming ``path`` (the user's name, not a temporary
    one; ``ENOSPC`` from a write names no file at all), so that
    :func:`gseek.errors.one_line` prints ``path: reason``."""
    if exc.errno is None:
        return exc
    return OSError(exc.errno, exc.strerror or os.strerror(exc.errno), os.fspath(path))


class OutputFile(io.FileIO):
    """A file opened for writing whose errors name ``shown`` (the output's final
    name) instead of the file written (its temporary name) or nothing at all.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> OutputFile(os.path.join(d, "no", ".x.tmp-1"), shown="x.sam")
    Traceback (most recent call last):
    ...
    FileNotFoundError: [Errno 2] No such file or directory: 'x.sam'
    """

    def __init__(self, file: str | os.PathLike | int, shown: str | os.PathLike) -> None:
        self.shown = os.fspath(shown)
        try:
            super().__init__(file, "wb")
        except OSError as exc:
            raise named_error(exc, shown) from exc

    def write(self, data) -> int:  # type: ignore[override]
        try:
            return super().write(data)
        except OSError as exc:
            raise named_error(exc, self.shown) from exc

    def close(self) -> None:
        try:
            super().close()
        except OSError as exc:
            raise named_error(exc, self.shown) from exc


def open_named(file: str | os.PathLike, shown: str | os.PathLike) -> io.BufferedWriter:
    """``open(file, "wb")`` whose errors name ``shown`` (see :class:`OutputFile`)."""
    return io.BufferedWriter(OutputFile(file, shown))


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
    stays as it was). A name ending in ``.gz`` is gzip-compressed unless
    ``compress`` is False (the caller compresses: BGZF). ``-`` is
    standard output and special files are written in place (see the module).
    ``mode`` is ``"wb"`` (a binary file), ``"w"`` (ASCII text) or ``"path"``:
    no file is opened and the context gives the path to write by name (for
    a tool such as htslib that opens files itself); it is renamed all the same.
    Errors name ``path``, never the temporary name (a full disk too, whose
    ``ENOSPC`` names no file): ``path: reason``. A ``path`` that is a
    directory is refused at once, before anything is written.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> with open_output(os.path.join(d, "x.txt")) as fh:
    ...     _ = fh.write(b"hello\\n")
    >>> sorted(os.listdir(d))
    ['x.txt']
    """

    def __init__(self, path: str | os.PathLike, mode: str = "wb", *, compress: bool = True) -> None:
        if mode not in ("wb", "w", "path"):
            raise ValueError(f"mode must be 'wb', 'w' or 'path', not {mode!r}")
        self.path = Path(path)
        self.mode = mode
        self.compress = compress and self.path.name.endswith(".gz")
        self.in_place = is_special(path)
        if not self.in_place and self.path.is_dir():  # refused before anything is written
            raise OSError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
        #: the file actually written: the temporary name, or the path itself in place
        self.tmp = self.path if self.in_place else temporary_name(self.path)

    def __enter__(self) -> IO:
        if self.mode == "path":
            self._fh = self._raw = None
            return Path("/dev/stdout") if os.fspath(self.path) == STDOUT else self.tmp  # type: ignore[return-value]
        fd = descriptor_of(self.path)
        if fd == 1:
            raw: IO = _StdoutBytes()  # /dev/stdout too: written as stdout is, not reopened (no truncation)
        elif fd is not None:  # /dev/fd/N: written through the descriptor, as the shell opened it (3>>log
            try:              # appends); reopening the name would truncate it
                raw = io.BufferedWriter(OutputFile(os.dup(fd), self.path))
            except OSError as exc:
                raise named_error(exc, self.path) from exc
        else:
            raw = open_named(self.tmp, self.path)
        if self.compress:
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
                try:
                    os.replace(self.tmp, self.path)
                except OSError as exc:
                    with contextlib.suppress(OSError):
                        os.unlink(self.tmp)
                    raise named_error(exc, self.path) from exc
            else:
                try:
                    os.unlink(self.tmp)
                except FileNotFoundError:
                    pass


#: The name that means standard input among a run's inputs.
STDIN = "-"
#: The indexes a BAM or CRAM output has beside it (``NAME.bai``...), by format: written with a sorted
#: output, removed when an unsorted one replaces a file of the name (they would describe another file).
INDEX_SUFFIXES = {"bam": (".bai", ".csi"), "cram": (".crai",)}


def check_output(path: str | os.PathLike, inputs=(), *, within=(), folder: bool = False) -> None:
    """Refuse, before any work starts, an output that cannot be written or would
    destroy what the run reads.

    Arguments:
        path: a file written through :class:`open_output`, or (``folder=True``)
            a folder made or replaced whole (an index, a pipeline's output
            folder); its missing parent folders are made.
        inputs: the files the run reads: the output may not be one of them
            (compared by device and inode, so another spelling of the name, a
            symbolic or hard link counts), nor (a folder output) hold one.
            ``-`` is standard input: the file on descriptor 0 when it is a
            regular file (``gseek ... -q - < a.fq``).
        within: folders the run reads (an index): the output may not lie inside one.

    What is checked is every file the output writes: a BAM's or CRAM's index
    beside it too (``x.bam.bai``, :data:`INDEX_SUFFIXES`), and, for ``-`` or a
    descriptor's name (``/dev/stdout``, ``/dev/fd/N``), the file its descriptor
    is open on (``gseek ... -q a.fq 1<>a.fq`` is refused, as ``cat`` refuses it).
    Other special files (``/dev/null``, a FIFO) pass: they are written in place,
    and ``/dev/null`` may be both input and output. Raises ``OSError``
    naming ``path`` (a directory where a file is written, a missing folder,
    one without write permission) or :class:`~gseek.errors.OutputClash` (an
    input, a folder in use: a usage error, exit 2).

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> reads = os.path.join(d, "r.fq")
    >>> _ = open(reads, "w").write("@r\\nACGT\\n+\\nIIII\\n")
    >>> check_output(os.path.join(d, "r.sam"), [reads])
    >>> check_output(os.path.join(d, ".", "r.fq"), [reads])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gseek.errors.OutputClash: .../r.fq: is also an input; give another output
    """
    read = _input_stats(inputs)
    if is_special(path):
        fd = descriptor_of(path)
        try:
            st_fd = None if fd is None else os.fstat(fd)
        except OSError:
            st_fd = None
        if st_fd is not None and stat.S_ISREG(st_fd.st_mode):
            shown = "standard output" if os.fspath(path) == STDOUT else path
            for name, st_in in read:
                if _same(st_fd, st_in):
                    raise OutputClash(shown, f"writes to {name}, an input; give another output")
            _check_within(shown, f"/dev/fd/{fd}", within, "writes to a file inside")
        return
    path = Path(path)
    try:
        st: os.stat_result | None = os.stat(path)
    except OSError:
        st = None
    if st is not None and not folder and stat.S_ISDIR(st.st_mode):
        raise OSError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
    if st is not None and folder and not stat.S_ISDIR(st.st_mode):
        raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), os.fspath(path))
    for name, st_in in read:
        if st is not None and _same(st, st_in):
            also = "" if os.path.abspath(name) == os.path.abspath(path) else f" ({name})"
            raise OutputClash(path, f"is also an input{also}; give another output")
        if folder and st is not None and _inside(_input_path(name), [st]):
            raise OutputClash(path, f"holds the input {name}, which writing it would remove; give another output")
    if not folder:
        for beside in index_files(path):
            try:
                st_beside = os.stat(beside)
            except OSError:
                continue
            for name, st_in in read:
                if _same(st_beside, st_in):
                    raise OutputClash(path, f"its index {beside}, written or removed beside it, is an input"
                                            f"{'' if name == os.fspath(beside) else f' ({name})'}; give another output")
    _check_within(path, path, within, "lies inside")
    parent = path.parent
    if folder:  # its missing parents are made: the nearest existing one must take them
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
    if not parent.exists():
        raise OSError(errno.ENOENT, f"{os.strerror(errno.ENOENT)} (folder {parent})", os.fspath(path))
    if not parent.is_dir():
        raise OSError(errno.ENOTDIR, f"{os.strerror(errno.ENOTDIR)} (folder {parent})", os.fspath(path))
    if not os.access(parent, os.W_OK | os.X_OK):
        code = errno.EROFS if read_only_fs(parent) else errno.EACCES  # say read-only where it is (root too)
        raise OSError(code, f"{os.strerror(code)} (folder {parent})", os.fspath(path))


def read_only_fs(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` lies on a file system mounted read-only (``EROFS`` for a write there)."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def index_files(path: str | os.PathLike) -> list[Path]:
    """The index files a BAM or CRAM output ``path`` has beside it (none for another name).

    >>> [p.name for p in index_files("out/x.bam")], index_files("x.sam")
    (['x.bam.bai', 'x.bam.csi'], [])
    """
    path = Path(path)
    suffixes = INDEX_SUFFIXES.get(path.suffix.lower().lstrip("."), ())
    return [path.with_name(path.name + suffix) for suffix in suffixes]


#: How standard input is named in a refusal.
_STDIN_SHOWN = "standard input"


def _input_stats(inputs) -> list[tuple[str, os.stat_result]]:
    """The inputs an output could destroy, each as (its name in a message, its stat): existing
    regular files and folders; ``-`` is standard input's file when descriptor 0 is a regular
    file (a pipe, a terminal or ``/dev/null`` holds nothing an output could overwrite)."""
    found = []
    for name in inputs:
        if name is None:
            continue
        try:
            if os.fspath(name) == STDIN:
                shown, st = _STDIN_SHOWN, os.fstat(0)
            else:
                shown, st = os.fspath(name), os.stat(name)
        except OSError:
            continue  # a missing input is the input's error, reported when it is read
        if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
            found.append((shown, st))
    return found


def _input_path(shown: str) -> str:
    """A path to an input named in a message (standard input: its descriptor's)."""
    return "/dev/fd/0" if shown == _STDIN_SHOWN else shown


def _check_within(shown: str | os.PathLike, path: str | os.PathLike, within, what: str) -> None:
    """Refuse an output at ``path`` inside one of the folders ``within`` (read by the run)."""
    for name in within:
        try:
            st_folder = os.stat(name)
        except OSError:
            continue
        if _inside(path, [st_folder]):
            raise OutputClash(shown, f"{what} {os.fspath(name)}, which this run reads; give an output outside it")


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _inside(path: str | os.PathLike, folders: list[os.stat_result]) -> bool:
    """Whether ``path`` (existing or not) lies in one of ``folders``, or is one,
    by the device and inode of each existing folder above it (links resolved)."""
    real = Path(os.path.realpath(path))
    for above in (real, *real.parents):
        try:
            st = os.stat(above)
        except OSError:
            continue
        if any(_same(st, f) for f in folders):
            return True
    return False


def remove_stale_temporaries(final: str | os.PathLike, *, every: bool = False) -> list[Path]:
    """Remove what a killed writer of ``final`` left beside it and return it
    (``every=True``: ``final`` is a folder, and every temporary in it goes).

    Outputs are written as ``.NAME.tmp-PID`` (a sorted BAM's scratch files in
    a ``.NAME.sort.tmp-PID`` folder; an earlier version's BAM text as
    ``.NAME.sam.tmp-PID``; an index as a ``.NAME.tmp-PID`` folder) and
    renamed when complete; a SIGKILL or a power loss leaves them. A
    temporary is stale when its PID is this process's (a run before this
    one had the same PID) or no running process's; one of a running process
    (a concurrent run) is left alone.
    """
    final = Path(final)
    removed = []
    name = glob.escape(final.name)  # a name holding [ or * matches itself only
    patterns = (".*.tmp-*",) if every else (f".{name}.tmp-*", f".{name}.sort.tmp-*", f".{name}.sam.tmp-*")
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

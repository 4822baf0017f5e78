"""BAM and CRAM through htslib (pysam's samtools): :class:`HtslibWriter`.

SAM record text (what :mod:`gseek.output.sam_records` formats, the one source
of the records' bytes) is streamed, header first, into ``samtools sort`` (with
``sort``) or ``samtools view`` run by pysam in a child process (``python -P -c``:
pysam's samtools entry points hold global state and are not safe in threads),
through a pipe: no SAM file is written on the way, htslib parses the text and
compresses on ``threads`` threads, and this process goes on formatting the
next batch meanwhile. The sort's scratch files go to a folder beside the
output, ``.NAME.sort.tmp-PID``, and the sort writes the ``.bai`` / ``.crai``
as it writes the output (``--write-index``); the folder is removed whatever
happens. A sorted BAM against a reference of :data:`SORT_PARTS_MIN_LENGTH` or
more is sorted in :data:`SORT_PARTS` ranges of the reference at once (and one
part for the records without a reference): each line goes to the
``samtools sort`` of its range (:mod:`gseek.output.sam_route`), so the text is
parsed and sorted by several children side by side, then ``samtools cat``
lays the parts end to end (the one sort's records in its order: the same
BAM once decompressed, other BGZF block bounds) and ``samtools index`` writes
the index. The output itself is written through
:class:`~gseek.seqio.atomic.open_output`: a temporary name renamed when
complete, a special file (a FIFO) in place. Errors name the output, never a
temporary name.

>>> import os, tempfile, pysam
>>> d = tempfile.mkdtemp()
>>> header = pysam.AlignmentHeader.from_dict({"HD": {"VN": "1.6", "SO": "unsorted"}, "SQ": [{"SN": "c", "LN": 50}]})
>>> with HtslibWriter(os.path.join(d, "x.bam"), header, "bam", sort=True) as bam:
...     _ = bam.write(b"b\\t0\\tc\\t20\\t60\\t4M\\t*\\t0\\t0\\tACGT\\tIIII\\na\\t0\\tc\\t3\\t60\\t4M\\t*\\t0\\t0\\tACGT\\tIIII\\n")
>>> sorted(os.listdir(d))
['x.bam', 'x.bam.bai']
>>> [r.query_name for r in pysam.AlignmentFile(os.path.join(d, "x.bam")).fetch("c", 10, 30)]
['b']
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numba
import numpy as np
import pysam

from gseek.backend import numba_guard
from gseek.errors import GseekError, signals_held
from gseek.seqio.atomic import INDEX_SUFFIXES, descriptor_of, is_special, named_error, open_output, temporary_name

from .sam_route import Parts, route_lines

__all__ = ["BAM_LEVEL", "INDEX_SUFFIX", "SCRATCH_SUFFIX", "SORT_PARTS", "SORT_PARTS_MIN_LENGTH", "HtslibWriter",
           "abort_open_writers", "header_bytes"]

#: The index samtools writes beside a sorted output, by format (the first of :data:`INDEX_SUFFIXES`).
INDEX_SUFFIX = {fmt: suffixes[0] for fmt, suffixes in INDEX_SUFFIXES.items()}
#: Indexes a former output of the name may have beside it (removed when an unsorted one replaces it).
_OLD_INDEXES = INDEX_SUFFIXES
#: zlib level of a BAM or CRAM written here unless told (samtools' ``-l``); None: samtools' own default
#: (zlib's 6). Level 1 made 10M reads' sorted BAM 7% faster and 33% larger on the 2-GPU host: not
#: worth a surprise to samtools users (``docs/sam.md``, "Compression").
BAM_LEVEL: int | None = None
#: samtools sort's memory per thread before it spills to scratch files (its ``-m`` default, 768 MiB): the
#: sorts of a BAM sorted in parts share what one sort on every thread would have.
SORT_MEMORY = 768 << 20
#: The pipe's buffer (``F_SETPIPE_SZ``; Linux lets a user have 1 MiB without privileges).
PIPE_BYTES = 1 << 20
#: ``samtools view``'s output option by format (unsorted outputs).
_MODE = {"bam": "-b", "cram": "-C"}
#: Ranges of the reference a sorted BAM is sorted in at once (each by its own ``samtools sort``), and the
#: reference length from which it is (a smaller one: one sort; its children's start would cost more than
#: they save). Fixed, not from the thread count: the output's bytes are the same for any ``threads``.
SORT_PARTS = 4
SORT_PARTS_MIN_LENGTH = 1_000_000
#: The child process: ``pysam.<command>(*args)`` for each ``[command, *args]`` of the JSON list
#: ``sys.argv[1]`` in turn (stdin: the SAM text), its error on one line: the last line samtools wrote
#: (pysam's error holds it after ``stderr=``, inside its own repr).
_CHILD = ("import json, sys, pysam\n"
          "try:\n"
          "    for command, *args in json.loads(sys.argv[1]):\n"
          "        getattr(pysam, command)(*args, catch_stdout=False)\n"
          "except pysam.utils.SamtoolsError as exc:\n"
          "    text = str(getattr(exc, 'value', exc)).split('stderr=', 1)[-1]\n"
          "    lines = [x for x in text.splitlines() if x.strip()]\n"
          "    sys.stderr.write(' '.join((lines[-1] if lines else text).split()) + '\\n')\n"
          "    sys.exit(1)\n")
#: The scratch folder of a sort is ``.NAME<SCRATCH_SUFFIX>.tmp-PID`` beside the output.
SCRATCH_SUFFIX = ".sort"


class HtslibWriter:
    """Write SAM record text to ``path`` as BAM or CRAM (``fmt``), through htslib.

    Arguments:
        path: the output (a regular file, written under a temporary name and
            renamed when complete; a special file such as a FIFO, in place).
        header: the ``pysam.AlignmentHeader`` written first.
        fmt: ``"bam"`` or ``"cram"``.
        sort: coordinate-sort the records (``samtools sort``) and write the
            index beside the output (``NAME.bai`` / ``NAME.crai``).
        reference: the FASTA a CRAM is encoded against (required for CRAM).
        threads: htslib threads compressing, sorting and indexing (None: all cores).
        level: zlib's compression level, 0-9 (None: :data:`BAM_LEVEL`, samtools' default).
        parts: ranges of the reference a sorted BAM is sorted in at once (None:
            :data:`SORT_PARTS` against a reference of :data:`SORT_PARTS_MIN_LENGTH` or more, else 1).

    Records come through :meth:`write` (whole lines, each ending in a newline).
    Use as a context manager: an exception removes every temporary and
    leaves nothing under the final name. When an unsorted output replaces a
    file of that name, an index the former one had beside it is removed (it
    would describe another file).
    """

    def __init__(self, path: str | os.PathLike, header: pysam.AlignmentHeader, fmt: str, *, sort: bool = False,
                 reference: str | os.PathLike | None = None, threads: int | None = None,
                 level: int | None = None, parts: int | None = None) -> None:
        if fmt not in _MODE:
            raise ValueError(f"fmt must be 'bam' or 'cram', not {fmt!r}")
        if fmt == "cram" and reference is None:
            raise GseekError(f"{path}: CRAM output needs --reference FASTA (the sequence it is encoded against)")
        self.path = Path(path)
        self.format = fmt
        self.sort = bool(sort)
        self.reference = None if reference is None else os.fspath(reference)
        self.threads = max(1, int(threads or os.cpu_count() or 1))
        self.level = BAM_LEVEL if level is None else int(level)
        if self.level is not None and not 0 <= self.level <= 9:
            raise ValueError(f"level must be 0 to 9, not {level}")
        if parts is None:
            parts = SORT_PARTS if self.sort and fmt == "bam" and sum(header.lengths) >= SORT_PARTS_MIN_LENGTH else 1
        if int(parts) > 1 and not (self.sort and fmt == "bam"):
            raise ValueError("parts: a sorted BAM's only")
        #: How the lines are shared out among the sorts (None: one sort, or none).
        self.parts = Parts(header.references, header.lengths, int(parts)) if int(parts) > 1 else None
        self.header = header
        self._scratch: Path | None = None
        self._children: list[subprocess.Popen] = []
        self._errors: list[Any] = []
        self._closed = False
        self._target = open_output(self.path, "path")  # (a name: nothing is made yet)
        self._dest = Path(self._target.__enter__())
        _OPEN.add(self)  # before the files and the children: abort_open_writers() undoes what a signal cut short
        try:
            if self.sort:
                if is_special(self.path):
                    raise GseekError(f"{self.path}: a sorted output must be a file (sorting needs all of it, and "
                                     "its index lies beside it)")
                self._scratch = temporary_name(self.path.with_name(self.path.name + SCRATCH_SUFFIX))
                try:
                    self._scratch.mkdir()
                except OSError as exc:
                    raise named_error(exc, self.path) from exc
            fd = descriptor_of(self._dest)
            for command in self._commands():
                _trace("bam child start")
                self._errors.append(tempfile.TemporaryFile())
                with signals_held():  # a signal meanwhile is raised once the child is known (then killed)
                    self._children.append(_start([sys.executable, "-P", "-c", _CHILD, json.dumps([command])],
                                                 stdin=subprocess.PIPE, stderr=self._errors[-1],
                                                 pass_fds=() if fd is None else (fd,)))
                stdin = self._children[-1].stdin
                try:  # fewer, larger hand-overs than the default 64 KiB pipe (Linux; elsewhere the default)
                    fcntl.fcntl(stdin.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
                except OSError:
                    pass
                os.set_blocking(stdin.fileno(), False)  # written as each child takes it (_put)
            self._put([header_bytes(str(header))] * len(self._children))
        except BaseException:
            self._close(*sys.exc_info())
            raise

    def _commands(self) -> list[list[str]]:
        """The samtools command of each child: sort (into the output, scratch in the folder), or view; or one
        sort into the scratch folder per part."""
        out = os.fspath(self._dest)
        if self.parts is not None:
            each = max(1, self.threads // self.parts.n)
            memory = max(1, self.threads * SORT_MEMORY // (self.parts.count * each) >> 20)  # MiB a thread
            level = [] if self.level is None else ["-l", str(self.level)]
            return [["sort", "-@", str(each - 1), "-m", f"{memory}M", *level, "-T", os.fspath(self._scratch / f"sort{k}"),
                     "--no-PG", "-O", "bam", "-o", os.fspath(self._part(k)), "-"] for k in range(self.parts.count)]
        more = str(self.threads - 1)  # samtools' -@: threads besides the calling one
        # (view's -l is a library filter: its level goes as an output format option)
        level = [] if self.level is None else ["-l", str(self.level)] if self.sort else \
            ["--output-fmt-option", f"level={self.level}"]
        if self.sort:  # the index written as the output is (no second pass over it)
            args = ["sort", "-@", more, *level, "-T", os.fspath(self._scratch / "sort"), "--no-PG", "-O", self.format,
                    "--write-index", "-o", f"{out}##idx##{self._index()}"]
        else:
            args = ["view", _MODE[self.format], "-@", more, *level, "--no-PG", "-o", out]
        if self.format == "cram":
            args += ["--reference", self.reference]
        return [args + ["-"]]

    def _part(self, k: int) -> Path:
        return self._scratch / f"part{k}.bam"

    def _index(self) -> str:
        """Where the index is written (in the scratch folder; renamed beside the output at the end)."""
        return os.fspath(self._scratch / ("index" + INDEX_SUFFIX[self.format]))

    def __enter__(self) -> HtslibWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._close(exc_type, exc, tb)

    def write(self, text: bytes | bytearray | memoryview | str) -> None:
        """Write SAM record lines (each ending in a newline)."""
        data = text.encode("latin-1") if isinstance(text, str) else memoryview(text).cast("B")
        if len(data) and data[-1] != 10:
            raise ValueError("SAM text must end in a newline")
        if self.parts is None:
            self._put([data])
            return
        with numba_guard(True):  # a parallel pass, beside the formatter's on other threads
            numba.set_num_threads(min(self.threads, numba.config.NUMBA_NUM_THREADS))  # per calling thread
            routed, starts = route_lines(np.frombuffer(data, dtype=np.uint8), self.parts, self.threads)
        view = memoryview(routed)
        self._put([view[starts[k]:starts[k + 1]] for k in range(self.parts.count)])

    def _put(self, pieces: list[Any]) -> None:
        """Each child's piece into its pipe, whichever can take some first (the children parse side by side)."""
        children, pending = list(self._children), {}
        poller = select.poll()
        for k, piece in enumerate(pieces):
            if len(piece):
                fd = children[k].stdin.fileno()
                pending[fd] = (k, memoryview(piece).cast("B"))
                poller.register(fd, select.POLLOUT)
        while pending:
            for fd, _ in poller.poll():
                k, piece = pending[fd]
                try:
                    done = os.write(fd, piece[:PIPE_BYTES])
                except BlockingIOError:
                    continue
                except BrokenPipeError:  # the child stopped: its own error says why
                    children[k].wait()
                    raise self._failed(self._child_error(k)) from None
                except OSError as exc:
                    raise named_error(exc, self.path) from exc
                if done == len(piece):
                    poller.unregister(fd)
                    del pending[fd]
                else:
                    pending[fd] = (k, piece[done:])

    def _child_error(self, k: int) -> str:
        """The last line child ``k`` wrote on stderr (its error), or its exit status."""
        errors = self._errors[k]
        errors.seek(0)
        lines = [x for x in errors.read().decode("utf-8", "replace").splitlines() if x.strip()]
        return lines[-1] if lines else f"samtools exited with status {self._children[k].returncode}"

    # ------------------------------------------------------------------ closing

    def _close(self, exc_type, exc, tb) -> None:
        if self._closed:
            return
        if exc_type is not None:  # a failed output: nothing under its name
            self._abort()
            return
        self._closed = True
        try:
            if self._children:  # kept until reaped: abort_open_writers() kills those a signal left
                self._finish()
                self._children = []
            self._target.__exit__(None, None, None)  # renamed into place
            if self._scratch is not None:
                final = self.path.with_name(self.path.name + INDEX_SUFFIX[self.format])
                try:
                    os.replace(self._index(), final)
                except OSError as err:
                    raise named_error(err, final) from err
            elif not is_special(self.path):
                for suffix in _OLD_INDEXES[self.format]:  # an index of a former file of this name
                    self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
        except BaseException:
            self._abort()
            raise
        self._release()

    def _finish(self) -> None:
        """End of the text: each child writes its last blocks and the end-of-file block (the parts: then
        ``samtools cat`` lays them end to end into the output and ``samtools index`` indexes it); an
        error, if any, as one naming the output."""
        try:
            _trace("bam text end")
            for child in self._children:
                try:
                    child.stdin.close()
                except OSError:  # BrokenPipeError: the child stopped, its status says why
                    pass
            statuses = [child.wait() for child in self._children]
        except BaseException:  # a signal while the children write the end: they stop (else they would
            for child in self._children:  # write the output's temporary name after this process cleaned up)
                _kill(child)
            raise
        for k, status in enumerate(statuses):
            if status != 0:
                raise self._failed(self._child_error(k))
        _trace("bam child done")
        if self.parts is None:
            return
        out = os.fspath(self._dest)
        steps = [["cat", "--no-PG", "-o", out, *(os.fspath(self._part(k)) for k in range(self.parts.count))],
                 ["index", "-@", str(self.threads - 1), "-o", self._index(), out]]
        self._errors.append(tempfile.TemporaryFile())
        with signals_held():
            self._children.append(_start([sys.executable, "-P", "-c", _CHILD, json.dumps(steps)],
                                         stdin=subprocess.DEVNULL, stderr=self._errors[-1]))
        try:
            status = self._children[-1].wait()
        except BaseException:
            _kill(self._children[-1])
            raise
        if status != 0:
            raise self._failed(self._child_error(len(self._children) - 1))
        _trace("bam parts joined")

    # ------------------------------------------------------------------ errors naming the output

    def _abort(self) -> None:
        """Undo what is left, whatever happened before (a failed output, a close cut short by a second
        signal, or none at all): the children killed, the temporary output removed, then
        :meth:`_release`. Safe to repeat."""
        children, self._closed = self._children, True
        for child in children:
            if child.returncode is None:
                _kill(child)
        self._children = []
        try:
            self._target.__exit__(GseekError, GseekError(f"{self.path}: aborted"), None)  # the temporary removed
        except OSError:
            pass
        self._release()

    def _release(self) -> None:
        """What every end removes: the error files, the scratch folder, the entry in the open writers."""
        for errors in self._errors:
            errors.close()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
        _OPEN.discard(self)

    def _failed(self, why: str) -> GseekError:
        return GseekError(f"{self.path}: {self.format.upper()} conversion failed: {self._shown(why)}")

    def _shown(self, text: str) -> str:
        """``text`` on one line, the output's name in place of any temporary one."""
        text = " ".join(str(text).split())
        path = os.fspath(self.path)
        names = [(self._dest, path)]
        if self._scratch is not None:  # the index's scratch name, then anything else in the folder
            names += [(self._index(), path + INDEX_SUFFIX[self.format]), (self._scratch, path)]
        if self.parts is not None:  # a part's sort names its part
            names[:0] = [(self._part(k), path) for k in range(self.parts.count)]
        elif self.sort:  # the sort's output argument: the output and its index's scratch name
            command = self._commands()[0]
            names.insert(0, (command[command.index("-o") + 1], path))
        for scratch, shown in names:
            text = text.replace(os.fspath(scratch), shown)
        return text


def header_bytes(text: str) -> bytes:
    """A SAM header's text as bytes: names latin-1 (byte for byte as read, as in the records), the
    ``@PG`` lines UTF-8 (the command line may hold any character)."""
    return b"".join(line.encode("utf-8") if line.startswith("@PG") else line.encode("latin-1")
                    for line in text.splitlines(keepends=True))


#: The writers open (made, not yet closed) in this process.
_OPEN: set[HtslibWriter] = set()


def abort_open_writers() -> None:
    """Abort every writer still open: its child killed, its temporaries removed.

    For a process ending on a signal: the exception can land between a
    writer's making and the ``with`` (or the list of open outputs) that
    would have closed it, or cut its close short. Nothing is left running or
    written after it. The command calls it as it exits (``cli.exit_now``);
    a program importing gseek gets it at the interpreter's exit (``atexit``).
    """
    for writer in list(_OPEN):
        try:
            writer._abort()
        except Exception:  # noqa: BLE001 - the others are aborted all the same
            pass


atexit.register(abort_open_writers)


def _kill(child: subprocess.Popen) -> None:
    """Stop ``child`` (SIGKILL) and reap it."""
    try:
        child.kill()
        child.wait()
    except OSError:
        pass


def _start(args: list[str], **kwargs: Any) -> subprocess.Popen:
    """``Popen(args)``; if it is interrupted after the fork (Ctrl-C, SIGTERM while it waits for the
    ``exec``), the child is killed and reaped: else it would run on, and write the output's
    temporary name, after this process cleaned up."""
    made: list[subprocess.Popen] = []

    class Child(subprocess.Popen):
        def __init__(self, *a: Any, **k: Any) -> None:
            made.append(self)  # known before it starts, so its pid is at hand if Popen is interrupted
            super().__init__(*a, **k)

    try:
        return Child(args, **kwargs)
    except BaseException:
        pid = getattr(made[0], "pid", None) if made else None
        if pid:
            try:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            except OSError:
                pass
        raise


def _trace(what: str, size: int = 0) -> None:
    """A time stamp on stderr when ``GSEEK_TRACE_BAM`` is set (where a BAM's time goes)."""
    if _TRACE:
        print(f"[gseek trace] {time.time():.3f} {what} {size}", file=sys.stderr)


_TRACE = bool(os.environ.get("GSEEK_TRACE_BAM"))

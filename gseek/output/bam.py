"""BAM and CRAM through htslib (pysam's samtools): :class:`HtslibWriter`.

SAM record text (what :mod:`gseek.output.sam_records` formats, the one source
of the records' bytes) goes, header first, into ``samtools view`` or
``samtools sort`` run by pysam in a child process (``python -P -c``: pysam's
samtools entry points hold global state and are not safe in threads), through
a pipe: no SAM file is written on the way; htslib parses the text and
compresses on ``threads`` threads.

Unsorted: the text streams into ``samtools view`` while this process formats
the next batch. Sorted: the lines are held in memory with their coordinate keys
(:class:`SortedText`: samtools sort's order, its key and its stability) up to
:data:`SORT_MEMORY_PER_THREAD` a thread; after the last record they go, in that
order, into ``samtools view --write-index`` (one sort of 64-bit keys here
instead of samtools sort's single-threaded tail). Past the limit, or on a line
the key parser does not take, everything goes to ``samtools sort`` instead
(scratch files in a folder beside the output, ``.NAME.sort.tmp-PID``, removed
whatever happens). Both routes write the same bytes: the same header
(``SO:coordinate``), the same records in the same order, the same BGZF blocks
and index (``tests/test_sam.py``). The output itself is written through
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

import fcntl
import itertools
import os
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

from gseek.errors import GseekError
from gseek.seqio.atomic import descriptor_of, is_special, named_error, open_output, temporary_name

__all__ = ["BAM_LEVEL", "INDEX_SUFFIX", "SCRATCH_SUFFIX", "SORT_MEMORY_PER_THREAD", "HtslibWriter", "SortedText"]

#: The index samtools writes beside a sorted output, by format.
INDEX_SUFFIX = {"bam": ".bai", "cram": ".crai"}
#: Indexes a former output of the name may have beside it (removed when an unsorted one replaces it).
_OLD_INDEXES = {"bam": (".bai", ".csi"), "cram": (".crai",)}
#: zlib level of a BAM or CRAM written here unless told (samtools' ``-l``); None: samtools' own default
#: (zlib's 6). Level 1 made 10M reads' sorted BAM 7% faster and 33% larger on the 2-GPU host: not
#: worth a surprise to samtools users (``docs/sam.md``, "Compression").
BAM_LEVEL: int | None = None
#: The pipe's buffer (``F_SETPIPE_SZ``; Linux lets a user have 1 MiB without privileges).
PIPE_BYTES = 1 << 20
#: ``samtools view``'s output option by format (unsorted outputs).
_MODE = {"bam": "-b", "cram": "-C"}
#: The child process: ``pysam.<command>(*args)`` (stdin: the SAM text), its error on one line.
_CHILD = ("import sys, pysam\n"
          "try:\n"
          "    getattr(pysam, sys.argv[1])(*sys.argv[2:], catch_stdout=False)\n"
          "except pysam.utils.SamtoolsError as exc:\n"
          "    sys.stderr.write(' '.join(str(exc).split()) + '\\n')\n"
          "    sys.exit(1)\n")
#: SAM text a sorted output holds in memory, a thread, before it goes to ``samtools sort`` instead
#: (samtools sort's own ``-m`` default: 768 MiB a thread).
SORT_MEMORY_PER_THREAD = 768 << 20
#: The sorted text goes to ``samtools view`` in slices of about this many bytes.
_SLICE_BYTES = 16 << 20
#: The scratch folder of a sort is ``.NAME<SCRATCH_SUFFIX>.tmp-PID`` beside the output.
SCRATCH_SUFFIX = ".sort"


class HtslibWriter:
    """Write SAM record text to ``path`` as BAM or CRAM (``fmt``), through htslib.

    Arguments:
        path: the output (a regular file, written under a temporary name and
            renamed when complete; a special file such as a FIFO, in place).
        header: the ``pysam.AlignmentHeader`` written first.
        fmt: ``"bam"`` or ``"cram"``.
        sort: coordinate-sort the records (samtools sort's order) and write the
            index beside the output (``NAME.bai`` / ``NAME.crai``).
        reference: the FASTA a CRAM is encoded against (required for CRAM).
        threads: htslib threads compressing, sorting and indexing (None: all cores).
        level: zlib's compression level, 0-9 (None: :data:`BAM_LEVEL`, samtools' default).
        sort_memory: bytes of SAM text a sorted output holds in memory, a thread
            (samtools sort's ``-m``), before it goes to ``samtools sort`` instead
            (None: :data:`SORT_MEMORY_PER_THREAD`; 0: always samtools sort). The
            output's bytes do not depend on it.

    Records come through :meth:`write` (whole lines, each ending in a newline).
    Use as a context manager: an exception removes every temporary and
    leaves nothing under the final name. When an unsorted output replaces a
    file of that name, an index the former one had beside it is removed (it
    would describe another file).
    """

    def __init__(self, path: str | os.PathLike, header: pysam.AlignmentHeader, fmt: str, *, sort: bool = False,
                 reference: str | os.PathLike | None = None, threads: int | None = None,
                 level: int | None = None, sort_memory: int | None = None) -> None:
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
        self.sort_memory = SORT_MEMORY_PER_THREAD if sort_memory is None else int(sort_memory)
        if self.sort_memory < 0:
            raise ValueError(f"sort_memory must be 0 or more bytes, not {sort_memory}")
        self.header = header
        self._scratch: Path | None = None
        self._child: subprocess.Popen | None = None
        #: The sorted output's lines while they are held in memory (None: they stream into the child).
        self._held: SortedText | None = None
        self._errors = tempfile.TemporaryFile()
        self._target = open_output(self.path, "path")
        self._dest = Path(self._target.__enter__())
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
                if self.sort_memory > 0:
                    self._held = SortedText.for_header(header, self.sort_memory * self.threads)
            if self._held is None:
                self._start_child("sort" if self.sort else "view", header)
        except BaseException:
            self._close(*sys.exc_info())
            raise

    def _start_child(self, route: str, header: pysam.AlignmentHeader) -> None:
        """The samtools child of ``route`` (:meth:`_command`), its header written."""
        fd = descriptor_of(self._dest)
        _trace(f"bam child start {route}")
        self._child = _start([sys.executable, "-P", "-c", _CHILD, *self._command(route)], stdin=subprocess.PIPE,
                             stderr=self._errors, pass_fds=() if fd is None else (fd,))
        try:  # fewer, larger hand-overs than the default 64 KiB pipe (Linux; elsewhere the default)
            fcntl.fcntl(self._child.stdin.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
        except OSError:
            pass
        self._put(header_bytes(header))

    def _command(self, route: str) -> list[str]:
        """The samtools command the child runs: ``sort`` (into the output, scratch in the folder,
        the index beside), ``view`` (unsorted) or ``sorted`` (``view`` of lines in order, the index beside)."""
        more = str(self.threads - 1)  # samtools' -@: threads besides the calling one
        out = os.fspath(self._dest)
        if self.sort:  # the index written as the output is (no second pass over it)
            out += "##idx##" + os.fspath(self._scratch / ("index" + INDEX_SUFFIX[self.format]))
        # (view's -l is a library filter: its level goes as an output format option)
        level = [] if self.level is None else ["-l", str(self.level)] if route == "sort" else \
            ["--output-fmt-option", f"level={self.level}"]
        if route == "sort":
            args = ["sort", "-@", more, *level, "-T", os.fspath(self._scratch / "sort"), "--no-PG", "-O", self.format,
                    "--write-index", "-o", out]
        else:
            args = ["view", _MODE[self.format], "-@", more, *level, "--no-PG",
                    *(["--write-index"] if route == "sorted" else []), "-o", out]
        if self.format == "cram":
            args += ["--reference", self.reference]
        return args + ["-"]

    def __enter__(self) -> HtslibWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._close(exc_type, exc, tb)

    def write(self, text: bytes | bytearray | memoryview | str) -> None:
        """Write SAM record lines (each ending in a newline)."""
        data = text.encode("latin-1") if isinstance(text, str) else memoryview(text).cast("B")
        if len(data) and data[-1] != 10:
            raise ValueError("SAM text must end in a newline")
        if self._held is not None:
            if self._held.add(data):
                return
            self._spill()
        self._put(data)

    def _spill(self) -> None:
        """Past the memory limit (or a line the key parser does not take): the held lines, as
        they came, and every later one go to ``samtools sort``."""
        held, self._held = self._held, None
        _trace("bam spill", held.size)
        self._start_child("sort", self.header)
        self._put(held.text())

    def _put(self, data) -> None:
        try:
            self._child.stdin.write(data)
        except BrokenPipeError:  # the child stopped: its own error says why
            self._child.wait()
            raise self._failed(self._child_error(self._child)) from None
        except OSError as exc:
            raise named_error(exc, self.path) from exc

    def _child_error(self, child: subprocess.Popen) -> str:
        """The last line the child wrote on stderr (its error), or its exit status."""
        self._errors.seek(0)
        lines = [x for x in self._errors.read().decode("utf-8", "replace").splitlines() if x.strip()]
        return lines[-1] if lines else f"samtools exited with status {child.returncode}"

    # ------------------------------------------------------------------ closing

    def _close(self, exc_type, exc, tb) -> None:
        complete = exc_type is None
        index_tmp = None if self._scratch is None else self._scratch / ("index" + INDEX_SUFFIX[self.format])
        try:
            held, self._held = self._held, None
            if held is not None and complete:
                try:
                    self._write_sorted(held)
                except BaseException:
                    complete = False
                    raise
            if self._child is not None:
                child, self._child = self._child, None
                try:
                    self._finish(child, complete)
                except BaseException:
                    complete = False
                    raise
        finally:
            try:
                if complete:
                    self._target.__exit__(None, None, None)  # renamed into place
                else:
                    self._target.__exit__(exc_type or GseekError, exc, tb)  # removed
                if complete and index_tmp is not None:
                    final = self.path.with_name(self.path.name + INDEX_SUFFIX[self.format])
                    try:
                        os.replace(index_tmp, final)
                    except OSError as err:
                        raise named_error(err, final) from err
                elif complete and not is_special(self.path):
                    for suffix in _OLD_INDEXES[self.format]:  # an index of a former file of this name
                        self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
            finally:
                self._errors.close()
                if self._scratch is not None:
                    shutil.rmtree(self._scratch, ignore_errors=True)

    def _write_sorted(self, held: SortedText) -> None:
        """After the last record: the held lines in samtools sort's order into ``samtools view``."""
        _trace("bam sort start", held.size)
        slices = held.sorted_slices()
        _trace("bam sorted")
        self._start_child("sorted", coordinate_sorted(self.header))
        for data in slices:
            self._put(data)

    def _finish(self, child: subprocess.Popen, complete: bool) -> None:
        """End of the text: the child writes the last blocks and the end-of-file block (a failed
        output: it is stopped); its error, if any, as one naming the output."""
        _trace("bam text end")
        if not complete:
            child.kill()
        try:
            child.stdin.close()
        except OSError:  # BrokenPipeError: the child stopped, its status says why
            pass
        if child.wait() != 0 and complete:
            raise self._failed(self._child_error(child))
        _trace("bam child done")

    # ------------------------------------------------------------------ errors naming the output

    def _failed(self, why: str) -> GseekError:
        return GseekError(f"{self.path}: {self.format.upper()} conversion failed: {self._shown(why)}")

    def _shown(self, text: str) -> str:
        """``text`` on one line, the output's name in place of any temporary one."""
        text = " ".join(str(text).split())
        names = [self._dest] + ([] if self._scratch is None else [self._scratch])
        for scratch in names:
            text = text.replace(os.fspath(scratch), os.fspath(self.path))
        return text


def header_bytes(header: pysam.AlignmentHeader | str) -> bytes:
    """The header's text as bytes: names latin-1 (byte for byte as read, as in the records),
    the ``@PG`` lines UTF-8 (the command line may hold any character)."""
    return b"".join(line.encode("utf-8") if line.startswith("@PG") else line.encode("latin-1")
                    for line in str(header).splitlines(keepends=True))


def coordinate_sorted(header: pysam.AlignmentHeader) -> pysam.AlignmentHeader:
    """``header`` with ``@HD SO:coordinate``, as samtools sort writes it."""
    fields = header.to_dict()
    fields["HD"] = {**fields.get("HD", {"VN": "1.6"}), "SO": "coordinate"}
    return pysam.AlignmentHeader.from_dict(fields)


# --------------------------------------------------------------------------- sorting in memory

class SortedText:
    """SAM record lines held in memory with samtools sort's coordinate key.

    The key of a line is (reference number, POS, reverse-strand bit) with
    unplaced records (RNAME ``*``) after every reference, and lines of equal
    keys keep their order: samtools sort's ``bam1_cmp_core`` and its stable
    radix sort and merge. ``names``: the header's reference names, in order.

    >>> held = SortedText(["b", "a"])
    >>> held.add(b"r1\\t0\\ta\\t5\\t*\\nr2\\t4\\t*\\t0\\t*\\nr3\\t16\\tb\\t9\\t*\\nr4\\t0\\tb\\t9\\t*\\n")
    True
    >>> b"".join(held.sorted_slices()).decode().split()[::5]
    ['r4', 'r3', 'r1', 'r2']
    """

    def __init__(self, names: list[str], capacity: int = 1 << 20) -> None:
        encoded = [str(n).encode("latin-1") for n in names]
        self.names = np.frombuffer(b"".join(encoded), np.uint8)
        self.name_offsets = np.cumsum([0] + [len(n) for n in encoded]).astype(np.int64)
        hashes = np.array([_fnv1a(self.names, self.name_offsets[t], self.name_offsets[t + 1])
                           for t in range(len(encoded))], np.uint64)
        order = np.argsort(hashes, kind="stable")
        self._hashes, self._tids = hashes[order], order.astype(np.int64)
        #: Names sharing a hash (then no line is taken: the caller sorts with samtools).
        self.unique = bool(len(np.unique(hashes)) == len(hashes))
        #: Bytes it can hold: one allocation made up front, whose pages the system
        #: gives as they are written (a smaller one if that much address space is refused).
        self.capacity = 0
        self._buffer = np.empty(0, np.uint8)
        while capacity > 0 and not self.capacity:
            try:
                self._buffer = np.empty(capacity, np.uint8)
                self.capacity = capacity
            except MemoryError:
                capacity = capacity // 2 if capacity > 1 << 20 else 0
        self.size = 0
        self._keys: list[np.ndarray] = []
        self._starts: list[np.ndarray] = []

    @classmethod
    def for_header(cls, header: pysam.AlignmentHeader, capacity: int) -> SortedText | None:
        """The held text of an output with ``header`` (None where its names cannot be keyed)."""
        names = list(header.references)
        held = cls(names, capacity) if len(names) < (1 << 29) else None  # (the key's 29 bits)
        return held if held is not None and held.unique and held.capacity else None

    def add(self, data) -> bool:
        """Hold whole lines ``data`` (bytes-like); False (nothing held) past the capacity, or
        if a line's first four fields are not a SAM record's or name a reference not in the header."""
        text = np.frombuffer(data, np.uint8)
        if not self.unique or self.size + text.size > self.capacity:
            return False
        if not text.size:
            return True
        starts = np.flatnonzero(text == 10)
        starts[1:] = starts[:-1] + 1
        starts[0] = 0
        keys = np.empty(starts.size, np.int64)
        if not _coordinate_keys(text, starts, keys, self.names, self.name_offsets, self._hashes, self._tids):
            return False
        self._buffer[self.size:self.size + text.size] = text
        self._keys.append(keys)
        self._starts.append(starts + self.size)
        self.size += text.size
        return True

    def text(self) -> memoryview:
        """The held lines as they came."""
        return memoryview(self._buffer[:self.size])

    def sorted_slices(self):
        """The held lines in key order, as consecutive byte slices (about 16 MiB each); the
        sort is done when this returns, the slices are made as they are taken."""
        keys = np.concatenate(self._keys) if self._keys else np.empty(0, np.int64)
        starts = np.concatenate(self._starts) if self._starts else np.empty(0, np.int64)
        order = np.argsort(keys, kind="stable")
        del keys
        ends = np.empty_like(starts)
        ends[:-1] = starts[1:]
        if ends.size:
            ends[-1] = self.size
        lengths = (ends - starts)[order]
        bounds = np.searchsorted(np.cumsum(lengths), np.arange(1, self.size // _SLICE_BYTES + 1) * _SLICE_BYTES)
        bounds = np.unique(np.concatenate([[0], bounds + 1, [order.size]]).clip(0, order.size))
        return self._slices(order, starts, ends, bounds)

    def _slices(self, order, starts, ends, bounds):
        for lo, hi in itertools.pairwise(bounds):
            part = order[lo:hi]
            out = np.empty(int((ends[part] - starts[part]).sum()), np.uint8)
            _gather_lines(self._buffer, starts, ends, part, out)
            yield memoryview(out)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _fnv1a(text, a, b):
    """FNV-1a, 64 bits, of ``text[a:b]``."""
    h = np.uint64(14695981039346656037)
    for i in range(a, b):
        h = (h ^ np.uint64(text[i])) * np.uint64(1099511628211)
    return h


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _field_number(text, p, end):
    """The decimal number at ``text[p:]`` up to a tab; returns (value, the tab's position), or
    (-1, -1) if it is not digits ending in a tab before ``end``."""
    v = np.int64(0)
    q = p
    while q < end and 48 <= text[q] <= 57 and q - p < 12:
        v = v * 10 + (text[q] - 48)
        q += 1
    if q == p or q >= end or text[q] != 9:
        return np.int64(-1), np.int64(-1)
    return v, np.int64(q)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _coordinate_keys(text, starts, keys, names, name_offsets, hashes, tids):
    """``keys[i]`` = samtools sort's key of the line at ``starts[i]``: reference number (the
    number of references for ``*``) × 2**34 + POS × 2 + FLAG's 0x10 bit. False if a line
    is not QNAME FLAG RNAME POS (tab-separated, numbers in range, RNAME in ``names``)."""
    n_ref = name_offsets.size - 1
    last = -1
    for i in range(starts.size):
        end = starts[i + 1] if i + 1 < starts.size else text.size
        p = starts[i]
        while p < end and text[p] != 9:  # QNAME
            p += 1
        flag, p = _field_number(text, p + 1, end)
        if flag < 0 or flag > 0xFFFF:
            return False
        a = p + 1
        b = a
        while b < end and text[b] != 9:
            b += 1
        if b >= end or b == a:
            return False
        if b - a == 1 and text[a] == 42:  # '*'
            tid = n_ref
        else:
            tid = -1
            if last >= 0 and name_offsets[last + 1] - name_offsets[last] == b - a:  # the line before's, often
                tid = last
                for k in range(b - a):
                    if names[name_offsets[last] + k] != text[a + k]:
                        tid = -1
                        break
            if tid < 0:
                h = _fnv1a(text, a, b)
                lo, hi = 0, hashes.size  # the first hash >= h
                while lo < hi:
                    mid = (lo + hi) // 2
                    if hashes[mid] < h:
                        lo = mid + 1
                    else:
                        hi = mid
                j = lo
                if j >= hashes.size or hashes[j] != h:
                    return False
                t = tids[j]
                if name_offsets[t + 1] - name_offsets[t] != b - a:
                    return False
                for k in range(b - a):
                    if names[name_offsets[t] + k] != text[a + k]:
                        return False
                tid = t
            last = tid
        pos, p = _field_number(text, b + 1, end)
        if pos < 0 or pos >= (1 << 33):
            return False
        keys[i] = tid * (np.int64(1) << 34) + pos * 2 + ((flag >> 4) & 1)
    return True


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _gather_lines(text, starts, ends, lines, out):
    """The lines ``lines`` of ``text`` (``starts``/``ends``), one after another, into ``out``."""
    p = 0
    for i in lines:
        for k in range(starts[i], ends[i]):  # (a loop: Numba compiles it far sooner than a slice copy)
            out[p] = text[k]
            p += 1


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

"""Fast FASTA/FASTQ input and output as struct-of-arrays batches.

Reading streams a file (plain or gzip, detected by its magic bytes) in bounded
chunks through a Numba parser; each chunk becomes a :class:`SequenceBatch` of
numpy arrays, so a 50 GB FASTQ never sits in memory and no per-record Python
object is built.

>>> import io, gzip, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "r.fq")
>>> _ = open(path, "w").write("@r1 first\\nACGTn\\n+\\nIIIII\\n@r2\\nGG\\n+\\n!!\\n")
>>> batch = read_fastx(path)
>>> len(batch), batch.name(0), batch.description(0), batch.sequence(0)
(2, 'r1', 'first', 'ACGTN')
>>> batch.lengths.tolist(), batch.quality(1)
([5, 2], '!!')
>>> batch.soft_mask.tolist()     # the lowercase 'n' at offset 4
[[4, 5]]
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Literal

import numpy as np
from isal import igzip_threaded

from . import _fastx
from .alphabet import decode_dna, dna_table, protein_table
from .errors import FastxError

__all__ = [
    "SequenceBatch",
    "FastxReader",
    "read_fastx",
    "iter_fastx",
    "write_fasta",
    "write_fastq",
    "open_output",
]

Alphabet = Literal["dna", "protein"]

#: Default bytes read per chunk; a batch holds the records of one chunk.
DEFAULT_CHUNK_BYTES = 16 << 20
#: The reader reads at least this many bytes at a time.
_READ_MIN = 1 << 16
#: Below this chunk_bytes, threads > 1 still parses in one thread: the Python
#: work per chunk (under the GIL) would cost more than the threads save.
PARALLEL_MIN_CHUNK_BYTES = 1 << 16

_ERROR_TEXT = {
    _fastx.E_RECORD_START: "expected '{head}' at the start of a record, found {a}",
    _fastx.E_SEQ_CHAR: "invalid {alphabet} character {a} in sequence (column {col})",
    _fastx.E_QUAL_LENGTH: "quality length {a} != sequence length {b}",
    _fastx.E_NO_PLUS: "truncated record: missing '+' line",
    _fastx.E_TRUNCATED: "truncated record: quality length {a} != sequence length {b}",
    _fastx.E_QUAL_CHAR: "invalid quality character {a} (column {col})",
    _fastx.E_EMPTY_NAME: "header line has no record name",
}

_TABLES = {"dna": dna_table(), "protein": protein_table()}


def _show_byte(b: int) -> str:
    if b == 0:
        return "NUL byte (binary data?)"
    if 32 < b < 127:
        return repr(chr(b))
    return f"byte 0x{b:02x}" + (" (binary data?)" if b < 32 or b >= 128 else "")


@dataclass(frozen=True, eq=False)
class SequenceBatch:
    """Records of one chunk of a FASTA/FASTQ file, as struct-of-arrays.

    Record ``i`` has residues ``codes[offsets[i]:offsets[i+1]]`` (DNA: 0..3 =
    ACGT, 4 = N/ambiguous; protein: uppercase ASCII), Phred+33 qualities at
    the same offsets (FASTQ only), name bytes ``names[name_offsets[i]:...]``
    and description bytes likewise. ``soft_mask`` holds half-open runs
    ``[start, end)`` of lowercase residues in ``codes`` coordinates.
    ``first_record`` is the index of record 0 in its file, ``lines`` the
    1-based line of each header, for error messages.
    """

    path: str
    format: Literal["fasta", "fastq"]
    alphabet: Alphabet
    codes: np.ndarray
    offsets: np.ndarray
    quals: np.ndarray | None
    names: np.ndarray
    name_offsets: np.ndarray
    descriptions: np.ndarray
    description_offsets: np.ndarray
    soft_mask: np.ndarray
    lines: np.ndarray
    first_record: int = 0
    _cache: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __repr__(self) -> str:
        return (
            f"SequenceBatch({self.path!r}, {self.format}, records={len(self)}, "
            f"residues={self.codes.size}, first_record={self.first_record})"
        )

    @property
    def lengths(self) -> np.ndarray:
        """Length of every record (int64)."""
        if "lengths" not in self._cache:
            self._cache["lengths"] = np.diff(self.offsets)
        return self._cache["lengths"]

    @property
    def total_length(self) -> int:
        return int(self.codes.size)

    def name(self, i: int) -> str:
        return self.names[self.name_offsets[i] : self.name_offsets[i + 1]].tobytes().decode("latin-1")

    def description(self, i: int) -> str:
        lo, hi = self.description_offsets[i], self.description_offsets[i + 1]
        return self.descriptions[lo:hi].tobytes().decode("latin-1")

    def name_list(self) -> list[str]:
        """All record names as Python strings (one decode, then split)."""
        text = self.names.tobytes().decode("latin-1")
        o = self.name_offsets
        return [text[o[i] : o[i + 1]] for i in range(len(self))]

    def codes_of(self, i: int) -> np.ndarray:
        return self.codes[self.offsets[i] : self.offsets[i + 1]]

    def sequence(self, i: int) -> str:
        """Record ``i`` as text (DNA: ``ACGTN``; lowercase is not restored)."""
        codes = self.codes_of(i)
        if self.alphabet == "dna":
            return decode_dna(codes)
        return codes.tobytes().decode("ascii")

    def quality(self, i: int) -> str | None:
        if self.quals is None:
            return None
        return self.quals[self.offsets[i] : self.offsets[i + 1]].tobytes().decode("ascii")

    def where(self, i: int) -> str:
        """``path:line`` of record ``i``'s header, for error messages."""
        return f"{self.path}:{int(self.lines[i])}"

    @classmethod
    def concat(cls, batches: list[SequenceBatch]) -> SequenceBatch:
        """Join consecutive batches of one file into one batch."""
        if not batches:
            raise ValueError("concat() needs at least one batch")
        if len(batches) == 1:
            return batches[0]
        first = batches[0]

        def join_offsets(arrays):
            parts, base = [np.zeros(1, dtype=np.int64)], 0
            for a in arrays:
                parts.append(a[1:] + base)
                base += int(a[-1])
            return np.concatenate(parts)

        masks, base = [], 0
        for b in batches:
            masks.append(b.soft_mask + base)
            base += b.codes.size
        return cls(
            path=first.path,
            format=first.format,
            alphabet=first.alphabet,
            codes=np.concatenate([b.codes for b in batches]),
            offsets=join_offsets([b.offsets for b in batches]),
            quals=None if first.quals is None else np.concatenate([b.quals for b in batches]),
            names=np.concatenate([b.names for b in batches]),
            name_offsets=join_offsets([b.name_offsets for b in batches]),
            descriptions=np.concatenate([b.descriptions for b in batches]),
            description_offsets=join_offsets([b.description_offsets for b in batches]),
            soft_mask=np.concatenate(masks).reshape(-1, 2),
            lines=np.concatenate([b.lines for b in batches]),
            first_record=first.first_record,
        )


def _open_binary(path: str) -> BinaryIO:
    """Open ``path`` for reading bytes; gzip (``1f 8b``) is decompressed by
    ISA-L on a background thread (python-isal), overlapping the parser."""
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return igzip_threaded.open(path, "rb", threads=1)  # type: ignore[return-value]
    return open(path, "rb")


def mask_runs(mask: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Half-open ``[start, end)`` runs of true/non-zero entries of ``mask``, as an
    ``(k, 2)`` int64 array, split at the record ``offsets`` so that a run never
    spans two records.

    >>> mask_runs(np.array([0, 1, 1, 1, 0, 1], dtype=np.uint8), np.array([0, 2, 6])).tolist()
    [[1, 2], [2, 4], [5, 6]]
    """
    on = mask.astype(bool)
    boundary = np.zeros(on.size + 1, dtype=bool)
    boundary[offsets] = True
    before = np.concatenate([[False], on[:-1]]) & ~boundary[:-1]
    after = np.concatenate([on[1:], [False]]) & ~boundary[1:]
    starts = np.flatnonzero(on & ~before)
    ends = np.flatnonzero(on & ~after) + 1
    return np.stack([starts, ends], axis=1).astype(np.int64)


class FastxReader:
    """Stream a FASTA or FASTQ file as :class:`SequenceBatch` chunks.

    Arguments:
        path: file name; gzip (and bgzip) is detected from the content.
        alphabet: ``"dna"`` (codes 0..4) or ``"protein"`` (uppercase ASCII).
        chunk_bytes: bytes of (uncompressed) input per batch; a record larger
            than this is read whole.
        max_records: at most this many records per batch.
        threads: parse with this many threads (``None`` or 1: in the calling
            thread; also when ``chunk_bytes`` is under 64 KiB, where threads
            do not pay). Batches, records and errors are exactly those of the
            one-thread reader; see docs/sequence-io.md for how.

    The format is taken from the first non-blank byte (``>`` FASTA, ``@``
    FASTQ). Bad input raises :class:`~gseek.errors.FastxError` naming the
    file, the line and the rule broken.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        alphabet: Alphabet = "dna",
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        max_records: int = 1 << 20,
        threads: int | None = None,
    ) -> None:
        if alphabet not in _TABLES:
            raise ValueError(f"unknown alphabet {alphabet!r} (expected 'dna' or 'protein')")
        if chunk_bytes < 1 or max_records < 1:
            raise ValueError("chunk_bytes and max_records must be positive")
        if threads is not None and (isinstance(threads, bool) or int(threads) != threads or threads < 1):
            raise ValueError(f"threads must be a positive integer or None, not {threads!r}")
        self.path = os.fspath(path)
        self.alphabet = alphabet
        self.chunk_bytes = int(chunk_bytes)
        self.max_records = int(max_records)
        self.threads = 1 if threads is None else int(threads)
        self.format: Literal["fasta", "fastq"] | None = None
        self.records_read = 0
        #: chunks parsed from a predicted start and used / thrown away (threads > 1)
        self.pieces_used = 0
        self.pieces_discarded = 0

    def __iter__(self) -> Iterator[SequenceBatch]:
        try:
            fh = _open_binary(self.path)
        except OSError as exc:
            raise FastxError(self.path, None, f"cannot open: {exc.strerror or exc}") from None
        with fh:
            yield from self._batches(fh)

    def _read(self, fh: BinaryIO, n: int) -> bytes:
        try:
            return fh.read(n)
        except (OSError, EOFError, ValueError, zlib.error) as exc:
            raise FastxError(self.path, None, f"cannot read: {exc}") from None

    def _batches(self, fh: BinaryIO) -> Iterator[SequenceBatch]:
        fh, first_line = self._skip_blank_lines(fh)
        if self.threads > 1 and self.chunk_bytes >= PARALLEL_MIN_CHUNK_BYTES:
            yield from _ParallelParse(self, fh, first_line).batches()
            return
        table = _TABLES[self.alphabet]
        data = b""
        eof = False
        line = first_line
        want = self.chunk_bytes
        while True:
            while not eof and len(data) < want:
                more = self._read(fh, max(want - len(data), _READ_MIN))
                if not more:
                    eof = True
                data += more
            if self.format is None:
                stripped = data.lstrip(b"\r\n")
                if not stripped:
                    return  # empty file: no records
                head = stripped[:1]
                if head == b">":
                    self.format = "fasta"
                elif head == b"@":
                    self.format = "fastq"
                else:
                    line_no = line + data[: len(data) - len(stripped)].count(b"\n")
                    raise FastxError(
                        self.path,
                        line_no,
                        f"not FASTA or FASTQ: record starts with {_show_byte(head[0])}, expected '>' or '@'",
                    )
            if not data:
                return
            batch, consumed, lines = self._parse(data, eof, table, line)
            if batch is not None:
                yield batch
                want = self.chunk_bytes
            elif eof:
                return
            else:
                want = 2 * max(want, len(data))  # one record larger than the chunk
            data = data[consumed:]
            line += lines

    def _skip_blank_lines(self, fh: BinaryIO) -> tuple[BinaryIO, int]:
        """Drop the blank lines before the first record (however many: the
        format is read from the first byte after them); the stream from that
        byte on, and its line number."""
        lines = 0
        while True:
            block = self._read(fh, _READ_MIN)
            head = block.lstrip(b"\r\n")
            lines += block[: len(block) - len(head)].count(b"\n")
            if head or not block:
                return _Prefixed(head, fh), 1 + lines

    def _parse(self, data: bytes, eof: bool, table: np.ndarray, line: int):
        return self._finish(self._parse_raw(np.frombuffer(data, dtype=np.uint8), eof, table), line)

    def _parse_raw(self, buf: np.ndarray, eof: bool, table: np.ndarray) -> tuple:
        """Run the parser over ``buf``; the outcome with line numbers relative to
        ``buf``. Reads, never changes, the reader (runs on worker threads)."""
        n = buf.size
        fastq = self.format == "fastq"
        cap = max(1, min(self.max_records, n // 2 + 1))
        out = _fastx.empty_outputs(n, cap, fastq)
        codes, quals, case_mask, seq_off, names, name_off, descs, desc_off, rec_line = out
        r, consumed, lines, nb, lower, err, err_line, a, b = _fastx.parse_chunk(
            buf, n, eof, fastq, table, cap, self.chunk_bytes, *out
        )
        if err or r == 0:
            return err, err_line, a, b, r, consumed, lines, None
        soft = mask_runs(case_mask[:nb], seq_off[: r + 1]) if lower else np.empty((0, 2), dtype=np.int64)
        arrays = (
            codes[:nb].copy(),
            seq_off[: r + 1].copy(),
            quals[:nb].copy() if fastq else None,
            names[: name_off[r]].copy(),
            name_off[: r + 1].copy(),
            descs[: desc_off[r]].copy(),
            desc_off[: r + 1].copy(),
            soft,
            rec_line[:r],
        )
        return err, err_line, a, b, r, consumed, lines, arrays

    def _finish(self, raw: tuple, line: int):
        """Raise the error of a :meth:`_parse_raw` outcome whose buffer starts at
        ``line``, or make its batch (the next ``first_record``)."""
        err, err_line, a, b, r, consumed, lines, arrays = raw
        if err:
            self._raise(err, line + err_line, a, b)
        if r == 0:
            return None, consumed, lines
        codes, offsets, quals, names, name_offsets, descs, desc_offsets, soft, rec_line = arrays
        batch = SequenceBatch(
            path=self.path,
            format=self.format,  # type: ignore[arg-type]
            alphabet=self.alphabet,
            codes=codes,
            offsets=offsets,
            quals=quals,
            names=names,
            name_offsets=name_offsets,
            descriptions=descs,
            description_offsets=desc_offsets,
            soft_mask=soft,
            lines=rec_line + line,
            first_record=self.records_read,
        )
        self.records_read += r
        return batch, consumed, lines

    def _raise(self, err: int, line: int, a: int, b: int) -> None:
        head = "@" if self.format == "fastq" else ">"
        text = _ERROR_TEXT[err].format(
            head=head,
            alphabet=self.alphabet.upper() if self.alphabet == "dna" else self.alphabet,
            a=_show_byte(a) if err in (_fastx.E_RECORD_START, _fastx.E_SEQ_CHAR, _fastx.E_QUAL_CHAR) else a,
            b=b,
            col=b + 1,
        )
        raise FastxError(self.path, line, text)


class _Prefixed:
    """A binary stream that returns ``head`` first, then the rest of ``fh``;
    every read is as full as ``fh``'s own (no short read at the seam)."""

    def __init__(self, head: bytes, fh: BinaryIO) -> None:
        self.head = memoryview(head)
        self.fh = fh

    def read(self, n: int = -1) -> bytes:
        if not self.head:
            return self.fh.read(n)
        if n is None or n < 0:
            out, self.head = bytes(self.head) + self.fh.read(), memoryview(b"")
            return out
        out, self.head = bytes(self.head[:n]), self.head[n:]
        return out + (self.fh.read(n - len(out)) if len(out) < n else b"")

    def readinto(self, buffer) -> int:
        view = memoryview(buffer).cast("B")
        k = min(len(view), len(self.head))
        view[:k] = self.head[:k]
        self.head = self.head[k:]
        if k < len(view):
            readinto = getattr(self.fh, "readinto", None)
            if readinto is not None:
                k += readinto(view[k:]) or 0
            else:
                more = self.fh.read(len(view) - k)
                view[k : k + len(more)] = more
                k += len(more)
        return k


class _ReadFailed(Exception):
    """The input stream failed; the message is the FastxError rule."""


class _ReadAhead:
    """The input stream, read ahead into reusable numpy buffers ("arenas").

    Bytes ``[base, pos)`` of the (uncompressed) input lie in ``arena``; chunks
    are read-only views of it, parsed on worker threads. An arena that was
    switched away from is kept while its bytes may be needed again (after a
    wrong prediction) or a worker may still read it, then reused: fresh memory
    costs page faults.
    """

    def __init__(self, fh: BinaryIO, capacity: int, keep: int) -> None:
        self.fh = fh
        self.capacity = capacity
        self.keep = keep  # spare arenas kept for reuse
        self.pos = 0
        self.at_eof = False
        self.error: str | None = None
        self.arena: np.ndarray | None = None
        self.base = 0
        self.users: list = []  # futures viewing the current arena
        self.older: list = []  # [arena, base, end, users] of previous arenas
        self.spare: list = []  # arenas free for reuse
        self._readinto = getattr(fh, "readinto", None)

    def ensure(self, start: int, target: int) -> None:
        """Read until the input is known up to ``target`` or its end, keeping
        ``[start, target)`` in the current arena. One call, one ``readinto``
        of ``target - pos`` bytes: when ``pos`` is where the one-thread reader
        stands, the very read it would make."""
        if target <= self.pos or self.at_eof:
            return
        if self.error is not None:
            raise _ReadFailed(self.error)
        if self.arena is None or start < self.base or target - self.base > self.arena.size:
            self._switch(start, target)
        assert self.arena is not None
        at = self.pos - self.base
        need = target - self.pos
        try:
            if self._readinto is not None:
                got = self._readinto(memoryview(self.arena)[at : at + need]) or 0
            else:  # pragma: no cover - every stream _open_binary returns has readinto
                more = self.fh.read(need)
                got = len(more)
                self.arena[at : at + got] = np.frombuffer(more, dtype=np.uint8)
        except (OSError, EOFError, ValueError, zlib.error) as exc:
            self.error = f"cannot read: {exc}"
            raise _ReadFailed(self.error) from None
        if not got:
            self.at_eof = True
        self.pos += got

    def view(self, start: int, end: int) -> np.ndarray:
        """Input bytes ``[start, end)`` (already read) as a read-only array."""
        if self.arena is None or start < self.base:
            self._switch(start, end)
        assert self.arena is not None
        v = self.arena[start - self.base : end - self.base]
        v.flags.writeable = False  # the type np.frombuffer(bytes) has: one compiled parser
        return v

    def _switch(self, start: int, target: int) -> None:
        size = max(self.capacity, target - start, self.pos - start)
        new = next((a for a in self.spare if a.size >= size), None)
        if new is None:
            new = np.empty(size, dtype=np.uint8)
        else:
            self.spare = [a for a in self.spare if a is not new]
        # copy [start, pos), each byte from the newest arena holding it
        hi = self.pos
        held = [(self.arena, self.base, self.pos)] if self.arena is not None else []
        held += [(a, b, e) for a, b, e, _ in reversed(self.older)]
        while hi > start:
            arena, b, e = next((a, b, e) for a, b, e in held if b < hi <= e)
            lo = max(start, b)
            new[lo - start : hi - start] = arena[lo - b : hi - b]
            hi = lo
        if self.arena is not None:
            self.older.append([self.arena, self.base, self.pos, self.users])
        self.arena, self.base, self.users = new, start, []

    def release(self, start: int) -> None:
        """Input before ``start`` is no longer needed: free what only it used."""
        self.users = [f for f in self.users if not f.done()]
        keep = []
        for entry in self.older:
            arena, _, end, users = entry
            needed = self.base > start and end > start
            if needed or not all(f.done() for f in users):
                keep.append(entry)
            elif len(self.spare) < self.keep:
                self.spare.append(arena)
        self.older = keep


class _Piece:
    """One chunk parsed by a worker: the one-thread reader's state before it
    (``pre`` = start, end of data read, eof, bytes wanted), what it read, and the
    predicted state after it (``guess``; None: unknown or end of input)."""

    __slots__ = ("pre", "end", "eof", "future", "error", "stop", "guess", "speculative")

    def __init__(self, pre: tuple, speculative: bool) -> None:
        self.pre = pre
        self.end = pre[1]
        self.eof = pre[2]
        self.future = None
        self.error: FastxError | None = None
        self.stop = False
        self.guess: tuple | None = None
        self.speculative = speculative


class _ParallelParse:
    """``FastxReader(threads=T)``: the one-thread reader's loop, run ahead.

    The one-thread reader is a state machine: state ``(start, end, eof,
    want)`` (input offset of its buffer, offset up to which it has read, end of
    input seen, bytes wanted) -> read until ``want`` bytes are buffered ->
    ``parse_chunk`` on the buffer -> a batch and the next state. The next start
    is known only after the parse, so here a *predicted* next state
    (``_fastx.tail_stop`` / ``_fastx.skim_chunk``) lets T chunks be parsed at
    once (and one more be read ahead). A chunk is used only when the state it was made from
    equals the true state after the previous chunk; then its buffer holds the
    same bytes and its parse is the very call the one-thread reader makes, so
    its batch or error is the same. Otherwise it and every later chunk are
    thrown away and the true state is read and parsed afresh: a wrong guess
    costs time, never a different result, and every step makes progress.
    """

    def __init__(self, reader: FastxReader, fh: BinaryIO, first_line: int = 1) -> None:
        self.rd = reader
        self.first_line = first_line
        self.table = _TABLES[reader.alphabet]
        # one chunk's read fits one arena: an arena per chunk, reused
        self.src = _ReadAhead(fh, max(reader.chunk_bytes, _READ_MIN) + _READ_MIN, reader.threads + 2)
        # chunks read and submitted at once: one per thread, and one more read
        # ahead so that no thread waits for the read of the next chunk
        self.depth = reader.threads + 1
        self.density: float | None = None  # records per input byte, the most seen

    def batches(self) -> Iterator[SequenceBatch]:
        rd = self.rd
        pool = ThreadPoolExecutor(max_workers=rd.threads, thread_name_prefix="gseek-fastx")
        window: deque[_Piece] = deque()
        state = (0, 0, False, rd.chunk_bytes)
        line = self.first_line
        guess: tuple | None = state
        try:
            while True:
                if not window or window[0].pre != state:
                    rd.pieces_discarded += sum(p.speculative for p in window)
                    self._drop(window)
                    guess = state
                while guess is not None and len(window) < self.depth:
                    piece = self._piece(guess, pool, speculative=guess != state or bool(window))
                    window.append(piece)
                    guess = piece.guess
                piece = window.popleft()
                rd.pieces_used += piece.speculative
                if piece.error is not None:
                    raise piece.error
                if piece.stop:
                    return
                start, _, _, want = state
                n = piece.end - start
                assert piece.future is not None
                batch, consumed, lines = rd._finish(piece.future.result(), line)
                if batch is not None:
                    self.density = max(self.density or 0.0, len(batch) / max(consumed, 1))
                    yield batch
                    want = rd.chunk_bytes
                elif piece.eof:
                    return
                else:
                    want = 2 * max(want, n)  # one record larger than the chunk
                start += min(consumed, n)
                line += lines
                state = (start, piece.end, piece.eof, want)
                self.src.release(start)
        finally:
            self._drop(window)
            pool.shutdown(wait=True, cancel_futures=True)

    @staticmethod
    def _drop(window: deque) -> None:
        for p in window:
            if p.future is not None:
                p.future.cancel()
        window.clear()

    def _piece(self, pre: tuple, pool: ThreadPoolExecutor, speculative: bool) -> _Piece:
        """Read and submit the chunk the one-thread reader parses from state ``pre``."""
        rd, src = self.rd, self.src
        piece = _Piece(pre, speculative)
        start, end, eof, want = pre
        try:
            while not eof and end - start < want:  # FastxReader._batches' read loop
                m = max(want - (end - start), _READ_MIN)
                src.ensure(start, end + m)
                got = min(m, src.pos - end)
                if not got:
                    eof = True
                end += got
        except _ReadFailed as exc:
            piece.error = FastxError(rd.path, None, str(exc))
            return piece
        piece.end, piece.eof = end, eof
        buf = src.view(start, end)
        if rd.format is None and not self._detect(piece, buf):
            return piece
        if end == start:
            piece.stop = True
            return piece
        piece.future = pool.submit(rd._parse_raw, buf, eof, self.table)
        src.users.append(piece.future)
        piece.guess = self._guess(buf, pre, end, eof)
        return piece

    def _detect(self, piece: _Piece, buf: np.ndarray) -> bool:
        """The format test of FastxReader._batches on the first buffer."""
        rd = self.rd
        for lo in range(0, buf.size, _READ_MIN):
            block = buf[lo : lo + _READ_MIN].tobytes()
            stripped = block.lstrip(b"\r\n")
            if not stripped:
                continue
            head = stripped[:1]
            if head == b">":
                rd.format = "fasta"
            elif head == b"@":
                rd.format = "fastq"
            else:
                skipped = buf[: lo + len(block) - len(stripped)].tobytes()
                piece.error = FastxError(
                    rd.path,
                    self.first_line + skipped.count(b"\n"),
                    f"not FASTA or FASTQ: record starts with {_show_byte(head[0])}, expected '>' or '@'",
                )
                return False
            return True
        piece.stop = True  # nothing but blank lines: no records
        return False

    def _guess(self, buf: np.ndarray, pre: tuple, end: int, eof: bool) -> tuple | None:
        """The state after parsing ``buf`` (made from state ``pre``), predicted."""
        rd = self.rd
        start, _, _, want = pre
        n = end - start
        fastq = rd.format == "fastq"
        cap = max(1, min(rd.max_records, n // 2 + 1))
        if self.density is None:
            head = min(n, 1 << 20)
            r, c, _ = _fastx.skim_chunk(buf, 0, head, False, fastq, self.table, head + 1, head + 1)
            self.density = r / c if r else 0.0
        # Can a cap stop the parse? Not max_bases when the bases of complete
        # records (FASTQ: with as many quality bytes) cannot reach it; not
        # max_records when cap > n // 2 (a record takes >= 2 bytes), nor (a guess)
        # when the densest input seen so far would give under cap / 2 records.
        most_bases = (n - 1) // 2 if fastq else n - 2
        capped = most_bases >= rd.chunk_bytes or (cap <= n // 2 and 2 * n * self.density >= cap)
        if not capped:
            if eof:
                return None  # the parse takes everything: end of input next
            c = int(_fastx.tail_stop(buf, n, fastq, self.table))
        if capped or c < 0:
            r, c, err = _fastx.skim_chunk(buf, 0, n, eof, fastq, self.table, cap, rd.chunk_bytes)
            if err:
                return None  # the parse fails here (or the guess is off): wait for it
            c = int(c) if r else 0
        c = min(c, n)
        if c == 0:
            return None if eof else (start, end, eof, 2 * max(want, n))
        if eof and c == n:
            return None
        return (start + c, end, eof, rd.chunk_bytes)


def iter_fastx(path: str | os.PathLike, **options) -> Iterator[SequenceBatch]:
    """Iterate the batches of a FASTA/FASTQ file (see :class:`FastxReader`)."""
    return iter(FastxReader(path, **options))


def read_fastx(path: str | os.PathLike, **options) -> SequenceBatch:
    """Read a whole FASTA/FASTQ file into one batch.

    Raises :class:`~gseek.errors.FastxError` if the file holds no record.
    """
    reader = FastxReader(path, **options)
    batches = list(reader)
    if not batches:
        raise FastxError(os.fspath(path), None, "no FASTA/FASTQ records (empty file)")
    return SequenceBatch.concat(batches)


# --------------------------------------------------------------------------- output


class open_output:
    """Write a file under a temporary name and rename it when complete.

    Use as a context manager; on an exception the temporary file is removed
    and nothing appears under the final name. A name ending in ``.gz`` is
    gzip-compressed.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> with open_output(os.path.join(d, "x.txt")) as fh:
    ...     _ = fh.write(b"hello\\n")
    >>> sorted(os.listdir(d))
    ['x.txt']
    """

    def __init__(self, path: str | os.PathLike, mode: str = "wb") -> None:
        self.path = Path(path)
        self.mode = mode
        self.tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")

    def __enter__(self):
        raw = open(self.tmp, "wb")
        if self.path.name.endswith(".gz"):
            self._raw = raw
            fh: io.IOBase = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0)
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
            self._fh.close()
            if self._raw is not None:
                self._raw.close()
            complete = exc_type is None  # only a file whose closes succeeded gets its final name
        finally:
            if complete:
                os.replace(self.tmp, self.path)
            else:
                try:
                    os.unlink(self.tmp)
                except FileNotFoundError:
                    pass


def _wrap(seq: str, width: int) -> Iterator[str]:
    if width <= 0 or not seq:
        yield seq
        return
    for i in range(0, len(seq), width):
        yield seq[i : i + width]


def write_fasta(
    path: str | os.PathLike,
    records: Iterable[tuple[str, str]] | SequenceBatch,
    *,
    width: int = 70,
) -> int:
    """Write ``(header, sequence)`` pairs (or a batch) as FASTA; return the count.

    ``header`` is written after ``>`` as is (name, then optional description).
    Written under a temporary name and renamed when complete.
    """
    if isinstance(records, SequenceBatch):
        records = _batch_fasta_records(records)
    n = 0
    with open_output(path, "w") as fh:
        for header, seq in records:
            fh.write(f">{header}\n")
            for part in _wrap(seq, width):
                fh.write(part)
                fh.write("\n")
            n += 1
    return n


def write_fastq(
    path: str | os.PathLike,
    records: Iterable[tuple[str, str, str]] | SequenceBatch,
) -> int:
    """Write ``(header, sequence, quality)`` triples (or a batch) as 4-line FASTQ."""
    if isinstance(records, SequenceBatch):
        if records.quals is None:
            raise ValueError("write_fastq needs a batch with qualities")
        batch = records
        records = (
            (_header(batch, i), batch.sequence(i), batch.quality(i)) for i in range(len(batch))
        )
    n = 0
    with open_output(path, "w") as fh:
        for header, seq, qual in records:
            if len(seq) != len(qual):
                raise ValueError(f"record {header!r}: quality length {len(qual)} != sequence length {len(seq)}")
            fh.write(f"@{header}\n{seq}\n+\n{qual}\n")
            n += 1
    return n


def _header(batch: SequenceBatch, i: int) -> str:
    desc = batch.description(i)
    return f"{batch.name(i)} {desc}" if desc else batch.name(i)


def _batch_fasta_records(batch: SequenceBatch) -> Iterator[tuple[str, str]]:
    for i in range(len(batch)):
        yield _header(batch, i), batch.sequence(i)

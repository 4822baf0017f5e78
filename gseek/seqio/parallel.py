"""Parallel parsing of one FASTA/FASTQ stream: chunks parsed by several threads from predicted record starts.

The batches, records and errors are exactly those of the one-thread reader
(``docs/sequence-io.md`` says how); :class:`gseek.seqio.FastxReader` uses it
for ``threads > 1``.
"""

from __future__ import annotations

import zlib
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from gseek.errors import FastxError

from . import parser as _fastx
from .batch import SequenceBatch
from .parser import TABLES

if TYPE_CHECKING:  # pragma: no cover
    from .reader import FastxReader

__all__ = ["ParallelParse"]


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


class ParallelParse:
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
        self.table = TABLES[reader.alphabet]
        # one chunk's read fits one arena: an arena per chunk, reused
        self.src = _ReadAhead(fh, max(reader.chunk_bytes, _fastx.READ_MIN) + _fastx.READ_MIN, reader.threads + 2)
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
                m = max(want - (end - start), _fastx.READ_MIN)
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
        for lo in range(0, buf.size, _fastx.READ_MIN):
            block = buf[lo : lo + _fastx.READ_MIN].tobytes()
            stripped = block.lstrip(b"\r\n")
            if not stripped:
                continue
            rd.format = _fastx.FORMATS.get(stripped[:1])
            if rd.format is None:
                skipped = buf[: lo + len(block) - len(stripped)].tobytes()
                piece.error = _fastx.not_fastx(rd.path, self.first_line + skipped.count(b"\n"), stripped[:1])
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

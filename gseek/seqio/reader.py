"""Reading FASTA/FASTQ: :class:`FastxReader` streams a file (plain or gzip, ``-`` for stdin) in
bounded chunks through the Numba parser (:mod:`.parser`), one :class:`~gseek.seqio.SequenceBatch`
a chunk; :func:`read_fastx` reads a whole file into one batch."""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from typing import BinaryIO, Literal

import numpy as np
from isal import igzip_threaded

from gseek import ragged
from gseek.errors import FastxError

from . import parser as _fastx
from .batch import Alphabet, SequenceBatch, mask_runs
from .parallel import ParallelParse
from .parser import ERROR_TEXT, TABLES, show_byte

__all__ = ["FastxReader", "iter_fastx", "read_fastx", "open_input", "looks_phred64", "record_text", "STDIN",
           "DEFAULT_CHUNK_BYTES", "PHRED_OFFSETS"]

#: Default bytes read per chunk; a batch holds the records of one chunk.
DEFAULT_CHUNK_BYTES = 16 << 20
#: Below this chunk_bytes, threads > 1 still parses in one thread: the Python
#: work per chunk (under the GIL) would cost more than the threads save.
PARALLEL_MIN_CHUNK_BYTES = 1 << 16


#: The name that reads standard input wherever gseek reads a sequence file.
STDIN = "-"

#: FASTQ quality encoding (``phred=``) -> the lowest quality byte it allows.
PHRED_OFFSETS = {33: 33, 64: 64}


def looks_phred64(batch: SequenceBatch) -> bool:
    """Whether a batch read as Phred+33 looks Phred+64: no quality below ``'@'``
    (Phred+33 Q31) and some above ``'J'`` (Q41, the top of Illumina 1.8+).

    FastQC takes a file whose lowest quality is ``'@'`` or more for Phred+64;
    the second rule keeps high-quality Phred+33 reads (binned NovaSeq
    ``'F'``, ``':'``) out.

    >>> import numpy as np
    >>> batch = SequenceBatch.from_codes(np.zeros(3, np.uint8), np.array([0, 3]), ["r"], "<mem>")
    >>> from dataclasses import replace
    >>> [looks_phred64(replace(batch, format="fastq", quals=np.frombuffer(q, np.uint8)))
    ...  for q in (b"hh@", b"FFF", b"hh?")]
    [True, False, False]
    """
    quals = batch.quals
    if quals is None or not quals.size:
        return False
    return bool(quals.min() >= ord("@") and quals.max() > ord("J"))


def record_text(buf: np.ndarray, lines: np.ndarray, end: int,
                empty_fastq: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The text of each record of a parsed buffer as a ragged array (data, offsets).

    ``lines`` are the records' header lines counted from the buffer's start
    (0-based), ``end`` where the parse stopped. A record runs from its header
    to the next header (or ``end``); blank lines after it are left out, and a
    last line without a newline (the end of a file) gets one. An empty FASTQ
    read (``empty_fastq``) gets its empty quality line back (the parser reads
    it as a blank line), ended as its ``+`` line is, wherever the chunk ends.
    """
    end = min(int(end), buf.size)  # a last line without newline: the parse counts one past the end
    newlines = np.flatnonzero(buf[:end] == 10)
    starts = np.where(lines == 0, 0, newlines[np.maximum(lines - 1, 0)] + 1) if newlines.size \
        else np.zeros(lines.size, np.int64)
    ends = np.append(starts[1:], end).astype(np.int64)
    # blank lines before the next header (rare): drop them, keeping the record's own newline
    last = buf[np.maximum(ends - 1, 0)]
    before = buf[np.maximum(ends - 2, 0)]
    for i in np.flatnonzero((ends - starts >= 2) & (last == 10) & ((before == 10) | (before == 13))):
        e = int(ends[i])
        while e - starts[i] >= 2 and buf[e - 1] == 10 and buf[e - 2] in (10, 13):
            cut = e - 2 if buf[e - 2] == 10 else e - 3
            if cut < starts[i] or buf[cut] != 10:
                break  # a CRLF line end, not a blank line
            e = cut + 1
        ends[i] = e
    sizes = ends - starts
    pad = (buf[np.maximum(ends - 1, 0)] != 10).astype(np.int64)  # the file's last line: no newline
    crlf = np.zeros(sizes.size, dtype=bool)
    if empty_fastq is not None:  # the empty quality line, ended as the '+' line is
        crlf = empty_fastq & (pad == 0) & (sizes >= 2) & (buf[np.maximum(ends - 2, 0)] == 13)
        pad += empty_fastq.astype(np.int64) + crlf
    offsets = ragged.offsets(sizes + pad)
    inside = np.arange(int(sizes.sum())) - np.repeat(ragged.offsets(sizes)[:-1], sizes)
    data = np.full(int(offsets[-1]), 10, dtype=np.uint8)  # the pads are newlines
    data[np.repeat(offsets[:-1], sizes) + inside] = buf[np.repeat(starts, sizes) + inside]
    data[offsets[1:][crlf] - 2] = 13
    return data, offsets


def open_input(path: str | os.PathLike) -> tuple[BinaryIO, BinaryIO]:
    """Open a sequence input once: ``(stream to read, file to close after it)``.

    ``-`` is standard input. The first bytes are read from the opened file,
    never by a second open, so pipes, FIFOs, ``/dev/stdin`` and ``<( )``
    lose nothing; gzip (``1f 8b``) is decompressed by ISA-L on a background
    thread (python-isal), overlapping the parser.
    """
    path = os.fspath(path)
    # stdin by its descriptor, not sys.stdin (None when the process started with it closed)
    raw: BinaryIO = os.fdopen(os.dup(0), "rb") if path == STDIN else open(path, "rb")
    try:
        start = raw.tell() if raw.seekable() else 0  # stdin may be a file read part-way already
        magic = b""
        while len(magic) < 2:
            more = raw.read(2 - len(magic))
            if not more:
                break
            magic += more
        if raw.seekable():
            raw.seek(start)
            stream: BinaryIO = raw
        else:
            stream = _Prefixed(magic, raw)  # type: ignore[assignment]
        if magic == b"\x1f\x8b":
            stream = igzip_threaded.open(stream, "rb", threads=1)  # type: ignore[assignment]
    except BaseException:
        raw.close()
        raise
    return stream, raw


class FastxReader:
    """Stream a FASTA or FASTQ file as :class:`SequenceBatch` chunks.

    Arguments:
        path: file name, ``-`` for standard input; gzip (and bgzip) is
            detected from the content, also on a pipe or FIFO.
        alphabet: ``"dna"`` (codes 0..4) or ``"protein"`` (uppercase ASCII).
        chunk_bytes: bytes of (uncompressed) input per batch (read at least
            64 KiB at a time); a batch also ends once its residues reach
            this. A record larger than this is read whole.
        max_records: at most this many records per batch.
        threads: parse with this many threads (``None`` or 1: in the calling
            thread; also when ``chunk_bytes`` is under 64 KiB, where threads
            do not pay). Batches, records and errors are exactly those of the
            one-thread reader; see docs/sequence-io.md for how.
        phred: the FASTQ quality encoding, 33 (Phred+33, ``'!'``..``'~'``)
            or 64 (Phred+64, ``'@'``..``'~'``, converted to Phred+33 as it is
            read); a quality byte outside the range is an error at its line.
        keep_raw: keep each record's text as the file gives it
            (:attr:`SequenceBatch.raw <gseek.seqio.SequenceBatch.raw>`:
            header, sequence and quality lines, blank lines after it left out).

    The format is taken from the first non-blank byte (``>`` FASTA, ``@``
    FASTQ) and kept in :attr:`format`; :attr:`records_read` counts the
    records of the batches so far. An empty file gives no batch. Bad input
    raises :class:`~gseek.errors.FastxError` naming the file, the line and
    the rule broken.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "reads.fq")
    >>> _ = open(path, "w").write("@r1 first\\nACGTN\\n+\\nIIII#\\n@r2\\nGGCA\\n+\\n!!II\\n@r3\\nTTTT\\n+\\nIIII\\n")
    >>> reader = FastxReader(path, max_records=2)
    >>> [(batch.first_record, batch.name_list()) for batch in reader]
    [(0, ['r1', 'r2']), (2, ['r3'])]
    >>> reader.format, reader.records_read
    ('fastq', 3)
    >>> _ = open(path, "w").write("@r1\\nACGT\\n+\\nIII\\n")
    >>> list(FastxReader(path))
    Traceback (most recent call last):
    ...
    gseek.errors.FastxError: .../reads.fq:4: truncated record: quality length 3 != sequence length 4
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        alphabet: Alphabet = "dna",
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        max_records: int = 1 << 20,
        threads: int | None = None,
        phred: int = 33,
        keep_raw: bool = False,
    ) -> None:
        if alphabet not in TABLES:
            raise ValueError(f"unknown alphabet {alphabet!r} (expected 'dna' or 'protein')")
        if chunk_bytes < 1 or max_records < 1:
            raise ValueError("chunk_bytes and max_records must be positive")
        if threads is not None and (isinstance(threads, bool) or int(threads) != threads or threads < 1):
            raise ValueError(f"threads must be a positive integer or None, not {threads!r}")
        if phred not in PHRED_OFFSETS:
            raise ValueError(f"phred must be 33 or 64, not {phred!r}")
        self.path = os.fspath(path)
        self.alphabet = alphabet
        self.chunk_bytes = int(chunk_bytes)
        self.max_records = int(max_records)
        self.threads = 1 if threads is None else int(threads)
        self.phred = int(phred)
        self.keep_raw = bool(keep_raw)
        self.format: Literal["fasta", "fastq"] | None = None
        self.records_read = 0
        #: chunks parsed from a predicted start and used / thrown away (threads > 1)
        self.pieces_used = 0
        self.pieces_discarded = 0

    def __iter__(self) -> Iterator[SequenceBatch]:
        try:
            fh, raw = open_input(self.path)
        except OSError as exc:
            raise FastxError(self.path, None, f"cannot open: {exc.strerror or exc}") from None
        with raw, fh:
            yield from self._batches(fh)

    def _read(self, fh: BinaryIO, n: int) -> bytes:
        try:
            return fh.read(n)
        except (OSError, EOFError, ValueError, zlib.error) as exc:
            raise FastxError(self.path, None, f"cannot read: {exc}") from None

    def _batches(self, fh: BinaryIO) -> Iterator[SequenceBatch]:
        fh, first_line = self._skip_blank_lines(fh)
        if self.threads > 1 and self.chunk_bytes >= PARALLEL_MIN_CHUNK_BYTES:
            yield from ParallelParse(self, fh, first_line).batches()
            return
        table = TABLES[self.alphabet]
        data = b""
        eof = False
        line = first_line
        want = self.chunk_bytes
        while True:
            while not eof and len(data) < want:
                more = self._read(fh, max(want - len(data), _fastx.READ_MIN))
                if not more:
                    eof = True
                data += more
            if self.format is None:
                stripped = data.lstrip(b"\r\n")
                if not stripped:
                    return  # empty file: no records
                self.format = _fastx.FORMATS.get(stripped[:1])
                if self.format is None:
                    raise _fastx.not_fastx(self.path, line + data[: len(data) - len(stripped)].count(b"\n"),
                                           stripped[:1])
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
            block = self._read(fh, _fastx.READ_MIN)
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
            buf, n, eof, fastq, table, PHRED_OFFSETS[self.phred], cap, self.chunk_bytes, *out
        )
        if err or r == 0:
            return err, err_line, a, b, r, consumed, lines, None
        soft = mask_runs(case_mask[:nb], seq_off[: r + 1]) if lower else np.empty((0, 2), dtype=np.int64)
        qual = None
        if fastq:
            qual = quals[:nb].copy()
            if self.phred != 33:
                qual -= np.uint8(self.phred - 33)  # Phred+33 from here on
        arrays = (
            codes[:nb].copy(),
            seq_off[: r + 1].copy(),
            qual,
            names[: name_off[r]].copy(),
            name_off[: r + 1].copy(),
            descs[: desc_off[r]].copy(),
            desc_off[: r + 1].copy(),
            soft,
            rec_line[:r],
            record_text(buf, rec_line[:r], consumed, np.diff(seq_off[: r + 1]) == 0 if fastq else None)
            if self.keep_raw else None,
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
        codes, offsets, quals, names, name_offsets, descs, desc_offsets, soft, rec_line, raw = arrays
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
            raw=None if raw is None else raw[0],
            raw_offsets=None if raw is None else raw[1],
        )
        self.records_read += r
        return batch, consumed, lines

    def _raise(self, err: int, line: int, a: int, b: int) -> None:
        head = "@" if self.format == "fastq" else ">"
        text = ERROR_TEXT[err].format(
            head=head,
            alphabet=self.alphabet.upper() if self.alphabet == "dna" else self.alphabet,
            a=show_byte(a) if err in (_fastx.E_RECORD_START, _fastx.E_SEQ_CHAR, _fastx.E_QUAL_CHAR) else a,
            b=b,
            col=b + 1,
            phred=" for Phred+64 ('@'..'~')" if self.phred == 64 and err == _fastx.E_QUAL_CHAR else "",
        )
        raise FastxError(self.path, line, text)


class _Prefixed:
    """A binary stream that returns ``head`` first, then the rest of ``fh``;
    every read is as full as ``fh``'s own (no short read at the seam)."""

    def __init__(self, head: bytes, fh: BinaryIO) -> None:
        self.head = memoryview(head)
        self.fh = fh

    def close(self) -> None:
        self.fh.close()

    def __enter__(self) -> _Prefixed:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

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


def iter_fastx(path: str | os.PathLike, **options) -> Iterator[SequenceBatch]:
    """Iterate the batches of a FASTA/FASTQ file (see :class:`FastxReader`).

    Arguments:
        path: file name (plain or gzip), ``-`` for standard input.
        **options: those of :class:`FastxReader` (``alphabet``,
            ``chunk_bytes``, ``max_records``, ``threads``).

    Returns an iterator of :class:`~gseek.seqio.SequenceBatch`, one per
    chunk, in file order (none for an empty file).

    >>> import gzip, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "reads.fa.gz")
    >>> _ = open(path, "wb").write(gzip.compress(b">a\\nACGT\\n>b\\nGGG\\n>c\\nT\\n"))
    >>> [(batch.name_list(), batch.lengths.tolist()) for batch in iter_fastx(path, max_records=2)]
    [(['a', 'b'], [4, 3]), (['c'], [1])]
    """
    return iter(FastxReader(path, **options))


def read_fastx(path: str | os.PathLike, **options) -> SequenceBatch:
    """Read a whole FASTA/FASTQ file into one batch.

    Arguments:
        path: file name (plain or gzip), ``-`` for standard input.
        **options: those of :class:`FastxReader` (``alphabet``,
            ``chunk_bytes``, ``max_records``, ``threads``).

    Returns one :class:`~gseek.seqio.SequenceBatch` of every record. Raises
    :class:`~gseek.errors.FastxError` for bad input, and if the file holds
    no record.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "ref.fa")
    >>> _ = open(path, "w").write(">chr1 first\\nACGTacgt\\nNN\\n>chr2\\nGATTACA\\n")
    >>> batch = read_fastx(path)
    >>> batch.name_list(), batch.lengths.tolist(), batch.sequence(0), batch.soft_mask.tolist()
    (['chr1', 'chr2'], [10, 7], 'ACGTACGTNN', [[4, 8]])
    >>> read_fastx(path, alphabet="protein").sequence(1)
    'GATTACA'
    >>> _ = open(path, "w").close()
    >>> read_fastx(path)
    Traceback (most recent call last):
    ...
    gseek.errors.FastxError: .../ref.fa: no FASTA/FASTQ records (empty file)
    """
    reader = FastxReader(path, **options)
    batches = list(reader)
    if not batches:
        raise FastxError(os.fspath(path), None, "no FASTA/FASTQ records (empty file)")
    return SequenceBatch.concat(batches)

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
from collections.abc import Iterable, Iterator
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
    ) -> None:
        if alphabet not in _TABLES:
            raise ValueError(f"unknown alphabet {alphabet!r} (expected 'dna' or 'protein')")
        if chunk_bytes < 1 or max_records < 1:
            raise ValueError("chunk_bytes and max_records must be positive")
        self.path = os.fspath(path)
        self.alphabet = alphabet
        self.chunk_bytes = int(chunk_bytes)
        self.max_records = int(max_records)
        self.format: Literal["fasta", "fastq"] | None = None
        self.records_read = 0

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
        table = _TABLES[self.alphabet]
        data = b""
        eof = False
        line = 1
        want = self.chunk_bytes
        while True:
            while not eof and len(data) < want:
                more = self._read(fh, max(want - len(data), 1 << 16))
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

    def _parse(self, data: bytes, eof: bool, table: np.ndarray, line: int):
        buf = np.frombuffer(data, dtype=np.uint8)
        n = buf.size
        fastq = self.format == "fastq"
        cap = max(1, min(self.max_records, n // 2 + 1))
        out = _fastx.empty_outputs(n, cap, fastq)
        codes, quals, case_mask, seq_off, names, name_off, descs, desc_off, rec_line = out
        r, consumed, lines, nb, lower, err, err_line, a, b = _fastx.parse_chunk(
            buf, n, eof, fastq, table, cap, self.chunk_bytes, *out
        )
        if err:
            self._raise(err, line + err_line, a, b)
        if r == 0:
            return None, consumed, lines
        soft = mask_runs(case_mask[:nb], seq_off[: r + 1]) if lower else np.empty((0, 2), dtype=np.int64)
        batch = SequenceBatch(
            path=self.path,
            format=self.format,  # type: ignore[arg-type]
            alphabet=self.alphabet,
            codes=codes[:nb].copy(),
            offsets=seq_off[: r + 1].copy(),
            quals=quals[:nb].copy() if fastq else None,
            names=names[: name_off[r]].copy(),
            name_offsets=name_off[: r + 1].copy(),
            descriptions=descs[: desc_off[r]].copy(),
            description_offsets=desc_off[: r + 1].copy(),
            soft_mask=soft,
            lines=rec_line[:r] + line,
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

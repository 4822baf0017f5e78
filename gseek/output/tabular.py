"""Tabular alignment output: rows from result arrays in Numba (size every row, then fill one buffer), and the writer.

Host-side code, not a kernel (there is no ``.cu`` twin), in the manner of
:mod:`gseek.output.sam_records`: pass 1 (``row_sizes``) computes every row's exact byte
count, a prefix sum places the rows, pass 2 (``row_fill``) writes each row at
its place in one preallocated ``uint8`` buffer. Both passes run in parallel
over rows; each row depends only on its own inputs, so the text is the same for
any thread count.

The text equals ``"\\n".join(results.lines()) + "\\n"`` encoded, byte for byte:
:meth:`gseek.align.Alignment.value` is the slow readable reference (it stays in
``gseek.align``). Its rules, as applied here:

* ``qstart`` is +1 only when ``qseqid`` or ``sseqid`` is a column and the
  alignment length (matches + mismatches + gap columns) is non-zero;
  ``sstart`` is +1 when the length is non-zero;
* ``cigar`` is ``*`` when empty;
* ``identity`` is ``f"{x:.4f}"`` and ``pident`` ``f"{100.0 * x:.3f}"`` with
  ``x = matches / length`` (0.0 when the length is 0).

The floats are exact without any decimal float arithmetic: a double ``x`` is
``M * 2**e`` with an integer ``M < 2**53``, so ``x * 10**k`` is
``M * 5**k * 2**(e + k)``; ``M * 5**k`` fits in 63 bits for ``k <= 4``, and
the rounding to an integer is a shift, a remainder and a comparison with half
(ties to even): the correctly rounded decimal Python's ``format`` prints.

Results outside the domain these rules are written for (a trace-back field
that is None, an unknown column, names that are not ``str`` or not encodable,
an index outside the name list, counts that make ``matches / length`` leave
[0, 1] or exceed 2**53, integers at the ends of int64) are formatted by the
slow path, so they print, or raise, exactly as before.
"""

from __future__ import annotations

import codecs
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numba
import numpy as np

from gseek import ragged
from gseek.kernels._jit import njit
from gseek.seqio import open_output
from gseek.seqio.atomic import write_all

from .cigar import CigarStrings

if TYPE_CHECKING:  # pragma: no cover
    from gseek.align.results import AlignmentResults

from ._text import _byte, _copy, _fixed, _int

__all__ = ["TsvFormatter", "format_rows", "NameTable", "byte_encoding", "stream_encoding", "AlignmentWriter"]

_TAB, _NL, _STAR, _DOT, _ZERO = 9, 10, 42, 46, 48

#: What one output column prints: an integer, a name, a float, a CIGAR.
K_INT, K_QNAME, K_TNAME, K_IDENTITY, K_PIDENT, K_CIGAR = range(6)

#: Column name -> (kind, source). Sources are fields of ``AlignmentResults``
#: or the derived ``length``, ``q_start1`` (qstart, 1-based when the
#: alignment is not empty) and ``t_start1``; ``Alignment.value`` is the reference.
_COLUMNS: dict[str, tuple[int, str | None]] = {
    "qname": (K_QNAME, "query"), "qseqid": (K_QNAME, "query"),
    "tname": (K_TNAME, "target"), "sseqid": (K_TNAME, "target"),
    "score": (K_INT, "score"),
    "qstart": (K_INT, "q_start"),  # "q_start1" with outfmt-6 names, see _plan
    "qend": (K_INT, "q_end"),
    "tstart": (K_INT, "t_start"),
    "sstart": (K_INT, "t_start1"),
    "tend": (K_INT, "t_end"), "send": (K_INT, "t_end"),
    "qlen": (K_INT, "q_len"),
    "tlen": (K_INT, "t_len"), "slen": (K_INT, "t_len"),
    "identity": (K_IDENTITY, None),
    "pident": (K_PIDENT, None),
    "matches": (K_INT, "matches"), "nident": (K_INT, "matches"),
    "mismatches": (K_INT, "mismatches"), "mismatch": (K_INT, "mismatches"),
    "gapopens": (K_INT, "gap_opens"), "gapopen": (K_INT, "gap_opens"),
    "gaps": (K_INT, "gap_cols"),
    "length": (K_INT, "length"),
    "cigar": (K_CIGAR, None),
}
_LENGTH_FIELDS = ("matches", "mismatches", "gap_cols")
#: Encodings whose text is the concatenation of its parts' bytes, with ASCII
#: digits, tabs and newlines (``codecs.lookup(name).name``).
BYTE_ENCODINGS = frozenset({"ascii", "utf-8", "iso8859-1"})
#: Largest count for which ``float(m) / float(n)`` is Python's ``m / n``.
_EXACT_INT = 1 << 53
_I64 = np.iinfo(np.int64)


# --------------------------------------------------------------------------- kernels


@njit(cache=True, nogil=True, error_model="numpy")
def _row(i, kinds, slots, values, matches, length, qnames, qname_off, tnames, tname_off, cigar, cigar_off,
         out, p, write):
    """Row ``i``'s line (with its newline) at ``p``; returns the end."""
    for c in range(kinds.size):
        if c > 0:
            p = _byte(out, p, _TAB, write)
        kind = kinds[c]
        if kind == K_INT:
            p = _int(out, p, values[slots[c], i], write)
        elif kind == K_QNAME:
            j = values[slots[c], i]
            p = _copy(out, p, qnames, qname_off[j], qname_off[j + 1], write)
        elif kind == K_TNAME:
            j = values[slots[c], i]
            p = _copy(out, p, tnames, tname_off[j], tname_off[j + 1], write)
        elif kind == K_IDENTITY or kind == K_PIDENT:
            x = 0.0
            if length[i] != 0:
                x = np.float64(matches[i]) / np.float64(length[i])
            if kind == K_IDENTITY:
                p = _fixed(out, p, x, 4, 625, 10000, write)
            else:
                p = _fixed(out, p, 100.0 * x, 3, 125, 1000, write)
        else:  # K_CIGAR
            a, b = cigar_off[i], cigar_off[i + 1]
            if a == b:
                p = _byte(out, p, _STAR, write)
            else:
                p = _copy(out, p, cigar, a, b, write)
    return _byte(out, p, _NL, write)


@njit(parallel=True, cache=True, nogil=True, error_model="numpy")
def row_sizes(kinds, slots, values, matches, length, qnames, qname_off, tnames, tname_off, cigar, cigar_off, sizes):
    """Pass 1: the bytes of every row, newline included."""
    dummy = np.empty(0, dtype=np.uint8)
    for i in numba.prange(sizes.size):
        sizes[i] = _row(i, kinds, slots, values, matches, length, qnames, qname_off, tnames, tname_off, cigar,
                        cigar_off, dummy, 0, False)


@njit(parallel=True, cache=True, nogil=True, error_model="numpy")
def row_fill(kinds, slots, values, matches, length, qnames, qname_off, tnames, tname_off, cigar, cigar_off,
             starts, out):
    """Pass 2: every row's text at ``starts[i]`` of ``out``."""
    for i in numba.prange(starts.size - 1):
        _row(i, kinds, slots, values, matches, length, qnames, qname_off, tnames, tname_off, cigar, cigar_off,
             out, starts[i], True)


# --------------------------------------------------------------------------- host side


class NameTable:
    """Names encoded once: name ``i`` is ``data[offsets[i]:offsets[i + 1]]``;
    ``bad`` marks names that are not ``str`` or not encodable (None: none is)."""

    __slots__ = ("data", "offsets", "bad")

    def __init__(self, names: Sequence[Any], encoding: str, errors: str) -> None:
        parts, bad = [], []
        for k, name in enumerate(names):
            try:
                if not isinstance(name, str):
                    raise TypeError(name)
                parts.append(name.encode(encoding, errors))
            except (UnicodeError, TypeError):
                parts.append(b"")
                bad.append(k)
        self.data = np.frombuffer(bytearray(b"".join(parts)), dtype=np.uint8)  # writable: one kernel type
        self.offsets = ragged.offsets(np.fromiter(map(len, parts), dtype=np.int64, count=len(parts)))
        self.bad = None
        if bad:
            self.bad = np.zeros(len(parts), dtype=bool)
            self.bad[bad] = True

    def __len__(self) -> int:
        return self.offsets.size - 1


_E64 = np.zeros(0, dtype=np.int64)
_EU8 = np.zeros(0, dtype=np.uint8)


class TsvFormatter:
    """Text of :class:`~gseek.align.AlignmentResults` rows, encoded, as one ``uint8`` array.

    One per output stream: it keeps the encoded name lists of the last few
    name-list objects it saw (by identity), so a stream of chunks that share
    ``query_names`` / ``target_names`` encodes them once. ``encoding`` and
    ``errors`` are those of the text stream the bytes stand for (a name that
    cannot be encoded raises the same ``UnicodeEncodeError`` as writing the
    text would).

    >>> from gseek.align import PairAligner
    >>> res = PairAligner(device="cpu", traceback=True, outfmt="6").align_pairs(["ACGT"], ["AGT"])
    >>> TsvFormatter().format(res).tobytes()
    b'q0\\tt0\\t75.000\\t4\\t0\\t1\\t1\\t4\\t1\\t3\\t-1\\n'
    """

    def __init__(self, encoding: str = "utf-8", errors: str = "strict", keep: int = 4) -> None:
        self.encoding, self.errors, self.keep = encoding, errors, int(keep)
        self._tables: list[tuple[Sequence[Any], int, NameTable]] = []

    def names(self, names: Sequence[Any]) -> NameTable:
        """The encoded table of ``names`` (cached while the same object, of the same length, comes again)."""
        for k, (obj, size, table) in enumerate(self._tables):
            if obj is names and size == len(names):
                if k:
                    self._tables.insert(0, self._tables.pop(k))
                return table
        table = NameTable(names, self.encoding, self.errors)
        self._tables.insert(0, (names, len(names), table))
        del self._tables[self.keep :]
        return table

    def format(self, results: Any) -> np.ndarray:
        """``("\\n".join(results.lines()) + "\\n").encode(encoding, errors)`` as
        ``uint8`` (empty for no rows), computed in two parallel passes."""
        n = len(results)
        if n == 0:
            return np.zeros(0, np.uint8)
        plan = self._plan(results)
        if plan is None:
            return self.slow(results)
        sizes = np.empty(n, dtype=np.int64)
        row_sizes(*plan, sizes)
        starts = ragged.offsets(sizes)
        out = np.empty(int(starts[-1]), dtype=np.uint8)
        row_fill(*plan, starts, out)
        return out

    def slow(self, results: Any) -> np.ndarray:
        """The reference: one ``Alignment.value`` per cell."""
        text = "\n".join(results.lines()) + "\n" if len(results) else ""
        return np.frombuffer(text.encode(self.encoding, self.errors), dtype=np.uint8)

    def _plan(self, results: Any) -> tuple | None:
        """The kernels' arguments, or None where the slow path must answer."""
        columns = tuple(results.columns)
        if any(c not in _COLUMNS for c in columns):
            return None
        one_based = "qseqid" in columns or "sseqid" in columns
        kinds, sources = [], []
        for c in columns:
            kind, source = _COLUMNS[c]
            if c == "qstart" and one_based:
                source = "q_start1"
            kinds.append(kind)
            sources.append(source)
        need_length = any(s in ("length", "q_start1", "t_start1") for s in sources) or \
            K_IDENTITY in kinds or K_PIDENT in kinds
        fields: dict[str, np.ndarray] = {}
        wanted = {s.removesuffix("1") for s in sources if s is not None} - {"length"}
        if need_length:
            wanted |= set(_LENGTH_FIELDS)
        for name in wanted:
            value = getattr(results, name)
            if not _integer_array(value, n=len(results)):
                return None
            fields[name] = value
        matches = length = _E64
        if need_length:
            # numpy's sum in the arrays' own dtype, like Alignment.length (int32 wraps alike)
            length = np.asarray(fields["matches"] + fields["mismatches"] + fields["gap_cols"])
            if not _integer_array(length, n=len(results)):
                return None
            length = length.astype(np.int64, copy=False)
            matches = np.ascontiguousarray(fields["matches"], dtype=np.int64)
            if K_IDENTITY in kinds or K_PIDENT in kinds:
                nz = length != 0
                m, size = matches[nz], length[nz]
                if size.size and not ((m >= 0).all() and (m <= size).all() and (size < _EXACT_INT).all()):
                    return None  # identity outside [0, 1], or not exactly a double division
        cigar, cigar_off = _EU8, _E64
        if K_CIGAR in kinds:
            cigars = results.cigars
            if not isinstance(cigars, CigarStrings) or len(cigars) != len(results):
                return None
            cigar = np.ascontiguousarray(cigars.text, dtype=np.uint8)
            cigar_off = np.ascontiguousarray(cigars.offsets, dtype=np.int64)
        qtable = ttable = None
        if K_QNAME in kinds:
            qtable = self._checked_names(results.query_names, fields["query"])
            if qtable is None:
                return None
        if K_TNAME in kinds:
            ttable = self._checked_names(results.target_names, fields["target"])
            if ttable is None:
                return None
        slot_of: dict[str, int] = {}
        rows: list[np.ndarray] = []
        for source in sources:
            if source is None or source in slot_of:
                continue
            if source == "length":
                value = length
            elif source in ("q_start1", "t_start1"):
                value = fields[source.removesuffix("1")].astype(np.int64) + (length != 0)
            else:
                value = fields[source]
            slot_of[source] = len(rows)
            rows.append(value)
        values = np.empty((len(rows), len(results)), dtype=np.int64)
        for k, value in enumerate(rows):
            values[k] = value
        slots = np.array([slot_of.get(s, 0) if s is not None else 0 for s in sources], dtype=np.int64)
        qnames, qname_off = (qtable.data, qtable.offsets) if qtable is not None else (_EU8, _E64)
        tnames, tname_off = (ttable.data, ttable.offsets) if ttable is not None else (_EU8, _E64)
        return (np.array(kinds, dtype=np.int64), slots, values, matches, length, qnames, qname_off, tnames,
                tname_off, cigar, cigar_off)

    def _checked_names(self, names: Sequence[Any], index: np.ndarray) -> NameTable | None:
        """The table of ``names`` if every row's name is in it and encodable."""
        if index.size and (index.min() < 0 or index.max() >= len(names)):
            return None
        table = self.names(names)
        if table.bad is not None and table.bad[index].any():
            return None
        return table


def _integer_array(value: Any, n: int) -> bool:
    """Whether ``value`` is a 1-D integer array of ``n`` values inside int64, with room for +1."""
    if not isinstance(value, np.ndarray) or value.ndim != 1 or value.size != n or value.dtype.kind not in "iub":
        return False
    if value.dtype.itemsize == 8 and value.size:
        low, high = int(value.min()), int(value.max())
        return low > _I64.min and high < _I64.max
    return True


def byte_encoding(encoding: str | None) -> bool:
    """Whether text in ``encoding`` may be written as the bytes this module makes
    (an ASCII-compatible encoding without state: ascii, utf-8, latin-1)."""
    try:
        return encoding is not None and codecs.lookup(encoding).name in BYTE_ENCODINGS
    except LookupError:
        return False


def format_rows(results: Any, encoding: str = "utf-8", errors: str = "strict") -> bytes:
    """``("\\n".join(results.lines()) + "\\n").encode(encoding, errors)``, vectorised;
    ``b""`` for no rows. :class:`TsvFormatter` keeps encoded names between calls.

    >>> from gseek.align import PairAligner
    >>> res = PairAligner(device="cpu").align_pairs(["ACGT", "ACGT"], ["ACGA", "ACGT"])
    >>> format_rows(res) == ("\\n".join(res.lines()) + "\\n").encode()
    True
    >>> print(format_rows(res).decode(), end="")
    q0	t0	3	4	4	4	4
    q1	t1	8	4	4	4	4
    """
    return TsvFormatter(encoding, errors).format(results).tobytes()


def stream_encoding(fh: Any) -> tuple[str, str]:
    """``(encoding, errors)`` of the bytes :class:`AlignmentWriter` makes for the
    text stream ``fh``: the stream's own when it is a plain byte encoding with a
    binary layer (a file from ``open_output``: ascii, strict), else utf-8 with
    surrogatepass (that text is decoded again and written as text)."""
    encoding = getattr(fh, "encoding", None)
    if byte_encoding(encoding) and getattr(fh, "buffer", None) is not None:
        return encoding, getattr(fh, "errors", None) or "strict"
    return "utf-8", "surrogatepass"


class AlignmentWriter:
    """Stream results to a file, written under a temporary name and renamed
    when complete (``-`` or None: stdout).

    Rows are formatted in bulk (:class:`TsvFormatter`, the same
    text as :meth:`AlignmentResults.lines`) and written as bytes in the
    stream's encoding (``open_output``'s for a file, stdout's own).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "out.tsv")
    >>> from gseek.align import PairAligner
    >>> a = PairAligner(device="cpu")
    >>> with AlignmentWriter(path, a.columns) as w:
    ...     w.write(a.align_pairs(["ACGT"], ["ACGA"]))
    >>> print(open(path).read(), end="")
    #qname	tname	score	qend	tend	qlen	tlen
    q0	t0	3	4	4	4	4
    """

    def __init__(self, path: str | os.PathLike | None, columns: Sequence[str], header: bool = True) -> None:
        self.path = None if path in (None, "-") else path
        self.columns = tuple(columns)
        self.header = header and self.columns[0] != "qseqid"
        self.rows = 0

    def __enter__(self) -> AlignmentWriter:
        if self.path is None:
            self._ctx = None
            self._fh = sys.stdout
        else:
            self._ctx = open_output(self.path, "w")
            self._fh = self._ctx.__enter__()
        # Bytes go to the text stream's binary layer when its encoding is a
        # plain one (ascii, utf-8, latin-1); a text-only stream (io.StringIO)
        # or another encoding gets the same text decoded, so it encodes it.
        self._binary = getattr(self._fh, "buffer", None) if byte_encoding(getattr(self._fh, "encoding", None)) \
            else None
        self._formatter = TsvFormatter(*stream_encoding(self._fh))
        if self.header:
            self._fh.write("#" + "\t".join(self.columns) + "\n")
        return self

    def write(self, results: AlignmentResults) -> None:
        n = len(results)
        self.write_encoded(self._formatter.format(results) if n else None, n)

    @property
    def encoding(self) -> tuple[str, str]:
        """``(encoding, errors)`` that :meth:`write_encoded`'s bytes must be made with
        (a :class:`TsvFormatter` of these), once entered."""
        return self._formatter.encoding, self._formatter.errors

    def write_encoded(self, text: np.ndarray | None, rows: int) -> None:
        """Write ``rows`` rows already formatted (``TsvFormatter(*self.encoding).format``),
        e.g. on another thread."""
        if rows:
            if self._binary is None:
                self._fh.write(text.tobytes().decode("utf-8", "surrogatepass"))
            else:
                self._fh.flush()  # the header, or anything else written as text, goes first
                write_all(self._binary, text)
        self.rows += rows

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._ctx is not None:
            self._ctx.__exit__(exc_type, exc, tb)
        else:
            self._fh.flush()

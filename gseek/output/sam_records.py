"""SAM record text from result arrays, in Numba: size every read's lines, then fill one buffer.

Host-side code, not a kernel (there is no ``.cu`` twin): the text of a batch
is built in parallel passes over rows (one row = one read's lines: its
unmapped record, or its primary and secondary records):

1. ``record_bounds`` -- a cheap upper bound of every row's bytes (lengths only);
2. ``record_fill`` -- every row writes its text into a scratch buffer at the
   prefix sum of the bounds, and its real size;
3. ``record_compact`` -- the rows copied side by side into the output.

The bound is checked against every real size (a row that outgrew it is an
error, not silent output). One formatting pass instead of a sizing pass and a
filling pass: the sizing pass computed MD and the integers twice (36% of the
formatter's time on the H200 host). MD and the ``=``/``X`` CIGAR are computed
from the packed reference (``pack_2bit`` layout, N runs) while writing, so no
per-hit mismatch list is built. Each row depends only on its own inputs: the
text is the same for any thread count. :mod:`gseek.output.sam` documents the fields;
``tests/reference_sam.py`` is the slow reference it must equal byte for byte.
"""

from __future__ import annotations

import threading

import numba
import numpy as np

from gseek import ragged
from gseek.kernels._jit import njit

from ._text import _byte, _bytes2, _copy, _int

_TAB, _NL, _STAR, _COLON, _COMMA, _SEMI = 9, 10, 42, 58, 44, 59
_PLUS, _MINUS, _ZERO, _EQ = 43, 45, 48, 61
_M, _X = 77, 88
#: SAM FLAG bits written here.
FLAG_UNMAPPED, FLAG_REVERSE, FLAG_SECONDARY = 4, 16, 256


# Tag letters as typed values: a literal argument would compile one specialisation per tag.
_C_N, _C_M, _C_X, _C_Z, _C_H, _C_0, _C_1 = (np.int64(ord(c)) for c in "NMXZH01")


@njit(cache=True, nogil=True, error_model="numpy")
def _tag_int(out, p, c1, c2, value, write):
    """``\\tXY:i:value``."""
    p = _byte(out, p, _TAB, write)
    p = _bytes2(out, p, c1, c2, write)
    p = _bytes2(out, p, _COLON, 105, write)  # ':i'
    p = _byte(out, p, _COLON, write)
    return _int(out, p, value, write)


@njit(cache=True, nogil=True, error_model="numpy")
def _mismatch_mask(codes, complement, a, b, rev, text, amb_start, amb_end, g0, t0, n):
    """Bit ``t - t0`` set where base ``t`` (``t0 <= t < t0 + n <= t0 + 64``) of read
    ``codes[a:b]``, as aligned to the forward reference at text position ``g0``,
    is a mismatch: different bases, or an N on either side. Branch-free loops
    (one per strand) that LLVM vectorises; the reference N come from its runs
    ``[amb_start, amb_end)`` (sorted, a handful: a binary search, where an N
    mask as large as the text would cost a cache miss a record); the callers
    emit text from the bits."""
    m = np.uint64(0)
    if rev:
        for t in range(t0, t0 + n):
            g = g0 + t
            r = (np.int64(text[g >> 4]) >> (30 - 2 * (g & 15))) & 3
            q = np.int64(complement[codes[b - 1 - t]])
            m |= np.uint64((q != r) | (q == 4)) << np.uint64(t - t0)
    else:
        for t in range(t0, t0 + n):
            g = g0 + t
            r = (np.int64(text[g >> 4]) >> (30 - 2 * (g & 15))) & 3
            q = np.int64(codes[a + t])
            m |= np.uint64((q != r) | (q == 4)) << np.uint64(t - t0)
    lo = g0 + t0
    i = np.searchsorted(amb_end, lo, side="right")  # first run ending after lo
    while i < amb_start.size and amb_start[i] < lo + n:
        s, e = max(amb_start[i], lo), min(amb_end[i], lo + n)
        run = np.uint64(0xFFFFFFFFFFFFFFFF) if e - s == 64 else (np.uint64(1) << np.uint64(e - s)) - np.uint64(1)
        m |= run << np.uint64(s - lo)
        i += 1
    return m


@njit(cache=True, nogil=True, error_model="numpy")
def _ref_base(text, amb_start, amb_end, g):
    """Code (0..3, 4 = N) of text position ``g`` of the packed reference."""
    i = np.searchsorted(amb_end, g, side="right")
    if i < amb_start.size and amb_start[i] <= g:
        return 4
    return (np.int64(text[g >> 4]) >> (30 - 2 * (g & 15))) & 3


#: Lowest set bit of a 64-bit word by a de Bruijn multiply: ``_DB_INDEX[(low * _DEBRUIJN) >> 58]``
#: is the index of ``low``, a single bit.
_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
_DB_INDEX = np.zeros(64, dtype=np.int64)
for _i in range(64):
    _DB_INDEX[((1 << _i) * 0x03F79D71B4CB0A89 & 0xFFFFFFFFFFFFFFFF) >> 58] = _i


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _low_bit(m):
    """(index, value) of the lowest set bit of ``m`` (not 0)."""
    low = m & (~m + np.uint64(1))
    return _DB_INDEX[(low * _DEBRUIJN) >> np.uint64(58)], low


@njit(cache=True, nogil=True, error_model="numpy")
def _eq_x(out, p, last, xs, xe, write):
    """``=`` for the bases ``last:xs`` (none: nothing), then ``X`` for ``xs:xe``."""
    if xs > last:
        p = _int(out, p, xs - last, write)
        p = _byte(out, p, _EQ, write)
    p = _int(out, p, xe - xs, write)
    return _byte(out, p, _X, write)


@njit(cache=True, nogil=True, error_model="numpy")
def _cigar_eq(out, p, codes, complement, a, b, rev, text, amb_start, amb_end, g0, nm, write):
    """``=``/``X`` runs of the ungapped alignment of read ``codes[a:b]`` at text
    position ``g0``, which has ``nm`` mismatches (the verified count: the scan
    stops at the last one; none: one ``=`` run without reading the reference)."""
    length = b - a
    last = np.int64(0)  # bases written so far (typed: no call specialised on a literal 0)
    xs, xe = np.int64(0), np.int64(0)  # the X run being grown, [xs, xe)
    left = nm
    for t0 in range(0, length, 64):
        if left <= 0:
            break
        m = _mismatch_mask(codes, complement, a, b, rev, text, amb_start, amb_end, g0, t0, min(64, length - t0))
        while m != 0:
            bit, low = _low_bit(m)
            t = t0 + bit
            if t != xe or xe == 0:
                if xe > xs:
                    p = _eq_x(out, p, last, xs, xe, write)
                    last = xe
                xs = t
            xe = t + 1
            m ^= low
            left -= 1
    if xe > xs:
        p = _eq_x(out, p, last, xs, xe, write)
        last = xe
    if length > last:
        p = _int(out, p, length - last, write)
        p = _byte(out, p, _EQ, write)
    return p


@njit(cache=True, nogil=True, error_model="numpy")
def _md(out, p, codes, complement, letters, a, b, rev, text, amb_start, amb_end, g0, nm, write):
    """MD:Z value: matched run lengths and the reference letter at each mismatch;
    ``nm`` as :func:`_cigar_eq`."""
    length = b - a
    last = 0
    left = nm
    for t0 in range(0, length, 64):
        if left <= 0:
            break
        m = _mismatch_mask(codes, complement, a, b, rev, text, amb_start, amb_end, g0, t0, min(64, length - t0))
        while m != 0:
            bit, low = _low_bit(m)
            t = t0 + bit
            p = _int(out, p, t - last, write)
            p = _byte(out, p, letters[_ref_base(text, amb_start, amb_end, g0 + t)], write)
            last = t + 1
            m ^= low
            left -= 1
    return _int(out, p, length - last, write)


@njit(cache=True, nogil=True, error_model="numpy")
def _seq(out, p, codes, complement, letters, a, b, rev, write):
    """SEQ: the read, reverse-complemented for the reverse strand; ``*`` when empty."""
    if a == b:
        return _byte(out, p, _STAR, write)
    if write:
        if rev:
            for t in range(b - a):
                out[p + t] = letters[complement[codes[b - 1 - t]]]
        else:
            for t in range(b - a):
                out[p + t] = letters[codes[a + t]]
    return p + (b - a)


@njit(cache=True, nogil=True, error_model="numpy")
def _qual(out, p, quals, has_qual, a, b, rev, write):
    """QUAL: reversed for the reverse strand; ``*`` for FASTA input or an empty read."""
    if not has_qual or a == b:
        return _byte(out, p, _STAR, write)
    if write:
        if rev:
            for t in range(b - a):
                out[p + t] = quals[b - 1 - t]
        else:
            for t in range(b - a):
                out[p + t] = quals[a + t]
    return p + (b - a)


@njit(cache=True, nogil=True, error_model="numpy")
def _row(i, names, name_off, codes, seq_off, quals, has_qual, letters, complement,
         hit_off, extra, extra_off, no_unal,
         contig, pos, strand, mismatches, secondary,
         best, n_best, n_second, n_found, mapq, capped,
         alt_off, alt_contig, alt_pos, alt_strand, alt_mismatches,
         cnames, cname_off, contig_start, text, amb_start, amb_end, cigar_eq,
         out, p, write):
    """Lines of read ``i`` at ``p``; returns (end, records)."""
    a, b = seq_off[i], seq_off[i + 1]
    if hit_off[i] == hit_off[i + 1]:
        if no_unal:
            return p, 0
        p = _copy(out, p, names, name_off[i], name_off[i + 1], write)
        p = _byte(out, p, _TAB, write)
        p = _int(out, p, np.int64(FLAG_UNMAPPED), write)
        for c in (_TAB, _STAR, _TAB, _ZERO, _TAB, _ZERO, _TAB, _STAR, _TAB, _STAR, _TAB, _ZERO, _TAB, _ZERO,
                  _TAB):  # "\t*\t0\t0\t*\t*\t0\t0\t"
            p = _byte(out, p, c, write)
        p = _seq(out, p, codes, complement, letters, a, b, False, write)
        p = _byte(out, p, _TAB, write)
        p = _qual(out, p, quals, has_qual, a, b, False, write)
        p = _copy(out, p, extra, extra_off[i], extra_off[i + 1], write)
        p = _byte(out, p, _NL, write)
        return p, 1
    length = b - a
    for j in range(hit_off[i], hit_off[i + 1]):
        rev = strand[j] < 0
        sec = secondary[j] != 0
        g0 = contig_start[contig[j]] + pos[j]
        p = _copy(out, p, names, name_off[i], name_off[i + 1], write)
        p = _byte(out, p, _TAB, write)
        p = _int(out, p, (FLAG_REVERSE if rev else 0) | (FLAG_SECONDARY if sec else 0), write)
        p = _byte(out, p, _TAB, write)
        p = _copy(out, p, cnames, cname_off[contig[j]], cname_off[contig[j] + 1], write)
        p = _byte(out, p, _TAB, write)
        p = _int(out, p, pos[j] + 1, write)
        p = _byte(out, p, _TAB, write)
        p = _int(out, p, mapq[i] if (not sec or mismatches[j] == best[i]) else 0, write)
        p = _byte(out, p, _TAB, write)
        if cigar_eq:
            p = _cigar_eq(out, p, codes, complement, a, b, rev, text, amb_start, amb_end, g0, mismatches[j], write)
        else:
            p = _int(out, p, length, write)
            p = _byte(out, p, _M, write)
        for c in (_TAB, _STAR, _TAB, _ZERO, _TAB, _ZERO, _TAB):  # "\t*\t0\t0\t"
            p = _byte(out, p, c, write)
        p = _seq(out, p, codes, complement, letters, a, b, rev, write)
        p = _byte(out, p, _TAB, write)
        p = _qual(out, p, quals, has_qual, a, b, rev, write)
        p = _tag_int(out, p, _C_N, _C_M, mismatches[j], write)  # NM
        p = _byte(out, p, _TAB, write)
        for c in (77, 68, _COLON, 90, _COLON):  # "MD:Z:"
            p = _byte(out, p, c, write)
        p = _md(out, p, codes, complement, letters, a, b, rev, text, amb_start, amb_end, g0, mismatches[j], write)
        p = _tag_int(out, p, _C_X, _C_0, n_best[i], write)  # X0
        p = _tag_int(out, p, _C_X, _C_1, n_second[i], write)  # X1
        if not sec and alt_off[i + 1] > alt_off[i]:
            for c in (_TAB, 88, 65, _COLON, 90, _COLON):  # "\tXA:Z:"
                p = _byte(out, p, c, write)
            for x in range(alt_off[i], alt_off[i + 1]):
                c = alt_contig[x]
                p = _copy(out, p, cnames, cname_off[c], cname_off[c + 1], write)
                p = _byte(out, p, _COMMA, write)
                p = _byte(out, p, _PLUS if alt_strand[x] > 0 else _MINUS, write)
                p = _int(out, p, alt_pos[x] + 1, write)
                p = _byte(out, p, _COMMA, write)
                p = _int(out, p, length, write)
                p = _bytes2(out, p, _M, _COMMA, write)
                p = _int(out, p, alt_mismatches[x], write)
                p = _byte(out, p, _SEMI, write)
        if capped[i]:
            p = _tag_int(out, p, _C_Z, _C_H, n_found[i], write)  # ZH
        p = _byte(out, p, _NL, write)
    return p, hit_off[i + 1] - hit_off[i]


#: Upper bound of one mapped record's bytes besides the name, contig name, SEQ,
#: QUAL, CIGAR, MD and XA: 11 tabs, ``*``, ``0``, ``0``, FLAG (3), POS (20), MAPQ
#: (3), NM, X0, X1, ZH tags (6 + 20 each), ``\tMD:Z:`` and the newline.
_FIXED_BOUND = 14 + 3 + 20 + 3 + 4 * 26 + 6 + 1
#: Bytes of one XA entry besides its contig name: ``,`` strand POS ``,`` LEN ``M,`` NM ``;``.
_XA_BOUND = 1 + 1 + 20 + 1 + 20 + 2 + 20 + 1


@njit(cache=True, nogil=True, error_model="numpy")
def _row_bound(i, name_off, seq_off, hit_off, extra_off, contig, cname_off, alt_off, alt_contig, cigar_eq):
    """At least the bytes :func:`_row` writes for read ``i`` (cheap: lengths only)."""
    length = seq_off[i + 1] - seq_off[i]
    name = name_off[i + 1] - name_off[i]
    if hit_off[i] == hit_off[i + 1]:
        return name + 2 * max(length, 1) + (extra_off[i + 1] - extra_off[i]) + 24
    cigar = 2 * length + 2 if cigar_eq else 21  # =/X runs: digits(n) <= n, so <= 2 bytes a base
    md = 3 * length + 21  # numbers and letters: <= 3 bytes a base
    total = 0
    for j in range(hit_off[i], hit_off[i + 1]):
        c = contig[j]
        total += name + (cname_off[c + 1] - cname_off[c]) + 2 * length + cigar + md + _FIXED_BOUND
    xa = 7
    for x in range(alt_off[i], alt_off[i + 1]):
        c = alt_contig[x]
        xa += cname_off[c + 1] - cname_off[c] + _XA_BOUND
    return total + xa


@njit(parallel=True, cache=True, nogil=True, error_model="numpy")
def record_bounds(rows, name_off, seq_off, hit_off, extra_off, contig, cname_off, alt_off, alt_contig, cigar_eq,
                  bounds):
    """Pass 1 (cheap): an upper bound of every row's bytes."""
    for r in numba.prange(rows.size):
        bounds[r] = _row_bound(rows[r], name_off, seq_off, hit_off, extra_off, contig, cname_off, alt_off,
                               alt_contig, cigar_eq)


@njit(parallel=True, cache=True, nogil=True, error_model="numpy")
def record_fill(rows, names, name_off, codes, seq_off, quals, has_qual, letters, complement,
                hit_off, extra, extra_off, no_unal,
                contig, pos, strand, mismatches, secondary,
                best, n_best, n_second, n_found, mapq, capped,
                alt_off, alt_contig, alt_pos, alt_strand, alt_mismatches,
                cnames, cname_off, contig_start, text, amb_start, amb_end, cigar_eq,
                starts, scratch, sizes, records):
    """Pass 2: every row's text at ``starts[r]`` of ``scratch`` (its bound apart),
    its bytes in ``sizes`` and records in ``records``."""
    for r in numba.prange(rows.size):
        end, n = _row(rows[r], names, name_off, codes, seq_off, quals, has_qual, letters, complement,
                      hit_off, extra, extra_off, no_unal,
                      contig, pos, strand, mismatches, secondary,
                      best, n_best, n_second, n_found, mapq, capped,
                      alt_off, alt_contig, alt_pos, alt_strand, alt_mismatches,
                      cnames, cname_off, contig_start, text, amb_start, amb_end, cigar_eq,
                      scratch, starts[r], True)
        sizes[r] = end - starts[r]
        records[r] = n


@njit(parallel=True, cache=True, nogil=True, error_model="numpy")
def record_compact(scratch, starts, out_starts, out):
    """Pass 3: the rows side by side (``out_starts``: prefix sum of their sizes)."""
    for r in numba.prange(out_starts.size - 1):
        a = starts[r]
        b = out_starts[r]
        n = out_starts[r + 1] - b
        out[b : b + n] = scratch[a : a + n]


class BufferPool:
    """Byte buffers handed back after use, so that formatting a batch does not
    fault in fresh pages (on the H200 host, filling fresh memory ran at
    ~2.7 GB/s over 16 threads: the page faults, not the formatting).

    ``get(n)`` returns a ``uint8`` array of ``n`` bytes (a view of a pooled
    buffer or a new one); ``put(view)`` gives its buffer back. Thread-safe;
    keeps at most ``keep`` buffers.
    """

    def __init__(self, keep: int = 8) -> None:
        self.keep = int(keep)
        self._free: list[np.ndarray] = []
        self._lock = threading.Lock()

    def get(self, n: int) -> np.ndarray:
        with self._lock:
            fits = [i for i, b in enumerate(self._free) if b.size >= n]
            if fits:
                i = min(fits, key=lambda i: self._free[i].size)
                return self._free.pop(i)[:n]
        return np.empty(max(n, 1) + (n >> 3), dtype=np.uint8)[:n]  # room to grow

    def put(self, view: np.ndarray) -> None:
        buf = view if view.base is None else view.base
        if not isinstance(buf, np.ndarray) or buf.dtype != np.uint8 or buf.ndim != 1:
            return
        with self._lock:
            if len(self._free) < self.keep and not any(b is buf for b in self._free):
                self._free.append(buf)


def _read_only(x):
    """A read-only view of an array (anything else as it is)."""
    if isinstance(x, np.ndarray) and x.flags.writeable:
        x = x.view()
        x.flags.writeable = False
    return x


#: Scratch buffers of :func:`format_records`, shared by its callers' threads.
_SCRATCH = BufferPool(keep=16)


_E64 = np.zeros(0, dtype=np.int64)
_EU8 = np.zeros(0, dtype=np.uint8)
_EU32 = np.zeros(0, dtype=np.uint32)
# The empty defaults have the dtypes a mapped batch's arrays have (MappingResult), so that
# unmapped-only text and mapped text share one compiled formatter (one specialisation
# of record_fill is ~11 s of a cold start on the 2-core VM).
_E32 = np.zeros(0, dtype=np.int32)
_EI16 = np.zeros(0, dtype=np.int16)
_EI8 = np.zeros(0, dtype=np.int8)
_EB = np.zeros(0, dtype=bool)


def format_records(rows, *, names, name_off, codes, seq_off, quals, letters, complement, hit_off,
                   extra=None, extra_off=None, no_unal=False,
                   contig=_E32, pos=_E64, strand=_EI8, mismatches=_EI16, secondary=_EB,
                   best=_EI16, n_best=_E64, n_second=_E64, n_found=_E64, mapq=_EU8, capped=_EB,
                   alt_off=None, alt_contig=_E32, alt_pos=_E64, alt_strand=_EI8, alt_mismatches=_EI16,
                   cnames=_EU8, cname_off=_E64, contig_start=_E64, text=_EU32, amb_start=_E64, amb_end=_E64,
                   cigar_eq=False, threads=None, pool=None) -> tuple[np.ndarray, int]:
    """SAM text (``uint8``) of the reads ``rows``, in that order, and the number of records in it.

    Per read ``i``: ``names[name_off[i]:name_off[i+1]]`` (bytes),
    ``codes``/``quals[seq_off[i]:seq_off[i+1]]`` (``quals`` None for FASTA),
    hits ``hit_off[i]:hit_off[i+1]`` (none: an unmapped record, skipped with
    ``no_unal``, ending in ``extra[extra_off[i]:extra_off[i+1]]``), XA
    entries ``alt_off[i]:alt_off[i+1]``. Per-hit and per-read numbers are
    integer arrays; ``mismatches`` must be each hit's true mismatch count
    (its NM): MD and the ``=``/``X`` CIGAR stop at the last mismatch, and
    read no reference for a hit without one. The reference is the packed
    text, its N runs ``[amb_start, amb_end)`` (sorted) and the contig starts
    ``contig_start``. ``threads`` sets Numba's thread count (None: leave it).
    ``pool``: a :class:`BufferPool` the returned text comes from (give it back
    with ``pool.put`` once written).
    """
    n = seq_off.size - 1
    as64 = lambda a: np.ascontiguousarray(a, dtype=np.int64)  # noqa: E731
    # integer (or bool) arrays of any width as they come, not copied to int64 each
    # batch (one compiled specialisation per set of dtypes, cached)
    native = lambda a: np.ascontiguousarray(a) if np.asarray(a).dtype.kind in "iub" else as64(a)  # noqa: E731
    extra = _EU8 if extra is None else extra
    extra_off = np.zeros(n + 1, dtype=np.int64) if extra_off is None else as64(extra_off)
    alt_off = np.zeros(n + 1, dtype=np.int64) if alt_off is None else as64(alt_off)
    has_qual = quals is not None
    args = (np.ascontiguousarray(names, dtype=np.uint8), as64(name_off), np.ascontiguousarray(codes, dtype=np.uint8),
            as64(seq_off), np.ascontiguousarray(quals, dtype=np.uint8) if has_qual else _EU8, has_qual,
            np.ascontiguousarray(letters, dtype=np.uint8), np.ascontiguousarray(complement, dtype=np.uint8),
            as64(hit_off), np.ascontiguousarray(extra, dtype=np.uint8), extra_off, bool(no_unal),
            *map(native, (contig, pos, strand, mismatches, secondary, best, n_best, n_second, n_found, mapq,
                          capped)),
            alt_off, *map(native, (alt_contig, alt_pos, alt_strand, alt_mismatches)),
            np.ascontiguousarray(cnames, dtype=np.uint8), as64(cname_off), as64(contig_start),
            np.ascontiguousarray(text, dtype=np.uint32), as64(amb_start), as64(amb_end), bool(cigar_eq))
    # every input as a read-only view: Numba compiles read-only and writable arrays
    # separately, and the inputs come both ways (index parts, frombuffer, fresh arrays)
    args = tuple(_read_only(x) for x in args)
    if threads is not None:
        numba.set_num_threads(threads)
    rows = _read_only(as64(rows))
    bounds = np.empty(rows.size, dtype=np.int64)
    a = dict(zip(("names", "name_off", "codes", "seq_off", "quals", "has_qual", "letters", "complement", "hit_off",
                  "extra", "extra_off", "no_unal", "contig", "pos", "strand", "mismatches", "secondary", "best",
                  "n_best", "n_second", "n_found", "mapq", "capped", "alt_off", "alt_contig", "alt_pos", "alt_strand",
                  "alt_mismatches", "cnames", "cname_off", "contig_start", "text", "amb_start", "amb_end", "cigar_eq"),
                 args))
    record_bounds(rows, a["name_off"], a["seq_off"], a["hit_off"], a["extra_off"], a["contig"], a["cname_off"],
                  a["alt_off"], a["alt_contig"], a["cigar_eq"], bounds)
    starts = ragged.offsets(bounds)
    scratch = _SCRATCH.get(int(starts[-1]))
    sizes = np.empty(rows.size, dtype=np.int64)
    records = np.empty(rows.size, dtype=np.int64)
    record_fill(rows, *args, starts, scratch, sizes, records)
    if (sizes > bounds).any():
        raise RuntimeError("SAM formatter: a record outgrew its size bound (a bug)")
    out_starts = ragged.offsets(sizes)
    out = np.empty(int(out_starts[-1]), dtype=np.uint8) if pool is None else pool.get(int(out_starts[-1]))
    record_compact(scratch, starts, out_starts, out)
    _SCRATCH.put(scratch)
    return out, int(records.sum())

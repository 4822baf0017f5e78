"""Numba twins of ``kernels/fmindex.cu``: FM-index Occ, backward search, locate.

Same kernel names, same argument order as the CUDA file. The layouts they
read are described in ``docs/index-format.md`` and built by
:mod:`gseek.index.build`; in short:

* ``occ``: blocks of 16 ``uint32`` words (64 bytes, one aligned fetch). With
  32-bit positions a block is 4 counts (A, C, G, T before the block, dollar
  rows excluded) + 12 words = 192 BWT bases; with 64-bit positions it is 4
  counts as (low, high) word pairs + 8 words = 128 bases. Bases are 2-bit,
  16 a word, first base in the high bits (``gseek.encode.pack_2bit``); a
  dollar row (BWT character = separator) holds an A as placeholder.
* ``dollar_rows``: the sorted rows whose BWT character is the separator, then
  the sentinel ``n``. The LF of a dollar row is its rank in this array.
* ``sa_mark``: blocks of 16 ``uint32`` words: the number of marked rows before
  the block (1 word, or 2 as a (low, high) pair), then 480 (448) row bits,
  row ``j`` of a word in bit ``j``. A row is marked when its suffix-array
  value is a multiple of the sampling rate; ``sa_samples`` holds those values
  in row order.
* Position arrays (``dollar_rows``, ``sa_samples``, ``wgram``) are passed as
  ``uint32`` views: 1 word per value with 32-bit positions, 2 (low, high)
  with 64-bit (``wide = 1``).

Every output element is computed independently, so results do not depend on
the thread count.
"""

from __future__ import annotations

import numba
import numpy as np

from gseek.kernels._jit import njit
from gseek.kernels.seqpack import _record_of  # shared Numba helper: record holding position i

CUDA_SOURCE = "fmindex.cu"

#: uint32 words per Occ / mark block (64 bytes: one aligned fetch).
BLOCK_WORDS = 16
#: BWT rows per Occ block with 32-bit counts (12 words x 16 bases).
OCC_INTERVAL_32 = 192
#: BWT rows per Occ block with 64-bit counts (8 words x 16 bases).
OCC_INTERVAL_64 = 128
#: Rows per mark block with a 32-bit rank (15 words x 32 bits).
MARK_ROWS_32 = 480
#: Rows per mark block with a 64-bit rank (14 words x 32 bits).
MARK_ROWS_64 = 448
#: Largest w-gram length (a w-mer code must fit in 32 bits with room to spare).
WGRAM_MAX = 15

CONSTANTS: dict[str, int] = {
    "BLOCK_WORDS": BLOCK_WORDS,
    "OCC_INTERVAL_32": OCC_INTERVAL_32,
    "OCC_INTERVAL_64": OCC_INTERVAL_64,
    "MARK_ROWS_32": MARK_ROWS_32,
    "MARK_ROWS_64": MARK_ROWS_64,
}


# --------------------------------------------------------------------------- helpers


@njit(cache=True, inline="always")
def _popcount32(x):
    x = x - ((x >> 1) & 0x55555555)
    x = (x & 0x33333333) + ((x >> 2) & 0x33333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F
    return ((x * 0x01010101) & 0xFFFFFFFF) >> 24


@njit(cache=True, inline="always")
def _pos(words, k, wide):
    """Value ``k`` of a position array seen as uint32 words."""
    if wide:
        return np.int64(words[2 * k]) | (np.int64(words[2 * k + 1]) << 32)
    return np.int64(words[k])


@njit(cache=True, inline="always")
def _match(word, c):
    """Low bit of every 2-bit slot of ``word`` that holds base ``c``."""
    x = np.int64(word) ^ (np.int64(c) * 0x55555555)
    return ~(x | (x >> 1)) & 0x55555555


@njit(cache=True, inline="always")
def _block_count(occ, base, c, wide):
    if wide:
        return np.int64(occ[base + 2 * c]) | (np.int64(occ[base + 2 * c + 1]) << 32)
    return np.int64(occ[base + c])


@njit(cache=True, inline="always")
def _dollars_before_block(occ, base, b, wide):
    interval = OCC_INTERVAL_64 if wide else OCC_INTERVAL_32
    counted = (
        _block_count(occ, base, 0, wide)
        + _block_count(occ, base, 1, wide)
        + _block_count(occ, base, 2, wide)
        + _block_count(occ, base, 3, wide)
    )
    return b * interval - counted


@njit(cache=True, inline="always")
def _occ(occ, dollar_rows, wide, c, i):
    """Occ(c, i): occurrences of base ``c`` in BWT rows [0, i), dollar rows excluded."""
    interval = OCC_INTERVAL_64 if wide else OCC_INTERVAL_32
    header = 8 if wide else 4
    b = i // interval
    base = b * BLOCK_WORDS
    r = i - b * interval
    n = _block_count(occ, base, c, wide)
    full = r >> 4
    for j in range(full):
        n += _popcount32(_match(occ[base + header + j], c))
    rem = r & 15
    if rem:
        keep = (0xFFFFFFFF << (32 - 2 * rem)) & 0xFFFFFFFF
        n += _popcount32(_match(occ[base + header + full], c) & keep)
    if c == 0:  # dollar rows hold an A placeholder: take back those in [block start, i)
        d = _dollars_before_block(occ, base, b, wide)
        while _pos(dollar_rows, d, wide) < i:
            n -= 1
            d += 1
    return n


@njit(cache=True, inline="always")
def _lf(occ, dollar_rows, C, wide, i):
    """LF(i): the row of the suffix one text position before row i's suffix."""
    interval = OCC_INTERVAL_64 if wide else OCC_INTERVAL_32
    header = 8 if wide else 4
    b = i // interval
    base = b * BLOCK_WORDS
    r = i - b * interval
    word = np.int64(occ[base + header + (r >> 4)])
    c = (word >> (30 - 2 * (r & 15))) & 3
    if c == 0:
        d = _dollars_before_block(occ, base, b, wide)
        while _pos(dollar_rows, d, wide) < i:
            d += 1
        if _pos(dollar_rows, d, wide) == i:
            return d  # a dollar row maps to its rank among dollar rows
    return C[c] + _occ(occ, dollar_rows, wide, c, i)


@njit(cache=True, inline="always")
def _sa_value(occ, dollar_rows, C, sa_mark, sa_samples, wide, i):
    """SA[i]: walk LF until a marked row, then its sample plus the steps walked."""
    rows = MARK_ROWS_64 if wide else MARK_ROWS_32
    header = 2 if wide else 1
    steps = 0
    while True:
        b = i // rows
        base = b * BLOCK_WORDS
        r = i - b * rows
        word = np.int64(sa_mark[base + header + (r >> 5)])
        bit = r & 31
        if (word >> bit) & 1:
            rank = np.int64(sa_mark[base])
            if wide:
                rank |= np.int64(sa_mark[base + 1]) << 32
            for j in range(r >> 5):
                rank += _popcount32(np.int64(sa_mark[base + header + j]))
            rank += _popcount32(word & ((np.int64(1) << bit) - 1))
            return _pos(sa_samples, rank, wide) + steps
        i = _lf(occ, dollar_rows, C, wide, i)
        steps += 1


# --------------------------------------------------------------------------- kernels


@njit(parallel=True, cache=True)
def occ_at(occ, dollar_rows, wide, rows, n_rows, out):
    """out[4k + c] = Occ(c, rows[k]) for c = A, C, G, T."""
    for k in numba.prange(n_rows):
        i = np.int64(rows[k])
        for c in range(4):
            out[4 * k + c] = _occ(occ, dollar_rows, wide, c, i)


@njit(parallel=True, cache=True)
def backward_search(occ, dollar_rows, C, wgram, w, wide, codes, offsets, n_patterns, lo_out, hi_out):
    """SA interval [lo, hi) of every pattern; [0, 0) when it does not occur,
    is empty or holds an N. Starts from the w-gram table when w > 0 and the
    pattern has at least w bases."""
    for p in numba.prange(n_patterns):
        start = offsets[p]
        end = offsets[p + 1]
        lo = np.int64(0)
        hi = np.int64(0)
        ok = end > start
        for j in range(start, end):
            if codes[j] > 3:
                ok = False
        if ok:
            if w > 0 and end - start >= w:
                code = np.int64(0)
                for j in range(end - w, end):
                    code = code * 4 + codes[j]
                lo = _pos(wgram, 2 * code, wide)
                hi = _pos(wgram, 2 * code + 1, wide)
                j = end - w - 1
            else:
                c = np.int64(codes[end - 1])
                lo = C[c]
                hi = C[c + 1]
                j = end - 2
            while j >= start and lo < hi:
                c = np.int64(codes[j])
                lo = C[c] + _occ(occ, dollar_rows, wide, c, lo)
                hi = C[c] + _occ(occ, dollar_rows, wide, c, hi)
                j -= 1
        if lo >= hi:
            lo = 0
            hi = 0
        lo_out[p] = lo
        hi_out[p] = hi


@njit(parallel=True, cache=True)
def extend_intervals(occ, dollar_rows, C, wide, lo, hi, n, out_lo, out_hi):
    """One backward-search step for every interval and every base: out[c * n + x]
    is the interval of base c followed by the string of interval x
    ([0, 0) when empty). From [0, text length) this enumerates all w-mers."""
    for x in numba.prange(n):
        a = lo[x]
        b = hi[x]
        for c in range(4):
            new_lo = np.int64(0)
            new_hi = np.int64(0)
            if a < b:
                new_lo = C[c] + _occ(occ, dollar_rows, wide, c, a)
                new_hi = C[c] + _occ(occ, dollar_rows, wide, c, b)
            if new_lo >= new_hi:
                new_lo = 0
                new_hi = 0
            out_lo[c * n + x] = new_lo
            out_hi[c * n + x] = new_hi


@njit(parallel=True, cache=True)
def sa_at(occ, dollar_rows, C, sa_mark, sa_samples, wide, rows, n_rows, out):
    """out[k] = SA[rows[k]], a text position (separators included)."""
    for k in numba.prange(n_rows):
        out[k] = _sa_value(occ, dollar_rows, C, sa_mark, sa_samples, wide, np.int64(rows[k]))


@njit(parallel=True, cache=True)
def locate_fill(
    occ, dollar_rows, C, sa_mark, sa_samples, wide, lo, starts, n_patterns, total, out_pattern, out_text_pos
):
    """Occurrence j (0 <= j < total) of the concatenated intervals: the pattern
    p with starts[p] <= j < starts[p + 1] and the text position of row
    lo[p] + j - starts[p]. ``starts`` is the exclusive prefix sum of the
    interval sizes (n_patterns + 1 entries)."""
    for j in numba.prange(total):
        p = _record_of(starts, n_patterns, j)
        row = lo[p] + j - starts[p]
        out_pattern[j] = p
        out_text_pos[j] = _sa_value(occ, dollar_rows, C, sa_mark, sa_samples, wide, row)


@njit(parallel=True, cache=True)
def text_to_contig(
    seg_text_start, seg_ref_start, seg_contig, n_segments, contig_offsets, text_pos, n, out_contig, out_pos
):
    """Text position -> (contig, 0-based position in the contig) through the
    segment table (seg_text_start has a sentinel entry at n_segments)."""
    for j in numba.prange(n):
        t = text_pos[j]
        k = _record_of(seg_text_start, n_segments, t)
        contig = seg_contig[k]
        out_contig[j] = contig
        out_pos[j] = seg_ref_start[k] + (t - seg_text_start[k]) - contig_offsets[contig]

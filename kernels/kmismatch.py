"""Numba twins of ``kernels/kmismatch.cu``: piece search with mismatches, Hamming verification.

Same kernel names, same argument order as the CUDA file. The mapper
(:mod:`gseek.mapper`) cuts every strand of every read into *pieces* (the
pigeonhole seeds) and gives each piece a mismatch *budget* (0 for an exact
piece). These kernels are the two steps that are not plain FM-index search:

* ``dfs_count`` / ``dfs_fill``: backtracking backward search of a piece with
  at most ``budget`` mismatches (SOAP3/Bowtie style): every string within
  ``budget`` substitutions of the piece that occurs in the text gives one SA
  interval, in a fixed order (depth first, bases A < C < G < T). An N in the
  piece costs one mismatch whatever the base. Count, then (after an exclusive
  prefix sum of the counts) fill: the same walk twice, so no buffer overflows
  and every output slot is written by one thread.
* ``verify``: one candidate placement a thread. Hamming distance of the read
  (2-bit words + N mask, one word-aligned row per strand read) against the
  2-bit reference text at any base offset (two words and a funnel shift per
  16 bases), with the reference N mask: ``d = (read ^ ref) | read_n | ref_n``,
  mismatches = ``popcount((d | d >> 1) & 0x55555555)``. Windows must lie
  inside one contig. The *first finder* rule keeps each placement exactly
  once without a sort: a candidate found through piece ``i`` survives only
  if no earlier piece ``j < i`` of the same strand read would have found the
  same placement (``mismatches(j) <= budget(j)``). In approximate mode a
  window holding a reference N belongs to the candidates from the flank
  text (``cand_piece = -1 - i``; the mapper's flank index reads N as a
  base, so a piece may be found there with more real mismatches than its
  budget): such a candidate survives only if the window holds a reference N
  and ``i`` is the first piece with ``mismatches(i) <= budget(i)``, and a
  candidate from the reference index survives only if it holds none.

Every output element is computed independently, so results do not depend on
the thread count or launch geometry.
"""

from __future__ import annotations

import numba
import numpy as np

from gseek.kernels import fmindex
from gseek.kernels._jit import njit
from gseek.kernels.fmindex import _occ, _popcount32

CUDA_SOURCE = "kmismatch.cu"

#: Deepest backtracking search (longest piece searched with a budget > 0).
MAX_DFS_DEPTH = 64
#: Largest mismatch budget of a whole read.
MAX_MISMATCHES = 8

#: The FM-index layout constants (for kernels/fm_occ.cuh) plus this family's own.
CONSTANTS: dict[str, int] = {**fmindex.CONSTANTS, "MAX_DFS_DEPTH": MAX_DFS_DEPTH}

_LOW_BITS = 0x55555555
_ALL = 0xFFFFFFFF


# --------------------------------------------------------------------------- helpers


@njit(cache=True, inline="always")
def _dfs(occ, dollar_rows, C, wide, codes, start, end, budget, fill, slot, out_lo, out_hi, out_piece, piece,
         lo_s, hi_s, mm_s, next_s):
    """Depth-first backtracking backward search of codes[start:end] with at most
    ``budget`` mismatches; returns the number of intervals (and writes them
    from ``slot`` on when ``fill``)."""
    m = end - start
    count = 0
    lo_s[0] = 0
    hi_s[0] = C[4]
    mm_s[0] = 0
    next_s[0] = 0
    depth = 0
    while depth >= 0:
        if depth == m:
            if fill:
                out_lo[slot + count] = lo_s[depth]
                out_hi[slot + count] = hi_s[depth]
                out_piece[slot + count] = piece
            count += 1
            depth -= 1
            continue
        b = next_s[depth]
        if b == 4:
            depth -= 1
            continue
        next_s[depth] = b + 1
        r = codes[end - 1 - depth]
        cost = mm_s[depth] + (1 if b != r else 0)
        if cost > budget:
            continue
        new_lo = C[b] + _occ(occ, dollar_rows, wide, b, lo_s[depth])
        new_hi = C[b] + _occ(occ, dollar_rows, wide, b, hi_s[depth])
        if new_lo >= new_hi:
            continue
        depth += 1
        lo_s[depth] = new_lo
        hi_s[depth] = new_hi
        mm_s[depth] = cost
        next_s[depth] = 0
    return count


@njit(cache=True, inline="always")
def _ref_word(words, n_words, g):
    """The 16 text slots starting at base ``g`` (words past the end read as 0)."""
    q = g >> 4
    s = g & 15
    a = np.int64(words[q]) if q < n_words else np.int64(0)
    if s == 0:
        return a
    b = np.int64(words[q + 1]) if q + 1 < n_words else np.int64(0)
    return ((a << (2 * s)) | (b >> (32 - 2 * s))) & _ALL


@njit(cache=True, inline="always")
def _range_mismatches(text, ref_nmask, has_amb, n_text_words, read_words, read_nmask, wo, g, a, b):
    """Mismatches of read bases [a, b) against the reference at g + [a, b), and
    the number of reference N among them (packed in one int64: mm | n << 32)."""
    mm = np.int64(0)
    nn = np.int64(0)
    w = a >> 4
    last = (b - 1) >> 4
    while w <= last:
        keep = np.int64(_ALL)
        lo = a - (w << 4)
        if lo > 0:
            keep = keep >> (2 * lo)
        hi = b - (w << 4)
        if hi < 16:
            keep = keep & ((_ALL << (2 * (16 - hi))) & _ALL)
        ref = _ref_word(text, n_text_words, g + (w << 4))
        rn = np.int64(0)
        if has_amb:
            rn = _ref_word(ref_nmask, n_text_words, g + (w << 4))
        d = (np.int64(read_words[wo + w]) ^ ref) | np.int64(read_nmask[wo + w]) | rn
        mm += _popcount32((d | (d >> 1)) & _LOW_BITS & keep)
        nn += _popcount32(rn & _LOW_BITS & keep)
        w += 1
    return mm | (nn << 32)


# --------------------------------------------------------------------------- kernels


@njit(parallel=True, cache=True)
def dfs_count(occ, dollar_rows, C, wide, codes, piece_offsets, piece_budget, search, n_search, out_count):
    """out_count[x] = number of SA intervals of piece search[x] within its budget."""
    for x in numba.prange(n_search):
        p = search[x]
        lo_s = np.empty(MAX_DFS_DEPTH + 1, dtype=np.int64)
        hi_s = np.empty(MAX_DFS_DEPTH + 1, dtype=np.int64)
        mm_s = np.empty(MAX_DFS_DEPTH + 1, dtype=np.int64)
        next_s = np.empty(MAX_DFS_DEPTH + 1, dtype=np.int64)
        out_count[x] = _dfs(occ, dollar_rows, C, wide, codes, piece_offsets[p], piece_offsets[p + 1],
                            piece_budget[p], False, 0, out_count, out_count, out_count, p,
                            lo_s, hi_s, mm_s, next_s)


@njit(parallel=True, cache=True)
def dfs_fill(occ, dollar_rows, C, wide, codes, piece_offsets, piece_budget, search, n_search, starts,
             out_lo, out_hi, out_piece):
    """Write the intervals of piece search[x] at slots starts[x].. (with its piece id)."""
    for x in numba.prange(n_search):
        p = search[x]
        lo_s = np.empty(MAX_DFS_DEPTH + 1, dtype=np.int64)
        hi_s = np.empty(MAX_DFS_DEPTH + 1, dtype=np.int64)
        mm_s = np.empty(MAX_DFS_DEPTH + 1, dtype=np.int64)
        next_s = np.empty(MAX_DFS_DEPTH + 1, dtype=np.int64)
        _dfs(occ, dollar_rows, C, wide, codes, piece_offsets[p], piece_offsets[p + 1], piece_budget[p],
             True, starts[x], out_lo, out_hi, out_piece, p, lo_s, hi_s, mm_s, next_s)


@njit(parallel=True, cache=True)
def verify(text, ref_nmask, has_amb, n_text_words, contig_offsets,
           read_words, read_nmask, sr_word_offset, sr_length, sr_first_piece, sr_approx,
           piece_offsets, piece_budget, k,
           cand_sr, cand_piece, cand_contig, cand_pos, n, out_start, out_mm):
    """Candidate j: strand read cand_sr[j] placed so that piece p starts at
    cand_pos[j] of contig cand_contig[j], p = cand_piece[j] (found in the
    reference index) or -1 - cand_piece[j] when negative (found in the flank
    text: kept only if the window holds a reference N and p is the first
    piece within its budget). out_start = window start in the contig, out_mm
    = mismatches, or -1 when rejected (outside the contig, > k, or owned by
    another finder)."""
    for j in numba.prange(n):
        sr = cand_sr[j]
        p = cand_piece[j]
        flank = p < 0
        if flank:
            p = -1 - p
        length = sr_length[sr]
        first = sr_first_piece[sr]
        read_start = piece_offsets[first]
        start = cand_pos[j] - (piece_offsets[p] - read_start)
        contig = cand_contig[j]
        clen = contig_offsets[contig + 1] - contig_offsets[contig]
        out_start[j] = start
        result = np.int64(-1)
        if start >= 0 and start + length <= clen:
            g = contig_offsets[contig] + start
            wo = sr_word_offset[sr]
            total = np.int64(0)
            refn = np.int64(0)
            ok = True
            last = sr_first_piece[sr + 1]
            for q in range(first, last):
                a = piece_offsets[q] - read_start
                b = piece_offsets[q + 1] - read_start
                both = _range_mismatches(text, ref_nmask, has_amb, n_text_words, read_words, read_nmask,
                                         wo, g, a, b)
                mm = both & _ALL
                nn = both >> 32
                total += mm
                refn += nn
                if q < p and mm <= piece_budget[q]:
                    ok = False  # an earlier piece finds this placement
                if flank and q == p and mm > piece_budget[q]:
                    ok = False  # found only because the flank text reads N as a base
                if total > k or not ok:
                    ok = False
                    break
            if ok:
                if flank:
                    ok = refn > 0
                elif sr_approx[sr] and refn > 0:
                    ok = False  # the flank candidates own windows with a reference N
            if ok:
                result = total
        out_mm[j] = result

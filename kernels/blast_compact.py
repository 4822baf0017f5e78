"""The CPU's lookup of a compact table (CPU only; no CUDA twin): ``lookup_count`` / ``lookup_fill`` of
:mod:`gseek.kernels.blast` for a :class:`~gseek.blast.compact_table.CompactTable`.

A direct table gives word ``c``'s query positions as ``positions[first[c]:first[c + 1]]`` over all
4^w codes; a compact table lists the present words alone: word ``c``, whose presence-vector bit the scan
found set, is number ``rank[c >> 5] + popcount(pv[c >> 5] & ((1 << (c & 31)) - 1))`` of them
(:func:`present_index`), its positions ``positions[bounds[k]:bounds[k + 1]]``. The same pairs, in the same
order, as the direct table's kernels give (``tests/test_blast_compact_table.py``).
"""

from __future__ import annotations

import numba
import numpy as np

from gseek.kernels._jit import njit

from .blast import _word_at
from .fmindex import _popcount32


@njit(cache=True, inline="always")
def present_index(pv, rank, c):
    """The number of present word ``c`` (its PV bit set) among the present words, in code order."""
    g = c >> 5
    return np.int64(rank[g]) + _popcount32(np.int64(pv[g]) & ((np.int64(1) << (c & 31)) - 1))


@njit(parallel=True, cache=True, nogil=True)
def lookup_count_compact(hits, n, text, n_words, lut_w, span, tmask, pv, rank, bounds, counts):
    for h in numba.prange(n):
        k = present_index(pv, rank, _word_at(text, n_words, hits[h], lut_w, span, tmask))
        counts[h] = bounds[k + 1] - bounds[k]


@njit(parallel=True, cache=True, nogil=True)
def lookup_fill_compact(hits, n, text, n_words, lut_w, span, tmask, pv, rank, bounds, positions, out_off, q_pos,
                        s_pos):
    for h in numba.prange(n):
        k = present_index(pv, rank, _word_at(text, n_words, hits[h], lut_w, span, tmask))
        o = out_off[h]
        for j in range(bounds[k], bounds[k + 1]):
            q_pos[o] = positions[j]
            s_pos[o] = hits[h]
            o += 1

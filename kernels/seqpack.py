"""Numba twins of ``kernels/seqpack.cu``: same names, same argument order.

See the ``.cu`` file for the packed layout. Each twin computes every output
element independently, so the result is the same for any thread count.
"""

from __future__ import annotations

import numba
import numpy as np

from gseek.kernels._jit import njit

CUDA_SOURCE = "seqpack.cu"
CONSTANTS: dict[str, int] = {}

#: w-gram code of a window that holds an N or runs past its record's end.
WGRAM_INVALID = np.uint32(0xFFFFFFFF)
#: Largest w for which a w-gram code fits below WGRAM_INVALID in 32 bits.
WGRAM_MAX = 15


@njit(cache=True, inline="always")
def _record_of(offsets, n_records, i):
    lo = 0
    hi = n_records
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if offsets[mid] <= i:
            lo = mid
        else:
            hi = mid
    return lo


@njit(cache=True, inline="always")
def _pack16(codes, base, end):
    """Bases ``base .. base + 15`` as (word, N mask); those at or past ``end`` pack as A."""
    word = 0
    mask = 0
    for j in range(16):
        i = base + j
        c = codes[i] if i < end else 0
        shift = 30 - 2 * j
        if c > 3:
            mask |= 3 << shift
        word |= (c & 3) << shift
    return word, mask


@njit(parallel=True, cache=True)
def pack_2bit(codes, n, packed, nmask):
    n_words = (n + 15) >> 4
    for w in numba.prange(n_words):
        packed[w], nmask[w] = _pack16(codes, w << 4, n)


@njit(parallel=True, cache=True)
def pack_rows(codes, offsets, word_off, n_records, packed, nmask):
    n_words = word_off[n_records]
    for w in numba.prange(n_words):
        r = _record_of(word_off, n_records, w)
        packed[w], nmask[w] = _pack16(codes, offsets[r] + ((w - word_off[r]) << 4), offsets[r + 1])


@njit(parallel=True, cache=True)
def unpack_2bit(packed, nmask, n, codes):
    for i in numba.prange(n):
        shift = 30 - 2 * (i & 15)
        w = i >> 4
        c = (packed[w] >> shift) & 3
        codes[i] = 4 if (nmask[w] >> shift) & 3 else c


@njit(parallel=True, cache=True)
def reverse_complement(codes, offsets, n_records, out):
    n = offsets[n_records]
    for i in numba.prange(n):
        r = _record_of(offsets, n_records, i)
        c = codes[offsets[r] + offsets[r + 1] - 1 - i]
        out[i] = 3 - c if c < 4 else 4


@njit(parallel=True, cache=True)
def wgram_codes(codes, offsets, n_records, w, out):
    n = offsets[n_records]
    for i in numba.prange(n):
        r = _record_of(offsets, n_records, i)
        code = 0xFFFFFFFF
        if i + w <= offsets[r + 1]:
            acc = 0
            ok = True
            for j in range(w):
                c = codes[i + j]
                ok = ok and c < 4
                acc = (acc << 2) | (c & 3)
            if ok:
                code = acc
        out[i] = code

"""Numba byte writers shared by every text formatter (SAM records, tabular rows, CIGAR strings).

Each writer puts its bytes at ``out[p:]`` when ``write`` is true and returns
the end position either way, so one function serves the sizing pass (``write``
false) and the filling pass of a formatter: size every row, prefix-sum the
sizes, fill one buffer. Host-side code, not kernels: there is no ``.cu`` twin.
"""

from __future__ import annotations

import math

import numpy as np

from gseek.kernels._jit import njit

_MINUS, _ZERO, _DOT = 45, 48, 46


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _byte(out, p, value, write):
    if write:
        out[p] = value
    return p + 1


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _bytes2(out, p, a, b, write):
    if write:
        out[p] = a
        out[p + 1] = b
    return p + 2


@njit(cache=True, nogil=True, error_model="numpy")
def _int(out, p, value, write):
    """Decimal text of ``value`` at ``p``; returns the end."""
    v = np.int64(value)
    if v < 0:
        p = _byte(out, p, _MINUS, write)
        v = -v
    n = 1
    t = v
    while t >= 10:
        t //= 10
        n += 1
    if write:
        e = p + n
        while True:
            e -= 1
            out[e] = _ZERO + v % 10
            v //= 10
            if e == p:
                break
    return p + n


@njit(cache=True, nogil=True, error_model="numpy")
def _copy(out, p, src, a, b, write):
    """``src[a:b]`` at ``p``."""
    if write:
        for t in range(b - a):
            out[p + t] = src[a + t]
    return p + (b - a)


@njit(cache=True, nogil=True, error_model="numpy")
def _fixed(out, p, x, k, five_k, ten_k, write):
    """``f"{x:.{k}f}"`` of a double ``0 <= x < 2**10`` (``k <= 4``, ``five_k = 5**k``,
    ``ten_k = 10**k``) at ``p``, correctly rounded, ties to even; returns the end."""
    f, e = math.frexp(x)  # x = f * 2**e, 0.5 <= f < 1 (f = e = 0 for 0.0)
    n = np.int64(f * 9007199254740992.0) * five_k  # M * 5**k, M = f * 2**53 < 2**53: < 2**63
    s = 53 - e - k  # x * 10**k = n / 2**s; s >= 53 - 10 - 4 > 0
    if s >= 64:
        q = np.int64(0)  # n < 2**63 <= 2**(s - 1): below half
    else:
        q = n >> s
        r = n - (q << s)
        half = np.int64(1) << (s - 1)
        if r > half or (r == half and (q & 1) == 1):
            q += 1
    p = _int(out, p, q // ten_k, write)
    p = _byte(out, p, _DOT, write)
    if write:
        frac = q % ten_k
        for t in range(k - 1, -1, -1):
            out[p + t] = _ZERO + frac % 10
            frac //= 10
    return p + k

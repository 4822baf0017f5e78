"""Host passes over ragged arrays (data plus offsets, :mod:`gseek.ragged`) that run beside other
threads: parallel Numba passes that hold no GIL, where :func:`gseek.ragged.gather`'s NumPy forms
(an index of every element, or a Python list of slices) would hold it for each item.

>>> import numpy as np
>>> data, offs = np.array([1, 2, 3, 4, 5, 6], np.uint32), np.array([0, 2, 2, 6])
>>> out, off = gather(data, offs, np.array([2, 0]))
>>> out.tolist(), off.tolist()
([3, 4, 5, 6, 1, 2], [0, 4, 6])
"""

from __future__ import annotations

import numba
import numpy as np

from gseek import ragged
from gseek.kernels._jit import njit

__all__ = ["gather", "gather_rows"]


@njit(parallel=True, cache=True, nogil=True)
def gather_rows(src, src_off, rows, out_off, out):
    """``src[src_off[r]:src_off[r+1]]`` of every ``r`` in ``rows``, side by side at ``out_off``."""
    for i in numba.prange(rows.size):
        a = src_off[rows[i]]
        o = out_off[i]
        for t in range(out_off[i + 1] - o):
            out[o + t] = src[a + t]


def gather(src: np.ndarray, src_off: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Items ``rows`` of the host ragged array ``(src, src_off)``: their data side by side and new
    offsets (:func:`gseek.ragged.gather`'s result, in one parallel pass without the GIL)."""
    src_off = np.ascontiguousarray(src_off, dtype=np.int64)
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    off = ragged.offsets(src_off[rows + 1] - src_off[rows])
    out = np.empty(int(off[-1]), dtype=src.dtype)
    if out.size:
        gather_rows(np.ascontiguousarray(src), src_off, rows, off, out)
    return out, off

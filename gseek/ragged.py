"""Ragged arrays: variable-length items stored as one flat array plus offsets.

Item ``i`` of ``(data, offsets)`` is ``data[offsets[i]:offsets[i + 1]]``;
``offsets`` has one entry more than there are items, starts at 0 and never
decreases. Every gseek stage that lays variable-length things side by side
(reads, names, CIGAR runs, hits per read, text per row) uses these helpers, on
numpy or CuPy arrays alike (``xp`` is the array module of the input).

>>> import numpy as np
>>> offsets(np.array([3, 0, 2]))
array([0, 3, 3, 5])
>>> data, offs = encode_strings(["ab", "", "xyz"])
>>> bytes(data), offs.tolist()
(b'abxyz', [0, 2, 2, 5])
>>> decode_strings(data, offs)
['ab', '', 'xyz']
>>> d, o = gather(data, offs, np.array([2, 0]))
>>> bytes(d), o.tolist()
(b'xyzab', [0, 3, 5])
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["offsets", "encode_strings", "decode_strings", "gather", "concat", "concat_offsets", "even_cuts"]


def _xp(array: Any) -> Any:
    """numpy or cupy, whichever ``array`` belongs to (CuPy is not imported here)."""
    return np if isinstance(array, np.ndarray) or not hasattr(array, "__cuda_array_interface__") \
        else __import__("cupy")


def offsets(sizes: Any, dtype: Any = np.int64) -> Any:
    """Exclusive prefix sum of ``sizes`` with the total appended: n + 1 offsets.

    Works on numpy and CuPy arrays (and on any sequence of integers).
    """
    if not hasattr(sizes, "dtype"):
        sizes = np.fromiter(sizes, dtype=np.int64) if not isinstance(sizes, (list, tuple)) \
            else np.asarray(sizes, dtype=np.int64)
    xp = _xp(sizes)
    out = xp.zeros(sizes.size + 1, dtype=dtype)
    xp.cumsum(sizes, out=out[1:])
    return out


def encode_strings(items: Iterable[str | bytes], encoding: str = "utf-8",
                   errors: str = "strict") -> tuple[np.ndarray, np.ndarray]:
    """Strings (or bytes) as one ``uint8`` array and ``int64`` offsets."""
    raw = [s if isinstance(s, (bytes, bytearray)) else s.encode(encoding, errors) for s in items]
    return np.frombuffer(b"".join(raw), dtype=np.uint8).copy(), offsets([len(r) for r in raw])


def decode_strings(data: np.ndarray, offs: np.ndarray, encoding: str = "utf-8") -> list[str]:
    """The strings of ``(data, offsets)``."""
    raw = np.asarray(data, dtype=np.uint8).tobytes()
    o = np.asarray(offs).tolist()
    if encoding in ("latin-1", "ascii"):  # one character a byte: one decode, then slices
        text = raw.decode(encoding)
        return [text[a:b] for a, b in zip(o[:-1], o[1:])]
    return [raw[a:b].decode(encoding) for a, b in zip(o[:-1], o[1:])]


#: Items at least this long on average are gathered as slices (one copy each) rather than through an
#: index of every element (three 8-byte passes an element: 3.2 s of a pan-genome search's CIGAR runs).
_SLICES_FROM = 32


def gather(data: Any, offs: Any, idx: Any) -> tuple[Any, Any]:
    """Items ``idx`` of ``(data, offsets)``, vectorised: their data side by side and new offsets."""
    xp = _xp(data)
    starts, sizes = offs[idx], offs[idx + 1] - offs[idx]
    new = offsets(sizes)
    total = int(new[-1])
    if xp is np and len(sizes) and total >= _SLICES_FROM * len(sizes):
        ends = (starts + sizes).tolist()
        return np.concatenate([data[a:b] for a, b in zip(starts.tolist(), ends)]), new
    where = xp.repeat(starts - new[:-1], sizes.tolist() if xp is not np else sizes) + xp.arange(total)
    return data[where], new


def concat_offsets(parts: list[Any]) -> Any:
    """Offsets of the items of several ragged arrays laid side by side (each part's
    offsets may start above 0)."""
    xp = _xp(parts[0]) if parts else np
    shift = np.cumsum([0] + [int(o[-1] - o[0]) for o in parts[:-1]])
    return xp.concatenate([xp.zeros(1, np.int64)] + [(o[1:] - o[0] + s).astype(np.int64)
                                                      for o, s in zip(parts, shift)])


def concat(parts: list[tuple[Any, Any]]) -> tuple[Any, Any]:
    """One ragged array holding the items of every ``(data, offsets)`` part, in order
    (a part's offsets may start above 0: only ``data[offsets[0]:offsets[-1]]`` is used)."""
    xp = _xp(parts[0][0]) if parts else np
    data = xp.concatenate([d[int(o[0]):int(o[-1])] for d, o in parts])
    return data, concat_offsets([o for _, o in parts])


def even_cuts(cumulative: np.ndarray, total: float, pieces: int, side: str = "left") -> np.ndarray:
    """Where ``pieces`` equal shares of ``total`` fall in the non-decreasing ``cumulative`` (its ``searchsorted``
    of the ``pieces - 1`` inner bounds), each index once, in order: what ``np.unique`` of those gives, written
    out, as NumPy 2.4's ``unique`` imports ``numpy.ma`` to test for a masked array (~30 ms of a command that
    has no other use for it).

    >>> even_cuts(np.array([0, 5, 6, 7, 20]), 20, 4)
    array([1, 4])
    """
    at = np.searchsorted(cumulative, np.linspace(0, total, pieces + 1)[1:-1], side)
    return at[np.r_[True, at[1:] != at[:-1]]] if at.size else at

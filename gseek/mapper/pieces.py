"""Pigeonhole pieces: each strand of each read cut into ``s`` pieces with mismatch budgets.

A placement with at most ``k`` mismatches has a piece with at most ``e_i``
when the budgets ``e_i`` of the ``s`` pieces sum to ``k - s + 1``. With
pieces of at least ``min_piece`` bases there are ``k + 1`` of them, all
exact (budget 0); shorter reads or larger ``k`` get fewer, longer pieces with
budgets (the *approximate* mode, searched by backtracking). One function,
:func:`piece_layout`, computes the layout on the host or the device;
:func:`piece_plan` is the same for one read, as lists.

>>> piece_plan(100, 3, 12)
([0, 25, 50, 75, 100], [0, 0, 0, 0])
>>> piece_plan(30, 3, 12)
([0, 15, 30], [1, 1])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gseek import ragged

__all__ = ["MIN_PIECE_FLOOR", "default_min_piece", "piece_counts", "piece_layout", "piece_plan", "segment_ids"]

#: Shortest piece searched exactly, whatever the reference size.
MIN_PIECE_FLOOR = 10


def default_min_piece(bases: int) -> int:
    """``max(10, ceil(log4(bases)))``: a piece that long has about one random hit."""
    return max(MIN_PIECE_FLOOR, math.ceil(math.log(max(bases, 4), 4)))


def piece_counts(xp: Any, lengths: Any, k: int, min_piece: int) -> Any:
    """Pieces per read: ``k + 1`` when they are at least ``min_piece`` long, else
    as many pieces of at least ``min_piece`` as fit (at least one)."""
    return xp.clip(lengths // min_piece, 1, k + 1)


def segment_ids(xp: Any, counts: Any, first: Any, total: int) -> Any:
    """Segment of every element when segment ``i`` holds ``counts[i]`` elements
    from ``first[i]`` (``first``: exclusive prefix sum of ``counts``, plus the total)."""
    if xp is np:
        return np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    return xp.searchsorted(first[1:], xp.arange(total, dtype=np.int64), side="right")


def piece_layout(xp: Any, offsets: Any, k: int, min_piece: int) -> dict[str, Any]:
    """The pieces of reads ``[offsets[i], offsets[i + 1])`` (numpy or CuPy arrays, ``xp``).

    Returns ``count`` and ``first`` (pieces per read and their offsets),
    ``read`` (the read of each piece), ``offsets`` (piece starts in the
    reads' codes, plus the end), ``budget`` (int64) and ``approx`` (uint8 per
    read: its pieces carry budgets).
    """
    lengths = offsets[1:] - offsets[:-1]
    count = piece_counts(xp, lengths, k, min_piece)
    first = ragged.offsets(count)
    n_pieces = int(first[-1])
    read = segment_ids(xp, count, first, n_pieces)
    i_in = xp.arange(n_pieces, dtype=np.int64) - first[read]
    cnt = count[read]
    piece_off = xp.empty(n_pieces + 1, dtype=np.int64)
    piece_off[:-1] = offsets[:-1][read] + (i_in * lengths[read]) // cnt
    piece_off[-1] = offsets[-1]
    total_budget = k - cnt + 1
    budget = (total_budget // cnt + (i_in < total_budget % cnt)).astype(np.int64)
    approx = (k - count + 1 > 0).astype(np.uint8)
    return dict(count=count, first=first, read=read, offsets=piece_off, budget=budget, approx=approx)


def piece_plan(length: int, k: int, min_piece: int) -> tuple[list[int], list[int]]:
    """Piece starts (in the read, plus the end) and budgets for one read of ``length``."""
    layout = piece_layout(np, np.array([0, length], dtype=np.int64), k, min_piece)
    return layout["offsets"].tolist(), layout["budget"].tolist()

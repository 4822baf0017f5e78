"""Approximate pieces: backtracking search within a mismatch budget, and the flank index of the N runs.

Pieces with a budget (reads shorter than ``(k + 1) * min_piece``) are
searched by :func:`dfs_intervals` (``kmismatch.dfs_count`` / ``dfs_fill``:
count -> prefix sum -> fill). Windows holding a reference N, which the
FM-index cannot walk through, are found by the same searches in a small
second FM-index of the *flanks* of the N runs (:func:`flank_regions`,
:func:`build_flank_index`), where each N is read as a fixed pseudo-random
base: that can only lower a piece's mismatches, so the pigeonhole still
finds every placement; verification counts the N again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gseek import ragged
from gseek.backend import Backend, numba_guard
from gseek.index import Index
from gseek.index.search import FmArrays
from gseek.index.text import ReferenceText
from gseek.kernels import kmismatch
from gseek.seqio import SequenceBatch

__all__ = ["dfs_intervals", "flank_regions", "FlankIndex", "build_flank_index"]


def dfs_intervals(backend: Backend, fm: FmArrays, codes: Any, piece_off: Any, budget: Any,
                  search: Any) -> tuple[Any, Any, Any]:
    """SA intervals ``(lo, hi, piece)`` of the pieces ``search`` within their budgets, in FM-index ``fm``."""
    b, xp = backend, backend.xp
    m = int(search.size)
    counts = xp.empty(m, dtype=np.int64)
    b.launch(kmismatch, "dfs_count", m, fm.occ, fm.dollar_rows, fm.C, np.int64(fm.wide), codes, piece_off,
             budget, search, np.int64(m), counts)
    starts = ragged.offsets(counts)
    total = int(starts[-1])
    lo = xp.empty(total, dtype=np.int64)
    hi = xp.empty(total, dtype=np.int64)
    piece = xp.empty(total, dtype=np.int64)
    b.launch(kmismatch, "dfs_fill", m, fm.occ, fm.dollar_rows, fm.C, np.int64(fm.wide), codes, piece_off,
             budget, search, np.int64(m), starts, lo, hi, piece)
    return lo, hi, piece


def flank_regions(runs: np.ndarray, contig_offsets: np.ndarray, k: int, longest: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stretches of the reference holding every window of at most ``longest``
    bases that covers between 1 and ``k`` bases of the N runs ``[start, end)``.

    Such a window lies within ``longest - 1`` bases of a run of at most ``k``
    N, or, for a longer run, covers at most ``k`` of its first or last bases;
    it never covers the middle of a run, past the first and last ``k`` bases.
    Stretches are clipped to their contig, merged where they overlap and cut
    at those middles, so each window lies inside exactly one stretch and no
    stretch holds more than ``2k`` N in a row. Returns ``(contig, start,
    end)``, contig coordinates, in reference order.

    >>> runs = np.array([[50, 52], [300, 400], [420, 500], [1005, 1006]])  # global; contigs of 1000
    >>> [r.tolist() for r in flank_regions(runs, np.array([0, 1000, 2000]), 2, 30)]
    [[0, 0, 0, 0, 1], [21, 271, 398, 498, 0], [81, 302, 422, 529, 35]]
    """
    runs = np.asarray(runs, dtype=np.int64).reshape(-1, 2)
    co = np.asarray(contig_offsets, dtype=np.int64)
    a, e = runs[:, 0], runs[:, 1]
    long_run = e - a > k
    lo = np.concatenate([a - longest + 1, e[long_run] - k])
    hi = np.concatenate([np.where(long_run, a + k, e + longest - 1), e[long_run] + longest - 1])
    contig = np.searchsorted(co, np.concatenate([a, e[long_run] - 1]), side="right") - 1
    lo = np.sort(np.maximum(lo, co[contig]))
    hi = np.sort(np.minimum(hi, co[contig + 1]))
    middle = e - a > 2 * k
    cut_lo, cut_hi = a[middle] + k, e[middle] - k
    # elementary intervals between all boundaries: covered by a stretch and not by a middle
    points = np.unique(np.concatenate([lo, hi, cut_lo, cut_hi]))
    x = points[:-1]
    covered = np.searchsorted(lo, x, side="right") > np.searchsorted(hi, x, side="right")
    cut = np.searchsorted(cut_lo, x, side="right") > np.searchsorted(cut_hi, x, side="right")
    keep = covered & ~cut
    joined = np.zeros(x.size, dtype=bool)  # kept interval i continues kept interval i - 1 (same contig)
    joined[1:] = keep[1:] & keep[:-1] & ~np.isin(x[1:], co)
    first = np.flatnonzero(keep & ~joined)
    last = np.flatnonzero(keep & ~np.append(joined[1:], False))
    c = np.searchsorted(co, x[first], side="right") - 1
    return c.astype(np.int32), x[first] - co[c], points[last + 1] - co[c]


@dataclass(frozen=True)
class FlankIndex:
    """FM-index of the flank text (one record per flank) on a backend's device,
    each flank's contig and start (contig coordinates), and the text size."""

    fm: FmArrays
    contig: Any
    start: Any
    bases: int


def build_flank_index(reference: ReferenceText, backend: Backend, k: int, longest: int) -> FlankIndex:
    """The FM-index of the flanks of ``reference``'s N runs for reads of at most ``longest`` bases.

    Every window of such a read that holds a reference N and at most ``k``
    of them lies inside one flank (:func:`flank_regions`). An N is read as a
    base (a fixed pseudo-random one per position, so that N runs do not look
    like poly-A).
    """
    contig, start, end = flank_regions(reference.amb_runs, reference.contig_offsets, k, longest)
    lengths = end - start
    offsets = ragged.offsets(lengths)
    g = np.repeat(reference.contig_offsets[contig] + start - offsets[:-1], lengths) + np.arange(offsets[-1])
    shift = (30 - 2 * (g & 15)).astype(np.uint32)
    codes = ((reference.text[g >> 4] >> shift) & 3).astype(np.uint8)
    n = ((reference.nmask[g >> 4] >> shift) & 3) != 0
    codes[n] = (g[n].astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) >> np.uint64(62)).astype(np.uint8)
    batch = SequenceBatch.from_codes(codes, offsets, [str(i) for i in range(lengths.size)], "<flanks>")
    with numba_guard():  # a parallel CPU build, possibly beside other threads' Numba work
        index = Index.build(batch, wgram=0, sa_sample=4, threads=getattr(backend, "threads", None), device=backend)
    return FlankIndex(index.device_arrays(), backend.asarray(contig.astype(np.int32)), backend.asarray(start),
                      int(offsets[-1]))

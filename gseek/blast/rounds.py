"""The host passes of the gapped rounds: which seeds one round extends, and which HSPs already hold a seed or an HSP.

A round takes seeds greedily in rank order, one of each conflict cell (:func:`_select_round`); a
seed on the path of an HSP found in an earlier round is not extended (:func:`_outside`), and a
score-only HSP inside one traced back is not traced back (:func:`_contained`) — BLAST+'s
containment tests (``docs/blast.md``). The trace-back's expected extents: :func:`_chain_extent`.
"""

from __future__ import annotations

import numba
import numpy as np

from gseek.backend import numba_guard
from gseek.kernels._jit import njit

#: Seeds of one query sequence and contig extended with gaps in the same round lie at least this many
#: diagonals apart, or far apart on the subject (``gseek.blast.gapped._APART``).
_DIAG_BAND = 256
#: Seeds a conflict cell sends ahead in one launch (its best not yet taken, in rank order).
_AHEAD_DEPTH = 8
#: Diagonals from an HSP's within which a seed counts as on its path.
_DIAG_NEAR = 50
#: The key of an empty slot in the round choice's table of taken cells (:func:`_slot`): no candidate's key
#: may be this (checked where a choice starts: :func:`_no_empty_key`); real keys (query sequence by
#: contig numbers) are never negative.
_EMPTY = -1


@njit(cache=True, inline="always")
def _slot(tk, ts, td, key, cs, cd, mask):
    """Open-addressing slot of cell (key, cs, cd): where it is, or the empty slot it would take."""
    h = (np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) ^ (np.uint64(cs) * np.uint64(0xC2B2AE3D27D4EB4F)) \
        ^ (np.uint64(cd) * np.uint64(0x165667B19E3779F9))
    i = np.int64((h >> np.uint64(17)) & np.uint64(mask))
    while tk[i] != _EMPTY and not (tk[i] == key and ts[i] == cs and td[i] == cd):
        i = (i + 1) & mask
    return i


@njit(cache=True, nogil=True)
def _select_round(key, s, diag, apart):
    """Greedy, in rank order: a candidate is taken unless a taken one of the same key lies within
    ``apart`` of it on the subject and within :data:`_DIAG_BAND` diagonals (``apart`` is the same
    for every candidate of a key). Taken seeds are kept in cells ``apart`` by ``_DIAG_BAND`` wide
    (an open-addressing table): a cell holds at most one, and only the neighbouring cells can
    hold a conflict. No key may be :data:`_EMPTY` (``ValueError``)."""
    _no_empty_key(key)
    take = np.zeros(key.size, np.bool_)
    _greedy(np.arange(key.size), key, s, diag, apart, take)
    return take


@njit(cache=True, inline="always")
def _no_empty_key(key):
    """Raises where a key is :data:`_EMPTY`: its seed, once taken, would read as an empty slot and the seeds
    after it be taken past their conflict with it. One pass before the choice's loop."""
    for c in range(key.size):
        if key[c] == _EMPTY:
            raise ValueError("a round's seed key is -1, the empty slot's mark of the choice's table")


@njit(cache=True, nogil=True)
def _greedy(idx, key, s, diag, apart, take):
    """:func:`_select_round`'s pass over the candidates ``idx`` (rank order), its own table of taken cells:
    ``take`` set for those taken."""
    n = idx.size
    size = 1
    while size < 2 * n + 2:
        size <<= 1
    mask = size - 1
    tk = np.full(size, _EMPTY, np.int64)
    ts = np.zeros(size, np.int64)
    td = np.zeros(size, np.int64)
    tc = np.zeros(size, np.int64)
    band = _DIAG_BAND
    for j in range(n):  # rank order
        c = idx[j]
        width = max(apart[c], 1)
        bs = s[c] // width
        bd = diag[c] // band
        ok = True
        for ds in range(-1, 2):
            for dd in range(-1, 2):
                i = _slot(tk, ts, td, key[c], bs + ds, bd + dd, mask)
                if tk[i] != _EMPTY:
                    o = tc[i]
                    if abs(s[c] - s[o]) <= width and abs(diag[c] - diag[o]) <= band:
                        ok = False
            if not ok:
                break
        if ok:
            take[c] = True
            i = _slot(tk, ts, td, key[c], bs, bd, mask)
            tk[i], ts[i], td[i], tc[i] = key[c], bs, bd, c


#: A round's choice over at least this many candidates runs in parts on the host's threads
#: (:func:`select_round_parts`); fewer: the serial pass, cheaper than starting the threads.
PARTS_MIN = 1 << 14


def select_round_parts(key: np.ndarray, s: np.ndarray, diag: np.ndarray, apart: np.ndarray) -> np.ndarray:
    """:func:`_select_round`'s choice, its keys dealt into parts (a hash of the key) whose passes run on the
    host's threads: a conflict needs the same key, so each part's greedy pass in rank order over its own
    candidates takes what the one pass over all takes (megablast on a 1 Gbp database: ~1M keys, rounds of
    up to ~1M seeds crowded on their alignments, which the device's isolated test leaves to this pass).

    >>> select_round_parts(np.array([0, 0, 1]), np.array([10, 50, 10]), np.zeros(3, np.int64), np.full(3, 100)).tolist()
    [True, False, True]
    """
    key, s, diag, apart = (np.ascontiguousarray(a, np.int64) for a in (key, s, diag, apart))
    if key.size < PARTS_MIN:
        return _select_round(key, s, diag, apart)
    with numba_guard():  # a parallel pass beside other searchers' threads
        return _select_parts(key, s, diag, apart, 4 * numba.get_num_threads())


@njit(parallel=True, cache=True, nogil=True)
def _select_parts(key, s, diag, apart, parts):
    """:func:`select_round_parts`' pass: each candidate's part, the parts' candidates in rank order
    (a counting sort), then one greedy pass a part (its own table of taken cells) in parallel."""
    _no_empty_key(key)
    n = key.size
    part = np.empty(n, np.int64)
    for c in numba.prange(n):
        part[c] = np.int64((np.uint64(key[c]) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(33)) % parts
    first = np.zeros(parts + 1, np.int64)
    for c in range(n):
        first[part[c] + 1] += 1
    for p in range(parts):
        first[p + 1] += first[p]
    idx = np.empty(n, np.int64)
    fill = first[:-1].copy()
    for c in range(n):  # rank order within each part
        idx[fill[part[c]]] = c
        fill[part[c]] += 1
    take = np.zeros(n, np.bool_)
    for p in numba.prange(parts):
        _greedy(idx[first[p]:first[p + 1]], key, s, diag, apart, take)
    return take


def _ahead(pool: np.ndarray, key: np.ndarray, s: np.ndarray, diag: np.ndarray, apart: np.ndarray,
           most: int) -> np.ndarray:
    """Candidates of ``pool`` (rank order) to extend ahead of their round (:data:`_AHEAD`): the first
    :data:`_AHEAD_DEPTH` of each conflict cell (key, ``apart`` of subject, :data:`_DIAG_BAND` diagonals),
    the best of every cell first, then the second best, ...; at most ``most`` (all of ``pool`` when it fits).

    >>> _ahead(np.arange(5), np.array([0, 0, 0, 1, 0]), np.array([10, 20, 30, 10, 5000]),
    ...        np.zeros(5, np.int64), np.full(5, 100), 3).tolist()
    [0, 3, 4]
    """
    if most <= 0 or pool.size == 0:
        return pool[:0]
    if pool.size <= most:
        return pool
    cell_s = s[pool] // np.maximum(apart[pool], 1)
    cell_d = diag[pool] // _DIAG_BAND
    order = np.lexsort((np.arange(pool.size), cell_d, cell_s, key[pool]))  # by cell, rank order within
    c = np.stack([key[pool][order], cell_s[order], cell_d[order]])
    first = np.ones(pool.size, bool)
    first[1:] = (c[:, 1:] != c[:, :-1]).any(axis=0)
    starts = np.flatnonzero(first)
    depth = np.empty(pool.size, np.int64)
    depth[order] = np.arange(pool.size) - np.repeat(starts, np.diff(np.append(starts, pool.size)))
    keep = np.flatnonzero(depth < _AHEAD_DEPTH)
    pick = keep[np.lexsort((keep, depth[keep]))][:most]
    return pool[np.sort(pick)]


def _reach(qa: np.ndarray, qb: np.ndarray, mq: np.ndarray, ms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The query's reach of seeds ``(mq, ms)`` on queries ``[qa, qb)``: the text the query's extent
    on the seed's diagonal covers, and a quarter of the query's length (at least 64) each side."""
    slack = np.maximum(64, (qb - qa) // 4)
    return ms - (mq - qa) - slack, ms + (qb - mq) + slack


@njit(cache=True, nogil=True)
def _chain_extent(by, key, diag, s_lo, s_hi, near, lo, hi):
    """For every HSP, ``lo``/``hi`` = the least ``s_lo`` and the greatest ``s_hi`` of the HSPs of its
    key whose diagonal is within ``near`` of its own (itself included). ``by``: the HSPs in
    (key, diagonal) order. One sweep with the window's two ends and two monotone queues (its
    least start, its greatest end)."""
    n = by.size
    qmin = np.empty(n, np.int64)  # positions in ``by``, lo values rising from head to tail
    qmax = np.empty(n, np.int64)  # hi values falling
    h1 = t1 = h2 = t2 = 0
    a = 0
    b = 0  # positions a..b-1 of ``by`` are in the window
    for p in range(n):
        i = by[p]
        while b < n and key[by[b]] == key[i] and diag[by[b]] <= diag[i] + near:
            j = by[b]
            while t1 > h1 and s_lo[by[qmin[t1 - 1]]] >= s_lo[j]:
                t1 -= 1
            qmin[t1] = b
            t1 += 1
            while t2 > h2 and s_hi[by[qmax[t2 - 1]]] <= s_hi[j]:
                t2 -= 1
            qmax[t2] = b
            t2 += 1
            b += 1
        while key[by[a]] != key[i] or diag[by[a]] < diag[i] - near:
            a += 1
        while qmin[h1] < a:
            h1 += 1
        while qmax[h2] < a:
            h2 += 1
        lo[i] = s_lo[by[qmin[h1]]]
        hi[i] = s_hi[by[qmax[h2]]]


def _found_block(key: np.ndarray, res: dict[str, np.ndarray], score: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """One round's found HSPs as :func:`_inside` reads them: rows key, q_start, q_end, s_start,
    s_end, lowest and highest diagonal ± :data:`_DIAG_NEAR` and ``score`` (0 if None), each HSP a
    column, sorted by key, then subject start (equal pairs in round order); and the longest
    subject extent.

    One stable sort of a combined 64-bit key and a gather per row (a round holds up to ~1.5M HSPs
    on a GPU: ``np.lexsort`` and a gather of whole HSP records took ~1 s there).

    >>> rows, reach = _found_block(np.array([1, 0, 1]), {"q_start": np.array([0, 1, 2]), "q_end":
    ...     np.array([5, 6, 7]), "s_start": np.array([30, 40, 10]), "s_end": np.array([35, 46, 17])})
    >>> rows[[0, 3]].tolist(), reach
    ([[0, 1, 1], [40, 10, 30]], 7)
    """
    qa, qb, sa, sb = (np.asarray(res[k], np.int64) for k in ("q_start", "q_end", "s_start", "s_end"))
    key = np.asarray(key, np.int64)
    if key.size and key.max() < (1 << 23) and sa.max() < (1 << 40) and min(key.min(), sa.min()) >= 0:
        order = np.argsort(key * (1 << 40) + sa, kind="stable")
    else:
        order = np.lexsort((sa, key))
    rows = np.zeros((8, key.size), np.int64)
    for j, column in enumerate((key, qa, qb, sa, sb)):
        rows[j] = column[order]
    d0, d1 = rows[3] - rows[1], rows[4] - rows[2]
    np.subtract(np.minimum(d0, d1), _DIAG_NEAR, out=rows[5])
    np.add(np.maximum(d0, d1), _DIAG_NEAR, out=rows[6])
    if score is not None:
        rows[7] = np.asarray(score, np.int64)[order]
    return rows, int((sb - sa).max()) if key.size else 0


def _outside(idx: np.ndarray, key: np.ndarray, q: np.ndarray, s: np.ndarray,
             blocks: list[tuple[np.ndarray, int]]) -> np.ndarray:
    """The seeds ``idx`` whose point (q, s) lies in no found HSP of its key (:func:`_inside`), the
    HSPs given as one sorted block per round with its longest subject extent (sorting each round's
    new HSPs only: all of them, re-sorted every round, cost seconds with a GPU's 1.5M HSPs)."""
    for block, reach in blocks:
        with numba_guard():  # a parallel pass (as every host pass beside another searcher's)
            inside = _inside(key[idx], q[idx], s[idx], block, reach)
        idx = idx[~inside]
    return idx


def _contained(key: np.ndarray, qa: np.ndarray, qb: np.ndarray, sa: np.ndarray, sb: np.ndarray,
               score: np.ndarray, blocks: list[tuple[np.ndarray, int]]) -> np.ndarray:
    """Whether each HSP ``[qa, qb) x [sa, sb)`` of ``key`` with ``score`` lies inside one found HSP of
    its key of at least that score (BLAST+'s containment test of its trace-back): its first and its
    last cell both inside that HSP's query and subject ranges and within :data:`_DIAG_NEAR` of its
    diagonals (``blocks``: :func:`_found_block`'s with scores, one a round)."""
    hsps = [np.asarray(a, np.int64) for a in (key, qa, qb, sa, sb, score)]
    out = np.zeros(key.size, bool)
    for block, reach in blocks:
        with numba_guard():  # a parallel pass, as in _outside
            out |= _inside_one(*hsps, block, reach)
    return out


@njit(parallel=True, cache=True, nogil=True)
def _inside_one(key, qa, qb, sa, sb, score, rect, span):
    """:func:`_contained` against one block: for each HSP, whether a rect of its key with a score of
    at least its own holds both its first cell (qa, sa) and its last (qb - 1, sb - 1). Each HSP on
    its own: a parallel pass that holds no GIL (the searchers of a GPU run side by side on threads)."""
    out = np.zeros(key.size, np.bool_)
    keys = rect[0]
    for i in numba.prange(key.size):
        a = np.searchsorted(keys, key[i], side="left")
        b = np.searchsorted(keys, key[i], side="right")
        # rects a..b-1 are sorted by subject start: those starting in [sa - span, sa] can hold (qa, sa)
        hi = a + np.searchsorted(rect[3, a:b], sa[i], side="right")
        d0 = sa[i] - qa[i]
        d1 = sb[i] - qb[i]
        r = hi - 1
        while r >= a and rect[3, r] >= sa[i] - span:
            if (rect[7, r] >= score[i] and rect[1, r] <= qa[i] and qb[i] <= rect[2, r] and sb[i] <= rect[4, r]
                    and rect[5, r] <= d0 <= rect[6, r] and rect[5, r] <= d1 <= rect[6, r]):
                out[i] = True
                break
            r -= 1
    return out


@njit(cache=True, nogil=True)
def _inside(key, q, s, rect, span):
    """Whether seed point (q, s) lies in a found HSP of its key (``rect``: :func:`_found_block`'s
    rows, sorted by key, then subject start; ``span`` its longest subject extent): inside its query and subject ranges and
    within ``_DIAG_NEAR`` of its diagonals (a repeat inside the rectangle but off the alignment's
    path is extended on its own, as BLAST+ does). A point is an HSP of one cell and any score."""
    return _inside_one(key, q, q + 1, s, s + 1, np.full(key.size, np.iinfo(np.int64).min), rect, span)

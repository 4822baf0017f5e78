"""The gapped rounds' largest host passes with a device beside them (issue 40): which seeds a round
takes (:func:`select_round`), the sorted block of a round's HSPs (:func:`found_block`) and the
order of a round's launches (:func:`longest_first`); and :func:`lexsort_packed`, ``lexsort`` with the
keys packed into as few 63-bit words as their ranges allow (the seed stage's sorts, a stable
radix sort a word on a GPU).

A round's choice is BLAST+'s greedy pass in rank order (:func:`gseek.blast.rounds._select_round`,
serial, on the host). A seed alone in its 3 x 3 neighbourhood of conflict cells (key, ``apart`` of
subject, ``_DIAG_BAND`` diagonals) can conflict with no other seed, so that pass takes it whatever
comes before and it keeps no other seed out: :func:`isolated` finds those seeds with one sort and
nine binary searches, and the host's pass runs over the others only (the first round of the
blastn task's 100 x 10 kb queries on a random 75 Mbp database: ~680k seeds, nearly all alone).
:func:`found_block` is :func:`gseek.blast.rounds._found_block` with its stable sort and gathers
on the device, :func:`longest_first` a stable argsort there. Each gives the host pass's result
exactly, on any backend (``tests/test_blast_device_rounds.py`` runs them on NumPy against the
host passes); a GPU searcher uses them for rounds of :data:`DEVICE_MIN` seeds or more
(:class:`gseek.blast.gapped.GappedPasses`).

>>> from gseek.backend import get_backend
>>> key, s = np.array([0, 0, 0, 1]), np.array([10, 50, 90_000, 20])
>>> isolated(np, key, s, np.zeros(4, np.int64), np.full(4, 100)).tolist()  # the first two share a cell
[False, False, True, True]
>>> select_round(get_backend("cpu"), key, s, np.zeros(4, np.int64), np.full(4, 100)).tolist()
[True, False, True, True]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gseek.backend import Backend

from .rounds import _DIAG_BAND, _DIAG_NEAR, _found_block, select_round_parts

#: Seeds (or HSPs) of a round from which a GPU searcher's round passes go through the device; fewer
#: stay on the host, where the pass costs less than the transfers.
DEVICE_MIN = 1 << 15


def isolated(xp: Any, key: Any, s: Any, diag: Any, apart: Any) -> Any:
    """Whether each candidate (arrays of ``xp``) is the only one in its 3 x 3 neighbourhood of
    conflict cells (key, ``s // apart``, ``diag // _DIAG_BAND``): ``_select_round`` takes it and it
    keeps none out (a conflict needs the same key, ``|Δs| <= apart`` and ``|Δdiag| <= _DIAG_BAND``,
    which lie in neighbouring cells; ``apart`` is the same for every candidate of a key). The cells
    numbered as key x subject cells x diagonal cells where that fits in :data:`_CELL_BITS` bits; else
    (megablast on a 1 Gbp database: ~1M keys x 1.6M subject cells x 4.1M diagonal cells) by rows, the
    (key, subject cell) pairs present ranked (:func:`_rows`, one more sort). None where neither fits
    (or a key is negative)."""
    n = int(key.size)
    if n == 0:
        return xp.zeros(0, dtype=bool)
    cs = s // xp.maximum(apart, 1)
    cd = diag // _DIAG_BAND
    bounds = xp.stack([key.min(), key.max(), cs.min(), cs.max(), cd.min(), cd.max()])
    k_lo, k_hi, cs_lo, cs_hi, cd_lo, cd_hi = (int(v) for v in (bounds.get() if hasattr(bounds, "get") else bounds))
    ns, nd = cs_hi - cs_lo + 3, cd_hi - cd_lo + 3  # a free cell each side: a neighbour never wraps
    if k_lo < 0:
        return None
    dd = xp.asarray(np.array([-1, 0, 1] * 3, np.int64))[:, None]  # the nine neighbours: ds -1, 0, 1 (rows) by dd
    if (k_hi + 1) * ns * nd < 1 << _CELL_BITS:
        cell = (key * ns + (cs - (cs_lo - 1))) * nd + (cd - (cd_lo - 1))
        probe = cell[None, :] + xp.asarray(np.repeat(np.array([-nd, 0, nd], np.int64), 3))[:, None] + dd
    else:
        got = _rows(xp, key - k_lo, k_hi - k_lo + 1, cs - (cs_lo - 1), ns)
        if got is None or n * nd >= 1 << _CELL_BITS:
            return None
        row, near = got  # each candidate's row; the rows of subject cell - 1, itself, + 1 (-1: none)
        cell = row * nd + (cd - (cd_lo - 1))
        near = xp.repeat(near, 3, axis=0)
        probe = xp.where(near >= 0, near * nd + (cd - (cd_lo - 1)) + dd, -1)  # -1: no cell (cells are >= 1)
    cells, counts = xp.unique(cell, return_counts=True)
    # the nine neighbouring cells of each candidate (its own included) searched at once
    at = xp.minimum(xp.searchsorted(cells, probe), cells.size - 1)
    near = xp.where(cells[at] == probe, counts[at], 0).sum(axis=0)
    return near == 1


#: :func:`isolated` numbers a candidate's cell in at most this many bits (an int64 with room for its neighbours).
_CELL_BITS = 62


def _rows(xp: Any, key: Any, keys: int, cs: Any, ns: int) -> tuple[Any, Any] | None:
    """The rows of :func:`isolated`'s cells: each candidate's rank among the (key, subject cell)
    pairs present (``key`` in ``[0, keys)``, ``cs`` in ``[1, ns - 1)``: pair ± 1 stays in its key),
    and the ranks of the pairs (key, cs - 1), (key, cs), (key, cs + 1) (3 x n; -1 where none is
    present). Keys ranked first where key x subject cells does not fit; None where even that does not."""
    if keys * ns >= 1 << _CELL_BITS:
        _, key = xp.unique(key, return_inverse=True)
        key = key.reshape(-1).astype(np.int64, copy=False)
        if (int(key.max()) + 1) * ns >= 1 << _CELL_BITS:
            return None
    pairs, row = xp.unique(key * ns + cs, return_inverse=True)
    row = row.reshape(-1).astype(np.int64, copy=False)
    m = int(pairs.size)
    nxt = xp.zeros(m, dtype=bool)  # the pair after a row is its subject cell + 1
    nxt[:-1] = pairs[1:] == pairs[:-1] + 1
    above = xp.where(nxt, xp.arange(1, m + 1, dtype=np.int64), -1)
    below = xp.full(m, -1, dtype=np.int64)
    below[1:] = xp.where(nxt[:-1], xp.arange(m - 1, dtype=np.int64), -1)
    return row, xp.stack([below[row], row, above[row]])


def lexsort_packed(xp: Any, keys: list[Any]) -> tuple[Any, list[Any], list[int]]:
    """``xp.lexsort(keys)`` (the last key primary; ties in the input's order) of integer arrays,
    by a stable argsort of each 63-bit word the keys pack into (each key less its minimum, its
    range's bits; a key later in ``keys`` more significant), the least significant word first:
    the order, the words in that order (least significant first) and each key's bits. Keys whose
    ranges need more than 63 bits alone: ``xp.lexsort`` (its words ``[]``).

    >>> order, words, bits = lexsort_packed(np, [np.array([3, 1, 2, 0]), np.array([1, 0, 1, 0])])
    >>> order.tolist(), bits, [w.tolist() for w in words]
    ([3, 1, 2, 0], [2, 1], [[0, 1, 6, 7]])
    """
    keys = [k.astype(np.int64, copy=False) for k in keys]
    n = int(keys[0].size)
    if n == 0:
        return xp.zeros(0, np.int64), [xp.zeros(0, np.int64)], [0] * len(keys)
    bounds = xp.stack([xp.stack([k.min(), k.max()]) for k in keys])
    bounds = (bounds.get() if hasattr(bounds, "get") else bounds).tolist()  # (one download)
    bits = [int(hi - lo).bit_length() for lo, hi in bounds]
    if max(bits) > 63:
        return xp.lexsort(xp.stack(keys)), [], bits
    groups: list[list[int]] = [[]]  # keys a word, least significant first
    used = 0
    for j, b in enumerate(bits):
        if used + b > 63:
            groups.append([])
            used = 0
        groups[-1].append(j)
        used += b
    order, words = None, []
    for group in groups:
        word, shift = None, 0
        for j in group:
            k = keys[j] if order is None else keys[j][order]
            part = k - bounds[j][0] if shift == 0 else (k - bounds[j][0]) << shift
            word = part if word is None else word | part
            shift += bits[j]
        step = xp.argsort(word, kind="stable")
        words.append(word[step])
        for i in range(len(words) - 1):  # the earlier words follow the order
            words[i] = words[i][step]
        order = step if order is None else order[step]
    return order, words, bits


def select_round(backend: Backend, key: np.ndarray, s: np.ndarray, diag: np.ndarray,
                 apart: np.ndarray) -> np.ndarray:
    """``_select_round(key, s, diag, apart)`` (host arrays): the isolated candidates
    (:func:`isolated`, on ``backend``) taken, the host's greedy pass over the others
    (:func:`~gseek.blast.rounds.select_round_parts`)."""
    alone = None
    if key.size:
        with backend.active():
            got = isolated(backend.xp, *(backend.asarray(np.ascontiguousarray(a, np.int64))
                                         for a in (key, s, diag, apart)))
            alone = None if got is None else backend.to_host(got)
    if alone is None:
        return select_round_parts(key, s, diag, apart)
    rest = np.flatnonzero(~alone)
    take = np.ones(key.size, bool)
    if rest.size:
        take[rest] = select_round_parts(key[rest], s[rest], diag[rest], apart[rest])
    return take


def found_block(backend: Backend, key: np.ndarray, res: dict[str, np.ndarray],
                score: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """:func:`gseek.blast.rounds._found_block`'s rows and longest subject extent, its stable sort
    of the combined key and its gathers on ``backend`` (the host's pass where the combined key
    does not fit)."""
    qa, qb, sa, sb = (np.asarray(res[k], np.int64) for k in ("q_start", "q_end", "s_start", "s_end"))
    key = np.asarray(key, np.int64)
    if not (key.size and key.max() < (1 << 23) and sa.max() < (1 << 40) and min(key.min(), sa.min()) >= 0):
        return _found_block(key, res, score)
    xp = backend.xp
    with backend.active():
        cols = [backend.asarray(c) for c in (key, qa, qb, sa, sb)]
        order = xp.argsort(cols[0] * (1 << 40) + cols[3], kind="stable")
        rows = xp.zeros((8, key.size), dtype=np.int64)
        for j, column in enumerate(cols):
            rows[j] = column[order]
        d0, d1 = rows[3] - rows[1], rows[4] - rows[2]
        rows[5] = xp.minimum(d0, d1) - _DIAG_NEAR
        rows[6] = xp.maximum(d0, d1) + _DIAG_NEAR
        if score is not None:
            rows[7] = backend.asarray(np.asarray(score, np.int64))[order]
        return backend.to_host(rows), int((sb - sa).max())


def longest_first(backend: Backend, expect: np.ndarray) -> np.ndarray:
    """``np.argsort(-expect, kind="stable")`` (the launches' order, longest expected extent first),
    sorted on ``backend``."""
    with backend.active():
        return backend.to_host(backend.xp.argsort(-backend.asarray(np.asarray(expect, np.int64)), kind="stable"))

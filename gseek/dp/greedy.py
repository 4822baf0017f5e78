"""Megablast's greedy gapped extension of seeds, score only or with its edit script.

BLAST+ extends megablast's seeds (linear gap costs) with the greedy algorithm of Zhang
et al. (2000) as its ``BLAST_GreedyAlign`` runs it, not with a DP: the ends, scores and
gap placements of blastn's megablast HSPs are that algorithm's (``docs/blast.md``,
"Megablast's greedy extension"). :func:`greedy_gapped` runs the ``greedy`` kernel family
(CUDA, or its Numba twin) on a backend, with identical results; the edit script is
then edited on the host as BLAST+ edits it (:func:`reduce_gaps`). The readable reference
is ``tests/reference_greedy.py``.

Scores are at twice the scale: a match ``2 * reward``, a mismatch ``2 * penalty``, a gap
column ``reward - 2 * penalty``, X doubled (BLAST+'s own arithmetic for an odd reward).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from gseek import ragged
from gseek.backend import Backend, numba_guard, on_device
from gseek.errors import OptionError
from gseek.kernels import greedy
from gseek.kernels._jit import njit

__all__ = ["greedy_gapped", "reduce_gaps", "SUB", "INS", "DEL"]

SUB, INS, DEL = greedy.SUB, greedy.INS, greedy.DEL
#: Diagonals a side's ring holds at first (a power of two); a seed whose range outgrows it is
#: extended again with a ring four times wider.
RING = 64


def _memory(match: int, mismatch: int, xdrop: int) -> int:
    """The ring of per-distance best scores: a power of two above the X-drop's look-back."""
    look = (xdrop + match // 2) // (match + mismatch) + 1
    return 1 << int(look + 1).bit_length()


@on_device
def greedy_gapped(backend: Backend, codes: Any, q_off: np.ndarray, q_len: np.ndarray, t_off: np.ndarray,
                  t_len: np.ndarray, q_pos: np.ndarray, t_pos: np.ndarray, match: int, mismatch: int, xdrop: int,
                  traceback: bool = False, max_bytes: int | None = None) -> dict[str, np.ndarray]:
    """Greedy gapped extension of seed pairs ``(q_pos, t_pos)`` (the right side from the pair,
    the left side from the pair before it), at twice the scale (``match`` = 2 x reward,
    ``mismatch`` = -2 x penalty, a positive cost, ``xdrop`` doubled).

    Returns host arrays ``score``, ``q_start``, ``q_end``, ``t_start``, ``t_end`` (0-based,
    half-open), ``q_seed``, ``t_seed`` (where a trace-back of the HSP starts: the middle of the
    longest run of matches the sides found, inside the HSP), ``edges`` (bit 1: the left side,
    bit 2: the right side reached the end of the target it was given, so a longer target could
    extend it) and, with ``traceback``, the edit script of each alignment after
    :func:`reduce_gaps`: operations ``ops`` (:data:`SUB` columns, :data:`INS` query bases,
    :data:`DEL` target bases) and their lengths ``op_len``, seed ``p``'s at
    ``ops[op_offsets[p]:op_offsets[p + 1]]``. ``max_bytes`` bounds one fill's trace-back
    memory (seeds in runs; a seed that needs more, alone).

    >>> from gseek import get_backend
    >>> from gseek.dp.scoring import Scoring
    >>> s = Scoring()
    >>> q, t = "TTGACGTTACGGATCCATTTGACTCGA", "AAGACGTTACCGGATCCATTTGACTAAA"
    >>> codes = np.concatenate([s.encode(q), s.encode(t)])
    >>> r = greedy_gapped(get_backend("cpu"), codes, [0], [27], [27], [28], [14], [15], 2, 4, 40, traceback=True)
    >>> [int(r[k][0]) for k in ("score", "q_start", "q_end", "t_start", "t_end")]
    [39, 2, 24, 2, 25]
    >>> [(int(o), int(n)) for o, n in zip(r["ops"], r["op_len"])]  # 7 columns, a target base against a gap, 15
    [(0, 7), (2, 1), (0, 15)]
    """
    n = len(q_len)
    q_off, t_off = np.asarray(q_off, np.int64), np.asarray(t_off, np.int64)
    q_len, t_len = np.asarray(q_len, np.int32), np.asarray(t_len, np.int32)
    q_pos, t_pos = np.asarray(q_pos, np.int32), np.asarray(t_pos, np.int32)
    bad = (q_pos < 0) | (q_pos >= q_len) | (t_pos < 0) | (t_pos >= t_len)
    if bad.any():
        k = int(np.argmax(bad))
        raise OptionError(f"seed {k}: (q_pos, t_pos) = ({q_pos[k]}, {t_pos[k]}) is not a residue pair of "
                          f"lengths ({q_len[k]}, {t_len[k]})")
    if not 0 <= int(xdrop) < (1 << 26) or match <= 0 or match % 2 or mismatch <= 0:
        raise OptionError(f"greedy extension: match {match} (even, > 0), mismatch cost {mismatch} (> 0) and "
                          f"xdrop {xdrop} (in [0, 2^26)) do not fit")
    names = ("score", "q_start", "q_end", "t_start", "t_end", "q_seed", "t_seed")
    out: dict[str, np.ndarray] = {k: np.zeros(n, np.int32) for k in (*names, "edges")}
    if traceback:
        out["ops"], out["op_len"], out["op_offsets"] = np.zeros(0, np.uint8), np.zeros(0, np.int32), \
            np.zeros(n + 1, np.int64)
    if n == 0:
        return out
    xp = backend.xp
    memory = _memory(match, mismatch, xdrop)
    dev_codes = backend.asarray(codes, dtype=np.uint8)
    dev = [backend.asarray(a) for a in (q_off, q_len, t_off, t_len, q_pos, t_pos)]
    consts = (np.int32(match), np.int32(mismatch), np.int32(xdrop))
    width = np.full(n, RING, np.int64)
    dist = np.zeros(2 * n, np.int32)
    cells = np.zeros(2 * n, np.int64)
    todo = np.arange(n)
    while todo.size:  # seeds whose diagonals outgrew their ring: again, wider
        m = todo.size
        w = int(width[todo[0]])
        sub = dev if m == n else [a[backend.asarray(todo)] for a in dev]
        work_off = np.arange(m, dtype=np.int64) * (2 * w + memory)
        work = xp.empty(int(m * (2 * w + memory)), dtype=np.int32)
        res = [xp.empty(m, dtype=np.int32) for _ in range(8)]
        d_dev, c_dev = xp.empty(2 * m, dtype=np.int32), xp.empty(2 * m, dtype=np.int64)
        backend.launch(greedy, "greedy_gapped_score", m, dev_codes, *sub, np.int64(m), *consts, np.int64(w),
                       np.int64(memory), backend.asarray(work_off), work, *res, d_dev, c_dev)
        host = [backend.to_host(r) for r in res]
        for row, name in enumerate(names):
            out[name][todo] = host[row]
        edges = host[7]
        out["edges"][todo] = edges & (greedy.EDGE_LEFT | greedy.EDGE_RIGHT)
        pairs = np.stack([2 * todo, 2 * todo + 1], axis=1).ravel()
        dist[pairs] = backend.to_host(d_dev)
        cells[pairs] = backend.to_host(c_dev)
        grow = (edges & greedy.OVERFLOW) != 0
        todo = todo[grow]
        width[todo] = 4 * w
        del work
    if not traceback:
        return out
    rows = dist.astype(np.int64)
    room = 2 * (dist[0::2].astype(np.int64) + dist[1::2]) + 4
    need = np.cumsum(4 * (cells[0::2] + cells[1::2]) + 12 * (rows[0::2] + rows[1::2]) + 5 * room)
    parts, lo = [], 0
    host_codes = backend.to_host(dev_codes) if backend.name != "cpu" else np.asarray(codes, np.uint8)
    while lo < n:  # seeds lo:hi, whose trace-back keeps to max_bytes (at least one)
        hi = n if max_bytes is None else max(lo + 1, int(np.searchsorted(
            need, (need[lo - 1] if lo else 0) + max_bytes, side="right")))
        m = hi - lo
        pick = np.arange(lo, hi)
        w = int(width[lo:hi].max())
        sub = [a[lo:hi] for a in dev]
        work_off = np.arange(m, dtype=np.int64) * (2 * w + memory)
        work = xp.empty(int(m * (2 * w + memory)), dtype=np.int32)
        tb_off = ragged.offsets(cells[2 * lo:2 * hi])
        row_off = ragged.offsets(rows[2 * lo:2 * hi])
        ops_off = ragged.offsets(room[lo:hi])
        tb = xp.empty(max(int(tb_off[-1]), 1), dtype=np.int32)
        row_lo = xp.empty(max(int(row_off[-1]), 1), dtype=np.int32)
        row_tb = xp.empty(max(int(row_off[-1]), 1), dtype=np.int64)
        ops_t = xp.empty(max(int(ops_off[-1]), 1), dtype=np.uint8)
        ops_n = xp.empty(max(int(ops_off[-1]), 1), dtype=np.int32)
        nops = xp.empty(m, dtype=np.int32)
        backend.launch(greedy, "greedy_gapped_fill", m, dev_codes, *sub, np.int64(m), *consts, np.int64(w),
                       np.int64(memory), backend.asarray(work_off), work, backend.asarray(dist[2 * lo:2 * hi]),
                       backend.asarray(tb_off[:-1]), tb, backend.asarray(row_off[:-1]), row_lo, row_tb,
                       backend.asarray(ops_off), ops_t, ops_n, nops)
        t_h, n_h, c_h = backend.to_host(ops_t), backend.to_host(ops_n), backend.to_host(nops).astype(np.int64)
        del work, tb, row_lo, row_tb
        with numba_guard():  # a parallel host pass, maybe beside another searcher's thread
            counts = reduce_gaps(host_codes, q_off[pick], q_len[pick], t_off[pick], t_len[pick],
                                 out["q_start"][pick], out["q_end"][pick], out["t_start"][pick],
                                 out["t_end"][pick], ops_off, t_h, n_h, c_h)
        keep = ragged.offsets(counts)
        index = np.repeat(ops_off[:-1], counts) + (np.arange(int(keep[-1])) - np.repeat(keep[:-1], counts))
        parts.append((t_h[index], n_h[index], keep))
        lo = hi
    out["ops"] = np.concatenate([p[0] for p in parts]).astype(np.uint8)
    out["op_len"] = np.concatenate([p[1] for p in parts]).astype(np.int32)
    out["op_offsets"] = ragged.offsets(np.concatenate([np.diff(p[2]) for p in parts]))
    return out


@njit(cache=True, inline="always")
def _same(codes, qo, to, q_lo, q_hi, t_lo, t_hi, a, b):
    """Query base ``a`` equals target base ``b`` (codes as they are), both inside the seed's sequences."""
    return q_lo <= a < q_hi and t_lo <= b < t_hi and codes[qo + a] == codes[to + b]


@njit(cache=True)
def _rebuild(t, c, a, cnt):
    """``s_RebuildEditScript`` on ``t/c[a:a + cnt]`` in place: empty operations dropped, equal
    neighbours merged, a gap of one kind after one of the other folded into substitutions.
    Returns the new count."""
    j = -1
    for i in range(cnt):
        op, n = t[a + i], c[a + i]
        if n == 0:
            continue
        if j >= 0 and op == t[a + j]:
            c[a + j] += n
        elif j == -1 or op == SUB or t[a + j] == SUB:
            j += 1
            t[a + j] = op
            c[a + j] = n
        else:
            diff = c[a + j] - n
            if diff > 0:
                c[a + j - 1] += n
                c[a + j] = diff
            elif diff < 0:
                c[a + j - 1] += c[a + j]
                c[a + j] = -diff
                t[a + j] = op
            else:
                c[a + j - 1] += c[a + j]
                j -= 1
    return j + 1


@njit(cache=True)
def _move_gap(t, c, a, cnt, pos, before, after):
    """``s_UpdateEditScript``: the substitution run at ``a + pos`` grows by ``before`` columns on its
    left and ``after`` on its right, taken from the operations beside it, which become one
    substitution run and one gap of the net length; a side that runs out of operations stops
    the whole edit there."""
    if before > 0:
        k = pos
        qd = before
        sd = before
        while qd > 0 or sd > 0:
            k -= 1
            if k < 0:
                return
            op, n = t[a + k], c[a + k]
            if op == SUB:
                qd -= n
                sd -= n
            elif op == INS:
                qd -= n
            else:
                sd -= n
        c[a + k] = -max(qd, sd)
        t[a + k] = SUB
        for x in range(k + 1, pos - 1):
            c[a + x] = 0
        c[a + pos] += before
        net = qd - sd
        t[a + pos - 1] = DEL if net > 0 else INS
        c[a + pos - 1] = net if net > 0 else -net
    if after > 0:
        k = pos
        qd = after
        sd = after
        while qd > 0 or sd > 0:
            k += 1
            if k >= cnt:
                return
            op, n = t[a + k], c[a + k]
            if op == SUB:
                qd -= n
                sd -= n
            elif op == INS:
                qd -= n
            else:
                sd -= n
        c[a + k] = -max(qd, sd)
        t[a + k] = SUB
        for x in range(k - 1, pos + 1, -1):
            c[a + x] = 0
        c[a + pos] += after
        net = qd - sd
        t[a + pos + 1] = DEL if net > 0 else INS
        c[a + pos + 1] = net if net > 0 else -net


@njit(cache=True)
def _reduce_one(codes, qo, to, ql, tl, q_lo, q_hi, t_lo, t_hi, t, c, a, cnt):
    """``s_ReduceGaps`` (BLAST+ 2.12) of one edit script ``t/c[a:a + cnt]`` of the alignment
    ``[q_lo, q_hi) x [t_lo, t_hi)`` of the seed's sequences ``codes[qo:qo + ql]`` and ``codes[to:to + tl]``
    (bases compared as codes, an N equal to an N, anything outside them equal to nothing):
    a run of at least 12 substitutions takes in the matches continuing it past the gaps beside
    it; a gap, under 12 columns of gap and substitutions, and a gap of the other kind become
    one gap where that loses no more matches than it saves gap columns. Returns the new count."""
    q1 = q_lo
    s1 = t_lo
    for i in range(cnt):
        op, n = t[a + i], c[a + i]
        if n == 0:
            continue
        if op == SUB:
            if n >= 12:
                nm1 = 1
                if i > 0:
                    while q1 - nm1 >= q_lo and _same(codes, qo, to, 0, ql, 0, tl, q1 - nm1, s1 - nm1):
                        nm1 += 1
                q1 += n
                s1 += n
                nm2 = 0
                if i < cnt - 1:
                    while q1 + 1 < q_hi and s1 + 1 < t_hi:
                        equal = _same(codes, qo, to, 0, ql, 0, tl, q1, s1)
                        q1 += 1
                        s1 += 1
                        if not equal:
                            break
                        nm2 += 1
                if nm1 > 1 or nm2 > 0:
                    _move_gap(t, c, a, cnt, i, nm1 - 1, nm2)
                q1 -= 1
                s1 -= 1
            else:
                q1 += n
                s1 += n
        elif op == INS:
            q1 += n
        else:
            s1 += n
    cnt = _rebuild(t, c, a, cnt)
    qa = q_lo
    sa = t_lo
    for i in range(cnt):
        op = t[a + i]
        if op == SUB:
            qa += c[a + i]
            sa += c[a + i]
            continue
        if i > 1 and op != t[a + i - 2] and c[a + i - 2] > 0:
            total = c[a + i] + c[a + i - 1] + c[a + i - 2]
            if total == 3:
                c[a + i - 2] = 0
                c[a + i - 1] = 2
                c[a + i] = 0
                if op == INS:
                    qa += 1
                else:
                    sa += 1
            elif total < 12:
                nm1 = 0
                nm2 = 0
                shift = min(c[a + i], c[a + i - 2])
                qa -= c[a + i - 1]
                sa -= c[a + i - 1]
                qb = qa
                sb = sa
                if op == INS:
                    sa -= shift
                else:
                    qa -= shift
                for _ in range(c[a + i - 1]):
                    nm1 += _same(codes, qo, to, 0, ql, 0, tl, qb, sb)
                    nm2 += _same(codes, qo, to, 0, ql, 0, tl, qa, sa)
                    qb += 1
                    sb += 1
                    qa += 1
                    sa += 1
                for _ in range(shift):
                    nm2 += _same(codes, qo, to, 0, ql, 0, tl, qa, sa)
                    qa += 1
                    sa += 1
                if nm2 >= nm1 - shift:
                    c[a + i - 2] -= shift
                    c[a + i - 1] += shift
                    c[a + i] -= shift
                else:
                    qa = qb
                    sa = sb
        if op == INS:
            qa += c[a + i]
        else:
            sa += c[a + i]
    return _rebuild(t, c, a, cnt)


@njit(parallel=True, cache=True)
def reduce_gaps(codes, q_off, q_len, t_off, t_len, q_start, q_end, t_start, t_end, ops_off, t, c, count):
    """:func:`_reduce_one` of every seed's script (``t/c[ops_off[k]:]``, ``count[k]`` long, edited in
    place). Returns the new counts."""
    out = np.empty(count.size, np.int64)
    for k in numba.prange(count.size):
        out[k] = _reduce_one(codes, q_off[k], t_off[k], q_len[k], t_len[k], q_start[k], q_end[k], t_start[k],
                             t_end[k], t, c, ops_off[k], count[k])
    return out

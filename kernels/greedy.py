"""Numba twins of megablast's greedy gapped extension (``gseek.dp.greedy``): one seed a slot.

BLAST+'s non-affine greedy alignment (``BLAST_GreedyAlign``; Zhang et al. 2000), the
rules in ``docs/blast.md`` ("Megablast's greedy extension"), the readable reference in
``tests/reference_greedy.py``. Each side of an extension runs outwards from the seed:
the right side from the seed pair itself, the left side from the pair before it. Scores
are at twice the scale (``match = 2 * reward``, ``mismatch = -2 * penalty``, X doubled).

Per distance d the furthest-reaching offsets of the diagonals in range live in a ring
of ``width`` entries a row (indexed by diagonal mod width; a row and the two diagonals
either side of its range must fit, else the seed is flagged and done again with a wider
ring); the best score of each distance in a ring of ``memory`` entries (the X-drop looks
back ``offset`` distances). The fill pass copies each row (its range and the sentinels
beside it) into ``tb`` and walks back from the best point, writing the edit operations
(``SUB`` runs, ``INS``/``DEL`` of one column, merged) of the left side in alignment order
from the slot's start and of the right side backwards from its end.
"""

from __future__ import annotations

import numba
import numpy as np

from gseek.kernels._jit import njit
from gseek.kernels.dp import OP_D, OP_EQ, OP_I, OP_X  # BAM CIGAR codes of the final runs

CUDA_SOURCE = "greedy.cu"
CONSTANTS: dict[str, int] = {}

#: An offset no diagonal can hold (BLAST+'s kInvalidOffset).
INVALID = -2
#: Edit operations: aligned columns, a query base against a gap, a subject base against a gap.
SUB, INS, DEL = 0, 1, 2
#: Bits of ``out_edges``: the left / right side reached the end of the subject it was given.
EDGE_LEFT, EDGE_RIGHT = 1, 2
#: ``out_edges`` bit: a side's diagonals did not fit the ring (the seed is done again, wider).
OVERFLOW = 4


@njit(cache=True, inline="always")
def _slide(codes, b1, b2, step, i, j, len1, len2):
    """Matches from (i, j) on: a query base 0-3 equal to the subject's."""
    n = 0
    while i + n < len1 and j + n < len2:
        a = codes[b1 + step * (i + n)]
        if a > 3 or a != codes[b2 + step * (j + n)]:
            break
        n += 1
    return n


@njit(cache=True)
def _side(codes, b1, b2, step, len1, len2, match, mismatch, xdrop, prev, cur, best_at, stop, tb, tb_base, row_lo,
          row_tb, row_base, write):
    """One side: (dist, len1, len2, diag, seed_q, seed_s, seed_len, edge, cells, overflow) of its best point.

    ``prev``/``cur``: the two rows' rings (their size a power of two); ``best_at``: the ring of
    each distance's best score (a power of two above the look-back). With ``write``, runs to
    distance ``stop`` copying each row d - 1 (after its sentinels) to ``tb[tb_base + ...]``, its
    first diagonal to ``row_lo[row_base + d - 1]`` and its offset to ``row_tb``; ``cells``: the
    entries the copies of the rows before the best point take."""
    half = match // 2
    cost = match + mismatch
    offset = (xdrop + half) // cost + 1
    mask = prev.size - 1
    rmask = best_at.size - 1
    first = _slide(codes, b1, b2, step, 0, 0, len1, len2)
    seed_q = 0
    seed_s = 0
    seed_len = first
    if first == len1 or first == len2 or (write and stop <= 0):
        return 0, first, first, 0, seed_q, seed_s, seed_len, first == len2, 0, False
    prev[0] = first
    best_at[0] = first * match
    lower = -1
    upper = 1
    end1 = False
    end2 = False
    best_dist = 0
    best_diag = 0
    best_len2 = first
    cells = 0
    cells_best = 0
    d = 0
    while True:
        d += 1
        if upper - lower + 5 > prev.size:
            return best_dist, best_len2 + best_diag, best_len2, best_diag, seed_q, seed_s, seed_len, end2, \
                cells_best, True
        prev[(lower - 1) & mask] = INVALID
        prev[lower & mask] = INVALID
        prev[upper & mask] = INVALID
        prev[(upper + 1) & mask] = INVALID
        if write:
            row_lo[row_base + d - 1] = lower - 1
            row_tb[row_base + d - 1] = tb_base + cells
            for k in range(lower - 1, upper + 2):
                tb[tb_base + cells + k - lower + 1] = prev[k & mask]
        cells += upper - lower + 3
        floor = (0 if d < offset else best_at[(d - offset) & rmask]) + cost * d - xdrop
        floor = -((-floor) // half)
        ext_best = 0
        len2_best = 0
        diag_best = 0
        t_lo = lower
        t_hi = upper
        for k in range(t_lo, t_hi + 1):
            a = prev[(k + 1) & mask]
            b = prev[k & mask]
            j = (a if a > b else b) + 1
            c = prev[(k - 1) & mask]
            if c > j:
                j = c
            i = j + k
            if j < 0 or i + j < floor:
                if k == lower:
                    lower += 1
                else:
                    cur[k & mask] = INVALID
                continue
            upper = k
            n = _slide(codes, b1, b2, step, i, j, len1, len2)
            if n > seed_len:
                seed_q = i
                seed_s = j
                seed_len = n
            i += n
            j += n
            cur[k & mask] = j
            if i + j > ext_best:
                ext_best = i + j
                len2_best = j
                diag_best = k
            if j == len2:
                lower = k + 1
                end2 = True
            if i == len1:
                upper = k - 1
                end1 = True
        score = ext_best * half - d * cost
        last = best_at[(d - 1) & rmask]
        if score >= last:
            best_at[d & rmask] = score
            best_dist = d
            best_diag = diag_best
            best_len2 = len2_best
            cells_best = cells
        else:
            best_at[d & rmask] = last
        if (write and d == stop) or lower > upper:
            break
        if not end2:
            lower -= 1
        if not end1:
            upper += 1
        tmp = prev
        prev = cur
        cur = tmp
    return best_dist, best_len2 + best_diag, best_len2, best_diag, seed_q, seed_s, seed_len, end2, cells_best, False


@njit(cache=True, inline="always")
def _rings(work, w0, width, memory):
    """A seed's two rings of diagonals and its ring of best scores, in ``work`` from ``w0``."""
    return work[w0:w0 + width], work[w0 + width:w0 + 2 * width], work[w0 + 2 * width:w0 + 2 * width + memory]


@njit(cache=True)
def _sides(codes, qo, to, qp, tp, ql, tl, match, mismatch, xdrop, prev, cur, best_at):
    """Both sides of one seed, score only: (right, left) as :func:`_side` returns them."""
    dummy8 = np.zeros(1, np.int32)
    dummy64 = np.zeros(1, np.int64)
    r = _side(codes, qo + qp, to + tp, 1, ql - qp, tl - tp, match, mismatch, xdrop, prev, cur, best_at, -1, dummy8,
              0, dummy8, dummy64, 0, False)
    left = _side(codes, qo + qp - 1, to + tp - 1, -1, qp, tp, match, mismatch, xdrop, prev, cur, best_at, -1,
                 dummy8, 0, dummy8, dummy64, 0, False)
    return r, left


@njit(parallel=True, cache=True)
def greedy_gapped_score(codes, q_off, q_len, t_off, t_len, q_pos, t_pos, n, match, mismatch, xdrop, width, memory,
                        work_off, work, out_score, out_q_start, out_q_end, out_t_start, out_t_end, out_q_seed,
                        out_t_seed, out_edges, out_dist, out_cells):
    """Greedy extension of every seed, score only: the score (twice the scale), ends, the
    trace-back's start estimate (the middle of the longest run of matches either side found,
    within the alignment's box), ``out_edges`` (:data:`EDGE_LEFT`, :data:`EDGE_RIGHT`,
    :data:`OVERFLOW`), each side's best distance (``out_dist[2k]`` right, ``[2k + 1]`` left)
    and the trace-back entries each side's fill will copy (``out_cells``, the same layout).
    ``work[work_off[k]:]`` holds the seed's two rings of ``width`` and one of ``memory``."""
    for k in numba.prange(n):
        qo, to, qp, tp = q_off[k], t_off[k], q_pos[k], t_pos[k]
        prev, cur, best_at = _rings(work, work_off[k], width, memory)
        r, left = _sides(codes, qo, to, qp, tp, q_len[k], t_len[k], match, mismatch, xdrop, prev, cur, best_at)
        half = match // 2
        out_score[k] = (r[1] + r[2] + left[1] + left[2]) * half - (r[0] + left[0]) * (match + mismatch)
        q_lo = qp - left[1]
        t_lo = tp - left[2]
        q_hi = qp + r[1]
        t_hi = tp + r[2]
        out_q_start[k] = q_lo
        out_q_end[k] = q_hi
        out_t_start[k] = t_lo
        out_t_end[k] = t_hi
        q_r = qp + r[4]
        t_r = tp + r[5]
        valid_r = 0
        if q_r < q_hi and t_r < t_hi:
            valid_r = min(q_hi - q_r, t_hi - t_r, r[6]) // 2
        else:
            q_r = qp
            t_r = tp
        q_l = qp - left[4]
        t_l = tp - left[5]
        valid_l = 0
        if q_l > q_lo and t_l > t_lo:
            valid_l = min(q_l - q_lo, t_l - t_lo, left[6]) // 2
        else:
            q_l = qp
            t_l = tp
        if valid_r > valid_l:
            out_q_seed[k] = q_r + valid_r
            out_t_seed[k] = t_r + valid_r
        else:
            out_q_seed[k] = q_l - valid_l
            out_t_seed[k] = t_l - valid_l
        out_edges[k] = (EDGE_LEFT if left[7] else 0) | (EDGE_RIGHT if r[7] else 0) | \
            (OVERFLOW if (r[9] or left[9]) else 0)
        out_dist[2 * k] = r[0]
        out_dist[2 * k + 1] = left[0]
        out_cells[2 * k] = r[8]
        out_cells[2 * k + 1] = left[8]


@njit(cache=True, inline="always")
def _emit(ops_t, ops_n, pos, dpos, count, op, n):
    """Appends ``n`` of ``op`` to a walk's operations (written at ``pos``, moving by ``dpos``;
    ``count`` written so far), merged into the last one of the same kind. Returns (pos, count)."""
    if n == 0:
        return pos, count
    if count > 0 and ops_t[pos - dpos] == op:
        ops_n[pos - dpos] += n
        return pos, count
    ops_t[pos] = op
    ops_n[pos] = n
    return pos + dpos, count + 1


@njit(cache=True)
def _walk(tb, row_lo, row_tb, row_base, dist, diag, len2, first, ops_t, ops_n, pos, dpos):
    """The operations of one side from its best point back to the seed (``BLAST_GreedyAlign``'s
    trace-back: of the three offsets of distance d - 1 beside the diagonal, the largest; ties to
    the same diagonal, then the one above). Returns how many were written."""
    count = 0
    d = dist
    j = len2
    while d > 0:
        r0 = row_tb[row_base + d - 1] - row_lo[row_base + d - 1]
        a = tb[r0 + diag - 1]
        b = tb[r0 + diag]
        c = tb[r0 + diag + 1]
        if a > (b if b > c else c):
            nd = diag - 1
            nj = a
        elif b > c:
            nd = diag
            nj = b
        else:
            nd = diag + 1
            nj = c
        if nd == diag:
            pos, count = _emit(ops_t, ops_n, pos, dpos, count, SUB, j - nj)
        elif nd < diag:
            pos, count = _emit(ops_t, ops_n, pos, dpos, count, SUB, j - nj)
            pos, count = _emit(ops_t, ops_n, pos, dpos, count, INS, 1)
        else:
            pos, count = _emit(ops_t, ops_n, pos, dpos, count, SUB, j - nj - 1)
            pos, count = _emit(ops_t, ops_n, pos, dpos, count, DEL, 1)
        d -= 1
        diag = nd
        j = nj
    pos, count = _emit(ops_t, ops_n, pos, dpos, count, SUB, first)
    return count


@njit(parallel=True, cache=True)
def greedy_gapped_fill(codes, q_off, q_len, t_off, t_len, q_pos, t_pos, n, match, mismatch, xdrop, width, memory,
                       work_off, work, dist, tb_off, tb, row_off, row_lo, row_tb, ops_off, ops_t, ops_n, out_nops):
    """Each seed again, to its sides' best distances (``dist``, as the score pass gave them),
    copying the rows (``tb`` from ``tb_off[2k]`` right, ``[2k + 1]`` left; ``row_lo``/``row_tb``
    from ``row_off[2k]``, ``[2k + 1]``), then the walks: the seed's edit script, left side's
    operations and right side's joined (merged at the seed when of one kind), at
    ``ops_off[k]`` (room for ``2 * (dist right + dist left) + 4``), ``out_nops[k]`` of them."""
    for k in numba.prange(n):
        qo, to, qp, tp = q_off[k], t_off[k], q_pos[k], t_pos[k]
        prev, cur, best_at = _rings(work, work_off[k], width, memory)
        r = _side(codes, qo + qp, to + tp, 1, q_len[k] - qp, t_len[k] - tp, match, mismatch, xdrop, prev, cur,
                  best_at, dist[2 * k], tb, tb_off[2 * k], row_lo, row_tb, row_off[2 * k], True)
        left = _side(codes, qo + qp - 1, to + tp - 1, -1, qp, tp, match, mismatch, xdrop, prev, cur, best_at,
                     dist[2 * k + 1], tb, tb_off[2 * k + 1], row_lo, row_tb, row_off[2 * k + 1], True)
        base = ops_off[k]
        room = ops_off[k + 1] - base
        first_r = _slide(codes, qo + qp, to + tp, 1, 0, 0, q_len[k] - qp, t_len[k] - tp)
        first_l = _slide(codes, qo + qp - 1, to + tp - 1, -1, 0, 0, qp, tp)
        nl = _walk(tb, row_lo, row_tb, row_off[2 * k + 1], left[0], left[3], left[2], first_l, ops_t, ops_n, base, 1)
        nr = _walk(tb, row_lo, row_tb, row_off[2 * k], r[0], r[3], r[2], first_r, ops_t, ops_n, base + room - 1, -1)
        at = base + nl
        src = base + room - nr
        if nl > 0 and nr > 0 and ops_t[at - 1] == ops_t[src]:
            ops_n[at - 1] += ops_n[src]
            src += 1
            nr -= 1
        for t in range(nr):
            ops_t[at + t] = ops_t[src + t]
            ops_n[at + t] = ops_n[src + t]
        out_nops[k] = nl + nr


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
def _take_side(t, c, a, cnt, pos, cols, step):
    """One side of :func:`_move_gap`: ``cols`` columns from the operations before (``step`` -1) or after
    (+1) the substitution run at ``a + pos``, which become one substitution run and one gap of the
    net length. False (nothing changed) when that side runs out of operations."""
    k = pos
    qd = cols
    sd = cols
    while qd > 0 or sd > 0:
        k += step
        if k < 0 or k >= cnt:
            return False
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
    for x in range(k - step, pos + step, -step):
        c[a + x] = 0
    c[a + pos] += cols
    net = qd - sd
    t[a + pos + step] = DEL if net > 0 else INS
    c[a + pos + step] = net if net > 0 else -net
    return True


@njit(cache=True)
def _move_gap(t, c, a, cnt, pos, before, after):
    """``s_UpdateEditScript``: the substitution run at ``a + pos`` grows by ``before`` columns on its
    left and ``after`` on its right (:func:`_take_side`); a side that runs out of operations stops
    the whole edit there."""
    if before > 0 and not _take_side(t, c, a, cnt, pos, before, -1):
        return
    if after > 0:
        _take_side(t, c, a, cnt, pos, after, 1)


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
def greedy_reduce(codes, q_off, q_len, t_off, t_len, n, q_start, q_end, t_start, t_end, ops_off, t, c, count):
    """:func:`_reduce_one` of every seed's edit script (``t/c[ops_off[k]:]``, ``count[k]`` operations;
    edited in place, ``count[k]`` its new length); ``q_start``... the alignments' ends in the seeds'
    sequences (``codes[q_off[k]:]``, ``codes[t_off[k]:]``)."""
    for k in numba.prange(n):
        count[k] = _reduce_one(codes, q_off[k], t_off[k], q_len[k], t_len[k], q_start[k], q_end[k], t_start[k],
                               t_end[k], t, c, ops_off[k], count[k])


# ------------------------------------------------------------------ BLAST+'s re-scoring of a traced-back HSP



@njit(cache=True)
def _rescore_one(codes, qo, to, ql, tl, q0, s0, t, c, a, cnt, reward, penalty, n_score, cutoff):
    """``Blast_HSPReevaluateWithAmbiguitiesGapped`` of one edit script ``t/c[a:a + cnt]`` from ``(q0, s0)``
    (linear gaps; the rules in :func:`greedy_rescore`), edited in place. Returns (kept operations, the
    first's index, score, q_start, q_end, s_start, s_end); 0 operations kept: dropped."""
    gap = reward - 2 * penalty
    restart_cut = cutoff if reward % 2 else 2 * cutoff  # BLAST+ sums at twice the scale only for an odd reward
    q = q0
    s = s0
    total = 0
    score = 0
    best_q0 = q
    best_s0 = s
    best_q1 = q
    best_s1 = s
    cur_q = q
    cur_s = s
    best_first = 0
    best_last = 0
    cur_first = 0
    best_last_n = -1
    for index in range(cnt):
        k = 0
        while k < c[a + index]:
            op = t[a + index]
            n = c[a + index]
            if op == SUB:
                x = codes[qo + q]
                y = codes[to + s]
                if x > 3 or y > 3:
                    total += 2 * n_score
                elif x == y:
                    total += 2 * reward
                else:
                    total += 2 * penalty
                q += 1
                s += 1
                k += 1
            elif op == DEL:
                total -= gap * n
                s += n
                k += n
            else:
                total -= gap * n
                q += n
                k += n
            if total < 0:
                if k < n:
                    c[a + index] = n - k
                    cur_first = index
                    k = 0
                else:
                    cur_first = index + 1
                total = 0
                cur_q = q
                cur_s = s
                if score < restart_cut:
                    best_q0 = q
                    best_s0 = s
                    score = 0
                    best_first = cur_first
                    best_last = cur_first
            elif total > score:
                score = total
                best_q0 = cur_q
                best_s0 = cur_s
                best_q1 = q
                best_s1 = s
                best_first = cur_first
                best_last = index
                best_last_n = k
    score //= 2
    if best_first < cnt and best_last < cnt:
        ext = 0
        i = best_q0
        j = best_s0
        while i > 0 and j > 0:
            i -= 1
            j -= 1
            x = codes[qo + i]
            if not (x < 4 and x == codes[to + j]):
                break
            ext += 1
        best_q0 -= ext
        best_s0 -= ext
        c[a + best_first] += ext
        if best_last == best_first:
            best_last_n += ext
        score += ext * reward
        ext = 0
        i = best_q1
        j = best_s1
        while i < ql and j < tl:
            x = codes[qo + i]
            if not (x < 4 and x == codes[to + j]):
                break
            i += 1
            j += 1
            ext += 1
        best_q1 += ext
        best_s1 += ext
        best_last_n += ext
        score += ext * reward
    if score < cutoff:
        return 0, best_first, score, best_q0, best_q1, best_s0, best_s1
    c[a + best_last] = best_last_n
    return best_last - best_first + 1, best_first, score, best_q0, best_q1, best_s0, best_s1


@njit(parallel=True, cache=True)
def greedy_rescore(codes, q_off, q_len, t_off, t_len, n, q_start, t_start, ops_off, t, c, count, reward, penalty,
                   n_score, cutoff, out_score, out_q_start, out_q_end, out_t_start, out_t_end, out_first):
    """Each seed's traced-back alignment (its edit script ``t/c[ops_off[k]:]``, ``count[k]`` operations,
    from ``(q_start, t_start)`` in its sequences) scored again as BLAST+ does for linear gaps
    (``Blast_HSPReevaluateWithAmbiguitiesGapped``): columns at twice the scale (a pair ``2 * reward`` or
    ``2 * penalty``, with an N ``2 * n_score``, a gap column ``reward - 2 * penalty``); where the sum falls
    below 0 the alignment starts again after that column, dropping the best part so far only while its
    score is under ``cutoff[k]`` (compared, as BLAST+ compares it, at twice the scale for an odd reward:
    ``2 * cutoff[k]`` with an even one); the best part (its first best
    end) grows by the exact matches beside it, ``reward`` each. Its score (halved, rounded down, plus those
    matches) and ends go to ``out_*``; its operations are ``t/c[ops_off[k] + out_first[k]:]``, ``count[k]``
    of them (0: the score is under the cutoff, the HSP dropped)."""
    for k in numba.prange(n):
        r = _rescore_one(codes, q_off[k], t_off[k], q_len[k], t_len[k], q_start[k], t_start[k], t, c, ops_off[k],
                         count[k], reward, penalty, n_score, cutoff[k])
        count[k] = r[0]
        out_first[k] = r[1]
        out_score[k] = r[2]
        out_q_start[k] = r[3]
        out_q_end[k] = r[4]
        out_t_start[k] = r[5]
        out_t_end[k] = r[6]


@njit(cache=True, inline="always")
def _run(runs, pos, nruns, last, length, code, n, write):
    """``n`` columns of ``code`` after a run of ``length`` columns of ``last``: the run grows, or is written
    (with ``write``) and a new one starts. Returns (pos, nruns, last, length)."""
    if code == last:
        return pos, nruns, last, length + n
    if length > 0:
        if write:
            runs[pos] = np.uint32((length << 4) | last)
            pos += 1
        nruns += 1
    return pos, nruns, code, n


@njit(parallel=True, cache=True)
def greedy_runs(codes, q_off, t_off, n, q_start, t_start, ops_off, t, c, first, count, run_off, runs, stats, write):
    """Each seed's kept edit script (``t/c[ops_off[k] + first[k]:]``, ``count[k]`` operations, from
    ``(q_start, t_start)``) as BAM CIGAR runs: substitutions split into ``=`` (equal bases 0-3) and ``X``.
    Counts the runs, matches, mismatches, gap columns and gap opens (``stats[0:5, k]``); with ``write``
    (the counts' prefix sums in ``run_off``), writes the runs at ``runs[run_off[k]:]``."""
    for k in numba.prange(n):
        qp = q_start[k]
        sp = t_start[k]
        qo = q_off[k]
        to = t_off[k]
        a = ops_off[k] + first[k]
        pos = run_off[k] if write else 0
        nruns = 0
        last = -1
        length = 0
        matches = mismatches = gap_cols = gap_opens = 0
        for i in range(count[k]):
            op = t[a + i]
            m = c[a + i]
            if op == SUB:
                for _ in range(m):
                    x = codes[qo + qp]
                    if x < 4 and x == codes[to + sp]:
                        matches += 1
                        pos, nruns, last, length = _run(runs, pos, nruns, last, length, OP_EQ, 1, write)
                    else:
                        mismatches += 1
                        pos, nruns, last, length = _run(runs, pos, nruns, last, length, OP_X, 1, write)
                    qp += 1
                    sp += 1
            else:
                code = OP_I if op == INS else OP_D
                gap_opens += code != last
                gap_cols += m
                pos, nruns, last, length = _run(runs, pos, nruns, last, length, code, m, write)
                if op == INS:
                    qp += m
                else:
                    sp += m
        pos, nruns, last, length = _run(runs, pos, nruns, last, length, -2, 0, write)  # the last run
        stats[0, k] = nruns
        stats[1, k] = matches
        stats[2, k] = mismatches
        stats[3, k] = gap_cols
        stats[4, k] = gap_opens

# One warp a seed on a GPU (greedy.cu's ``greedy_gapped_score_warp`` / ``_fill_warp``): the same results as
# the one-thread kernels, so the twins are the same functions.
greedy_gapped_score_warp = greedy_gapped_score
greedy_gapped_fill_warp = greedy_gapped_fill

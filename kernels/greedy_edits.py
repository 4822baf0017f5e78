"""The edit script of megablast's greedy trace-back, as BLAST+ edits and scores it again (CPU and the Numba
twins of ``kernels/greedy.cu``): the helpers of :mod:`gseek.kernels.greedy`'s ``greedy_reduce`` and
``greedy_rescore``, one seed's script each.

A script is ``t/c[a:a + cnt]``: operations (:data:`SUB` columns, :data:`INS` a query base against a gap,
:data:`DEL` a subject base against a gap) and their counts, in alignment order. :func:`_reduce_one` is
BLAST+'s ``s_ReduceGaps`` (with ``s_RebuildEditScript`` and ``s_UpdateEditScript``); :func:`_rescore_one`
is ``Blast_HSPReevaluateWithAmbiguitiesGapped`` for linear gaps. The kernels, their CUDA twins and the rules
are in :mod:`gseek.kernels.greedy` and ``docs/blast.md``; the readable reference in
``tests/reference_greedy.py``.
"""

from __future__ import annotations

from gseek.kernels._jit import njit

#: Edit operations: aligned columns, a query base against a gap, a subject base against a gap.
SUB, INS, DEL = 0, 1, 2


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

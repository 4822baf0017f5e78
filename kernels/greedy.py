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
from the slot's start and of the right side backwards from its end. The trace-back's edit
script is then edited and scored again as BLAST+ does (``greedy_reduce``, ``greedy_rescore``:
each seed's by the helpers of :mod:`gseek.kernels.greedy_edits`) and written as BAM CIGAR runs
(``greedy_runs``).
"""

from __future__ import annotations

import numba
import numpy as np

from gseek.kernels._jit import njit
from gseek.kernels.dp_rules import OP_D, OP_EQ, OP_I, OP_X  # BAM CIGAR codes of the final runs

from .greedy_edits import DEL, INS, SUB, _reduce_one, _rescore_one

CUDA_SOURCE = "greedy.cu"
CONSTANTS: dict[str, int] = {}

#: An offset no diagonal can hold (BLAST+'s kInvalidOffset).
INVALID = -2
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


# ------------------------------------------------ BLAST+'s gap edits and re-scoring (kernels/greedy_edits.py)


@njit(parallel=True, cache=True)
def greedy_reduce(codes, q_off, q_len, t_off, t_len, n, q_start, q_end, t_start, t_end, ops_off, t, c, count):
    """:func:`_reduce_one` of every seed's edit script (``t/c[ops_off[k]:]``, ``count[k]`` operations;
    edited in place, ``count[k]`` its new length); ``q_start``... the alignments' ends in the seeds'
    sequences (``codes[q_off[k]:]``, ``codes[t_off[k]:]``)."""
    for k in numba.prange(n):
        count[k] = _reduce_one(codes, q_off[k], t_off[k], q_len[k], t_len[k], q_start[k], q_end[k], t_start[k],
                               t_end[k], t, c, ops_off[k], count[k])


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

# One warp a seed on a GPU (greedy.cu's ``greedy_gapped_score_warp`` / ``_fill_warp``, ``greedy_rescore_warp``,
# ``greedy_runs_warp``): the same results as the one-thread kernels, so the twins are the same functions.
greedy_gapped_score_warp = greedy_gapped_score
greedy_gapped_fill_warp = greedy_gapped_fill
greedy_rescore_warp = greedy_rescore
greedy_runs_warp = greedy_runs

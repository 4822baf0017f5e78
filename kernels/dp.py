"""Numba twins of ``kernels/dp.cu``: same kernel names, same argument order.

Batched Gotoh DP, one pair per slot (pairs arrive sorted by the stage, see
:mod:`gseek.align`). The rules (gap cost, ties, end cell, trace-back bits) are
in ``docs/alignment.md``; ``tests/reference_dp.py`` is the readable reference.

The CUDA kernels sweep a pair in strips of rows and keep scores of the strip
boundary in a global work buffer; these twins sweep row by row with local
rows (the work buffer argument is unused) and produce identical outputs: the
same scores, end cells, overflow flags and trace-back words.
"""

from __future__ import annotations

import numba
import numpy as np

CUDA_SOURCE = "dp.cu"
#: Rows per strip of the score-only sweep and of the trace-back fill (4 bits
#: a cell, so 8 rows fill one 32-bit word), and slots per interleaved group.
CONSTANTS: dict[str, int] = {"SCORE_STRIP": 16, "TB_STRIP": 8, "LANES": 32}
SCORE_STRIP = CONSTANTS["SCORE_STRIP"]
TB_STRIP = CONSTANTS["TB_STRIP"]
LANES = CONSTANTS["LANES"]

# Mode flags (an ``int32`` argument of every kernel).
LOCAL = 1
#: Semiglobal free ends: query start / end, target start / end.
FREE_QS, FREE_QE, FREE_TS, FREE_TE = 2, 4, 8, 16

# Trace-back nibble of a cell: bits 0-1 the source of H, bit 2 "E extends",
# bit 3 "F extends".
SRC_DIAG, SRC_E, SRC_F, SRC_STOP = 0, 1, 2, 3
# BAM CIGAR op codes.
OP_I, OP_D, OP_EQ, OP_X = 1, 2, 7, 8

NEG_INF = -(1 << 28)
INT16_MAX = 32767


@numba.njit(cache=True)
def _sweep(codes, qo, m, to, n, table, alpha, o, e, flags, check16, strip, tb, tb_base, write_tb, Hrow, Frow):
    """One pair, row by row. Returns (score, q_end, t_end, overflow)."""
    local = (flags & LOCAL) != 0
    qs = local or (flags & FREE_QS) != 0
    ts = local or (flags & FREE_TS) != 0
    qe = (flags & FREE_QE) != 0
    te = (flags & FREE_TE) != 0
    oe = o + e
    Hrow[0] = 0
    for j in range(1, n + 1):
        Hrow[j] = 0 if ts else -(o + j * e)
        Frow[j] = NEG_INF
    best = NEG_INF
    bi = -1
    bj = -1
    if local:
        best, bi, bj = 0, 0, 0
    elif qe:
        best, bi, bj = Hrow[n], 0, n
    overflow = 0
    for i in range(1, m + 1):
        a = codes[qo + i - 1]
        diag = Hrow[0]
        hleft = 0 if qs else -(o + i * e)
        Hrow[0] = hleft
        eleft = NEG_INF
        r = (i - 1) % TB_STRIP
        word_base = tb_base + ((i - 1) // TB_STRIP) * n * LANES
        row_check = check16 and (i % strip == 0) and i < m
        if te and i == m and hleft > best:
            best, bi, bj = hleft, i, 0
        for j in range(1, n + 1):
            hup = Hrow[j]
            # E: gap in the query (D), along the row.
            e_open = hleft - oe
            e_more = eleft - e
            if e_more > e_open:
                ecur = e_more
                bits = 4
            else:
                ecur = e_open
                bits = 0
            # F: gap in the target (I), down the column.
            f_open = hup - oe
            f_more = Frow[j] - e
            if f_more > f_open:
                fcur = f_more
                bits |= 8
            else:
                fcur = f_open
            d = diag + table[a * alpha + codes[to + j - 1]]
            h = d
            if ecur > h:
                h = ecur
            if fcur > h:
                h = fcur
            if local and h <= 0:
                h = 0
                bits |= SRC_STOP
            elif h == d:
                bits |= SRC_DIAG
            elif h == ecur:
                bits |= SRC_E
            else:
                bits |= SRC_F
            if write_tb:
                w = word_base + (j - 1) * LANES
                if r == 0:
                    tb[w] = np.uint32(bits)
                else:
                    tb[w] |= np.uint32(bits << (4 * r))
            if row_check and (h > INT16_MAX or h < -INT16_MAX or fcur > INT16_MAX or fcur < -INT16_MAX):
                overflow = 1
            diag = hup
            Hrow[j] = h
            Frow[j] = fcur
            hleft = h
            eleft = ecur
            if local:
                if h > best:
                    best, bi, bj = h, i, j
            elif te and i == m:
                if h > best:
                    best, bi, bj = h, i, j
        if qe and not (te and i == m) and Hrow[n] > best:
            best, bi, bj = Hrow[n], i, n
    if not local and not qe and not te:
        best, bi, bj = Hrow[n], m, n
    elif not local and bi < 0:
        best, bi, bj = Hrow[n], m, n
    return best, bi, bj, overflow


@numba.njit(cache=True, inline="always")
def _group_base(grp_off, k):
    return grp_off[k // LANES] + (k % LANES)


@numba.njit(parallel=True, cache=True)
def _score(codes, q_off, q_len, t_off, t_len, n, table, alpha, gap_open, gap_extend, flags, check16,
           out_score, out_q_end, out_t_end, out_overflow):
    dummy = np.zeros(1, dtype=np.uint32)
    for k in numba.prange(n):
        m_ = q_len[k]
        n_ = t_len[k]
        Hrow = np.empty(n_ + 1, dtype=np.int32)
        Frow = np.empty(n_ + 1, dtype=np.int32)
        s, qe, te, ov = _sweep(codes, q_off[k], m_, t_off[k], n_, table, alpha, gap_open, gap_extend, flags,
                               check16, SCORE_STRIP, dummy, 0, False, Hrow, Frow)
        out_score[k] = s
        out_q_end[k] = qe
        out_t_end[k] = te
        out_overflow[k] = ov


def dp_score16(codes, q_off, q_len, t_off, t_len, n, table, alpha, gap_open, gap_extend, flags,
               grp_off, work, out_score, out_q_end, out_t_end, out_overflow):
    """Score and end cell of every slot; flags slots whose strip-boundary
    scores leave int16 (those are re-run with :func:`dp_score32`)."""
    _score(codes, q_off, q_len, t_off, t_len, n, table, alpha, gap_open, gap_extend, flags, True,
           out_score, out_q_end, out_t_end, out_overflow)


def dp_score32(codes, q_off, q_len, t_off, t_len, n, table, alpha, gap_open, gap_extend, flags,
               grp_off, work, out_score, out_q_end, out_t_end, out_overflow):
    """Score and end cell of every slot with 32-bit strip-boundary scores."""
    _score(codes, q_off, q_len, t_off, t_len, n, table, alpha, gap_open, gap_extend, flags, False,
           out_score, out_q_end, out_t_end, out_overflow)


@numba.njit(parallel=True, cache=True)
def _fill(codes, q_off, q_len, t_off, t_len, n, table, alpha, gap_open, gap_extend, flags, check16,
          tb_off, tb, out_score, out_q_end, out_t_end, out_overflow):
    for k in numba.prange(n):
        m_ = q_len[k]
        n_ = t_len[k]
        Hrow = np.empty(n_ + 1, dtype=np.int32)
        Frow = np.empty(n_ + 1, dtype=np.int32)
        s, qe, te, ov = _sweep(codes, q_off[k], m_, t_off[k], n_, table, alpha, gap_open, gap_extend, flags,
                               check16, TB_STRIP, tb, _group_base(tb_off, k), True, Hrow, Frow)
        out_score[k] = s
        out_q_end[k] = qe
        out_t_end[k] = te
        out_overflow[k] = ov


def dp_fill16(codes, q_off, q_len, t_off, t_len, n, table, alpha, gap_open, gap_extend, flags,
              grp_off, work, tb_off, tb, out_score, out_q_end, out_t_end, out_overflow):
    """Like :func:`dp_score16`, also writing the 4-bit trace-back of every cell."""
    _fill(codes, q_off, q_len, t_off, t_len, n, table, alpha, gap_open, gap_extend, flags, True,
          tb_off, tb, out_score, out_q_end, out_t_end, out_overflow)


def dp_fill32(codes, q_off, q_len, t_off, t_len, n, table, alpha, gap_open, gap_extend, flags,
              grp_off, work, tb_off, tb, out_score, out_q_end, out_t_end, out_overflow):
    """Like :func:`dp_score32`, also writing the 4-bit trace-back of every cell."""
    _fill(codes, q_off, q_len, t_off, t_len, n, table, alpha, gap_open, gap_extend, flags, False,
          tb_off, tb, out_score, out_q_end, out_t_end, out_overflow)


@numba.njit(cache=True, inline="always")
def _push(cigar, base, count, last_op, op):
    """Append one column of ``op`` to the (reversed) run-length CIGAR."""
    if count > 0 and (cigar[base + count - 1] & 15) == op:
        cigar[base + count - 1] += 16
        return count
    cigar[base + count] = np.uint32(16 | op)
    return count + 1


@numba.njit(parallel=True, cache=True)
def dp_walk(codes, q_off, q_len, t_off, t_len, n, flags, no_match_code, tb_off, tb, q_end, t_end, cig_off,
            cigar, out_n_cigar, out_q_start, out_t_start, out_matches, out_mismatches, out_gap_cols,
            out_gap_opens):
    """Walk every slot's trace-back from its end cell to its start: CIGAR runs
    (BAM encoding ``len << 4 | op``), start cell, column counts."""
    local = (flags & LOCAL) != 0
    qs = local or (flags & FREE_QS) != 0
    ts = local or (flags & FREE_TS) != 0
    for k in numba.prange(n):
        nn = t_len[k]
        base = tb_off[k // LANES] + (k % LANES)
        cb = cig_off[k]
        i = q_end[k]
        j = t_end[k]
        qo = q_off[k]
        to = t_off[k]
        state = 0  # 0: H, 1: E, 2: F
        count = 0
        matches = mismatches = gap_cols = gap_opens = 0
        prev = -1
        while True:
            if state == 0 and (i == 0 or j == 0):
                if i > 0 and not qs:
                    for _ in range(i):
                        count = _push(cigar, cb, count, prev, OP_I)
                    gap_cols += i
                    gap_opens += 1
                    i = 0
                if j > 0 and not ts:
                    for _ in range(j):
                        count = _push(cigar, cb, count, prev, OP_D)
                    gap_cols += j
                    gap_opens += 1
                    j = 0
                break
            word = tb[base + (((i - 1) // TB_STRIP) * nn + (j - 1)) * LANES]
            bits = (word >> np.uint32(4 * ((i - 1) % TB_STRIP))) & np.uint32(15)
            if state == 1:
                count = _push(cigar, cb, count, prev, OP_D)
                if prev != OP_D:
                    gap_opens += 1
                prev = OP_D
                gap_cols += 1
                state = 1 if (bits & 4) else 0
                j -= 1
                continue
            if state == 2:
                count = _push(cigar, cb, count, prev, OP_I)
                if prev != OP_I:
                    gap_opens += 1
                prev = OP_I
                gap_cols += 1
                state = 2 if (bits & 8) else 0
                i -= 1
                continue
            src = bits & 3
            if src == SRC_STOP:
                break
            if src == SRC_DIAG:
                a = codes[qo + i - 1]
                b = codes[to + j - 1]
                if a == b and a != no_match_code:
                    count = _push(cigar, cb, count, prev, OP_EQ)
                    prev = OP_EQ
                    matches += 1
                else:
                    count = _push(cigar, cb, count, prev, OP_X)
                    prev = OP_X
                    mismatches += 1
                i -= 1
                j -= 1
            elif src == SRC_E:
                state = 1
            else:
                state = 2
        # The walk wrote the runs end-first: reverse them in place.
        lo = cb
        hi = cb + count - 1
        while lo < hi:
            tmp = cigar[lo]
            cigar[lo] = cigar[hi]
            cigar[hi] = tmp
            lo += 1
            hi -= 1
        out_n_cigar[k] = count
        out_q_start[k] = i
        out_t_start[k] = j
        out_matches[k] = matches
        out_mismatches[k] = mismatches
        out_gap_cols[k] = gap_cols
        out_gap_opens[k] = gap_opens


@numba.njit(parallel=True, cache=True)
def xdrop_ungapped(codes, q_off, q_len, t_off, t_len, q_pos, t_pos, n, table, alpha, xdrop,
                   out_score, out_q_start, out_q_end):
    """BLAST ungapped X-drop extension of each seed (q_pos, t_pos) both ways."""
    for k in numba.prange(n):
        qo = q_off[k]
        to = t_off[k]
        qp = q_pos[k]
        tp = t_pos[k]
        m_ = q_len[k]
        n_ = t_len[k]
        best_r = 0
        run = 0
        end = qp
        d = 0
        while qp + d < m_ and tp + d < n_:
            run += table[codes[qo + qp + d] * alpha + codes[to + tp + d]]
            if run > best_r:
                best_r = run
                end = qp + d + 1
            elif run < best_r - xdrop:
                break
            d += 1
        best_l = 0
        run = 0
        start = qp
        d = 1
        while qp - d >= 0 and tp - d >= 0:
            run += table[codes[qo + qp - d] * alpha + codes[to + tp - d]]
            if run > best_l:
                best_l = run
                start = qp - d
            elif run < best_l - xdrop:
                break
            d += 1
        out_score[k] = best_r + best_l
        out_q_start[k] = start
        out_q_end[k] = end

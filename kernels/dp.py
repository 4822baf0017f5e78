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

from gseek.kernels._jit import njit

# The family's shared rules (mode flags, trace-back nibble, CIGAR codes, NEG_INF, _emit) and its
# X-drop kernels live beside it; imported here, so that every kernel of dp.cu has its twin here.
from .dp_rules import (FREE_QE, FREE_QS, FREE_TE, FREE_TS, INT16_MAX, LOCAL, NEG_INF, OP_D, OP_EQ, OP_I,  # noqa: F401
                       OP_X, SRC_DIAG, SRC_E, SRC_F, SRC_STOP, _emit)
from .dp_xdrop import (xdrop_gapped_fill, xdrop_gapped_fill_warp, xdrop_gapped_host,  # noqa: F401
                       xdrop_gapped_score, xdrop_gapped_score_warp, xdrop_gapped_walk, xdrop_ungapped)

CUDA_SOURCE = "dp.cu"
#: Rows per strip of the score-only sweep and of the trace-back fill (4 bits
#: a cell, so 8 rows fill one 32-bit word), and slots per interleaved group.
CONSTANTS: dict[str, int] = {"SCORE_STRIP": 16, "TB_STRIP": 8, "LANES": 32}
#: Lanes of a CUDA warp: the warp kernels' wavefront width and trace-back row
#: (``dp.cu`` writes it as 32; the interleaved layout's LANES is the same number).
WARP = 32
SCORE_STRIP = CONSTANTS["SCORE_STRIP"]
TB_STRIP = CONSTANTS["TB_STRIP"]
LANES = CONSTANTS["LANES"]

assert LANES == WARP, "the trace-back walk steps columns by LANES in both layouts"


@njit(cache=True, inline="always")
def _sweep_start(flags, n, o, e, Hrow, Frow):
    """The mode flags, row 0 (``Hrow``; ``Frow`` empty) and the end cell before any row."""
    local = (flags & LOCAL) != 0
    qs = local or (flags & FREE_QS) != 0
    ts = local or (flags & FREE_TS) != 0
    qe = (flags & FREE_QE) != 0
    te = (flags & FREE_TE) != 0
    Hrow[0] = 0
    for j in range(1, n + 1):
        Hrow[j] = 0 if ts else -(o + j * e)
        Frow[j] = NEG_INF
    best, bi, bj = NEG_INF, -1, -1
    if local:
        best, bi, bj = 0, 0, 0
    elif qe:
        best, bi, bj = Hrow[n], 0, n
    return local, qs, ts, qe, te, best, bi, bj


@njit(cache=True, inline="always")
def _sweep_end(local, qe, te, best, bi, bj, h_last, m, n):
    """The end cell after the last row: the corner for global, unless a free end won."""
    if not local and ((not qe and not te) or bi < 0):
        return h_last, m, n
    return best, bi, bj


@njit(cache=True, inline="always")
def _tb_row(warp, base, s, n):
    """Index of the trace-back word of strip ``s`` at column 1; column j is
    ``(j - 1) * LANES`` further. One thread's slot is interleaved by lane
    (``base`` = its group's offset + lane); one warp's slot (``warp``, the
    ``*_warp`` kernels) stores pass p = s // 32, step t = j - 1 + s % 32,
    lane s % 32 at ``base + (p * (n + 31) + t) * 32 + lane``. Column stride:
    LANES, which equals WARP (checked at import)."""
    if warp:
        return base + ((s // WARP) * (n + WARP - 1) + (s % WARP)) * WARP + (s % WARP)
    return base + s * n * LANES


@njit(cache=True)
def _sweep(codes, qo, m, to, n, table, alpha, o, e, flags, check16, strip, tb, tb_base, write_tb, warp, Hrow, Frow):
    """One pair, row by row. Returns (score, q_end, t_end, overflow)."""
    local, qs, ts, qe, te, best, bi, bj = _sweep_start(flags, n, o, e, Hrow, Frow)
    oe = o + e
    overflow = 0
    for i in range(1, m + 1):
        a = codes[qo + i - 1]
        diag = Hrow[0]
        hleft = 0 if qs else -(o + i * e)
        Hrow[0] = hleft
        eleft = NEG_INF
        r = (i - 1) % TB_STRIP
        word_base = _tb_row(warp, tb_base, (i - 1) // TB_STRIP, n)
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
    best, bi, bj = _sweep_end(local, qe, te, best, bi, bj, Hrow[n], m, n)
    return best, bi, bj, overflow


@njit(cache=True)
def _sweep_score(codes, qo, m, to, n, table, alpha, o, e, flags, check16, strip, Hrow, Frow):
    """:func:`_sweep` without trace-back: the same (score, q_end, t_end, overflow).

    The cell loop keeps only the maxima (no source bits, no trace-back
    stores), and the 16-bit check runs over the finished row; visiting
    cells in the same order with the same strict ``>`` keeps the end cell.
    """
    local, qs, ts, qe, te, best, bi, bj = _sweep_start(flags, n, o, e, Hrow, Frow)
    oe = o + e
    overflow = 0
    floor = 0 if local else NEG_INF
    for i in range(1, m + 1):
        row = codes[qo + i - 1] * alpha
        diag = Hrow[0]
        hleft = 0 if qs else -(o + i * e)
        Hrow[0] = hleft
        eleft = NEG_INF
        last = te and i == m
        if last and hleft > best:
            best, bi, bj = hleft, i, 0
        track = local or last
        for j in range(1, n + 1):
            hup = Hrow[j]
            ecur = max(hleft - oe, eleft - e)
            fcur = max(hup - oe, Frow[j] - e)
            h = max(max(diag + table[row + codes[to + j - 1]], ecur), max(fcur, floor))
            diag = hup
            Hrow[j] = h
            Frow[j] = fcur
            hleft = h
            eleft = ecur
            if track and h > best:
                best, bi, bj = h, i, j
        if check16 and i % strip == 0 and i < m:
            for j in range(1, n + 1):
                if Hrow[j] > INT16_MAX or Hrow[j] < -INT16_MAX or Frow[j] > INT16_MAX or Frow[j] < -INT16_MAX:
                    overflow = 1
        if qe and not last and Hrow[n] > best:
            best, bi, bj = Hrow[n], i, n
    best, bi, bj = _sweep_end(local, qe, te, best, bi, bj, Hrow[n], m, n)
    return best, bi, bj, overflow


@njit(cache=True, inline="always")
def _slot_base(warp, tb_off, k):
    """Where slot k's trace-back starts: its own offset (``warp``) or its
    group's offset plus its lane."""
    if warp:
        return tb_off[k]
    return tb_off[k // LANES] + (k % LANES)


@njit(parallel=True, cache=True, nogil=True)
def _score(codes, q_off, q_len, t_off, t_len, n, table, alpha, gap_open, gap_extend, flags, check16,
           out_score, out_q_end, out_t_end, out_overflow):
    for k in numba.prange(n):
        m_ = q_len[k]
        n_ = t_len[k]
        Hrow = np.empty(n_ + 1, dtype=np.int32)
        Frow = np.empty(n_ + 1, dtype=np.int32)
        s, qe, te, ov = _sweep_score(codes, q_off[k], m_, t_off[k], n_, table, alpha, gap_open, gap_extend,
                                     flags, check16, SCORE_STRIP, Hrow, Frow)
        out_score[k] = s
        out_q_end[k] = qe
        out_t_end[k] = te
        out_overflow[k] = ov


def _score_kernel(name: str, check16: bool, doc: str):
    """The twin of CUDA kernel ``name``: :func:`_score` with or without the 16-bit check."""

    def kernel(codes, q_off, q_len, t_off, t_len, n, table, alpha, gap_open, gap_extend, flags,
               grp_off, work, out_score, out_q_end, out_t_end, out_overflow):
        _score(codes, q_off, q_len, t_off, t_len, n, table, alpha, gap_open, gap_extend, flags, check16,
               out_score, out_q_end, out_t_end, out_overflow)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = doc
    return kernel


dp_score16 = _score_kernel("dp_score16", True, """Score and end cell of every slot; flags slots whose
    strip-boundary scores leave int16 (those are re-run with :func:`dp_score32`).""")
dp_score32 = _score_kernel("dp_score32", False, "Score and end cell of every slot with 32-bit strip-boundary scores.")


@njit(parallel=True, cache=True, nogil=True)
def _fill(codes, q_off, q_len, t_off, t_len, n, table, alpha, gap_open, gap_extend, flags, check16,
          tb_off, tb, warp, out_score, out_q_end, out_t_end, out_overflow):
    for k in numba.prange(n):
        m_ = q_len[k]
        n_ = t_len[k]
        Hrow = np.empty(n_ + 1, dtype=np.int32)
        Frow = np.empty(n_ + 1, dtype=np.int32)
        s, qe, te, ov = _sweep(codes, q_off[k], m_, t_off[k], n_, table, alpha, gap_open, gap_extend, flags,
                               check16, TB_STRIP, tb, _slot_base(warp, tb_off, k), True, warp, Hrow, Frow)
        out_score[k] = s
        out_q_end[k] = qe
        out_t_end[k] = te
        out_overflow[k] = ov


def _fill_kernel(name: str, check16: bool, warp: bool, doc: str):
    """The twin of CUDA kernel ``name``: :func:`_fill` with or without the
    16-bit check, trace-back words in the one-thread or the warp layout."""

    def kernel(codes, q_off, q_len, t_off, t_len, n, table, alpha, gap_open, gap_extend, flags,
               grp_off, work, tb_off, tb, out_score, out_q_end, out_t_end, out_overflow):
        _fill(codes, q_off, q_len, t_off, t_len, n, table, alpha, gap_open, gap_extend, flags, check16,
              tb_off, tb, warp, out_score, out_q_end, out_t_end, out_overflow)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = doc
    return kernel


dp_fill16 = _fill_kernel("dp_fill16", True, False,
                         "Like :func:`dp_score16`, also writing the 4-bit trace-back of every cell.")
dp_fill32 = _fill_kernel("dp_fill32", False, False,
                         "Like :func:`dp_score32`, also writing the 4-bit trace-back of every cell.")

# Warp-per-slot kernels (one CUDA warp sweeps a long pair as a wavefront of
# 32 strips). ``grp_off`` / ``tb_off`` hold one offset per slot; the results
# are the one-thread kernels' (on the CPU the same sweeps), the trace-back
# words in the warp layout (:func:`_tb_row`).
dp_score16_warp = _score_kernel("dp_score16_warp", True, ":func:`dp_score16` of long pairs (one warp a slot on a GPU).")
dp_score32_warp = _score_kernel("dp_score32_warp", False, ":func:`dp_score32` of long pairs (one warp a slot on a GPU).")
dp_fill16_warp = _fill_kernel("dp_fill16_warp", True, True, ":func:`dp_fill16` of long pairs, warp layout.")
dp_fill32_warp = _fill_kernel("dp_fill32_warp", False, True, ":func:`dp_fill32` of long pairs, warp layout.")


@njit(cache=True)
def _walk_one(codes, qo, to, nn, i, j, qs, ts, no_match_code, warp, tb, base, cigar, last, write):
    """Walk one slot's trace-back from (i, j); with ``write``, its runs end at
    ``cigar[last]``. Returns (runs, q_start, t_start, matches, mismatches,
    gap_cols, gap_opens)."""
    state = 0  # 0: H, 1: E, 2: F
    pos = last
    run_op = 0
    run_len = 0
    runs = 0
    matches = mismatches = gap_cols = gap_opens = 0
    while True:
        if state == 0 and (i == 0 or j == 0):
            if i > 0 and not qs:
                for _ in range(i):
                    pos, run_op, run_len, f = _emit(cigar, pos, run_op, run_len, OP_I, write)
                    runs += f
                gap_cols += i
                gap_opens += 1
                i = 0
            if j > 0 and not ts:
                for _ in range(j):
                    pos, run_op, run_len, f = _emit(cigar, pos, run_op, run_len, OP_D, write)
                    runs += f
                gap_cols += j
                gap_opens += 1
                j = 0
            break
        word = tb[_tb_row(warp, base, (i - 1) // TB_STRIP, nn) + (j - 1) * LANES]
        bits = (word >> np.uint32(4 * ((i - 1) % TB_STRIP))) & np.uint32(15)
        if state == 1:
            if run_op != OP_D:
                gap_opens += 1
            pos, run_op, run_len, f = _emit(cigar, pos, run_op, run_len, OP_D, write)
            runs += f
            gap_cols += 1
            state = 1 if (bits & 4) else 0
            j -= 1
            continue
        if state == 2:
            if run_op != OP_I:
                gap_opens += 1
            pos, run_op, run_len, f = _emit(cigar, pos, run_op, run_len, OP_I, write)
            runs += f
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
                op = OP_EQ
                matches += 1
            else:
                op = OP_X
                mismatches += 1
            pos, run_op, run_len, f = _emit(cigar, pos, run_op, run_len, op, write)
            runs += f
            i -= 1
            j -= 1
        elif src == SRC_E:
            state = 1
        else:
            state = 2
    if run_len > 0:
        if write:
            cigar[pos] = np.uint32((run_len << 4) | run_op)
        runs += 1
    return runs, i, j, matches, mismatches, gap_cols, gap_opens


@njit(parallel=True, cache=True, nogil=True)
def dp_walk_count(codes, q_off, q_len, t_off, t_len, n, flags, no_match_code, warp, tb_off, tb, q_end, t_end,
                  out_n_cigar, out_q_start, out_t_start, out_matches, out_mismatches, out_gap_cols, out_gap_opens):
    """First pass of the walk: every slot's number of CIGAR runs, start cell
    and column counts (nothing is written; the stage sizes the CIGAR buffer
    from the run counts and :func:`dp_walk` fills it)."""
    local = (flags & LOCAL) != 0
    qs = local or (flags & FREE_QS) != 0
    ts = local or (flags & FREE_TS) != 0
    dummy = np.zeros(1, dtype=np.uint32)
    for k in numba.prange(n):
        base = _slot_base(warp != 0, tb_off, k)
        r = _walk_one(codes, q_off[k], t_off[k], t_len[k], q_end[k], t_end[k], qs, ts, no_match_code, warp != 0, tb,
                      base,
                      dummy, 0, False)
        out_n_cigar[k] = r[0]
        out_q_start[k] = r[1]
        out_t_start[k] = r[2]
        out_matches[k] = r[3]
        out_mismatches[k] = r[4]
        out_gap_cols[k] = r[5]
        out_gap_opens[k] = r[6]


@njit(parallel=True, cache=True, nogil=True)
def dp_walk(codes, q_off, q_len, t_off, t_len, n, flags, no_match_code, warp, tb_off, tb, q_end, t_end, n_cigar,
            cig_off, cigar):
    """Second pass of the walk: write slot k's ``n_cigar[k]`` runs (BAM
    encoding ``len << 4 | op``, start to end) at ``cigar[cig_off[k]:]``."""
    local = (flags & LOCAL) != 0
    qs = local or (flags & FREE_QS) != 0
    ts = local or (flags & FREE_TS) != 0
    for k in numba.prange(n):
        if n_cigar[k] == 0:
            continue
        base = _slot_base(warp != 0, tb_off, k)
        _walk_one(codes, q_off[k], t_off[k], t_len[k], q_end[k], t_end[k], qs, ts, no_match_code, warp != 0, tb, base,
                  cigar, cig_off[k] + n_cigar[k] - 1, True)

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
assert LANES == WARP, "the trace-back walk steps columns by LANES in both layouts"
INT16_MAX = 32767


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


@njit(cache=True, inline="always")
def _emit(cigar, pos, run_op, run_len, op, write, step=-1):
    """Add one column of ``op`` to the current run; a finished run is written
    at ``pos``, which then moves by ``step`` (-1: runs come end-first).
    Returns the new (pos, run_op, run_len, runs_finished)."""
    if op == run_op:
        return pos, run_op, run_len + 1, 0
    if run_len > 0:
        if write:
            cigar[pos] = np.uint32((run_len << 4) | run_op)
        return pos + step, op, 1, 1
    return pos, op, 1, 0


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


@njit(parallel=True, cache=True, nogil=True)
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


# --------------------------------------------------------------------------- gapped X-drop


@njit(cache=True, inline="always")
def _xdrop_cell(up_h, up_f, hleft, erun, diag, s, oe, e):
    """One cell of a gapped X-drop row below row 0 and right of column 0, from the cell above
    (``up_h``, ``up_f``), the cell to the left (``hleft``, ``erun``) and the one above-left
    (``diag``), ``s`` the pair's score: ``(h, e, f, bits)`` by the tie rules of
    ``docs/alignment.md`` (diagonal, then E, then F; opening beats extending)."""
    e_open = hleft - oe
    e_more = erun - e
    ecur = max(e_open, e_more)
    f_open = up_h - oe
    f_more = up_f - e
    fcur = max(f_open, f_more)
    d = diag + s
    h = max(d, max(ecur, fcur))
    src = SRC_DIAG if h == d else (SRC_E if h == ecur else SRC_F)
    bits = (4 if e_more > e_open else 0) | (8 if f_more > f_open else 0) | src
    return h, ecur, fcur, bits


@njit(cache=True, inline="always")
def _xdrop_live(h, i, j, lo, best, bi, bj, floor, xdrop):
    """A live cell's bookkeeping in row ``i``: the row's first live column, the side's best cell
    and its X-drop floor."""
    if lo < 0:
        lo = j
    if h > best:
        return lo, h, i, j, h - xdrop
    return lo, best, bi, bj, floor


@njit(cache=True, inline="always")
def _xdrop_gap_cell(h_from, g_from, oe, e, more_bit, src):
    """A cell reached by a gap only (row 0 along the target: E, ``more_bit`` 4; column 0 down the
    query: F, 8), from the H and gap score before it: ``(h, gap, bits)``."""
    g_open = h_from - oe
    g_more = g_from - e
    gap = max(g_open, g_more)
    bits = more_bit if g_more > g_open else 0
    h = NEG_INF
    if gap > h:
        h = gap
        bits |= src
    return h, gap, bits


@njit(cache=True)
def _xdrop_sweep(codes, qo, to, q_pos, t_pos, step, m, n, table, alpha, o, e, xdrop, H, F, stop_row,
                 tb, tb_base, row_start, row_tb, row_base, write, tb_cap=-1):
    """One side of a gapped X-drop extension (docs/alignment.md): rows over
    the query from the seed (row i is residue ``q_pos + step * i``), columns
    over the target likewise, row-major, each row only from the first live
    column of the row above and stopping at the first dropped cell past the
    row above's last live column. ``H``/``F``: the row above (length n + 1).
    With ``write``, stores each computed cell's trace-back byte and each
    row's first column and byte offset, up to ``stop_row``; with ``tb_cap``
    (>= 0: the bytes ``tb`` holds), stops before a row that might not fit and
    returns -1 bytes (the caller grows ``tb`` and sweeps the side again).
    Returns (best, best_i, best_j, bytes through the best row, edge): ``edge``,
    a live cell in the last target column (a longer target could extend the side).

    Row 0 and column 0 are their own loops, and the columns of a row under the
    row above's live span (from the row above) and past it (nothing above: the
    row ends at its first dropped cell) two more, so that the inner loops test
    nothing but the X-drop (1.5x fewer seconds a cell than one loop testing
    every case, the same cells and bytes)."""
    oe = o + e
    best = 0
    bi = 0
    bj = 0
    t0 = to + t_pos
    if write and tb_cap >= 0 and tb_base + n + 1 > tb_cap:
        return best, bi, bj, -1, False
    # row 0: the origin, then a gap run along the target (nothing above)
    H[0] = 0
    F[0] = NEG_INF
    if write:
        row_start[row_base] = 0
        row_tb[row_base] = tb_base
        tb[tb_base] = np.uint8(0)
    hi = 0
    cells = 1
    hleft = 0
    erun = NEG_INF
    floor = -xdrop
    j = 1
    while j <= n:
        h, ecur, bits = _xdrop_gap_cell(hleft, erun, oe, e, 4, SRC_E)
        if write:
            tb[tb_base + cells] = np.uint8(bits)
        cells += 1
        if h < floor:
            H[j] = NEG_INF
            F[j] = NEG_INF
            break
        hi = j
        H[j] = h
        F[j] = NEG_INF
        hleft = h
        erun = ecur
        j += 1
    cells_best = cells
    edge = hi == n
    if m == 0 or stop_row == 0:
        return best, bi, bj, cells_best, edge
    plo = 0
    phi = hi
    # past the row above's live span: F from nothing above
    f_far = max(NEG_INF - oe, NEG_INF - e)
    fbit_far = 8 if NEG_INF - e > NEG_INF - oe else 0
    i = 1
    while True:
        if write and tb_cap >= 0 and tb_base + cells + (n - plo) + 1 > tb_cap:
            return best, bi, bj, -1, edge
        a = codes[qo + q_pos + step * i] * alpha
        lo = -1
        hi = -1
        hleft = NEG_INF
        erun = NEG_INF
        diag = NEG_INF
        row_cells = 0
        if write:
            row_start[row_base + i] = plo
            row_tb[row_base + i] = tb_base + cells
        floor = best - xdrop
        j = plo
        if j == 0:  # column 0: a gap run down the query (no E, no diagonal)
            up_h = H[0]
            h, fcur, bits = _xdrop_gap_cell(up_h, F[0], oe, e, 8, SRC_F)
            if write:
                tb[tb_base + cells] = np.uint8(bits)
            row_cells = 1
            diag = up_h
            if h < floor:
                H[0] = NEG_INF
                F[0] = NEG_INF
            else:
                lo = 0
                hi = 0
                H[0] = h
                F[0] = fcur
                hleft = h
                if h > best:
                    best = h
                    bi = i
                    bj = 0
                    floor = best - xdrop
            j = 1
        while j <= phi:  # under the row above's live span
            up_h = H[j]
            h, ecur, fcur, bits = _xdrop_cell(up_h, F[j], hleft, erun, diag, table[a + codes[t0 + step * j]], oe, e)
            if write:
                tb[tb_base + cells + row_cells] = np.uint8(bits)
            row_cells += 1
            diag = up_h
            if h < floor:
                H[j] = NEG_INF
                F[j] = NEG_INF
                hleft = NEG_INF
                erun = NEG_INF
            else:
                lo, best, bi, bj, floor = _xdrop_live(h, i, j, lo, best, bi, bj, floor, xdrop)
                hi = j
                H[j] = h
                F[j] = fcur
                hleft = h
                erun = ecur
            j += 1
        while j <= n:  # past it: nothing above, the row ends at its first dropped cell
            e_open = hleft - oe
            e_more = erun - e
            ecur = max(e_open, e_more)
            d = diag + table[a + codes[t0 + step * j]]
            h = max(d, max(ecur, f_far))
            src = SRC_DIAG if h == d else (SRC_E if h == ecur else SRC_F)
            if write:
                tb[tb_base + cells + row_cells] = np.uint8((4 if e_more > e_open else 0) | fbit_far | src)
            row_cells += 1
            diag = NEG_INF
            if h < floor:
                H[j] = NEG_INF
                F[j] = NEG_INF
                break
            lo, best, bi, bj, floor = _xdrop_live(h, i, j, lo, best, bi, bj, floor, xdrop)
            hi = j
            H[j] = h
            F[j] = f_far
            hleft = h
            erun = ecur
            j += 1
        cells += row_cells
        if bi == i:
            cells_best = cells
        if hi == n:
            edge = True
        if lo < 0 or i == stop_row or i == m:
            break
        plo = lo
        phi = hi
        i += 1
    return best, bi, bj, cells_best, edge


@njit(parallel=True, cache=True, nogil=True)
def xdrop_gapped_score(codes, q_off, q_len, t_off, t_len, q_pos, t_pos, n, table, alpha, gap_open, gap_extend,
                       xdrop, work_off, work, out_score, out_q_start, out_q_end, out_t_start, out_t_end, out_edges,
                       out_cells, out_rows):
    """Gapped X-drop extension of every seed (q_pos, t_pos), score only:
    score, extents, the sides that reached the target's ends (bit 1 left, 2 right),
    and the trace-back bytes and rows the fill will need."""
    dummy8 = np.zeros(1, dtype=np.uint8)
    dummy32 = np.zeros(1, dtype=np.int32)
    dummy64 = np.zeros(1, dtype=np.int64)
    for k in numba.prange(n):
        qo, to, qp, tp = q_off[k], t_off[k], q_pos[k], t_pos[k]
        width = max(tp, t_len[k] - tp - 1) + 1
        H = work[work_off[k]:work_off[k] + width]
        F = work[work_off[k] + width:work_off[k] + 2 * width]
        ls, li, lj, lc, le = _xdrop_sweep(codes, qo, to, qp, tp, -1, qp, tp, table, alpha, gap_open, gap_extend, xdrop,
                                      H, F, -1, dummy8, 0, dummy32, dummy64, 0, False)
        rs, ri, rj, rc, re_ = _xdrop_sweep(codes, qo, to, qp, tp, 1, q_len[k] - qp - 1, t_len[k] - tp - 1, table, alpha,
                                      gap_open, gap_extend, xdrop, H, F, -1, dummy8, 0, dummy32, dummy64, 0, False)
        out_score[k] = table[codes[qo + qp] * alpha + codes[to + tp]] + ls + rs
        out_q_start[k] = qp - li
        out_t_start[k] = tp - lj
        out_q_end[k] = qp + 1 + ri
        out_t_end[k] = tp + 1 + rj
        out_edges[k] = (1 if le else 0) | (2 if re_ else 0)
        out_cells[k] = lc + rc
        out_rows[k] = li + ri + 2


@njit(cache=True)
def _xdrop_walk(codes, qo, to, qp, tp, no_match_code, bi_l, bj_l, bi_r, bj_r, tb, row_start, row_tb, rows,
                cigar, base, total, write):
    """CIGAR of one extension: the left side's walk (which runs start to
    end), the seed column, then the right side's walk (end to start, written
    backwards from ``base + total - 1``). Returns (runs, matches, mismatches,
    gap_cols, gap_opens)."""
    matches = mismatches = gap_cols = gap_opens = 0
    runs_fwd = 0
    runs_bwd = 0
    last_fwd = 0
    first_bwd = 0
    len_bwd = 0
    for side in range(2):
        if side == 0:
            i, j, step, row_base = bi_l, bj_l, -1, rows
            pos, dpos = base, 1
        else:
            i, j, step, row_base = bi_r, bj_r, 1, rows + bi_l + 1
            pos, dpos = base + total - 1, -1
        run_op = 0
        run_len = 0
        runs = 0
        state = 0
        while True:
            if state == 0 and i == 0 and j == 0:
                break
            bits = tb[row_tb[row_base + i] + j - row_start[row_base + i]]
            if state == 1:
                op = OP_D
                state = 1 if (bits & 4) else 0
                j -= 1
            elif state == 2:
                op = OP_I
                state = 2 if (bits & 8) else 0
                i -= 1
            else:
                src = bits & 3
                if src == SRC_E:
                    state = 1
                    continue
                if src == SRC_F:
                    state = 2
                    continue
                a = codes[qo + qp + step * i]
                b = codes[to + tp + step * j]
                if a == b and a != no_match_code:
                    op = OP_EQ
                    matches += 1
                else:
                    op = OP_X
                    mismatches += 1
                i -= 1
                j -= 1
            if op == OP_I or op == OP_D:
                gap_cols += 1
                if op != run_op:
                    gap_opens += 1
            pos, run_op, run_len, f = _emit(cigar, pos, run_op, run_len, op, write, dpos)
            runs += f
        if side == 0:
            # The seed column closes the forward stream.
            a = codes[qo + qp]
            b = codes[to + tp]
            if a == b and a != no_match_code:
                op = OP_EQ
                matches += 1
            else:
                op = OP_X
                mismatches += 1
            pos, run_op, run_len, f = _emit(cigar, pos, run_op, run_len, op, write, dpos)
            runs += f
            if write:
                cigar[pos] = np.uint32((run_len << 4) | run_op)
            runs_fwd = runs + 1
            last_fwd = run_op
        else:
            runs_bwd = runs
            if run_len > 0:
                runs_bwd += 1
                first_bwd = run_op
                len_bwd = run_len
    merged = runs_bwd > 0 and first_bwd == last_fwd
    if write and runs_bwd > 0:
        if merged:
            cigar[base + runs_fwd - 1] += np.uint32(len_bwd << 4)
        else:
            cigar[base + runs_fwd] = np.uint32((len_bwd << 4) | first_bwd)
    return runs_fwd + runs_bwd - (1 if merged else 0), matches, mismatches, gap_cols, gap_opens


@njit(parallel=True, cache=True, nogil=True)
def xdrop_gapped_fill(codes, q_off, q_len, t_off, t_len, q_pos, t_pos, n, table, alpha, gap_open, gap_extend,
                      xdrop, no_match_code, work_off, work, q_start, q_end, t_start, t_end, tb_off, tb, row_off,
                      row_start, row_tb, out_n_cigar, out_matches, out_mismatches, out_gap_cols, out_gap_opens):
    """Sweep every extension again up to its best rows, storing one
    trace-back byte per computed cell, then walk it: CIGAR run counts and
    column counts (:func:`xdrop_gapped_walk` writes the runs)."""
    dummy = np.zeros(1, dtype=np.uint32)
    for k in numba.prange(n):
        qo, to, qp, tp = q_off[k], t_off[k], q_pos[k], t_pos[k]
        width = max(tp, t_len[k] - tp - 1) + 1
        H = work[work_off[k]:work_off[k] + width]
        F = work[work_off[k] + width:work_off[k] + 2 * width]
        bi_l, bj_l = qp - q_start[k], tp - t_start[k]
        bi_r, bj_r = q_end[k] - qp - 1, t_end[k] - tp - 1
        r0 = row_off[k]
        _, _, _, lc, _ = _xdrop_sweep(codes, qo, to, qp, tp, -1, qp, tp, table, alpha, gap_open, gap_extend, xdrop,
                                   H, F, bi_l, tb, tb_off[k], row_start, row_tb, r0, True)
        _xdrop_sweep(codes, qo, to, qp, tp, 1, q_len[k] - qp - 1, t_len[k] - tp - 1, table, alpha, gap_open,
                     gap_extend, xdrop, H, F, bi_r, tb, tb_off[k] + lc, row_start, row_tb, r0 + bi_l + 1, True)
        r = _xdrop_walk(codes, qo, to, qp, tp, no_match_code, bi_l, bj_l, bi_r, bj_r, tb, row_start, row_tb, r0,
                        dummy, 0, 0, False)
        out_n_cigar[k] = r[0]
        out_matches[k] = r[1]
        out_mismatches[k] = r[2]
        out_gap_cols[k] = r[3]
        out_gap_opens[k] = r[4]


@njit(parallel=True, cache=True, nogil=True)
def xdrop_gapped_walk(codes, q_off, t_off, q_pos, t_pos, n, no_match_code, q_start, q_end, t_start, t_end, tb,
                      row_off, row_start, row_tb, n_cigar, cig_off, cigar):
    """Write every extension's ``n_cigar[k]`` CIGAR runs at ``cigar[cig_off[k]:]``."""
    for k in numba.prange(n):
        qp, tp = q_pos[k], t_pos[k]
        bi_l = qp - q_start[k]
        _xdrop_walk(codes, q_off[k], t_off[k], qp, tp, no_match_code, bi_l, tp - t_start[k], q_end[k] - qp - 1,
                    t_end[k] - tp - 1, tb, row_start, row_tb, row_off[k], cigar, cig_off[k], n_cigar[k], True)


# One warp a seed on a GPU (dp.cu's ``xdrop_gapped_score_warp`` / ``_fill_warp``): the same
# results as the one-thread kernels, so the twins are the same functions.
xdrop_gapped_score_warp = xdrop_gapped_score
xdrop_gapped_fill_warp = xdrop_gapped_fill


@njit(cache=True, nogil=True)
def xdrop_gapped_host(codes, q_off, q_len, t_off, t_len, q_pos, t_pos, lo, hi, table, alpha, gap_open, gap_extend,
                      xdrop, no_match_code, tb_bytes, out, n_cigar):
    """CPU only (no CUDA twin): gapped X-drop extension with trace-back of seeds ``lo .. hi - 1``
    in one sweep a side, one seed at a time (host threads run pieces side by side: nogil).

    The results of :func:`xdrop_gapped_score`, :func:`xdrop_gapped_fill` and
    :func:`xdrop_gapped_walk` (the count, prefix sum and fill a GPU needs for memory
    allocated before the launch), from one sweep storing every cell's trace-back byte
    in a buffer grown as needed from ``tb_bytes`` (a side that might outgrow it is swept again), then
    the walk: ``out`` rows score, q_start, q_end, t_start, t_end, edges, matches,
    mismatches, gap_cols, gap_opens and ``n_cigar`` at each seed's index; returns the
    seeds' CIGAR runs, laid end to end in seed order."""
    width = 1
    rows = 2
    for k in range(lo, hi):
        width = max(width, max(t_pos[k], t_len[k] - t_pos[k] - 1) + 1)
        rows = max(rows, q_len[k] + 2)
    H = np.empty(width, dtype=np.int32)
    F = np.empty(width, dtype=np.int32)
    row_start = np.empty(rows, dtype=np.int32)
    row_tb = np.empty(rows, dtype=np.int64)
    tb = np.empty(max(1, tb_bytes), dtype=np.uint8)
    cigar = np.empty(1024, dtype=np.uint32)
    used = 0
    for k in range(lo, hi):
        qo, to, qp, tp = q_off[k], t_off[k], q_pos[k], t_pos[k]
        while True:
            ls, li, lj, lc, le = _xdrop_sweep(codes, qo, to, qp, tp, -1, qp, tp, table, alpha, gap_open, gap_extend,
                                              xdrop, H, F, -1, tb, 0, row_start, row_tb, 0, True, tb.size)
            if lc >= 0:
                break
            tb = np.empty(2 * tb.size, dtype=np.uint8)
        while True:  # the right side's bytes and rows follow the left side's best row, as the fill lays them
            rs, ri, rj, rc, re_ = _xdrop_sweep(codes, qo, to, qp, tp, 1, q_len[k] - qp - 1, t_len[k] - tp - 1, table,
                                               alpha, gap_open, gap_extend, xdrop, H, F, -1, tb, lc, row_start, row_tb,
                                               li + 1, True, tb.size)
            if rc >= 0:
                break
            grown = np.empty(2 * tb.size, dtype=np.uint8)
            grown[:lc] = tb[:lc]
            tb = grown
        runs = _xdrop_walk(codes, qo, to, qp, tp, no_match_code, li, lj, ri, rj, tb, row_start, row_tb, 0, cigar, 0,
                           0, False)[0]
        if used + runs > cigar.size:
            grown32 = np.empty(max(2 * cigar.size, used + runs), dtype=np.uint32)
            grown32[:used] = cigar[:used]
            cigar = grown32
        r = _xdrop_walk(codes, qo, to, qp, tp, no_match_code, li, lj, ri, rj, tb, row_start, row_tb, 0, cigar, used,
                        runs, True)
        out[0, k] = table[codes[qo + qp] * alpha + codes[to + tp]] + ls + rs
        out[1, k] = qp - li
        out[2, k] = qp + 1 + ri
        out[3, k] = tp - lj
        out[4, k] = tp + 1 + rj
        out[5, k] = (1 if le else 0) | (2 if re_ else 0)
        out[6, k] = r[1]
        out[7, k] = r[2]
        out[8, k] = r[3]
        out[9, k] = r[4]
        n_cigar[k] = runs
        used += runs
    return cigar[:used].copy()

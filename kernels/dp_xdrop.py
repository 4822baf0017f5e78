"""Numba twins of ``kernels/dp.cu``'s X-drop kernels (BLAST's ungapped and gapped extensions, with
trace-back), and the CPU's one-sweep gapped extension (``xdrop_gapped_host``, no CUDA twin).

The launch family is ``kernels/dp.py``, which imports these names (a GPU launch compiles
``dp.cu``); the rules are in ``docs/alignment.md``, the readable reference in
``tests/reference_dp.py`` (``xdrop_ungapped``, ``xdrop_gapped``).
"""

from __future__ import annotations

import numba
import numpy as np

from gseek.kernels._jit import njit

from .dp_rules import NEG_INF, OP_D, OP_EQ, OP_I, OP_X, SRC_DIAG, SRC_E, SRC_F, _emit


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
    every case, the same cells and bytes). Their indices are unsigned (Numba
    tests a signed index for a negative value to wrap; none is negative), a
    dropped cell is written by selects and the row's scores read once a row:
    1.75x fewer seconds a cell again (a replay of the blastn task's trace-backs,
    benchmarks/RESULTS.md, 2026-11-28), the same cells and bytes."""
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
        arow = table[a:a + alpha]  # the row's scores of its query base
        at = tb_base + cells + row_cells  # this cell's trace-back byte
        while j <= phi:  # under the row above's live span
            u = np.uint64(j)  # (unsigned indices: no test for a negative one to wrap; selects for a dropped cell)
            up_h = H[u]
            h, ecur, fcur, bits = _xdrop_cell(up_h, F[u], hleft, erun, diag, arow[codes[np.uint64(t0 + step * j)]],
                                              oe, e)
            if write:
                tb[np.uint64(at)] = np.uint8(bits)
            at += 1
            diag = up_h
            live = h >= floor
            hleft = h if live else NEG_INF
            erun = ecur if live else NEG_INF
            H[u] = hleft
            F[u] = fcur if live else NEG_INF
            if live:
                lo, best, bi, bj, floor = _xdrop_live(h, i, j, lo, best, bi, bj, floor, xdrop)
                hi = j
            j += 1
        row_cells = at - (tb_base + cells)
        while j <= n:  # past it: nothing above, the row ends at its first dropped cell
            e_open = hleft - oe
            e_more = erun - e
            ecur = max(e_open, e_more)
            u = np.uint64(j)
            d = diag + arow[codes[np.uint64(t0 + step * j)]]
            h = max(d, max(ecur, f_far))
            src = SRC_DIAG if h == d else (SRC_E if h == ecur else SRC_F)
            if write:
                tb[np.uint64(tb_base + cells + row_cells)] = np.uint8((4 if e_more > e_open else 0) | fbit_far | src)
            row_cells += 1
            diag = NEG_INF
            if h < floor:
                H[u] = NEG_INF
                F[u] = NEG_INF
                break
            lo, best, bi, bj, floor = _xdrop_live(h, i, j, lo, best, bi, bj, floor, xdrop)
            hi = j
            H[u] = h
            F[u] = f_far
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

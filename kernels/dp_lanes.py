"""The CPU's Gotoh DP across pairs, score-only or with trace-back: one SIMD lane a pair (CPU only; no CUDA twin).

The GPU sweeps one pair a thread; a CPU core has vector units instead. Here
LANES pairs that share their query (local DNA: or the last pairs of two
queries) are swept together, row by row, their cells laid out ``[column][lane]`` in int16, so the cell loop of a
row is one flat loop over ``column * LANES + lane`` that LLVM vectorises (16
or 32 lanes an instruction; SSE2 on the generic CPU of the prebuilt code).
The recurrences, ties and end cells are those of ``dp_score16`` in
:mod:`gseek.kernels.dp` (``docs/alignment.md``), so the results are the same
numbers: ``tests/test_dp_lanes.py`` holds every mode to
``tests/reference_dp.py``. With trace-back (:func:`dp_traceback_lanes`) each cell's nibble is
``dp_fill16``'s (the same comparisons), the words laid out as the one-pair kernels' and read by their
walk, so every CIGAR is theirs (``tests/test_dp_lanes_traceback.py``).

What keeps the lanes apart:

* Targets shorter than the group's longest (and rows past the shorter of
  two queries) are padded with a negative substitution score. A padded cell depends only on cells before it in
  row-major order, always minus something, so it never beats (nor ties) a
  real cell that came before it: a local end cell never falls on padding,
  and a real cell never depends on padding (dependencies run right and down).
* Every value of a group stays inside ``[-INT16_REACH, INT16_REACH]``, which
  the stage checks before it gives a pair to this kernel
  (``_lane_groups`` in :mod:`gseek.dp.nwsw`); the int16 arithmetic then never
  wraps, and ``dp_score16``'s 16-bit check could never have fired (``rerun``
  is False for these pairs).
* Loops are written ``for x in range(count)`` with non-negative offsets
  (``x + LANES``), loads before any select: Numba's negative-index wrap or a
  conditional load stops LLVM's vectoriser.
"""

from __future__ import annotations

import numpy as np

from gseek.kernels._jit import njit

from . import dp
from .dp import FREE_QE, FREE_QS, FREE_TE, FREE_TS, LOCAL, SRC_DIAG, SRC_E, SRC_F, SRC_STOP, TB_STRIP, _walk_one

#: Pairs swept together. 32 int16 lanes are two
#: AVX2 vectors a column: two independent dependency chains keep the core busy
#: (measured on the 2-core VM: 3.2 GCUPS a core at 32 lanes, 1.9 at 16).
LANES = 32
#: "Minus infinity" of the int16 sweep: below every value of an accepted group,
#: and minus one gap extension still inside int16.
NEG16 = -(1 << 14)
#: Bound on |every DP value| of a group swept in int16 (the stage's check).
INT16_REACH = 16000
#: Longest target swept here: a local row's end column is tracked in int16.
MAX_COLUMNS = 32767
assert LANES == dp.LANES, "the trace-back words are dp's one-thread layout, a lane a slot of a group"


@njit(cache=True, nogil=True)
def _row_local(prof, Hp, Hc, Ec, F, R, J, column, count, oe, e):
    """One local row of every lane: H, E, F, and the row's running maximum R with the
    column J where it was first reached (``count`` = the row's cells, column 0's left out)."""
    zero = np.int16(0)
    for x in range(count):
        y = x + LANES
        ec = max(np.int16(Hc[x] - oe), np.int16(Ec[x] - e))
        fc = max(np.int16(Hp[y] - oe), np.int16(F[y] - e))
        h = max(max(np.int16(Hp[x] + prof[y]), ec), max(fc, zero))
        Hc[y] = h
        Ec[y] = ec
        F[y] = fc
        r = R[x]
        here = column[y]
        before = J[x]
        R[y] = max(h, r)
        J[y] = here if h > r else before


@njit(cache=True, nogil=True)
def _row(prof, Hp, Hc, Ec, F, count, oe, e):
    """One global / semiglobal row of every lane: H, E, F."""
    for x in range(count):
        y = x + LANES
        ec = max(np.int16(Hc[x] - oe), np.int16(Ec[x] - e))
        fc = max(np.int16(Hp[y] - oe), np.int16(F[y] - e))
        Hc[y] = max(max(np.int16(Hp[x] + prof[y]), ec), fc)
        Ec[y] = ec
        F[y] = fc


@njit(cache=True, inline="always")
def _cell_tb(prof, Hp, Hc, Ec, F, x, oe, e):
    """The cell right of ``Hc[x]`` (``y = x + LANES``) of every lane's row: H before a local floor, E, F
    and its trace-back nibble, ``dp_fill16``'s bits (H from the diagonal, then E, then F; E extends
    4, F extends 8), computed in int16 (a select of small constants LLVM keeps in the vector loop)."""
    y = x + LANES
    e_open = np.int16(Hc[x] - oe)
    e_more = np.int16(Ec[x] - e)
    f_open = np.int16(Hp[y] - oe)
    f_more = np.int16(F[y] - e)
    d = np.int16(Hp[x] + prof[y])
    ec = max(e_open, e_more)
    fc = max(f_open, f_more)
    h = max(max(d, ec), fc)
    e_bit = np.int16(4) if e_more > e_open else np.int16(0)
    f_bit = np.int16(8) if f_more > f_open else np.int16(0)
    from_gap = np.int16(SRC_F) if h != ec else np.int16(SRC_E)
    return h, ec, fc, (from_gap if h != d else np.int16(SRC_DIAG)) | e_bit | f_bit


@njit(cache=True, nogil=True)
def _row_local_tb(prof, Hp, Hc, Ec, F, R, J, column, count, oe, e, bits):
    """:func:`_row_local`, also writing each cell's trace-back nibble to ``bits[x]`` (x as ``Hc[x + LANES]``;
    H at or below 0: a local stop)."""
    zero = np.int16(0)
    for x in range(count):
        y = x + LANES
        r = R[x]
        here = column[y]
        before = J[x]
        h, ec, fc, nibble = _cell_tb(prof, Hp, Hc, Ec, F, x, oe, e)
        bits[x] = ((nibble & np.int16(12)) | np.int16(SRC_STOP)) if h <= zero else nibble
        h = max(h, zero)
        Hc[y] = h
        Ec[y] = ec
        F[y] = fc
        R[y] = max(h, r)
        J[y] = here if h > r else before


@njit(cache=True, nogil=True)
def _row_tb(prof, Hp, Hc, Ec, F, count, oe, e, bits):
    """:func:`_row`, also writing each cell's trace-back nibble as :func:`_row_local_tb` does."""
    for x in range(count):
        y = x + LANES
        h, ec, fc, bits[x] = _cell_tb(prof, Hp, Hc, Ec, F, x, oe, e)
        Hc[y] = h
        Ec[y] = ec
        F[y] = fc


@njit(cache=True, nogil=True)
def _pack(bits, count, tb, at):
    """TB_STRIP rows of nibbles (``bits``, a row every ``count``) into their 32-bit words ``tb[at:at + count]``."""
    for x in range(count):
        tb[at + x] = (np.uint32(bits[x]) | (np.uint32(bits[count + x]) << np.uint32(4))
                      | (np.uint32(bits[2 * count + x]) << np.uint32(8))
                      | (np.uint32(bits[3 * count + x]) << np.uint32(12))
                      | (np.uint32(bits[4 * count + x]) << np.uint32(16))
                      | (np.uint32(bits[5 * count + x]) << np.uint32(20))
                      | (np.uint32(bits[6 * count + x]) << np.uint32(24))
                      | (np.uint32(bits[7 * count + x]) << np.uint32(28)))


@njit(cache=True, nogil=True)
def _group(codes, q_off, q_len, t_off, t_len, lanes, split, table, alpha, o, e, flags, pad, tb, out_score, out_q_end,
           out_t_end):
    """Sweep the pairs ``lanes`` (slots, at most LANES) and write their score and end cell; with a
    ``tb`` (not empty: :func:`tb_words` words), every cell's trace-back nibble too, ``dp_fill16``'s
    bits in its one-thread layout with the group's longest target as every lane's row stride (what
    ``dp._walk_one`` reads: lane l's slot base is l, its ``nn`` that longest target). The
    pairs ``lanes[:split]`` share one query, ``lanes[split:]`` (local only) another: a row of the
    profile is then one residue of each, and rows past a query's end score ``pad`` in its lanes
    (padding again, which a local end cell never falls on)."""
    local = (flags & LOCAL) != 0
    qs = local or (flags & FREE_QS) != 0
    ts = local or (flags & FREE_TS) != 0
    qe = (flags & FREE_QE) != 0
    te = (flags & FREE_TE) != 0
    k = lanes.size
    nmax = 0
    for l in range(k):
        nmax = max(nmax, t_len[lanes[l]])
    size = (nmax + 1) * LANES
    qa, ma = q_off[lanes[0]], q_len[lanes[0]]
    qb, mb = (q_off[lanes[split]], q_len[lanes[split]]) if split < k else (qa, 0)
    m = max(ma, mb)
    # the profile: a row for each pair of residues (query A's, query B's; alpha: past its end) met in
    # the rows, the substitution score of its residue against every lane's column
    width = alpha + 1
    row_of = np.full(width * width, -1, dtype=np.int64)
    row = np.empty(m, dtype=np.int64)
    rows = 0
    for i in range(m):
        pair = (codes[qa + i] if i < ma else alpha) * width + (codes[qb + i] if i < mb else alpha)
        if row_of[pair] < 0:
            row_of[pair] = rows
            rows += 1
        row[i] = row_of[pair]
    prof = np.empty((rows, size), dtype=np.int16)
    for pair in range(width * width):
        r = row_of[pair]
        if r < 0:
            continue
        for x in range(size):
            prof[r, x] = pad
        for l in range(k):
            a = pair // width if l < split else pair % width
            if a == alpha:
                continue
            to = t_off[lanes[l]]
            for j in range(t_len[lanes[l]]):
                prof[r, (j + 1) * LANES + l] = table[a * alpha + codes[to + j]]
    Hp = np.empty(size, dtype=np.int16)
    Hc = np.empty(size, dtype=np.int16)
    Ec = np.empty(size, dtype=np.int16)
    F = np.empty(size, dtype=np.int16)
    R = np.zeros(size, dtype=np.int16)
    J = np.zeros(size, dtype=np.int16)
    column = np.empty(size if local else 0, dtype=np.int16)
    for x in range(size):
        j = x // LANES
        Hp[x] = 0 if (ts or j == 0) else -(o + j * e)
        F[x] = NEG16
    for x in range(column.size):
        column[x] = x // LANES
    best = np.empty(LANES, dtype=np.int32)
    bi = np.empty(LANES, dtype=np.int32)
    bj = np.empty(LANES, dtype=np.int32)
    for l in range(k):
        n = t_len[lanes[l]]
        if local:
            best[l], bi[l], bj[l] = 0, 0, 0
        elif qe:
            best[l], bi[l], bj[l] = Hp[n * LANES + l], 0, n
        else:
            best[l], bi[l], bj[l] = NEG16, -1, -1
    oe16 = np.int16(o + e)
    e16 = np.int16(e)
    last_x = nmax * LANES
    write = tb.size > 0
    # a strip's rows of nibbles, packed into its words after its last row (rows past the end: 0)
    bits = np.zeros(TB_STRIP * last_x if write else 0, dtype=np.int16)
    for i in range(1, m + 1):
        hleft = 0 if qs else -(o + i * e)
        for l in range(LANES):
            Hc[l] = hleft
            Ec[l] = NEG16
        r = (i - 1) % TB_STRIP
        if write and local:
            _row_local_tb(prof[row[i - 1]], Hp, Hc, Ec, F, R, J, column, last_x, oe16, e16, bits[r * last_x:])
        elif write:
            _row_tb(prof[row[i - 1]], Hp, Hc, Ec, F, last_x, oe16, e16, bits[r * last_x:])
        elif local:
            _row_local(prof[row[i - 1]], Hp, Hc, Ec, F, R, J, column, last_x, oe16, e16)
        else:
            _row(prof[row[i - 1]], Hp, Hc, Ec, F, last_x, oe16, e16)
        if write and (r == TB_STRIP - 1 or i == m):
            _pack(bits, last_x, tb, (i - 1) // TB_STRIP * last_x)
        if local:
            for l in range(k):
                if R[last_x + l] > best[l]:
                    best[l], bi[l], bj[l] = R[last_x + l], i, J[last_x + l]
        else:
            last = te and i == m
            for l in range(k):
                n = t_len[lanes[l]]
                if last:
                    if hleft > best[l]:
                        best[l], bi[l], bj[l] = hleft, i, 0
                    for j in range(1, n + 1):
                        if Hc[j * LANES + l] > best[l]:
                            best[l], bi[l], bj[l] = Hc[j * LANES + l], i, j
                elif qe and Hc[n * LANES + l] > best[l]:
                    best[l], bi[l], bj[l] = Hc[n * LANES + l], i, n
        Hp, Hc = Hc, Hp
    for l in range(k):
        slot = lanes[l]
        n = t_len[slot]
        if not local and ((not qe and not te) or bi[l] < 0):
            best[l], bi[l], bj[l] = Hp[n * LANES + l], m, n  # the corner: Hp holds the last row
        out_score[slot] = best[l]
        out_q_end[slot] = bi[l]
        out_t_end[slot] = bj[l]


@njit(cache=True, nogil=True)
def dp_score_lanes(codes, q_off, q_len, t_off, t_len, slots, group_off, group_split, table, alpha, gap_open,
                   gap_extend, flags, pad, first, step, out_score, out_q_end, out_t_end):
    """Score and end cell of the pairs ``slots[group_off[g]:group_off[g + 1]]`` of the groups
    g = first, first + step, ... (at most LANES pairs a group, the first ``group_split[g]`` of one
    query, the others of another), as ``dp_score16`` gives them; the stage checked the range. One
    call a thread (the GIL released): a ``prange`` over the groups compiled the sweep ~6x slower
    (LLVM left its loops scalar)."""
    none = np.empty(0, dtype=np.uint32)
    for g in range(first, group_off.size - 1, step):
        _group(codes, q_off, q_len, t_off, t_len, slots[group_off[g]:group_off[g + 1]], group_split[g], table, alpha,
               gap_open, gap_extend, flags, pad, none, out_score, out_q_end, out_t_end)


@njit(cache=True, inline="always")
def tb_words(m, nmax):
    """Trace-back words of a group of ``m`` query rows and ``nmax`` columns (its longest target):
    TB_STRIP rows a 32-bit word, a word a column and lane."""
    return (m + TB_STRIP - 1) // TB_STRIP * nmax * LANES


@njit(cache=True, nogil=True)
def dp_traceback_lanes(codes, q_off, q_len, t_off, t_len, slots, group_off, group_split, table, alpha, gap_open,
                       gap_extend, flags, pad, no_match_code, first, step, out_score, out_q_end, out_t_end, out_walk):
    """:func:`dp_score_lanes` with trace-back: each group's fill keeps every cell's nibble, then each
    lane's walk (``dp._walk_one``, the one-pair kernels' walk over the same bits) writes
    ``out_walk[:, slot]`` (run count, q_start, t_start, matches, mismatches, gap_cols, gap_opens, as
    ``dp_walk_count``) and the pair's CIGAR runs. Returns the runs of the pairs of groups first, first
    + step, ..., laid end to end in the order of their slots; the trace-back buffer is the largest
    group's (:func:`tb_words`), one at a time."""
    local = (flags & LOCAL) != 0
    qs = local or (flags & FREE_QS) != 0
    ts = local or (flags & FREE_TS) != 0
    words = 1
    for g in range(first, group_off.size - 1, step):
        m = 0
        nmax = 0
        for s in range(group_off[g], group_off[g + 1]):
            m = max(m, q_len[slots[s]])
            nmax = max(nmax, t_len[slots[s]])
        words = max(words, tb_words(m, nmax))
    tb = np.empty(words, dtype=np.uint32)
    cigar = np.empty(1024, dtype=np.uint32)
    used = 0
    for g in range(first, group_off.size - 1, step):
        lanes = slots[group_off[g]:group_off[g + 1]]
        m = 0
        nmax = 0
        for l in range(lanes.size):
            m = max(m, q_len[lanes[l]])
            nmax = max(nmax, t_len[lanes[l]])
        _group(codes, q_off, q_len, t_off, t_len, lanes, group_split[g], table, alpha, gap_open, gap_extend, flags,
               pad, tb[:tb_words(m, nmax)], out_score, out_q_end, out_t_end)
        for l in range(lanes.size):
            # one walk a pair, its runs (at most a column each) written end-first below cigar[used + m + n]
            slot = lanes[l]
            last = used + q_len[slot] + t_len[slot]
            if last >= cigar.size:
                grown = np.empty(max(2 * cigar.size, last + 1), dtype=np.uint32)
                grown[:used] = cigar[:used]
                cigar = grown
            walk = _walk_one(codes, q_off[slot], t_off[slot], nmax, out_q_end[slot], out_t_end[slot], qs, ts,
                             no_match_code, False, tb, l, cigar, last, True)
            runs = walk[0]
            cigar[used:used + runs] = cigar[last + 1 - runs:last + 1]
            used += runs
            for row in range(7):
                out_walk[row, slot] = walk[row]
    return cigar[:used].copy()

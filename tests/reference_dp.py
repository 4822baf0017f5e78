"""Slow, readable Gotoh DP with trace-back: the reference of the ``dp`` kernels.

Plain Python lists, full H/E/F matrices, one cell at a time, in the order a
textbook writes them. ``docs/alignment.md`` states every rule implemented here;
the kernels (``kernels/dp.cu`` and its Numba twin ``kernels/dp.py``) must give
the same score, end cell, start cell and CIGAR.

Rows ``i`` index the query, columns ``j`` the target. A gap of length k costs
``gap_open + k * gap_extend`` (BLAST+'s convention).

    E(i,j) = max(H(i,j-1) - o - e, E(i,j-1) - e)      # D: target residue vs gap
    F(i,j) = max(H(i-1,j) - o - e, F(i-1,j) - e)      # I: query residue vs gap
    H(i,j) = max(H(i-1,j-1) + s(q_i, t_j), E, F)      # local: also 0

Ties: in H, a local zero stops, then diagonal, then E (D), then F (I); in E
and F, opening beats extending. The end cell is the best candidate, ties to
the smallest query row, then the smallest target column.
"""

from __future__ import annotations

from dataclasses import dataclass

NEG = float("-inf")


@dataclass
class RefAlignment:
    score: int
    q_start: int
    q_end: int
    t_start: int
    t_end: int
    ops: str  # one letter per column: '=', 'X', 'I', 'D'
    edges: int = 0  # X-drop: bit 1, the left side had a live cell in the target's first column; bit 2, right, last

    @property
    def cigar(self) -> str:
        """Run-length CIGAR of ``ops`` ('' for an empty alignment)."""
        out, run = [], 0
        for k, op in enumerate(self.ops):
            run += 1
            if k + 1 == len(self.ops) or self.ops[k + 1] != op:
                out.append(f"{run}{op}")
                run = 0
        return "".join(out)


def align(
    query: list[int],
    target: list[int],
    table: list[list[int]],
    gap_open: int,
    gap_extend: int,
    mode: str = "global",
    free_ends: tuple[bool, bool, bool, bool] = (True, True, True, True),
    no_match_code: int = -1,
) -> RefAlignment:
    """Align code lists ``query`` and ``target`` scored by ``table[a][b]``.

    ``mode`` is global, local or semiglobal; for semiglobal ``free_ends`` says
    which overhangs cost nothing: (query start, query end, target start,
    target end). A column of equal codes is '=' unless the code is
    ``no_match_code`` (DNA N), then 'X'.

    >>> t = [[2 if a == b else -3 for b in range(4)] for a in range(4)]
    >>> r = align([0, 1, 2, 3], [0, 1, 3], t, 5, 2)
    >>> r.score, r.cigar
    (-1, '2=1I1=')
    >>> align([0, 0, 1, 2], [1, 2], t, 5, 2, "local").cigar
    '2='
    """
    m, n = len(query), len(target)
    o, e = gap_open, gap_extend
    local = mode == "local"
    qs, qe, ts, te = free_ends if mode == "semiglobal" else (False, False, False, False)
    H = [[NEG] * (n + 1) for _ in range(m + 1)]
    E = [[NEG] * (n + 1) for _ in range(m + 1)]
    F = [[NEG] * (n + 1) for _ in range(m + 1)]
    src = [[""] * (n + 1) for _ in range(m + 1)]
    e_ext = [[False] * (n + 1) for _ in range(m + 1)]
    f_ext = [[False] * (n + 1) for _ in range(m + 1)]
    H[0][0] = 0
    for i in range(1, m + 1):
        H[i][0] = 0 if (local or qs) else -(o + i * e)
    for j in range(1, n + 1):
        H[0][j] = 0 if (local or ts) else -(o + j * e)
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            e_open, e_more = H[i][j - 1] - o - e, E[i][j - 1] - e
            E[i][j], e_ext[i][j] = (e_more, True) if e_more > e_open else (e_open, False)
            f_open, f_more = H[i - 1][j] - o - e, F[i - 1][j] - e
            F[i][j], f_ext[i][j] = (f_more, True) if f_more > f_open else (f_open, False)
            diag = H[i - 1][j - 1] + table[query[i - 1]][target[j - 1]]
            best = max(diag, E[i][j], F[i][j])
            if local and best <= 0:
                H[i][j], src[i][j] = 0, "stop"
            else:
                H[i][j] = best
                src[i][j] = "diag" if best == diag else ("E" if best == E[i][j] else "F")

    # The end cell: the best candidate, ties to the smallest (i, j).
    if local:
        candidates = [(i, j) for i in range(m + 1) for j in range(n + 1)]
    else:
        candidates = [(m, n)]
        if qe:
            candidates += [(i, n) for i in range(m + 1)]
        if te:
            candidates += [(m, j) for j in range(n + 1)]
    i, j = min(candidates, key=lambda c: (-H[c[0]][c[1]], c[0], c[1]))
    score, q_end, t_end = int(H[i][j]), i, j

    ops: list[str] = []
    state = "H"
    while True:
        if state == "E":
            ops.append("D")
            state = "E" if e_ext[i][j] else "H"
            j -= 1
            continue
        if state == "F":
            ops.append("I")
            state = "F" if f_ext[i][j] else "H"
            i -= 1
            continue
        if i == 0 or j == 0:  # the first row or column
            if i > 0 and not (local or qs):
                ops += ["I"] * i
                i = 0
            if j > 0 and not (local or ts):
                ops += ["D"] * j
                j = 0
            break
        step = src[i][j]
        if step == "stop":
            break
        if step == "diag":
            a, b = query[i - 1], target[j - 1]
            ops.append("=" if a == b and a != no_match_code else "X")
            i, j = i - 1, j - 1
        else:
            state = step
    return RefAlignment(score, i, q_end, j, t_end, "".join(reversed(ops)))


def rescore(
    ops: str, query: list[int], target: list[int], q_start: int, t_start: int,
    table: list[list[int]], gap_open: int, gap_extend: int,
) -> tuple[int, int, int]:
    """Score of the alignment ``ops`` starting at (q_start, t_start), and the
    end coordinates it reaches: (score, q_end, t_end)."""
    score, i, j, prev = 0, q_start, t_start, ""
    for op in ops:
        if op in "=XM":
            score += table[query[i]][target[j]]
            i, j = i + 1, j + 1
        elif op == "I":
            score -= gap_extend + (gap_open if prev != "I" else 0)
            i += 1
        elif op == "D":
            score -= gap_extend + (gap_open if prev != "D" else 0)
            j += 1
        else:
            raise ValueError(op)
        prev = op
    return score, i, j


def xdrop_ungapped(query: list[int], target: list[int], q_pos: int, t_pos: int,
                   table: list[list[int]], xdrop: int) -> tuple[int, int, int]:
    """BLAST's ungapped X-drop extension of the seed pair (q_pos, t_pos) both ways.

    Walks right from the seed (including it), then left from just before it,
    stopping a side when its running score falls more than ``xdrop`` below that
    side's best; each side keeps its best (ties: the shortest). Returns
    (score, q_start, q_end) with the extension ``[q_start, q_end)`` on the query;
    the target extent is the same diagonal.
    """
    best_r = run = 0
    end = q_pos
    k = 0
    while q_pos + k < len(query) and t_pos + k < len(target):
        run += table[query[q_pos + k]][target[t_pos + k]]
        if run > best_r:
            best_r, end = run, q_pos + k + 1
        elif run < best_r - xdrop:
            break
        k += 1
    best_l = run = 0
    start = q_pos
    k = 1
    while q_pos - k >= 0 and t_pos - k >= 0:
        run += table[query[q_pos - k]][target[t_pos - k]]
        if run > best_l:
            best_l, start = run, q_pos - k
        elif run < best_l - xdrop:
            break
        k += 1
    return best_r + best_l, start, end


def _xdrop_side(query: list[int], target: list[int], table: list[list[int]], o: int, e: int, xdrop: int):
    """One side of a gapped X-drop extension: full DP from (0, 0) = 0 over
    ``query`` (rows) x ``target`` (columns), every cell computed in row-major
    order; a cell whose H is more than ``xdrop`` below the best H so far is
    dropped (its H, E and F become -inf). Returns (best, i, j, ops, edge) with the
    ops from (0, 0) to the best cell (ties: the first best in row-major order);
    ``edge``: some cell of the last column is live (not dropped)."""
    m, n = len(query), len(target)
    H = [[NEG] * (n + 1) for _ in range(m + 1)]
    E = [[NEG] * (n + 1) for _ in range(m + 1)]
    F = [[NEG] * (n + 1) for _ in range(m + 1)]
    src = [[""] * (n + 1) for _ in range(m + 1)]
    e_ext = [[False] * (n + 1) for _ in range(m + 1)]
    f_ext = [[False] * (n + 1) for _ in range(m + 1)]
    best, bi, bj = 0, 0, 0
    for i in range(m + 1):
        for j in range(n + 1):
            if i == 0 and j == 0:
                H[0][0] = 0
                continue
            if j > 0:
                e_open, e_more = H[i][j - 1] - o - e, E[i][j - 1] - e
                E[i][j], e_ext[i][j] = (e_more, True) if e_more > e_open else (e_open, False)
            if i > 0:
                f_open, f_more = H[i - 1][j] - o - e, F[i - 1][j] - e
                F[i][j], f_ext[i][j] = (f_more, True) if f_more > f_open else (f_open, False)
            diag = H[i - 1][j - 1] + table[query[i - 1]][target[j - 1]] if i > 0 and j > 0 else NEG
            h = max(diag, E[i][j], F[i][j])
            if h < best - xdrop:  # dropped (-inf is always dropped)
                H[i][j] = E[i][j] = F[i][j] = NEG
                continue
            H[i][j] = h
            src[i][j] = "diag" if h == diag else ("E" if h == E[i][j] else "F")
            if h > best:
                best, bi, bj = h, i, j
    ops: list[str] = []
    i, j, state = bi, bj, "H"
    while (i, j, state) != (0, 0, "H"):
        if state == "E":
            ops.append("D")
            state = "E" if e_ext[i][j] else "H"
            j -= 1
        elif state == "F":
            ops.append("I")
            state = "F" if f_ext[i][j] else "H"
            i -= 1
        elif src[i][j] == "diag":
            ops.append("=" if query[i - 1] == target[j - 1] else "X")  # placeholder letter, fixed by the caller
            i, j = i - 1, j - 1
        else:
            state = src[i][j]
    edge = any(H[i][n] != NEG for i in range(m + 1))
    return int(best), bi, bj, ops[::-1], edge


def xdrop_gapped(query: list[int], target: list[int], q_pos: int, t_pos: int, table: list[list[int]],
                 gap_open: int, gap_extend: int, xdrop: int, no_match_code: int = -1) -> RefAlignment:
    """Gapped X-drop extension of the seed pair (q_pos, t_pos), as in docs/alignment.md.

    The seed pair is aligned; the right side extends over ``query[q_pos+1:]``
    x ``target[t_pos+1:]``, the left side over the reversed prefixes
    ``query[:q_pos]`` x ``target[:t_pos]``, each by :func:`_xdrop_side`.
    Score = s(seed) + best right + best left; the alignment is the left
    side's path, the seed column, the right side's path.

    >>> t = [[2 if a == b else -3 for b in range(4)] for a in range(4)]
    >>> r = xdrop_gapped([0, 1, 2, 3, 0, 1], [3, 1, 2, 0, 1], 2, 2, t, 5, 2, 10)
    >>> r.score, r.q_start, r.q_end, r.t_start, r.t_end, r.cigar
    (4, 1, 3, 1, 3, '2=')
    """
    rs, ri, rj, rops, redge = _xdrop_side(query[q_pos + 1:], target[t_pos + 1:], table, gap_open, gap_extend, xdrop)
    ls, li, lj, lops, ledge = _xdrop_side(query[:q_pos][::-1], target[:t_pos][::-1], table, gap_open, gap_extend, xdrop)
    q_start, t_start = q_pos - li, t_pos - lj
    ops = lops[::-1] + ["M"] + rops
    # Letters of the diagonal columns from the residues (N is never '=').
    i, j, out = q_start, t_start, []
    for op in ops:
        if op in "=XM":
            a, b = query[i], target[j]
            out.append("=" if a == b and a != no_match_code else "X")
            i, j = i + 1, j + 1
        else:
            out.append(op)
            i, j = (i + 1, j) if op == "I" else (i, j + 1)
    score = table[query[q_pos]][target[t_pos]] + rs + ls
    return RefAlignment(score, q_start, q_pos + 1 + ri, t_start, t_pos + 1 + rj, "".join(out),
                        int(ledge) | 2 * int(redge))

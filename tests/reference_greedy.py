"""Slow, readable megablast greedy gapped extension: the reference of the ``greedy`` kernels.

BLAST+ 2.12 extends megablast's seeds (linear gap costs, ``-gapopen 0 -gapextend 0``)
not with a DP but with the greedy algorithm of Zhang, Schwartz, Wagner and
Miller (J. Comput. Biol. 7:203, 2000) as its ``BLAST_GreedyAlign`` runs it, then
edits the alignment (``s_ReduceGaps``) and scores it again
(``Blast_HSPReevaluateWithAmbiguitiesGapped``). ``docs/blast.md`` ("Megablast's greedy
extension") states the rules; this file writes them one statement at a time, with
plain lists and dictionaries, in the order the rules give them. The Numba twin
(``kernels/greedy.py``) must give the same numbers, ends and edit scripts.

Scores are at twice the scale (``match = 2 * reward``, ``mismatch = -2 * penalty``,
``xdrop`` doubled), as BLAST+ does for an odd reward; for an even reward the doubled
arithmetic gives the same decisions. A *distance* counts mismatches and gap columns;
a point reached with extent ``e = i + j`` (bases of both sequences) at distance ``d``
scores ``e * match / 2 - d * (match + mismatch)``.

Edit operations: ``SUB`` (aligned columns), ``INS`` (a query base against a gap),
``DEL`` (a subject base against a gap).
"""

from __future__ import annotations

from dataclasses import dataclass, field

SUB, INS, DEL = 0, 1, 2
#: An offset no diagonal can hold (BLAST+'s kInvalidOffset).
INVALID = -2


@dataclass
class Side:
    """One direction of an extension from the origin: its distance, the extents on
    both sequences, the longest run of matches seen (where it starts, how long), whether
    a diagonal reached the subject's end, and (with trace-back) the operations from the
    origin outwards."""

    dist: int
    len1: int
    len2: int
    seed: tuple[int, int, int]
    edge: bool
    ops: list[list[int]] = field(default_factory=list)


def _add(ops: list[list[int]], op: int, n: int) -> None:
    """Appends ``n`` of ``op``, merged into the last operation when it is the same."""
    if n == 0:
        return
    if ops and ops[-1][0] == op:
        ops[-1][1] += n
    else:
        ops.append([op, n])


def greedy_side(seq1: list[int], seq2: list[int], xdrop: int, match: int, mismatch: int,
                traceback: bool = False) -> Side:
    """Greedy extension of ``seq1`` (query side) against ``seq2`` (subject side), both read
    outwards from the origin; codes 0-3 are bases, anything else never matches.

    For each distance d = 1, 2, ... and each diagonal k (query offset minus subject
    offset) of the current range, the point of distance d furthest along k is taken from
    the three points of distance d - 1 beside it, then slid over matches. A diagonal whose
    entry point scores less than the best score of distance d - ``offset`` less ``xdrop``
    is dropped. The best distance is the last one whose furthest point scores at least as
    well as every earlier one; the range ends when no diagonal is left.
    """
    len1, len2 = len(seq1), len(seq2)

    def slide(i: int, j: int) -> int:
        n = 0
        while i + n < len1 and j + n < len2 and seq1[i + n] < 4 and seq1[i + n] == seq2[j + n]:
            n += 1
        return n

    half = match // 2
    offset = (xdrop + half) // (match + mismatch) + 1
    first = slide(0, 0)
    seed = (0, 0, first)
    if first == len1 or first == len2:
        ops = [[SUB, first]] if traceback and first else []
        return Side(0, first, first, seed, first == len2, ops)
    rows: list[dict[int, int]] = [{0: first}]
    best_at = {d: 0 for d in range(-offset, 0)}  # the best score of each distance so far
    best_at[0] = first * match
    lower, upper = -1, 1
    end1 = end2 = False
    best_dist, best_diag, best_len2 = 0, 0, first
    longest = first
    d = 0
    while True:
        d += 1
        prev = rows[d - 1]
        for k in (lower - 1, lower, upper, upper + 1):  # sentinels around the range (over stored values too)
            prev[k] = INVALID
        floor = best_at[d - offset] + (match + mismatch) * d - xdrop
        floor = -(-floor // half)  # the least extent a live point of distance d may have
        row: dict[int, int] = {}
        ext_best, len2_best, diag_best = 0, 0, 0
        for k in range(lower, upper + 1):
            j = max(prev[k + 1], prev[k]) + 1
            j = max(j, prev[k - 1])
            i = j + k
            if j < 0 or i + j < floor:
                if k == lower:
                    lower += 1
                else:
                    row[k] = INVALID
                continue
            upper = k
            n = slide(i, j)
            if n > longest:
                longest = n
                seed = (i, j, n)
            i, j = i + n, j + n
            row[k] = j
            if i + j > ext_best:
                ext_best, len2_best, diag_best = i + j, j, k
            if j == len2:
                lower = k + 1
                end2 = True
            if i == len1:
                upper = k - 1
                end1 = True
        rows.append(row)
        score = ext_best * half - d * (match + mismatch)
        if score >= best_at[d - 1]:
            best_at[d] = score
            best_dist, best_diag, best_len2 = d, diag_best, len2_best
        else:
            best_at[d] = best_at[d - 1]
        if lower > upper:
            break
        if not end2:
            lower -= 1
        if not end1:
            upper += 1
    side = Side(best_dist, best_len2 + best_diag, best_len2, seed, end2)
    if traceback:
        back: list[list[int]] = []  # from the best point back to the origin
        d, diag, j = best_dist, best_diag, best_len2
        while d > 0:
            a, b, c = rows[d - 1][diag - 1], rows[d - 1][diag], rows[d - 1][diag + 1]
            if a > max(b, c):
                new_diag, new_j = diag - 1, a
            elif b > c:
                new_diag, new_j = diag, b
            else:
                new_diag, new_j = diag + 1, c
            if new_diag == diag:
                _add(back, SUB, j - new_j)
            elif new_diag < diag:
                _add(back, SUB, j - new_j)
                _add(back, INS, 1)
            else:
                _add(back, SUB, j - new_j - 1)
                _add(back, DEL, 1)
            d, diag, j = d - 1, new_diag, new_j
        _add(back, SUB, rows[0][0])
        side.ops = back[::-1]
    return side


@dataclass
class Extension:
    """Both directions of a greedy extension from ``(q_pos, s_pos)`` (the right side starts
    there, the left side ends just before): ends (0-based, half-open), the score at twice
    the scale, the start point estimate for the trace-back, the subject-end flags (bit 1
    left, bit 2 right) and, with trace-back, the edit script in alignment order."""

    score: int
    q_start: int
    q_end: int
    s_start: int
    s_end: int
    q_seed: int
    s_seed: int
    edges: int
    dist: int
    ops: list[list[int]] = field(default_factory=list)


def greedy_extend(query: list[int], subject: list[int], q_pos: int, s_pos: int, xdrop: int, match: int,
                  mismatch: int, traceback: bool = False) -> Extension:
    """``BLAST_GreedyGappedAlignment``: the right side from the seed, the left side over the
    reversed prefixes; the score from the extents and distances; the trace-back's start
    (the middle of the longest run of matches either side found, within the alignment's box);
    with trace-back the two sides' operations joined and edited (:func:`reduce_gaps`)."""
    right = greedy_side(query[q_pos:], subject[s_pos:], xdrop, match, mismatch, traceback)
    left = greedy_side(query[:q_pos][::-1], subject[:s_pos][::-1], xdrop, match, mismatch, traceback)
    dist = right.dist + left.dist
    score = (right.len1 + right.len2 + left.len1 + left.len2) * (match // 2) - dist * (match + mismatch)
    q_lo, s_lo, q_hi, s_hi = q_pos - left.len1, s_pos - left.len2, q_pos + right.len1, s_pos + right.len2
    q_r, s_r = q_pos + right.seed[0], s_pos + right.seed[1]
    q_l, s_l = q_pos - left.seed[0], s_pos - left.seed[1]
    valid_r = valid_l = 0
    if q_r < q_hi and s_r < s_hi:
        valid_r = min(q_hi - q_r, s_hi - s_r, right.seed[2]) // 2
    else:
        q_r, s_r = q_pos, s_pos
    if q_l > q_lo and s_l > s_lo:
        valid_l = min(q_l - q_lo, s_l - s_lo, left.seed[2]) // 2
    else:
        q_l, s_l = q_pos, s_pos
    if valid_r > valid_l:
        q_seed, s_seed = q_r + valid_r, s_r + valid_r
    else:
        q_seed, s_seed = q_l - valid_l, s_l - valid_l
    ext = Extension(score, q_lo, q_hi, s_lo, s_hi, q_seed, s_seed, int(left.edge) | 2 * int(right.edge), dist)
    if traceback:
        ops = [list(op) for op in left.ops[::-1]]  # the left side's walk, from its far end to the seed
        for op, n in right.ops:
            _add(ops, op, n)
        ext.ops = reduce_gaps(ops, query, subject, q_lo, s_lo, q_hi, s_hi)
    return ext


def _rebuild(ops: list[list[int]]) -> list[list[int]]:
    """``s_RebuildEditScript``: drops empty operations, merges equal neighbours, and folds a
    gap of one kind followed by a gap of the other into substitutions."""
    out: list[list[int]] = []
    for op, n in ops:
        if n == 0:
            continue
        if out and op == out[-1][0]:
            out[-1][1] += n
        elif not out or op == SUB or out[-1][0] == SUB:
            out.append([op, n])
        else:  # INS after DEL or DEL after INS: the shorter becomes substitutions
            diff = out[-1][1] - n
            if diff > 0:
                out[-2][1] += n
                out[-1][1] = diff
            elif diff < 0:
                out[-2][1] += out[-1][1]
                out[-1] = [op, -diff]
            else:
                out[-2][1] += out[-1][1]
                out.pop()
    return out


def _take_side(ops: list[list[int]], pos: int, cols: int, step: int) -> bool:
    """One side of :func:`_move_gap`: ``cols`` columns taken from the operations before (``step`` -1) or
    after (+1) the substitution run at ``pos``; those operations become one substitution run and one
    gap of the net length. False (nothing changed) when that side runs out of operations."""
    k, qd, sd = pos, cols, cols
    while qd > 0 or sd > 0:
        k += step
        if not 0 <= k < len(ops):
            return False
        op, n = ops[k]
        if op == SUB:
            qd, sd = qd - n, sd - n
        elif op == INS:
            qd -= n
        else:
            sd -= n
    ops[k] = [SUB, -max(qd, sd)]
    for t in range(k - step, pos + step, -step):
        ops[t][1] = 0
    ops[pos][1] += cols
    net = qd - sd
    ops[pos + step] = [DEL, net] if net > 0 else [INS, -net]
    return True


def _move_gap(ops: list[list[int]], pos: int, before: int, after: int) -> None:
    """``s_UpdateEditScript``: the substitution run at ``pos`` grows by ``before`` columns on its left
    and ``after`` on its right (:func:`_take_side`); a side that runs out of operations stops the
    whole edit there."""
    if before > 0 and not _take_side(ops, pos, before, -1):
        return
    if after > 0:
        _take_side(ops, pos, after, 1)


def reduce_gaps(ops: list[list[int]], query: list[int], subject: list[int], q_start: int, s_start: int,
                q_end: int, s_end: int) -> list[list[int]]:
    """``s_ReduceGaps`` (BLAST+ 2.12): edits of the greedy path ``ops`` of the alignment
    ``query[q_start:q_end]`` x ``subject[s_start:s_end]``. First a substitution run of at
    least 12 columns takes in the matches that continue it on its diagonal past the gaps
    beside it (the operations there shrink, :func:`_move_gap`); then a gap, a short
    substitution run and a gap of the other kind (together under 12 columns) become one gap
    and substitutions where that loses no more matches than the gap it shortens. Bases are
    compared as codes (an N equals an N); a position outside the sequences equals nothing."""

    def same(a: int, b: int) -> bool:
        return 0 <= a < len(query) and 0 <= b < len(subject) and query[a] == subject[b]

    ops = [list(op) for op in ops]
    q1, s1 = q_start, s_start
    for i in range(len(ops)):
        op, n = ops[i]
        if n == 0:
            continue
        if op == SUB:
            if n >= 12:
                nm1 = 1
                if i > 0:
                    while q1 - nm1 >= q_start and same(q1 - nm1, s1 - nm1):
                        nm1 += 1
                q1 += n
                s1 += n
                nm2 = 0
                if i < len(ops) - 1:
                    while q1 + 1 < q_end and s1 + 1 < s_end:
                        equal = same(q1, s1)
                        q1, s1 = q1 + 1, s1 + 1
                        if not equal:
                            break
                        nm2 += 1
                if nm1 > 1 or nm2 > 0:
                    _move_gap(ops, i, nm1 - 1, nm2)
                q1 -= 1
                s1 -= 1
            else:
                q1 += n
                s1 += n
        elif op == INS:
            q1 += n
        else:
            s1 += n
    ops = _rebuild(ops)
    qa, sa = q_start, s_start
    for i in range(len(ops)):
        op = ops[i][0]
        if op == SUB:
            qa += ops[i][1]
            sa += ops[i][1]
            continue
        if i > 1 and op != ops[i - 2][0] and ops[i - 2][1] > 0:
            total = ops[i][1] + ops[i - 1][1] + ops[i - 2][1]
            if total == 3:
                ops[i - 2][1] = 0
                ops[i - 1][1] = 2
                ops[i][1] = 0
                if op == INS:
                    qa += 1
                else:
                    sa += 1
            elif total < 12:
                nm1 = nm2 = 0
                shift = min(ops[i][1], ops[i - 2][1])
                qa -= ops[i - 1][1]
                sa -= ops[i - 1][1]
                qb, sb = qa, sa
                if op == INS:
                    sa -= shift
                else:
                    qa -= shift
                for _ in range(ops[i - 1][1]):
                    nm1 += same(qb, sb)
                    nm2 += same(qa, sa)
                    qb, sb, qa, sa = qb + 1, sb + 1, qa + 1, sa + 1
                for _ in range(shift):
                    nm2 += same(qa, sa)
                    qa, sa = qa + 1, sa + 1
                if nm2 >= nm1 - shift:
                    ops[i - 2][1] -= shift
                    ops[i - 1][1] += shift
                    ops[i][1] -= shift
                else:
                    qa, sa = qb, sb
        if op == INS:
            qa += ops[i][1]
        else:
            sa += ops[i][1]
    return _rebuild(ops)


@dataclass
class Reevaluated:
    """An HSP scored again (:func:`reevaluate`): kept or not, its score (reported units), ends
    and edit script."""

    keep: bool
    score: int
    q_start: int
    q_end: int
    s_start: int
    s_end: int
    ops: list[list[int]]


def reevaluate(ops: list[list[int]], query: list[int], subject: list[int], q_start: int, s_start: int,
               reward: int, penalty: int, n_score: int, cutoff: int) -> Reevaluated:
    """``Blast_HSPReevaluateWithAmbiguitiesGapped`` for megablast's linear gaps: the alignment
    scored column by column at twice the scale (a base pair ``2 * reward`` or ``2 * penalty``,
    a pair with an N ``2 * n_score``, a gap column ``reward - 2 * penalty``); where the running
    sum falls below 0 the alignment starts again after that column, and the part kept is the
    best-scoring one (its first best end). A restart drops the best part so far only while its
    score is under ``cutoff`` (BLAST+ compares its sum with the cutoff as it is: at twice the scale
    for an odd reward, which it doubles, in reported units for an even one). Then the part grows
    by the exact matches beside it, ``reward`` each; it is kept when its score (halved, rounded
    down, plus those) reaches ``cutoff``."""
    ops = [list(op) for op in ops]
    gap = reward - 2 * penalty
    restart_cut = cutoff if reward % 2 else 2 * cutoff  # BLAST+ sums at twice the scale for an odd reward only
    q, s = q_start, s_start
    total = score = 0
    best_q0 = best_q1 = cur_q = q
    best_s0 = best_s1 = cur_s = s
    best_first = best_last = cur_first = 0
    best_last_n = -1
    for index in range(len(ops)):
        k = 0
        while k < ops[index][1]:
            op, n = ops[index]
            if op == SUB:
                a, b = query[q], subject[s]
                total += 2 * (n_score if a > 3 or b > 3 else (reward if a == b else penalty))
                q, s, k = q + 1, s + 1, k + 1
            elif op == DEL:
                total -= gap * n
                s, k = s + n, k + n
            else:
                total -= gap * n
                q, k = q + n, k + n
            if total < 0:
                if k < ops[index][1]:
                    ops[index][1] -= k
                    cur_first = index
                    k = 0
                else:
                    cur_first = index + 1
                total = 0
                cur_q, cur_s = q, s
                if score < restart_cut:
                    best_q0, best_s0 = q, s
                    score = 0
                    best_first = best_last = cur_first
            elif total > score:
                score = total
                best_q0, best_s0, best_q1, best_s1 = cur_q, cur_s, q, s
                best_first, best_last, best_last_n = cur_first, index, k
    score //= 2
    if best_first < len(ops) and best_last < len(ops):
        ext = 0
        qp, sp = best_q0, best_s0
        while qp > 0 and sp > 0:
            qp, sp = qp - 1, sp - 1
            if not (query[qp] == subject[sp] and query[qp] < 4):
                break
            ext += 1
        best_q0, best_s0 = best_q0 - ext, best_s0 - ext
        ops[best_first][1] += ext
        if best_last == best_first:
            best_last_n += ext
        score += ext * reward
        ext = 0
        qp, sp = best_q1, best_s1
        while qp < len(query) and sp < len(subject) and query[qp] < 4 and query[qp] == subject[sp]:
            qp, sp, ext = qp + 1, sp + 1, ext + 1
        best_q1, best_s1 = best_q1 + ext, best_s1 + ext
        ops[best_last][1] += ext
        best_last_n += ext
        score += ext * reward
    if score < cutoff:
        return Reevaluated(False, score, best_q0, best_q1, best_s0, best_s1, [])
    kept = [list(op) for op in ops[best_first:best_last + 1]]
    kept[-1][1] = best_last_n
    return Reevaluated(True, score, best_q0, best_q1, best_s0, best_s1, kept)


def traceback_start(query: list[int], subject: list[int], q_seed: int, s_seed: int, q_start: int, q_end: int,
                    s_start: int, s_end: int) -> tuple[int, int]:
    """``BlastGetStartForGappedAlignmentNucl``: where the trace-back of a score-only HSP
    (``[q_start, q_end) x [s_start, s_end)``, start estimate ``(q_seed, s_seed)``) starts. The
    estimate stays when the matches through it (counted forwards from it, then backwards from
    it again, from -1) pass 10; else the longest run of matches on its diagonal within the HSP,
    its middle, or the first run past 15, 7 bases before its end. Codes are compared as they
    are (an N equals an N)."""

    def same(a: int, b: int) -> bool:
        return 0 <= a < len(query) and 0 <= b < len(subject) and query[a] == subject[b]

    limit = 10
    back = min(s_seed - s_start, q_seed - q_start)
    count = -1
    a, b = q_seed, s_seed
    while a < q_end:
        equal = same(a, b)
        a, b = a + 1, b + 1
        if not equal:
            break
        count += 1
        if count > limit:
            return q_seed, s_seed
    a, b = q_seed, s_seed
    while a >= 0:
        equal = same(a, b)
        a, b = a - 1, b - 1
        if not equal:
            break
        count += 1
        if count > limit:
            return q_seed, s_seed
    limit = int(limit * 1.5)
    q0, s0 = q_seed - back, s_seed - back
    span = min(s_end - s0, q_end - q0)
    best, best_at, run = 0, q0, 0
    match = prev = False
    index = q0
    for index in range(q0, q0 + span):
        match = same(index, index - q0 + s0)
        if match != prev:
            prev = match
            if match:
                run = 1
            elif run > best:
                best, best_at = run, index - run // 2
        elif match:
            run += 1
            if run > limit:
                at = index - limit // 2
                return at, at + s0 - q0
    else:
        index = q0 + span
    if match and run > best:
        best, best_at = run, index - run // 2
    if best > 0:
        return best_at, best_at + s0 - q0
    return q_seed, s_seed

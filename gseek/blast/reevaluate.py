"""Megablast's HSPs around the greedy extension, as BLAST+ 2.12 makes them (``docs/blast.md``).

Host passes (Numba) over the HSPs of a search, the same on every backend:

* :func:`traceback_starts`: where the trace-back of a score-only HSP starts
  (``BlastGetStartForGappedAlignmentNucl``): the greedy pass's estimate, kept when it
  lies in a run of over 10 matches, else a long run of matches on its diagonal;
* :func:`reevaluate`: a traced-back alignment scored again column by column
  (``Blast_HSPReevaluateWithAmbiguitiesGapped``): an N scores the matrix value, the
  alignment restarts after a stretch that sums below 0, the best-scoring part is kept and
  grows by the exact matches beside it; the HSP is dropped when that part's score is
  under the cutoff;
* :func:`match_runs`: the edit script's substitution runs split into ``=``/``X`` runs
  (BAM CIGAR codes) with the columns counted.

The alignments are ``M``/``I``/``D`` runs in BAM's encoding (``length << 4 | op``), the
subjects windows of the database text. The readable reference is
``tests/reference_greedy.py``.
"""

from __future__ import annotations

import numba
import numpy as np

from gseek.kernels._jit import njit

__all__ = ["traceback_starts", "reevaluate", "match_runs"]

#: BAM CIGAR operation codes.
OP_M, OP_I, OP_D, OP_EQ, OP_X = 0, 1, 2, 7, 8


@njit(cache=True, inline="always")
def _same(q, qa, qb, s, sa, sb, i, j):
    """``q[i] == s[j]`` as codes (an N equals an N), both inside their sequences ``[qa, qb)`` / ``[sa, sb)``."""
    return qa <= i < qb and sa <= j < sb and q[i] == s[j]


@njit(cache=True, inline="always")
def _run_through(q, qa, qb, s, sa, sb, i, j, step, stop, count, limit):
    """``count`` plus the matches from (i, j) on by ``step`` (the query position stopping before ``stop``),
    ending at the first mismatch or once the count passes ``limit``."""
    while (i < stop) if step > 0 else (i > stop):
        equal = _same(q, qa, qb, s, sa, sb, i, j)
        i += step
        j += step
        if not equal:
            break
        count += 1
        if count > limit:
            break
    return count


@njit(parallel=True, cache=True)
def traceback_starts(q, q_lo, q_hi, s, s_lo, s_hi, q_start, q_end, s_start, s_end, q_seed, s_seed):
    """``BlastGetStartForGappedAlignmentNucl`` of every HSP ``h``: the query is ``q[q_lo[h]:q_hi[h]]``,
    the subject ``s[s_lo[h]:s_hi[h]]``, the HSP ``[q_start, q_end) x [s_start, s_end)`` and its
    estimate ``(q_seed, s_seed)``, all positions in ``q`` / ``s``. Returns the start points.

    The estimate stays when the matches through it pass 10 (counted forwards from it, then
    backwards from it again, from -1); else, on its diagonal within the HSP, the first run of
    over 15 matches gives the point 7 before its end, or the longest run its middle."""
    n = q_seed.size
    out_q = q_seed.copy()
    out_s = s_seed.copy()
    for h in numba.prange(n):
        qa, qb, sa, sb = q_lo[h], q_hi[h], s_lo[h], s_hi[h]
        qs, ss = q_seed[h], s_seed[h]
        limit = 10
        count = _run_through(q, qa, qb, s, sa, sb, qs, ss, 1, q_end[h], -1, limit)
        if count <= limit:  # forwards from the estimate, then backwards from it again
            count = _run_through(q, qa, qb, s, sa, sb, qs, ss, -1, qa - 1, count, limit)
        if count > limit:
            continue
        limit = 15
        back = min(ss - s_start[h], qs - q_start[h])
        q0 = qs - back
        s0 = ss - back
        span = min(s_end[h] - s0, q_end[h] - q0)
        best = 0
        best_at = q0
        run = 0
        match = False
        prev = False
        found = False
        index = q0
        while index < q0 + span:
            match = _same(q, qa, qb, s, sa, sb, index, index - q0 + s0)
            if match != prev:
                prev = match
                if match:
                    run = 1
                elif run > best:
                    best = run
                    best_at = index - run // 2
            elif match:
                run += 1
                if run > limit:
                    at = index - limit // 2
                    out_q[h] = at
                    out_s[h] = at + s0 - q0
                    found = True
                    break
            index += 1
        if found:
            continue
        if match and run > best:
            best = run
            best_at = index - run // 2
        if best > 0:
            out_q[h] = best_at
            out_s[h] = best_at + s0 - q0
    return out_q, out_s


@njit(parallel=True, cache=True)
def reevaluate(q, q_lo, q_hi, s, s_lo, s_hi, q_start, s_start, cigar, cigar_off, reward, penalty, n_score, cutoff,
               out_cigar, out_off, out_q_start, out_q_end, out_s_start, out_s_end, out_score):
    """``Blast_HSPReevaluateWithAmbiguitiesGapped`` of every HSP ``h`` (``M``/``I``/``D`` runs
    ``cigar[cigar_off[h]:cigar_off[h + 1]]`` from ``(q_start, s_start)``; sequences as in
    :func:`traceback_starts`), for linear gaps: columns scored at twice the scale (a pair
    ``2 * reward`` or ``2 * penalty``, with an N ``2 * n_score``, a gap column
    ``reward - 2 * penalty``); where the sum falls below 0 the alignment starts again after that
    column, dropping the best part so far only while its score (twice the scale, as BLAST+
    compares it) is under ``cutoff[h]``; the best part (its first best end) then grows by the
    exact matches beside it, ``reward`` each. Writes each kept part's runs at ``out_off[h]``
    (room: the input's runs) and its ends; returns how many runs each has (0: dropped, its score
    halved, rounded down, plus the matches added, under the cutoff)."""
    n = q_start.size
    count = np.zeros(n, np.int64)
    gap = reward - 2 * penalty
    for h in numba.prange(n):
        a = cigar_off[h]
        runs = cigar_off[h + 1] - a
        qa, qb, sa, sb = q_lo[h], q_hi[h], s_lo[h], s_hi[h]
        o = out_off[h]
        for r in range(runs):  # a copy to edit: BLAST+ shortens a run where the alignment restarts in it
            out_cigar[o + r] = cigar[a + r]
        qp = q_start[h]
        sp = s_start[h]
        total = 0
        score = 0
        best_q0 = qp
        best_s0 = sp
        best_q1 = qp
        best_s1 = sp
        cur_q = qp
        cur_s = sp
        best_first = 0
        best_last = 0
        cur_first = 0
        best_last_n = -1
        for index in range(runs):
            k = 0
            while k < np.int64(out_cigar[o + index] >> 4):
                op = np.int64(out_cigar[o + index] & 15)
                length = np.int64(out_cigar[o + index] >> 4)
                if op == OP_M:
                    x = q[qp]
                    y = s[sp]
                    if x > 3 or y > 3:
                        total += 2 * n_score
                    elif x == y:
                        total += 2 * reward
                    else:
                        total += 2 * penalty
                    qp += 1
                    sp += 1
                    k += 1
                elif op == OP_D:
                    total -= gap * length
                    sp += length
                    k += length
                else:
                    total -= gap * length
                    qp += length
                    k += length
                if total < 0:
                    if k < length:
                        out_cigar[o + index] = np.uint32(((length - k) << 4) | op)
                        cur_first = index
                        k = 0
                    else:
                        cur_first = index + 1
                    total = 0
                    cur_q = qp
                    cur_s = sp
                    if score < cutoff[h]:
                        best_q0 = qp
                        best_s0 = sp
                        score = 0
                        best_first = cur_first
                        best_last = cur_first
                elif total > score:
                    score = total
                    best_q0 = cur_q
                    best_s0 = cur_s
                    best_q1 = qp
                    best_s1 = sp
                    best_first = cur_first
                    best_last = index
                    best_last_n = k
        score //= 2
        if best_first < runs and best_last < runs:
            ext = 0
            i = best_q0
            j = best_s0
            while i > qa and j > sa:
                i -= 1
                j -= 1
                if not (q[i] == s[j] and q[i] < 4):
                    break
                ext += 1
            best_q0 -= ext
            best_s0 -= ext
            out_cigar[o + best_first] += np.uint32(ext << 4)
            if best_last == best_first:
                best_last_n += ext
            score += ext * reward
            ext = 0
            i = best_q1
            j = best_s1
            while i < qb and j < sb and q[i] < 4 and q[i] == s[j]:
                i += 1
                j += 1
                ext += 1
            best_q1 += ext
            best_s1 += ext
            best_last_n += ext
            score += ext * reward
        out_score[h] = score
        if score < cutoff[h]:
            continue
        kept = best_last - best_first + 1
        for r in range(kept):
            out_cigar[o + r] = out_cigar[o + best_first + r]
        out_cigar[o + kept - 1] = np.uint32((best_last_n << 4) | np.int64(out_cigar[o + kept - 1] & 15))
        count[h] = kept
        out_q_start[h] = best_q0
        out_q_end[h] = best_q1
        out_s_start[h] = best_s0
        out_s_end[h] = best_s1
    return count


@njit(cache=True, inline="always")
def _put(out, first, pos, op, n):
    """Appends ``n`` of ``op`` to the runs written at ``out[first:pos]``, merged into the last run when of
    the same op. Returns the new end."""
    if pos > first and (out[pos - 1] & 15) == op:
        out[pos - 1] += np.uint32(n << 4)
        return pos
    out[pos] = np.uint32((n << 4) | op)
    return pos + 1


@njit(parallel=True, cache=True)
def match_runs(q, s, q_start, s_start, cigar, cigar_off, out_off, out, stats):
    """The ``M`` runs of every alignment split into ``=`` (equal bases 0-3) and ``X`` runs, written with
    the ``I``/``D`` runs at ``out[out_off[h]:]`` (room: a run a column of the ``M`` runs, and the gap
    runs). Counts the runs written (``stats[0]``), matches, mismatches, gap columns and gap opens
    (``stats[1:5]``) of each."""
    for h in numba.prange(q_start.size):
        qp = q_start[h]
        sp = s_start[h]
        first = out_off[h]
        pos = first
        matches = mismatches = gap_cols = gap_opens = 0
        for r in range(cigar_off[h], cigar_off[h + 1]):
            op = np.int64(cigar[r] & 15)
            length = np.int64(cigar[r] >> 4)
            if op == OP_M:
                for _ in range(length):
                    x = q[qp]
                    if x < 4 and x == s[sp]:
                        matches += 1
                        pos = _put(out, first, pos, OP_EQ, 1)
                    else:
                        mismatches += 1
                        pos = _put(out, first, pos, OP_X, 1)
                    qp += 1
                    sp += 1
            else:
                if not (pos > first and (out[pos - 1] & 15) == op):
                    gap_opens += 1
                gap_cols += length
                pos = _put(out, first, pos, op, length)
                if op == OP_I:
                    qp += length
                else:
                    sp += length
        stats[0, h] = pos - first
        stats[1, h] = matches
        stats[2, h] = mismatches
        stats[3, h] = gap_cols
        stats[4, h] = gap_opens

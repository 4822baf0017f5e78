"""Where the trace-back of a megablast HSP starts, as BLAST+ 2.12 chooses it (``docs/blast.md``,
"Megablast's greedy extension").

:func:`traceback_starts` (``BlastGetStartForGappedAlignmentNucl``), a host pass (Numba) over the
score-only HSPs of a search, the same on every backend: the greedy pass's estimate (the middle of
the longest run of matches its sides slid over, inside the HSP), kept when it lies in a run of over
10 matches, else a long run of matches on its diagonal within the HSP. The readable reference is
``tests/reference_greedy.py``; the greedy extension itself and BLAST+'s re-scoring of the
traced-back alignment are the ``greedy`` kernel family (``gseek.dp.greedy``).
"""

from __future__ import annotations

import numba
import numpy as np

from gseek.kernels._jit import njit

__all__ = ["ESTIMATE_READS", "estimates_hold", "traceback_starts"]


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


@njit(cache=True, inline="always")
def _estimate_holds(q, qa, qb, s, sa, sb, q_end, qs, ss):
    """Whether the matches through the estimate ``(qs, ss)`` pass 10 (counted forwards from it, the query
    position stopping before ``q_end``, then backwards from it again, from -1): it reads at most
    :data:`ESTIMATE_READS` bases either side of ``ss``."""
    limit = 10
    count = _run_through(q, qa, qb, s, sa, sb, qs, ss, 1, q_end, -1, limit)
    if count <= limit:
        count = _run_through(q, qa, qb, s, sa, sb, qs, ss, -1, qa - 1, count, limit)
    return count > limit


#: Subject bases either side of an estimate that :func:`estimates_hold` reads (at most 12 each way from
#: it), with room to spare.
ESTIMATE_READS = 16


@njit(parallel=True, cache=True, nogil=True)
def estimates_hold(q, q_lo, q_hi, s, s_lo, s_hi, q_end, q_seed, s_seed):
    """For every HSP, whether :func:`traceback_starts` keeps its estimate (the matches through it pass 10),
    from subject windows that need hold only :data:`ESTIMATE_READS` bases either side of it (the
    arguments as :func:`traceback_starts`'). An HSP whose estimate holds needs no more of its subject."""
    n = q_seed.size
    out = np.zeros(n, np.bool_)
    for h in numba.prange(n):
        out[h] = _estimate_holds(q, q_lo[h], q_hi[h], s, s_lo[h], s_hi[h], q_end[h], q_seed[h], s_seed[h])
    return out


@njit(parallel=True, cache=True, nogil=True)
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
        if _estimate_holds(q, qa, qb, s, sa, sb, q_end[h], qs, ss):
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

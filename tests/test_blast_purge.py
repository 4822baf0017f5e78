"""BLAST+'s purge and report order (gseek.blast.purge) against their readable references.

The references are the first versions, kept here: ``np.lexsort`` over the columns and a pass over every better
HSP of a key. The inputs are random and built to stress the fast versions: keys of many HSPs (the window of a
large key), scores, starts and ends drawn from few values (ties, shared starts and ends), HSPs placed inside
others at the diagonal limit (``_DIAG_NEAR`` and one past it), ranges that do not pack into 64 bits, e-values
tied, zero and NaN, the limits ``max_targets`` and ``max_hsps``; empty input and one key.
"""

from __future__ import annotations

import numpy as np
import pytest

from gseek.blast.purge import _SMALL_KEY, _lexsort, _purge, _report_order
from gseek.blast.rounds import _DIAG_NEAR


def reference_purge(h: dict[str, np.ndarray]) -> np.ndarray:
    """Per key (sequence, contig), best first (score, then query and subject start, then row): drop an HSP that
    shares its start or its end with a better kept one, or lies inside it on both sequences near its diagonals."""
    n = h["score"].size
    keep = np.ones(n, bool)
    if n == 0:
        return keep
    key = h["seq"].astype(np.int64) * (int(h["contig"].max()) + 1) + h["contig"]
    order = np.lexsort((h["s_start"], h["q_start"], -h["score"], key))
    qa, qb, sa, sb = (h[k].tolist() for k in ("q_start", "q_end", "s_start", "s_end"))
    for x, i in enumerate(order.tolist()):
        for j in order[:x][::-1].tolist():
            if key[j] != key[i]:
                break
            if not keep[j]:
                continue
            same_end = (qa[i] == qa[j] and sa[i] == sa[j]) or (qb[i] == qb[j] and sb[i] == sb[j])
            lo = min(sa[j] - qa[j], sb[j] - qb[j]) - _DIAG_NEAR
            hi = max(sa[j] - qa[j], sb[j] - qb[j]) + _DIAG_NEAR
            inside = qa[j] <= qa[i] and qb[i] <= qb[j] and sa[j] <= sa[i] and sb[i] <= sb[j] and \
                lo <= sa[i] - qa[i] <= hi and lo <= sb[i] - qb[i] <= hi
            if same_end or inside:
                keep[i] = False
                break
    return keep


def reference_order(query, subject, evalue, score, q_start, s_start, max_targets, max_hsps) -> np.ndarray:
    """Per query: subjects by best e-value, best score, number; a subject's HSPs by e-value, score, subject
    then query start; the first ``max_targets`` subjects and ``max_hsps`` HSPs of each (0: all)."""
    n = query.size
    if n == 0:
        return np.zeros(0, np.int64)
    pair = query.astype(np.int64) * (int(subject.max()) + 1) + subject
    order = np.lexsort((q_start, s_start, -score, evalue, pair))
    p_sorted = pair[order]
    first = np.ones(n, bool)
    first[1:] = p_sorted[1:] != p_sorted[:-1]
    group = np.cumsum(first) - 1
    head = order[first]
    best_e = evalue[head][group]
    best_s = score[head][group]
    rank_in_pair = np.arange(n) - np.flatnonzero(first)[group]
    final = np.lexsort((rank_in_pair, subject[order], -best_s, best_e, query[order]))
    out = order[final]
    q_o, p_o = query[out], pair[out]
    newq = np.ones(n, bool)
    newq[1:] = q_o[1:] != q_o[:-1]
    newp = np.ones(n, bool)
    newp[1:] = p_o[1:] != p_o[:-1]
    qid = np.cumsum(newq) - 1
    subj_rank = np.cumsum(newp) - 1 - (np.cumsum(newp) - 1)[np.flatnonzero(newq)][qid]
    ok = subj_rank < max_targets
    if max_hsps:
        ok &= rank_in_pair[final] < max_hsps
    return out[ok]


def random_hsps(rng, n: int, keys: int, spread: int, big: bool = False) -> dict[str, np.ndarray]:
    """``n`` HSPs over ``keys`` keys: lengths, starts and scores from few values (ties, shared starts and ends),
    a third placed inside another HSP of their key with diagonals at or one past ``_DIAG_NEAR`` from its, some
    sharing the start or the end of another."""
    seq = rng.integers(0, max(1, keys // 3), n)
    contig = rng.integers(0, 3, n).astype(np.int32)
    qa = rng.integers(0, spread, n) * 7
    sa = qa + rng.integers(-2, 3, n) * 40 + (rng.random(n) < 0.5) * (1 << 60 if big else 0)  # big: no packing
    qlen = rng.integers(1, 12, n) * 25
    qb = qa + qlen
    sb = sa + qlen + rng.integers(-60, 61, n) * (rng.random(n) < 0.3)
    score = rng.integers(20, 26, n)
    inner = np.flatnonzero(rng.random(n) < 0.35)
    for i in inner:  # inside an earlier HSP, shifted to its diagonal range's edge (and at times one past it)
        j = int(rng.integers(0, n))
        seq[i], contig[i] = seq[j], contig[j]
        length = int(rng.integers(1, max(2, qb[j] - qa[j])))
        qa[i] = qa[j] + int(rng.integers(0, max(1, qb[j] - qa[j] - length + 1)))
        qb[i] = qa[i] + length
        lo = min(sa[j] - qa[j], sb[j] - qb[j]) - _DIAG_NEAR
        hi = max(sa[j] - qa[j], sb[j] - qb[j]) + _DIAG_NEAR
        d = int(rng.choice([lo, hi, lo - 1, hi + 1, lo + 1, hi - 1]))
        sa[i] = qa[i] + d
        sb[i] = qb[i] + d + int(rng.integers(-1, 2))
        score[i] = score[j] - int(rng.integers(0, 2))
    for i in np.flatnonzero(rng.random(n) < 0.15):  # the start or the end of another HSP, longer or shorter
        j = int(rng.integers(0, n))
        seq[i], contig[i] = seq[j], contig[j]
        length = int(rng.integers(1, 400))
        if rng.random() < 0.5:
            qa[i], sa[i] = qa[j], sa[j]
            qb[i], sb[i] = qa[i] + length, sa[i] + length + int(rng.integers(-3, 4))
        else:
            qb[i], sb[i] = qb[j], sb[j]
            qa[i], sa[i] = qb[i] - length, sb[i] - length + int(rng.integers(-3, 4))
        score[i] = score[j] + int(rng.integers(-1, 2))
    return {"seq": seq, "contig": contig, "q_start": qa, "q_end": qb, "s_start": sa, "s_end": sb,
            "score": score}


@pytest.mark.parametrize("seed", range(12))
def test_purge_is_the_reference(seed):
    rng = np.random.default_rng(seed)
    # small keys (every better HSP compared), large ones (the window), one key of all, 64-bit columns
    for n, keys, spread, big in ((400, 300, 40, False), (600, 3, 30, False), (700, 1, 60, False),
                                 (300, 20, 8, True)):
        h = random_hsps(rng, n, keys, spread, big)
        got, want = _purge(h), reference_purge(h)
        assert got.dtype == bool and np.array_equal(got, want), (n, keys, int(np.sum(got != want)))
        assert 0 < want.sum() < n


def test_purge_large_key_and_empty():
    rng = np.random.default_rng(99)
    h = random_hsps(rng, 5 * _SMALL_KEY, 1, 10)
    h["seq"][:] = 0
    h["contig"][:] = 0
    assert np.array_equal(_purge(h), reference_purge(h))
    empty = {k: v[:0] for k, v in h.items()}
    assert _purge(empty).size == 0


def random_rows(rng, n: int, queries: int, subjects: int, monotone: bool = True):
    """Rows of the report; e-values falling with the score in a query (as the search's: tied, 0 and -0 among
    them) or, ``monotone`` False, at random (the sorts' other way)."""
    query = rng.integers(0, queries, n)
    subject = rng.integers(0, subjects, n).astype(np.int32)
    score = rng.integers(30, 36, n)
    if monotone:
        evalue = np.where(score > 34, 0.0, 10.0 ** -(score // 2)) * (1 + query % 3)
    else:
        evalue = np.where(rng.random(n) < 0.3, 0.0, 10.0 ** -(score // 2 + rng.integers(0, 2, n)))
    evalue[(evalue == 0) & (rng.random(n) < 0.3)] = -0.0
    q_start = rng.integers(0, 6, n)
    s_start = rng.integers(0, 6, n) * 1000
    return query, subject, evalue, score, q_start, s_start


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("limits", [(500, 0), (2, 0), (1, 1), (3, 2), (0, 0)])
@pytest.mark.parametrize("monotone", [True, False])
def test_report_order_is_the_reference(seed, limits, monotone):
    rng = np.random.default_rng(seed)
    for n, queries, subjects in ((500, 7, 9), (300, 1, 1), (400, 40, 3), (1, 1, 1)):
        rows = random_rows(rng, n, queries, subjects, monotone)
        assert np.array_equal(_report_order(*rows, *limits), reference_order(*rows, *limits)), (n, limits)


def test_report_order_unpackable_nan_and_empty():
    rng = np.random.default_rng(5)
    query, subject, evalue, score, q_start, s_start = random_rows(rng, 300, 5, 5)
    s_start = s_start + (1 << 62) * (rng.random(300) < 0.5)  # the starts do not pack with the scores
    rows = (query, subject, evalue, score, q_start, s_start)
    assert np.array_equal(_report_order(*rows, 4, 2), reference_order(*rows, 4, 2))
    evalue = evalue.copy()
    evalue[::7] = np.nan
    rows = (query, subject, evalue, score, q_start, s_start)
    assert np.array_equal(_report_order(*rows, 4, 0), reference_order(*rows, 4, 0))
    empty = tuple(c[:0] for c in rows)
    assert _report_order(*empty, 5, 0).size == 0
    with pytest.raises(ValueError, match="subject"):
        _report_order(query, subject - 1, evalue, score, q_start, s_start, 5, 0)


@pytest.mark.parametrize("seed", range(6))
def test_lexsort_is_numpys(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(100, 3000))
    cols = [rng.integers(-3, 3, n), rng.integers(0, 1 << int(rng.integers(1, 40)), n),
            rng.integers(-5, 5, n).astype(np.int32), rng.integers(0, 1 << int(rng.integers(1, 62)), n)]
    for k in range(1, 5):
        assert np.array_equal(_lexsort(cols[:k]), np.lexsort(cols[:k][::-1])), k
    # one column packs with the row numbers, the next does not: runs of hundreds of ties ordered by it
    for shift in (0, 40):  # (40: both pack)
        cols = [rng.integers(0, 4, n), rng.integers(0, 1 << 55, n) >> shift]
        assert np.array_equal(_lexsort(cols), np.lexsort(cols[::-1])), shift


def test_purge_same_for_any_thread_count():
    import numba

    h = random_hsps(np.random.default_rng(7), 3000, 40, 30)
    want = reference_purge(h)
    threads = numba.get_num_threads()
    try:
        for t in sorted({1, threads}):
            numba.set_num_threads(t)
            assert np.array_equal(_purge(h), want), t
    finally:
        numba.set_num_threads(threads)


def test_report_order_limits_beyond_64_bits():
    """``max_target_seqs`` / ``max_hsps`` larger than any 64-bit integer (``--max-target-seqs 1e20`` is accepted:
    no upper bound) keep every subject and HSP, as NumPy's comparisons did; a negative limit keeps none."""
    rng = np.random.default_rng(9)
    rows = random_rows(rng, 400, 6, 8)
    huge = 10 ** 20
    every = reference_order(*rows, 500, 0)
    assert every.size == 400
    for limits in ((huge, 0), (huge, huge), (2, huge), (huge, 1), (1 << 63, 1 << 63), (-huge, 0), (huge, -huge)):
        assert np.array_equal(_report_order(*rows, *limits), reference_order(*rows, *limits)), limits

"""BLAST+'s purge of an HSP list and its report order (per query: subjects by best e-value, then HSPs).
"""

from __future__ import annotations

import numpy as np

from gseek.kernels._jit import njit

from .rounds import _DIAG_NEAR


@njit(cache=True, nogil=True)
def _purge_pass(key, qa, qb, sa, sb, order, near):
    """BLAST+'s purge, in ``order`` (best first): drop an HSP that shares its start or its end
    with a better one, or lies inside a better one on both sequences and near its diagonals."""
    n = key.size
    keep = np.ones(n, np.bool_)
    for x in range(n):
        i = order[x]
        for y in range(x - 1, -1, -1):  # the better HSPs of the same key come just before (sorted by key)
            j = order[y]
            if key[j] != key[i]:
                break
            if not keep[j]:
                continue
            if (qa[i] == qa[j] and sa[i] == sa[j]) or (qb[i] == qb[j] and sb[i] == sb[j]):
                keep[i] = False
                break
            lo = min(sa[j] - qa[j], sb[j] - qb[j]) - near
            hi = max(sa[j] - qa[j], sb[j] - qb[j]) + near
            if qa[j] <= qa[i] and qb[i] <= qb[j] and sa[j] <= sa[i] and sb[i] <= sb[j] and \
                    lo <= sa[i] - qa[i] <= hi and lo <= sb[i] - qb[i] <= hi:
                keep[i] = False
                break
    return keep


def _purge(h: dict[str, np.ndarray]) -> np.ndarray:
    n = h["score"].size
    if n == 0:
        return np.zeros(0, bool)
    key = h["seq"].astype(np.int64) * (int(h["contig"].max()) + 1) + h["contig"]
    order = np.lexsort((h["s_start"], h["q_start"], -h["score"], key))
    # The pass compares only within a key; sorting by key first keeps it near-linear per key.
    return _purge_pass(key, h["q_start"], h["q_end"], h["s_start"], h["s_end"], order, _DIAG_NEAR)


def _report_order(query, subject, evalue, score, q_start, s_start, max_targets, max_hsps) -> np.ndarray:
    """Per query (input order): subjects by best e-value (then best score, then number), HSPs of a
    subject by e-value, score, subject then query start (BLAST+'s tie order); the first ``max_targets`` subjects and
    ``max_hsps`` HSPs each (0: all)."""
    n = query.size
    if n == 0:
        return np.zeros(0, np.int64)
    pair = query.astype(np.int64) * (int(subject.max()) + 1) + subject
    order = np.lexsort((q_start, s_start, -score, evalue, pair))
    best_e = np.full(n, np.inf)
    best_s = np.zeros(n, np.int64)
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
    hsp_rank = rank_in_pair[final]
    ok = subj_rank < max_targets
    if max_hsps:
        ok &= hsp_rank < max_hsps
    return out[ok]

"""BLAST+'s purge of an HSP list and its report order (per query: subjects by best e-value, then HSPs).

Both are sorts and passes over the sorted rows, exactly as ``np.lexsort`` and a pass over every better HSP of a
key would give them (the readable references: ``tests/test_blast_purge.py``), made fast for the ~180k HSPs of a
1 Gbp search: the sort keys packed into one 64-bit word with the row number (a plain argsort of unique words is
then the stable order; rows tied on the packed columns are ordered by the rest afterwards), the purge's keys in
parallel, a large key through a window of its HSPs sorted by subject start.
"""

from __future__ import annotations

import numba
import numpy as np

from gseek.backend import numba_guard
from gseek.kernels._jit import njit
from gseek.ragged import even_cuts

from .rounds import _DIAG_NEAR

#: A key of at most this many HSPs compares each with every better one; a larger one only with those whose
#: subject start lies in the window an HSP that purges it must start in.
_SMALL_KEY = 48


def _lexsort(columns: list[np.ndarray]) -> np.ndarray:
    """``np.lexsort(columns[::-1])``, exactly (stable): integer ``columns``, the most significant first.

    The leading columns are packed into one 64-bit word with the row number, as many as fit with their ranges,
    and argsorted (the words are unique, so any sort gives the stable order); the rows tied on them are then
    ordered by the other columns, packed into one word, run by run. Where those do not fit, ``np.lexsort``."""
    n = columns[0].size
    if any(not (c.dtype.kind == "i" or c.dtype.kind == "u" and c.dtype.itemsize < 8) for c in columns):
        return np.lexsort(columns[::-1])
    idx_bits = max(1, (n - 1).bit_length())
    spans = []
    for c in columns:
        lo = int(c.min())
        spans.append((lo, (int(c.max()) - lo).bit_length()))
    lead, bits = 0, idx_bits
    while lead < len(columns) and bits + spans[lead][1] <= 63:
        bits += spans[lead][1]
        lead += 1
    if lead == 0 or sum(b for _, b in spans[lead:]) > 63:
        return np.lexsort(columns[::-1])
    primary = _pack(columns[:lead], spans[:lead])
    order = np.argsort((primary << idx_bits) | np.arange(n, dtype=np.int64))
    if lead < len(columns):
        _order_ties(order, primary[order], _pack(columns[lead:], spans[lead:]))
    return order


def _pack(columns, spans) -> np.ndarray:
    word = np.zeros(columns[0].size, np.int64)
    for c, (lo, b) in zip(columns, spans):
        word <<= b
        word |= c.astype(np.int64, copy=False) - lo
    return word


@njit(cache=True, nogil=True)
def _order_ties(order, lead, rest):
    """Rows of equal ``lead`` (adjacent in ``order``, by row number) ordered by ``rest``, stably, in place."""
    n = order.size
    a = 0
    while a < n:
        b = a + 1
        while b < n and lead[b] == lead[a]:
            b += 1
        if b - a <= 16:
            for x in range(a + 1, b):  # insertion sort: stable
                r = order[x]
                y = x - 1
                while y >= a and rest[order[y]] > rest[r]:
                    order[y + 1] = order[y]
                    y -= 1
                order[y + 1] = r
        else:
            sub = order[a:b].copy()
            order[a:b] = sub[np.argsort(rest[sub], kind="mergesort")]
        a = b


@njit(cache=True, nogil=True)
def _purges(qa_j, qb_j, sa_j, sb_j, qa_i, qb_i, sa_i, sb_i, near):
    """True when HSP ``j`` (better) purges ``i``: the same start or end, or ``i`` inside ``j`` on both sequences
    and near its diagonals. (Scalars: a call passing the arrays costs far more than the test.)"""
    if (qa_i == qa_j and sa_i == sa_j) or (qb_i == qb_j and sb_i == sb_j):
        return True
    lo = min(sa_j - qa_j, sb_j - qb_j) - near
    hi = max(sa_j - qa_j, sb_j - qb_j) + near
    return qa_j <= qa_i and qb_i <= qb_j and sa_j <= sa_i and sb_i <= sb_j and \
        lo <= sa_i - qa_i <= hi and lo <= sb_i - qb_i <= hi


@njit(cache=True, nogil=True)
def _purge_window(a, b, qa, qb, sa, sb, near, keep):
    """:func:`_purge_keys` of one large key, rows ``a:b``: each row compared only with the better rows whose
    subject start lies where one that purges it starts."""
    # j purges i only where it starts on the subject at sa[i] (same start), or ends at sb[i] or after it (the
    # same end, or i inside j): sa[j] = sb[j] - len[j] then lies in [min(sa[i], sb[i] - longest),
    # max(sa[i], sb[i] - shortest)], len = sb - sa over the key
    by_start = a + np.argsort(sa[a:b], kind="mergesort")
    starts = sa[by_start]
    longest = np.max(sb[a:b] - sa[a:b])
    shortest = np.min(sb[a:b] - sa[a:b])
    for i in range(a + 1, b):
        x = np.searchsorted(starts, min(sa[i], sb[i] - longest), side="left")
        end = np.searchsorted(starts, max(sa[i], sb[i] - shortest), side="right")
        while x < end:
            j = by_start[x]
            if j < i and keep[j] and _purges(qa[j], qb[j], sa[j], sb[j], qa[i], qb[i], sa[i], sb[i], near):
                keep[i] = False
                break
            x += 1


@njit(parallel=True, cache=True, nogil=True)
def _purge_keys(bounds, chunks, qa, qb, sa, sb, near):
    """BLAST+'s purge of every key (rows ``bounds[k]:bounds[k + 1]``, sorted best first; keys in ``chunks`` of
    about equal work in parallel): a row is dropped when a better kept row of its key purges it
    (:func:`_purges`). The keep mask of the sorted rows."""
    keep = np.ones(qa.size, np.bool_)
    for c in numba.prange(chunks.size - 1):
        for k in range(chunks[c], chunks[c + 1]):
            a, b = bounds[k], bounds[k + 1]
            if b - a > _SMALL_KEY:
                _purge_window(a, b, qa, qb, sa, sb, near, keep)
                continue
            for i in range(a + 1, b):
                qa_i, qb_i, sa_i, sb_i = qa[i], qb[i], sa[i], sb[i]
                for j in range(i - 1, a - 1, -1):
                    if keep[j] and _purges(qa[j], qb[j], sa[j], sb[j], qa_i, qb_i, sa_i, sb_i, near):
                        keep[i] = False
                        break
    return keep


def _purge(h: dict[str, np.ndarray]) -> np.ndarray:
    """BLAST+'s purge of the HSPs ``h``: the keep mask. Per key (query strand, contig), HSPs by score (best
    first), then query and subject start (then row): an HSP is dropped when a better kept one shares its start or
    its end, or holds it on both sequences near its diagonals (``_DIAG_NEAR``)."""
    n = h["score"].size
    if n == 0:
        return np.zeros(0, bool)
    key = h["seq"].astype(np.int64) * (int(h["contig"].max()) + 1) + h["contig"]
    order = _lexsort([key, -h["score"], h["q_start"], h["s_start"]])
    key = key[order]
    bounds = np.flatnonzero(np.r_[True, key[1:] != key[:-1], True])
    size = np.diff(bounds)
    work = np.cumsum(size * np.minimum(size, _SMALL_KEY))
    pieces = 4 * numba.get_num_threads()
    chunks = even_cuts(work, work[-1], pieces, "right")
    chunks = np.r_[0, chunks[(chunks > 0) & (chunks < size.size)], size.size]
    with numba_guard():  # a parallel pass: under Numba's workqueue layer, one thread at a time
        kept = _purge_keys(bounds, chunks, h["q_start"][order], h["q_end"][order], h["s_start"][order],
                           h["s_end"][order], _DIAG_NEAR)
    keep = np.empty(n, bool)
    keep[order] = kept
    return keep


def _report_order(query, subject, evalue, score, q_start, s_start, max_targets, max_hsps) -> np.ndarray:
    """Per query (input order): subjects by best e-value (then best score, then number), HSPs of a
    subject by e-value, score, subject then query start (BLAST+'s tie order); the first ``max_targets`` subjects and
    ``max_hsps`` HSPs each (0: all). The rows' indices in that order; ``subject`` numbers are >= 0."""
    n = query.size
    if n == 0:
        return np.zeros(0, np.int64)
    if int(subject.min()) < 0:
        raise ValueError("_report_order: subject numbers must be >= 0")
    query = query.astype(np.int64, copy=False)
    pair = query * (int(subject.max()) + 1) + subject
    # A query's e-values fall as its scores rise: sorted without them, then checked (in order where they do not
    # fall, or are NaN: sorted with them, as np.lexsort). The same for the subjects' best HSPs.
    order = _lexsort([pair, -score, s_start, q_start])
    new_pair = np.r_[True, pair[order[1:]] != pair[order[:-1]]]
    if not _ordered(evalue[order], new_pair):
        order = np.lexsort((q_start, s_start, -score, evalue, pair))
        new_pair = np.r_[True, pair[order[1:]] != pair[order[:-1]]]
    starts = np.flatnonzero(new_pair)
    head = order[starts]
    head_query = query[head]
    # one (query, subject) a pair: the pairs' keys are unique, any sort of them is the stable one
    by_best = _lexsort([head_query, -score[head], subject[head]])
    if not _ordered(evalue[head[by_best]], np.r_[True, head_query[by_best[1:]] != head_query[by_best[:-1]]]):
        by_best = np.lexsort((subject[head], -score[head], evalue[head], head_query))
    # the limits within [-1, n] (the same rows: no rank reaches n), as any Python int may come (no upper bound)
    limits = [max(-1, min(int(x), n)) for x in (max_targets, max_hsps)]
    return _limited(order, np.r_[starts, n], by_best, head_query, *limits)


def _ordered(values: np.ndarray, new_group: np.ndarray) -> bool:
    """True when ``values`` do not fall inside a group (``new_group``: True where one starts; a NaN in a group of
    two or more fails)."""
    return bool(np.all((values[1:] >= values[:-1]) | new_group[1:]))


@njit(cache=True, nogil=True)
def _limited(order, starts, by_best, pair_query, max_targets, max_hsps):
    """The rows of the pairs (``order[starts[p]:starts[p + 1]]``) in ``by_best`` order: a query's first
    ``max_targets`` pairs, each its first ``max_hsps`` rows (0: all)."""
    out = np.empty(order.size, np.int64)
    m = 0
    rank = 0
    for x in range(by_best.size):
        p = by_best[x]
        if x > 0 and pair_query[p] == pair_query[by_best[x - 1]]:
            rank += 1
        else:
            rank = 0
        if rank >= max_targets:
            continue
        a, b = starts[p], starts[p + 1]
        if max_hsps != 0:
            b = a + max(0, min(b - a, max_hsps))
        for y in range(a, b):
            out[m] = order[y]
            m += 1
    return out[:m]

"""The blastn task's score-only rounds with their seeds and results on the device (issue 40).

The first rounds of a GPU searcher's blastn task hold hundreds of thousands of seeds (100 x 10 kb
queries on a random 75 Mbp database: ~680k in the first), and every pass of the host loop
(:meth:`gseek.blast.gapped.GappedPasses._gapped`) over them — the launches' set-up and windows, the
merge of the launches, the round's found HSPs and the test of the next round's seeds against them —
was a pass of NumPy between a download and an upload. :func:`score_only_rounds` runs the rounds of a
search whose first round holds :data:`~gseek.blast.device_rounds.DEVICE_MIN` seeds or more (the
later, smaller ones too: their seeds are there already) with the candidates' columns on the device (the
seed stage's, :class:`~gseek.blast.seeds.Candidates`; else uploaded once):
the round's choice (:func:`~gseek.blast.device_rounds.isolated` there, the host's greedy pass over
the others only), the windows, the score-only launches (longest expected extent first, in launches
that keep to the memory budget), the extensions cut by their window done again with the query's
reach, and the next round's seeds (:func:`_outside_on`: each seed tested against the found HSPs of
its key whose subject start can hold it, the pairs expanded on the device) stay there. Only the HSPs
whose e-value is near the cutoff come back (the device's e-values, then the host's). The rounds,
the seeds they take, every result and the searcher's counts are the host loop's
(``tests/test_blast_device_gapped.py`` runs both on NumPy and on a GPU); a round the host loop would
extend seeds ahead of (fewer taken than ``_AHEAD``, some left) and every later one stay on the host.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gseek.backend import Backend
from gseek.dp.scoring import Scoring
from gseek.kernels import blast as kblast

from .device_rounds import isolated
from .rounds import _DIAG_NEAR, select_round_parts
from .seeds import _text

#: Seed and HSP pairs :func:`_outside_on` tests at once (a few int64 arrays each: ~0.3 GB).
_PAIRS = 1 << 22
#: The e-values of the rounds' HSPs are computed on the device and those within this share above the cutoff
#: come back; the host's e-values decide (the device's exponential may differ in its last bits).
_EVALUE_SLACK = 1e-6
#: The subject start and key of a found HSP combine into one 64-bit sort key: key << this, plus the start.
_KEY_SHIFT = 40


class _Columns:
    """The candidates' columns on ``backend`` (int64): key, seed points, diagonal, ``apart``, query
    sequence and contig, the ungapped HSP's query extent; and the query and contig offsets. The
    seed stage's device columns where ``cand`` has them (``cand.device``), else ``cand`` uploaded."""

    def __init__(self, backend: Backend, ref: Any, cand: dict[str, np.ndarray], seq_off: np.ndarray,
                 apart_factor: int) -> None:
        xp = backend.xp

        on = getattr(cand, "device", None)  # the seed stage's own (a GPU's :class:`~gseek.blast.seeds.Candidates`)

        def up(name: str) -> Any:
            column = on[name] if on is not None else backend.asarray(np.ascontiguousarray(cand[name]))
            return column.astype(np.int64, copy=False)

        q, s, length = up("q"), up("s"), up("length")
        self.seq, self.contig, self.q_start, self.q_end = up("seq"), up("contig"), up("q_start"), up("q_end")
        self.seq_off = backend.asarray(np.asarray(seq_off, np.int64))
        self.n_q = int(seq_off[-1])  # the query codes' length (the windows follow them)
        self.contig_off = ref.on(backend).contig_offsets.astype(np.int64, copy=False)
        self.diag = s - q
        self.mid_q = q + length // 2  # the middle of the seed's run of matches (gapped.py's ``mid_q``)
        self.mid_s = self.mid_q + self.diag
        self.key = self.seq * len(ref.contig_names) + self.contig
        seq_len = xp.diff(self.seq_off)
        self.apart = apart_factor * seq_len[self.seq] + 64


def score_only_rounds(passes: Any, scoring: Scoring, xdrop: int, scale: int, qs: Any, seq_off: np.ndarray,
                      seq_query: np.ndarray, cand: dict[str, np.ndarray], todo: np.ndarray, ahead: int, G: Any) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray],
                                                                    list[np.ndarray]]:
    """The score-only rounds of ``todo`` (candidates in rank order) on ``passes``' backend, until a
    round takes fewer than ``ahead`` seeds and leaves some (the host loop extends seeds ahead of it):
    the candidates left to the host loop and, as its lists ``chosen``, ``scores`` and ``spans`` hold
    them, the rounds' HSPs whose e-value may reach the cutoff (the loop drops the others after it).
    The candidates' columns: the seed stage's on the device (``cand.device``) or ``cand`` uploaded. ``G``: ``gapped``'s ``_APART``, ``_PRELIM_MARGIN``, ``_EXTEND_CHUNK`` and ``_extend_budget`` (as its
    loop reads them)."""
    backend = passes.backend
    xp = backend.xp
    if not todo.size or passes.ref.n_bases >= 1 << _KEY_SHIFT:
        return todo, [], [], []
    with backend.active():
        cols = _Columns(backend, passes.ref, cand, seq_off, G._APART)
        low, high = backend.to_host(backend.xp.stack([cols.key.min(), cols.key.max()])).tolist()
        if high >= 1 << 23 or low < 0:
            return todo, [], [], []
        todo_d = backend.asarray(todo)
        sels, results = [], []
        while todo_d.size:  # (the later, smaller rounds too: their seeds are here already)
            take = _select_on(backend, cols, todo_d)
            if take is None:
                break
            sel, rest = todo_d[take], todo_d[~take]
            if sel.size < ahead and rest.size:  # the host loop's round: it extends seeds ahead of it
                break
            passes._count("rounds", 1)
            if sel.size < ahead:  # (none left: the host loop looks for seeds ahead of it, finds none, counts 0)
                passes._count("extended ahead of their round", 0)
            res = _prelim_on(passes, G, cols, scoring, xdrop, qs, sel)
            passes._count("rounds launched", 1)
            passes._count("extended, score only", sel.size)
            sels.append(sel)
            results.append(res)
            todo_d = _outside_on(xp, cols, rest, res, cols.key[sel])
        todo = backend.to_host(todo_d)
        if not sels:
            return todo, [], [], []
        sel, res = xp.concatenate(sels), xp.concatenate(results, axis=1)
        opts = passes.options
        seq_space = passes._search_spaces(passes._qlen)[seq_query]  # each query sequence's search space
        # the HSPs whose e-value, as the device computes it, is within _EVALUE_SLACK of the cutoff: those that
        # reach it and a few more (the host loop's e-values decide after the loop, of every round's HSPs)
        near = xp.flatnonzero(_evalues(xp, opts.karlin, res[0] // scale, backend.asarray(seq_space)[cols.seq[sel]])
                              <= opts.evalue * (1 + _EVALUE_SLACK))
        sel, score, spans = (backend.to_host(a) for a in (sel[near], res[0][near], res[1:, near]))
        return todo, [sel], [score], [spans]


def _evalues(xp: Any, params: Any, raw: Any, space: Any) -> Any:
    """:func:`gseek.blast.stats.evalues` on ``xp``'s arrays (its exponential may differ in the last bits)."""
    s = (raw - (raw & 1) if params.even_scores else raw).astype(np.float64)
    return space * xp.exp(params.log_K - params.lambda_ * s)


def _select_on(backend: Backend, cols: _Columns, todo: Any) -> Any:
    """``_select_round`` of the candidates ``todo`` (on the device), as a mask there: the isolated
    ones taken, the host's greedy pass over the others (their columns downloaded); None where the
    cells do not fit."""
    xp = backend.xp
    alone = isolated(xp, cols.key[todo], cols.mid_s[todo], cols.diag[todo], cols.apart[todo])
    if alone is None:
        return None
    rest = xp.flatnonzero(~alone)
    if rest.size:
        idx = todo[rest]
        others = backend.to_host(xp.stack([cols.key[idx], cols.mid_s[idx], cols.diag[idx], cols.apart[idx]]))
        alone[rest] = backend.asarray(select_round_parts(*others))
    return alone


def _reach(xp: Any, qa: Any, qb: Any, mq: Any, ms: Any) -> tuple[Any, Any]:
    """:func:`gseek.blast.rounds._reach` on ``xp``'s arrays."""
    slack = xp.maximum(64, (qb - qa) // 4)
    return ms - (mq - qa) - slack, ms + (qb - mq) + slack


def _prelim_on(passes: Any, G: Any, cols: _Columns, scoring: Scoring, xdrop: int, qs: Any, sel: Any) -> Any:
    """``GappedPasses._prelim`` of the candidates ``sel`` on the device: rows score, q_start, q_end,
    s_start, s_end (int64)."""
    xp = passes.backend.xp
    diag, mq, ms, seq = cols.diag[sel], cols.mid_q[sel], cols.mid_s[sel], cols.seq[sel]
    qa, qb = cols.q_start[sel], cols.q_end[sel]
    reach_lo, reach_hi = _reach(xp, cols.seq_off[seq], cols.seq_off[seq + 1], mq, ms)
    long_ = (qb - qa) >= G._PRELIM_MARGIN  # the query's whole reach at once, as the host's
    span = (xp.where(long_, reach_lo, qa + diag), xp.where(long_, reach_hi, qb + diag))
    return _extend_on(passes, G, cols, scoring, xdrop, qs.codes, (seq, cols.contig[sel], mq, ms), span,
                      G._PRELIM_MARGIN)


def _extend_on(passes: Any, G: Any, cols: _Columns, scoring: Scoring, xdrop: int, codes: Any,
               seeds: tuple[Any, ...], span: tuple[Any, Any] | None, margin: int) -> Any:
    """``GappedPasses._extend_on``, score only, on the device: the launches (longest expected extent
    first, each within ``_EXTEND_CHUNK`` seeds and the memory budget) and their results in seed order."""
    backend = passes.backend
    xp = backend.xp
    n = int(seeds[0].size)
    qlen = cols.seq_off[seeds[0] + 1] - cols.seq_off[seeds[0]]
    expect = (span[1] - span[0]) if span is not None else qlen
    slack = 2 * margin if span is not None else 2 * xp.maximum(64, qlen // 4)
    need = 9 * (expect + slack)
    budget = G._extend_budget(backend, passes.device_searchers)
    if n <= G._EXTEND_CHUNK and int(need.sum()) <= budget:
        passes._count("launches, score only", 1)
        return _chunk(passes, cols, scoring, xdrop, codes, seeds, span, margin, G)
    order = xp.argsort(-expect, kind="stable")
    total = xp.cumsum(need[order])
    out = xp.empty((5, n), dtype=np.int64)
    a = 0
    while a < n:  # gapped._launches
        base = int(total[a - 1]) if a else 0
        b = min(a + G._EXTEND_CHUNK, int(xp.searchsorted(total, xp.asarray([base + budget]), side="right")[0]))
        i = order[a:max(b, a + 1)]
        a = max(b, a + 1)
        passes._count("launches, score only", 1)
        out[:, i] = _chunk(passes, cols, scoring, xdrop, codes, tuple(v[i] for v in seeds),
                           None if span is None else (span[0][i], span[1][i]), margin, G)
    return out


def _chunk(passes: Any, cols: _Columns, scoring: Scoring, xdrop: int, codes: Any, seeds: tuple[Any, ...],
           span: tuple[Any, Any] | None, margin: int, G: Any) -> Any:
    """``GappedPasses._extend_chunk``, score only, on the device: the subject windows, one launch and
    the extensions their window cut short done again with the query's reach."""
    from gseek.dp.xdrop import xdrop_gapped_scores  # (here: a megablast search imports no X-drop kernels)

    backend = passes.backend
    xp = backend.xp
    seq, contig, mq, ms = seeds
    qa, qb = cols.seq_off[seq], cols.seq_off[seq + 1]
    ca, cb = cols.contig_off[contig], cols.contig_off[contig + 1]
    if span is None:
        t_lo, t_hi = _reach(xp, qa, qb, mq, ms)
        t_lo, t_hi = xp.maximum(ca, t_lo), xp.minimum(cb, t_hi)
    else:
        t_lo = xp.maximum(ca, xp.minimum(span[0], ms) - margin)
        t_hi = xp.minimum(cb, xp.maximum(span[1], ms + 1) + margin)
    windows, w_off = _unpack_on(backend, passes.ref, t_lo, t_hi - t_lo)
    i32 = np.int32
    r = xdrop_gapped_scores(backend, xp.concatenate([codes, windows]), qa, (qb - qa).astype(i32), cols.n_q + w_off[:-1],
                            (t_hi - t_lo).astype(i32), (mq - qa).astype(i32), (ms - t_lo).astype(i32), scoring, xdrop)
    out = xp.stack([r[0].astype(np.int64), qa + r[1], qa + r[2], t_lo + r[3], t_lo + r[4]])
    cut = ((t_lo > ca) & (r[5] & 1 != 0)) | ((t_hi < cb) & (r[5] & 2 != 0))
    redo = xp.flatnonzero(cut)
    if span is None:
        passes._count("cut at the query's reach", redo.size)
        return out
    passes._count("done again with the query's reach, score only", redo.size)
    if redo.size:
        out[:, redo] = _extend_on(passes, G, cols, scoring, xdrop, codes, tuple(v[redo] for v in seeds), None, margin)
    return out


def _unpack_on(backend: Backend, ref: Any, start: Any, length: Any) -> tuple[Any, Any]:
    """:func:`gseek.blast.seeds.unpack_ranges` of ranges given on the device, the offsets left there."""
    xp = backend.xp
    off = xp.zeros(int(length.size) + 1, dtype=np.int64)
    xp.cumsum(length, out=off[1:])
    total = int(off[-1])
    out = xp.empty(max(total, 1), dtype=np.uint8)
    text, nmask, has_n, _ = _text(backend, ref)
    if length.size:
        backend.launch(kblast, "unpack_ranges", total, text, nmask, has_n, start.astype(np.int64, copy=False), off,
                       np.int64(length.size), out)
    return out, off


def _outside_on(xp: Any, cols: _Columns, rest: Any, res: Any, key: Any) -> Any:
    """``rounds._outside`` of the candidates ``rest`` against one round's HSPs (``res``: rows score,
    q_start, q_end, s_start, s_end; ``key`` theirs), on the device: the HSPs sorted by key and subject
    start, each seed paired with the HSPs of its key that start within the longest subject extent
    before it (``rounds._inside_one``'s walk), the pairs tested at most :data:`_PAIRS` at a time."""
    if not rest.size or not key.size:
        return rest
    order = xp.argsort(key * (1 << _KEY_SHIFT) + res[3], kind="stable")
    qa, qb, sa, sb = (res[j][order] for j in range(1, 5))
    ck = key[order] * (1 << _KEY_SHIFT) + sa
    d0, d1 = sa - qa, sb - qb
    lo, hi = xp.minimum(d0, d1) - _DIAG_NEAR, xp.maximum(d0, d1) + _DIAG_NEAR
    span = int((sb - sa).max())
    k, q, s = cols.key[rest] * (1 << _KEY_SHIFT), cols.mid_q[rest], cols.mid_s[rest]
    first = xp.searchsorted(ck, k + xp.maximum(s - span, 0), side="left")  # HSP starts are >= 0
    count = xp.searchsorted(ck, k + s, side="right") - first
    ends = xp.cumsum(count)
    inside = xp.zeros(int(rest.size), dtype=bool)
    a, n = 0, int(rest.size)
    while a < n:  # seeds a..b-1: at most _PAIRS pairs (one seed with more, alone)
        base = int(ends[a - 1]) if a else 0
        b = max(a + 1, int(xp.searchsorted(ends, xp.asarray([base + _PAIRS]), side="right")[0]))
        m = int(ends[b - 1]) - base
        if m:
            j = xp.arange(base, base + m, dtype=np.int64)
            p = a + xp.searchsorted(ends[a:b], j, side="right")  # the seed of pair j
            r = first[p] + (j - (ends[p] - count[p]))  # its HSP
            d = s[p] - q[p]
            hit = (qa[r] <= q[p]) & (q[p] < qb[r]) & (s[p] < sb[r]) & (lo[r] <= d) & (d <= hi[r])
            inside[p[hit]] = True
        a = b
    return rest[~inside]

"""Gapped extension of the BLAST-style search: score-only rounds, trace-back starts and the trace-back.

BLAST+'s two gapped passes (``docs/blast.md``): score-only X-drop extension of the candidates in
rounds (:func:`gseek.blast.rounds._select_round`; a seed on the path of an HSP found in an earlier
round is skipped), then the extension with trace-back of those whose score can reach the e-value,
best first, an HSP inside one traced back skipped. :class:`GappedPasses` holds them as methods of
:class:`~gseek.blast.searcher.BlastSearcher`; the launches (:meth:`GappedPasses._extend`) keep to a
memory budget and may split the work between a GPU and the host's cores.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace

import numpy as np

from gseek.backend import Backend, numba_guard
from gseek.dp.greedy import greedy_gapped
from gseek.dp.runs import LazyRuns
from gseek.dp.scoring import Scoring

from .device_gapped import score_only_rounds
from .device_rounds import DEVICE_MIN, found_block, longest_first, select_round
from .gapped_start import ESTIMATE_READS, estimates_hold, traceback_starts
from .rounds import _ahead, _chain_extent, _contained, _found_block, _outside, _reach, select_round_parts
from .seeds import unpack_ranges
from .stats import evalues

#: Seeds of one query sequence and contig extended with gaps in the same round lie this far apart
#: (in query lengths: they cannot end in one alignment) or at least ``rounds._DIAG_BAND`` diagonals
#: apart (off each other's path); the others wait for a later round, where a seed already on the
#: path of a found HSP is skipped.
_APART = 2
#: On a GPU a round's launch lasts as long as its longest extension, and late rounds hold few seeds
#: (w1@100 on the pan-genome: 43 rounds, from the 10th on under 300 seeds, each ~35 ms, the time of
#: one long alignment). A launch of a round with fewer seeds than this also extends, ahead of
#: time, the seeds next in line (:func:`_ahead`: the best few of each conflict cell not taken
#: yet), up to this many seeds in all; a later round that takes one of them uses its result
#: instead of launching again. The rounds and the seeds they take are the same as without
#: (each seed's extension is its own), so nothing but the time changes. 0: never (the CPU's
#: cores have no idle lanes to fill).
_AHEAD = {"gpu": 4096, "cpu": 0}
#: The trace-back pass skips a score-only HSP that lies inside one already traced back, as BLAST+'s
#: does (:meth:`GappedPasses._traceback`), in at most this many rounds (the last takes all that are
#: left: a round lasts as long as its longest trace-back); 0 or 1: every HSP is traced back (the
#: purge then drops the copies). H200, in process (benchmarks/RESULTS.md, 2026-11-26): workload 1 of issue 17 (1,000
#: queries on the pan-genome) 19.7 s with 0, 12.6 s with 2, 12.1 s with 4; the 10kb blastn set on
#: bacteria75, where few HSPs are inside others, 1.5-1.6 s with 0, 1.9-2.0 s with 2 or 4.
_TRACEBACK_ROUNDS = 2
#: Bases of subject read beyond an expected extent for gapped extension (``_extend_chunk``): the
#: score-only pass, from the ungapped HSP (most random seeds end within a few dozen bases), and
#: the trace-back, from the score-only HSPs of its chain (its final X-drop is larger: with 512,
#: 17% of the trace-backs of 60 workload-1 queries on bacteria75 outgrew their window and were
#: done again, with 2048 under 1%; a window base costs 9 bytes of launch memory, no DP work).
_PRELIM_MARGIN = 128
_WINDOW_MARGIN = 2048
#: The trace-back's expected subject extent of a score-only HSP also covers every score-only HSP of
#: its query sequence and contig within this many diagonals of its own (:func:`_chain_extent`): a
#: long divergent alignment that the score-only X-drop cut into fragments is traced back whole by
#: the larger final X-drop, so its first trace-back would outgrow the fragment's window and be done
#: again with the query's reach. Only windows change: a window never changes a result. 0: the
#: HSP's own extent.
_CHAIN_DIAGONALS = 256
#: A chain whose extent is at least this share of its query's length is traced back in the query's
#: whole reach at once.
_CHAIN_WHOLE = 0.1
#: Seeds extended per launch, and the bytes of subject window and DP rows one launch may hold (a
#: seed's window is its expected extent plus margins; its two DP rows are 8 bytes per window
#: base): bounds a launch's memory when long queries give long windows (the at-scale workload's
#: 100 kb queries: over 1 MB a seed). On a GPU a launch may hold :data:`_EXTEND_SHARE` of the
#: device's free memory where that is more: a launch lasts as long as its longest extension, so
#: every further launch adds a tail (2 GiB launches made the pan-genome's trace-back 2.4x slower).
#: 2^18 seeds (was 2^16): ecoli156 on the pan-genome 6% faster on an H100, w1@100 the same
#: (benchmarks/RESULTS.md, 2026-11-24).
_EXTEND_CHUNK = 1 << 18
_EXTEND_BYTES = 2 << 30
#: On the CPU (no launch tail, every byte the process's): the trace-back windows of the blastn task's
#: 600 x 500 bp queries against 240 kb (24.5 M bases with the 2 x 2,048 margins, twice: the windows and
#: the codes they join) held 50 of its 63 MB in one launch; in launches of this many bytes, ~8.
_EXTEND_BYTES_HOST = 32 << 20
_EXTEND_SHARE = 0.25
#: The share of a GPU's free memory the launches of all its searchers may hold together.
_EXTEND_DEVICE_SHARE = 0.5
#: Bases of subject beside a score-only megablast HSP that its trace-back's start may read (at most a dozen
#: past the HSP: ``gseek.blast.gapped_start``).
_START_MARGIN = 16
#: The longest extensions may go to the host's cores (the Numba twin: the same results), beside the
#: launch of the others, while the host's share of the work (their summed expected extent over its
#: cores, at the speed below: a host core's over a GPU's per seed) is less than the launch's (its
#: longest expected extent); 0 sends none. When one GPU thread extended one seed (a 10 kb alignment:
#: ~1.2 s with trace-back, one host core 12 ms) the host took the longest at 64 (trace-back) and 4;
#: since one warp extends one seed (``gseek.dp.xdrop.WARP_*``) the GPU alone is faster: ecoli156 on
#: bacteria75 1.6-1.9 s against 1.7-2.1 s at 8 / 1 and 2.7-2.9 s at 64 / 4 (``benchmarks/RESULTS.md``,
#: 2026-11-24, tenth session). Extents under the minimum stay on the GPU.
_HOST_SPEEDUP = {True: 0.0, False: 0.0}
_HOST_MIN_EXTENT = 1000
#: A round pass over at least this many seeds (or HSPs) goes through the searcher's device
#: (:mod:`gseek.blast.device_rounds`: the same results); None: always on the host. The blastn task's
#: 100 x 10 kb queries on a random 75 Mbp database (H200, benchmarks/RESULTS.md, 2026-11-28): the first
#: round's ~680k seeds, ``_select_round`` 0.11 s, ``_found_block`` 0.07 s, the launches' order ~0.03 s. The
#: blastn task's score-only rounds of a search whose first holds this many go there whole
#: (:mod:`gseek.blast.device_gapped`: that set's steady search 0.34-0.41 s -> 0.17 s).
_DEVICE_ROUNDS = {"gpu": DEVICE_MIN, "cpu": None}
#: Whether a round's choice on a GPU tests its seeds for isolation on the device first (:func:`select_round`),
#: by task (True: megablast's greedy extension). The blastn task's seeds are nearly all alone; megablast's crowd
#: their alignments' cells (~7 % alone), and on its 1 Gbp set the device's test before the host's pass in parts
#: cost more than it saved (H200, steady search 1.065 s with it, 0.984 s without; benchmarks/RESULTS.md, mb1g).
_ISOLATED_FIRST = {True: False, False: True}
#: Guards the searchers' ``counts`` (a search's two sides of split extensions run on two threads).
_COUNTS_LOCK = threading.Lock()


class GappedPasses:
    """The gapped passes of :class:`~gseek.blast.searcher.BlastSearcher` (a mixin: they use its
    ``options``, ``ref``, ``backend``, ``host``, ``timings``, ``counts`` and ``device_searchers``,
    and its ``_search_spaces``, ``_n_score`` and ``_qlen``)."""

    def _gapped(self, qs, seq_codes, seq_off, seq_query, cand: dict[str, np.ndarray],
                clock: _Clock) -> dict[str, np.ndarray]:
        """BLAST+'s two gapped passes: score-only X-drop extension (``xdrop_gap``) of the seeds in
        rounds, a seed on the path of an HSP found in an earlier round being skipped; then the
        extension with trace-back (``xdrop_gap_final``) of those whose score can reach the e-value."""
        ref, opts = self.ref, self.options
        scoring, scale = self._scoring()
        prelim_x = opts.raw_xdrop(opts.xdrop_gap) * scale
        greedy = opts.linear_gaps
        ahead = _AHEAD.get(self.backend.name, 0)
        todo = np.arange(len(cand))  # the candidates come in rank order (``select_seeds``)
        chosen, scores, spans = [], [], []  # each round's candidates, score-only scores and extents (arrays)
        if not greedy and _device_pass(self.backend, todo.size) and _HOST_SPEEDUP[False] <= 0:
            # the rounds with their seeds and results on the device (the same rounds and results); the passes
            # below read the candidates left and those chosen only: those, renumbered in order (the same order)
            todo, chosen, scores, spans = score_only_rounds(self, scoring, prelim_x, scale, qs, seq_off, seq_query,
                                                            cand, todo, ahead, _knobs())
            if chosen or todo.size < len(cand):  # (on a GPU, their columns alone downloaded)
                used = np.unique(np.concatenate([todo, *chosen]))
                cand = cand.rows(used)
                todo, chosen = np.searchsorted(used, todo), [np.searchsorted(used, c) for c in chosen]
        q, s, seq_of, contig_of = cand["q"], cand["s"], cand["seq"], cand["contig"]
        diag = s - q
        if opts.linear_gaps:  # BLAST+'s greedy pass starts at the ungapped HSP's middle (BLAST_GetGappedScore)
            mid_q = cand["q_start"] + (cand["q_end"] - cand["q_start"]) // 2
        else:  # the middle of the seed's run of matches
            mid_q = q + cand["length"] // 2
        mid_s = mid_q + diag
        n_contigs = len(ref.contig_names)
        key = seq_of * n_contigs + contig_of
        seq_len = np.diff(seq_off)
        apart = (_APART * seq_len[seq_of] + 64).astype(np.int64)
        # score-only results by candidate of the seeds extended ahead of their round (``done``), and of the
        # rounds that used some of those (kept only where a round's results must be gathered)
        done = np.zeros(q.size, bool)
        found = {k: np.zeros(q.size, np.int64) for k in ("score", "q_start", "q_end", "s_start", "s_end")
                 + (("q_seed", "s_seed") if greedy else ())}
        starts: list[np.ndarray] = []  # megablast: where each HSP's trace-back starts (the greedy pass's estimate)
        # the HSPs found so far, one block per round, each sorted by (key, s_start): key, q_start, q_end,
        # s_start, s_end (global), diagonal range; with the block's longest subject extent
        blocks: list[tuple[np.ndarray, int]] = []
        while todo.size:
            take = self._select(key[todo], mid_s[todo], diag[todo], apart[todo])
            sel, rest = todo[take], todo[~take]
            self._count("rounds", 1)
            need = sel[~done[sel]]
            extra = need[:0]
            if need.size and need.size < ahead:
                extra = _ahead(rest[~done[rest]], key, mid_s, diag, apart, ahead - need.size)
                self._count("extended ahead of their round", extra.size)
            if need.size:
                ext = np.concatenate([need, extra]) if extra.size else need
                res = self._prelim(scoring, prelim_x, qs, seq_codes, seq_off, seq_of, contig_of, mid_q, mid_s, diag,
                                   cand, ext)
                self._count("rounds launched", 1)
                self._count("extended, score only", ext.size)
            if need.size != sel.size or extra.size:  # the round's results, in part or all, are kept by candidate
                if need.size:
                    for k, v in found.items():
                        v[ext] = res[k]
                    done[ext] = True
                res = {k: v[sel] for k, v in found.items()}
            chosen.append(sel)
            scores.append(res["score"])
            spans.append(np.stack([res["q_start"], res["q_end"], res["s_start"], res["s_end"]]))
            if greedy:
                starts.append(np.stack([res["q_seed"], res["s_seed"]]))
            blocks.append(self._block(key[sel], res))
            # ``rest`` lies outside every earlier round's HSPs already (it was this round's ``todo``)
            todo = _outside(rest, key, mid_q, mid_s, blocks[-1:])
        if not chosen:
            return _empty_hsps()
        clock.lap("gapped extension, score only")
        sel = np.concatenate(chosen)
        raw = np.concatenate(scores).astype(np.int64) // scale
        span = np.concatenate(spans, axis=1)  # the score-only HSPs: q_start, q_end, s_start, s_end
        query = seq_query[seq_of[sel]]
        spaces = self._search_spaces(self._qlen)[query]
        ok = evalues(opts.karlin, raw, spaces) <= opts.evalue
        sel, span, raw = sel[ok], span[:, ok], raw[ok]
        if not sel.size:
            clock.lap("gapped extension with trace-back")
            return _empty_hsps()
        start_q, start_s = mid_q, mid_s
        if greedy:  # BLAST+'s start for each trace-back: from the greedy pass's estimate
            start_q, start_s = mid_q.copy(), mid_s.copy()
            seeds = np.concatenate(starts, axis=1)[:, ok]
            start_q[sel], start_s[sel] = self._traceback_starts(seq_codes, seq_off, seq_of[sel], contig_of[sel], span,
                                                                seeds)
            clock.lap("trace-back starts")
            # each query's e-value score: the cutoff of BLAST+'s re-scoring of the traced-back HSPs
            k = opts.karlin
            spaces = self._search_spaces(self._qlen)[seq_query]
            self._cutoffs = np.maximum(np.ceil(np.log(k.K * spaces / opts.evalue) / k.lambda_), 1).astype(np.int64)
        res, sel = self._traceback(scoring, scale, opts.raw_xdrop_final * scale, qs, seq_codes, seq_off,
                                   seq_of, contig_of, start_q, start_s, diag, key, apart, sel, span, raw)
        res["seq"], res["contig"] = seq_of[sel], contig_of[sel]
        if greedy:  # the HSPs as scored again, the dropped ones left out
            kept = np.flatnonzero(res["kept"])
            self._count("dropped when scored again", res["kept"].size - kept.size)
            res = {"seq": res["seq"][kept], "contig": res["contig"][kept],
                   **{k: res["final_" + k][kept] for k in ("q_start", "q_end", "s_start", "s_end", "score")},
                   **{k: res[k][kept] for k in ("length", "nident", "mismatch", "gapopen", "gaps")},
                   "runs": res["runs"].take(kept)}
            clock.lap("gapped extension with trace-back")
            return res
        res["score"] = res["score"].astype(np.int64) // scale
        clock.lap("gapped extension with trace-back")
        return res

    def _select(self, key, s, diag, apart) -> np.ndarray:
        """Which seeds a round takes (:func:`~gseek.blast.rounds._select_round`, in parts of keys on the host's
        threads: :func:`select_round_parts`; with many seeds on a GPU, the blastn task's isolated ones found on
        the device first: :func:`gseek.blast.device_rounds.select_round`, :data:`_ISOLATED_FIRST`)."""
        if _ISOLATED_FIRST[self.options.linear_gaps] and _device_pass(self.backend, key.size):
            return select_round(self.backend, key, s, diag, apart)
        return select_round_parts(key, s, diag, apart)

    def _block(self, key, res, score=None) -> tuple[np.ndarray, int]:
        """A round's found HSPs as :func:`_found_block` gives them (sorted on a GPU for many HSPs)."""
        if _device_pass(self.backend, key.size):
            return found_block(self.backend, key, res, score)
        return _found_block(key, res, score)

    def _host_backend(self) -> Backend:
        """The host's backend (the searcher's own on a CPU)."""
        return self.host if self.host is not None else self.backend

    def _windows(self, contig: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The text ``[lo, hi)`` of each HSP's contig, clipped to it, on the host: the bases
        (concatenated), each window's offset there and its first text position."""
        ref = self.ref
        lo = np.maximum(ref.contig_offsets[contig], lo)
        hi = np.minimum(ref.contig_offsets[contig + 1], hi)
        host = self._host_backend()
        with numba_guard():
            bases, off = unpack_ranges(host, ref, lo, hi - lo)
        return np.asarray(host.to_host(bases)), off, lo

    def _traceback_starts(self, seq_codes, seq_off, seq, contig, span, seeds) -> tuple[np.ndarray, np.ndarray]:
        """Where the trace-back of each score-only megablast HSP (``span``: rows q_start, q_end,
        s_start, s_end; ``seeds``: the greedy pass's estimates) starts, as BLAST+ chooses it
        (:func:`gseek.blast.gapped_start.traceback_starts`)."""
        codes = np.ascontiguousarray(seq_codes, np.uint8)
        tq, ts = seeds[0].astype(np.int64), seeds[1].astype(np.int64)
        # first the subject around each estimate only (inside the whole window: the same bases read): most
        # hold (the middle of a long run of matches), and their whole windows (a 30 kb alignment's) are not read
        lo = np.maximum(ts - ESTIMATE_READS, span[2] - _START_MARGIN)
        bases, off, lo = self._windows(contig, lo, np.maximum(lo, np.minimum(ts + ESTIMATE_READS,
                                                                             span[3] + _START_MARGIN)))
        shift = off[:-1] - lo  # text position + shift = position in ``bases``
        with numba_guard():
            hold = estimates_hold(codes, seq_off[seq], seq_off[seq + 1], bases, off[:-1], off[1:], span[1], tq,
                                  ts + shift)
        rest = np.flatnonzero(~hold)
        self._count("trace-back starts read whole", rest.size)
        if not rest.size:
            return tq, ts
        seq, contig, span, sq, ss = seq[rest], contig[rest], span[:, rest], tq[rest], ts[rest]
        bases, off, lo = self._windows(contig, span[2] - _START_MARGIN, span[3] + _START_MARGIN)
        shift = off[:-1] - lo
        with numba_guard():
            rq, rs = traceback_starts(codes, seq_off[seq], seq_off[seq + 1], bases, off[:-1], off[1:], span[0],
                                      span[1], span[2] + shift, span[3] + shift, sq, ss + shift)
        tq[rest], ts[rest] = rq, rs - shift
        return tq, ts

    def _traceback(self, scoring: Scoring, scale: int, xdrop: int, qs, seq_codes, seq_off, seq_of, contig_of, mid_q,
                   mid_s, diag, key, apart, sel: np.ndarray, span: np.ndarray,
                   raw: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """BLAST+'s trace-back pass (``Blast_TracebackFromHSPList``): the score-only HSPs of candidates
        ``sel`` (``span``: rows q_start, q_end, s_start, s_end) best score first, each extended with
        trace-back unless it lies inside an HSP already traced back. Done in rounds as the score-only
        pass (:func:`_select_round`); after a round, an HSP that lies inside one traced-back HSP of its
        query sequence and contig with a score of at least its own (:func:`_contained`: both ends in
        its ranges, within :data:`_DIAG_NEAR` of its diagonals) is dropped; the last of the
        :data:`_TRACEBACK_ROUNDS` rounds takes all that are left. Returns the results and their
        candidates, in candidate order (the same for any round structure)."""
        order = np.lexsort((sel, -raw))
        c, sp = sel[order], span[:, order]
        sc = raw[order]
        # the subject extent each trace-back is expected to cover: its chain of fragments, within the query's reach
        lo, hi = sp[2].copy(), sp[3].copy()
        if _CHAIN_DIAGONALS > 0 and c.size:
            by = np.lexsort((diag[c], key[c]))
            _chain_extent(by, key[c], diag[c], sp[2], sp[3], _CHAIN_DIAGONALS, lo, hi)
            qa, qb = seq_off[seq_of[c]], seq_off[seq_of[c] + 1]
            reach_lo, reach_hi = _reach(qa, qb, mid_q[c], mid_s[c])
            reach_lo, reach_hi = np.minimum(sp[2], reach_lo), np.maximum(sp[3], reach_hi)
            # a chain over a good part of its query: most likely an alignment of the whole query, whose
            # trace-back would be done again, at the length of the longest alignments, if its window were cut
            whole = (hi - lo) >= _CHAIN_WHOLE * (qb - qa)
            lo = np.where(whole, reach_lo, np.maximum(lo, reach_lo))
            hi = np.where(whole, reach_hi, np.minimum(hi, reach_hi))
        todo = np.arange(c.size)
        parts: list[dict[str, np.ndarray]] = []
        picks: list[np.ndarray] = []
        blocks: list[tuple[np.ndarray, int]] = []
        while todo.size:
            cc = c[todo]
            last = len(parts) + 1 >= _TRACEBACK_ROUNDS  # (0 or 1: one round of all, as without skipping)
            take = np.ones(todo.size, bool) if last else self._select(key[cc], mid_s[cc], diag[cc], apart[cc])
            t = todo[take]
            ct = c[t]
            parts.append(self._extend(scoring, xdrop, qs, seq_codes, seq_off, seq_of[ct], contig_of[ct], mid_q[ct],
                                      mid_s[ct], traceback=True, span=(lo[t], hi[t]), margin=_WINDOW_MARGIN))
            picks.append(t)
            self._count("rounds with trace-back", 1)
            self._count("extended with trace-back", t.size)
            todo = todo[~take]
            if todo.size:
                blocks.append(self._block(key[ct], parts[-1], parts[-1]["score"] // scale))  # reported units
                inside = _contained(key[c[todo]], sp[0][todo], sp[1][todo], sp[2][todo], sp[3][todo], sc[todo],
                                    blocks)
                self._count("inside an HSP traced back", np.count_nonzero(inside))
                todo = todo[~inside]
        ids = c[np.concatenate(picks)]
        rank = np.empty(ids.size, np.int64)
        rank[np.argsort(ids)] = np.arange(ids.size)
        bounds = np.cumsum([p.size for p in picks])[:-1]
        res = _merge_extensions(parts, np.split(rank, bounds), ids.size, True)
        return res, np.sort(ids)

    def _prelim(self, scoring: Scoring, xdrop: int, qs, seq_codes, seq_off, seq_of, contig_of, mid_q, mid_s, diag,
                cand: dict[str, np.ndarray], sel: np.ndarray) -> dict[str, np.ndarray]:
        """Score-only extension of candidates ``sel``: from the ungapped HSP's window, or the query's
        whole reach for a long ungapped HSP."""
        span = (cand["q_start"][sel] + diag[sel], cand["q_end"][sel] + diag[sel])
        # a long ungapped HSP is most likely part of a long alignment: the query's whole reach at once
        # (the window around it would only be outgrown and done again)
        long_ = (cand["q_end"][sel] - cand["q_start"][sel]) >= _PRELIM_MARGIN
        if long_.any():
            reach_lo, reach_hi = _reach(seq_off[seq_of[sel]], seq_off[seq_of[sel] + 1], mid_q[sel], mid_s[sel])
            span = (np.where(long_, reach_lo, span[0]), np.where(long_, reach_hi, span[1]))
        return self._extend(scoring, xdrop, qs, seq_codes, seq_off, seq_of[sel], contig_of[sel], mid_q[sel],
                            mid_s[sel], traceback=False, span=span, margin=_PRELIM_MARGIN)

    def _count(self, what: str, n: int) -> None:
        with _COUNTS_LOCK:  # the host's and the device's extensions count from two threads
            self.counts[what] = self.counts.get(what, 0) + int(n)

    def _extend(self, scoring: Scoring, xdrop: int, qs, seq_codes, seq_off, seq, contig, mq, ms,
                traceback: bool = True, span: tuple[np.ndarray, np.ndarray] | None = None, margin: int = 512):
        """Gapped X-drop extension of many seeds, :data:`_EXTEND_CHUNK` at a time (see :meth:`_extend_chunk`).

        On a GPU one warp extends one seed and a launch lasts as long as its longest extension:
        the seeds go to the launches longest expected extent first (the span, else the query's
        length), so the few long alignments share one launch instead of slowing every one; the
        longest of all may go to the host's cores beside the launches (:func:`_host_share`, off by
        default). Each seed's result is its own, so neither the order nor the place changes anything
        but the time."""
        expect = (span[1] - span[0]) if span is not None else (seq_off[seq + 1] - seq_off[seq])
        on_host = None if self.host is None else _host_share(expect, self.host.threads, _HOST_SPEEDUP[traceback])
        if on_host is None or not on_host.any():
            return self._extend_on(self.backend, scoring, xdrop, qs.codes, seq_off, seq, contig, mq, ms, traceback,
                                   span, margin, expect)
        picks = [np.flatnonzero(on_host), np.flatnonzero(~on_host)]

        def run(backend, i, codes):
            return self._extend_on(backend, scoring, xdrop, codes, seq_off, seq[i], contig[i], mq[i], ms[i],
                                   traceback, None if span is None else (span[0][i], span[1][i]), margin, expect[i])

        spent = {}

        def on_cpu():
            started = time.perf_counter()
            with numba_guard():
                out = run(self.host, picks[0], np.ascontiguousarray(seq_codes, np.uint8))
            spent["host"] = time.perf_counter() - started
            return out

        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            host = pool.submit(on_cpu)
            started = time.perf_counter()
            parts = [run(self.backend, picks[1], qs.codes) if picks[1].size else None]
            spent["device"] = time.perf_counter() - started
            parts.insert(0, host.result())
        # the balance of the two sides (docs/blast.md, "Where the time goes")
        side = "with trace-back" if traceback else "score only"
        for where, seconds in spent.items():
            name = f"{where} side of split extensions, {side}"
            self.timings[name] = self.timings.get(name, 0.0) + seconds
        self._count(f"on the host, {side}", picks[0].size)
        return _merge_extensions([p for p in parts if p is not None], [i for i in picks if i.size], int(seq.size),
                                 traceback)

    def _extend_on(self, backend: Backend, scoring: Scoring, xdrop: int, query_codes, seq_off, seq, contig, mq, ms,
                   traceback: bool, span: tuple[np.ndarray, np.ndarray] | None, margin: int, expect: np.ndarray):
        """:meth:`_extend`'s seeds on ``backend`` (``query_codes``: the batch's codes there), longest
        expected extent (``expect``) first."""
        n = int(seq.size)
        # a seed's window (:meth:`_extend_chunk`'s) and DP rows, 9 bytes a base
        slack = 2 * margin if span is not None else 2 * np.maximum(64, (seq_off[seq + 1] - seq_off[seq]) // 4)
        need = 9 * (np.asarray(expect, np.int64) + slack)
        budget = _extend_budget(backend, self.device_searchers)
        side = "with trace-back" if traceback else "score only"
        if n <= _EXTEND_CHUNK and int(need.sum()) <= budget:
            self._count(f"launches, {side}", 1)
            return self._extend_chunk(scoring, xdrop, query_codes, seq_off, seq, contig, mq, ms, traceback, span,
                                      margin, backend)
        order = longest_first(backend, expect) if _device_pass(backend, n) else np.argsort(-expect, kind="stable")
        parts, picks = [], []
        for i in _launches(order, need[order], budget):
            self._count(f"launches, {side}", 1)
            picks.append(i)
            parts.append(self._extend_chunk(scoring, xdrop, query_codes, seq_off, seq[i], contig[i], mq[i], ms[i],
                                            traceback, None if span is None else (span[0][i], span[1][i]), margin,
                                            backend))
        return _merge_extensions(parts, picks, n, traceback)

    def _extend_chunk(self, scoring: Scoring, xdrop: int, query_codes, seq_off, seq, contig, mq, ms,
                      traceback: bool = True, span: tuple[np.ndarray, np.ndarray] | None = None, margin: int = 512,
                      backend: Backend | None = None):
        """Gapped X-drop extension (with trace-back) from seed points (global query and text positions),
        on ``backend`` (None: the searcher's), ``query_codes`` the batch's codes there.

        The subject is read from a window of the text: with ``span`` (text extents the HSPs are
        expected to cover: the ungapped HSP, the score-only HSP), that extent and ``margin`` bases
        each side; an extension with a live DP cell at a window edge that is not its contig's
        (``xdrop_gapped``'s ``edges``: a longer window could extend it) is done again with the whole
        window (the query's reach, as without ``span``), so a window never cuts an alignment short."""
        ref, backend = self.ref, backend or self.backend
        qa, qb = seq_off[seq], seq_off[seq + 1]
        ca, cb = ref.contig_offsets[contig], ref.contig_offsets[contig + 1]
        if span is None:
            t_lo, t_hi = _reach(qa, qb, mq, ms)
            t_lo, t_hi = np.maximum(ca, t_lo), np.minimum(cb, t_hi)
        else:
            t_lo = np.maximum(ca, np.minimum(span[0], ms) - margin)
            t_hi = np.minimum(cb, np.maximum(span[1], ms + 1) + margin)
        windows, w_off = unpack_ranges(backend, ref, t_lo, t_hi - t_lo)
        codes = backend.xp.concatenate([query_codes, windows])
        n_q = int(seq_off[-1])
        args = (codes, qa, (qb - qa).astype(np.int32), n_q + w_off[:-1], (t_hi - t_lo).astype(np.int32),
                (mq - qa).astype(np.int32), (ms - t_lo).astype(np.int32))
        budget = _extend_budget(backend, self.device_searchers)
        if self.options.linear_gaps:  # megablast: BLAST+'s greedy extension (gseek.dp.greedy), twice the scale
            o = self.options
            rescore = (o.reward, o.penalty, self._n_score, self._cutoffs[seq]) if traceback else None
            r = greedy_gapped(backend, *args, 2 * o.reward, -2 * o.penalty, xdrop, traceback=traceback,
                              max_bytes=budget, rescore=rescore,
                              timings=self.timings if os.environ.get("GSEEK_BLAST_TIMING") else None)
        else:
            from gseek.dp.xdrop import xdrop_gapped  # (here: a megablast search imports no X-drop kernels)

            r = xdrop_gapped(backend, *args, scoring, xdrop, traceback=traceback, max_bytes=budget)
        out = {"q_start": qa + r["q_start"], "q_end": qa + r["q_end"], "s_start": t_lo + r["t_start"],
               "s_end": t_lo + r["t_end"], "score": r["score"].astype(np.int64)}
        if "q_seed" in r:
            out.update({"q_seed": qa + r["q_seed"], "s_seed": t_lo + r["t_seed"]})
        if traceback and "kept" in r:  # megablast: the HSP as scored again (its ends above are the greedy's)
            out.update({"kept": r["kept"], "final_score": r["final_score"].astype(np.int64),
                        "final_q_start": qa + r["final_q_start"], "final_q_end": qa + r["final_q_end"],
                        "final_s_start": t_lo + r["final_t_start"], "final_s_end": t_lo + r["final_t_end"],
                        "length": (r["matches"] + r["mismatches"] + r["gap_cols"]).astype(np.int32),
                        "nident": r["matches"], "mismatch": r["mismatches"], "gapopen": r["gap_opens"],
                        "gaps": r["gap_cols"], "runs": r["runs"]})
        elif traceback:
            length = r["matches"] + r["mismatches"] + r["gap_cols"]
            out.update({"length": length.astype(np.int32), "nident": r["matches"], "mismatch": r["mismatches"],
                        "gapopen": r["gap_opens"], "gaps": r["gap_cols"],
                        "runs": LazyRuns.of(r["cigar"], r["cigar_offsets"])})
        cut = ((t_lo > ca) & (r["edges"] & 1 != 0)) | ((t_hi < cb) & (r["edges"] & 2 != 0))
        if span is None:
            self._count("cut at the query's reach", np.count_nonzero(cut))
        else:
            redo = np.flatnonzero(cut)
            self._count(f"done again with the query's reach, {'with trace-back' if traceback else 'score only'}",
                        redo.size)
            if redo.size:
                # in launches that keep to the memory budget, as any (the query's reach: 150 kb windows)
                again = self._extend_on(backend, scoring, xdrop, query_codes, seq_off, seq[redo], contig[redo],
                                        mq[redo], ms[redo], traceback, None, margin,
                                        seq_off[seq[redo] + 1] - seq_off[seq[redo]])
                for k, v in out.items():
                    if k != "runs":
                        v[redo] = again[k]
                if traceback:  # the runs of the ones done again from their second extension (indices only)
                    n = int(seq.size)
                    pick = np.arange(n, dtype=np.int64)
                    pick[redo] = n + np.arange(redo.size)
                    out["runs"] = LazyRuns.concat([out["runs"], again["runs"]]).take(pick)
        return out


class _Clock:
    """Adds the seconds since the last lap to ``timings[stage]`` (synchronising the device first
    when ``GSEEK_BLAST_TIMING`` is set, so that queued work counts where it ran)."""

    def __init__(self, backend: Backend, timings: dict[str, float]) -> None:
        self.backend, self.timings = backend, timings
        self.sync = bool(os.environ.get("GSEEK_BLAST_TIMING"))
        self.last = time.perf_counter()

    def lap(self, stage: str) -> None:
        if self.sync:
            self.backend.synchronize()
        now = time.perf_counter()
        self.timings[stage] = self.timings.get(stage, 0.0) + now - self.last
        self.last = now


def _knobs() -> SimpleNamespace:
    """The settings and passes of this module that :func:`score_only_rounds` reads (as set now)."""
    return SimpleNamespace(_APART=_APART, _PRELIM_MARGIN=_PRELIM_MARGIN, _EXTEND_CHUNK=_EXTEND_CHUNK,
                           _extend_budget=_extend_budget)


def _device_pass(backend: Backend, n: int) -> bool:
    """Whether a round pass over ``n`` items goes through ``backend``'s device (:data:`_DEVICE_ROUNDS`)."""
    least = _DEVICE_ROUNDS.get(backend.name)
    return least is not None and n >= least


def _extend_budget(backend: Backend, searchers: int = 1) -> int:
    """The bytes one gapped-extension launch on ``backend`` may hold: on the host
    :data:`_EXTEND_BYTES_HOST`; on a GPU :data:`_EXTEND_BYTES`, or
    :data:`_EXTEND_SHARE` of a GPU's free memory where that is more; of :data:`_EXTEND_DEVICE_SHARE`
    at most, with ``searchers`` launching on that device at once."""
    free = backend.free_memory()
    if free is None:  # the host: a launch's windows are memory of the process, and no launch has a tail
        return _EXTEND_BYTES_HOST
    share = min(_EXTEND_SHARE, _EXTEND_DEVICE_SHARE / max(1, int(searchers)))
    return max(_EXTEND_BYTES, int(share * free))


def _launches(order: np.ndarray, need: np.ndarray, budget: int) -> Iterator[np.ndarray]:
    """``order`` cut into runs of at most :data:`_EXTEND_CHUNK` seeds whose ``need`` (bytes, in the
    same order) sums to at most ``budget`` (a seed that needs more is a launch of its own)."""
    total = np.cumsum(need)
    a, n = 0, order.size
    while a < n:
        base = total[a - 1] if a else 0
        b = min(a + _EXTEND_CHUNK, int(np.searchsorted(total, base + budget, side="right")))
        b = max(b, a + 1)
        yield order[a:b]
        a = b


def _host_share(expect: np.ndarray, cores: int, speedup: float) -> np.ndarray:
    """Which extensions go to the host's ``cores``: the longest expected extents (at least
    :data:`_HOST_MIN_EXTENT`), as many as keep the host's share of the work (their summed extent
    over ``cores`` × ``speedup``, a host core's speed over a GPU thread's) within the launch's (the
    longest extent left to it). Both grow and shrink monotonically: the longest k that fit.

    >>> _host_share(np.array([100, 9000, 8000, 50, 7000]), 2, 1.0).tolist()  # 9000/2 <= 8000; 17000/2 > 7000
    [False, True, False, False, False]
    """
    if speedup <= 0:
        return np.zeros(len(expect), bool)
    order = np.argsort(-expect, kind="stable")
    e = np.asarray(expect, np.float64)[order]
    host = np.cumsum(e) / (cores * speedup)
    launch = np.append(e[1:], 0.0)
    k = int(np.argmin((host <= launch) & (e >= _HOST_MIN_EXTENT))) if e.size else 0  # (the last never fits)
    mask = np.zeros(e.size, bool)
    mask[order[:k]] = True
    return mask


def _merge_extensions(parts: list[dict], picks: list[np.ndarray], n: int, traceback: bool) -> dict[str, np.ndarray]:
    """The results of extensions done in parts (part j holds seeds ``picks[j]``), in seed order."""
    if len(parts) == 1 and picks[0].size == n and np.array_equal(picks[0], np.arange(n)):
        return parts[0]
    order = np.concatenate(picks)
    back = np.empty(n, np.int64)
    back[order] = np.arange(n)
    out = {k: np.concatenate([p[k] for p in parts])[back] for k in parts[0] if k != "runs"}
    if traceback:  # the runs stay where they are: their indices only (:class:`LazyRuns`)
        out["runs"] = LazyRuns.concat([p["runs"] for p in parts]).take(back)
    return out


def _empty_hsps() -> dict[str, np.ndarray]:
    z64, z32 = np.zeros(0, np.int64), np.zeros(0, np.int32)
    return {"seq": z64, "contig": z32, "q_start": z64, "q_end": z64, "s_start": z64, "s_end": z64, "score": z64,
            "length": z32, "nident": z32, "mismatch": z32, "gapopen": z32, "gaps": z32, "runs": LazyRuns.empty()}

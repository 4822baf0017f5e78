"""BLASTN-style search of an index's text: :class:`BlastSearcher` (``gseek search --task megablast|blastn``).

Stages (``docs/blast.md``): the queries' lookup table and presence vector
(host), then on the backend the scan of the whole 2-bit text, the lookup,
mini-extension to the word size and ungapped X-drop extension
(:mod:`gseek.blast.seeds`), gapped X-drop extension with trace-back
(:func:`gseek.dp.xdrop.xdrop_gapped`), then on the host BLAST+'s statistics,
purging, ordering and limits. Results are the same on every backend and for
any batch of queries.

>>> from gseek.index import Index
>>> from gseek.datasets import lambda_genome
>>> from gseek.seqio import read_fastx
>>> ref = read_fastx(lambda_genome()).sequence(0)
>>> searcher = BlastSearcher(Index.build(lambda_genome(), wgram=4, device="cpu"), task="megablast", device="cpu")
>>> searcher
BlastSearcher(BlastOptions(task='megablast'), device='cpu')
>>> hits = searcher.search([("q1", ref[1000:1500])])
>>> hits.row(0).split("\\t")
['q1', 'gi|9626243|ref|NC_001416.1|', '100.000', '500', '0', '0', '1', '500', '1001', '1500', '0.0', '924']
"""

from __future__ import annotations

import concurrent.futures
import math
import os
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np

from gseek import ragged
from gseek.backend import Backend, get_backend, numba_guard
from gseek.dp.greedy import greedy_gapped
from gseek.dp.scoring import Scoring
from gseek.dp.xdrop import xdrop_gapped
from gseek.errors import OptionError
from gseek.index.text import ReferenceText
from gseek.kernels._jit import njit
from gseek.kernels.ragged import gather as gather_on_host
from gseek.seqio.batch import SequenceBatch

from .dust import dust_mask
from .lookup import lookup_of_words, query_strands, seeding, word_codes
from .options import BlastOptions
from .gapped_start import traceback_starts
from .seeds import device_queries, seed_candidates, unpack_ranges
from .stats import bit_scores, effective_search_space, evalues

__all__ = ["BlastSearcher", "BlastHits"]

#: Seeds of one query sequence and contig extended with gaps in the same round lie this far apart
#: (in query lengths: they cannot end in one alignment) or at least :data:`_DIAG_BAND` diagonals
#: apart (off each other's path); the others wait for a later round, where a seed already on the
#: path of a found HSP is skipped.
_APART = 2
_DIAG_BAND = 256
#: On a GPU a round's launch lasts as long as its longest extension, and late rounds hold few seeds
#: (w1@100 on the pan-genome: 43 rounds, from the 10th on under 300 seeds, each ~35 ms, the time of
#: one long alignment). A launch of a round with fewer seeds than this also extends, ahead of
#: time, the seeds next in line (:func:`_ahead`: the best few of each conflict cell not taken
#: yet), up to this many seeds in all; a later round that takes one of them uses its result
#: instead of launching again. The rounds and the seeds they take are the same as without
#: (each seed's extension is its own), so nothing but the time changes. 0: never (the CPU's
#: cores have no idle lanes to fill).
_AHEAD = {"gpu": 4096, "cpu": 0}
#: Seeds a conflict cell sends ahead in one launch (its best not yet taken, in rank order).
_AHEAD_DEPTH = 8
#: The trace-back pass skips a score-only HSP that lies inside one already traced back, as BLAST+'s
#: does (:meth:`BlastSearcher._traceback`), in at most this many rounds (the last takes all that are
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
_EXTEND_SHARE = 0.25
#: The share of a GPU's free memory the launches of all its searchers may hold together.
_EXTEND_DEVICE_SHARE = 0.5
#: Diagonals from an HSP's within which a seed counts as on its path.
_DIAG_NEAR = 50
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
#: Guards the searchers' ``counts`` (a search's two sides of split extensions run on two threads).
_COUNTS_LOCK = threading.Lock()


def _gather(data: Any, offs: Any, idx: Any) -> tuple[Any, Any]:
    """Items ``idx`` of a ragged array (the HSPs' CIGAR runs): on the host in one parallel pass that
    holds no GIL (the searchers of a GPU run side by side on threads), else :func:`gseek.ragged.gather`."""
    if isinstance(data, np.ndarray):
        with numba_guard():  # a parallel pass: under Numba's workqueue layer, one thread at a time
            return gather_on_host(data, offs, idx)
    return ragged.gather(data, offs, idx)


@dataclass(frozen=True, eq=False)
class PreparedQueries:
    """A query batch made ready for :meth:`BlastSearcher.search` (:meth:`BlastSearcher.prepare`):
    the options it was made with, the batch, its sequences (both strands, query-major:
    ``seq_codes``, offsets ``seq_off``, ``seq_query``, ``seq_strand``), the lookup table and
    the valid-word flags."""

    options: BlastOptions
    batch: SequenceBatch
    seq_codes: np.ndarray
    seq_off: np.ndarray
    seq_query: np.ndarray
    seq_strand: np.ndarray
    table: Any
    valid: np.ndarray


@dataclass(frozen=True, eq=False)
class BlastHits:
    """HSPs of one search, struct-of-arrays, in BLAST+'s report order.

    Per HSP: ``query`` (record number), ``subject`` (contig number), ``strand`` (+1/-1),
    ``q_start``/``q_end`` (0-based half-open on the query's plus strand), ``s_start``/``s_end``
    (0-based half-open on the subject's forward strand), ``score`` (raw), ``bitscore``,
    ``evalue``, ``length`` (alignment columns), ``nident``, ``mismatch``, ``gapopen``, ``gaps``
    (gap columns), and the alignment as BAM CIGAR runs (``=``/``X``/``I``/``D``) of the
    searched strand of the query against the forward subject, ``cigar[cigar_offsets[h]:...]``.
    """

    arrays: dict[str, np.ndarray]
    query_names: list[str]
    query_lengths: np.ndarray
    subject_names: tuple[str, ...]
    subject_lengths: np.ndarray
    _query_codes: np.ndarray = field(repr=False)
    _query_offsets: np.ndarray = field(repr=False)
    _ref: ReferenceText | tuple[ReferenceText, ...] = field(repr=False)

    @property
    def texts(self) -> tuple[ReferenceText, ...]:
        """The database text(s) the subjects are read from: one, or each shard's after a merge
        (:func:`gseek.blast.shards.merge_hits`)."""
        return self._ref if isinstance(self._ref, tuple) else (self._ref,)

    def __len__(self) -> int:
        return int(self.arrays["score"].size)

    def __getattr__(self, name: str) -> np.ndarray:
        try:
            return self.__dict__["arrays"][name]
        except KeyError:
            raise AttributeError(name) from None

    def row(self, h: int, fields: Iterable[str] | None = None) -> str:
        """HSP ``h`` as a ``blastn -outfmt 6`` line (default fields: ``std``)."""
        from .report import tabular_row

        return tabular_row(self, h, fields)

    def query_codes(self, q: int) -> np.ndarray:
        """Base codes of query ``q`` (plus strand)."""
        return self._query_codes[self._query_offsets[q]:self._query_offsets[q + 1]]

    def subject_codes(self, start: int, end: int, subject: int) -> np.ndarray:
        """Base codes of subject ``subject`` ``[start, end)`` (forward strand)."""
        for ref in self.texts:
            local = subject - ref.first_contig
            if 0 <= local < len(ref.contig_names):
                base = int(ref.contig_offsets[local])
                return ref.bases(base + start, base + end)
        raise IndexError(f"subject {subject} is in none of the texts of these hits")


class BlastSearcher:
    """One configured BLAST-style search of an index (its ``text`` part) on one backend.

    Arguments:
        index: a :class:`~gseek.index.Index` (or a path to one: only its text is loaded).
        task: ``megablast`` or ``blastn`` (BLAST+'s presets).
        device, threads: the backend (``auto``, ``cpu``, ``gpu``, ``gpu:N``).
        shard: ``(i, n)``: search only shard ``i`` of ``n`` of the database
            (:meth:`ReferenceText.shard <gseek.index.text.ReferenceText.shard>`; also given by
            passing a shard as ``index``), with the whole database's statistics and subject
            numbers, so that :func:`gseek.blast.shards.merge_hits` of every shard's hits is the
            whole search's (``docs/blast.md``, "Database split").
        **options: overrides of :class:`~gseek.blast.options.BlastOptions` (``evalue``,
            ``word_size``, ``reward``, ``penalty``, ``gap_open``, ``gap_extend``, ``dust``, ...),
            checked together; unknown names raise :class:`~gseek.errors.OptionError`.
    """

    def __init__(self, index: Any, task: str = "megablast", device: str | Backend = "auto",
                 threads: int | None = None, shard: tuple[int, int] | None = None, **options: Any) -> None:
        self.options = BlastOptions.for_task(task, **options)
        _ = self.options.karlin_ungapped  # computed (and cached) here, not by each searcher's first search at once
        #: Searchers launching on this one's device at once (its launches' memory budget is its share).
        self.device_searchers = 1
        if isinstance(index, ReferenceText):
            self.ref = index
        else:
            if not hasattr(index, "arrays"):
                from gseek.index import Index

                index = Index.load(index, device="cpu", parts=["text"])
            self.ref = ReferenceText.from_index(index)
        if shard is not None:
            self.ref = self.ref.shard(*shard)
        self.backend = get_backend(device, threads)
        #: The host's cores, where a GPU searcher's longest gapped extensions go (None: a CPU searcher).
        self.host = None if self.backend.name != "gpu" else get_backend("cpu", threads)
        # statistics: the whole database's (a shard's search spaces are the whole search's)
        self.db_length = self.ref.db_bases
        self.db_sequences = self.ref.db_sequences
        #: Seconds per stage, summed over searches (``docs/blast.md``, "Where the time goes"); the
        #: device is synchronised at stage bounds only when ``GSEEK_BLAST_TIMING`` is set.
        self.timings: dict[str, float] = {}
        #: Queries, seeds and seeds extended with gaps, summed over searches (and the most pairs and
        #: seeds one chunk of the seed stage held).
        self.counts: dict[str, int] = {"queries": 0, "seeds": 0, "gapped": 0}
        #: (query, text) pairs the seed stage expands at once (None: ``seeds.PAIR_CHUNK``); the
        #: results are the same for any value (:func:`gseek.blast.seeds.seed_candidates`).
        self.pair_chunk: int | None = None

    def __repr__(self) -> str:
        where = f", contigs=[{self.ref.first_contig}, {self.ref.first_contig + len(self.ref.contig_names)})" \
            if self.ref.is_shard else ""
        return f"BlastSearcher({self.options!r}, device={self.backend.spec!r}{where})"

    # ------------------------------------------------------------------ queries

    def _batch(self, queries: Any) -> SequenceBatch:
        if isinstance(queries, SequenceBatch):
            if queries.alphabet != "dna":
                raise OptionError(f"{queries.path}: BLAST-style search needs nucleotide queries")
            return queries
        if isinstance(queries, str):  # one query, as Mapper.map takes one read (not one query a letter)
            queries = [queries]
        names, seqs = [], []
        for k, item in enumerate(queries):
            name, seq = item if isinstance(item, tuple) else (f"query{k}", item)
            names.append(name)
            seqs.append(seq)
        scoring = Scoring()
        codes = [scoring.encode(s, where=n) for n, s in zip(names, seqs)]
        offsets = ragged.offsets(np.array([c.size for c in codes], np.int64))
        joined = np.concatenate(codes) if codes else np.zeros(0, np.uint8)
        return SequenceBatch.from_codes(joined.astype(np.uint8), offsets, names, "<queries>")

    def _sequences(self, batch: SequenceBatch):
        """Both (or one) strands of every query, concatenated in (query, strand) order, and their masks."""
        opts = self.options
        codes = np.asarray(batch.codes, np.uint8)
        offsets = np.asarray(batch.offsets, np.int64)
        mask = np.zeros(codes.size, np.uint8)
        if opts.dust is not None and codes.size:
            mask |= dust_mask(codes, offsets, *opts.dust)
        if opts.lcase_masking and batch.soft_mask.size:
            for a, b in np.asarray(batch.soft_mask).tolist():
                mask[a:b] = 1
        strands = {"both": (1, -1), "plus": (1,), "minus": (-1,)}[opts.strand]
        with numba_guard():  # parallel passes, maybe beside another searcher's
            # hard masking: masked bases are N for the extensions too
            return query_strands(codes, offsets, mask, strands, hard=not opts.soft_masking)

    # ------------------------------------------------------------------ search

    def prepare(self, queries: Any) -> PreparedQueries:
        """The query side of a search of ``queries`` (strands, masks, lookup table): what every
        volume or shard of a database searched with these options shares (:meth:`search` takes it
        in place of the queries)."""
        batch = self._batch(queries)
        seq_codes, seq_mask, seq_off, seq_query, seq_strand = self._sequences(batch)
        lut_w = self.options.lut_word
        with numba_guard():
            words = word_codes(seq_codes, seq_off, lut_w, seq_mask)  # once: the table's and the seeding flags
            table, valid = lookup_of_words(words, lut_w), seeding(words)
        return PreparedQueries(self.options, batch, seq_codes, seq_off, seq_query, seq_strand, table, valid)

    def search(self, queries: Any) -> BlastHits:
        """HSPs of ``queries`` (a :class:`~gseek.seqio.SequenceBatch`, or strings, or
        ``(name, sequence)`` pairs, or :meth:`prepare`'s result; one string is one query, named
        ``query0``) against the database, in BLAST+'s report order."""
        opts = self.options
        clock = _Clock(self.backend, self.timings)
        if isinstance(queries, PreparedQueries):
            if queries.options != opts:
                raise ValueError("search: queries prepared with other options")
            prep = queries
        else:
            prep = self.prepare(queries)
        batch, seq_codes, seq_off = prep.batch, prep.seq_codes, prep.seq_off
        seq_query, seq_strand, table, valid = prep.seq_query, prep.seq_strand, prep.table, prep.valid
        self._qlen = np.diff(np.asarray(batch.offsets, np.int64))
        lut_w = opts.lut_word
        backend = self.backend
        clock.lap("queries and lookup table")
        with backend.active():
            qs = device_queries(backend, seq_codes, seq_off, valid, table)
            triggers = self._ungapped_cutoffs(seq_query) if opts.ungapped else self._triggers(batch, seq_query)
            cand, found = seed_candidates(backend, self.ref, qs, lut_w, opts.stride, opts.word_size, opts.reward,
                                          opts.penalty, self._n_score, opts.raw_xdrop(opts.xdrop_ungap, ungapped=True),
                                          triggers, self.pair_chunk)
            clock.lap("scan, lookup, mini-extension, ungapped extension")
            if opts.ungapped:
                hsps = self._ungapped_hsps(cand, seq_codes)
            else:
                hsps = self._gapped(qs, seq_codes, seq_off, seq_query, cand, clock)
        hits = self._report(batch, hsps, seq_off, seq_query, seq_strand)
        clock.lap("statistics, purge, order")
        self.counts["queries"] += len(batch)
        self.counts["seeds"] += found.seeds
        with _COUNTS_LOCK:
            for what, n in (("most pairs in a seed chunk", found.most_pairs),
                            ("most seeds in a seed chunk", found.most_seeds)):
                self.counts[what] = max(self.counts.get(what, 0), n)
        self.counts["gapped"] += int(cand["q"].size)
        return hits

    def _search_spaces(self, qlen: np.ndarray) -> np.ndarray:
        params = self.options.karlin
        return np.array([effective_search_space(params, int(m), self.db_length, self.db_sequences) if m else 1
                         for m in qlen.tolist()], dtype=np.float64)

    def _triggers(self, batch: SequenceBatch, seq_query: np.ndarray) -> np.ndarray:
        """Per sequence, the ungapped score from which a seed is extended with gaps: BLAST+'s gap
        trigger, or the lowest score that can reach the e-value cutoff if that is lower."""
        opts = self.options
        k = opts.karlin
        spaces = self._search_spaces(np.diff(np.asarray(batch.offsets, np.int64)))
        reach = np.ceil(np.log(k.K * spaces / opts.evalue) / k.lambda_)
        return np.minimum(opts.gap_trigger, np.maximum(reach, 1)).astype(np.int64)[seq_query]

    def _ungapped_cutoffs(self, seq_query: np.ndarray) -> np.ndarray:
        """Per sequence, the least ungapped score whose e-value reaches the cutoff (``--ungapped``:
        a seed scoring less is never reported, and never purges one that is: the purge drops an
        HSP for a better one only)."""
        opts = self.options
        k = opts.karlin
        spaces = self._search_spaces(self._qlen)
        cut = np.maximum(np.ceil(np.log(k.K * spaces / opts.evalue) / k.lambda_), 1).astype(np.int64)
        while True:  # the least score that reaches the cutoff as the report computes it (e-values fall with the score)
            lower = (cut > 1) & (evalues(k, cut - 1, spaces) <= opts.evalue)
            if not lower.any():
                break
            cut -= lower
        while True:
            higher = evalues(k, cut, spaces) > opts.evalue
            if not higher.any():
                break
            cut += higher
        return cut[seq_query]

    def _ungapped_hsps(self, cand: dict[str, np.ndarray], seq_codes) -> dict[str, np.ndarray]:
        q_start, q_end = cand["q_start"], cand["q_end"]
        s_start = q_start + (cand["s"] - cand["q"])
        length = (q_end - q_start).astype(np.int32)
        n = q_start.size
        nident = np.zeros(n, np.int32)
        cig_len = np.zeros(n, np.int64)
        runs: list[np.ndarray] = []
        for h in range(n):
            qc = seq_codes[q_start[h]:q_end[h]]
            sc = self.ref.bases(s_start[h], s_start[h] + length[h])
            eq = (qc == sc) & (qc < 4)
            nident[h] = int(eq.sum())
            change = np.flatnonzero(np.diff(eq.astype(np.int8))) + 1
            bounds = np.concatenate([[0], change, [eq.size]])
            ops = np.where(eq[bounds[:-1]], 7, 8).astype(np.uint32)
            r = (np.diff(bounds).astype(np.uint32) << np.uint32(4)) | ops
            runs.append(r)
            cig_len[h] = r.size
        zeros = np.zeros(n, np.int32)
        return {"seq": cand["seq"], "contig": cand["contig"], "q_start": q_start, "q_end": q_end,
                "s_start": s_start, "s_end": s_start + length, "score": cand["score"].astype(np.int64),
                "length": length, "nident": nident, "mismatch": length - nident, "gapopen": zeros,
                "gaps": zeros.copy(), "cigar": np.concatenate(runs) if runs else np.zeros(0, np.uint32),
                "cigar_offsets": ragged.offsets(cig_len)}

    @property
    def _n_score(self) -> int:
        """Score of an N against anything in ungapped and affine-gap extension: BLAST+'s matrix value,
        the mean of the base scores, rounded (2/-3: -2, 1/-2: -1). Megablast's greedy extension never
        matches an N, as BLAST+'s greedy alignment does not; its re-scoring then scores it this."""
        o = self.options
        mean = (o.reward + 3 * o.penalty) / 4.0  # rounded half away from zero, as BLAST_Nint (2/-4: -3)
        return int(math.floor(mean + 0.5)) if mean >= 0 else int(math.ceil(mean - 0.5))

    def _scoring(self) -> tuple[Scoring, int]:
        """The DP scoring of gapped extension and its scale (2 for linear gaps: reward/2 - penalty
        a gap column is then an integer)."""
        o = self.options
        if o.linear_gaps:
            # BLAST+'s greedy (megablast) extension counts an N as a mismatch
            return Scoring(match=2 * o.reward, mismatch=2 * o.penalty, gap_open=0,
                           gap_extend=o.reward - 2 * o.penalty), 2
        return Scoring(match=o.reward, mismatch=o.penalty, gap_open=o.gap_open, gap_extend=o.gap_extend,
                       n_score=self._n_score), 1

    def _gapped(self, qs, seq_codes, seq_off, seq_query, cand: dict[str, np.ndarray],
                clock: _Clock) -> dict[str, np.ndarray]:
        """BLAST+'s two gapped passes: score-only X-drop extension (``xdrop_gap``) of the seeds in
        rounds, a seed on the path of an HSP found in an earlier round being skipped; then the
        extension with trace-back (``xdrop_gap_final``) of those whose score can reach the e-value."""
        ref, opts = self.ref, self.options
        scoring, scale = self._scoring()
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
        prelim_x = opts.raw_xdrop(opts.xdrop_gap) * scale
        todo = np.arange(q.size)  # the candidates come in rank order (``select_seeds``)
        apart = (_APART * seq_len[seq_of] + 64).astype(np.int64)
        # score-only results by candidate of the seeds extended ahead of their round (``done``), and of the
        # rounds that used some of those (kept only where a round's results must be gathered)
        done = np.zeros(q.size, bool)
        greedy = opts.linear_gaps
        found = {k: np.zeros(q.size, np.int64) for k in ("score", "q_start", "q_end", "s_start", "s_end")
                 + (("q_seed", "s_seed") if greedy else ())}
        ahead = _AHEAD.get(self.backend.name, 0)
        chosen: list[np.ndarray] = []
        scores: list[np.ndarray] = []
        spans: list[np.ndarray] = []
        starts: list[np.ndarray] = []  # megablast: where each HSP's trace-back starts (the greedy pass's estimate)
        # the HSPs found so far, one block per round, each sorted by (key, s_start): key, q_start, q_end,
        # s_start, s_end (global), diagonal range; with the block's longest subject extent
        blocks: list[tuple[np.ndarray, int]] = []
        while todo.size:
            take = _select_round(key[todo], mid_s[todo], diag[todo], apart[todo])
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
            blocks.append(_found_block(key[sel], res))
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
        res, sel = self._traceback(scoring, scale, opts.raw_xdrop(opts.xdrop_gap_final) * scale, qs, seq_codes, seq_off,
                                   seq_of, contig_of, start_q, start_s, diag, key, apart, sel, span, raw)
        res["seq"], res["contig"] = seq_of[sel], contig_of[sel]
        if greedy:  # the HSPs as scored again, the dropped ones left out
            kept = np.flatnonzero(res["kept"])
            self._count("dropped when scored again", res["kept"].size - kept.size)
            res = {"seq": res["seq"][kept], "contig": res["contig"][kept],
                   **{k: res["final_" + k][kept] for k in ("q_start", "q_end", "s_start", "s_end", "score")},
                   **{k: res[k][kept] for k in ("length", "nident", "mismatch", "gapopen", "gaps")},
                   **dict(zip(("cigar", "cigar_offsets"), _gather(res["cigar"], res["cigar_offsets"], kept)))}
            clock.lap("gapped extension with trace-back")
            return res
        res["score"] = res["score"].astype(np.int64) // scale
        clock.lap("gapped extension with trace-back")
        return res

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
        bases, off, lo = self._windows(contig, span[2] - _START_MARGIN, span[3] + _START_MARGIN)
        shift = off[:-1] - lo  # text position + shift = position in ``bases``
        codes = np.ascontiguousarray(seq_codes, np.uint8)
        with numba_guard():
            tq, ts = traceback_starts(codes, seq_off[seq], seq_off[seq + 1], bases, off[:-1], off[1:], span[0],
                                      span[1], span[2] + shift, span[3] + shift, seeds[0].astype(np.int64),
                                      seeds[1].astype(np.int64) + shift)
        return tq, ts - shift

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
            take = np.ones(todo.size, bool) if last else _select_round(key[cc], mid_s[cc], diag[cc], apart[cc])
            t = todo[take]
            ct = c[t]
            parts.append(self._extend(scoring, xdrop, qs, seq_codes, seq_off, seq_of[ct], contig_of[ct], mid_q[ct],
                                      mid_s[ct], traceback=True, span=(lo[t], hi[t]), margin=_WINDOW_MARGIN))
            picks.append(t)
            self._count("rounds with trace-back", 1)
            self._count("extended with trace-back", t.size)
            todo = todo[~take]
            if todo.size:
                blocks.append(_found_block(key[ct], parts[-1], parts[-1]["score"] // scale))  # reported units
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
        order = np.argsort(-expect, kind="stable")
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
                        "gaps": r["gap_cols"], "cigar": r["cigar"], "cigar_offsets": r["cigar_offsets"]})
        elif traceback:
            length = r["matches"] + r["mismatches"] + r["gap_cols"]
            out.update({"length": length.astype(np.int32), "nident": r["matches"], "mismatch": r["mismatches"],
                        "gapopen": r["gap_opens"], "gaps": r["gap_cols"], "cigar": r["cigar"],
                        "cigar_offsets": r["cigar_offsets"]})
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
                    if k not in ("cigar", "cigar_offsets"):
                        v[redo] = again[k]
                if traceback:
                    n = int(seq.size)
                    data, offs = ragged.concat([(out["cigar"], out["cigar_offsets"]),
                                                (again["cigar"], again["cigar_offsets"])])
                    pick = np.arange(n, dtype=np.int64)
                    pick[redo] = n + np.arange(redo.size)
                    out["cigar"], out["cigar_offsets"] = _gather(data, offs, pick)
        return out

    # ------------------------------------------------------------------ report

    def _report(self, batch: SequenceBatch, hsps, seq_off, seq_query, seq_strand) -> BlastHits:
        opts, ref = self.options, self.ref
        keep = _purge(hsps)
        self._count("kept by the purge", np.count_nonzero(keep))
        kept = np.nonzero(keep)[0]
        h = {k: v[kept] for k, v in hsps.items() if k not in ("cigar", "cigar_offsets")}
        seq = h["seq"]
        query = seq_query[seq]
        strand = seq_strand[seq]
        qlen = np.diff(np.asarray(batch.offsets, np.int64))
        local_a = h["q_start"] - seq_off[seq]
        local_b = h["q_end"] - seq_off[seq]
        L = qlen[query]
        q_start = np.where(strand > 0, local_a, L - local_b)
        q_end = np.where(strand > 0, local_b, L - local_a)
        s_base = ref.contig_offsets[h["contig"]]
        params = opts.karlin
        spaces = self._search_spaces(qlen)
        evalue = evalues(params, h["score"], spaces[query]) if query.size else np.zeros(0)
        bits = bit_scores(params, h["score"])
        length = h["length"].astype(np.int64)
        pident = 100.0 * h["nident"] / np.maximum(length, 1)
        qcov = 100.0 * (q_end - q_start) / np.maximum(L, 1)
        ok = (evalue <= opts.evalue) & (pident >= opts.perc_identity) & (qcov >= opts.qcov_hsp_perc)
        order = _report_order(query[ok], h["contig"][ok], evalue[ok], h["score"][ok], q_start[ok],
                              h["s_start"][ok], opts.max_target_seqs, opts.max_hsps or 0)
        sel = np.nonzero(ok)[0][order]
        arrays = {
            "query": query[sel].astype(np.int32), "subject": (h["contig"][sel] + ref.first_contig).astype(np.int32),
            "strand": strand[sel].astype(np.int8), "q_start": q_start[sel], "q_end": q_end[sel],
            "s_start": (h["s_start"] - s_base)[sel], "s_end": (h["s_end"] - s_base)[sel],
            "score": h["score"][sel], "bitscore": bits[sel], "evalue": evalue[sel], "length": h["length"][sel],
            "nident": h["nident"][sel], "mismatch": h["mismatch"][sel], "gapopen": h["gapopen"][sel],
            "gaps": h["gaps"][sel],
        }
        arrays["cigar"], arrays["cigar_offsets"] = _gather(hsps["cigar"], hsps["cigar_offsets"], kept[sel])
        for v in arrays.values():
            v.setflags(write=False)
        names = [batch.name(i) for i in range(len(batch))]
        return BlastHits(arrays, names, qlen, ref.db_contig_names, np.diff(ref.db_contig_offsets),
                         np.asarray(batch.codes), np.asarray(batch.offsets, np.int64), ref)


# ---------------------------------------------------------------------- host passes


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


def _extend_budget(backend: Backend, searchers: int = 1) -> int:
    """The bytes one gapped-extension launch on ``backend`` may hold: :data:`_EXTEND_BYTES`, or
    :data:`_EXTEND_SHARE` of a GPU's free memory where that is more; of :data:`_EXTEND_DEVICE_SHARE`
    at most, with ``searchers`` launching on that device at once."""
    free = backend.free_memory()
    share = min(_EXTEND_SHARE, _EXTEND_DEVICE_SHARE / max(1, int(searchers)))
    return _EXTEND_BYTES if free is None else max(_EXTEND_BYTES, int(share * free))


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
    out = {k: np.concatenate([p[k] for p in parts])[back] for k in parts[0] if k not in ("cigar", "cigar_offsets")}
    if traceback:
        data, offs = ragged.concat([(p["cigar"], p["cigar_offsets"]) for p in parts])
        out["cigar"], out["cigar_offsets"] = _gather(data, offs, back)
    return out


def _empty_hsps() -> dict[str, np.ndarray]:
    z64, z32 = np.zeros(0, np.int64), np.zeros(0, np.int32)
    return {"seq": z64, "contig": z32, "q_start": z64, "q_end": z64, "s_start": z64, "s_end": z64, "score": z64,
            "length": z32, "nident": z32, "mismatch": z32, "gapopen": z32, "gaps": z32,
            "cigar": np.zeros(0, np.uint32), "cigar_offsets": np.zeros(1, np.int64)}


@njit(cache=True, inline="always")
def _slot(tk, ts, td, key, cs, cd, mask):
    """Open-addressing slot of cell (key, cs, cd): where it is, or the empty slot it would take."""
    h = (np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) ^ (np.uint64(cs) * np.uint64(0xC2B2AE3D27D4EB4F)) \
        ^ (np.uint64(cd) * np.uint64(0x165667B19E3779F9))
    i = np.int64((h >> np.uint64(17)) & np.uint64(mask))
    while tk[i] != -1 and not (tk[i] == key and ts[i] == cs and td[i] == cd):
        i = (i + 1) & mask
    return i


@njit(cache=True, nogil=True)
def _select_round(key, s, diag, apart):
    """Greedy, in rank order: a candidate is taken unless a taken one of the same key lies within
    ``apart`` of it on the subject and within :data:`_DIAG_BAND` diagonals (``apart`` is the same
    for every candidate of a key). Taken seeds are kept in cells ``apart`` by ``_DIAG_BAND`` wide
    (an open-addressing table): a cell holds at most one, and only the neighbouring cells can
    hold a conflict."""
    n = key.size
    take = np.zeros(n, np.bool_)
    size = 1
    while size < 2 * n + 2:
        size <<= 1
    mask = size - 1
    tk = np.full(size, -1, np.int64)
    ts = np.zeros(size, np.int64)
    td = np.zeros(size, np.int64)
    tc = np.zeros(size, np.int64)
    band = _DIAG_BAND
    for c in range(n):  # rank order
        width = max(apart[c], 1)
        bs = s[c] // width
        bd = diag[c] // band
        ok = True
        for ds in range(-1, 2):
            for dd in range(-1, 2):
                i = _slot(tk, ts, td, key[c], bs + ds, bd + dd, mask)
                if tk[i] != -1:
                    o = tc[i]
                    if abs(s[c] - s[o]) <= width and abs(diag[c] - diag[o]) <= band:
                        ok = False
            if not ok:
                break
        if ok:
            take[c] = True
            i = _slot(tk, ts, td, key[c], bs, bd, mask)
            tk[i], ts[i], td[i], tc[i] = key[c], bs, bd, c
    return take


def _ahead(pool: np.ndarray, key: np.ndarray, s: np.ndarray, diag: np.ndarray, apart: np.ndarray,
           most: int) -> np.ndarray:
    """Candidates of ``pool`` (rank order) to extend ahead of their round (:data:`_AHEAD`): the first
    :data:`_AHEAD_DEPTH` of each conflict cell (key, ``apart`` of subject, :data:`_DIAG_BAND` diagonals),
    the best of every cell first, then the second best, ...; at most ``most`` (all of ``pool`` when it fits).

    >>> _ahead(np.arange(5), np.array([0, 0, 0, 1, 0]), np.array([10, 20, 30, 10, 5000]),
    ...        np.zeros(5, np.int64), np.full(5, 100), 3).tolist()
    [0, 3, 4]
    """
    if most <= 0 or pool.size == 0:
        return pool[:0]
    if pool.size <= most:
        return pool
    cell_s = s[pool] // np.maximum(apart[pool], 1)
    cell_d = diag[pool] // _DIAG_BAND
    order = np.lexsort((np.arange(pool.size), cell_d, cell_s, key[pool]))  # by cell, rank order within
    c = np.stack([key[pool][order], cell_s[order], cell_d[order]])
    first = np.ones(pool.size, bool)
    first[1:] = (c[:, 1:] != c[:, :-1]).any(axis=0)
    starts = np.flatnonzero(first)
    depth = np.empty(pool.size, np.int64)
    depth[order] = np.arange(pool.size) - np.repeat(starts, np.diff(np.append(starts, pool.size)))
    keep = np.flatnonzero(depth < _AHEAD_DEPTH)
    pick = keep[np.lexsort((keep, depth[keep]))][:most]
    return pool[np.sort(pick)]


def _reach(qa: np.ndarray, qb: np.ndarray, mq: np.ndarray, ms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The query's reach of seeds ``(mq, ms)`` on queries ``[qa, qb)``: the text the query's extent
    on the seed's diagonal covers, and a quarter of the query's length (at least 64) each side."""
    slack = np.maximum(64, (qb - qa) // 4)
    return ms - (mq - qa) - slack, ms + (qb - mq) + slack


@njit(cache=True, nogil=True)
def _chain_extent(by, key, diag, s_lo, s_hi, near, lo, hi):
    """For every HSP, ``lo``/``hi`` = the least ``s_lo`` and the greatest ``s_hi`` of the HSPs of its
    key whose diagonal is within ``near`` of its own (itself included). ``by``: the HSPs in
    (key, diagonal) order. One sweep with the window's two ends and two monotone queues (its
    least start, its greatest end)."""
    n = by.size
    qmin = np.empty(n, np.int64)  # positions in ``by``, lo values rising from head to tail
    qmax = np.empty(n, np.int64)  # hi values falling
    h1 = t1 = h2 = t2 = 0
    a = 0
    b = 0  # positions a..b-1 of ``by`` are in the window
    for p in range(n):
        i = by[p]
        while b < n and key[by[b]] == key[i] and diag[by[b]] <= diag[i] + near:
            j = by[b]
            while t1 > h1 and s_lo[by[qmin[t1 - 1]]] >= s_lo[j]:
                t1 -= 1
            qmin[t1] = b
            t1 += 1
            while t2 > h2 and s_hi[by[qmax[t2 - 1]]] <= s_hi[j]:
                t2 -= 1
            qmax[t2] = b
            t2 += 1
            b += 1
        while key[by[a]] != key[i] or diag[by[a]] < diag[i] - near:
            a += 1
        while qmin[h1] < a:
            h1 += 1
        while qmax[h2] < a:
            h2 += 1
        lo[i] = s_lo[by[qmin[h1]]]
        hi[i] = s_hi[by[qmax[h2]]]


def _found_block(key: np.ndarray, res: dict[str, np.ndarray], score: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """One round's found HSPs as :func:`_inside` reads them: rows key, q_start, q_end, s_start,
    s_end, lowest and highest diagonal ± :data:`_DIAG_NEAR` and ``score`` (0 if None), each HSP a
    column, sorted by key, then subject start (equal pairs in round order); and the longest
    subject extent.

    One stable sort of a combined 64-bit key and a gather per row (a round holds up to ~1.5M HSPs
    on a GPU: ``np.lexsort`` and a gather of whole HSP records took ~1 s there).

    >>> rows, reach = _found_block(np.array([1, 0, 1]), {"q_start": np.array([0, 1, 2]), "q_end":
    ...     np.array([5, 6, 7]), "s_start": np.array([30, 40, 10]), "s_end": np.array([35, 46, 17])})
    >>> rows[[0, 3]].tolist(), reach
    ([[0, 1, 1], [40, 10, 30]], 7)
    """
    qa, qb, sa, sb = (np.asarray(res[k], np.int64) for k in ("q_start", "q_end", "s_start", "s_end"))
    key = np.asarray(key, np.int64)
    if key.size and key.max() < (1 << 23) and sa.max() < (1 << 40) and min(key.min(), sa.min()) >= 0:
        order = np.argsort(key * (1 << 40) + sa, kind="stable")
    else:
        order = np.lexsort((sa, key))
    rows = np.zeros((8, key.size), np.int64)
    for j, column in enumerate((key, qa, qb, sa, sb)):
        rows[j] = column[order]
    d0, d1 = rows[3] - rows[1], rows[4] - rows[2]
    np.subtract(np.minimum(d0, d1), _DIAG_NEAR, out=rows[5])
    np.add(np.maximum(d0, d1), _DIAG_NEAR, out=rows[6])
    if score is not None:
        rows[7] = np.asarray(score, np.int64)[order]
    return rows, int((sb - sa).max()) if key.size else 0


def _outside(idx: np.ndarray, key: np.ndarray, q: np.ndarray, s: np.ndarray,
             blocks: list[tuple[np.ndarray, int]]) -> np.ndarray:
    """The seeds ``idx`` whose point (q, s) lies in no found HSP of its key (:func:`_inside`), the
    HSPs given as one sorted block per round with its longest subject extent (sorting each round's
    new HSPs only: all of them, re-sorted every round, cost seconds with a GPU's 1.5M HSPs)."""
    for block, reach in blocks:
        with numba_guard():  # a parallel pass (as every host pass beside another searcher's)
            inside = _inside(key[idx], q[idx], s[idx], block, reach)
        idx = idx[~inside]
    return idx


def _contained(key: np.ndarray, qa: np.ndarray, qb: np.ndarray, sa: np.ndarray, sb: np.ndarray,
               score: np.ndarray, blocks: list[tuple[np.ndarray, int]]) -> np.ndarray:
    """Whether each HSP ``[qa, qb) x [sa, sb)`` of ``key`` with ``score`` lies inside one found HSP of
    its key of at least that score (BLAST+'s containment test of its trace-back): its first and its
    last cell both inside that HSP's query and subject ranges and within :data:`_DIAG_NEAR` of its
    diagonals (``blocks``: :func:`_found_block`'s with scores, one a round)."""
    hsps = [np.asarray(a, np.int64) for a in (key, qa, qb, sa, sb, score)]
    out = np.zeros(key.size, bool)
    for block, reach in blocks:
        with numba_guard():  # a parallel pass, as in _outside
            out |= _inside_one(*hsps, block, reach)
    return out


@njit(parallel=True, cache=True, nogil=True)
def _inside_one(key, qa, qb, sa, sb, score, rect, span):
    """:func:`_contained` against one block: for each HSP, whether a rect of its key with a score of
    at least its own holds both its first cell (qa, sa) and its last (qb - 1, sb - 1). Each HSP on
    its own: a parallel pass that holds no GIL (the searchers of a GPU run side by side on threads)."""
    out = np.zeros(key.size, np.bool_)
    keys = rect[0]
    for i in numba.prange(key.size):
        a = np.searchsorted(keys, key[i], side="left")
        b = np.searchsorted(keys, key[i], side="right")
        # rects a..b-1 are sorted by subject start: those starting in [sa - span, sa] can hold (qa, sa)
        hi = a + np.searchsorted(rect[3, a:b], sa[i], side="right")
        d0 = sa[i] - qa[i]
        d1 = sb[i] - qb[i]
        r = hi - 1
        while r >= a and rect[3, r] >= sa[i] - span:
            if (rect[7, r] >= score[i] and rect[1, r] <= qa[i] and qb[i] <= rect[2, r] and sb[i] <= rect[4, r]
                    and rect[5, r] <= d0 <= rect[6, r] and rect[5, r] <= d1 <= rect[6, r]):
                out[i] = True
                break
            r -= 1
    return out


@njit(cache=True, nogil=True)
def _inside(key, q, s, rect, span):
    """Whether seed point (q, s) lies in a found HSP of its key (``rect``: :func:`_found_block`'s
    rows, sorted by key, then subject start; ``span`` its longest subject extent): inside its query and subject ranges and
    within ``_DIAG_NEAR`` of its diagonals (a repeat inside the rectangle but off the alignment's
    path is extended on its own, as BLAST+ does). A point is an HSP of one cell and any score."""
    return _inside_one(key, q, q + 1, s, s + 1, np.full(key.size, np.iinfo(np.int64).min), rect, span)


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

"""BLASTN-style search of an index's text: :class:`BlastSearcher` (``gseek search --task megablast|blastn|...``).

Stages (``docs/blast.md``): the queries' lookup table and presence vector
(host), then on the backend the scan of the whole 2-bit text, the lookup,
mini-extension to the word size and ungapped X-drop extension
(:mod:`gseek.blast.seeds`), gapped X-drop extension in rounds and with trace-back
(:mod:`gseek.blast.gapped`, its host passes :mod:`gseek.blast.rounds`), then on
the host BLAST+'s statistics, purging, ordering and limits (:mod:`gseek.blast.purge`;
the results: :mod:`gseek.blast.hits`). Results are the same on every backend and for
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

import dataclasses
import math
from typing import Any

import numpy as np

from gseek import ragged
from gseek.backend import Backend, get_backend, numba_guard
from gseek.dp.runs import LazyRuns
from gseek.dp.scoring import Scoring
from gseek.errors import OptionError
from gseek.index.text import ReferenceText
from gseek.seqio.batch import SequenceBatch

from .compact_table import compact_lookup
from .device_table import QueryMask, build_on
from .dust import dust_mask
from .gapped import _COUNTS_LOCK, GappedPasses, _Clock
from .hits import BlastHits, HitArrays, PreparedQueries
from .lookup import lookup_of_words, query_strands, seeding, template_word_codes, word_codes
from .masking import identities_as_given
from .options import BlastOptions
from .purge import _purge, _report_order
from .seeds import DiscWords, device_queries, seed_candidates
from .small_table import SMALL_TABLE_WORDS, resident_table, sparse_lookup
from .stats import bit_scores, effective_search_space, evalues

__all__ = ["BlastSearcher", "BlastHits"]


#: Query lengths whose effective search spaces a searcher keeps (:meth:`BlastSearcher._search_spaces`).
_SPACES_KEPT = 1 << 16
#: The query strands searched, by ``--strand`` (+1: the query, -1: its reverse complement).
_STRAND_SIGNS = {"both": (1, -1), "plus": (1,), "minus": (-1,)}


class BlastSearcher(GappedPasses):
    """One configured BLAST-style search of an index (its ``text`` part) on one backend.

    Arguments:
        index: a :class:`~gseek.index.Index` (or a path to one: only its text is loaded).
        task: ``megablast``, ``blastn``, ``blastn-short`` or ``dc-megablast`` (BLAST+'s presets).
        device, threads: the backend (``auto``, ``cpu``, ``gpu``, ``gpu:N``).
        shard: ``(i, n)``: search only shard ``i`` of ``n`` of the database
            (:meth:`ReferenceText.shard <gseek.index.text.ReferenceText.shard>`; also given by
            passing a shard as ``index``), with the whole database's statistics and subject
            numbers, so that :func:`gseek.blast.shards.merge_hits` of every shard's hits is the
            whole search's (``docs/blast.md``, "Database split").
        options: a :class:`~gseek.blast.options.BlastOptions`, whole (its task is the search's;
            ``task`` is then not given).
        **overrides: overrides of :class:`~gseek.blast.options.BlastOptions` (``evalue``,
            ``word_size``, ``reward``, ``penalty``, ``gap_open``, ``gap_extend``, ``dust``, ...),
            checked together (on ``options`` where given); unknown names raise
            :class:`~gseek.errors.OptionError`.
    """

    def __init__(self, index: Any, task: str | None = None, device: str | Backend = "auto",
                 threads: int | None = None, shard: tuple[int, int] | None = None,
                 options: BlastOptions | None = None, **overrides: Any) -> None:
        if options is None:
            self.options = BlastOptions.for_task(task or "megablast", **overrides)
        elif task is not None and task != options.task:
            raise OptionError(f"task {task!r} and options of task {options.task!r}: give one of them")
        else:
            self.options = options.replace(**overrides) if overrides else options
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
        #: Effective search spaces by query length (:meth:`_search_spaces`).
        self._spaces: dict[int, float] = {}
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
            mask |= dust_mask(codes, offsets, *opts.dust, backend=self.backend if self.backend.name == "gpu" else None)
        if opts.lcase_masking and batch.soft_mask.size:
            for a, b in np.asarray(batch.soft_mask).tolist():
                mask[a:b] = 1
        strands = _STRAND_SIGNS[opts.strand]
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
        lut_w, templates = self.options.lut_word, self.options.templates
        with numba_guard():
            # on the CPU, a table of the words present (no 4^w offsets written); a GPU's kernels read a direct one
            table_of = compact_lookup if self.backend.name == "cpu" else lookup_of_words
            if templates:  # dc-megablast: a table a template (the span's validity is the same for each)
                words = [template_word_codes(seq_codes, seq_off, t, seq_mask) for t in templates]
                tables = tuple(table_of(w, lut_w) for w in words)
                return PreparedQueries(self.options, batch, seq_codes, seq_off, seq_query, seq_strand, tables[0],
                                       seeding(words[0]), tables[1:])
            if self.backend.name == "gpu" and seq_codes.size > SMALL_TABLE_WORDS:  # built on the device
                return PreparedQueries(self.options, batch, seq_codes, seq_off, seq_query, seq_strand,
                                       QueryMask(lut_w, seq_mask), None)
            words = word_codes(seq_codes, seq_off, lut_w, seq_mask)  # once: the table's and the seeding flags
            del seq_mask  # a byte a base: the words hold it now (a 50 Mbp query: 100 MB less at the table's peak)
            small = words.size <= SMALL_TABLE_WORDS  # its words alone, laid into resident arrays
            table = sparse_lookup(words, lut_w) if small else table_of(words, lut_w)
            valid = (words >= 0).view(np.uint8) if small else seeding(words)  # small: no parallel pass's start
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
            with resident_table(backend, table) as table:
                codes = seq_codes
                if isinstance(table, QueryMask):
                    table, valid, codes = build_on(backend, table, seq_codes, seq_off)
                qs = device_queries(backend, codes, seq_off, valid, table)
                triggers = self._ungapped_cutoffs(seq_query) if opts.ungapped else self._triggers(batch, seq_query)
                cand, found = seed_candidates(backend, self.ref, qs, lut_w, opts.stride, opts.word_size, opts.reward,
                                              opts.penalty, self._n_score,
                                              opts.raw_xdrop(opts.xdrop_ungap, ungapped=True), triggers,
                                              self.pair_chunk, discs=self._discs(qs, prep))
            clock.lap("scan, lookup, mini-extension, ungapped extension")
            # the lookup table (4^w offsets: 16 MB for the blastn task's w = 11, 64 MB for megablast's 12) and
            # the seeding flags are not read past the scan (the candidates are on the host): let go before the
            # extensions, unless the caller prepared the queries and holds them
            qs = dataclasses.replace(qs, valid=None, first=None, positions=None, pv=None, rank=None)
            del table, valid, prep
            if opts.ungapped:
                hsps = self._ungapped_hsps(cand, seq_codes)
            else:
                hsps = self._gapped(qs, seq_codes, seq_off, seq_query, cand, clock)
        if not opts.soft_masking:  # hard masking: identities on the query as given, as BLAST+ reports them
            given = query_strands(batch.codes, batch.offsets, np.zeros(len(batch.codes), np.uint8),
                                  _STRAND_SIGNS[opts.strand])[0]
            identities_as_given(hsps, seq_codes, given, self.ref.bases)
        hits = self._report(batch, hsps, seq_off, seq_query, seq_strand)
        clock.lap("statistics, purge, order")
        self.counts["queries"] += len(batch)
        self.counts["seeds"] += found.seeds
        with _COUNTS_LOCK:
            for what, n in (("most pairs in a seed chunk", found.most_pairs),
                            ("most seeds in a seed chunk", found.most_seeds)):
                self.counts[what] = max(self.counts.get(what, 0), n)
        self.counts["gapped"] += len(cand)
        return hits

    def _discs(self, qs, prep: PreparedQueries) -> tuple:
        """dc-megablast's seed passes: each template's queries (its table on the device) and words; the
        other template's hits are first hits of each pass's two-hit rule too."""
        templates = self.options.templates
        if not templates:
            return ()
        window = self.options.two_hit_window
        out = [(qs, DiscWords(templates[0], templates[1] if len(templates) > 1 else None, window))]
        for t, table in zip(templates[1:], prep.more_tables):
            out.append((device_queries(self.backend, prep.seq_codes, prep.seq_off, prep.valid, table),
                        DiscWords(t, templates[0], window)))
        return tuple(out)

    def _search_spaces(self, qlen: np.ndarray) -> np.ndarray:
        """Each query length's effective search space, computed once a length (a search asks for its
        queries' several times, and a batch's lengths repeat: 4 x 600 of BLAST+'s length adjustments in
        Python were a third of a warm megablast search of 600 x 500 bp on the CPU)."""
        params, known = self.options.karlin, self._spaces
        lengths, where = np.unique(np.asarray(qlen, np.int64), return_inverse=True)
        if len(known) > _SPACES_KEPT:
            known.clear()
        for m in lengths.tolist():
            if m not in known:
                known[m] = effective_search_space(params, m, self.db_length, self.db_sequences) if m else 1
        return np.array([known[m] for m in lengths.tolist()], dtype=np.float64)[where.reshape(-1)]

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
                "gaps": zeros.copy(),
                "runs": LazyRuns.of(np.concatenate(runs) if runs else np.zeros(0, np.uint32), ragged.offsets(cig_len))}

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

    # ------------------------------------------------------------------ report

    def _report(self, batch: SequenceBatch, hsps, seq_off, seq_query, seq_strand) -> BlastHits:
        opts, ref = self.options, self.ref
        keep = _purge(hsps)
        self._count("kept by the purge", np.count_nonzero(keep))
        kept = np.nonzero(keep)[0]
        h = {k: v[kept] for k, v in hsps.items() if k != "runs"}
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
        for v in arrays.values():
            v.setflags(write=False)
        # the rows' CIGAR runs: left where the extensions made them, gathered if an output reads them
        arrays = HitArrays(arrays, hsps["runs"].take(kept[sel]))
        names = [batch.name(i) for i in range(len(batch))]
        return BlastHits(arrays, names, qlen, ref.db_contig_names, np.diff(ref.db_contig_offsets),
                         np.asarray(batch.codes), np.asarray(batch.offsets, np.int64), ref)

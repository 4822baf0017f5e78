"""Complete k-mismatch read mapping (SOAP3's job): :class:`Mapper`.

Every placement of a read with at most ``k`` mismatches, on both strands, is
found and none is invented; an N in the read or the reference is a
mismatch; no placement spans two contigs. The stages, each one code path for
both backends (``docs/architecture.md``, read mapping):

1. **pieces** -- each strand of each read is cut into ``s`` pieces with
   mismatch budgets ``e_i`` summing to ``k - s + 1`` (pigeonhole: a
   placement with at most ``k`` mismatches has a piece with at most ``e_i``).
   ``s = k + 1`` (all budgets 0: exact pieces) when the pieces are at least
   ``min_piece`` long; shorter reads or larger ``k`` get fewer, longer pieces
   with budgets (the *approximate* mode).
2. **search** -- exact pieces: FM-index backward search with the w-gram jump
   (``fmindex.backward_search``); pieces with a budget: backtracking search
   (``kmismatch.dfs_count`` / ``dfs_fill``, count -> prefix sum -> fill).
3. **locate** -- every row of every interval through the sampled SA
   (``fmindex.locate_fill``) and the segment table (``text_to_contig``).
4. **verify** -- Hamming distance on the 2-bit reference with the N masks
   (``kmismatch.verify``); the *first finder* rule keeps each placement once
   without a sort. In approximate mode, windows holding a reference N (which
   the FM-index cannot walk through) are found by the same piece searches in
   a small second FM-index, of the *flanks* of the N runs with every N read
   as a base (:func:`flank_regions`): that can only lower a piece's
   mismatches, so the pigeonhole still holds; the candidates are verified
   on the real text, where an N is a mismatch again.
5. **select** (host, Numba passes) -- best stratum, counts of best and
   second-best placements, a deterministic choice among ties, ``-k`` /
   ``--all``, MAPQ. ``docs/sam.md`` documents the output.

>>> import os, tempfile
>>> from gseek.index import Index
>>> fasta = os.path.join(tempfile.mkdtemp(), "ref.fa")
>>> _ = open(fasta, "w").write(">chr1\\nGATTACAGATTACATTTTCCCCGGGGAAAACGTACGTTGCA\\n")
>>> idx = Index.build(fasta, wgram=4, sa_sample=4, device="cpu")
>>> mapper = Mapper(idx, mismatches=1)
>>> mapper
Mapper(mismatches=1, device='cpu')
>>> res = mapper.map(["ACATTTTCCCCGGTGA", "TGCAACGTACGTTTTC"])
>>> res.contig.tolist(), res.pos.tolist(), res.strand.tolist(), res.mismatches.tolist()
([0, 0], [11, 25], [1, -1], [1, 0])
>>> res.n_best.tolist(), res.mapq.tolist()
([1, 1], [60, 60])
>>> print(res.hit_text(0))
read0	chr1	11	+	1
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from typing import Any, overload

import numpy as np

from gseek import ragged
from gseek.backend import Backend, get_backend
from gseek.encode import reverse_complement
from gseek.errors import OptionError
from gseek.options import DEFAULT_MISMATCHES, MAX_MIN_PIECE, MAX_MISMATCHES, MapOptions, check_map_options
from gseek.index import Index
from gseek.index.search import FmArrays, backward_search, locate_rows, pattern_arrays, text_to_contig
from gseek.index.text import ReferenceText
from gseek.kernels import kmismatch
from gseek.seqio import FastxReader, SequenceBatch

from .approx import FlankIndex, build_flank_index, dfs_intervals
from .hits import Hit
from .pieces import default_min_piece, piece_layout, piece_plan
from .result import STATUS_SEARCHED, STATUS_TOO_LONG, STATUS_TOO_SHORT, MappingResult, Placements
from .select import select_placements
from .verify import verify_candidates

__all__ = ["Mapper", "DEFAULT_MISMATCHES", "MAX_MISMATCHES", "MIN_READ_LENGTH", "MAX_READ_LENGTH",
           "check_map_options"]


assert MAX_MISMATCHES == kmismatch.MAX_MISMATCHES and MAX_MIN_PIECE == kmismatch.MAX_DFS_DEPTH // 2
#: Shorter reads (an empty record too) are reported unmapped with ``YF:Z:TOO_SHORT``.
MIN_READ_LENGTH = 16
#: Longer reads are reported unmapped with ``YF:Z:TOO_LONG`` (not dropped).
MAX_READ_LENGTH = 1000


class Mapper:
    """Complete k-mismatch read mapper over an :class:`~gseek.index.Index`.

    Arguments:
        index: an :class:`~gseek.index.Index` holding the ``fm``, ``sa`` and ``text``
            parts (``wgram`` speeds up exact pieces), or the path of a saved one
            (loaded on ``device``, as mappy's ``Aligner("ref.mmi")``).
        mismatches: ``k``, 0..8; an N in the read or the reference counts as one.
        options: the options below as one :class:`~gseek.options.MapOptions`
            (or given as the second argument), instead of keywords.
        max_alignments: report up to this many placements per read, best
            strata first (``-k N``).
        report_all: report every placement (``--all``), up to ``max_hits``.
        max_hits: cap on the placements reported per read with ``report_all``;
            a capped read carries ``ZH:i`` (its total) in SAM.
        norc, nofw: skip the reverse-complement / forward strand.
        xa_limit: best-stratum mode: list the other best and second-best
            placements in XA when there are at most this many.
        min_piece: shortest piece searched exactly (default from the reference
            size: ``max(10, ceil(log4(bases)))``, one random hit per piece).
        device: backend for the search (default: the index's).

    Default reporting is the best stratum: one primary record per read, the
    tie among equally good placements broken by a hash of the read name
    (deterministic, independent of batches and threads; ``docs/sam.md``).

    ``stats`` counts the work of every :meth:`map` call so far: ``reads``,
    ``candidates`` (placements verified), ``flank_candidates`` (of them, found
    in the flank text next to reference N) and ``flank_bases`` (size of that
    text; 0 until a read needs it).

    Invalid options raise :class:`~gseek.errors.OptionError`.
    :meth:`map` of a batch (a list of strings or a
    :class:`~gseek.SequenceBatch`) returns a
    :class:`~gseek.mapper.MappingResult` (struct-of-arrays: the fast path);
    ``map(seq)`` of one string returns that read's hits, as mappy's
    ``Aligner.map``; :meth:`map_file` yields ``(name, hits)`` per read of a
    FASTA/FASTQ file, mapped in batches. SAM files are written by
    :func:`gseek.map_files`.

    >>> import os, tempfile
    >>> fasta = os.path.join(tempfile.mkdtemp(), "ref.fa")
    >>> _ = open(fasta, "w").write(">chr1\\nGATTACAGATTACATTTTCCCCGGGGAAAACGTACGTTGCA\\n")
    >>> mapper = Mapper(Index.build(fasta, wgram=4, device="cpu"), mismatches=1)
    >>> result = mapper.map(["ACATTTTCCCCGGTGA", "TGCAACGTACGTTTTC", "ACGT"])
    >>> result
    MappingResult(reads=3, mapped=2, hits=2)
    >>> print("\\n".join(result.hit_text(j) for j in range(len(result))))
    read0	chr1	11	+	1
    read1	chr1	25	-	0
    >>> result.status.tolist(), mapper.stats["reads"]   # read2 is too short to search
    ([0, 0, 2], 3)
    >>> for hit in mapper.map("ACATTTTCCCCGGTGA"):   # one read: its hits (mappy's Aligner.map)
    ...     print(hit.ctg, hit.r_st, hit.r_en, hit.strand, hit.mapq, hit.NM, hit.cigar_str, hit.MD, hit.is_primary)
    chr1 11 27 1 60 1 16M 13G2 True
    """

    _defaults = dict(max_alignments=None, report_all=False, max_hits=None, norc=False, nofw=False, xa_limit=3,
                     min_piece=None)

    def __init__(
        self,
        index: Index | str | os.PathLike,
        mismatches: int | MapOptions = DEFAULT_MISMATCHES,
        *,
        options: MapOptions | None = None,
        device: str | Backend | None = None,
        **keywords: Any,
    ) -> None:
        if isinstance(mismatches, MapOptions):
            options, mismatches = mismatches, DEFAULT_MISMATCHES
        if options is None:  # the keywords made into the value, checked once here
            unknown = sorted(set(keywords) - set(MapOptions.field_names()))
            if unknown:
                raise OptionError(f"unknown Mapper option(s): {', '.join(unknown)} "
                                  f"(known: {', '.join(MapOptions.field_names())}, options, device)")
            options = MapOptions(mismatches, **keywords)
        elif keywords or mismatches != DEFAULT_MISMATCHES:
            raise OptionError("give the mapping options as options=MapOptions(...) or as keywords, not both")
        if isinstance(index, (str, os.PathLike)):  # a saved index's path, as mappy.Aligner("ref.mmi")
            index = Index.load(index, device="auto" if device is None else device)
        elif not isinstance(index, Index):
            raise TypeError(f"Mapper needs an Index or the path of a saved one, not {type(index).__name__}")
        #: The options, whole (:class:`~gseek.options.MapOptions`).
        self.options = options
        max_alignments, report_all, max_hits = options.max_alignments, options.report_all, options.max_hits
        norc, nofw, xa_limit, min_piece = options.norc, options.nofw, options.xa_limit, options.min_piece
        mismatches = options.mismatches
        missing = [p for p in ("occ", "dollar_rows", "sa_mark", "sa_samples", "text", "amb_runs")
                   if p not in index.arrays]
        if missing:
            where = index.path or index.header.get("source", "index")
            if index.header.get("groups") == ["contigs", "text"]:
                raise OptionError(f"{where}: built with `gseek index --parts text` (the BLAST-style search "
                                  "only); read mapping needs the whole index (`gseek index REF`)")
            raise OptionError(f"{where}: mapping needs index parts fm, sa and text; missing {', '.join(missing)}")
        auto_piece = default_min_piece(int(index.stats["bases"]))
        self.index = index
        self.k = int(mismatches)
        self.max_alignments = None if max_alignments is None else int(max_alignments)
        self.report_all = bool(report_all)
        self.max_hits = None if max_hits is None else int(max_hits)
        self.norc = bool(norc)
        self.nofw = bool(nofw)
        self.xa_limit = int(xa_limit)
        self.min_piece = int(min_piece) if min_piece is not None else auto_piece
        self._min_piece_given = min_piece
        self.backend = index.backend if device is None else get_backend(device)
        self.stats = dict(reads=0, candidates=0, flank_candidates=0, flank_bases=0)
        self._flanks: FlankIndex | None = None
        #: the reference text (host), shared with the SAM formatter
        self.reference = ReferenceText.from_index(index)
        with self.backend.active():
            b = self.backend
            self.fm = index.device_arrays() if b is index.backend else FmArrays.upload(
                b, index.arrays, index.header["C"], index.pos64)
            self.ref = self.reference.on(b)

    def __repr__(self) -> str:
        extra = [f"{k}={getattr(self, '_min_piece_given' if k == 'min_piece' else k)!r}"
                 for k, v in self._defaults.items()
                 if getattr(self, "_min_piece_given" if k == "min_piece" else k) != v]
        return f"Mapper(mismatches={self.k}, {', '.join(extra + [f'device={self.backend.name!r}'])})"

    def warm_up(self) -> None:
        """Load the device kernels of a search (one tiny batch) so that the first
        real batch does not pay for it; the work counters in :attr:`stats` are
        left as they were. The reads are long enough for exact pieces, so the
        flank index (approximate mode) is not built here."""
        counters = {key: self.stats[key] for key in ("reads", "candidates", "flank_candidates")}
        rng = np.random.default_rng(0)
        length = min(MAX_READ_LENGTH, max(100, (self.k + 1) * self.min_piece))
        self.search(_as_batch(["".join(rng.choice(list("ACGT"), length)) for _ in range(2)]))
        self.backend.synchronize()
        self.stats.update(counters)

    def piece_plan(self, length: int) -> tuple[list[int], list[int]]:
        """Piece starts (in the read, plus the end) and budgets for a read of ``length``
        (:func:`gseek.mapper.pieces.piece_plan` with this mapper's ``k`` and ``min_piece``)."""
        return piece_plan(length, self.k, self.min_piece)

    # ------------------------------------------------------------------ map

    @overload
    def map(self, reads: str) -> list[Hit]: ...

    @overload
    def map(self, reads: SequenceBatch | list[str]) -> MappingResult: ...

    def map(self, reads):
        """Map one read (a string: its list of :class:`~gseek.mapper.hits.Hit`,
        primary first, empty when unmapped) or a batch of reads (a DNA
        :class:`~gseek.SequenceBatch` or a list of strings: a
        :class:`~gseek.mapper.MappingResult`, read ``i`` named ``read{i}`` for a list).

        Reads shorter than :data:`MIN_READ_LENGTH` (empty ones too) and longer
        than :data:`MAX_READ_LENGTH` are not searched: they are reported
        unmapped, with ``status`` :data:`STATUS_TOO_SHORT` / :data:`STATUS_TOO_LONG`.
        ``map(batch)`` is ``select(batch, search(batch))``; ``map(seq)`` is
        ``map([seq])``'s one read's hits. A batch is much faster than one
        read at a time: map many reads at once (or use :meth:`map_file`).
        """
        one = isinstance(reads, str)
        batch = _as_batch([reads] if one else reads)
        result = self.select(batch, self.search(batch))
        return result.read_view(0).hits if one else result

    def map_file(self, path: str | os.PathLike, *, max_records: int = 1 << 16,
                 **reader_options: Any) -> Iterator[tuple[str, list[Hit]]]:
        """``(name, hits)`` for every read of a FASTA/FASTQ file (plain or gzip, ``-``
        for stdin), in file order; the reads are mapped in batches of at most
        ``max_records`` (:class:`~gseek.FastxReader`, whose other options
        ``reader_options`` takes), each batch as :meth:`map`, so a read's hits are
        the same as in a batch of its own. The hits are views on each batch's
        :class:`~gseek.mapper.MappingResult`.
        """
        for batch in FastxReader(path, max_records=max_records, **reader_options):
            for read in self.map(batch):
                yield read.name, read.hits

    def search(self, batch: SequenceBatch) -> Placements:
        """Every placement of every read of ``batch`` (the device stages).

        The pipeline's prelim stage: everything up to verification runs on
        the mapper's device; what comes back is one row per placement found.
        :meth:`select` turns it into a :class:`MappingResult` on the host (and
        may run in another thread: it reads only the mapper's options).
        """
        batch = _as_batch(batch)
        lengths = batch.lengths
        status = np.full(lengths.size, STATUS_SEARCHED, dtype=np.int8)
        status[lengths > MAX_READ_LENGTH] = STATUS_TOO_LONG
        status[lengths < MIN_READ_LENGTH] = STATUS_TOO_SHORT
        searched = np.flatnonzero(status == STATUS_SEARCHED)
        with self.backend.active():  # this mapper's GPU, whichever thread calls
            found = self._search(batch, searched)
        self.stats["reads"] += len(batch)
        return Placements(status, *found)

    def _search(self, batch: SequenceBatch, searched: np.ndarray):
        """All placements (read, strand, contig, pos, mismatches) of the searched reads:
        pieces -> exact search / backtracking -> locate -> verify.

        Only the reads go to the device (codes and offsets, one copy each);
        strand reads, pieces, budgets and the word-aligned packed reads are
        built there, and the placements come back.
        """
        b, xp, k = self.backend, self.backend.xp, self.k
        n = int(searched.size)
        empty = tuple(np.zeros(0, dtype=t) for t in (np.int64, np.int8, np.int32, np.int64, np.int16))
        if n == 0:
            return empty
        if n == len(batch):
            codes_h, offsets_h = batch.codes, batch.offsets
        else:
            codes_h, offsets_h = ragged.gather(batch.codes, batch.offsets, searched)
        codes = b.asarray(codes_h, dtype=np.uint8)
        offsets = b.asarray(offsets_h, dtype=np.int64)

        # strand reads: forward copies, then reverse complements
        parts, strands = [], []
        if not self.nofw:
            parts.append(codes)
            strands.append(1)
        if not self.norc:
            parts.append(reverse_complement(b, codes, offsets, check=False))
            strands.append(-1)
        sr_codes = xp.concatenate(parts) if len(parts) > 1 else parts[0]
        sr_off = ragged.offsets(xp.tile(offsets[1:] - offsets[:-1], len(parts)))

        pieces = piece_layout(xp, sr_off, k, self.min_piece)
        piece_off, budget, approx = pieces["offsets"], pieces["budget"], pieces["approx"]
        # max, not any: CuPy's any() over a whole array is a CUB block reduction that NVRTC compiles for
        # each block size it picks by length (~3 s each on a fresh install); max is CuPy's prebuilt CUB
        any_approx = bool(approx.size) and bool(approx.max())
        search = xp.flatnonzero(budget > 0) if any_approx else xp.zeros(0, dtype=np.int64)
        if search.size:
            longest = int((piece_off[search + 1] - piece_off[search]).max())
            assert longest <= kmismatch.MAX_DFS_DEPTH, longest

        # search: exact pieces by backward search (w-gram jump), others by backtracking
        lo, hi = backward_search(b, self.fm, sr_codes, piece_off)
        if any_approx:
            exact = budget == 0
            lo = xp.where(exact, lo, 0)
            hi = xp.where(exact, hi, 0)
        keep = xp.flatnonzero(hi > lo)
        iv_lo, iv_hi, iv_piece = lo[keep], hi[keep], keep.astype(np.int64)
        if search.size:
            dl, dh, dp = dfs_intervals(b, self.fm, sr_codes, piece_off, budget, search.astype(np.int64))
            iv_lo, iv_hi, iv_piece = (xp.concatenate([x, y]) for x, y in ((iv_lo, dl), (iv_hi, dh),
                                                                          (iv_piece, dp)))

        # locate every row of every interval
        cand_piece, cand_contig, cand_pos = self._locate(self.fm, iv_lo, iv_hi, iv_piece)

        # windows holding a reference N (approximate mode only): the same piece
        # searches in the flank text; cand_piece -1 - p marks "found there through piece p"
        n_flank = 0
        if self.reference.has_amb and any_approx:
            flanks = self._flank_index()
            search_f = xp.flatnonzero(approx[pieces["read"]]).astype(np.int64)
            fl_lo, fl_hi, fl_piece = dfs_intervals(b, flanks.fm, sr_codes, piece_off, budget, search_f)
            f_piece, f_region, f_pos = self._locate(flanks.fm, fl_lo, fl_hi, fl_piece)
            n_flank = int(f_piece.size)
            cand_piece = xp.concatenate([cand_piece, -1 - f_piece])
            cand_contig = xp.concatenate([cand_contig, flanks.contig[f_region]])
            cand_pos = xp.concatenate([cand_pos, flanks.start[f_region] + f_pos])
        cand_sr = pieces["read"][xp.where(cand_piece < 0, -1 - cand_piece, cand_piece)]

        out_start, out_mm = verify_candidates(b, self.ref, self.reference.has_amb, sr_codes, sr_off, pieces, k,
                                              cand_sr, cand_piece, cand_contig, cand_pos)
        self.stats["candidates"] += int(cand_sr.size)
        self.stats["flank_candidates"] += n_flank
        ok = xp.flatnonzero(out_mm >= 0)
        sr = b.to_host(cand_sr[ok])
        strand_of = np.array(strands, dtype=np.int8)
        return (searched[sr % n], strand_of[sr // n], b.to_host(cand_contig[ok]).astype(np.int32),
                b.to_host(out_start[ok]), b.to_host(out_mm[ok]).astype(np.int16))

    def _locate(self, fm: FmArrays, lo: Any, hi: Any, piece: Any) -> tuple[Any, Any, Any]:
        """(piece, contig, position) of every row of every interval of FM-index ``fm``."""
        which, text_pos = locate_rows(self.backend, fm, lo, hi, sort=False)
        contig, pos = text_to_contig(self.backend, fm, text_pos)
        return piece[which], contig, pos

    def _flank_index(self) -> FlankIndex:
        """The FM-index of the flanks of the reference N runs (built at first use, then kept;
        :func:`gseek.mapper.approx.build_flank_index`)."""
        if self._flanks is None:
            longest = min(MAX_READ_LENGTH, (self.k + 1) * self.min_piece - 1)
            self._flanks = build_flank_index(self.reference, self.backend, self.k, longest)
            self.stats["flank_bases"] = self._flanks.bases
        return self._flanks

    # ------------------------------------------------------------------ select

    def select(self, batch: SequenceBatch, placements: Placements) -> MappingResult:
        """Report the :meth:`search` placements of ``batch`` (host; Numba,
        :func:`gseek.mapper.select.select_placements`): best stratum, counts, the tie
        choice, ``-k`` / ``--all``, MAPQ, XA."""
        batch = _as_batch(batch)
        result = select_placements(batch, placements, self.reference.contig_offsets,
                                   self.reference.contig_names, report_all=self.report_all, max_hits=self.max_hits,
                                   max_alignments=self.max_alignments, xa_limit=self.xa_limit)
        return dataclasses.replace(result, batch=batch, reference=self.reference)  # what the per-hit views read


def _as_batch(reads: SequenceBatch | list[str]) -> SequenceBatch:
    if isinstance(reads, SequenceBatch):
        if reads.alphabet != "dna":
            raise OptionError("reads must be DNA")
        return reads
    if isinstance(reads, str):
        reads = [reads]
    codes, offsets = pattern_arrays(list(reads))
    return SequenceBatch.from_codes(codes, offsets, [f"read{i}" for i in range(len(reads))], "<reads>")

"""Complete k-mismatch read mapping (SOAP3's job): :class:`Mapper` and :func:`map_reads`.

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
5. **select** (host, vectorised) -- best stratum, counts of best and
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

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gseek.index import Index
from gseek.index import search as fm_search
from gseek.kernels import fmindex, kmismatch, seqpack

from . import _select

from .backend import Backend, get_backend, numba_guard
from .encode import pack_rows
from .errors import OptionError
from .seqio import SequenceBatch

__all__ = [
    "Mapper",
    "MappingResult",
    "Placements",
    "map_reads",
    "MAX_MISMATCHES",
    "MIN_READ_LENGTH",
    "MAX_READ_LENGTH",
    "MAPQ_MAX",
    "MISMATCH_PHRED",
    "STATUS_TOO_LONG",
    "STATUS_TOO_SHORT",
    "flank_regions",
]

#: Largest ``k`` (``--mismatches``).
MAX_MISMATCHES = kmismatch.MAX_MISMATCHES
#: Shorter reads (an empty record too) are reported unmapped with ``YF:Z:TOO_SHORT``.
MIN_READ_LENGTH = 16
#: Longer reads are reported unmapped with ``YF:Z:TOO_LONG`` (not dropped).
MAX_READ_LENGTH = 1000
#: MAPQ of a unique best placement with no second-best one within ``k``.
MAPQ_MAX = 60
#: Phred weight of one extra mismatch in the MAPQ model (``docs/sam.md``).
MISMATCH_PHRED = 20
#: Shortest piece searched exactly, whatever the reference size.
MIN_PIECE_FLOOR = 10
#: Read status: mapped or not by search (0), longer than MAX_READ_LENGTH (1),
#: shorter than MIN_READ_LENGTH (2); the last two are not searched.
STATUS_SEARCHED, STATUS_TOO_LONG, STATUS_TOO_SHORT = 0, 1, 2


# --------------------------------------------------------------------------- results


class ReadNames(Sequence[str]):
    """Read names, decoded one at a time from a batch's name bytes and offsets.

    A mapped batch keeps its names this way instead of building one Python
    string per read (the SAM formatter reads the bytes directly).

    >>> names = ReadNames(np.frombuffer(b"r1read2", np.uint8), np.array([0, 2, 7]))
    >>> len(names), names[1], list(names[1:])
    (2, 'read2', ['read2'])
    """

    __slots__ = ("_bytes", "_offsets")

    def __init__(self, name_bytes: np.ndarray, offsets: np.ndarray) -> None:
        self._bytes = name_bytes
        self._offsets = offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                raise ValueError("ReadNames slices must be contiguous")
            return ReadNames(self._bytes, self._offsets[start : max(start, stop) + 1])
        i = int(i) + len(self) if int(i) < 0 else int(i)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._bytes[self._offsets[i] : self._offsets[i + 1]].tobytes().decode("latin-1")


@dataclass(frozen=True, eq=False)
class MappingResult:
    """Placements of one batch of reads, struct-of-arrays (0-based coordinates).

    Reported hits, grouped by read in input order, primary first: ``read``
    (int64), ``contig`` (int32), ``pos`` (0-based leftmost base, int64),
    ``strand`` (+1 / -1, int8), ``mismatches`` (int16) and ``secondary``
    (bool); ``hit_offsets[i]:hit_offsets[i+1]`` are read ``i``'s hits.

    Per read: ``best`` and ``second`` (mismatches of the best and second-best
    strata, -1 when absent), ``n_best`` / ``n_second`` (placements in them:
    SAM X0 / X1), ``n_found`` (all placements within ``k``), ``mapq`` and
    ``status`` (:data:`STATUS_TOO_LONG` / :data:`STATUS_TOO_SHORT` for reads
    not searched).

    ``alt_*``: alternative placements for the XA tag of the primary record
    (best-stratum mode only), grouped by read through ``alt_offsets``.
    """

    names: Sequence[str]
    contig_names: tuple[str, ...]
    read: np.ndarray
    contig: np.ndarray
    pos: np.ndarray
    strand: np.ndarray
    mismatches: np.ndarray
    secondary: np.ndarray
    hit_offsets: np.ndarray
    best: np.ndarray
    second: np.ndarray
    n_best: np.ndarray
    n_second: np.ndarray
    n_found: np.ndarray
    mapq: np.ndarray
    status: np.ndarray
    alt_offsets: np.ndarray
    alt_contig: np.ndarray
    alt_pos: np.ndarray
    alt_strand: np.ndarray
    alt_mismatches: np.ndarray
    capped: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))

    def __len__(self) -> int:
        """Number of reported hits."""
        return int(self.read.size)

    @property
    def n_reads(self) -> int:
        return int(self.best.size)

    def __repr__(self) -> str:
        mapped = int((self.best >= 0).sum())
        return f"MappingResult(reads={self.n_reads}, mapped={mapped}, hits={len(self)})"

    def hit_text(self, j: int) -> str:
        """Hit ``j`` as ``name  contig  pos  strand  mismatches`` (0-based pos, tab-separated)."""
        return (f"{self.names[self.read[j]]}\t{self.contig_names[self.contig[j]]}\t{int(self.pos[j])}\t"
                f"{'+' if self.strand[j] > 0 else '-'}\t{int(self.mismatches[j])}")

    def placements(self) -> set[tuple[int, int, int, int, int]]:
        """Reported hits as a set of ``(read, contig, pos, strand, mismatches)``."""
        return set(zip(self.read.tolist(), self.contig.tolist(), self.pos.tolist(), self.strand.tolist(),
                       self.mismatches.tolist()))


@dataclass(frozen=True, eq=False)
class Placements:
    """What :meth:`Mapper.search` found for one batch (host arrays, unordered).

    ``status`` per read (as :class:`MappingResult`); one row per placement:
    ``read`` (index in the batch), ``strand`` (+1 / -1), ``contig``, ``pos``
    (0-based), ``mismatches``.
    """

    status: np.ndarray
    read: np.ndarray
    strand: np.ndarray
    contig: np.ndarray
    pos: np.ndarray
    mismatches: np.ndarray

    def __len__(self) -> int:
        return int(self.read.size)


# --------------------------------------------------------------------------- the mapper


class Mapper:
    """Complete k-mismatch read mapper over an :class:`~gseek.index.Index`.

    Arguments:
        index: an index holding the ``fm``, ``sa`` and ``text`` parts
            (``wgram`` speeds up exact pieces).
        mismatches: ``k``, 0..8; an N in the read or the reference counts as one.
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
    """

    _defaults = dict(max_alignments=None, report_all=False, max_hits=None, norc=False, nofw=False, xa_limit=3,
                     min_piece=None)

    def __init__(
        self,
        index: Index,
        mismatches: int = 2,
        *,
        max_alignments: int | None = None,
        report_all: bool = False,
        max_hits: int | None = None,
        norc: bool = False,
        nofw: bool = False,
        xa_limit: int = 3,
        min_piece: int | None = None,
        device: str | Backend | None = None,
    ) -> None:
        if isinstance(mismatches, bool) or not isinstance(mismatches, (int, np.integer)):
            raise OptionError(f"mismatches must be an integer 0..{MAX_MISMATCHES}, not {mismatches!r}")
        if not 0 <= mismatches <= MAX_MISMATCHES:
            raise OptionError(f"mismatches must be 0..{MAX_MISMATCHES}, not {mismatches}")
        if max_alignments is not None and int(max_alignments) < 1:
            raise OptionError(f"max_alignments (-k) must be >= 1, not {max_alignments}")
        if max_alignments is not None and report_all:
            raise OptionError("choose one of -k N and --all")
        if max_hits is not None and int(max_hits) < 1:
            raise OptionError(f"max_hits must be >= 1, not {max_hits}")
        if max_hits is not None and not report_all:
            raise OptionError("max_hits caps --all; give report_all=True")
        if norc and nofw:
            raise OptionError("norc and nofw together leave no strand to map")
        if int(xa_limit) < 0:
            raise OptionError(f"xa_limit must be >= 0, not {xa_limit}")
        missing = [p for p in ("occ", "dollar_rows", "sa_mark", "sa_samples", "text", "amb_runs")
                   if p not in index.arrays]
        if missing:
            where = index.path or index.header.get("source", "index")
            raise OptionError(f"{where}: mapping needs index parts fm, sa and text; missing {', '.join(missing)}")
        bases = int(index.stats["bases"])
        auto_piece = max(MIN_PIECE_FLOOR, math.ceil(math.log(max(bases, 4), 4)))
        if min_piece is not None and not 1 <= int(min_piece) <= kmismatch.MAX_DFS_DEPTH // 2:
            raise OptionError(f"min_piece must be 1..{kmismatch.MAX_DFS_DEPTH // 2}, not {min_piece}")
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
        self._flanks: _Flanks | None = None
        self._setup_reference()

    def __repr__(self) -> str:
        extra = [f"{k}={getattr(self, '_min_piece_given' if k == 'min_piece' else k)!r}"
                 for k, v in self._defaults.items()
                 if getattr(self, "_min_piece_given" if k == "min_piece" else k) != v]
        return f"Mapper(mismatches={self.k}, {', '.join(extra + [f'device={self.backend.name!r}'])})"

    # ------------------------------------------------------------------ reference arrays

    def _setup_reference(self) -> None:
        with self.backend.active():
            self._upload_reference()

    def _upload_reference(self) -> None:
        b, idx = self.backend, self.index
        if b is idx.backend:
            self.fm = idx.device_arrays()
        else:
            self.fm = fm_search.FmArrays.upload(b, idx.arrays, idx.header["C"], idx.pos64)
        text = np.asarray(idx.arrays["text"])
        runs = np.asarray(idx.arrays["amb_runs"], dtype=np.int64).reshape(-1, 2)
        self.contig_offsets_host = np.asarray(idx.contigs.offsets, dtype=np.int64)
        self.amb_runs = runs
        self.amb_start, self.amb_end = np.ascontiguousarray(runs[:, 0]), np.ascontiguousarray(runs[:, 1])
        self.n_text_words = int(text.size)
        self.has_amb = int(runs.shape[0] > 0)
        self.text_host = text
        self.ref_nmask_host = amb_mask(runs, text.size) if self.has_amb else np.zeros(1, dtype=np.uint32)
        self.text = b.asarray(text)
        self.ref_nmask = b.asarray(self.ref_nmask_host)
        self.contig_offsets = b.asarray(self.contig_offsets_host)

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

    # ------------------------------------------------------------------ pieces

    def piece_plan(self, length: int) -> tuple[list[int], list[int]]:
        """Piece starts (in the read, plus the end) and budgets for a read of ``length``.

        >>> from gseek.index import Index
        >>> import os, tempfile
        >>> fa = os.path.join(tempfile.mkdtemp(), "r.fa"); _ = open(fa, "w").write(">a\\nACGTTGCA\\n")
        >>> m = Mapper(Index.build(fa, wgram=2, device="cpu"), 3, min_piece=12)
        >>> m.piece_plan(100)
        ([0, 25, 50, 75, 100], [0, 0, 0, 0])
        >>> m.piece_plan(30)
        ([0, 15, 30], [1, 1])
        """
        lengths = np.array([length], dtype=np.int64)
        count, = _piece_counts(lengths, self.k, self.min_piece).tolist()
        starts = [(i * length) // count for i in range(count)] + [length]
        budget_total = self.k - count + 1
        budgets = [budget_total // count + (1 if i < budget_total % count else 0) for i in range(count)]
        return starts, budgets

    # ------------------------------------------------------------------ map

    def map(self, reads: SequenceBatch | list[str]) -> MappingResult:
        """Map a batch of reads (a DNA :class:`~gseek.SequenceBatch` or a list of strings).

        Reads shorter than :data:`MIN_READ_LENGTH` (empty ones too) and longer
        than :data:`MAX_READ_LENGTH` are not searched: they are reported
        unmapped, with ``status`` :data:`STATUS_TOO_SHORT` / :data:`STATUS_TOO_LONG`.
        ``map(batch)`` is ``select(batch, search(batch))``.
        """
        batch = _as_batch(reads)
        return self.select(batch, self.search(batch))

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
        """All placements (read, strand, contig, pos, mismatches) of the searched reads.

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
            keep_len = batch.lengths[searched]
            offsets_h = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(keep_len, out=offsets_h[1:])
            src = np.repeat(batch.offsets[searched] - offsets_h[:-1], keep_len) + np.arange(int(offsets_h[-1]))
            codes_h = batch.codes[src]
        codes = b.asarray(codes_h, dtype=np.uint8)
        offsets = b.asarray(offsets_h, dtype=np.int64)

        # strand reads: forward copies, then reverse complements
        parts, strands = [], []
        if not self.nofw:
            parts.append(codes)
            strands.append(1)
        if not self.norc:
            rc = xp.empty_like(codes)
            b.launch(seqpack, "reverse_complement", int(codes.size), codes, offsets, np.int64(n), rc)
            parts.append(rc)
            strands.append(-1)
        n_sr = n * len(parts)
        sr_codes = xp.concatenate(parts) if len(parts) > 1 else parts[0]
        sr_len = xp.tile(offsets[1:] - offsets[:-1], len(parts))
        sr_off = xp.zeros(n_sr + 1, dtype=np.int64)
        xp.cumsum(sr_len, out=sr_off[1:])

        # pieces
        count = xp.clip(sr_len // self.min_piece, 1, k + 1)
        sr_first = xp.zeros(n_sr + 1, dtype=np.int64)
        xp.cumsum(count, out=sr_first[1:])
        n_pieces = int(sr_first[-1])
        piece_sr = _segment_ids(b, count, sr_first, n_pieces)
        i_in = xp.arange(n_pieces, dtype=np.int64) - sr_first[piece_sr]
        cnt = count[piece_sr]
        piece_off = xp.empty(n_pieces + 1, dtype=np.int64)
        piece_off[:-1] = sr_off[piece_sr] + (i_in * sr_len[piece_sr]) // cnt
        piece_off[-1] = sr_off[-1]
        total_budget = k - cnt + 1
        budget = (total_budget // cnt + (i_in < total_budget % cnt)).astype(np.int64)
        approx = (k - count + 1 > 0).astype(np.uint8)
        any_approx = bool(approx.any())
        search = xp.flatnonzero(budget > 0) if any_approx else xp.zeros(0, dtype=np.int64)
        if search.size:
            longest = int((piece_off[search + 1] - piece_off[search]).max())
            assert longest <= kmismatch.MAX_DFS_DEPTH, longest

        # search: exact pieces by backward search (w-gram jump), others by backtracking
        lo, hi = fm_search.backward_search(b, self.fm, sr_codes, piece_off)
        if any_approx:
            exact = budget == 0
            lo = xp.where(exact, lo, 0)
            hi = xp.where(exact, hi, 0)
        keep = xp.flatnonzero(hi > lo)
        iv_lo, iv_hi, iv_piece = lo[keep], hi[keep], keep.astype(np.int64)
        if search.size:
            dl, dh, dp = self._dfs(sr_codes, piece_off, budget, search.astype(np.int64))
            iv_lo, iv_hi, iv_piece = (xp.concatenate([x, y]) for x, y in ((iv_lo, dl), (iv_hi, dh),
                                                                          (iv_piece, dp)))

        # locate every row of every interval
        cand_piece, cand_contig, cand_pos = self._locate(self.fm, iv_lo, iv_hi, iv_piece)

        # windows holding a reference N (approximate mode only): the same piece
        # searches in the flank text; cand_piece -1 - p marks "found there through piece p"
        n_flank = 0
        if self.has_amb and any_approx:
            flanks = self._flank_index()
            search_f = xp.flatnonzero(approx[piece_sr]).astype(np.int64)
            fl_lo, fl_hi, fl_piece = self._dfs(sr_codes, piece_off, budget, search_f, flanks.fm)
            f_piece, f_region, f_pos = self._locate(flanks.fm, fl_lo, fl_hi, fl_piece)
            n_flank = int(f_piece.size)
            cand_piece = xp.concatenate([cand_piece, -1 - f_piece])
            cand_contig = xp.concatenate([cand_contig, flanks.contig[f_region]])
            cand_pos = xp.concatenate([cand_pos, flanks.start[f_region] + f_pos])
        cand_sr = piece_sr[xp.where(cand_piece < 0, -1 - cand_piece, cand_piece)]

        # verify against the reads packed in word-aligned rows
        word_off = xp.zeros(n_sr + 1, dtype=np.int64)
        xp.cumsum((sr_len + 15) // 16, out=word_off[1:])
        read_words, read_nmask = pack_rows(b, sr_codes, sr_off, word_off)
        n_cand = int(cand_sr.size)
        out_start = xp.empty(n_cand, dtype=np.int64)
        out_mm = xp.empty(n_cand, dtype=np.int32)
        b.launch(kmismatch, "verify", n_cand,
                 self.text, self.ref_nmask, np.int64(self.has_amb), np.int64(self.n_text_words),
                 self.contig_offsets, read_words, read_nmask, word_off, sr_len,
                 sr_first, approx, piece_off, budget, np.int64(k),
                 cand_sr, cand_piece, cand_contig.astype(np.int32), cand_pos, np.int64(n_cand),
                 out_start, out_mm)  # fmt: skip
        self.stats["candidates"] += n_cand
        self.stats["flank_candidates"] += n_flank
        ok = xp.flatnonzero(out_mm >= 0)
        sr = b.to_host(cand_sr[ok])
        strand_of = np.array(strands, dtype=np.int8)
        return (searched[sr % n], strand_of[sr // n], b.to_host(cand_contig[ok]).astype(np.int32),
                b.to_host(out_start[ok]), b.to_host(out_mm[ok]).astype(np.int16))

    def _dfs(self, codes, piece_off, budget, search, f=None):
        """SA intervals (lo, hi, piece) of pieces ``search`` within their budgets, in
        FM-index ``f`` (default: the reference's)."""
        b, xp, f = self.backend, self.backend.xp, self.fm if f is None else f
        m = int(search.size)
        counts = xp.empty(m, dtype=np.int64)
        b.launch(kmismatch, "dfs_count", m, f.occ, f.dollar_rows, f.C, np.int64(f.wide), codes, piece_off,
                 budget, search, np.int64(m), counts)
        starts = xp.zeros(m + 1, dtype=np.int64)
        xp.cumsum(counts, out=starts[1:])
        total = int(starts[-1])
        lo = xp.empty(total, dtype=np.int64)
        hi = xp.empty(total, dtype=np.int64)
        piece = xp.empty(total, dtype=np.int64)
        b.launch(kmismatch, "dfs_fill", m, f.occ, f.dollar_rows, f.C, np.int64(f.wide), codes, piece_off,
                 budget, search, np.int64(m), starts, lo, hi, piece)
        return lo, hi, piece

    def _locate(self, f, lo, hi, piece):
        """(piece, contig, position) of every row of every interval of FM-index ``f``."""
        b, xp = self.backend, self.backend.xp
        n_iv = int(lo.size)
        starts = xp.zeros(n_iv + 1, dtype=np.int64)
        if n_iv:
            xp.cumsum(hi - lo, out=starts[1:])
        total = int(starts[-1])
        which = xp.empty(total, dtype=np.int64)
        text_pos = xp.empty(total, dtype=np.int64)
        b.launch(fmindex, "locate_fill", total,
                 f.occ, f.dollar_rows, f.C, f.sa_mark, f.sa_samples, np.int64(f.wide),
                 lo, starts, np.int64(n_iv), np.int64(total), which, text_pos)  # fmt: skip
        contig, pos = fm_search.text_to_contig(b, f, text_pos)
        return piece[which], contig, pos

    def _flank_index(self) -> _Flanks:
        """The FM-index of the flanks of the reference N runs (built at first use, then kept).

        Every window of an approximate-mode read (shorter than
        ``(k + 1) * min_piece``) that holds a reference N and at most ``k`` of
        them lies inside one flank (:func:`flank_regions`). An N is read as
        a base (a fixed pseudo-random one per position, so that N runs do
        not look like poly-A), which can only lower a piece's mismatches: a
        piece search there finds every such placement.
        """
        if self._flanks is None:
            longest = min(MAX_READ_LENGTH, (self.k + 1) * self.min_piece - 1)
            contig, start, end = flank_regions(self.amb_runs, self.contig_offsets_host, self.k, longest)
            lengths = end - start
            offsets = np.zeros(lengths.size + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            g = np.repeat(self.contig_offsets_host[contig] + start - offsets[:-1], lengths) + np.arange(offsets[-1])
            shift = (30 - 2 * (g & 15)).astype(np.uint32)
            codes = ((self.text_host[g >> 4] >> shift) & 3).astype(np.uint8)
            n = ((self.ref_nmask_host[g >> 4] >> shift) & 3) != 0
            codes[n] = (g[n].astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) >> np.uint64(62)).astype(np.uint8)
            batch = _dna_batch(codes, offsets, [str(i) for i in range(lengths.size)], "<flanks>")
            with numba_guard():  # a parallel CPU build, possibly beside other threads' Numba work
                index = Index.build(batch, wgram=0, sa_sample=4, threads=getattr(self.backend, "threads", None),
                                    device=self.backend)
            b = self.backend
            self._flanks = _Flanks(index.device_arrays(), b.asarray(contig.astype(np.int32)), b.asarray(start),
                                   int(offsets[-1]))
            self.stats["flank_bases"] = self._flanks.bases
        return self._flanks

    # ------------------------------------------------------------------ select

    def select(self, batch: SequenceBatch, placements: Placements) -> MappingResult:
        """Report the :meth:`search` placements of ``batch`` (host; Numba, ``gseek._select``):
        best stratum, counts, the tie choice, ``-k`` / ``--all``, MAPQ, XA."""
        batch = _as_batch(batch)
        n = len(batch)
        p = placements
        first, perm = _select.group(np.ascontiguousarray(p.read, dtype=np.int64), n)
        best = np.empty(n, dtype=np.int16)
        second = np.empty(n, dtype=np.int16)
        n_best = np.empty(n, dtype=np.int64)
        n_second = np.empty(n, dtype=np.int64)
        key = np.empty(len(p), dtype=np.int64)
        _select.strata(first, perm, self.contig_offsets_host, p.contig, p.pos, p.strand, p.mismatches, key,
                       best, second, n_best, n_second)
        mapq = mapq_scale(best, second, n_best, n_second)
        if self.report_all:  # every row, or up to --max-hits (capped reads carry ZH)
            limit_max, xa_limit = (-1 if self.max_hits is None else self.max_hits), -1
        elif self.max_alignments is not None:
            limit_max, xa_limit = self.max_alignments, -1
        else:  # best stratum: one row, and XA for the other best and second-best ones
            limit_max, xa_limit = 1, self.xa_limit
        n_found, rot = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        capped = np.empty(n, dtype=bool)
        hit_offsets, alt_offsets = np.empty(n + 1, dtype=np.int64), np.empty(n + 1, dtype=np.int64)
        # the tie choice: the best stratum rotated so that entry hash(name) % n_best comes first
        _select.plan(first, n_best, n_second, batch.names, batch.name_offsets, limit_max, self.report_all,
                     xa_limit, n_found, rot, capped, hit_offsets, alt_offsets)

        h, x = int(hit_offsets[-1]), int(alt_offsets[-1])
        out = [np.empty(h, dtype=t) for t in (np.int64, p.contig.dtype, p.pos.dtype, p.strand.dtype, np.int16, bool)]
        alt = [np.empty(x, dtype=t) for t in (p.contig.dtype, p.pos.dtype, p.strand.dtype, np.int16)]
        _select.fill(first, perm, n_best, rot, hit_offsets, alt_offsets, p.contig, p.pos, p.strand, p.mismatches,
                     *out, *alt)
        return MappingResult(
            names=ReadNames(batch.names, batch.name_offsets),
            contig_names=tuple(self.index.contigs.names),
            read=out[0],
            contig=out[1],
            pos=out[2],
            strand=out[3],
            mismatches=out[4],
            secondary=out[5],
            hit_offsets=hit_offsets,
            best=best,
            second=second,
            n_best=n_best,
            n_second=n_second,
            n_found=n_found,
            mapq=mapq,
            status=p.status,
            alt_offsets=alt_offsets,
            alt_contig=alt[0],
            alt_pos=alt[1],
            alt_strand=alt[2],
            alt_mismatches=alt[3],
            capped=capped,
        )


# --------------------------------------------------------------------------- helpers


def _piece_counts(lengths: np.ndarray, k: int, min_piece: int) -> np.ndarray:
    """Pieces per read: ``k + 1`` when they are at least ``min_piece`` long, else
    as many pieces of at least ``min_piece`` as fit (at least one)."""
    return np.clip(lengths // min_piece, 1, k + 1).astype(np.int64)


def _segment_ids(b: Backend, counts: Any, first: Any, total: int) -> Any:
    """Segment of every element when segment ``i`` holds ``counts[i]`` elements
    from ``first[i]`` (``first``: exclusive prefix sum of ``counts``, plus the total)."""
    if b.xp is np:
        return np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    return b.xp.searchsorted(first[1:], b.xp.arange(total, dtype=np.int64), side="right")


def flank_regions(runs: np.ndarray, contig_offsets: np.ndarray, k: int, longest: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stretches of the reference holding every window of at most ``longest``
    bases that covers between 1 and ``k`` bases of the N runs ``[start, end)``.

    Such a window lies within ``longest - 1`` bases of a run of at most ``k``
    N, or, for a longer run, covers at most ``k`` of its first or last bases;
    it never covers the middle of a run, past the first and last ``k`` bases.
    Stretches are clipped to their contig, merged where they overlap and cut
    at those middles, so each window lies inside exactly one stretch and no
    stretch holds more than ``2k`` N in a row. Returns ``(contig, start,
    end)``, contig coordinates, in reference order.

    >>> runs = np.array([[50, 52], [300, 400], [420, 500], [1005, 1006]])  # global; contigs of 1000
    >>> [r.tolist() for r in flank_regions(runs, np.array([0, 1000, 2000]), 2, 30)]
    [[0, 0, 0, 0, 1], [21, 271, 398, 498, 0], [81, 302, 422, 529, 35]]
    """
    runs = np.asarray(runs, dtype=np.int64).reshape(-1, 2)
    co = np.asarray(contig_offsets, dtype=np.int64)
    a, e = runs[:, 0], runs[:, 1]
    long_run = e - a > k
    lo = np.concatenate([a - longest + 1, e[long_run] - k])
    hi = np.concatenate([np.where(long_run, a + k, e + longest - 1), e[long_run] + longest - 1])
    contig = np.searchsorted(co, np.concatenate([a, e[long_run] - 1]), side="right") - 1
    lo = np.sort(np.maximum(lo, co[contig]))
    hi = np.sort(np.minimum(hi, co[contig + 1]))
    middle = e - a > 2 * k
    cut_lo, cut_hi = a[middle] + k, e[middle] - k
    # elementary intervals between all boundaries: covered by a stretch and not by a middle
    points = np.unique(np.concatenate([lo, hi, cut_lo, cut_hi]))
    x = points[:-1]
    covered = np.searchsorted(lo, x, side="right") > np.searchsorted(hi, x, side="right")
    cut = np.searchsorted(cut_lo, x, side="right") > np.searchsorted(cut_hi, x, side="right")
    keep = covered & ~cut
    joined = np.zeros(x.size, dtype=bool)  # kept interval i continues kept interval i - 1 (same contig)
    joined[1:] = keep[1:] & keep[:-1] & ~np.isin(x[1:], co)
    first = np.flatnonzero(keep & ~joined)
    last = np.flatnonzero(keep & ~np.append(joined[1:], False))
    c = np.searchsorted(co, x[first], side="right") - 1
    return c.astype(np.int32), x[first] - co[c], points[last + 1] - co[c]


def amb_mask(runs: np.ndarray, n_words: int) -> np.ndarray:
    """Packed N mask (2 bits a base, ``pack_2bit`` layout) of the runs ``[start, end)``.

    >>> [hex(w) for w in amb_mask(np.array([[1, 3], [17, 18]]), 2)]
    ['0x3c000000', '0x30000000']
    """
    mask = np.zeros(n_words, dtype=np.uint32)
    full = np.uint32(0xFFFFFFFF)
    for a, e in np.asarray(runs, dtype=np.int64).reshape(-1, 2).tolist():
        wa, wb = a >> 4, (e - 1) >> 4
        for w in {wa, wb}:
            lo, hi = max(a, w * 16) - w * 16, min(e, w * 16 + 16) - w * 16
            bits = ((0xFFFFFFFF >> (2 * lo)) & ((0xFFFFFFFF << (2 * (16 - hi))) & 0xFFFFFFFF))
            mask[w] |= np.uint32(bits)
        if wb > wa + 1:
            mask[wa + 1 : wb] = full
    return mask


def mapq_scale(best: np.ndarray, second: np.ndarray, n_best: np.ndarray, n_second: np.ndarray) -> np.ndarray:
    """MAPQ per read: ``-10 log10(1 - 1/S)``, ``S = X0 + X1 * 10^(-2 d)``, capped at 60.

    ``d`` is the gap between the second-best and best strata (each extra
    mismatch costs :data:`MISMATCH_PHRED`); unmapped reads get 0. Unique
    with nothing else within k: 60; two equally good placements: 3.

    >>> mapq_scale(np.array([0, 0, 1, 0, -1]), np.array([-1, -1, 2, 3, -1]),
    ...            np.array([1, 2, 1, 1, 0]), np.array([0, 0, 1, 1, 0])).tolist()
    [60, 3, 20, 60, 0]
    """
    gap = np.where(second >= 0, second - best, 0).astype(np.float64)
    s = n_best + np.where(second >= 0, n_second * 10.0 ** (-MISMATCH_PHRED * gap / 10), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_wrong = 1.0 - 1.0 / np.maximum(s, 1.0)
        q = np.where(p_wrong > 0, -10.0 * np.log10(np.maximum(p_wrong, 1e-300)), MAPQ_MAX)
    q = np.floor(np.minimum(q, MAPQ_MAX) + 0.5).astype(np.int64)
    return np.where(best >= 0, q, 0).astype(np.uint8)


def _as_batch(reads: SequenceBatch | list[str]) -> SequenceBatch:
    if isinstance(reads, SequenceBatch):
        if reads.alphabet != "dna":
            raise OptionError("reads must be DNA")
        return reads
    if isinstance(reads, str):
        reads = [reads]
    codes, offsets = fm_search.pattern_arrays(list(reads))
    return _dna_batch(codes, offsets, [f"read{i}" for i in range(len(reads))], "<reads>")


def _dna_batch(codes: np.ndarray, offsets: np.ndarray, names: list[str], path: str) -> SequenceBatch:
    """A FASTA-like DNA batch of records ``codes[offsets[i]:offsets[i+1]]`` named ``names``."""
    name_bytes = np.frombuffer("".join(names).encode(), dtype=np.uint8).copy()
    name_offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in names], out=name_offsets[1:])
    return SequenceBatch(
        path=path, format="fasta", alphabet="dna", codes=codes, offsets=offsets, quals=None,
        names=name_bytes, name_offsets=name_offsets, descriptions=np.zeros(0, np.uint8),
        description_offsets=np.zeros(len(names) + 1, np.int64), soft_mask=np.zeros((0, 2), np.int64),
        lines=np.arange(1, 2 * len(names), 2, dtype=np.int64), first_record=0,
    )


@dataclass(frozen=True)
class _Flanks:
    """FM-index of the flank text (one record per flank) on the mapper's device,
    each flank's contig and start (contig coordinates), and the text size."""

    fm: fm_search.FmArrays
    contig: Any
    start: Any
    bases: int


# --------------------------------------------------------------------------- streaming


def map_reads(
    index: Index | str | os.PathLike,
    reads: str | os.PathLike | list[str | os.PathLike],
    output: str | os.PathLike,
    *,
    mismatches: int = 2,
    command: str = "gseek",
    threads: int | None = None,
    no_unal: bool = False,
    cigar_eq: bool = False,
    device: str | Backend | None = None,
    chunk_bytes: int | None = None,
    **mapper_options: Any,
) -> dict[str, int]:
    """Map FASTA/FASTQ file(s) (gzip ok) and write SAM, or BAM for ``*.bam``, ``-`` for stdout.

    Several read files go to one output, in order. The output is written
    under a temporary name and renamed when complete. This is the pipeline
    engine run in the caller's thread (:func:`gseek.pipeline.map_files` with
    ``workers=0``): the same stages as ``gseek search``.
    Returns counts: ``reads``, ``mapped``, ``unmapped`` (with ``too_long`` and
    ``too_short``: reads not searched), ``records``.

    Arguments beyond the :class:`Mapper` options: ``command`` (SAM ``@PG CL``),
    ``no_unal`` (drop unmapped reads), ``cigar_eq`` (CIGAR with ``=``/``X``),
    ``chunk_bytes`` (input per batch), ``threads`` (CPU threads when
    ``index`` is a path to load).
    """
    from gseek.pipeline.tasks import map_files  # the engine imports this module

    return map_files(index, reads, output, mismatches=mismatches, command=command, threads=threads, no_unal=no_unal,
                     cigar_eq=cigar_eq, device=device, chunk_bytes=chunk_bytes, workers=0, **mapper_options)

"""Paired-end reads: which pairs of placements to report (:func:`select_pairs`), in Numba passes.

Host-side code, not a kernel (no ``.cu`` twin). Both mates of ``n`` pairs are
searched as one batch of ``2n`` reads (mate 1 of pair ``i`` is read ``i``,
mate 2 read ``n + i``), every placement of each within ``k`` mismatches, as
``--all``. Then per pair, in parallel and independently of every other pair:

1. ``pair_count`` / ``pair_fill`` -- every *concordant* combination of a
   placement of mate 1 and one of mate 2 (for each placement of mate 1, only
   mate 2's placements within ``maxins`` of it, found by binary search) (bowtie's rule: same contig, the
   orientation of ``--fr``/``--rf``/``--ff``, the upstream mate starting and
   ending strictly before the downstream one, the fragment -- leftmost to
   rightmost base of the two -- within ``[minins, maxins]``), ordered by
   total mismatches, then mate 1's order (mismatches, position, strand), then
   mate 2's position and strand;
2. ``pair_stats`` -- the best and second-best strata of those pairs, the tie
   rotation by the name hash (as single-end reads, ``docs/sam.md``), how
   many pairs to report (``-k`` / ``--all``);
3. ``record_count`` / ``record_fill`` -- one row per SAM record: the
   reported pairs' two records each (``YT:Z:CP``); for a pair with no
   concordant placement, each mate's own single-end records (``DP`` when
   both mates have exactly one best placement, else ``UP``), with the
   mate fields (FLAG bits, RNEXT, PNEXT, TLEN) set.

Each pair's records depend only on its own mates: the same for any batch
split, thread count and backend. ``tests/reference_pairs.py`` is the
readable brute-force reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from gseek.options import DEFAULT_MAXINS, DEFAULT_MININS, ORIENTATIONS, PairOptions
from gseek.kernels._jit import njit
from gseek.seqio.pairs import PairedBatch

from .result import MappingResult, Placements
from .select import _name_hash, group, mapq_scale, select_placements, strata

__all__ = ["PairOptions", "PairedResult", "select_pairs", "ORIENTATIONS", "DEFAULT_MININS", "DEFAULT_MAXINS",
           "PAIR_CP", "PAIR_DP", "PAIR_UP", "PAIR_TYPES"]

#: Record pair types (``YT:Z``): concordant pair, discordant pair, mates aligned (or not) unpaired.
PAIR_CP, PAIR_DP, PAIR_UP = 1, 2, 3
PAIR_TYPES = {PAIR_CP: "CP", PAIR_DP: "DP", PAIR_UP: "UP"}
#: SAM FLAG bits of pairs.
F_PAIRED, F_PROPER, F_UNMAPPED, F_MATE_UNMAPPED, F_REVERSE, F_MATE_REVERSE, F_FIRST, F_SECOND, F_SECONDARY = (
    1, 2, 4, 8, 16, 32, 64, 128, 256)


@dataclass(frozen=True, eq=False)
class PairedResult:
    """The SAM records of a batch of pairs, one row each (struct-of-arrays), pairs in input order.

    Per record: ``mate`` (read of the joined batch: ``i`` mate 1, ``n + i``
    mate 2 of pair ``i``), ``mapped``, the placement (``contig``, ``pos``
    0-based, ``strand``, ``mismatches``; unmapped: 0), ``secondary``,
    ``mapq``, ``flag`` (every bit), ``rname``/``rpos`` (an unmapped mate
    placed at its mate's position; -1: none), ``rnext`` (contig, -1 ``*``),
    ``pnext`` (0-based, -1: 0), ``tlen``, ``pair_type`` (:data:`PAIR_TYPES`),
    ``x0``, ``x1``, ``found`` and ``capped`` (ZH), ``alt`` (the read whose
    XA entries ``single`` holds for this record; -1: none).

    Per pair: ``concordant`` (concordant placements found), ``reported``
    (of them, reported). ``single``: the mates' single-end result (``2n`` reads).
    """

    single: MappingResult
    concordant: np.ndarray
    reported: np.ndarray
    mate: np.ndarray
    mapped: np.ndarray
    contig: np.ndarray
    pos: np.ndarray
    strand: np.ndarray
    mismatches: np.ndarray
    secondary: np.ndarray
    mapq: np.ndarray
    flag: np.ndarray
    rname: np.ndarray
    rpos: np.ndarray
    rnext: np.ndarray
    pnext: np.ndarray
    tlen: np.ndarray
    pair_type: np.ndarray
    x0: np.ndarray
    x1: np.ndarray
    found: np.ndarray
    capped: np.ndarray
    alt: np.ndarray

    @property
    def n_pairs(self) -> int:
        return int(self.concordant.size)

    def __len__(self) -> int:
        return int(self.mate.size)

    def __repr__(self) -> str:
        return (f"PairedResult(pairs={self.n_pairs}, concordant={int((self.concordant > 0).sum())}, "
                f"records={len(self)})")


@njit(cache=True, nogil=True, inline="always")
def _fragment(c1, p1, s1, e1, c2, p2, s2, e2, orient, minins, maxins):
    """Fragment length of mates at ``[p1, e1)`` and ``[p2, e2)`` when concordant, else -1."""
    if c1 != c2:
        return -1
    if orient == 0:  # fr: mate 1 forward upstream, or mate 2 forward upstream
        up = 1 if (s1 > 0 and s2 < 0) else (2 if (s1 < 0 and s2 > 0) else 0)
    elif orient == 1:  # rf
        up = 1 if (s1 < 0 and s2 > 0) else (2 if (s1 > 0 and s2 < 0) else 0)
    else:  # ff
        up = 1 if (s1 > 0 and s2 > 0) else (2 if (s1 < 0 and s2 < 0) else 0)
    if up == 1:
        ok = p1 < p2 and e1 < e2
    elif up == 2:
        ok = p2 < p1 and e2 < e1
    else:
        ok = False
    frag = max(e1, e2) - min(p1, p2)
    if ok and minins <= frag <= maxins:
        return frag
    return -1


@njit(cache=True, nogil=True, inline="always")
def _window(by_pos, tpos, a0, a1, lo):
    """First index of ``by_pos[a0:a1]`` (rows sorted by reference position ``tpos``) at or after ``lo``."""
    while a0 < a1:
        mid = (a0 + a1) >> 1
        if tpos[by_pos[mid]] < lo:
            a0 = mid + 1
        else:
            a1 = mid
    return a0


@njit(cache=True, nogil=True, parallel=True)
def pair_count(first, perm, by_pos, tpos, n, contig, pos, strand, length, orient, minins, maxins, counts):
    """Concordant combinations of every pair (``first``: rows grouped by read; ``perm``
    sorted by mismatches, ``by_pos`` by reference position). Mates of a concordant
    pair start at most ``maxins`` apart: only that window of mate 2's placements is
    looked at for each placement of mate 1 (a binary search)."""
    for ii in numba.prange(n):
        i = np.int64(ii)
        c = 0
        l1, l2 = length[i], length[n + i]
        b0, b1 = first[n + i], first[n + i + 1]
        for x in range(first[i], first[i + 1]):
            a = perm[x]
            y = _window(by_pos, tpos, b0, b1, tpos[a] - maxins)
            while y < b1 and tpos[by_pos[y]] <= tpos[a] + maxins:
                b = by_pos[y]
                if _fragment(contig[a], pos[a], strand[a], pos[a] + l1, contig[b], pos[b], strand[b], pos[b] + l2,
                             orient, minins, maxins) >= 0:
                    c += 1
                y += 1
        counts[i] = c


@njit(cache=True, nogil=True, parallel=True)
def pair_fill(first, perm, by_pos, tpos, n, contig, pos, strand, mm, length, orient, minins, maxins, max_total, off,
              out_a, out_b, out_total, out_frag):
    """Every pair's concordant combinations at ``off[i]`` (as :func:`pair_count`), by
    total mismatches, then mate 1's order (mismatches, position, strand), then
    mate 2's position and strand."""
    for ii in numba.prange(n):
        i = np.int64(ii)
        w = off[i]
        if off[i + 1] == w:
            continue
        l1, l2 = length[i], length[n + i]
        for t in range(max_total + 1):
            for x in range(first[i], first[i + 1]):
                a = perm[x]
                if mm[a] > t:
                    break  # rows sorted by mismatches
                b0, b1 = first[n + i], first[n + i + 1]
                y = _window(by_pos, tpos, b0, b1, tpos[a] - maxins)
                while y < b1 and tpos[by_pos[y]] <= tpos[a] + maxins:
                    b = by_pos[y]
                    y += 1
                    if mm[a] + mm[b] != t:
                        continue
                    f = _fragment(contig[a], pos[a], strand[a], pos[a] + l1, contig[b], pos[b], strand[b],
                                  pos[b] + l2, orient, minins, maxins)
                    if f >= 0:
                        out_a[w] = a
                        out_b[w] = b
                        out_total[w] = t
                        out_frag[w] = f
                        w += 1


@njit(cache=True, nogil=True, parallel=True)
def pair_stats(off, total, names, name_off, limit_max, best, second, n_best, n_second, rot, limit):
    """Per pair: strata of its concordant combinations, tie rotation (name hash), pairs to report."""
    for i in numba.prange(off.size - 1):
        a, b = off[i], off[i + 1]
        best[i] = -1
        second[i] = -1
        n_best[i] = 0
        n_second[i] = 0
        rot[i] = 0
        limit[i] = 0
        if a == b:
            continue
        best[i] = total[a]
        j = a
        while j < b and total[j] == best[i]:
            j += 1
        n_best[i] = j - a
        if j < b:
            second[i] = total[j]
            t = j
            while t < b and total[t] == second[i]:
                t += 1
            n_second[i] = t - j
        rot[i] = np.int64(_name_hash(names, name_off, i) % np.uint64(n_best[i]))
        limit[i] = b - a if limit_max < 0 else min(b - a, limit_max)


@njit(cache=True, nogil=True, inline="always")
def _unpaired_count(hit_off, r):
    """Records of read ``r`` reported as a single read: its hits, or one unmapped record."""
    h = hit_off[r + 1] - hit_off[r]
    return h if h > 0 else 1


@njit(cache=True, nogil=True, parallel=True)
def record_count(n, limit, hit_off, no_unal, counts):
    """SAM records of every pair."""
    for ii in numba.prange(n):
        i = np.int64(ii)
        if limit[i] > 0:
            counts[i] = 2 * limit[i]
        elif no_unal and hit_off[i] == hit_off[i + 1] and hit_off[n + i] == hit_off[n + i + 1]:
            counts[i] = 0
        else:
            counts[i] = _unpaired_count(hit_off, i) + _unpaired_count(hit_off, n + i)


@njit(cache=True, nogil=True)
def _tlen(c1, p1, e1, c2, p2, e2, is_first):
    """TLEN of a record at ``[p1, e1)`` whose mate lies at ``[p2, e2)``: + for the leftmost (mate 1 on a tie)."""
    if c1 != c2:
        return 0
    frag = max(e1, e2) - min(p1, p2)
    return frag if (p1 < p2 or (p1 == p2 and is_first)) else -frag


@njit(cache=True, nogil=True, parallel=True)
def record_fill(n, rec_off, pair_off, pair_a, pair_b, pair_total, pair_frag, p_best, p_nbest, p_rot, limit, p_mapq,
                contig, pos, strand, mm, length, s_hit_off, s_contig, s_pos, s_strand, s_mm, s_secondary, s_best,
                s_nbest, s_nsecond, s_found, s_mapq, s_capped, report_all_capping,
                r_mate, r_mapped, r_contig, r_pos, r_strand, r_mm, r_secondary, r_mapq, r_flag, r_rname, r_rpos,
                r_rnext, r_pnext, r_tlen, r_type, r_x0, r_x1, r_found, r_capped, r_alt):
    """Every pair's records at ``rec_off[i]``."""
    for ii in numba.prange(n):
        i = np.int64(ii)
        w = rec_off[i]
        if rec_off[i + 1] == w:
            continue
        if limit[i] > 0:
            a0 = pair_off[i]
            nb = p_nbest[i]
            total_found = pair_off[i + 1] - a0
            for rank in range(limit[i]):
                j = a0 + ((rank + p_rot[i]) % nb if rank < nb else rank)
                rows = (pair_a[j], pair_b[j])
                for m in range(2):
                    me, other = rows[m], rows[1 - m]
                    read = i if m == 0 else n + i
                    r_mate[w] = read
                    r_mapped[w] = True
                    r_contig[w] = contig[me]
                    r_pos[w] = pos[me]
                    r_strand[w] = strand[me]
                    r_mm[w] = mm[me]
                    r_secondary[w] = rank > 0
                    r_mapq[w] = p_mapq[i] if (rank == 0 or pair_total[j] == p_best[i]) else 0
                    f = F_PAIRED | F_PROPER | (F_FIRST if m == 0 else F_SECOND)
                    if strand[me] < 0:
                        f |= F_REVERSE
                    if strand[other] < 0:
                        f |= F_MATE_REVERSE
                    if rank > 0:
                        f |= F_SECONDARY
                    r_flag[w] = f
                    r_rname[w] = -1
                    r_rpos[w] = -1
                    r_rnext[w] = contig[other]
                    r_pnext[w] = pos[other]
                    r_tlen[w] = pair_frag[j] if pos[me] < pos[other] else -pair_frag[j]
                    r_type[w] = PAIR_CP
                    r_x0[w] = s_nbest[read]
                    r_x1[w] = s_nsecond[read]
                    r_found[w] = total_found
                    r_capped[w] = report_all_capping and limit[i] < total_found
                    r_alt[w] = -1
                    w += 1
            continue
        r1, r2 = i, n + i
        both = s_hit_off[r1 + 1] > s_hit_off[r1] and s_hit_off[r2 + 1] > s_hit_off[r2]
        kind = PAIR_DP if (both and s_nbest[r1] == 1 and s_nbest[r2] == 1) else PAIR_UP
        for m in range(2):
            read = r1 if m == 0 else r2
            mate = r2 if m == 0 else r1
            mate_mapped = s_hit_off[mate + 1] > s_hit_off[mate]
            mh = s_hit_off[mate]  # the mate's primary record
            h0, h1 = s_hit_off[read], s_hit_off[read + 1]
            for j in range(h0, max(h1, h0 + 1)):
                mapped = j < h1
                r_mate[w] = read
                r_mapped[w] = mapped
                r_type[w] = kind
                r_x0[w] = s_nbest[read]
                r_x1[w] = s_nsecond[read]
                r_found[w] = s_found[read]
                r_capped[w] = s_capped[read]
                r_alt[w] = read if (mapped and j == h0) else -1
                f = F_PAIRED | (F_FIRST if m == 0 else F_SECOND)
                if not mate_mapped:
                    f |= F_MATE_UNMAPPED
                elif s_strand[mh] < 0:
                    f |= F_MATE_REVERSE
                r_rname[w] = -1
                r_rpos[w] = -1
                r_tlen[w] = 0
                if mapped:
                    r_contig[w] = s_contig[j]
                    r_pos[w] = s_pos[j]
                    r_strand[w] = s_strand[j]
                    r_mm[w] = s_mm[j]
                    r_secondary[w] = s_secondary[j]
                    r_mapq[w] = s_mapq[read] if (not s_secondary[j] or s_mm[j] == s_best[read]) else 0
                    if s_strand[j] < 0:
                        f |= F_REVERSE
                    if s_secondary[j]:
                        f |= F_SECONDARY
                    if mate_mapped:
                        r_rnext[w] = s_contig[mh]
                        r_pnext[w] = s_pos[mh]
                        r_tlen[w] = _tlen(s_contig[j], s_pos[j], s_pos[j] + length[read], s_contig[mh], s_pos[mh],
                                          s_pos[mh] + length[mate], m == 0)
                    else:  # the unmapped mate is placed here (SAM's recommended practice)
                        r_rnext[w] = s_contig[j]
                        r_pnext[w] = s_pos[j]
                else:
                    r_contig[w] = 0
                    r_pos[w] = 0
                    r_strand[w] = 1
                    r_mm[w] = 0
                    r_secondary[w] = False
                    r_mapq[w] = 0
                    f |= F_UNMAPPED
                    if mate_mapped:  # placed at its mate
                        r_rname[w] = s_contig[mh]
                        r_rpos[w] = s_pos[mh]
                        r_rnext[w] = s_contig[mh]
                        r_pnext[w] = s_pos[mh]
                    else:
                        r_rnext[w] = -1
                        r_pnext[w] = -1
                r_flag[w] = f
                w += 1


def select_pairs(pairs: PairedBatch, placements: Placements, contig_offsets: np.ndarray,
                 contig_names: tuple[str, ...], options: PairOptions, *, k: int, report_all: bool = False,
                 max_hits: int | None = None, max_alignments: int | None = None, xa_limit: int = 3,
                 no_unal: bool = False) -> PairedResult:
    """The SAM records of ``pairs`` from ``placements`` of :meth:`PairedBatch.joined
    <gseek.seqio.pairs.PairedBatch.joined>` (every placement of every mate within ``k``).

    Concordant pairs first (the best by total mismatches, ties rotated by the
    pair name's hash; ``-k``: up to that many pairs, best strata first;
    ``--all``: every one, up to ``max_hits``); a pair with none: each mate as
    single-end reads report it (:func:`~gseek.mapper.select.select_placements`
    with the same options). ``no_unal``: no records for a pair with neither
    mate aligned.
    """
    joined = pairs.joined()
    n = len(pairs)
    single = select_placements(joined, placements, contig_offsets, contig_names, report_all=report_all,
                               max_hits=max_hits, max_alignments=max_alignments, xa_limit=xa_limit)
    p = placements
    first, perm = group(np.ascontiguousarray(p.read, dtype=np.int64), 2 * n)
    s = [np.empty(2 * n, dtype=t) for t in (np.int16, np.int16, np.int64, np.int64)]
    strata(first, perm, contig_offsets, p.contig, p.pos, p.strand, p.mismatches, np.empty(len(p), np.int64), *s)
    length = np.ascontiguousarray(joined.lengths, dtype=np.int64)
    # each read's rows by reference position (then strand): mate 2's window of each mate 1 placement
    tpos = np.asarray(contig_offsets, dtype=np.int64)[p.contig] + p.pos.astype(np.int64)
    by_pos = np.lexsort((p.strand, tpos, p.read)).astype(np.int64)
    orient = ORIENTATIONS.index(options.orientation)
    lo, hi = int(options.minins), int(options.maxins)
    counts = np.empty(n, dtype=np.int64)
    pair_count(first, perm, by_pos, tpos, n, p.contig, p.pos, p.strand, length, orient, lo, hi, counts)
    pair_off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=pair_off[1:])
    m = int(pair_off[-1])
    pair_a, pair_b = np.empty(m, np.int64), np.empty(m, np.int64)
    pair_total, pair_frag = np.empty(m, np.int16), np.empty(m, np.int64)
    pair_fill(first, perm, by_pos, tpos, n, p.contig, p.pos, p.strand, p.mismatches, length, orient, lo, hi, 2 * k,
              pair_off, pair_a, pair_b, pair_total, pair_frag)
    best, second = np.empty(n, np.int16), np.empty(n, np.int16)
    n_best, n_second = np.empty(n, np.int64), np.empty(n, np.int64)
    rot, limit = np.empty(n, np.int64), np.empty(n, np.int64)
    limit_max = (-1 if max_hits is None else max_hits) if report_all else (
        max_alignments if max_alignments is not None else 1)
    names, name_off = pairs.mate1.names, pairs.mate1.name_offsets
    pair_stats(pair_off, pair_total, names, name_off, limit_max, best, second, n_best, n_second, rot, limit)
    pair_mapq = mapq_scale(best, second, n_best, n_second)
    rec = np.empty(n, dtype=np.int64)
    sh = single.hit_offsets
    record_count(n, limit, sh, bool(no_unal), rec)
    rec_off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(rec, out=rec_off[1:])
    r = int(rec_off[-1])
    out = dict(mate=np.int64, mapped=bool, contig=np.int32, pos=np.int64, strand=np.int8, mismatches=np.int16,
               secondary=bool, mapq=np.uint8, flag=np.int64, rname=np.int32, rpos=np.int64, rnext=np.int32,
               pnext=np.int64, tlen=np.int64, pair_type=np.uint8, x0=np.int64, x1=np.int64, found=np.int64,
               capped=bool, alt=np.int64)
    arrays = {name: np.empty(r, dtype=t) for name, t in out.items()}
    capped = single.capped if single.capped.size else np.zeros(2 * n, dtype=bool)
    record_fill(n, rec_off, pair_off, pair_a, pair_b, pair_total, pair_frag, best, n_best, rot, limit, pair_mapq,
                p.contig, p.pos, p.strand, p.mismatches, length, sh, single.contig, single.pos, single.strand,
                single.mismatches, single.secondary, single.best, single.n_best, single.n_second, single.n_found,
                single.mapq, capped, bool(report_all and max_hits is not None), *arrays.values())
    return PairedResult(single=single, concordant=counts, reported=limit, **arrays)

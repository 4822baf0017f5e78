"""Readable reference for ``Mapper.select`` (``gseek.mapper.select``): the numpy version it replaced.

Sort all placements by (read, mismatches, contig, pos, strand), find the strata
as runs of equal (read, mismatches), rotate each read's best stratum by the
hash of its name, and keep the first ``limit`` of every read; XA entries are
ranks ``1 .. n_best + n_second - 1`` when there are at most ``xa_limit``.
"""

from __future__ import annotations

import numpy as np

from gseek.mapper import MappingResult, ReadNames, mapq_scale


def select(self, batch, placements) -> MappingResult:
    """What ``Mapper.select`` reports, vectorised in numpy (``self``: the mapper, for its options)."""
    n = len(batch)
    status, read, strand, contig, pos, mm = (placements.status, placements.read, placements.strand,
                                             placements.contig, placements.pos, placements.mismatches)
    names = ReadNames(batch.names, batch.name_offsets)
    order = np.lexsort((strand, pos, contig, mm, read))
    read, strand, contig, pos, mm = read[order], strand[order], contig[order], pos[order], mm[order]
    h = read.size
    n_found = np.bincount(read, minlength=n).astype(np.int64)
    first = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(n_found, out=first[1:])
    # strata: runs of equal (read, mismatches)
    run_start = np.ones(h, dtype=bool)
    if h:
        run_start[1:] = (read[1:] != read[:-1]) | (mm[1:] != mm[:-1])
    rs = np.flatnonzero(run_start)
    run_len = np.diff(np.append(rs, h))
    run_read = read[rs]
    run_rank = np.arange(rs.size) - np.searchsorted(run_read, run_read)  # stratum number in the read
    best = np.full(n, -1, dtype=np.int16)
    second = np.full(n, -1, dtype=np.int16)
    n_best = np.zeros(n, dtype=np.int64)
    n_second = np.zeros(n, dtype=np.int64)
    s0, s1 = run_rank == 0, run_rank == 1
    best[run_read[s0]] = mm[rs[s0]]
    n_best[run_read[s0]] = run_len[s0]
    second[run_read[s1]] = mm[rs[s1]]
    n_second[run_read[s1]] = run_len[s1]
    mapq = mapq_scale(best, second, n_best, n_second)

    # tie choice: rotate the best stratum so that entry hash(name) % n_best comes first
    within = np.arange(h) - first[read]
    rot = (name_hashes(batch) % np.maximum(n_best, 1).astype(np.uint64)).astype(np.int64)
    in_best = within < n_best[read]
    rank = np.where(in_best, (within - rot[read]) % np.maximum(n_best[read], 1), within)
    order = np.lexsort((rank, read))
    read, strand, contig, pos, mm, rank = (x[order] for x in (read, strand, contig, pos, mm, rank))

    if self.report_all:
        limit = n_found if self.max_hits is None else np.minimum(n_found, self.max_hits)
    elif self.max_alignments is not None:
        limit = np.minimum(n_found, self.max_alignments)
    else:
        limit = np.minimum(n_found, 1)
    capped = limit < n_found if self.report_all else np.zeros(n, dtype=bool)
    reported = rank < limit[read]
    hit_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(limit, out=hit_offsets[1:])

    # XA: the other best and second-best placements, best-stratum mode only
    if self.report_all or self.max_alignments is not None:
        alt = np.zeros(h, dtype=bool)
    else:
        others = n_best + n_second - 1
        alt = (rank >= 1) & (rank < (n_best + n_second)[read]) & (others[read] <= self.xa_limit)
    alt_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(read[alt], minlength=n), out=alt_offsets[1:])

    return MappingResult(
        names=names,
        contig_names=tuple(self.index.contigs.names),
        read=read[reported],
        contig=contig[reported],
        pos=pos[reported],
        strand=strand[reported],
        mismatches=mm[reported],
        secondary=rank[reported] > 0,
        hit_offsets=hit_offsets,
        best=best,
        second=second,
        n_best=n_best,
        n_second=n_second,
        n_found=n_found,
        mapq=mapq,
        status=status,
        alt_offsets=alt_offsets,
        alt_contig=contig[alt],
        alt_pos=pos[alt],
        alt_strand=strand[alt],
        alt_mismatches=mm[alt],
        capped=capped,
    )


def name_hashes(batch) -> np.ndarray:
    """64-bit hash of every read name (polynomial over the bytes, then splitmix64).

    """
    n = len(batch)
    out = np.zeros(n, dtype=np.uint64)
    if n == 0 or batch.names.size == 0:
        return out
    name_len = np.diff(batch.name_offsets)
    within = np.arange(batch.names.size) - np.repeat(batch.name_offsets[:-1], name_len)
    with np.errstate(over="ignore"):
        powers = np.cumprod(np.full(int(name_len.max()), 0x100000001B3, dtype=np.uint64))
        terms = batch.names.astype(np.uint64) * powers[within]
        nonempty = name_len > 0
        out[nonempty] = np.add.reduceat(terms, batch.name_offsets[:-1][nonempty])
        out += name_len.astype(np.uint64)
        out ^= out >> np.uint64(30)
        out *= np.uint64(0xBF58476D1CE4E5B9)
        out ^= out >> np.uint64(27)
        out *= np.uint64(0x94D049BB133111EB)
        out ^= out >> np.uint64(31)
    return out

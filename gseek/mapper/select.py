"""What to report of a batch's placements (:func:`select_placements`), in Numba passes; MAPQ.

Host-side code, not a kernel (no ``.cu`` twin). Placements arrive unordered,
one row each; every read's rows are independent, so the work is two parallel
passes over reads around a counting sort by read:

1. ``group`` (serial, linear) -- a counting sort of the rows by read;
2. ``strata`` -- every read sorts its rows by (mismatches, reference
   position, strand) and finds its best and second-best strata (mismatches
   and sizes);
3. ``plan`` -- per read, how many rows to report (``limit``) and how many XA
   entries (``n_alt``), the tie rotation from the name's hash, and their
   offsets (the caller adds MAPQ, vectorised);
4. ``fill`` -- every read writes its reported rows (best stratum rotated so
   that entry ``rot`` comes first: the deterministic tie choice) and its XA
   entries (ranks ``1 .. n_alt``).

Each read's output depends only on its own rows, so the result is the same
for any thread count and batch split. ``tests/reference_select.py`` is the
readable numpy reference it must equal array for array.
"""

from __future__ import annotations

import numba
import numpy as np

from gseek.kernels._jit import njit
from gseek.seqio import SequenceBatch

from .result import MappingResult, Placements, ReadNames

__all__ = ["select_placements", "mapq_scale", "MAPQ_MAX", "MISMATCH_PHRED"]

#: MAPQ of a unique best placement with no second-best one within ``k``.
MAPQ_MAX = 60
#: Phred weight of one extra mismatch in the MAPQ model (``docs/sam.md``).
MISMATCH_PHRED = 20

#: Reads with at most this many rows are sorted in place (insertion sort); more: argsort.
_INSERTION_MAX = 32
_P = np.uint64(0x100000001B3)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


@njit(cache=True, nogil=True)
def group(read, n_reads):
    """Rows grouped by read (stable): ``(first, perm)``, read ``r``'s rows are
    ``perm[first[r]:first[r+1]]``."""
    first = np.zeros(n_reads + 1, dtype=np.int64)
    for j in range(read.size):
        first[read[j] + 1] += 1
    for r in range(n_reads):
        first[r + 1] += first[r]
    fill = first[:-1].copy()
    perm = np.empty(read.size, dtype=np.int64)
    for j in range(read.size):
        r = read[j]
        perm[fill[r]] = j
        fill[r] += 1
    return first, perm


@njit(cache=True, nogil=True, parallel=True)
def strata(first, perm, contig_start, contig, pos, strand, mm, key, best, second, n_best, n_second):
    """Sort every read's rows by ``key`` -- mismatches, then the position in the
    reference (contigs in order, ``contig_start``), then strand (- before +):
    unique within a read, written here -- and find the read's strata."""
    for r in numba.prange(first.size - 1):
        a, b = first[r], first[r + 1]
        for i in range(a, b):
            j = perm[i]
            key[j] = ((np.int64(mm[j]) << 59) | ((contig_start[contig[j]] + np.int64(pos[j])) << 1)
                      | np.int64(strand[j] > 0))
        if b - a > _INSERTION_MAX:
            seg = perm[a:b].copy()
            order = np.argsort(key[seg])
            for i in range(b - a):
                perm[a + i] = seg[order[i]]
        else:  # few rows (the usual case): in place, no allocation in the parallel loop
            for i in range(a + 1, b):
                j, kj = perm[i], key[perm[i]]
                t = i
                while t > a and key[perm[t - 1]] > kj:
                    perm[t] = perm[t - 1]
                    t -= 1
                perm[t] = j
        best[r] = -1
        second[r] = -1
        n_best[r] = 0
        n_second[r] = 0
        if b == a:
            continue
        best[r] = mm[perm[a]]
        i = a
        while i < b and mm[perm[i]] == best[r]:
            i += 1
        n_best[r] = i - a
        if i < b:
            second[r] = mm[perm[i]]
            j = i
            while j < b and mm[perm[j]] == second[r]:
                j += 1
            n_second[r] = j - i


@njit(cache=True, nogil=True, parallel=True)
def plan(first, n_best, n_second, names, name_off, limit_max, capping, xa_limit,
         n_found, rot, capped, hit_off, alt_off):
    """Per read: ``n_found`` (rows), ``rot`` (the tie choice: name hash modulo
    ``n_best``), rows to report (at most ``limit_max``; -1: all) and whether
    that cuts (``capped``, only when ``capping``: ``--all --max-hits``), XA
    entries (the other best and second-best rows when at most ``xa_limit``;
    -1: no XA); then ``hit_off`` and ``alt_off``, their offsets."""
    n = first.size - 1
    hit_off[0] = 0
    alt_off[0] = 0
    for r in numba.prange(n):
        found = first[r + 1] - first[r]
        n_found[r] = found
        rot[r] = np.int64(_name_hash(names, name_off, r) % np.uint64(max(n_best[r], 1)))
        limit = found if limit_max < 0 else min(found, limit_max)
        capped[r] = capping and limit < found
        hit_off[r + 1] = limit
        others = n_best[r] + n_second[r] - 1
        alt_off[r + 1] = max(others, 0) if 0 <= xa_limit and others <= xa_limit else 0
    for r in range(n):
        hit_off[r + 1] += hit_off[r]
        alt_off[r + 1] += alt_off[r]


@njit(cache=True, nogil=True, inline="always")
def _ranked(a, n_best, rot, rank):
    """Row offset (from ``a``) of the entry of ``rank``: the best stratum rotated by ``rot``."""
    if rank < n_best:
        return a + (rank + rot) % n_best
    return a + rank


@njit(cache=True, nogil=True, parallel=True)
def fill(first, perm, n_best, rot, hit_off, alt_off, contig, pos, strand, mm,
         out_read, out_contig, out_pos, out_strand, out_mm, out_secondary,
         alt_contig, alt_pos, alt_strand, alt_mm):
    """Every read's reported rows (ranks ``0 .. limit-1``) and XA entries (ranks ``1 .. n_alt``)."""
    for r in numba.prange(first.size - 1):
        a = first[r]
        nb, t = n_best[r], rot[r]
        h = hit_off[r]
        for rank in range(hit_off[r + 1] - h):
            j = perm[_ranked(a, nb, t, rank)]
            out_read[h + rank] = r
            out_contig[h + rank] = contig[j]
            out_pos[h + rank] = pos[j]
            out_strand[h + rank] = strand[j]
            out_mm[h + rank] = mm[j]
            out_secondary[h + rank] = rank > 0
        x = alt_off[r]
        for i in range(alt_off[r + 1] - x):
            j = perm[_ranked(a, nb, t, i + 1)]
            alt_contig[x + i] = contig[j]
            alt_pos[x + i] = pos[j]
            alt_strand[x + i] = strand[j]
            alt_mm[x + i] = mm[j]


@njit(cache=True, nogil=True, inline="always")
def _name_hash(names, name_off, r):
    """64-bit hash of name ``r``: sum of ``byte_i * P**(i+1)`` (mod 2**64) plus
    the length, then splitmix64's finaliser."""
    acc = np.uint64(0)
    p = _P
    for i in range(name_off[r], name_off[r + 1]):
        acc += np.uint64(names[i]) * p
        p *= _P
    acc += np.uint64(name_off[r + 1] - name_off[r])
    acc ^= acc >> np.uint64(30)
    acc *= _M1
    acc ^= acc >> np.uint64(27)
    acc *= _M2
    acc ^= acc >> np.uint64(31)
    return acc


@njit(cache=True, nogil=True, parallel=True)
def name_hashes(names, name_off):
    """:func:`_name_hash` of every name."""
    n = name_off.size - 1
    out = np.empty(n, dtype=np.uint64)
    for r in numba.prange(n):
        out[r] = _name_hash(names, name_off, r)
    return out


# --------------------------------------------------------------------------- the stage


def select_placements(batch: SequenceBatch, placements: Placements, contig_offsets: np.ndarray,
                      contig_names: tuple[str, ...], *, report_all: bool = False, max_hits: int | None = None,
                      max_alignments: int | None = None, xa_limit: int = 3) -> MappingResult:
    """Report ``placements`` of ``batch`` (host): best stratum, counts, the tie choice,
    ``-k`` (``max_alignments``) / ``--all`` (``report_all``, up to ``max_hits``), MAPQ, XA."""
    n = len(batch)
    p = placements
    first, perm = group(np.ascontiguousarray(p.read, dtype=np.int64), n)
    best = np.empty(n, dtype=np.int16)
    second = np.empty(n, dtype=np.int16)
    n_best = np.empty(n, dtype=np.int64)
    n_second = np.empty(n, dtype=np.int64)
    key = np.empty(len(p), dtype=np.int64)
    strata(first, perm, contig_offsets, p.contig, p.pos, p.strand, p.mismatches, key, best, second, n_best,
           n_second)
    mapq = mapq_scale(best, second, n_best, n_second)
    if report_all:  # every row, or up to --max-hits (capped reads carry ZH)
        limit_max, xa = (-1 if max_hits is None else max_hits), -1
    elif max_alignments is not None:
        limit_max, xa = max_alignments, -1
    else:  # best stratum: one row, and XA for the other best and second-best ones
        limit_max, xa = 1, xa_limit
    n_found, rot = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    capped = np.empty(n, dtype=bool)
    hit_offsets, alt_offsets = np.empty(n + 1, dtype=np.int64), np.empty(n + 1, dtype=np.int64)
    # the tie choice: the best stratum rotated so that entry hash(name) % n_best comes first
    plan(first, n_best, n_second, batch.names, batch.name_offsets, limit_max, report_all, xa, n_found, rot, capped,
         hit_offsets, alt_offsets)
    h, x = int(hit_offsets[-1]), int(alt_offsets[-1])
    out = [np.empty(h, dtype=t) for t in (np.int64, p.contig.dtype, p.pos.dtype, p.strand.dtype, np.int16, bool)]
    alt = [np.empty(x, dtype=t) for t in (p.contig.dtype, p.pos.dtype, p.strand.dtype, np.int16)]
    fill(first, perm, n_best, rot, hit_offsets, alt_offsets, p.contig, p.pos, p.strand, p.mismatches, *out, *alt)
    return MappingResult(
        names=ReadNames(batch.names, batch.name_offsets), contig_names=tuple(contig_names),
        read=out[0], contig=out[1], pos=out[2], strand=out[3], mismatches=out[4], secondary=out[5],
        hit_offsets=hit_offsets, best=best, second=second, n_best=n_best, n_second=n_second, n_found=n_found,
        mapq=mapq, status=p.status, alt_offsets=alt_offsets, alt_contig=alt[0], alt_pos=alt[1], alt_strand=alt[2],
        alt_mismatches=alt[3], capped=capped,
    )


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

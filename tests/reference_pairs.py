"""Slow, readable reference of paired-end mapping (brute force), for tests/test_pairs.py.

Every placement of a mate is found by trying every window of every contig on
both strands; a pair is concordant as bowtie 1 defines it (checked against
bowtie 1.3.1 on hand-made mates: the upstream mate must start and end
strictly before the downstream one; same start, containment and dovetailing
are not concordant): ``--fr`` = mate 1 forward upstream of mate 2 reverse, or
mate 2 forward upstream of mate 1 reverse; ``--rf`` = mate 1 reverse upstream
of mate 2 forward, or mate 2 reverse upstream of mate 1 forward; ``--ff`` =
mate 1 forward upstream of mate 2 forward, or mate 2 reverse upstream of mate
1 reverse. The fragment runs from the leftmost to the rightmost base of the
two mates and must lie within ``[minins, maxins]``.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

COMPLEMENT = np.array([3, 2, 1, 0, 4], dtype=np.uint8)


def placements(contigs: list[np.ndarray], read: np.ndarray, k: int) -> list[tuple[int, int, int, int]]:
    """Every ``(contig, pos, strand, mismatches)`` of ``read`` (codes) within ``k``; N is a mismatch."""
    out = []
    n = read.size
    for strand, r in ((1, read), (-1, COMPLEMENT[read[::-1]])):
        for c, ref in enumerate(contigs):
            if ref.size < n or n == 0:
                continue
            win = sliding_window_view(ref, n)
            mm = ((win != r) | (win == 4) | (r == 4)).sum(axis=1)
            for pos in np.flatnonzero(mm <= k).tolist():
                out.append((c, pos, strand, int(mm[pos])))
    return out


def fragment(m1, len1, m2, len2, orientation: str, minins: int, maxins: int) -> int | None:
    """The fragment length of placements ``m1``/``m2`` (as :func:`placements`) when concordant, else None."""
    (c1, p1, s1, _), (c2, p2, s2, _) = m1, m2
    if c1 != c2:
        return None
    wanted = {"fr": {(1, -1): 1, (-1, 1): 2}, "rf": {(-1, 1): 1, (1, -1): 2},
              "ff": {(1, 1): 1, (-1, -1): 2}}[orientation]
    up = wanted.get((s1, s2))
    if up is None:
        return None
    (us, ue), (ds, de) = ((p1, p1 + len1), (p2, p2 + len2)) if up == 1 else ((p2, p2 + len2), (p1, p1 + len1))
    if not (us < ds and ue < de):
        return None
    frag = max(p1 + len1, p2 + len2) - min(p1, p2)
    return frag if minins <= frag <= maxins else None


def concordant(contigs, read1, read2, k, orientation="fr", minins=0, maxins=250):
    """Every concordant pair of placements: ``{(placement1, placement2): fragment}``; and each mate's placements."""
    a, b = placements(contigs, read1, k), placements(contigs, read2, k)
    pairs = {}
    for x in a:
        for y in b:
            f = fragment(x, read1.size, y, read2.size, orientation, minins, maxins)
            if f is not None:
                pairs[(x, y)] = f
    return pairs, a, b

"""Compare two BLAST tabular reports (gseek's and blastn's): recall, score and e-value agreement.

Both files hold ``-outfmt "6 qseqid sseqid sstrand qstart qend sstart send evalue bitscore"``
lines. An HSP of the reference with e-value at most ``max_evalue`` is *found* when the other
report has an HSP of the same query, subject and strand overlapping it by at least ``overlap``
of each one's length on the query and on the subject (reciprocal); matched HSPs then compare
bit scores and e-values. The issue's bar: recall >= 99 %, bit score within 1, e-value within
5 %, at most 2 % of our HSPs (e <= 1e-10) without a counterpart.

>>> a = ["q\\ts\\tplus\\t1\\t100\\t1\\t100\\t1e-40\\t180"]
>>> compare_reports(a, ["q\\ts\\tplus\\t1\\t98\\t1\\t98\\t1.02e-40\\t179.5"])["recall"]
1.0
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable

__all__ = ["COMPARE_FIELDS", "compare_reports"]

COMPARE_FIELDS = "6 qseqid sseqid sstrand qstart qend sstart send evalue bitscore"


def _parse(lines: Iterable[str]):
    out = []
    for line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        q, s, strand, qa, qb, sa, sb, e, bits = line.rstrip("\n").split("\t")[:9]
        qa, qb, sa, sb = int(qa), int(qb), int(sa), int(sb)
        out.append((q, s, strand, min(qa, qb), max(qa, qb), min(sa, sb), max(sa, sb), float(e), float(bits)))
    return out


def _overlap(a0: int, a1: int, b0: int, b1: int) -> float:
    inter = min(a1, b1) - max(a0, b0) + 1
    if inter <= 0:
        return 0.0
    return min(inter / (a1 - a0 + 1), inter / (b1 - b0 + 1))


def _pools(hsps: list[tuple]) -> dict[tuple, tuple[list[int], list[tuple]]]:
    """Per (query, subject, strand): the HSPs' query starts, sorted, and the HSPs as (start, input order, HSP)."""
    by_key: dict[tuple, list] = defaultdict(list)
    for i, h in enumerate(hsps):
        by_key[h[:3]].append((h[3], i, h))
    for entries in by_key.values():
        entries.sort(key=lambda e: e[:2])
    return {k: ([e[0] for e in v], v) for k, v in by_key.items()}


def _match(h: tuple, pool: tuple[list[int], list[tuple]] | None, overlap: float) -> tuple | None:
    """The HSP of ``pool`` overlapping ``h`` by ``overlap`` of each one's length on both sequences whose bit
    score is nearest ``h``'s (the first in input order of equals), or None. Only the query starts that can
    overlap so much are tried: an HSP starting ``d`` before ``h`` shares at most its length less ``d``, and
    one after it ``h``'s length less ``d`` (a pool of thousands, a repeat's, stays cheap)."""
    if pool is None:
        return None
    starts, entries = pool
    if overlap > 0:
        length = h[4] - h[3] + 1
        lo = bisect_left(starts, h[3] - length * (1 - overlap) / overlap - 1)
        hi = bisect_right(starts, h[3] + length * (1 - overlap) + 1)
    else:
        lo, hi = 0, len(starts)
    best = None  # (bit score difference, input order, HSP)
    for _, i, o in entries[lo:hi]:
        if _overlap(h[3], h[4], o[3], o[4]) >= overlap and _overlap(h[5], h[6], o[5], o[6]) >= overlap:
            d = abs(o[8] - h[8])
            if best is None or (d, i) < best[:2]:
                best = (d, i, o)
    return None if best is None else best[2]


def compare_reports(ours: Iterable[str], reference: Iterable[str], max_evalue: float = 1e-10,
                    overlap: float = 0.9) -> dict:
    """Recall of ``reference``'s HSPs (e <= ``max_evalue``) in ``ours`` and the agreement of matches.

    Returns ``recall``, ``expected`` (reference HSPs counted), ``found``, ``bits_within_1``
    and ``evalue_within_5pct`` (fractions of the matched), ``extra`` (our HSPs with e <=
    ``max_evalue`` and no reference counterpart, a fraction of ours) and ``missed`` (up to 20 lines).
    """
    ours_h, ref_h = _parse(ours), _parse(reference)
    by_key, ref_key = _pools(ours_h), _pools(ref_h)
    expected = [h for h in ref_h if h[7] <= max_evalue]
    found, bits_ok, e_ok, missed = 0, 0, 0, []
    for h in expected:
        o = _match(h, by_key.get(h[:3]), overlap)
        if o is None:
            missed.append("\t".join(map(str, h)))
            continue
        found += 1
        bits_ok += abs(o[8] - h[8]) <= 1.0
        e_ok += (h[7] == o[7]) or (h[7] > 0 and abs(o[7] - h[7]) <= 0.05 * h[7])
    mine = [h for h in ours_h if h[7] <= max_evalue]
    extra = sum(_match(h, ref_key.get(h[:3]), overlap) is None for h in mine)
    return {"recall": found / len(expected) if expected else 1.0, "expected": len(expected), "found": found,
            "bits_within_1": bits_ok / found if found else 1.0, "evalue_within_5pct": e_ok / found if found else 1.0,
            "extra": extra / len(mine) if mine else 0.0, "ours": len(mine), "missed": missed[:20]}

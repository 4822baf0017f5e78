"""gseek.blast.compare against a slow readable reference: the recall and agreement of two reports.

The reference is compare_reports as first written: every HSP of a key tried (quadratic in a key's HSPs); the
module tries only the query starts that can overlap enough. Random reports with many HSPs a key, nested and
shifted copies, equal bit scores (ties: the first in input order wins) and both strands must give equal results.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from gseek.blast.compare import _overlap, _parse, compare_reports


def reference_compare(ours, reference, max_evalue=1e-10, overlap=0.9) -> dict:
    ours_h, ref_h = _parse(ours), _parse(reference)
    by_key, ref_key = defaultdict(list), defaultdict(list)
    for h in ours_h:
        by_key[h[:3]].append(h)
    for h in ref_h:
        ref_key[h[:3]].append(h)

    def match(h, pool):
        best = None
        for o in pool:
            if _overlap(h[3], h[4], o[3], o[4]) >= overlap and _overlap(h[5], h[6], o[5], o[6]) >= overlap \
                    and (best is None or abs(o[8] - h[8]) < abs(best[8] - h[8])):
                best = o
        return best

    expected = [h for h in ref_h if h[7] <= max_evalue]
    found, bits_ok, e_ok, missed = 0, 0, 0, []
    for h in expected:
        o = match(h, by_key.get(h[:3], []))
        if o is None:
            missed.append("\t".join(map(str, h)))
            continue
        found += 1
        bits_ok += abs(o[8] - h[8]) <= 1.0
        e_ok += (h[7] == o[7]) or (h[7] > 0 and abs(o[7] - h[7]) <= 0.05 * h[7])
    mine = [h for h in ours_h if h[7] <= max_evalue]
    extra = sum(match(h, ref_key.get(h[:3], [])) is None for h in mine)
    return {"recall": found / len(expected) if expected else 1.0, "expected": len(expected), "found": found,
            "bits_within_1": bits_ok / found if found else 1.0, "evalue_within_5pct": e_ok / found if found else 1.0,
            "extra": extra / len(mine) if mine else 0.0, "ours": len(mine), "missed": missed[:20]}


def _report(rng, base: list[tuple] | None, n: int) -> list[str]:
    """``n`` HSP lines over 3 queries x 2 subjects x 2 strands; from ``base`` (the other report) where given,
    mostly copies, exact or with their ends moved up to 30, bit scores nudged onto a few values (ties)."""
    lines = []
    for _ in range(n):
        if base and rng.random() < 0.8:
            q, s, strand, qa, qb, sa, sb, e, bits = base[rng.integers(len(base))]
            move = 0 if rng.random() < 0.3 else 30  # a third exact copies, the others moved up to 30
            qa, sa = qa + int(rng.integers(-move, move + 1)), sa + int(rng.integers(-move, move + 1))
            qb, sb = qb + int(rng.integers(-move, move + 1)), sb + int(rng.integers(-move, move + 1))
            bits = bits + float(rng.choice([0.0, 0.5, 1.0, 2.0]))
        else:
            q, s, strand = f"q{rng.integers(3)}", f"s{rng.integers(2)}", ["plus", "minus"][rng.integers(2)]
            qa, length = int(rng.integers(1, 2000)), int(rng.integers(1, 400))
            qb = qa + length
            sa = int(rng.integers(1, 2000))
            sb = sa + length + int(rng.integers(-5, 6))
            bits = float(rng.choice([20.0, 50.0, 50.5, 80.0, 200.0]))
            e = float(rng.choice([1e-30, 1e-12, 1e-10, 1e-5, 0.0]))
        qa, qb, sa, sb = max(qa, 1), max(qb, 1), max(sa, 1), max(sb, 1)
        if strand == "minus":
            sa, sb = max(sa, sb), min(sa, sb)
        lines.append(f"{q}\t{s}\t{strand}\t{qa}\t{qb}\t{sa}\t{sb}\t{e:g}\t{bits:g}")
    return lines


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("overlap", [0.9, 0.5, 1.0, 0.0])
def test_compare_reports_matches_the_reference(seed, overlap):
    rng = np.random.default_rng(seed)
    theirs = _report(rng, None, 300)
    ours = _report(rng, _parse(theirs), 400)
    got = compare_reports(ours, theirs, overlap=overlap)
    want = reference_compare(ours, theirs, overlap=overlap)
    assert got == want
    every = compare_reports(ours, theirs, max_evalue=10.0, overlap=overlap)
    assert every == reference_compare(ours, theirs, max_evalue=10.0, overlap=overlap)
    assert want["found"] > 0 and (want["found"] < want["expected"] or overlap == 0.0)  # both outcomes met

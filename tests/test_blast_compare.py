"""gseek.blast.compare against a slow readable reference: the recall and agreement of two reports.

The reference match is compare_reports' first one: every HSP of the key tried in input order, the nearest bit
score kept (the first of equals); the module tries only the query starts that can overlap enough. Random reports
with many HSPs a key, exact and shifted copies, equal bit scores and both strands must give equal results with
either match.
"""

from __future__ import annotations

import numpy as np
import pytest

from gseek.blast import compare
from gseek.blast.compare import _overlap, _parse, compare_reports


def reference_match(h, pool, overlap):
    """Every HSP of ``pool`` (``compare._pools``' entries, in input order) tried: quadratic in a key's HSPs."""
    best = None
    for _, _, o in sorted(pool[1], key=lambda e: e[1]) if pool else []:
        if _overlap(h[3], h[4], o[3], o[4]) >= overlap and _overlap(h[5], h[6], o[5], o[6]) >= overlap \
                and (best is None or abs(o[8] - h[8]) < abs(best[8] - h[8])):
            best = o
    return best


def reference_compare(monkeypatch, ours, theirs, **kw) -> dict:
    with monkeypatch.context() as m:
        m.setattr(compare, "_match", reference_match)
        return compare_reports(ours, theirs, **kw)


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
def test_compare_reports_matches_the_reference(monkeypatch, seed, overlap):
    rng = np.random.default_rng(seed)
    theirs = _report(rng, None, 300)
    ours = _report(rng, _parse(theirs), 400)
    got = compare_reports(ours, theirs, overlap=overlap)
    want = reference_compare(monkeypatch, ours, theirs, overlap=overlap)
    assert got == want
    every = compare_reports(ours, theirs, max_evalue=10.0, overlap=overlap)
    assert every == reference_compare(monkeypatch, ours, theirs, max_evalue=10.0, overlap=overlap)
    assert want["found"] > 0 and (want["found"] < want["expected"] or overlap == 0.0)  # both outcomes met

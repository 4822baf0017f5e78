"""The blastn task's score-only rounds with their seeds and results on the device
(``gseek.blast.device_gapped``) give the host loop's results exactly: the test of the next round's
seeds against a round's HSPs (``_outside_on``) against ``rounds._outside`` on NumPy, then whole
searches with every round of the task sent through them, on the CPU (NumPy) and on a GPU, against
the host loop's lines and counts."""

from __future__ import annotations

import io
from types import SimpleNamespace

import numpy as np
import pytest

from gseek.blast import device_gapped as D
from gseek.blast.report import write_tabular
from gseek.blast.rounds import _found_block, _outside
from gseek.blast.searcher import BlastSearcher

from test_blast_search import lambda_text, queries  # noqa: F401  (the fixtures: the lambda text, the test queries)


@pytest.mark.parametrize("pairs", [3, 1 << 22])
@pytest.mark.parametrize("seed", range(4))
def test_outside_on_the_device_equals_the_host_pass(monkeypatch, seed, pairs):
    """Seeds near and inside random HSPs (shared keys, equal subject starts, points on the edges)."""
    monkeypatch.setattr(D, "_PAIRS", pairs)  # 3: the pairs tested a few seeds at a time
    rng = np.random.default_rng(seed)
    n_hsp, n_seed, keys = 400, 3000, 6
    key = rng.integers(0, keys, n_hsp)
    qa = rng.integers(0, 5000, n_hsp)
    sa = rng.integers(0, 4000, n_hsp) // 7 * 7  # equal starts
    qb, sb = qa + rng.integers(1, 600, n_hsp), sa + rng.integers(1, 600, n_hsp)
    res = np.stack([rng.integers(0, 100, n_hsp), qa, qb, sa, sb]).astype(np.int64)
    # seeds: random, and points of the HSPs' rectangles and their corners (inside or just off)
    pick = rng.integers(0, n_hsp, n_seed)
    t = rng.random(n_seed)
    q = np.where(t < 0.3, rng.integers(0, 5600, n_seed), qa[pick] + (t * (qb[pick] - qa[pick])).astype(np.int64))
    s = np.where(t < 0.3, rng.integers(0, 4600, n_seed), sa[pick] + (t * (sb[pick] - sa[pick])).astype(np.int64))
    edge = rng.random(n_seed) < 0.2
    q[edge], s[edge] = qb[pick[edge]] - rng.integers(0, 2, edge.sum()), sb[pick[edge]] - rng.integers(0, 2, edge.sum())
    seed_key = np.where(t < 0.3, rng.integers(0, keys, n_seed), key[pick])
    block = _found_block(key, {k: res[j] for j, k in enumerate(("q_start", "q_end", "s_start", "s_end"), 1)})
    rest = np.sort(rng.choice(n_seed, n_seed // 2, replace=False))
    want = _outside(rest, seed_key, q, s, [block])
    cols = SimpleNamespace(key=seed_key, mid_q=q, mid_s=s)
    got = D._outside_on(np, cols, rest, res, key)
    assert 0 < want.size < rest.size
    assert got.tolist() == want.tolist()
    assert D._outside_on(np, cols, rest[:0], res, key).size == 0
    assert D._outside_on(np, cols, rest, res[:, :0], key[:0]).tolist() == rest.tolist()


def _lines(hits) -> list[str]:
    out = io.StringIO()
    write_tabular(hits, out, "6 std btop")
    return out.getvalue().splitlines()


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("margin, ahead, chunk, slack", [(128, 0, 1 << 18, 1e-6), (16, 0, 8, 10.0), (16, 40, 8, 1e-6)])
def test_score_only_rounds_on_the_device_change_nothing(lambda_text, queries, monkeypatch, device, margin, ahead,
                                                        chunk, slack):
    """Every score-only round through ``score_only_rounds`` (several launches a round with ``chunk``;
    a window of ``margin`` bases cutting extensions short, done again with the query's reach; with
    ``ahead``, the rounds that take fewer seeds left to the host loop; with a large e-value ``slack``,
    HSPs far above the cutoff sent back, the host's e-values deciding): the host loop's lines, counts."""
    import gseek.blast.gapped as gapped_module

    monkeypatch.setattr(gapped_module, "_PRELIM_MARGIN", margin)
    monkeypatch.setattr(gapped_module, "_EXTEND_CHUNK", chunk)
    monkeypatch.setattr(gapped_module, "_AHEAD", {"cpu": ahead, "gpu": ahead})
    monkeypatch.setattr(D, "_PAIRS", 5)
    monkeypatch.setattr(D, "_EVALUE_SLACK", slack)
    monkeypatch.setattr(gapped_module, "_DEVICE_ROUNDS", {"cpu": None, "gpu": None})
    host = BlastSearcher(lambda_text, task="blastn", device="cpu")
    want = _lines(host.search(queries))
    assert host.counts["rounds"] >= 3
    if margin < 128:
        assert host.counts["done again with the query's reach, score only"] > 0
    on_device = []
    rounds = D.score_only_rounds

    def counted(passes, *a, **k):
        before = passes.counts.get("rounds", 0)
        out = rounds(passes, *a, **k)
        on_device.append(passes.counts.get("rounds", 0) - before)
        return out

    monkeypatch.setattr(gapped_module, "score_only_rounds", counted)
    monkeypatch.setattr(gapped_module, "_DEVICE_ROUNDS", {"cpu": 0, "gpu": 0})
    searcher = BlastSearcher(lambda_text, task="blastn", device=device)
    assert _lines(searcher.search(queries)) == want
    assert searcher.counts == host.counts
    assert on_device and 0 < on_device[0] <= host.counts["rounds"]
    if not ahead:
        assert on_device[0] == host.counts["rounds"]


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_a_last_round_under_ahead_with_no_seed_left_counts_as_the_host_loops(lambda_text, monkeypatch, device):
    """A round that takes fewer than ``_AHEAD`` seeds and leaves none (here the only one: a 40 bp piece of the
    lambda genome, two candidates far apart) stays on the device; the host loop would have looked for seeds to extend
    ahead of it and found none, counting 0 of them: the same counts (the key with 0), not only the same lines."""
    import gseek.blast.gapped as gapped_module
    from gseek.datasets import lambda_genome
    from gseek.seqio import read_fastx

    piece = read_fastx(str(lambda_genome())).sequence(0)[20000:20040]
    monkeypatch.setattr(gapped_module, "_AHEAD", {"cpu": 40, "gpu": 40})
    monkeypatch.setattr(gapped_module, "_DEVICE_ROUNDS", {"cpu": None, "gpu": None})
    host = BlastSearcher(lambda_text, task="blastn", device="cpu")
    want = _lines(host.search(piece))
    assert want and host.counts["rounds"] == 1 and host.counts["extended ahead of their round"] == 0
    monkeypatch.setattr(gapped_module, "_DEVICE_ROUNDS", {"cpu": 0, "gpu": 0})
    searcher = BlastSearcher(lambda_text, task="blastn", device=device)
    assert _lines(searcher.search(piece)) == want
    assert searcher.counts == host.counts

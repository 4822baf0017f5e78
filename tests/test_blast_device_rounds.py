"""The gapped rounds' passes with a device beside them (``gseek.blast.device_rounds``) give the host
passes' results exactly: on NumPy here against ``_select_round``, ``_found_block`` and NumPy's
stable argsort (and a brute-force isolation check), then whole searches with every round pass sent
through them, on the CPU and on a GPU, against the host passes' lines."""

from __future__ import annotations

import io

import numpy as np
import pytest

from gseek.backend import get_backend
from gseek.blast import device_rounds as D
from gseek.blast.report import write_tabular
from gseek.blast.rounds import _DIAG_BAND, _found_block, _select_round
from gseek.blast.searcher import BlastSearcher

from test_blast_search import lambda_text, queries  # noqa: F401  (the fixtures: the lambda text, the test queries)


def _candidates(seed: int, n: int = 3000, keys: int = 5):
    """Rank-ordered seeds: random ones over a wide plane and clusters of near ones (the seeds of
    one alignment), negative diagonals included; ``apart`` the same within a key."""
    rng = np.random.default_rng(seed)
    key = rng.integers(0, keys, n)
    s = rng.integers(0, 2_000_000, n)
    diag = rng.integers(-50_000, 2_000_000, n)
    for c in rng.choice(n, 40, replace=False):  # clusters: a few dozen seeds near seed c
        m = rng.choice(n, 30, replace=False)
        key[m] = key[c]
        s[m] = s[c] + rng.integers(-900, 900, 30)
        diag[m] = diag[c] + rng.integers(-400, 400, 30)
    apart = (np.array([300, 700, 64, 1500, 1000])[key % 5]).astype(np.int64)
    return key.astype(np.int64), s.astype(np.int64), diag.astype(np.int64), apart


@pytest.mark.parametrize("seed", range(4))
def test_isolated_seeds_match_a_brute_force_check(seed):
    """A seed is isolated when no other seed of its key lies in its cell or a neighbouring one."""
    key, s, diag, apart = _candidates(seed, n=1500)
    cs, cd = s // apart, diag // _DIAG_BAND
    brute = [not any(key[j] == key[i] and abs(cs[j] - cs[i]) <= 1 and abs(cd[j] - cd[i]) <= 1
                     for j in range(key.size) if j != i) for i in range(key.size)]
    got = D.isolated(np, key, s, diag, apart)
    assert 0 < sum(brute) < key.size
    assert got.tolist() == brute


@pytest.mark.parametrize("seed", range(6))
def test_select_round_with_isolated_seeds_equals_the_host_pass(seed):
    key, s, diag, apart = _candidates(seed)
    want = _select_round(key, s, diag, apart)
    assert 0 < np.count_nonzero(want) < key.size  # some seeds wait for a later round
    assert D.select_round(get_backend("cpu"), key, s, diag, apart).tolist() == want.tolist()
    # cells that do not fit in 62 bits: the host pass alone
    big = key + (1 << 40)
    assert D.isolated(np, big, s, diag, apart) is None
    assert D.select_round(get_backend("cpu"), big, s, diag, apart).tolist() == want.tolist()
    assert D.select_round(get_backend("cpu"), key[:0], s[:0], diag[:0], apart[:0]).size == 0


@pytest.mark.parametrize("score", [False, True])
def test_found_block_on_the_device_equals_the_host_pass(score):
    rng = np.random.default_rng(11)
    n = 5000
    key = rng.integers(0, 50, n)
    qa = rng.integers(0, 10_000, n)
    sa = rng.integers(0, 500, n)  # many equal (key, s_start) pairs: the sort must be stable
    res = {"q_start": qa, "q_end": qa + rng.integers(1, 900, n), "s_start": sa, "s_end": sa + rng.integers(1, 900, n)}
    sc = rng.integers(0, 1000, n) if score else None
    want_rows, want_reach = _found_block(key, res, sc)
    rows, reach = D.found_block(get_backend("cpu"), key, res, sc)
    assert reach == want_reach
    assert np.array_equal(rows, want_rows)
    # a combined key that does not fit: the host pass
    rows, reach = D.found_block(get_backend("cpu"), key + (1 << 23), res, sc)
    assert np.array_equal(rows[1:], want_rows[1:]) and reach == want_reach


def test_longest_first_is_a_stable_argsort():
    expect = np.random.default_rng(2).integers(0, 30, 10_000)
    assert D.longest_first(get_backend("cpu"), expect).tolist() == np.argsort(-expect, kind="stable").tolist()


def _lines(hits) -> list[str]:
    out = io.StringIO()
    write_tabular(hits, out, "6 std btop")
    return out.getvalue().splitlines()


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("task", ["blastn", "megablast"])
def test_every_round_pass_through_the_device_changes_nothing(lambda_text, queries, monkeypatch, device, task):
    """Every round's choice, found block and launch order through ``device_rounds`` (on a GPU:
    the device's sort and searches): the host passes' lines, with the same rounds."""
    import gseek.blast.gapped as gapped_module

    monkeypatch.setattr(gapped_module, "_EXTEND_CHUNK", 8)  # several launches a round: their order is sorted too
    host = BlastSearcher(lambda_text, task=task, device="cpu")
    want = _lines(host.search(queries))
    assert host.counts["rounds"] >= 2
    calls = {"select": 0, "block": 0, "order": 0}
    for name, key in (("select_round", "select"), ("found_block", "block"), ("longest_first", "order")):
        fn = getattr(gapped_module, name)

        def counted(*a, _fn=fn, _key=key, **k):
            calls[_key] += 1
            return _fn(*a, **k)

        monkeypatch.setattr(gapped_module, name, counted)
    monkeypatch.setattr(gapped_module, "_DEVICE_ROUNDS", {"cpu": 0, "gpu": 0})
    searcher = BlastSearcher(lambda_text, task=task, device=device)
    assert _lines(searcher.search(queries)) == want
    assert searcher.counts["rounds"] == host.counts["rounds"]
    assert min(calls.values()) > 0

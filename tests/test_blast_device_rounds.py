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
from gseek.blast import rounds as R
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


def _brute_isolated(key, s, diag, apart) -> list[bool]:
    """No other candidate of the key in the 3 x 3 neighbouring cells (all pairs at once)."""
    cs, cd = s // apart, diag // _DIAG_BAND
    near = (key[:, None] == key[None, :]) & (abs(cs[:, None] - cs[None, :]) <= 1) & (abs(cd[:, None] - cd[None, :]) <= 1)
    return (near.sum(axis=1) == 1).tolist()


def _gbp_candidates(seed: int, n: int = 3000):
    """Seeds as megablast's on a 1 Gbp database of 518 contigs: keys up to ~1.04M (2,000 query strands x
    518 contigs), subjects over the whole text, diagonals to ~1e9, ``apart`` 664 and others, crowded
    clusters (one alignment's seeds) and lone seeds; key x subject cells x diagonal cells ~1e19."""
    rng = np.random.default_rng(seed)
    contig = rng.integers(0, 518, n)
    strand = rng.choice(np.array([0, 1, 1999]), n)  # few keys: many seeds share one
    key = strand * 518 + contig
    s = contig * 2_037_000 + rng.integers(0, 2_037_000, n)
    q = rng.integers(0, 30_000, n)
    for c in rng.choice(n, 60, replace=False):  # clusters near seed c
        m = rng.choice(n, 25, replace=False)
        key[m], q[m] = key[c], q[c] + rng.integers(-700, 700, 25)
        s[m] = s[c] + rng.integers(-1500, 1500, 25)
    diag = s - q
    apart = np.array([664, 300, 1500])[key % 3]
    return key.astype(np.int64), s.astype(np.int64), diag.astype(np.int64), apart.astype(np.int64)


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("seed", range(3))
def test_isolated_cells_by_rows_where_the_product_does_not_fit(monkeypatch, device, seed):
    """Where key x subject cells x diagonal cells is past 62 bits (megablast at 1 Gbp: main's numbering
    answered None there), the cells numbered by rows give the brute-force answer; and so do rows forced
    (``_CELL_BITS`` small) on the wide random set, with the keys ranked first (smaller still), on NumPy
    and on a GPU's arrays; ``select_round`` then equals the host pass."""
    backend = get_backend(device)
    xp = backend.xp

    def got(*cols):
        with backend.active():
            return backend.to_host(D.isolated(xp, *(backend.asarray(c) for c in cols))).tolist()

    gbp = _gbp_candidates(seed)
    k, s, d, a = gbp
    assert (int(k.max()) + 1) * (int((s // a).max() - (s // a).min()) + 3) \
        * (int(d.max() // _DIAG_BAND - d.min() // _DIAG_BAND) + 3) >= 1 << 62
    want = _brute_isolated(*gbp)
    assert 0 < sum(want) < k.size
    assert got(*gbp) == want
    assert D.select_round(backend, *gbp).tolist() == _select_round(*gbp).tolist()
    wide = _candidates(seed, n=1500)
    want = _brute_isolated(*wide)
    for bits in (40, 33):  # rows; rows of ranked keys (5 keys x ~7k subject cells past 2^33 as key values x cells)
        monkeypatch.setattr(D, "_CELL_BITS", bits)
        assert got(wide[0] * 1_000_000, *wide[1:]) == want
    monkeypatch.setattr(D, "_CELL_BITS", 12)  # not even rows fit: None
    with backend.active():
        assert D.isolated(xp, *(backend.asarray(c) for c in wide)) is None


@pytest.mark.parametrize("seed", range(6))
def test_select_round_with_isolated_seeds_equals_the_host_pass(seed):
    key, s, diag, apart = _candidates(seed)
    want = _select_round(key, s, diag, apart)
    assert 0 < np.count_nonzero(want) < key.size  # some seeds wait for a later round
    assert D.select_round(get_backend("cpu"), key, s, diag, apart).tolist() == want.tolist()
    # keys whose cells do not fit in 62 bits as key x subject cells x diagonal cells: numbered by rows
    big = key * (1 << 40)
    assert D.select_round(get_backend("cpu"), big, s, diag, apart).tolist() == want.tolist()
    assert D.isolated(np, -big, s, diag, apart) is None  # a negative key: the host pass alone
    assert D.select_round(get_backend("cpu"), -big, s, diag, apart).tolist() == want.tolist()
    assert D.select_round(get_backend("cpu"), key[:0], s[:0], diag[:0], apart[:0]).size == 0


def _greedy(key, s, diag, apart) -> list[bool]:
    """The round's choice as BLAST+ makes it, slowly: in rank order, a candidate is taken unless a taken one
    of its key lies within ``apart`` on the subject and ``_DIAG_BAND`` diagonals."""
    taken: dict[int, list[int]] = {}
    out = []
    for c in range(key.size):
        mine = taken.setdefault(int(key[c]), [])
        ok = all(abs(s[c] - s[o]) > apart[c] or abs(diag[c] - diag[o]) > _DIAG_BAND for o in mine)
        if ok:
            mine.append(c)
        out.append(ok)
    return out


@pytest.mark.parametrize("seed", range(3))
def test_select_round_in_parts_of_keys_equals_the_serial_pass(monkeypatch, seed):
    """The choice in parts of keys on the host's threads (every round of 2^14 seeds or more): the
    serial pass's and the slow greedy's, for any number of parts; a few seeds: the serial pass."""
    sets = [_gbp_candidates(seed, n=20_000), _candidates(seed, n=20_000, keys=40)]
    for key, s, diag, apart in sets:
        want = _select_round(key, s, diag, apart)
        assert 0 < np.count_nonzero(want) < key.size
        assert want.tolist() == _greedy(key, s, diag, apart)
        for parts in (1, 3, 64):
            assert R._select_parts(key, s, diag, apart, parts).tolist() == want.tolist()
        assert R.select_round_parts(key, s, diag, apart).tolist() == want.tolist()
        monkeypatch.setattr(R, "PARTS_MIN", 1 << 30)
        assert R.select_round_parts(key, s, diag, apart).tolist() == want.tolist()
        monkeypatch.setattr(R, "PARTS_MIN", 1 << 14)
        assert D.select_round(get_backend("cpu"), key, s, diag, apart).tolist() == want.tolist()


@pytest.mark.parametrize("seed", range(3))
def test_select_round_refuses_the_empty_slots_key(seed):
    """Key -1 marks the serial pass's empty slots: a seed of key -1, once taken, would read as empty and the
    seeds after it be taken past their conflict with it. Both passes refuse it; any other key, negative
    too, is a key like the others (the slow greedy is the reference)."""
    key, s, diag, apart = _candidates(seed, n=1200, keys=3)
    key = key - 1  # keys -1, 0, 1
    for choose in (_select_round, lambda *a: R._select_parts(*a, 3), R.select_round_parts):
        with pytest.raises(ValueError, match="key is -1"):
            choose(key, s, diag, apart)
    key[key == -1] = -7
    want = _greedy(key, s, diag, apart)
    assert 0 < sum(want) < key.size
    assert _select_round(key, s, diag, apart).tolist() == want
    assert R._select_parts(key, s, diag, apart, 3).tolist() == want


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
    if task == "megablast":  # its crowded seeds: the host's pass in parts, no isolation test (_ISOLATED_FIRST)
        assert calls.pop("select") == 0
    assert min(calls.values()) > 0

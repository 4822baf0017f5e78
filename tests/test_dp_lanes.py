"""The CPU's lane-a-pair score-only DP (kernels/dp_lanes.py) against the reference and the one-pair kernels."""

from __future__ import annotations

import random

import numpy as np
import pytest

import reference_dp as ref
from gseek.backend import CpuBackend
from gseek.dp import Scoring, dp_flags, score_pairs
from gseek.dp import nwsw
from gseek.kernels import dp_lanes

FREE = ("query_start", "query_end", "target_start", "target_end")
MODES = [("global", ()), ("local", ())] + [("semiglobal", f) for f in (
    FREE, ("query_start", "query_end"), ("target_start", "target_end"), ("query_start", "target_end"),
    ("query_end",), ("target_start",), ("target_end",))]
SCHEMES = [
    (Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2), "ACGTN"),
    (Scoring(match=1, mismatch=-1, gap_open=0, gap_extend=1), "AC"),  # few letters: ties everywhere
    (Scoring(matrix="BLOSUM62", gap_open=11, gap_extend=1), "ARNDCQEGHILKMFPSTWYVBZX"),
]


def _mutate(rng: random.Random, s: str, letters: str) -> str:
    out = []
    for c in s:
        x = rng.random()
        out.append(rng.choice(letters) if x < 0.1 else "" if x < 0.13 else c + rng.choice(letters) if x < 0.16 else c)
    return "".join(out)


def _set(seed: int, letters: str, queries: int = 3, targets: int = 40, max_len: int = 30):
    """A few queries, each against many targets (more than LANES: groups cut within a query), of
    lengths 0 to max_len: related (a mutated copy, a piece), unrelated, repeats."""
    rng = random.Random(seed)
    qs, ts = [], []
    for k in range(queries):
        q = "".join(rng.choice(letters) for _ in range(rng.choice([0, 1, 2, max_len, rng.randint(1, max_len)])))
        for x in range(targets):
            kind = x % 6
            if kind == 0:
                t = _mutate(rng, q, letters)
            elif kind == 1:
                t = q[rng.randint(0, len(q)):][: rng.randint(0, max_len)]
            elif kind == 2:
                t = (letters[0] + letters[1]) * rng.randint(0, max_len // 2)
            elif kind == 3:
                t = "".join(rng.choice(letters) for _ in range(rng.choice([0, 1, 2])))
            else:
                t = "".join(rng.choice(letters) for _ in range(rng.randint(1, max_len)))
            qs.append(q)
            ts.append(t)
    return qs, ts


def _stage(sc: Scoring, qs: list[str], ts: list[str]):
    """(codes, q_off, q_len, t_off, t_len): each distinct query once, so pairs share their query's offset."""
    seqs = list(dict.fromkeys(qs)) + ts
    codes = [sc.encode(s) if s else np.zeros(0, np.uint8) for s in seqs]
    lens = np.array([c.size for c in codes], np.int64)
    offs = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    at = {s: k for k, s in enumerate(dict.fromkeys(qs))}
    q_idx = np.array([at[q] for q in qs])
    t_idx = np.arange(len(ts)) + len(at)
    return np.concatenate(codes).astype(np.uint8), offs[q_idx], lens[q_idx], offs[t_idx], lens[t_idx]


def _lanes_only(monkeypatch):
    """The share of pairs each call gave the lanes (1.0: none left to the one-pair kernels, which a
    test of the lanes must see)."""
    taken = []
    real = nwsw._lanes

    def spy(backend, codes, q_off, q_len, *rest):
        done, pieces = real(backend, codes, q_off, q_len, *rest)
        taken.append(done.mean())
        return done, pieces

    monkeypatch.setattr(nwsw, "_lanes", spy)
    return taken


@pytest.mark.parametrize("scheme", range(len(SCHEMES)))
@pytest.mark.parametrize("mode, free", MODES)
def test_lanes_equal_the_reference(scheme, mode, free, monkeypatch):
    """Every pair: the one-pair kernels' arrays; a pair of two non-empty sequences: the reference's
    score and end cell. (An empty query with a free query end: the kernels end at (0, n), the reference
    at (0, 0); gseek refuses empty sequences before the DP.)"""
    sc, letters = SCHEMES[scheme]
    qs, ts = _set(scheme * 31 + len(free) * 3 + len(mode), letters)
    args = (*_stage(sc, qs, ts), sc, dp_flags(mode, free))
    one = _one_pair_kernels(monkeypatch, CpuBackend(threads=1), *args)
    taken = _lanes_only(monkeypatch)
    got = score_pairs(CpuBackend(threads=2), *args)
    assert taken == [1.0]
    for key in one:
        assert np.array_equal(one[key], got[key]), key
    assert not got["rerun"].any()
    flags = tuple(name in free for name in FREE)
    for k, (q, t) in enumerate(zip(qs, ts)):
        if q and t:
            r = ref.align(list(sc.encode(q)), list(sc.encode(t)), sc.table.tolist(), sc.gap_open, sc.gap_extend,
                          mode, flags, sc.no_match_code)
            assert (got["score"][k], got["q_end"][k], got["t_end"][k]) == (r.score, r.q_end, r.t_end), (q, t)


def _one_pair_kernels(monkeypatch, *args, run=score_pairs, **kwargs):
    """``run`` (score_pairs, traceback_pairs) with the lanes turned off: the one-pair kernels of kernels/dp.py."""
    with monkeypatch.context() as m:
        m.setattr(nwsw, "_lanes", lambda backend, codes, q_off, q_len, *rest: (np.zeros(q_len.size, bool), []))
        return run(*args, **kwargs)


@pytest.mark.parametrize("mode, free", MODES[:3] + [MODES[5]])
def test_lanes_equal_the_one_pair_kernels_on_longer_pairs(mode, free, monkeypatch):
    """Pairs of 200-700 bp of a few families, with N, any thread count; and pairs beyond the int16
    range in the same batch (match 20), which go to the one-pair kernels and their 32-bit re-run."""
    rng = random.Random(len(free) + len(mode))
    sc = Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2)
    roots = ["".join(rng.choice("ACGT") for _ in range(rng.randint(200, 700))) for _ in range(3)]
    roots[0] = roots[0] + roots[0]  # 400-1400 bp
    seqs = [_mutate(rng, r, "ACGTN") for r in roots for _ in range(12)]
    qs = [seqs[i] for i in range(len(seqs)) for j in range(i + 1, len(seqs))]
    ts = [seqs[j] for i in range(len(seqs)) for j in range(i + 1, len(seqs))]
    args = (*_stage(sc, qs, ts), sc, dp_flags(mode, free))
    one = _one_pair_kernels(monkeypatch, CpuBackend(threads=1), *args)
    for threads in (1, 2):
        lanes = score_pairs(CpuBackend(threads=threads), *args)
        for key in one:
            assert np.array_equal(one[key], lanes[key]), (threads, key)
    wide = Scoring(match=20, mismatch=-30, gap_open=50, gap_extend=20)
    qs = [roots[0][:900]] * 20 + [roots[1][:100]] * 20
    ts = [_mutate(rng, q, "ACGTN") for q in qs]
    args = (*_stage(wide, qs, ts), wide, dp_flags(mode, free))
    slots, _, _ = nwsw._lane_groups(args[1], args[2], args[4], wide, args[-1])
    assert sorted(slots.tolist()) == list(range(20, 40))  # the short pairs in lanes, the long ones not
    one = _one_pair_kernels(monkeypatch, CpuBackend(threads=2), *args)
    lanes = score_pairs(CpuBackend(threads=2), *args)
    for key in one:
        assert np.array_equal(one[key], lanes[key]), key


@pytest.mark.parametrize("mode", ["global", "local"])
def test_lanes_at_the_edge_of_the_int16_range(mode, monkeypatch):
    """Pairs whose bound is just inside INT16_REACH, scored near it (all matches; global: all gaps, as
    a mismatch costs more than two gap columns): the one-pair kernels' numbers, no wrap-around."""
    sc = Scoring(match=3, mismatch=-100, gap_open=40, gap_extend=7)
    o, e, worst = sc.gap_open, sc.gap_extend, 100
    if mode == "local":
        n = (dp_lanes.INT16_REACH - o - e - worst) // 3
        qs, ts = ["A" * n, "A" * n], ["A" * n, "A" * (n - 1) + "C"]
    else:
        n = (dp_lanes.INT16_REACH - 2 * o - o - e - worst) // (2 * e)
        qs, ts = ["A" * n, "A" * n], ["C" * n, "A" * n]
    args = (*_stage(sc, qs, ts), sc, dp_flags(mode, ()))
    taken = _lanes_only(monkeypatch)
    got = score_pairs(CpuBackend(threads=2), *args)
    assert taken == [1.0]
    bigger = (*_stage(sc, [q + "A" for q in qs], [t + "A" for t in ts]), sc, dp_flags(mode, ()))
    assert nwsw._lane_groups(bigger[1], bigger[2], bigger[4], sc, bigger[-1])[0].size == 0
    monkeypatch.undo()
    one = _one_pair_kernels(monkeypatch, CpuBackend(threads=1), *args)
    for key in one:
        assert np.array_equal(one[key], got[key]), key
    assert abs(int(got["score"][0])) > dp_lanes.INT16_REACH * 0.8


@pytest.mark.parametrize("mode", ["local", "global"])
def test_lane_groups_hold_one_or_two_queries_and_at_most_lanes_pairs(mode):
    """Queries of 70, 3 and 2 pairs: two full groups of the first; its last 6 pairs with the 2 of the
    third (local DNA: two queries share a group), the 3 of the second alone."""
    sc = Scoring()
    q_off = np.array([0] * 70 + [5] * 3 + [0] * 2, np.int64)
    q_len = np.array([5] * 70 + [5] * 3 + [4] * 2, np.int64)
    t_len = np.arange(75, dtype=np.int64) % 9 + 1
    slots, offsets, split = nwsw._lane_groups(q_off, q_len, t_len, sc, dp_flags(mode, ()))
    assert sorted(slots.tolist()) == list(range(75))
    sizes = np.diff(offsets)
    assert sorted(sizes.tolist()) == ([3, 8, 32, 32] if mode == "local" else [2, 3, 6, 32, 32])
    for a, b, k in zip(offsets[:-1], offsets[1:], split):
        for part in (slots[a:a + k], slots[a + k:b]):
            assert len({(q_off[s], q_len[s]) for s in part}) <= 1
            assert t_len[part].tolist() == sorted(t_len[part].tolist(), reverse=True)
        assert (k < b - a) == (b - a == 8)
    if mode == "local":  # a 10-residue query: in int16 range; the end column must fit int16 too
        long = np.array([dp_lanes.MAX_COLUMNS, dp_lanes.MAX_COLUMNS + 1])
        assert nwsw._lane_groups(np.zeros(2, np.int64), np.full(2, 10), long, sc, dp_flags(mode, ()))[0].tolist() == [0]


def test_rows_past_the_shorter_query_score_nothing(monkeypatch):
    """Two queries in one local group, the first 20 bases, the second 40: the first's targets go on
    with bases that would extend its alignment if the rows past its end scored anything."""
    sc = Scoring()
    short, long = "ACGT" * 5, "TTGCA" * 8
    qs = [short] * 5 + [long] * 5
    ts = [short + "A" * 12, short[5:] + "AAAA", "A" * 30, short, "GG"] + [long[3:], long, "C", "TTGCA", "A" * 9]
    args = (*_stage(sc, qs, ts), sc, dp_flags("local", ()))
    assert nwsw._lane_groups(args[1], args[2], args[4], sc, args[-1])[2].tolist() == [5]  # one group, split 5
    got = score_pairs(CpuBackend(threads=1), *args)
    for k, (q, t) in enumerate(zip(qs, ts)):
        r = ref.align(list(sc.encode(q)), list(sc.encode(t)), sc.table.tolist(), sc.gap_open, sc.gap_extend, "local",
                      (False,) * 4, sc.no_match_code)
        assert (got["score"][k], got["q_end"][k], got["t_end"][k]) == (r.score, r.q_end, r.t_end), (q, t)

"""The seed stage's selection on the backend (``gseek.blast.seeds``): the trigger filter
(``_passing``, either way of looking up the seeds' sequences), the first seed of each ungapped
extent in rank order (``_extent_firsts``, ``_first_of_extents``) and the packed sort under them
(``gseek.blast.device_rounds.lexsort_packed``) against readable versions, on NumPy and on a GPU,
ties and empty inputs included."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from gseek.backend import get_backend
from gseek.blast import seeds as S
from gseek.blast.device_rounds import lexsort_packed

DEVICES = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]


def _keys(rng, n: int, case: str) -> list[np.ndarray]:
    if case == "ties":  # narrow ranges: many equal rows, negative values
        return [rng.integers(-2, 3, n), rng.integers(0, 4, n), rng.integers(-1, 2, n)]
    if case == "words":  # 21 + 21 + 21 + 28 + 8 bits: two words (the seed stage's keys' shape)
        return [rng.integers(0, 1 << 21, n), rng.integers(0, 1 << 21, n) // 64, rng.integers(0, 1 << 21, n),
                rng.integers(-(1 << 20), 1 << 27, n) // 1024, rng.integers(0, 200, n)]
    if case == "wide":  # a key of 64 bits' range: NumPy's / CuPy's lexsort
        return [rng.integers(-(1 << 62), 1 << 62, n) * 2, rng.integers(0, 3, n)]
    return [np.full(n, 7), rng.integers(0, 2, n)]  # a constant key: no bits


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", ["ties", "words", "wide", "constant"])
@pytest.mark.parametrize("n", [0, 1, 2000])
def test_lexsort_packed_equals_lexsort(device, case, n):
    backend = get_backend(device)
    rng = np.random.default_rng(n + len(case))
    keys = [k.astype(np.int64) for k in _keys(rng, n, case)]
    want = np.lexsort(keys)
    with backend.active():
        order, words, bits = lexsort_packed(backend.xp, [backend.asarray(k) for k in keys])
        got = backend.to_host(order)
        words = [backend.to_host(w) for w in words]
    assert got.tolist() == want.tolist()
    assert len(bits) == len(keys)
    if case == "wide" and n > 1:
        assert words == [] and max(bits) == 64
    elif n > 1:
        assert len(words) == (2 if case == "words" else 1)
        # the words in that order: sorted, most significant word first
        rows = list(zip(*reversed([w.tolist() for w in words])))
        assert rows == sorted(rows)


def _seeds(rng, n: int) -> dict[str, np.ndarray]:
    """Seeds with many repeated extents on few diagonals of two sequences (and repeated points)."""
    seq = rng.integers(0, 2, n)
    diag = rng.integers(-5, 5, n) * 1000
    q_start = seq * 10_000 + rng.integers(0, 4, n) * 100
    q_end = q_start + rng.integers(1, 3, n) * 50
    q = q_start + rng.integers(0, 50, n) // 10 * 10  # repeated points
    score = rng.integers(10, 14, n).astype(np.int32)
    return {"q": q, "s": q + diag, "length": rng.integers(11, 30, n).astype(np.int32), "score": score,
            "q_start": q_start, "q_end": q_end, "seq": seq, "contig": rng.integers(0, 3, n)}


def _readable_firsts(c: dict[str, np.ndarray]) -> list[int]:
    """The first seed (by q, s, then input order) of each distinct (sequence, diagonal, extent), in
    rank order: score (best first), q, s, then the extents' order."""
    first: dict[tuple, int] = {}
    for i in range(c["q"].size):
        extent = (int(c["seq"][i]), int(c["s"][i] - c["q"][i]), int(c["q_start"][i]), int(c["q_end"][i]))
        j = first.get(extent)
        if j is None or (c["q"][i], c["s"][i]) < (c["q"][j], c["s"][j]):
            first[extent] = i
    return sorted(first.values(), key=lambda i: (-int(c["score"][i]), int(c["q"][i]), int(c["s"][i]),
                                                 int(c["seq"][i]), int(c["s"][i] - c["q"][i]), int(c["q_start"][i]),
                                                 int(c["q_end"][i])))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", [0, 1, 3000])
@pytest.mark.parametrize("device_min", [0, 1 << 15])
def test_first_of_extents_equals_the_readable_selection(monkeypatch, device, n, device_min):
    """On a GPU, with ``DEVICE_MIN`` 0 the selection there and the columns left there; with 2^15, on the host."""
    monkeypatch.setattr(S, "DEVICE_MIN", device_min)
    backend = get_backend(device)
    c = _seeds(np.random.default_rng(n), n)
    want = _readable_firsts(c)
    assert n < 3000 or 0 < len(want) < n / 4  # (the extents repeat)
    with backend.active():
        parts = [{k: backend.asarray(v[a:b]) for k, v in c.items()} for a, b in ((0, n // 3), (n // 3, n))]
        got = backend.to_host(S._extent_firsts(backend.xp, {k: backend.xp.concatenate([p[k] for p in parts])
                                                            for k in c}))
        assert got.tolist() == want
        for given in (parts, []):
            cand = S._first_of_extents(backend, given)
            rows = want if given else []
            for k, v in c.items():
                assert cand[k].tolist() == v[rows].tolist(), k
            assert (cand["seq"].dtype, cand["contig"].dtype, cand["score"].dtype) == (np.int64, np.int32, np.int32)
            assert len(cand) == len(rows)
            if device == "gpu" and len(c["q"]) >= device_min:  # the columns left on the device: the same rows
                assert sorted(cand.device) == sorted(S._NAMES)
                for k, v in cand.device.items():
                    assert backend.to_host(v).tolist() == cand[k].tolist(), k
            else:
                assert cand.device is None
            some = np.arange(len(rows))[::3]  # some rows only: the same columns and types
            fresh = S._first_of_extents(backend, given)
            for k, v in fresh.rows(some).items():
                assert v.tolist() == c[k][np.asarray(rows, np.int64)[some]].tolist(), k
                assert v.dtype == cand[k].dtype, k


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("at_once", [False, True])
@pytest.mark.parametrize("n", [0, 2500])
def test_trigger_filter_either_way_keeps_the_readable_seeds(monkeypatch, device, at_once, n):
    """Each seed kept when its score reaches its sequence's trigger (scores on the triggers, ties)."""
    monkeypatch.setitem(S._SEQUENCES_AT_ONCE, device, at_once)
    backend = get_backend(device)
    rng = np.random.default_rng(n + at_once)
    seq_off = np.array([0, 300, 300, 1000, 1600])  # an empty sequence
    contig_off = np.array([0, 5000, 9000, 20_000])
    triggers = np.array([12, 14, 13, 16])
    q = rng.integers(0, 1600, n)
    s = rng.integers(0, 20_000, n)
    seq = np.searchsorted(seq_off, q, side="right") - 1
    score = (triggers[seq] + rng.integers(-2, 3, n)).astype(np.int32) if n else np.zeros(0, np.int32)
    keep = score >= triggers[seq]
    with backend.active():
        up = backend.asarray
        seeds = S.Seeds(up(q), up(s), up(rng.integers(11, 20, n).astype(np.int32)))
        ung = {"score": up(score), "q_start": up(q - 3), "q_end": up(q + 9)}
        ref = SimpleNamespace(on=lambda _b: SimpleNamespace(contig_offsets=up(contig_off)))
        queries = SimpleNamespace(offsets=up(seq_off))
        for trig, kept in ((S._device_triggers(backend, triggers), keep), (None, np.ones(n, bool))):
            got = {k: backend.to_host(v) for k, v in S._passing(backend, ref, queries, seeds, ung, trig).items()}
            assert got["q"].tolist() == q[kept].tolist()
            assert got["s"].tolist() == s[kept].tolist()
            assert got["score"].tolist() == score[kept].tolist()
            assert got["seq"].tolist() == seq[kept].tolist()
            assert got["contig"].tolist() == (np.searchsorted(contig_off, s[kept], side="right") - 1).tolist()
    assert n == 0 or 0 < keep.sum() < n

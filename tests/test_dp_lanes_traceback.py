"""The CPU's lane-a-pair trace-back (kernels/dp_lanes.py's dp_traceback_lanes) against the reference,
the one-pair kernels and parasail."""

from __future__ import annotations

import random

import numpy as np
import pytest

import reference_dp as ref
from gseek.backend import CpuBackend
from gseek.dp import Scoring, dp_flags, nwsw, traceback_pairs
from gseek.kernels import dp
from gseek.output.cigar import cigar_strings
from test_dp_lanes import FREE, MODES, SCHEMES, _lanes_only, _mutate, _one_pair_kernels, _set, _stage


def _same(one, got):
    assert one.keys() == got.keys()
    for key in one:
        assert np.array_equal(one[key], got[key]), key


@pytest.mark.parametrize("scheme", range(len(SCHEMES)))
@pytest.mark.parametrize("mode, free", MODES)
def test_lanes_trace_back_as_the_reference(scheme, mode, free, monkeypatch):
    """Every pair (DNA, two letters: ties everywhere, BLOSUM62; lengths 0 to 30; many pairs of a
    query): the one-pair kernels' arrays and CIGAR runs; a pair of two non-empty sequences: the
    reference's score, start and end cells and CIGAR."""
    sc, letters = SCHEMES[scheme]
    qs, ts = _set(scheme * 17 + len(free) * 5 + len(mode), letters)
    args = (*_stage(sc, qs, ts), sc, dp_flags(mode, free))
    one = _one_pair_kernels(monkeypatch, CpuBackend(threads=1), *args, run=traceback_pairs)
    taken = _lanes_only(monkeypatch)
    got = traceback_pairs(CpuBackend(threads=2), *args)
    assert taken == [1.0]
    _same(one, got)
    assert not got["rerun"].any()
    cigars = cigar_strings(got["cigar"], got["cigar_offsets"], False)
    flags = tuple(name in free for name in FREE)
    for k, (q, t) in enumerate(zip(qs, ts)):
        if q and t:
            r = ref.align(list(sc.encode(q)), list(sc.encode(t)), sc.table.tolist(), sc.gap_open, sc.gap_extend,
                          mode, flags, sc.no_match_code)
            mine = tuple(int(got[f][k]) for f in ("score", "q_start", "q_end", "t_start", "t_end"))
            assert mine == (r.score, r.q_start, r.q_end, r.t_start, r.t_end), (q, t)
            assert cigars[k] == r.cigar, (q, t)


@pytest.mark.parametrize("mode, free", MODES[:3] + [MODES[5]])
def test_lanes_trace_back_longer_pairs_as_the_one_pair_kernels(mode, free, monkeypatch):
    """Pairs of 1-400 bp of a few families with N and repeats, lengths on either side of a trace-back
    word's rows (TB_STRIP) and of LANES pairs a query, 1 and 2 threads; then a trace-back budget that
    holds the short pairs' groups only: the long ones go to the one-pair kernels, in the same call,
    and the results are the same."""
    rng = random.Random(len(free) * 7 + len(mode))
    sc = Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2)
    roots = ["".join(rng.choice("ACGT") for _ in range(rng.randint(150, 400))) for _ in range(2)]
    roots.append("ACGTT" * 40)  # a repeat: ties along the diagonals
    seqs = [_mutate(rng, r, "ACGTN") for r in roots for _ in range(10)]
    step = dp.TB_STRIP
    seqs += [s[:n] for s in roots for n in (1, step - 1, step, step + 1, 2 * step, 2 * step + 1)]
    qs = [seqs[i] for i in range(len(seqs)) for j in range(len(seqs)) if i != j and rng.random() < 0.6]
    ts = [seqs[j] for i in range(len(seqs)) for j in range(len(seqs)) if i != j and rng.random() < 0.6]
    n = min(len(qs), len(ts))
    args = (*_stage(sc, qs[:n], ts[:n]), sc, dp_flags(mode, free))
    one = _one_pair_kernels(monkeypatch, CpuBackend(threads=1), *args, run=traceback_pairs)
    taken = _lanes_only(monkeypatch)
    for threads in (1, 2):
        _same(one, traceback_pairs(CpuBackend(threads=threads), *args))
    assert taken == [1.0, 1.0]
    budget = int(nwsw._lane_tb_bytes(100, 100))  # a thread's share: groups of <= 100 rows by 100 columns
    got = traceback_pairs(CpuBackend(threads=2), *args, max_bytes=2 * budget)
    _same(one, got)
    q_len, t_len = args[2], args[4]
    short = nwsw._lane_tb_bytes(q_len, t_len) <= budget
    assert 0 < short.mean() < 1 and taken[-1] == pytest.approx(short.mean())


@pytest.mark.parametrize("mode", ["local", "global"])
def test_lanes_trace_back_protein_as_the_one_pair_kernels(mode, monkeypatch):
    """BLOSUM62 pairs of 1-300 residues (two families, X among them), all in the lanes: the one-pair
    kernels' arrays and CIGARs."""
    rng = random.Random(len(mode))
    letters = "ARNDCQEGHILKMFPSTWYV"
    sc = Scoring(matrix="BLOSUM62", gap_open=11, gap_extend=1)
    roots = ["".join(rng.choice(letters) for _ in range(rng.randint(100, 300))) for _ in range(2)]
    seqs = [_mutate(rng, r, letters + "X") for r in roots for _ in range(6)] + [roots[0][:1], roots[1][:9]]
    qs = [a for a in seqs for b in seqs if a is not b]
    ts = [b for a in seqs for b in seqs if a is not b]
    args = (*_stage(sc, qs, ts), sc, dp_flags(mode, ()))
    one = _one_pair_kernels(monkeypatch, CpuBackend(threads=1), *args, run=traceback_pairs)
    taken = _lanes_only(monkeypatch)
    _same(one, traceback_pairs(CpuBackend(threads=2), *args))
    assert taken == [1.0]


def test_lanes_trace_back_identical_for_any_batch(monkeypatch):
    """The aligner's chunks (batch_pairs) and thread counts change nothing: the same CIGARs."""
    from gseek.align import PairAligner

    rng = random.Random(5)
    root = "".join(rng.choice("ACGT") for _ in range(120))
    seqs = [_mutate(rng, root, "ACGT") for _ in range(12)]
    runs = [PairAligner(mode=mode, traceback=True, device="cpu", threads=t, batch_pairs=b).all_vs_all(seqs)
            for mode in ("local", "global") for t, b in ((1, 1 << 16), (2, 7))]
    for a, b in (runs[:2], runs[2:]):
        assert list(a.cigars) == list(b.cigars) and np.array_equal(a.score, b.score)


@pytest.mark.parametrize("mode", ["local", "global"])
def test_lanes_trace_back_scores_as_parasail(mode):
    """parasail's trace kernels (sw/nw_trace_striped_16, gseek's target as their first sequence: its I
    and D read swapped) on related 300 bp pairs: the same scores, gseek's CIGARs re-score to them, and
    where parasail's CIGAR re-scores to its score too (parasail 1.3.4's sw_trace_striped_16 gives one
    that does not for a third of these local pairs; every global one does) most are gseek's (ties: 46 of
    72 local, 68 of 72 global)."""
    parasail = pytest.importorskip("parasail")
    rng = random.Random(11)
    sc = Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2)
    root = "".join(rng.choice("ACGT") for _ in range(300))
    seqs = [_mutate(rng, root, "ACGT") for _ in range(9)]
    qs = [a for a in seqs for b in seqs if a is not b]
    ts = [b for a in seqs for b in seqs if a is not b]
    got = traceback_pairs(CpuBackend(threads=2), *_stage(sc, qs, ts), sc, dp_flags(mode, ()))
    cigars = cigar_strings(got["cigar"], got["cigar_offsets"], False)
    matrix = parasail.matrix_create("ACGT", 2, -3)
    function = getattr(parasail, {"local": "sw_trace_striped_16", "global": "nw_trace_striped_16"}[mode])
    table = sc.table.tolist()
    consistent = equal = 0
    for k, (q, t) in enumerate(zip(qs, ts)):
        r = function(t, q, sc.gap_open + sc.gap_extend, sc.gap_extend, matrix)
        assert r.score == got["score"][k]
        mine = "".join(op * int(count) for count, op in _runs(cigars[k]))
        assert ref.rescore(mine, list(sc.encode(q)), list(sc.encode(t)), int(got["q_start"][k]),
                           int(got["t_start"][k]), table, sc.gap_open, sc.gap_extend)[0] == r.score
        theirs = r.cigar.decode.decode().translate(str.maketrans("ID", "DI"))
        ops = "".join(op * int(count) for count, op in _runs(theirs))
        q_start, t_start = (r.cigar.beg_ref, r.cigar.beg_query) if mode == "local" else (0, 0)
        if ref.rescore(ops, list(sc.encode(q)), list(sc.encode(t)), q_start, t_start, table, sc.gap_open,
                       sc.gap_extend)[0] == r.score:
            consistent += 1
            equal += theirs == cigars[k]
    assert consistent == len(qs) or mode == "local"
    assert equal >= 0.9 * consistent


def _runs(cigar: str) -> list[tuple[str, str]]:
    import re

    return re.findall(r"(\d+)([=XIDM])", cigar)

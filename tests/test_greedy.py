"""Megablast's greedy extension (``gseek.dp.greedy``, ``kernels/greedy.{py,cu}``) and the HSP passes
around it (``gseek.blast.gapped_start``, the re-scoring kernels) against the readable reference ``tests/reference_greedy.py``.

Every case compares everything: score, ends, the trace-back start estimate, the subject-end
flags and the edit script after BLAST+'s gap reduction, on the Numba twin, on the CUDA source
compiled for the host, and on a GPU (with a tiny launch geometry too); then BLAST+'s re-scoring of the
traced-back alignments (``greedy_gapped(rescore=)``) the same way. The cases are mutated
random sequences (substitutions, indels, an unrelated prefix, N in either sequence) with seeds
on and off matching pairs, several X-drops, and rings forced small so that the wider-ring redo
runs. The real-data check against blastn 2.12 is ``tests/test_blast_search.py`` (megablast).
"""

from __future__ import annotations

import numpy as np
import pytest

from gseek import get_backend
from gseek.backend import GpuBackend
from gseek.blast import gapped_start
from gseek.dp import greedy as stage
from gseek.kernels import greedy as kgreedy
from host_cuda import build as host_cuda_build
from host_cuda import build_warp as host_cuda_warp_build
from reference_greedy import DEL, INS, SUB, greedy_extend, greedy_side, reevaluate, traceback_start



def _mutate(rng, seq, sub, indel):
    out = []
    for b in seq:
        r = rng.random()
        if r < indel / 2:
            continue
        if r < indel:
            out.append(int(rng.integers(4)))
        out.append(int(rng.integers(4)) if rng.random() < sub else b)
    return out


def _cases(seed: int, n: int, longest: int = 400):
    """(query, subject, q_pos, s_pos, xdrop) cases, seeded."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(n):
        a = [int(x) for x in rng.integers(0, 4, int(rng.integers(20, longest)))]
        b = _mutate(rng, a, float(rng.choice([0.0, 0.02, 0.1, 0.25])), float(rng.choice([0.0, 0.01, 0.05])))
        if rng.random() < 0.3:
            b = [int(x) for x in rng.integers(0, 4, int(rng.integers(5, 60)))] + b
        if rng.random() < 0.2:
            for p in rng.integers(0, len(a), 3):
                a[int(p)] = 4
        if rng.random() < 0.2:
            b[int(rng.integers(0, len(b)))] = 4
        qp, sp = int(rng.integers(0, len(a))), int(rng.integers(0, len(b)))
        if rng.random() < 0.8:  # mostly a seed on a matching pair near the main diagonal
            for _ in range(50):
                qp = int(rng.integers(0, len(a)))
                sp = min(len(b) - 1, max(0, qp + int(rng.integers(-3, 4)) + len(b) - len(a)))
                if a[qp] == b[sp] and a[qp] < 4:
                    break
        cases.append((a, b, qp, sp, int(rng.choice([10, 26, 54, 108, 300]))))
    return cases


def _pack(cases):
    codes, q_off, q_len, t_off, t_len, q_pos, t_pos = [], [], [], [], [], [], []
    at = 0
    for a, b, qp, sp, _ in cases:
        q_off.append(at)
        q_len.append(len(a))
        codes += a
        at += len(a)
        t_off.append(at)
        t_len.append(len(b))
        codes += b
        at += len(b)
        q_pos.append(qp)
        t_pos.append(sp)
    return np.array(codes, np.uint8), *(np.array(x) for x in (q_off, q_len, t_off, t_len, q_pos, t_pos))


@pytest.fixture(scope="module")
def host_cuda(tmp_path_factory):
    return host_cuda_build(tmp_path_factory.mktemp("hostgreedy"), [kgreedy])


@pytest.fixture(scope="module")
def host_cuda_warp(tmp_path_factory):
    return host_cuda_warp_build(tmp_path_factory.mktemp("hostgreedywarp"), kgreedy)


@pytest.fixture(params=["cpu", "host-cuda", "host-cuda-warp", pytest.param("gpu", marks=pytest.mark.gpu),
                        pytest.param("gpu-tiny", marks=pytest.mark.gpu), pytest.param("gpu-thread", marks=pytest.mark.gpu)])
def backend(request, monkeypatch):
    """Every way the kernels run: the Numba twin, ``greedy.cu`` compiled for the host (one thread a seed;
    one warp a seed as 32 coroutines), and on a GPU (warps; warps in a tiny grid; one thread a seed)."""
    if request.param == "gpu-thread":
        monkeypatch.setattr(stage, "WARP", False)
    return {"cpu": lambda: get_backend("cpu", 2), "host-cuda": lambda: request.getfixturevalue("host_cuda"),
            "host-cuda-warp": lambda: request.getfixturevalue("host_cuda_warp"),
            "gpu": lambda: GpuBackend(0), "gpu-tiny": lambda: GpuBackend(0, block_size=32, max_blocks=2),
            "gpu-thread": lambda: GpuBackend(0)}[request.param]()


#: Linear megablast scores at twice the scale (reward, penalty): 1/-2 (match 2, mismatch cost 4), 1/-3, 2/-3
#: (an even reward: BLAST+ does not double it; the doubled arithmetic decides alike).
SCORES = [(1, -2), (1, -3), (2, -3)]


def _check(backend, cases, max_bytes=None, reward=1, penalty=-2):
    packed = _pack(cases)
    match, mismatch = 2 * reward, -2 * penalty
    for xdrop in sorted({c[4] for c in cases}):
        idx = [i for i, c in enumerate(cases) if c[4] == xdrop]
        r = stage.greedy_gapped(backend, packed[0], *(a[idx] for a in packed[1:]), match, mismatch, xdrop,
                                traceback=True, max_bytes=max_bytes)
        score_only = stage.greedy_gapped(backend, packed[0], *(a[idx] for a in packed[1:]), match, mismatch, xdrop)
        for j, i in enumerate(idx):
            a, b, qp, sp, _ = cases[i]
            e = greedy_extend(a, b, qp, sp, xdrop, match, mismatch, traceback=True)
            want = (e.score, e.q_start, e.q_end, e.s_start, e.s_end, e.q_seed, e.s_seed, e.edges)
            for got in (r, score_only):
                assert tuple(int(got[k][j]) for k in ("score", "q_start", "q_end", "t_start", "t_end", "q_seed",
                                                      "t_seed", "edges")) == want, (i, xdrop)
            lo, hi = r["op_offsets"][j], r["op_offsets"][j + 1]
            assert [[int(t), int(n)] for t, n in zip(r["ops"][lo:hi], r["op_len"][lo:hi])] == e.ops, (i, xdrop)


@pytest.mark.parametrize("seed, scores", [(1, SCORES[0]), (2, SCORES[0]), (3, SCORES[1]), (4, SCORES[2])])
def test_greedy_extension_equals_the_reference(backend, seed, scores):
    _check(backend, _cases(seed, 150), reward=scores[0], penalty=scores[1])


def test_narrow_rings_are_done_again_wider_with_the_same_results(backend, monkeypatch):
    """A side whose diagonals outgrow its ring (8 here, 128 by default) is extended again in a ring
    four times wider until it fits."""
    monkeypatch.setattr(stage, "RING", 8)
    _check(backend, _cases(3, 40, longest=2000))


def test_trace_back_in_runs_within_a_memory_bound(backend):
    """``max_bytes`` splits the fill into runs (one seed each, here): the same edit scripts."""
    _check(backend, _cases(4, 30), max_bytes=1)


def test_sides_and_bookkeeping_of_simple_cases():
    """Exact copies, a seed at either end, a mismatch at the seed, and a gap: the reference's sides."""
    side = greedy_side([0, 1, 2, 3], [0, 1, 2, 3], 20, 2, 4, traceback=True)
    assert (side.dist, side.len1, side.len2, side.edge, side.ops) == (0, 4, 4, True, [[SUB, 4]])
    side = greedy_side([0, 1, 2, 3, 0, 1, 2, 3, 3, 3], [0, 1, 2, 3, 1, 2, 3, 3, 3, 0, 0], 40, 2, 4, traceback=True)
    assert side.ops == [[SUB, 4], [INS, 1], [SUB, 5]] and (side.len1, side.len2) == (10, 9)
    e = greedy_extend([3, 0, 1, 2], [3, 0, 1, 2], 0, 0, 20, 2, 4, traceback=True)
    assert (e.score, e.q_start, e.q_end, e.ops) == (8, 0, 4, [[SUB, 4]])


def _text(ops, q, s, q_start, s_start) -> str:
    """The =/X/I/D CIGAR text of an edit script on ``q`` and ``s``."""
    cols = []
    i, j = q_start, s_start
    for t, n in ops:
        if t == SUB:
            for _ in range(n):
                cols.append("=" if q[i] < 4 and q[i] == s[j] else "X")
                i, j = i + 1, j + 1
        else:
            cols += ["I" if t == INS else "D"] * n
            i, j = (i + n, j) if t == INS else (i, j + n)
    runs = []
    for c in cols:
        if runs and runs[-1][0] == c:
            runs[-1][1] += 1
        else:
            runs.append([c, 1])
    return "".join(f"{n}{c}" for c, n in runs), cols


@pytest.mark.parametrize("scores", SCORES)
def test_the_re_scoring_equals_the_reference(backend, scores):
    """``greedy_gapped(rescore=)``: each traced-back alignment scored again on the device
    (``greedy_rescore``: N, restarts, cutoffs low and high, an even reward's cutoff scale; the
    exact-match growth) and split into =/X runs (``greedy_runs``), against ``reference_greedy.reevaluate``
    after ``greedy_extend``."""
    rng = np.random.default_rng(5)
    _check_rescored(backend, _cases(6, 150), scores, lambda n: rng.choice([1, 5, 10, 40, 1000], n))


def _scripted(rng, n):
    """(query, subject, edit script) of a random alignment of about ``n`` columns: runs of matches, blocks
    of mismatches (where the re-scoring's sum falls below 0 and starts again, inside a run of columns),
    single gaps, N here and there."""
    a, b, ops = [], [], []
    while len(a) < n:
        kind = rng.choice(4, p=[0.55, 0.3, 0.075, 0.075])
        if kind < 2:  # columns: matches, or a block of mostly mismatches
            size = int(rng.integers(1, 60 if kind == 0 else 20))
            for _ in range(size):
                x = int(rng.integers(0, 4)) if rng.random() > 0.02 else 4
                y = x if (kind == 0) == (rng.random() < 0.95) else (x + 1 + int(rng.integers(3))) % 4
                a.append(x)
                b.append(y)
            op, size = SUB, size
        else:
            op, size = (INS, int(rng.integers(1, 4))) if kind == 2 else (DEL, int(rng.integers(1, 4)))
            (a if op == INS else b).extend(int(x) for x in rng.integers(0, 4, size))
        if ops and ops[-1][0] == op:
            ops[-1][1] += size
        else:
            ops.append([op, size])
    return a, b, ops


@pytest.mark.parametrize("scores", SCORES)
def test_the_re_scoring_of_edit_scripts_equals_the_reference(backend, scores):
    """The re-scoring and the runs (``greedy_rescore``, ``greedy_runs``; on a GPU one warp an alignment, 32
    columns at a time) of random edit scripts of 5-900 columns, against ``reference_greedy.reevaluate``:
    restarts inside a run of columns at any column of a warp's chunk (the operation's length rewritten, the
    kept part starting there), before and after the best part, cutoffs low and high, =/X runs across chunk
    bounds. (The greedy extension's own alignments rarely restart inside a run.)"""
    reward, penalty = scores
    n_score = {(1, -2): -1, (1, -3): -2, (2, -3): -2}[scores]
    rng = np.random.default_rng(9)
    cases = [_scripted(rng, int(rng.integers(5, 900))) for _ in range(120)]
    cutoff = rng.choice([1, 10, 40, 100, 1000], len(cases)).astype(np.int64)
    codes, q_off, q_len, t_off, t_len, *_ = _pack([(q, s, 0, 0, 0) for q, s, _ in cases])
    room = np.array([len(o) + 2 for _, _, o in cases], np.int64)
    ops_off = np.concatenate([[0], np.cumsum(room)])
    ops_t, ops_n = np.zeros(ops_off[-1], np.uint8), np.zeros(ops_off[-1], np.int32)
    for k, (_, _, ops) in enumerate(cases):
        for i, (t, m) in enumerate(ops):
            ops_t[ops_off[k] + i], ops_n[ops_off[k] + i] = t, m
    n = len(cases)
    up = backend.asarray
    out = {k: np.zeros(n, np.int32) for k in stage._FINAL}
    out["kept"] = np.zeros(n, bool)
    zeros = up(np.zeros(n, np.int32))
    ends = [zeros, up(q_len.astype(np.int32)), zeros, up(t_len.astype(np.int32))]
    sub = [up(q_off.astype(np.int64)), up(q_len.astype(np.int32)), up(t_off.astype(np.int64)),
           up(t_len.astype(np.int32))]
    runs, run_off = stage._rescored(backend, out, 0, n, up(codes), sub, ends, up(ops_off), up(ops_t), up(ops_n),
                                    up(np.array([len(o) for _, _, o in cases], np.int32)),
                                    (reward, penalty, n_score, cutoff)).gather()
    from gseek.output.cigar import cigar_strings
    texts = cigar_strings(runs, run_off)
    restarts = 0
    for k, (a, b, ops) in enumerate(cases):
        want = reevaluate(ops, a, b, 0, 0, reward, penalty, n_score, int(cutoff[k]))
        restarts += want.keep and want.q_start > 0 and want.ops and want.ops[0][1] != ops[0][1]
        assert (bool(out["kept"][k]), int(out["final_score"][k])) == (want.keep, want.score), k
        if not want.keep:
            continue
        assert [int(out[x][k]) for x in ("final_q_start", "final_q_end", "final_t_start", "final_t_end")] == \
            [want.q_start, want.q_end, want.s_start, want.s_end], k
        text, cols = _text(want.ops, a, b, want.q_start, want.s_start)
        assert texts[k] == text, k
        assert [int(out[x][k]) for x in ("matches", "mismatches", "gap_cols", "gap_opens")] == \
            [cols.count("="), cols.count("X"), cols.count("I") + cols.count("D"), sum(t != SUB for t, _ in want.ops)]
    assert restarts >= 10  # the cases hold what they are for


def _check_rescored(backend, cases, scores, cutoffs):
    reward, penalty = scores
    n_score = {(1, -2): -1, (1, -3): -2, (2, -3): -2}[scores]
    packed = _pack(cases)
    for xdrop in sorted({c[4] for c in cases}):
        idx = [i for i, c in enumerate(cases) if c[4] == xdrop]
        cutoff = np.asarray(cutoffs(len(idx)), np.int64)
        r = stage.greedy_gapped(backend, packed[0], *(a[idx] for a in packed[1:]), 2 * reward, -2 * penalty, xdrop,
                                traceback=True, rescore=(reward, penalty, n_score, cutoff))
        from gseek.output.cigar import cigar_strings
        texts = cigar_strings(*r["runs"].gather())
        for j, i in enumerate(idx):
            a, b, qp, sp, _ = cases[i]
            e = greedy_extend(a, b, qp, sp, xdrop, 2 * reward, -2 * penalty, traceback=True)
            want = reevaluate(e.ops, a, b, e.q_start, e.s_start, reward, penalty, n_score, int(cutoff[j])) \
                if e.ops else None
            keep = bool(want and want.keep)
            assert bool(r["kept"][j]) == keep, (i, xdrop)
            if want is not None:
                assert int(r["final_score"][j]) == want.score
            if not keep:
                continue
            assert [int(r[k][j]) for k in ("final_q_start", "final_q_end", "final_t_start", "final_t_end")] == \
                [want.q_start, want.q_end, want.s_start, want.s_end]
            text, cols = _text(want.ops, a, b, want.q_start, want.s_start)
            assert texts[j] == text, (i, xdrop)
            gaps = [t for t, _ in want.ops if t != SUB]
            assert [int(r[k][j]) for k in ("matches", "mismatches", "gap_cols", "gap_opens")] == \
                [cols.count("="), cols.count("X"), cols.count("I") + cols.count("D"), len(gaps)]


def test_an_even_reward_compares_its_cutoff_in_reported_units():
    """BLAST+ doubles the re-scoring's sum for an odd reward only, and compares it with the cutoff as it
    is: with 2/-3 (N -2) the first part of [SUB 3, DEL 1, SUB 2] scores 4, under the cutoff 5, so the
    restart drops it and the HSP is the last 3 columns, score 6 (found by a second reader against a
    transliteration of BLAST+ 2.12's C; comparing at twice the scale kept the first part, score 4)."""
    r = reevaluate([[SUB, 3], [DEL, 1], [SUB, 2]], [0, 1, 2, 3, 0, 1], [0, 1, 3, 0, 3, 0, 1], 0, 0, 2, -3, -2, 5)
    assert (r.keep, r.score, r.q_start, r.q_end, r.s_start, r.s_end, r.ops) == (True, 6, 3, 6, 4, 7, [[SUB, 3]])


def test_traceback_starts_equal_the_reference():
    """``BlastGetStartForGappedAlignmentNucl``: the estimate kept in a long run of matches, else a long
    or the longest run on its diagonal within the HSP (its middle, or 7 before its end)."""
    for a, b, qp, sp, xdrop in _cases(7, 200):
        e = greedy_extend(a, b, qp, sp, xdrop, 2, 4)
        want = traceback_start(a, b, e.q_seed, e.s_seed, e.q_start, e.q_end, e.s_start, e.s_end)
        q, s = np.array(a, np.uint8), np.array(b, np.uint8)
        z = np.zeros(1, np.int64)
        one = (lambda v: np.array([v], np.int64))
        got = gapped_start.traceback_starts(q, z, z + q.size, s, z, z + s.size, one(e.q_start), one(e.q_end),
                                            one(e.s_start), one(e.s_end), one(e.q_seed), one(e.s_seed))
        assert (int(got[0][0]), int(got[1][0])) == want


def test_an_estimate_that_holds_needs_only_the_subject_around_it():
    """``estimates_hold`` from windows of ``ESTIMATE_READS`` bases either side of each estimate: the same as
    from the whole sequences, and where it holds ``traceback_starts`` keeps the estimate (the search reads
    the HSPs' whole windows only for the others: ``GappedPasses._traceback_starts``)."""
    held = 0
    for a, b, qp, sp, xdrop in _cases(7, 200):
        e = greedy_extend(a, b, qp, sp, xdrop, 2, 4)
        q, s = np.array(a, np.uint8), np.array(b, np.uint8)
        z = np.zeros(1, np.int64)
        one = (lambda v: np.array([v], np.int64))
        whole = gapped_start.estimates_hold(q, z, z + q.size, s, z, z + s.size, one(e.q_end), one(e.q_seed),
                                            one(e.s_seed))
        r = gapped_start.ESTIMATE_READS
        lo, hi = max(0, e.s_seed - r), min(s.size, e.s_seed + r)
        near = gapped_start.estimates_hold(q, z, z + q.size, s[lo:hi], z, z + (hi - lo), one(e.q_end), one(e.q_seed),
                                           one(e.s_seed - lo))
        assert bool(near[0]) == bool(whole[0])
        if whole[0]:
            held += 1
            got = gapped_start.traceback_starts(q, z, z + q.size, s, z, z + s.size, one(e.q_start), one(e.q_end),
                                                one(e.s_start), one(e.s_end), one(e.q_seed), one(e.s_seed))
            assert (int(got[0][0]), int(got[1][0])) == (e.q_seed, e.s_seed)
    assert 20 < held < 200  # both kinds of case


def test_bad_seeds_and_scores_are_refused():
    codes = np.zeros(8, np.uint8)
    cpu = get_backend("cpu")
    with pytest.raises(ValueError, match="seed 0"):
        stage.greedy_gapped(cpu, codes, [0], [4], [4], [4], [4], [0], 2, 4, 20)
    with pytest.raises(ValueError, match="match 3"):
        stage.greedy_gapped(cpu, codes, [0], [4], [4], [4], [0], [0], 3, 4, 20)

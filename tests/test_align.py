"""Pairwise DP (gseek.align, kernels/dp.*): reference, Biopython, parasail, both backends."""

from __future__ import annotations

import random

import numpy as np
import pytest
from host_cuda import build as host_cuda_build
from host_cuda import build_warp as host_cuda_warp_build

import reference_dp as ref
from gseek.align import PairAligner
from gseek.dp import Scoring, dp_flags as _flags, identity_score_bound, score_pairs, traceback_pairs
from gseek.dp import xdrop_gapped, xdrop_ungapped
from gseek.dp.xdrop import xdrop_gapped_scores
from gseek.output.cigar import cigar_strings
from gseek.output.tabular import AlignmentWriter
from gseek.errors import OptionError
from gseek.kernels import dp

PROTEIN = "ARNDCQEGHILKMFPSTWYV"
FREE = ("query_start", "query_end", "target_start", "target_end")

SCHEMES = [
    dict(match=2, mismatch=-3, gap_open=5, gap_extend=2),
    dict(match=1, mismatch=-1, gap_open=0, gap_extend=1),
    dict(match=5, mismatch=-4, gap_open=10, gap_extend=1),
    dict(matrix="BLOSUM62", gap_open=11, gap_extend=1),
    dict(matrix="PAM250", gap_open=3, gap_extend=3),
]


def _seq(rng: random.Random, n: int, letters: str) -> str:
    return "".join(rng.choice(letters) for _ in range(n))


def _pairs(seed: int, letters: str, count: int = 40, max_len: int = 40) -> tuple[list[str], list[str]]:
    """Random pairs: lengths 1, very unequal lengths, identical, related and unrelated."""
    rng = random.Random(seed)
    qs, ts = [], []
    for k in range(count):
        kind = k % 5
        m = 1 if kind == 0 else rng.randint(1, max_len)
        q = _seq(rng, m, letters)
        if kind == 1:
            t = q
        elif kind == 2:
            t = _seq(rng, rng.randint(1, 3), letters)
        elif kind == 3:
            t = list(q[rng.randint(0, m - 1):] + _seq(rng, rng.randint(0, 6), letters))
            for x in range(len(t)):
                if rng.random() < 0.15:
                    t[x] = rng.choice(letters)
            t = "".join(t)
        else:
            t = _seq(rng, rng.randint(1, max_len), letters)
        if rng.random() < 0.5:
            q, t = t, q
        qs.append(q)
        ts.append(t)
    return qs, ts


def _free_ends_cases():
    return [FREE, ("query_start", "query_end"), ("target_start", "target_end"), ("query_start", "target_end"),
            ("query_end",), ("target_start",)]


MODE_CASES = [("global", FREE), ("local", FREE)] + [("semiglobal", f) for f in _free_ends_cases()]


def _stage_args(sc: Scoring, qs, ts, mode, free):
    """(codes, q_off, q_len, t_off, t_len, scoring, flags) of pairs (qs[k], ts[k]) for the DP stages."""
    codes = np.concatenate([sc.encode(x) for x in qs + ts])
    lens = np.array([len(x) for x in qs + ts])
    offs = np.concatenate([[0], np.cumsum(lens)[:-1]])
    n = len(qs)
    return codes, offs[:n], lens[:n], offs[n:], lens[n:], sc, _flags(mode, free)


def _reference(scoring: Scoring, mode, free, q, t):
    qc, tc = list(scoring.encode(q)), list(scoring.encode(t))
    flags = tuple(name in free for name in FREE)
    return ref.align(qc, tc, scoring.table.tolist(), scoring.gap_open, scoring.gap_extend, mode, flags,
                     scoring.no_match_code)


# --------------------------------------------------------------------------- reference and backends


@pytest.mark.parametrize("scheme", range(len(SCHEMES)))
@pytest.mark.parametrize("mode, free", MODE_CASES[:3] + [MODE_CASES[3], MODE_CASES[5]])
def test_backend_equals_reference(backend, scheme, mode, free):
    opts = SCHEMES[scheme]
    letters = PROTEIN if "matrix" in opts else "ACGTN" if scheme == 0 else "ACGT"
    qs, ts = _pairs(scheme * 7 + len(free), letters, count=30)
    kwargs = {"free_ends": free} if mode == "semiglobal" else {}
    aligner = PairAligner(mode=mode, traceback=True, device=backend, **opts, **kwargs)
    results = aligner.align_pairs(qs, ts)
    scores = PairAligner(mode=mode, device=backend, **opts, **kwargs).align_pairs(qs, ts)
    for k, (q, t) in enumerate(zip(qs, ts)):
        r = _reference(aligner.scoring, mode, free, q, t)
        got = results[k]
        assert (got.score, got.q_start, got.q_end, got.t_start, got.t_end, got.cigar) == (
            r.score, r.q_start, r.q_end, r.t_start, r.t_end, r.cigar), (q, t)
        assert (scores[k].score, scores[k].q_end, scores[k].t_end) == (r.score, r.q_end, r.t_end)


def test_every_cigar_rescores_and_spans_its_extents():
    for mode, free in MODE_CASES:
        for opts in SCHEMES:
            letters = PROTEIN if "matrix" in opts else "ACGTN"
            qs, ts = _pairs(len(free) + opts["gap_open"], letters, count=25)
            kwargs = {"free_ends": free} if mode == "semiglobal" else {}
            aligner = PairAligner(mode=mode, traceback=True, device="cpu", **opts, **kwargs)
            res = aligner.align_pairs(qs, ts)
            sc = aligner.scoring
            for k, hit in enumerate(res):
                ops = "".join(op * int(n) for n, op in _runs(hit.cigar))
                score, q_end, t_end = ref.rescore(ops, list(sc.encode(qs[k])), list(sc.encode(ts[k])), hit.q_start,
                                                  hit.t_start, sc.table.tolist(), sc.gap_open, sc.gap_extend)
                assert (score, q_end, t_end) == (hit.score, hit.q_end, hit.t_end)
                assert res.matches[k] == ops.count("=") and res.mismatches[k] == ops.count("X")
                assert res.gap_cols[k] == ops.count("I") + ops.count("D")
                if mode == "global":
                    assert (hit.q_start, hit.q_end, hit.t_start, hit.t_end) == (0, len(qs[k]), 0, len(ts[k]))


def _runs(cigar: str):
    import re

    return re.findall(r"(\d+)([=XIDM])", cigar)


# --------------------------------------------------------------------------- peers


def _biopython(mode, free, opts):
    from Bio.Align import PairwiseAligner, substitution_matrices

    a = PairwiseAligner(mode="local" if mode == "local" else "global")
    if "matrix" in opts:
        a.substitution_matrix = substitution_matrices.load(opts["matrix"])
    else:
        a.match_score, a.mismatch_score = opts["match"], opts["mismatch"]
    # Biopython: the first gap column scores open_gap_score; gseek: gap_open + gap_extend.
    a.open_gap_score = -(opts["gap_open"] + opts["gap_extend"])
    a.extend_gap_score = -opts["gap_extend"]
    if mode == "semiglobal":
        # Biopython's score(target, query): an insertion is a query residue
        # against a gap (gseek's I), a deletion a target residue (D).
        for name, attr in (("query_start", "left_insertion"), ("query_end", "right_insertion"),
                           ("target_start", "left_deletion"), ("target_end", "right_deletion")):
            if name in free:
                setattr(a, f"open_{attr}_score", 0)
                setattr(a, f"extend_{attr}_score", 0)
    return a


@pytest.mark.parametrize("mode, free", MODE_CASES)
def test_scores_equal_biopython(mode, free):
    for s, opts in enumerate(SCHEMES):
        letters = PROTEIN if "matrix" in opts else "ACGT"
        qs, ts = _pairs(100 + s, letters, count=25)
        kwargs = {"free_ends": free} if mode == "semiglobal" else {}
        got = PairAligner(mode=mode, device="cpu", **opts, **kwargs).align_pairs(qs, ts).score
        bio = _biopython(mode, free, opts)
        expected = [int(bio.score(t, q)) for q, t in zip(qs, ts)]
        assert got.tolist() == expected, opts


PARASAIL_ENDS = {FREE: "sg", ("query_start", "query_end"): "sg_qb_qe", ("target_start", "target_end"): "sg_db_de",
                 ("query_start", "target_end"): "sg_qb_de", ("query_end",): "sg_qe", ("target_start",): "sg_db"}


def _boundary_ends(sc: Scoring, free, m: int, n: int) -> list[int]:
    """H of the end-cell candidates parasail leaves out: (0, n) and (m, 0)."""
    out = []
    if "query_end" in free:
        out.append(0 if "target_start" in free else -(sc.gap_open + n * sc.gap_extend))
    if "target_end" in free:
        out.append(0 if "query_start" in free else -(sc.gap_open + m * sc.gap_extend))
    return out


@pytest.mark.parametrize("mode, free", MODE_CASES)
def test_scores_equal_parasail(mode, free):
    """parasail's ``open`` includes the first extension: parasail open = gap_open + gap_extend.

    parasail's semiglobal end is the best cell of the last row/column with
    i, j >= 1; gseek also counts the boundary cells (0, n) and (m, 0), so
    gseek = max(parasail, those cells).
    """
    parasail = pytest.importorskip("parasail")
    name = {"global": "nw", "local": "sw"}.get(mode) or PARASAIL_ENDS[free]
    if name == "sg_qb_qe":  # parasail has no such function; sg_qx is query begin+end free
        name = "sg_qx"
    if name == "sg_db_de":
        name = "sg_dx"
    func = getattr(parasail, f"{name}_scan_32")
    for s, opts in enumerate(SCHEMES):
        letters = PROTEIN if "matrix" in opts else "ACGT"
        qs, ts = _pairs(200 + s, letters, count=25)
        kwargs = {"free_ends": free} if mode == "semiglobal" else {}
        aligner = PairAligner(mode=mode, device="cpu", **opts, **kwargs)
        got = aligner.align_pairs(qs, ts).score
        if "matrix" in opts:
            matrix = getattr(parasail, opts["matrix"].lower())
        else:
            matrix = parasail.matrix_create("ACGT", opts["match"], opts["mismatch"])
        for k, (q, t) in enumerate(zip(qs, ts)):
            p = func(q, t, opts["gap_open"] + opts["gap_extend"], opts["gap_extend"], matrix).score
            if mode == "semiglobal":
                p = max([p, *_boundary_ends(aligner.scoring, free, len(q), len(t))])
            assert got[k] == p, (opts, q, t)


# --------------------------------------------------------------------------- overflow


def test_16bit_overflow_reruns_with_32_bits(backend):
    rng = random.Random(5)
    long_a = _seq(rng, 2500, "ACGT")
    unrelated = _seq(rng, 2400, "ACGT")
    qs = [long_a, long_a, "ACGT" * 10]
    ts = [long_a, unrelated, "ACGT" * 10]
    aligner = PairAligner(mode="global", match=20, mismatch=-30, gap_open=50, gap_extend=20, device=backend,
                          traceback=True)
    sc = aligner.scoring
    codes = np.concatenate([sc.encode(s) for s in qs + ts])
    lens = np.array([len(s) for s in qs + ts])
    offs = np.concatenate([[0], np.cumsum(lens)[:-1]])
    res = score_pairs(aligner.backend, codes, offs[:3], lens[:3], offs[3:], lens[3:], sc, 0)
    assert res["rerun"].tolist() == [True, True, False]
    assert res["score"][0] == 50000
    results = aligner.align_pairs(qs, ts)
    assert results.score[0] == 50000 and results[0].cigar == "2500="
    bio = _biopython("global", FREE, dict(match=20, mismatch=-30, gap_open=50, gap_extend=20))
    assert results.score[1] == int(bio.score(unrelated, long_a))
    tb = traceback_pairs(aligner.backend, codes, offs[:3], lens[:3], offs[3:], lens[3:], sc, 0)
    assert tb["rerun"].tolist() == [True, True, False]


def test_16bit_check_covers_the_gap_scores_too(backend):
    """At row 32 (a strip boundary) only F, the vertical-gap score, leaves int16; H stays inside.
    Found by a search over random pairs (a 32-bit sweep checking H and F at every 16th row)."""
    q, t = "AGACTGTAGGTCCATCTGTTCAGTTAGAACGCTGC", "CG"
    aligner = PairAligner(mode="global", match=10, mismatch=-2584, gap_open=2895, gap_extend=898, device=backend)
    sc = aligner.scoring
    codes = np.concatenate([sc.encode(q), sc.encode(t)])
    one = np.array([0]), np.array([len(q)]), np.array([len(q)]), np.array([len(t)])
    assert score_pairs(aligner.backend, codes, *one, sc, 0)["rerun"].tolist() == [True]
    assert traceback_pairs(aligner.backend, codes, *one, sc, 0)["rerun"].tolist() == [True]
    bio = _biopython("global", FREE, dict(match=10, mismatch=-2584, gap_open=2895, gap_extend=898))
    assert aligner.align(q, t).score == int(bio.score(q, t))


# --------------------------------------------------------------------------- warp kernels


def _mutated(rng: random.Random, s: str, rate: float) -> str:
    out = []
    for c in s:
        x = rng.random()
        if x < rate * 0.8:
            out.append(rng.choice("ACGT"))
        elif x < rate * 0.9:
            continue
        elif x < rate:
            out.append(c + rng.choice("ACGT"))
        else:
            out.append(c)
    return "".join(out)


def _warp_cases(seed: int):
    """Pairs whose query rows span 1 to 3 warp passes (32 strips of 8 or 16
    rows), related and unrelated, with N and a repeat for ties."""
    rng = random.Random(seed)
    qs, ts = [], []
    for m in (1, 7, 8, 9, 255, 256, 257, 513, 600, 1100):
        q = _seq(rng, m, "ACGT")
        qs += [q, q, q + "N" * 3]
        ts += [_mutated(rng, q, 0.1), _seq(rng, rng.randint(1, 400), "ACGT"), "AC" * rng.randint(1, 90)]
    q = _seq(rng, 1700, "ACGT")  # 1700 matches of 20 leave int16
    return qs + [q], ts + [_mutated(rng, q, 0.01)]


@pytest.mark.parametrize("mode, free", MODE_CASES)
def test_warp_kernels_equal_the_one_thread_kernels(backend, mode, free, monkeypatch):
    """Every pair through the warp-per-slot kernels (thresholds lowered) gives
    the one-thread kernels' arrays: scores, end cells, 16-bit re-runs, walks."""
    import gseek.dp.nwsw as align_mod

    qs, ts = _warp_cases(len(free) * 3 + len(mode))
    schemes = [Scoring()] + ([Scoring(match=20, mismatch=-30, gap_open=50, gap_extend=20)] if mode == "global" else [])
    for sc in schemes:
        args = _stage_args(sc, qs, ts, mode, free)
        q_len, t_len = args[2], args[4]
        be = PairAligner(device=backend).backend
        monkeypatch.setattr(align_mod, "WARP_MIN_STRIPS", 10**6)
        assert not align_mod._warp_mask(be, q_len, t_len, 1).any()
        one = score_pairs(be, *args), traceback_pairs(be, *args)
        monkeypatch.setattr(align_mod, "WARP_MIN_STRIPS", 1)
        monkeypatch.setattr(align_mod, "WARP_MIN_COLUMNS", 1)
        assert align_mod._warp_mask(be, q_len, t_len, 16).all()
        warp = score_pairs(be, *args), traceback_pairs(be, *args), traceback_pairs(be, *args, max_bytes=200_000)
        monkeypatch.undo()
        for a, b in zip((one[0], one[1], one[1]), warp):
            assert a.keys() == b.keys()
            for key in a:
                assert np.array_equal(a[key], b[key]), (sc, key)
        if len(schemes) == 2 and sc is schemes[1]:
            assert one[0]["rerun"].any()
    # and the reference, for a few of them (the last scheme's results)
    for k in range(0, len(qs), 7):
        r = _reference(sc, mode, free, qs[k], ts[k])
        assert (one[1]["score"][k], one[1]["q_start"][k], one[1]["t_start"][k]) == (r.score, r.q_start, r.t_start)


# --------------------------------------------------------------------------- shapes, lazy, output


def test_batch_shapes_agree(backend):
    rng = random.Random(11)
    seqs = [_seq(rng, rng.randint(5, 60), "ACGT") for _ in range(9)]
    aligner = PairAligner(mode="local", traceback=True, device=backend, batch_pairs=7)
    avs = aligner.all_vs_all(seqs)
    assert len(avs) == 36
    pairs = [(i, j) for i in range(9) for j in range(i + 1, 9)]
    assert list(zip(avs.query.tolist(), avs.target.tolist())) == pairs
    one_by_one = aligner.align_pairs([seqs[i] for i, _ in pairs], [seqs[j] for _, j in pairs])
    assert avs.score.tolist() == one_by_one.score.tolist()
    assert avs.cigars == one_by_one.cigars
    qvd = aligner.query_vs_database(seqs[:3], seqs[3:])
    assert len(qvd) == 18 and qvd.score[7] == aligner.align(seqs[1], seqs[4]).score


def test_progress_counts_every_aligned_pair_once():
    rng = random.Random(12)
    seqs = [_seq(rng, rng.randint(5, 40), "ACGT") for _ in range(10)]
    seen: list[int] = []
    lazy = PairAligner(device="cpu", batch_pairs=7, min_identity=0.9)
    rows = sum(len(c) for c in lazy.iter_all_vs_all(seqs, seen.append))
    assert sum(seen) == 45 and seen[:-1] == [7] * 6 and rows < 45
    seen.clear()
    list(PairAligner(device="cpu", batch_pairs=4).iter_query_vs_database(seqs[:3], seqs[3:], seen.append))
    assert sum(seen) == 21


def test_lazy_traceback_keeps_exactly_the_passing_pairs():
    from gseek.datasets.simulate import dp_families

    fam = dp_families(3, 4, 150, seed=2, max_divergence=0.1)
    seqs = {name: seq for name, seq in fam.records}
    full = PairAligner(mode="global", traceback=True, device="cpu").all_vs_all(seqs)
    for min_identity in (0.0, 0.9, 0.95):
        lazy = PairAligner(mode="global", min_identity=min_identity, device="cpu").all_vs_all(seqs)
        keep = full.identity >= min_identity
        assert lazy.score.tolist() == full.score[keep].tolist()
        assert lazy.cigars == [c for c, k in zip(full.cigars, keep) if k]
    by_score = PairAligner(mode="global", min_score=200, device="cpu").all_vs_all(seqs)
    assert by_score.score.tolist() == full.score[full.score >= 200].tolist()


def test_identity_bound_is_a_lower_bound():
    rng = random.Random(3)
    for mode in ("global", "local", "semiglobal"):
        for opts in SCHEMES[:3]:
            qs, ts = _pairs(rng.randint(0, 99), "ACGTN", count=30)
            res = PairAligner(mode=mode, traceback=True, device="cpu", **opts).align_pairs(qs, ts)
            for f in (0.5, 0.8, 0.97, 1.0):
                bound = identity_score_bound(f, res.q_len, res.t_len, mode, Scoring(**opts))
                passing = res.identity >= f
                assert (res.score[passing] >= bound[passing]).all()


def test_rows_print_as_tsv_and_outfmt6(tmp_path):
    aligner = PairAligner(mode="local", traceback=True, device="cpu", outfmt="6")
    res = aligner.align_pairs({"q": "TTTACGTACGTTT"}, {"s": "GGACGTCCGTGG"})
    assert str(res[0]) == "q\ts\t87.500\t8\t1\t0\t4\t11\t3\t10\t11"
    m = PairAligner(mode="local", traceback=True, device="cpu", cigar_m=True).align("TTTACGTACGTTT", "GGACGTCCGTGG")
    assert m.cigar == "8M"
    out = tmp_path / "out.tsv"
    with AlignmentWriter(out, aligner.columns) as w:
        w.write(res)
        w.write(res)
    assert out.read_text().splitlines() == [str(res[0])] * 2
    assert [p.name for p in tmp_path.iterdir()] == ["out.tsv"]


def test_writer_leaves_nothing_on_error(tmp_path):
    out = tmp_path / "out.tsv"
    with pytest.raises(RuntimeError):
        with AlignmentWriter(out, ("qname",)):
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_n_scores_as_documented():
    a = PairAligner(traceback=True, device="cpu")
    hit = a.align("ACNT", "ACNT")
    assert (hit.score, hit.cigar) == (3, "2=1X1=")
    assert PairAligner(n_score=0, device="cpu").align("ACNT", "ACGT").score == 6


# --------------------------------------------------------------------------- X-drop


def test_xdrop_ungapped_equals_reference(backend):
    rng = random.Random(8)
    sc = Scoring(match=1, mismatch=-3)
    qs = [_seq(rng, rng.randint(5, 80), "ACGT") for _ in range(40)]
    ts = [q[: rng.randint(3, len(q))] if k % 2 else _seq(rng, rng.randint(5, 80), "ACGT") for k, q in enumerate(qs)]
    codes = np.concatenate([sc.encode(s) for s in qs + ts])
    lens = np.array([len(s) for s in qs + ts])
    offs = np.concatenate([[0], np.cumsum(lens)[:-1]])
    qp = np.array([rng.randint(0, min(len(q), len(t)) - 1) for q, t in zip(qs, ts)])
    got = xdrop_ungapped(backend, codes, offs[:40], lens[:40], offs[40:], lens[40:], qp, qp, sc, 10)
    for k in range(40):
        expect = ref.xdrop_ungapped(list(sc.encode(qs[k])), list(sc.encode(ts[k])), qp[k], qp[k],
                                    sc.table.tolist(), 10)
        assert (got["score"][k], got["q_start"][k], got["q_end"][k]) == expect


def _xdrop_cases(seed: int, longest: int = 70, sub: float = 0.08):
    """Seeds for gapped X-drop: related pairs with indels (``sub`` substitutions a base), unrelated pairs,
    long identical runs, N, seeds at either end of either sequence."""
    rng = random.Random(seed)
    qs, ts, qp, tp = [], [], [], []
    for k in range(48):
        kind = k % 6
        q = _seq(rng, rng.randint(1, longest), "ACGTN" if kind == 5 else "ACGT")
        if kind in (0, 5):  # related: substitutions and indels
            t = list(q)
            for x in range(len(t) - 1, -1, -1):
                r = rng.random()
                if r < sub:
                    t[x] = rng.choice("ACGT")
                elif r < sub + 0.04:
                    del t[x]
                elif r < sub + 0.08:
                    t.insert(x, _seq(rng, rng.randint(1, 4), "ACGT"))
            t = "".join(t) or "A"
        elif kind == 1:
            t = _seq(rng, rng.randint(1, 70), "ACGT")
        elif kind == 2:  # long identical run
            q = "ACGGT" * rng.randint(5, 30)
            t = q[rng.randint(0, 10):]
        elif kind == 3:  # a gap in the middle
            cut = rng.randint(1, len(q))
            t = q[:cut] + _seq(rng, rng.randint(1, 6), "ACGT") + q[cut:]
        else:
            t = q
        i = rng.choice([0, len(q) - 1, rng.randint(0, len(q) - 1)])
        j = min(len(t) - 1, max(0, i + rng.randint(-2, 2))) if kind != 4 else rng.choice([0, len(t) - 1])
        qs.append(q), ts.append(t), qp.append(i), tp.append(j)
    return qs, ts, np.array(qp), np.array(tp)


def _xdrop_check(backend, scoring, xdrop, seed, runs=True, **cases):
    qs, ts, qp, tp = _xdrop_cases(seed, **cases)
    codes = np.concatenate([scoring.encode(s) for s in qs + ts])
    lens = np.array([len(s) for s in qs + ts])
    offs = np.concatenate([[0], np.cumsum(lens)[:-1]])
    n = len(qs)
    got = xdrop_gapped(backend, codes, offs[:n], lens[:n], offs[n:], lens[n:], qp, tp, scoring, xdrop)
    only = xdrop_gapped(backend, codes, offs[:n], lens[:n], offs[n:], lens[n:], qp, tp, scoring, xdrop,
                        traceback=False)
    cigars = cigar_strings(got["cigar"], got["cigar_offsets"])
    # the score-only sweep on arrays of the backend, left there (gseek.blast.device_gapped's launches)
    dev = [backend.asarray(np.asarray(a, d)) for a, d in ((offs[:n], np.int64), (lens[:n], np.int32),
                                                          (offs[n:], np.int64), (lens[n:], np.int32),
                                                          (qp, np.int32), (tp, np.int32))]
    left = backend.to_host(xdrop_gapped_scores(backend, backend.asarray(codes), *dev, scoring, xdrop))
    names = ("score", "q_start", "q_end", "t_start", "t_end", "edges")
    assert all(np.array_equal(left[i], only[key]) for i, key in enumerate(names))
    sc = scoring
    for k in range(n):
        qc, tc = list(sc.encode(qs[k])), list(sc.encode(ts[k]))
        r = ref.xdrop_gapped(qc, tc, int(qp[k]), int(tp[k]), sc.table.tolist(), sc.gap_open, sc.gap_extend, xdrop,
                             sc.no_match_code)
        row = tuple(int(got[key][k]) for key in ("score", "q_start", "q_end", "t_start", "t_end", "edges"))
        assert row + (cigars[k],) == (r.score, r.q_start, r.q_end, r.t_start, r.t_end, r.edges, r.cigar), \
            (k, qs[k], ts[k])
        assert row == tuple(int(only[key][k]) for key in ("score", "q_start", "q_end", "t_start", "t_end", "edges"))
        assert ref.rescore(r.ops, qc, tc, r.q_start, r.t_start, sc.table.tolist(), sc.gap_open,
                           sc.gap_extend) == (r.score, r.q_end, r.t_end)
        assert got["matches"][k] == r.ops.count("=") and got["gap_cols"][k] == r.ops.count("I") + r.ops.count("D")
    if xdrop == 20:  # the cases hold sides cut by the target's end and sides that end inside it
        assert set(np.unique(got["edges"])) == {0, 1, 2, 3}
    for max_bytes in (1, 3000) if runs else ():  # trace-back in runs of seeds (one each; a few): the same arrays
        runs = xdrop_gapped(backend, codes, offs[:n], lens[:n], offs[n:], lens[n:], qp, tp, scoring, xdrop,
                            max_bytes=max_bytes)
        assert runs.keys() == got.keys() and all(np.array_equal(runs[k], got[k]) for k in got), max_bytes
    return got


@pytest.mark.parametrize("scheme, xdrop", [(0, 20), (0, 0), (2, 30), (1, 5), (0, 1000)])
def test_xdrop_gapped_equals_reference(backend, scheme, xdrop):
    opts = SCHEMES[scheme]
    _xdrop_check(backend, Scoring(**opts), xdrop, seed=scheme * 31 + xdrop)


@pytest.mark.parametrize("longest, sub, xdrop, seed", [(70, 0.08, 10, 6), (70, 0.08, 16, 15), (200, 0.12, 10, 16),
                                                     (400, 0.2, 30, 16)])
def test_xdrop_gapped_equals_reference_on_diverged_pairs(longest, sub, xdrop, seed):
    """blastn-short's scores (1/-3, gaps 5/2) on related pairs: each set holds rows whose live span ends in a
    dropped cell and goes on past it (the sweep's two inner loops: a gap run past the span must start from
    the cell before it, not from the span's last cell; each set fails with that state carried over)."""
    from gseek.backend import CpuBackend

    _xdrop_check(CpuBackend(threads=2), Scoring(match=1, mismatch=-3, gap_open=5, gap_extend=2), xdrop, seed=seed,
                 runs=False, longest=longest, sub=sub)


@pytest.mark.parametrize("scheme, xdrop", [(0, 20), (2, 30), (0, 1000)])
def test_xdrop_gapped_host_traceback_equals_the_launches(monkeypatch, scheme, xdrop):
    """On the CPU the trace-back is one sweep a side on host threads (``HOST_TRACEBACK``); the
    score, fill and walk launches a GPU runs (their Numba twins, held to the reference here) give
    the same arrays, on one thread or two, from a first buffer of one byte (grown seed by seed)."""
    import gseek.dp.xdrop as xdrop_module
    from gseek.backend import CpuBackend

    sc = Scoring(**SCHEMES[scheme])
    monkeypatch.setattr(xdrop_module, "HOST_TRACEBACK", False)
    launches = _xdrop_check(CpuBackend(threads=2), sc, xdrop, seed=scheme * 31 + xdrop, runs=False)
    monkeypatch.setattr(xdrop_module, "HOST_TRACEBACK", True)
    for threads, first_bytes in ((1, 1 << 16), (2, 1), (2, 64)):
        monkeypatch.setattr(xdrop_module, "HOST_TB_BYTES", first_bytes)
        host = _xdrop_check(CpuBackend(threads=threads), sc, xdrop, seed=scheme * 31 + xdrop, runs=False)
        assert host.keys() == launches.keys(), (threads, first_bytes)
        for k in launches:
            assert host[k].dtype == launches[k].dtype and np.array_equal(host[k], launches[k]), (k, threads, first_bytes)


def test_xdrop_gapped_edge_cases():
    sc = Scoring()
    cpu = PairAligner(device="cpu").backend

    def run(q, t, i, j, x):
        codes = np.concatenate([sc.encode(q), sc.encode(t)])
        r = xdrop_gapped(cpu, codes, [0], [len(q)], [len(q)], [len(t)], [i], [j], sc, x)
        return tuple(int(r[k][0]) for k in ("score", "q_start", "q_end", "t_start", "t_end")), \
            cigar_strings(r["cigar"], r["cigar_offsets"])[0]

    # X = 0: stops at the first mismatch on either side; the seed column is always aligned.
    assert run("AACGTTA", "TACGTAA", 3, 3, 0) == ((8, 1, 5, 1, 5), "4=")
    assert run("ACGT", "TCGA", 0, 0, 0) == ((1, 0, 3, 0, 3), "1X2=")
    # Seeds at both ends; a long identical run extends to the end.
    assert run("ACGTACGTACGT" * 10, "ACGTACGTACGT" * 10, 0, 0, 10) == ((240, 0, 120, 0, 120), "120=")
    assert run("ACGTACGTACGT" * 10, "ACGTACGTACGT" * 10, 119, 119, 10) == ((240, 0, 120, 0, 120), "120=")
    # A gap is crossed when X allows it, not when it does not.
    q = "ACGTTGCAAGCTTACG" + "GATTACAGATTACACC"
    t = "ACGTTGCAAGCTTACG" + "TTT" + "GATTACAGATTACACC"
    assert run(q, t, 2, 2, 20) == ((53, 0, 32, 0, 35), "16=3D16=")
    assert run(q, t, 2, 2, 10)[0] == (32, 0, 16, 0, 16)
    with pytest.raises(OptionError, match="not a residue pair"):
        run("ACGT", "ACGT", 4, 0, 5)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: PairAligner(device="cpu").align("", "ACGT"), "is empty"),
        (lambda: PairAligner(device="cpu").align("ACGJ", "ACGT"), "residue 'J' at position 4"),
        (lambda: PairAligner(matrix="BLOSUM62", device="cpu").align("ACDJ", "ACD"), "matrix BLOSUM62"),
        (lambda: PairAligner(matrix="BLOSUM99", device="cpu"), "unknown substitution matrix 'BLOSUM99'"),
        (lambda: PairAligner(gap_open=-5, device="cpu"), "gap costs must be >= 0"),
        (lambda: PairAligner(mode="fancy", device="cpu"), "mode must be one of"),
        (lambda: PairAligner(colour="red"), "unknown PairAligner option 'colour'"),
        (lambda: PairAligner(free_ends=("query_start",), device="cpu"), "applies to mode=.semiglobal. only"),
        (lambda: PairAligner(min_identity=97, device="cpu"), "fraction"),
        (lambda: PairAligner(outfmt="6 qseqid bogus", device="cpu"), "unknown outfmt 6 column"),
        (lambda: PairAligner(matrix="GONNET1992", device="cpu"), "non-integer"),
        (lambda: PairAligner(mismatch=-10**6, gap_open=10**6, gap_extend=10**6, device="cpu").align("A" * 70, "C"),
         "the DP's range is 134,217,728"),
    ],
)
def test_bad_input_is_one_clear_line(make, message):
    with pytest.raises(OptionError, match=message) as info:
        make()
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)


def test_repr_shows_non_defaults():
    assert repr(PairAligner(mode="local", gap_open=3, device="cpu")) == \
        "PairAligner(mode='local', gap_open=3, device='cpu')"


# --------------------------------------------------------------------------- the CUDA source, on the host

@pytest.fixture(scope="module")
def host_cuda(tmp_path_factory):
    return host_cuda_build(tmp_path_factory.mktemp("hostdp"), [dp])


@pytest.mark.parametrize("mode, free", MODE_CASES)
def test_cuda_source_equals_the_numba_twin_on_the_host(host_cuda, mode, free):
    rng = random.Random(len(free) + len(mode))
    qs, ts = _pairs(rng.randint(0, 999), "ACGTN", count=70, max_len=45)
    qs += [_seq(rng, 2100, "ACGT")]
    ts += [qs[-1][:2000]]
    sc = Scoring(match=20, mismatch=-30, gap_open=50, gap_extend=20) if mode == "global" else Scoring()
    args = _stage_args(sc, qs, ts, mode, free)
    pairs = args[:5]  # codes, q_off, q_len, t_off, t_len
    cpu = PairAligner(device="cpu").backend
    a, b = score_pairs(host_cuda, *args), score_pairs(cpu, *args)
    for key in a:
        assert np.array_equal(a[key], b[key]), key
    a, b = traceback_pairs(host_cuda, *args), traceback_pairs(cpu, *args)
    assert a.keys() == b.keys()
    for key in a:
        assert np.array_equal(a[key], b[key]), key
    # Several memory batches give the same arrays as one.
    c = traceback_pairs(cpu, *args, max_bytes=4000)
    assert all(np.array_equal(c[key], b[key]) for key in b)
    qp = np.array([min(len(q), len(t)) // 2 for q, t in zip(qs, ts)])
    x = xdrop_ungapped(host_cuda, *pairs, qp, qp, sc, 7)
    y = xdrop_ungapped(cpu, *pairs, qp, qp, sc, 7)
    assert all(np.array_equal(x[k], y[k]) for k in x)
    tp = np.array([min(len(q), len(t)) // 3 for q, t in zip(qs, ts)])
    for xdrop in (0, 12, 60):
        x = xdrop_gapped(host_cuda, *pairs, qp, tp, sc, xdrop)
        y = xdrop_gapped(cpu, *pairs, qp, tp, sc, xdrop)
        assert x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x), xdrop


@pytest.fixture(scope="module")
def host_cuda_warp(tmp_path_factory):
    return host_cuda_warp_build(tmp_path_factory.mktemp("hostdpwarp"), dp)


@pytest.mark.parametrize("mode, free", [MODE_CASES[0], MODE_CASES[1], MODE_CASES[4]])
def test_warp_kernels_cuda_source_equal_the_numba_twin_on_the_host(host_cuda_warp, mode, free, monkeypatch):
    """dp.cu's warp kernels, run by 32 real threads (shuffles through a barrier), on
    pairs that fill one and two passes, idle lanes, 1-column and 1-row cases."""
    import gseek.dp.nwsw as align_mod

    rng = random.Random(len(mode) + len(free))
    shapes = [(1, 1), (9, 33), (257, 40), (300, 5), (130, 70)]
    qs = [_seq(rng, m, "ACGTN" if k == 2 else "ACGT") for k, (m, _) in enumerate(shapes)]
    ts = [(_mutated(rng, q, 0.1) + q)[:n] or "A" for q, (_, n) in zip(qs, shapes)]
    unit = _seq(rng, 20, "ACGT")  # equal best cells in two strips of a pass, and in two passes
    for gap in (40, 600):
        qs.append(unit + _seq(rng, gap, "ACGT") + unit)
        ts.append(unit)
    schemes = [Scoring()] + ([Scoring(match=600, mismatch=-30, gap_open=50, gap_extend=20)] if mode == "global" else [])
    cpu = PairAligner(device="cpu").backend
    monkeypatch.setattr(align_mod, "WARP_MIN_STRIPS", 1)
    monkeypatch.setattr(align_mod, "WARP_MIN_COLUMNS", 1)
    for sc in schemes:
        args = _stage_args(sc, qs, ts, mode, free)
        for fn in (score_pairs, traceback_pairs):
            a, b = fn(host_cuda_warp, *args), fn(cpu, *args)
            assert a.keys() == b.keys()
            for key in a:
                assert np.array_equal(a[key], b[key]), (fn.__name__, sc, key)
        if sc.match == 600:
            assert a["rerun"].any()


def test_xdrop_gapped_cuda_source_equals_the_reference_on_the_host(host_cuda):
    _xdrop_check(host_cuda, Scoring(), 25, seed=3)
    _xdrop_check(host_cuda, Scoring(**SCHEMES[2]), 0, seed=4)


@pytest.mark.parametrize("scheme, xdrop", [(1, 0), (0, 8), (0, 1000)])
def test_xdrop_gapped_warp_kernels_equal_the_reference_on_the_host(host_cuda_warp, scheme, xdrop):
    """dp.cu's one-warp-a-seed X-drop sweeps (rows 32 columns at a time: prefix maxima for E
    and for the drops, ballots for the row's end) run by 32 host threads."""
    got = _xdrop_check(host_cuda_warp, Scoring(**SCHEMES[scheme]), xdrop, seed=scheme * 7 + xdrop + 1, runs=False)
    assert (got["t_end"] - got["t_start"]).max() > 64  # rows of more than two chunks


# --------------------------------------------------------------------------- CIGAR text, workspace


def test_cigar_strings_take_concat_and_merge():
    from gseek.output.cigar import CigarStrings, cigar_strings

    runs = np.array([12 << 4 | 7, 1 << 4 | 8, 3 << 4 | 1, 100 << 4 | 7, 2 << 4 | 2], np.uint32)
    c = cigar_strings(runs, np.array([0, 2, 2, 5]))
    assert list(c) == ["12=1X", "", "3I100=2D"] and c[-1] == "3I100=2D"
    assert list(cigar_strings(runs, np.array([0, 2, 2, 5]), merge_m=True)) == ["13M", "", "3I100M2D"]
    assert list(c.take(np.array([2, 0, 2]))) == ["3I100=2D", "12=1X", "3I100=2D"]
    both = CigarStrings.concat([c.take(np.array([2])), c])
    assert both == ["3I100=2D", "12=1X", "", "3I100=2D"] and both.take(np.array([1, 2, 3])) == c
    assert np.array_equal(both.runs[both.run_offsets[0]:both.run_offsets[1]], runs[2:])


def test_workspace_is_reused_between_batches(monkeypatch):
    """The aligner's one DPWorkspace hands out the same buffers batch after
    batch (replaced only to grow) and call after call; results are the
    one-batch run's."""
    from gseek.dp import DPWorkspace

    rng = random.Random(4)
    qs = [_seq(rng, rng.randint(20, 90), "ACGT") for _ in range(60)]
    ts = [_seq(rng, rng.randint(20, 90), "ACGT") for _ in range(60)]
    one = PairAligner(mode="local", traceback=True, device="cpu").align_pairs(qs, ts)
    small = PairAligner(mode="local", traceback=True, device="cpu", batch_pairs=7, traceback_memory=3000)
    handed: list[tuple[DPWorkspace, str, np.ndarray]] = []
    get = DPWorkspace.get

    def recording_get(self, name, size, dtype):
        buf = get(self, name, size, dtype)
        handed.append((self, name, buf))
        return buf

    monkeypatch.setattr(DPWorkspace, "get", recording_get)
    many = small.align_pairs(qs, ts)
    first = len(handed)
    again = small.align_pairs(qs, ts)

    def owner(buf):  # the allocation a handed-out view lives in
        return buf if buf.base is None else buf.base

    assert {id(ws) for ws, _, _ in handed} == {id(small.workspace)}
    calls = [handed[:first], handed[first:]]
    names = [[name for _, name, _ in call] for call in calls]
    assert names[0] == names[1] and all(names[0].count(n) > 1 for n in names[0])  # several batches a call
    held: dict[str, np.ndarray] = {}
    for _, name, buf in calls[0]:
        if name in held and owner(buf) is not held[name]:
            assert buf.size > held[name].size, f"{name}: replaced without growing"
        held[name] = owner(buf)
    for _, name, buf in calls[1]:
        assert owner(buf) is held[name], f"{name}: a new buffer on the second call"
    assert many.cigars == one.cigars == again.cigars
    assert many.score.tolist() == one.score.tolist() == again.score.tolist()


def test_residues_and_scoring_stay_on_the_device_between_chunks(monkeypatch):
    """A job's chunks share one upload of both sides' residues and of the scoring
    table (DPWorkspace.resident), instead of one per chunk. (A trace-back budget too small for the
    CPU's lane groups: the one-pair kernels, as a GPU runs them; their CIGARs are the lanes'.)"""
    from gseek.dp import DPWorkspace

    rng = random.Random(5)
    qs = [_seq(rng, rng.randint(20, 60), "ACGT") for _ in range(6)]
    ts = [_seq(rng, rng.randint(20, 60), "ACGT") for _ in range(9)]
    aligner = PairAligner(mode="local", traceback=True, device="cpu", batch_pairs=5, traceback_memory=1)
    made: list[str] = []
    resident = DPWorkspace.resident

    def counting(self, name, owners, make):
        def recorded():
            made.append(name)
            return make()
        return resident(self, name, owners, recorded)

    monkeypatch.setattr(DPWorkspace, "resident", counting)
    chunked = aligner.query_vs_database(qs, ts)  # 54 pairs: 11 chunks
    assert sorted(made) == ["codes", "table"], made
    whole = PairAligner(mode="local", traceback=True, device="cpu").query_vs_database(qs, ts)
    assert chunked.cigars == whole.cigars and chunked.score.tolist() == whole.score.tolist()


@pytest.mark.parametrize("options, message", [
    ({"cigar_m": True}, "cigar_m needs the trace-back"),
    ({"traceback": True, "traceback_memory": 0}, "traceback_memory must be >= 1"),
    ({"matrix": "BLOSUM62", "mismatch": -4}, "substitution matrix"),
])
def test_options_that_cannot_apply_are_rejected(options, message):
    with pytest.raises(OptionError, match=message):
        PairAligner(device="cpu", **options)

"""GCUPS of gseek's batched DP by length, mode and kind of run, with a stage
breakdown of trace-back, parasail on the same pairs, and a GPU == CPU check.

    python benchmarks/tools/profile_align.py --device gpu --lengths 100,1500 --pairs 200000 \\
        --tb-pairs 50000 --modes global,local --stages --parasail-pairs 2000 --verify 500

Random pairs of ``dp_families`` sequences (16S-like, DNA, match 2 / mismatch
-3 / gap 5+2k). GCUPS = sum(m * n) / seconds / 1e9, best of ``--repeat``
after a warm-up run (NVRTC compile / Numba load are not timed). Kinds:

* ``score-only``: the :func:`score_pairs` stage.
* ``trace-back``: the :func:`traceback_pairs` stage (fill, two-pass walk,
  compact CIGAR runs downloaded once).
* ``trace-back+text``: ``PairAligner(traceback=True)`` results with CIGAR
  text for every pair (what a writer consumes).
* ``lazy``: ``PairAligner(min_identity=0.97)``: score all, trace back the
  pairs that can pass (LazyRScan), results with text.

``--stages`` prints the seconds of each kernel and of the host work of one
trace-back run (each launch synchronised, so the sum is a little above the
unsynchronised total). ``--verify N`` compares trace-back and gapped X-drop
of N pairs with the CPU backend, array by array.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gseek.align import PairAligner, encode_set as _encode_set
from gseek.output.cigar import cigar_strings
from gseek.dp import (
    DPWorkspace,
    dp_flags as _flags,
    score_pairs,
    traceback_pairs,
    xdrop_gapped,
)
from gseek.datasets.simulate import dp_families


def _pairs(n_pairs: int, length: int, seed: int = 1):
    members = max(2, int((2 * n_pairs) ** 0.5) + 2)
    fam = dp_families(max(1, members // 20), 20, length, seed=seed, max_divergence=0.15)
    seqs = [s for _, s in fam.records]
    rng = np.random.default_rng(seed)
    i = rng.integers(0, len(seqs), n_pairs)
    j = rng.integers(0, len(seqs), n_pairs)
    return seqs, i, j


def _time(fn, repeat=1):
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _stages(backend, run):
    """Seconds per kernel (synchronised launches) and the rest (host) of one ``run()``."""
    times: dict[str, float] = {}
    launch = backend.launch

    def timed(family, name, n, *args):
        backend.synchronize()
        t0 = time.perf_counter()
        launch(family, name, n, *args)
        backend.synchronize()
        times[name] = times.get(name, 0.0) + time.perf_counter() - t0

    backend.launch = timed
    try:
        t0 = time.perf_counter()
        run()
        backend.synchronize()
        total = time.perf_counter() - t0
    finally:
        backend.launch = launch
    times["host+transfers"] = total - sum(times.values())
    return times, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--lengths", default="100,1500")
    ap.add_argument("--modes", default="global,local")
    ap.add_argument("--kinds", default="score-only,trace-back,trace-back+text,lazy")
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--tb-pairs", type=int, default=None, help="pairs for the trace-back kinds [--pairs]")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--stages", action="store_true", help="stage breakdown of one trace-back run")
    ap.add_argument("--parasail-pairs", type=int, default=500)
    ap.add_argument("--verify", type=int, default=0, help="check this many pairs against the CPU backend")
    ap.add_argument("--tb-memory", type=int, default=None,
                    help="trace-back bytes per batch [PairAligner default: 40%% of free GPU memory, 256 MiB CPU]")
    ap.add_argument("--warp-min-strips", type=int, default=None,
                    help="pairs of at least this many strips of rows take the warp kernels "
                         "[gseek.dp.nwsw.WARP_MIN_STRIPS]")
    args = ap.parse_args()
    if args.warp_min_strips is not None:
        import gseek.dp.nwsw

        gseek.dp.nwsw.WARP_MIN_STRIPS = args.warp_min_strips
    kinds = args.kinds.split(",")
    for length in [int(x) for x in args.lengths.split(",")]:
        seqs, qi, ti = _pairs(args.pairs, length)
        for mode in args.modes.split(","):
            aligner = PairAligner(mode=mode, device=args.device, threads=args.threads, batch_pairs=len(qi),
                                  traceback_memory=args.tb_memory)
            backend = aligner.backend
            tb_memory = aligner.traceback_memory
            ws = DPWorkspace(backend)
            s = _encode_set(seqs, aligner.scoring, "s")
            codes = backend.asarray(s.codes)
            flags = _flags(mode, ("query_start", "query_end", "target_start", "target_end"))
            q_off, q_len, t_off, t_len = s.offsets[qi], s.lengths[qi], s.offsets[ti], s.lengths[ti]
            cells = (q_len.astype(np.float64) * t_len).cumsum()
            nt = min(args.tb_pairs or len(qi), len(qi))
            head = f"{backend.describe()}\tlen={length}\t{mode}"

            def report(kind, n, t):
                print(f"{head}\t{kind}\tpairs={n}\t{cells[n - 1] / t / 1e9:.2f} GCUPS\t{t:.3f} s", flush=True)

            if "score-only" in kinds:
                def score():
                    score_pairs(backend, codes, q_off, q_len, t_off, t_len, aligner.scoring, flags, ws)
                    backend.synchronize()
                report("score-only", len(qi), _time(score, args.repeat))
            tb = slice(0, nt)

            def trace():
                traceback_pairs(backend, codes, q_off[tb], q_len[tb], t_off[tb], t_len[tb], aligner.scoring, flags,
                                tb_memory, ws)
                backend.synchronize()

            if "trace-back" in kinds:
                report("trace-back", nt, _time(trace, args.repeat))
            if "trace-back+text" in kinds:
                full = PairAligner(mode=mode, device=backend, traceback=True, batch_pairs=nt,
                                   traceback_memory=tb_memory)
                report("trace-back+text", nt, _time(lambda: list(full.iter_pairs(s, s, qi[tb], ti[tb])), args.repeat))
            if "lazy" in kinds:
                lazy = PairAligner(mode=mode, device=backend, min_identity=0.97, batch_pairs=nt,
                                   traceback_memory=tb_memory)
                kept = []
                t = _time(lambda: kept.append(sum(len(r) for r in lazy.iter_pairs(s, s, qi[tb], ti[tb]))), args.repeat)
                report(f"lazy(0.97, kept {kept[-1]})", nt, t)
            if args.stages:
                times, total = _stages(backend, trace)
                print(f"{head}\tstages of trace-back ({nt} pairs, {total:.3f} s, tb_memory {tb_memory >> 20} MiB): "
                      + "  ".join(f"{k} {v:.4f}" for k, v in times.items()), flush=True)
                res = traceback_pairs(backend, codes, q_off[tb], q_len[tb], t_off[tb], t_len[tb], aligner.scoring,
                                      flags, tb_memory, ws)
                t0 = time.perf_counter()
                cigar_strings(res["cigar"], res["cigar_offsets"])
                print(f"{head}\tCIGAR text of {nt} pairs: {time.perf_counter() - t0:.4f} s", flush=True)
            if args.verify:
                _verify(backend, aligner, s, codes, q_off, q_len, t_off, t_len, flags, min(args.verify, len(qi)))
            _parasail(seqs, qi, ti, mode, args.parasail_pairs, length)


def _verify(backend, aligner, s, codes, q_off, q_len, t_off, t_len, flags, n):
    v = slice(0, n)
    cpu = PairAligner(device="cpu").backend
    sc = aligner.scoring
    a = traceback_pairs(backend, codes, q_off[v], q_len[v], t_off[v], t_len[v], sc, flags)
    b = traceback_pairs(cpu, s.codes, q_off[v], q_len[v], t_off[v], t_len[v], sc, flags)
    same = a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    c = score_pairs(backend, codes, q_off[v], q_len[v], t_off[v], t_len[v], sc, flags)
    d = score_pairs(cpu, s.codes, q_off[v], q_len[v], t_off[v], t_len[v], sc, flags)
    same_score = all(np.array_equal(c[k], d[k]) for k in c)
    rng = np.random.default_rng(7)
    qp = (rng.random(n) * q_len[v]).astype(np.int32)
    tp = np.minimum(qp, t_len[v] - 1).astype(np.int32)
    x = xdrop_gapped(backend, codes, q_off[v], q_len[v], t_off[v], t_len[v], qp, tp, sc, 30)
    y = xdrop_gapped(cpu, s.codes, q_off[v], q_len[v], t_off[v], t_len[v], qp, tp, sc, 30)
    same_x = all(np.array_equal(x[k], y[k]) for k in x)
    words = {True: "identical", False: "DIFFERENT"}
    print(f"verify {n} pairs vs CPU: score {words[same_score]}, trace-back {words[same]}, "
          f"gapped X-drop {words[same_x]}", flush=True)


def _parasail(seqs, qi, ti, mode, n, length):
    if n <= 0:
        return
    try:
        import parasail
    except ImportError:
        return
    matrix = parasail.matrix_create("ACGT", 2, -3)
    name = {"global": "nw", "local": "sw", "semiglobal": "sg"}[mode]
    n = min(n, len(qi))
    pairs = [(seqs[a], seqs[b]) for a, b in zip(qi[:n], ti[:n])]
    cells = sum(len(a) * len(b) for a, b in pairs)
    for label, fn in ((f"{name}_striped_16", getattr(parasail, f"{name}_striped_16")),
                      (f"{name}_trace_striped_16", getattr(parasail, f"{name}_trace_striped_16"))):
        t0 = time.perf_counter()
        for a, b in pairs:
            fn(a, b, 7, 2, matrix)
        t = time.perf_counter() - t0
        print(f"parasail 1 thread\tlen={length}\t{mode}\t{label}\tpairs={n}\t{cells / t / 1e9:.2f} GCUPS", flush=True)


if __name__ == "__main__":
    main()

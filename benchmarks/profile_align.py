"""GCUPS of gseek's batched DP (score-only and trace-back) by length and mode,
with parasail on the same pairs and a GPU == CPU check on a subset.

    python benchmarks/profile_align.py --device gpu --lengths 100,1500 --pairs 200000 \
        --modes global,local --parasail-pairs 2000 --verify 500

All-vs-all of ``dp_families`` sequences (16S-like, DNA, match 2 / mismatch -3
/ gap 5+2k). GCUPS = sum(m * n) / seconds / 1e9; a warm-up batch is run
first (NVRTC compile / Numba load are not timed).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gseek.align import PairAligner, _encode_set, _flags, score_pairs, traceback_pairs
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--lengths", default="100,1500")
    ap.add_argument("--modes", default="global,local")
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--tb-pairs", type=int, default=None, help="pairs for trace-back [--pairs]")
    ap.add_argument("--parasail-pairs", type=int, default=500)
    ap.add_argument("--verify", type=int, default=0, help="check this many pairs against the CPU backend")
    ap.add_argument("--tb-memory", type=int, default=4 << 30, help="trace-back bytes per batch")
    args = ap.parse_args()
    for length in [int(x) for x in args.lengths.split(",")]:
        seqs, qi, ti = _pairs(args.pairs, length)
        for mode in args.modes.split(","):
            aligner = PairAligner(mode=mode, device=args.device, threads=args.threads)
            backend = aligner.backend
            s = _encode_set(seqs, aligner.scoring, "s")
            codes = backend.asarray(s.codes)
            flags = _flags(mode, ("query_start", "query_end", "target_start", "target_end"))
            q_off, q_len, t_off, t_len = s.offsets[qi], s.lengths[qi], s.offsets[ti], s.lengths[ti]
            cells = float((q_len.astype(np.float64) * t_len).sum())

            def score():
                score_pairs(backend, codes, q_off, q_len, t_off, t_len, aligner.scoring, flags)
                backend.synchronize()

            t = _time(score)
            print(f"{backend.describe()}\tlen={length}\t{mode}\tscore-only\tpairs={len(qi)}\t"
                  f"{cells / t / 1e9:.2f} GCUPS\t{t:.3f} s", flush=True)
            nt = args.tb_pairs or len(qi)
            tcells = float((q_len[:nt].astype(np.float64) * t_len[:nt]).sum())

            def trace():
                traceback_pairs(backend, codes, q_off[:nt], q_len[:nt], t_off[:nt], t_len[:nt], aligner.scoring,
                                flags, args.tb_memory)
                backend.synchronize()

            t = _time(trace)
            print(f"{backend.describe()}\tlen={length}\t{mode}\ttrace-back\tpairs={nt}\t"
                  f"{tcells / t / 1e9:.2f} GCUPS\t{t:.3f} s", flush=True)
            if args.verify:
                v = slice(0, args.verify)
                cpu = PairAligner(mode=mode, device="cpu").backend
                a = traceback_pairs(backend, codes, q_off[v], q_len[v], t_off[v], t_len[v], aligner.scoring, flags)
                b = traceback_pairs(cpu, s.codes, q_off[v], q_len[v], t_off[v], t_len[v], aligner.scoring, flags)
                same = all(np.array_equal(a[k], b[k]) for k in a if k != "cigar") and all(
                    np.array_equal(x, y) for x, y in zip(a["cigar"], b["cigar"]))
                print(f"verify {args.verify} pairs vs CPU: {'identical' if same else 'DIFFERENT'}", flush=True)
            _parasail(seqs, qi, ti, mode, args.parasail_pairs, length)


def _parasail(seqs, qi, ti, mode, n, length):
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

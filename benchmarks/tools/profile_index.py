#!/usr/bin/env python3
"""Where the time of a batched GPU count goes: validation, upload, kernel, download.

    python benchmarks/tools/profile_index.py REFERENCE.fa[.gz] [--patterns N] [--length L]

Builds the index in-process, samples N patterns from the reference (as
``run.py index`` does), then times each stage of ``Index.count`` separately,
the kernel with CUDA events (median of 5). Prints one table; used to decide
what to optimise, not a result for RESULTS.md by itself.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("fasta")
    ap.add_argument("--patterns", type=int, default=10_000_000)
    ap.add_argument("--length", type=int, default=25)
    args = ap.parse_args()

    import cupy

    sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository: benchmarks.suite
    from benchmarks.suite.index import _sample_patterns

    from gseek.index import Index
    from gseek.index.search import backward_search, pattern_arrays

    t = time.perf_counter()
    idx = Index.build(args.fasta, device="gpu")
    fm = idx.device_arrays()
    print(f"build + upload {time.perf_counter() - t:.1f} s", file=sys.stderr)
    codes, offsets = _sample_patterns(args.fasta, args.patterns, args.length, seed=1)
    n = args.patterns

    def host(fn, repeat=5):
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            out = fn()
            cupy.cuda.Device().synchronize()
            times.append(time.perf_counter() - t0)
        return statistics.median(times), out

    def device(fn, repeat=5):
        times = []
        for _ in range(repeat):
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            out = fn()
            stop.record()
            stop.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
        return statistics.median(times), out

    rows = []
    t_val, _ = host(lambda: pattern_arrays((codes, offsets)))
    rows.append(("validate patterns on host", t_val))
    t_dev, _ = host(lambda: pattern_arrays((codes, offsets), idx.backend))
    rows.append(("upload + validate on device", t_dev))
    t_up, (d_codes, d_off) = host(lambda: (cupy.asarray(codes), cupy.asarray(offsets)))
    rows.append((f"upload {codes.nbytes + offsets.nbytes:,} B", t_up))
    backward_search(idx.backend, fm, d_codes, d_off)  # warm
    t_kernel, (lo, hi) = device(lambda: backward_search(idx.backend, fm, d_codes, d_off))
    rows.append(("backward_search kernel", t_kernel))
    t_down, counts = host(lambda: cupy.asnumpy(hi - lo))
    rows.append(("difference + download", t_down))
    t_total, total = host(lambda: idx.count((codes, offsets)))
    rows.append(("Index.count end to end", t_total))
    assert np.array_equal(total, counts)
    for name, seconds in rows:
        print(f"{name:<28} {seconds * 1e3:9.1f} ms   {n / seconds / 1e6:9.1f} M patterns/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

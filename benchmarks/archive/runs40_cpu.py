#!/usr/bin/env python3
"""The CPU backend's share of the lazy CIGAR runs (branch runs40), in process: the trace-back's runs moved the
old way (every step gathers them: the launches merged, the re-scoring's drops, the report's rows) against
``LazyRuns`` (indices moved, one gather when an output reads the runs, none when it does not), alternated.

    python benchmarks/archive/runs40_cpu.py [--alignments 183000] [--runs 120] [--pieces 6] [--repeat 7]

Synthetic runs of the 1 Gbp set's shape (183k alignments; ``--runs`` the mean runs an alignment), cut into
``--pieces`` launches taken in a permuted order, 97 % kept by the re-scoring, then the purge and the report's
order (a random 97 % in a random order). Prints the medians and ranges (ms) and checks the same arrays.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from gseek import ragged
from gseek.dp.runs import LazyRuns, gather_runs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--alignments", type=int, default=183_000)
    ap.add_argument("--runs", type=int, default=120)
    ap.add_argument("--pieces", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    n = args.alignments
    order = rng.permutation(n)  # the launches' order (longest first)
    picks = np.array_split(order, args.pieces)
    parts = []
    for p in picks:
        sizes = rng.integers(1, 2 * args.runs, p.size)
        offs = ragged.offsets(sizes)
        parts.append((rng.integers(0, 1 << 30, int(offs[-1])).astype(np.uint32), offs))
    back = np.empty(n, np.int64)
    back[order] = np.arange(n)
    kept = np.flatnonzero(rng.random(n) < 0.97)
    rows = rng.permutation(np.flatnonzero(rng.random(kept.size) < 0.97))

    def old():
        data, offs = ragged.concat(parts)  # _merge_extensions
        data, offs = gather_runs(data, offs, back)
        data, offs = gather_runs(data, offs, kept)  # _gapped: the re-scoring's drops
        return gather_runs(data, offs, rows)  # _report: the purge's and the order's rows

    def new(read: bool):
        runs = LazyRuns.concat([LazyRuns.of(d, o) for d, o in parts]).take(back).take(kept).take(rows)
        return runs.gather() if read else runs

    want = old()
    got = new(True)
    assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1])
    times = {"old (every step gathers)": [], "lazy, not read (-outfmt 6)": [], "lazy, read once (SAM, btop)": []}
    for _ in range(args.repeat):
        for name, fn in zip(times, (old, lambda: new(False), lambda: new(True))):
            t = time.perf_counter()
            fn()
            times[name].append(1000 * (time.perf_counter() - t))
    print(f"{n:,} alignments, {int(want[0].size):,} runs of the reported rows, {args.pieces} pieces; ms, median (range) "
          f"of {args.repeat}:")
    for name, v in times.items():
        print(f"  {name}: {statistics.median(v):.1f} ({min(v):.1f}-{max(v):.1f})")


if __name__ == "__main__":
    main()

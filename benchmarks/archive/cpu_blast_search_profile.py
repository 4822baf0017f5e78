#!/usr/bin/env python3
"""One CPU BLAST search stage, profiled in process (issue 40, the CPU item): a fresh process's first search
and the warm ones after it, each stage's seconds (``BlastSearcher.timings``) and, with ``--profile``, the
passes under cProfile (the search runs in this thread, so every pass is seen).

    python benchmarks/archive/cpu_blast_search_profile.py --index db.gseek --queries q600.fa \\
        --task megablast --threads 2 --searches 5 [--profile warm|first] [--top 40]

Prints the imports' seconds, the searcher's build, the queries' parse, the first search (Numba's loads of
what it calls) and each warm search with its stages; ``--profile``: cProfile's cumulative table of the
first search or of the warm ones (all of them together).
"""

from __future__ import annotations

import sys
import time

T0 = time.perf_counter()
sys.modules.setdefault("scipy.linalg.cython_blas", None)  # as the command's own process (gseek.cli.process)


def main() -> int:
    import argparse
    import os

    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--task", default="megablast")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--searches", type=int, default=5)
    ap.add_argument("--profile", choices=["warm", "first"], default=None)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--sort", default="cumulative")
    args = ap.parse_args()
    import cProfile
    import pstats

    t = time.perf_counter()
    import numpy  # noqa: F401
    t1 = time.perf_counter()
    import numba  # noqa: F401
    t2 = time.perf_counter()
    from gseek.blast.searcher import BlastSearcher
    from gseek.seqio import read_fastx
    t3 = time.perf_counter()
    print(f"numpy {t1 - t:.3f}  numba {t2 - t1:.3f}  gseek.blast.searcher {t3 - t2:.3f}")
    s = BlastSearcher(args.index, task=args.task, device="cpu", threads=args.threads)
    t4 = time.perf_counter()
    batch = read_fastx(args.queries)
    t5 = time.perf_counter()
    print(f"searcher {t4 - t3:.3f}  parse {t5 - t4:.3f}")
    prof = cProfile.Profile()

    def one(profiled: bool) -> str:
        before = dict(s.timings)
        w, c = time.perf_counter(), time.process_time()
        if profiled:
            prof.enable()
        s.search(batch)
        if profiled:
            prof.disable()
        line = f"search {time.perf_counter() - w:.3f} cpu {time.process_time() - c:.3f}: "
        return line + ", ".join(f"{k} {v - before.get(k, 0):.3f}" for k, v in s.timings.items())

    print("first", one(args.profile == "first"))
    for _ in range(args.searches):
        print("warm ", one(args.profile == "warm"))
    if args.profile:
        pstats.Stats(prof).sort_stats(args.sort).print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())

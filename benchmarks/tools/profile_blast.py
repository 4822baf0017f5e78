#!/usr/bin/env python3
"""Where the time of the BLAST-style search's gapped rounds goes: host passes against launches.

    python benchmarks/tools/profile_blast.py DB.fa[.gz] QUERIES.fa|500bp|10kb|mixed [--task blastn] [--device gpu|cpu]
        [--repeat N]

Builds a text-only index of DB, runs one untimed search (compiles), then a timed one with every
gapped-extension call and every host pass of the rounds wrapped: per round, the seeds extended,
the seconds in ``_select_round`` (which seeds go this round), in ``_inside`` (which wait no more),
in ``xdrop_gapped`` (device work, synchronised) and in the rest of ``_extend_chunk`` (windows,
uploads, redo); then the search's stage timings (``GSEEK_BLAST_TIMING``) and a cProfile of the
search's top functions; ``--repeat N`` times N more whole searches first (stage timings, rows
compared with the first search's). A query set name simulates the ``blast`` benchmark's set from DB. Used to decide what to optimise; not a result for RESULTS.md by itself.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("queries")
    ap.add_argument("--task", default="blastn")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--repeat", type=int, default=0, help="whole searches timed before the profiled one")
    args = ap.parse_args()
    os.environ["GSEEK_BLAST_TIMING"] = "1"

    import numpy as np

    import gseek.blast.gapped as G
    import gseek.dp.xdrop as X  # (gapped imports xdrop_gapped where the X-drop pass runs)
    import gseek.blast.rounds as R
    import gseek.blast.searcher as S
    from gseek.index import Index
    from gseek.seqio import read_fastx

    work = Path(tempfile.mkdtemp(prefix="gseek-profile-blast-"))
    index = Index.build(args.db, parts="text", device="cpu").save(work / "db.gseek")
    searcher = S.BlastSearcher(index, task=args.task, device=args.device)
    queries = args.queries
    if not Path(queries).exists():
        sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository: benchmarks.suite
        from benchmarks.suite.blast import blast_set

        queries = str(work / f"{args.queries.replace('@', '-')}.fa")
        blast_set(args.db, args.queries).write(queries)
    batch = read_fastx(queries)
    t = time.perf_counter()
    first = searcher.search(batch)  # compiles
    print(f"first search (compiles): {time.perf_counter() - t:.2f} s")
    for k in range(args.repeat):
        searcher.timings.clear()
        t = time.perf_counter()
        hits = searcher.search(batch)
        same = [hits.row(h) for h in range(len(hits))] == [first.row(h) for h in range(len(first))]
        print(f"search {k + 1}: {time.perf_counter() - t:.2f} s, {len(hits)} HSPs, same rows: {same}; "
              + ", ".join(f"{k} {v:.3f}" for k, v in searcher.timings.items()))
    searcher.timings.clear()
    before = dict(searcher.counts)

    spent: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    rounds: list[tuple[int, float]] = []

    def timed(name, fn, sync=False):
        def run(*a, **k):
            t = time.perf_counter()
            out = fn(*a, **k)
            if sync:
                searcher.backend.synchronize()
            spent[name] += time.perf_counter() - t
            calls[name] += 1
            if name == "_select_round":
                rounds.append((int(out.sum()), time.perf_counter() - t))
            return out
        return run

    G._select_round = timed("_select_round", G._select_round)
    R._inside = timed("_inside", R._inside)
    X.xdrop_gapped = timed("xdrop_gapped", X.xdrop_gapped, sync=True)
    launches: list[tuple[int, float]] = []
    xdrop = X.xdrop_gapped

    def per_launch(backend, codes, *a, **k):
        t = time.perf_counter()
        out = xdrop(backend, codes, *a, **k)
        launches.append((len(a[1]), time.perf_counter() - t, "tb" if k.get("traceback") else "so",
                         int(np.asarray(a[3]).sum())))
        return out

    X.xdrop_gapped = per_launch
    chunk = S.BlastSearcher._extend_chunk
    S.BlastSearcher._extend_chunk = timed("_extend_chunk (all)", chunk)

    prof = cProfile.Profile()
    started = time.perf_counter()
    prof.enable()
    hits = searcher.search(batch)
    prof.disable()
    total = time.perf_counter() - started
    print(f"{args.task} on {searcher.backend.describe()}: {len(batch)} queries, {len(hits)} HSPs, {total:.2f} s")
    for name in spent:
        print(f"  {name:<22} {calls[name]:>5} calls {spent[name]:8.3f} s")
    print(f"  rounds: {len(rounds)}; seeds taken per round: {[n for n, _ in rounds][:40]}")
    print("  launches (seeds, s, tb = with trace-back / so = score only, window bases): "
          + ", ".join(f"({n}, {t:.3f}, {b}, {w:,})" for n, t, b, w in launches[:80]))
    for side in ("so", "tb"):
        mine = [(n, t, w) for n, t, b, w in launches if b == side]
        print(f"  {side}: {len(mine)} launches, {sum(n for n, _, _ in mine):,} seeds, "
              f"{sum(t for _, t, _ in mine):.3f} s, {sum(w for _, _, w in mine):,} window bases")
    print("  counts: " + ", ".join(f"{k} {v - before.get(k, 0):,}" for k, v in searcher.counts.items()))
    print("  stages: " + ", ".join(f"{k} {v:.3f} s" for k, v in searcher.timings.items()))
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(15)
    print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())

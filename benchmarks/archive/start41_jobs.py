"""Issue 40, branch start41: one query file through a GPU BlastTask built once (as `gseek search` runs it), cut
into 1, 2 or 4 jobs (`BlastTask.job_parts`; main cuts a file of less than a job a searcher into one a searcher,
4 on one GPU), in one process: the first pass (first uses), then ROUNDS passes of each cut, alternating. Prints a
JSON line per pass (cut, seconds, SHA-256 of the output) and a summary (median, range per cut).

usage: python3 -P benchmarks/archive/start41_jobs.py INDEX QUERIES TASK [--rounds 3] [--threads 16] [--first 1]
       [--device gpu] [--out DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("index")
    ap.add_argument("queries")
    ap.add_argument("task")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--first", type=int, default=1, help="the cut of the first pass")
    ap.add_argument("--cuts", default="1,2,4")
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--out", default="/tmp/start41_jobs")
    args = ap.parse_args()
    from gseek.pipeline.engine import QueryFile
    from gseek.pipeline.front import run_one
    from gseek.pipeline.tasks.blast import BlastTask

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    task = BlastTask(args.index, args.task, device=args.device, threads=args.threads)
    built = time.perf_counter() - t
    print(json.dumps(dict(task=args.task, searchers=len(task.searchers), job_parts=task.job_parts,
                          built_s=round(built, 3))), flush=True)
    times: dict[int, list[float]] = {}
    digests = set()

    def one(cut: int, tag: str) -> None:
        task.job_parts = cut
        path = out / f"{args.task}-{cut}-{tag}.tsv"
        t = time.perf_counter()
        run_one(task, QueryFile((args.queries,), str(path)), workers=2)
        s = time.perf_counter() - t
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        digests.add(digest)
        if tag != "first":
            times.setdefault(cut, []).append(s)
        print(json.dumps(dict(task=args.task, cut=cut, pass_=tag, s=round(s, 4), sha=digest[:16])), flush=True)

    cuts = [int(c) for c in args.cuts.split(",")]
    one(args.first, "first")
    for r in range(args.rounds):
        order = cuts[r % len(cuts):] + cuts[:r % len(cuts)]
        for cut in order:
            one(cut, str(r + 1))
    for cut in cuts:
        v = times.get(cut, [])
        print(f"SUMMARY {args.task} {Path(args.queries).name} cut {cut}: median {statistics.median(v):.3f} s "
              f"({min(v):.3f}-{max(v):.3f}, n={len(v)}); outputs {'identical' if len(digests) == 1 else digests}",
              flush=True)


if __name__ == "__main__":
    sys.exit(main())

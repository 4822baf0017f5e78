#!/usr/bin/env python3
"""Two trees' whole CPU BLAST commands in A B / B A order round by round (issue 40, the CPU item), with blastn
timed first in each round: ``cpu_blast_ab.py`` runs its trees in a fixed order, which on a loaded host gave the
tree run second a bias of its own; here each tree runs first in half the rounds.

    python benchmarks/archive/cpu_blast_abba.py --tree A=SITE_A --tree B=SITE_B --task megablast --rounds 12 \\
        --index db.gseek --blastdb bdb --queries q600.fa

Wall and user + system CPU from ``wait4`` (``cpu_blast_ab.timed``); medians, paired B - A medians (min, max) and
each tree's wall over blastn's of the same round.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

from cpu_blast_ab import timed  # (run from anywhere: this script's folder is on sys.path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", required=True, help="NAME=SITE (two)")
    ap.add_argument("--task", default="megablast")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--index", required=True)
    ap.add_argument("--blastdb", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--threads", default="2")
    args = ap.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    (a, b) = trees
    res: dict[str, list[tuple[float, float]]] = {a: [], b: []}
    blastn = []
    for r in range(args.rounds):
        blastn.append(timed(["blastn", "-task", args.task, "-query", args.queries, "-db", args.blastdb, "-num_threads",
                             args.threads, "-outfmt", "6", "-out", "abba.blastn.tsv"], dict(os.environ))["wall"])
        for name in ((a, b) if r % 2 == 0 else (b, a)):
            env = dict(os.environ, PYTHONPATH=trees[name])
            got = timed([sys.executable, "-m", "gseek", "--quiet", "--device", "cpu", "-p", args.threads, "search",
                         "--task", args.task, "-x", args.index, "-q", args.queries, "-o", f"abba.{name}.tsv"], env)
            res[name].append((got["wall"], got["cpu"]))
    for name in (a, b):
        print(f"{name}: wall {statistics.median(w for w, _ in res[name]):.3f} s, "
              f"CPU {statistics.median(c for _, c in res[name]):.3f} s")
    for i, kind in enumerate(("wall", "CPU")):
        d = [y[i] - x[i] for x, y in zip(res[a], res[b])]
        print(f"{b} - {a} {kind}: {statistics.median(d):+.3f} ({min(d):+.3f} .. {max(d):+.3f})")
    print(f"blastn wall {statistics.median(blastn):.3f} ({min(blastn):.3f}-{max(blastn):.3f})")
    for name in (a, b):
        ratio = [w / x for (w, _), x in zip(res[name], blastn)]
        print(f"{name} / blastn wall, per round: {statistics.median(ratio):.2f} ({min(ratio):.2f}-{max(ratio):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

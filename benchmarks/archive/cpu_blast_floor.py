#!/usr/bin/env python3
"""What a CPU BLAST command cannot go below (issue 40, the CPU item): fresh processes that import NumPy, Numba,
gseek's BLAST modules and load one compiled function, beside blastn and the whole command, alternating.

    python benchmarks/archive/cpu_blast_floor.py --rounds 7 --index db.gseek --blastdb bdb --queries q600.fa

Wall, user + system CPU and peak RSS from ``wait4`` (``cpu_blast_ab.timed``); medians (min-max) of the rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

from cpu_blast_ab import spread, timed  # (run from anywhere: this script's folder is on sys.path)

NO_BLAS = "import sys; sys.modules['scipy.linalg.cython_blas'] = None; "
GSEEK = "import numpy, numba, gseek.cli, gseek.pipeline.tasks.blast, gseek.blast.searcher, gseek.blast.database"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--index", required=True)
    ap.add_argument("--blastdb", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--task", default="megablast")
    ap.add_argument("--threads", default="2")
    args = ap.parse_args()
    py = sys.executable
    cmds = {
        f"blastn {args.task}": ["blastn", "-task", args.task, "-query", args.queries, "-db", args.blastdb,
                                "-num_threads", args.threads, "-outfmt", "6", "-out", "floor.blastn.tsv"],
        "python -c pass": [py, "-c", "pass"],
        "import numpy": [py, "-c", "import numpy"],
        "import numpy, numba (no SciPy BLAS)": [py, "-c", NO_BLAS + "import numpy, numba"],
        "... + gseek.cli, the BLAST task, searcher": [py, "-c", NO_BLAS + GSEEK],
        "... + a first Numba load (parse a FASTA)": [py, "-c", NO_BLAS + GSEEK + "; from gseek.seqio import read_fastx; "
                                                     f"read_fastx({args.queries!r})"],
        f"gseek {args.task} whole command": [py, "-m", "gseek", "--quiet", "--device", "cpu", "-p", args.threads,
                                             "search", "--task", args.task, "-x", args.index, "-q", args.queries,
                                             "-o", "floor.gseek.tsv"],
    }
    rec = {k: {"wall": [], "cpu": [], "rss_mib": []} for k in cmds}
    for _ in range(args.rounds):
        for name, cmd in cmds.items():
            got = timed(cmd, dict(os.environ))
            for k, v in rec[name].items():
                v.append(got[k])
    print("| run | wall s | CPU s | peak RSS MiB |\n|---|--:|--:|--:|")
    for name, v in rec.items():
        print(f"| {name} | {spread(v['wall'])} | {spread(v['cpu'])} | {statistics.median(v['rss_mib']):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

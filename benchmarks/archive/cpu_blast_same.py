#!/usr/bin/env python3
"""Two trees' CPU BLAST commands give the same bytes (issue 40's start-up work): every query set, task,
thread count and output format given, each tree's ``gseek --device cpu -p T search --task K -x DB -q Q
--outfmt F`` in a fresh process, the outputs compared byte for byte.

    python benchmarks/archive/cpu_blast_same.py --tree A=SITE_A --tree B= --set db.gseek:q600.fa \\
        --set ecoli.gseek:qmixed60.fa --tasks megablast,blastn --threads 1,2 --outfmts '6;7 std btop;5;15;0;sam'

``--tree NAME=SITE``: as ``cpu_blast_ab.py`` (a ``pip install --target`` folder first on ``PYTHONPATH``, or empty
for the installed tree). Prints one line a case and exits 1 if any differ.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", required=True, help="NAME=SITE (empty SITE: the installed tree)")
    ap.add_argument("--set", action="append", required=True, help="INDEX:QUERIES")
    ap.add_argument("--tasks", default="megablast,blastn")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--outfmts", default="6", help="formats separated by ';'")
    ap.add_argument("--out", default="cpu_blast_same")
    args = ap.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    differ = 0
    for one in args.set:
        index, queries = one.split(":", 1)
        for task in args.tasks.split(","):
            for threads in args.threads.split(","):
                for outfmt in args.outfmts.split(";"):
                    digests = {}
                    for name, site in trees.items():
                        env = dict(os.environ, PYTHONPATH=site) if site else dict(os.environ)
                        out = f"{args.out}.out"  # one name for both: SAM's @PG line holds the command
                        cmd = [sys.executable, "-m", "gseek", "--quiet", "--device", "cpu", "-p", threads, "search",
                               "--task", task, "-x", index, "-q", queries, "--outfmt", outfmt, "-o", out]
                        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
                        if proc.returncode:
                            raise SystemExit(f"{name}: {' '.join(cmd)}: exit {proc.returncode}: {proc.stderr[-2000:]}")
                        data = open(out, "rb").read()
                        digests[name] = (hashlib.sha256(data).hexdigest()[:12], len(data))
                    same = len(set(digests.values())) == 1
                    differ += not same
                    print(f"{'same' if same else 'DIFFERENT'}\t{os.path.basename(index)}\t{os.path.basename(queries)}\t"
                          f"{task}\t-p {threads}\t{outfmt}\t{digests}", flush=True)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())

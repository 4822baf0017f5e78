#!/usr/bin/env python3
"""The CPU's X-drop trace-back alone (issue 40, the CPU item): the ``dp.xdrop_gapped_host`` calls of one BLAST
search captured, then replayed on one thread, alternately for each tree, their outputs compared.

    python benchmarks/archive/cpu_xdrop_replay.py --tree A=SITE_A --tree B= --index db.gseek --queries q600.fa \\
        --task blastn --rounds 5

``--tree NAME=SITE``: as ``cpu_blast_ab.py`` (a ``pip install --target`` folder first on ``PYTHONPATH``, or empty for
the installed tree). The first tree's search (one thread) gives the calls (``--calls FILE``, a pickle: about 0.5 GB
for the blastn task of 600 x 500 bp against 240 kb); each round replays them in a fresh process of each tree
(process time of the replay alone, its machine code loaded first), and prints each tree's median and whether every
score, end, count and CIGAR run equals the first tree's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

CAPTURE = r"""
import pickle, sys
import numpy as np
sys.modules.setdefault("scipy.linalg.cython_blas", None)
from gseek.blast.searcher import BlastSearcher
from gseek.kernels import dp
from gseek.seqio import read_fastx
index, queries, task, out = sys.argv[1:5]
calls, kernel = [], dp.xdrop_gapped_host
def record(*args):
    calls.append([np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args])
    return kernel(*args)
dp.xdrop_gapped_host = record
BlastSearcher(index, task=task, device="cpu", threads=1).search(read_fastx(queries))
pickle.dump(calls, open(out, "wb"))
print(len(calls))
"""

REPLAY = r"""
import hashlib, pickle, sys, time
import numpy as np
sys.modules.setdefault("scipy.linalg.cython_blas", None)
from gseek.kernels import dp
calls = pickle.load(open(sys.argv[1], "rb"))
def run():
    digest = hashlib.sha256()
    for call in calls:
        call = list(call)
        call[-2], call[-1] = call[-2].copy(), call[-1].copy()
        cigar = dp.xdrop_gapped_host(*call)
        lo, hi = int(call[7]), int(call[8])
        for part in (cigar, call[-2][:, lo:hi], call[-1][lo:hi]):
            digest.update(np.ascontiguousarray(part).tobytes())
    return digest.hexdigest()[:16]
run()  # the machine code loaded (or compiled)
t = time.process_time()
digest = run()
print(time.process_time() - t, digest)
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", required=True, help="NAME=SITE (empty SITE: the installed tree)")
    ap.add_argument("--index", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--task", default="blastn")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", default="xdrop_calls.pkl")
    args = ap.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)

    def env(site: str) -> dict:
        e = dict(os.environ)
        e.pop("PYTHONPATH", None)
        return dict(e, PYTHONPATH=site) if site else e

    first = next(iter(trees.values()))
    got = subprocess.run([sys.executable, "-c", CAPTURE, args.index, args.queries, args.task, args.calls],
                         env=env(first), capture_output=True, text=True, check=True)
    print(f"{got.stdout.strip()} calls captured", flush=True)
    times: dict[str, list[float]] = {name: [] for name in trees}
    digests: dict[str, set[str]] = {name: set() for name in trees}
    for r in range(args.rounds):
        for name, site in trees.items():
            out = subprocess.run([sys.executable, "-c", REPLAY, args.calls], env=env(site), capture_output=True,
                                 text=True, check=True).stdout.split()
            times[name].append(float(out[0]))
            digests[name].add(out[1])
        print(f"round {r + 1}: " + ", ".join(f"{n} {v[-1]:.3f}" for n, v in times.items()), flush=True)
    ref = digests[next(iter(trees))]
    for name, v in times.items():
        print(f"{name}: median {statistics.median(v):.3f} s ({min(v):.3f}-{max(v):.3f}), outputs "
              f"{'the same' if digests[name] == ref and len(ref) == 1 else 'DIFFERENT'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

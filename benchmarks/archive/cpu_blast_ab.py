#!/usr/bin/env python3
"""CPU BLAST against blastn on the same cores (issue 40): whole commands and the in-process search stage,
trees A and B and blastn alternating, medians and spreads.

    python benchmarks/archive/cpu_blast_ab.py --tree A=SITE_A --tree B= --index db.gseek --blastdb bdb \\
        --queries q600.fa --tasks megablast,blastn --threads 2 --rounds 5

``--tree NAME=SITE``: a tree installed with ``pip install --target SITE`` (put first on ``PYTHONPATH``), or
empty for the installed one. Per round and task, in turn: ``blastn -task T -num_threads N`` (outfmt 6), each
tree's ``gseek --device cpu -p N search --task T`` (whole command, fresh process), and each tree's search
stage in process (:class:`gseek.BlastSearcher` built and warmed by one search, then ``--searches`` timed:
wall and CPU seconds, their median). Wall, user + system CPU and peak RSS from ``wait4``. Outputs of the
trees compared byte for byte; each tree's whole command over blastn's, round by round (median, range).
Python writes no bytecode where ``PYTHONDONTWRITEBYTECODE`` is set (this VM): every run here compiles gseek's
modules from source (a ``pip install`` compiles them once); ``--pycache DIR`` keeps them there instead.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

STAGE = r"""
import json, resource, sys, time
from gseek.blast.searcher import BlastSearcher
from gseek.seqio import read_fastx
index, queries, task, threads, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
s = BlastSearcher(index, task=task, device="cpu", threads=threads)
b = read_fastx(queries)
s.search(b)
walls, cpus = [], []
for _ in range(n):
    w, c = time.perf_counter(), time.process_time()
    s.search(b)
    walls.append(time.perf_counter() - w)
    cpus.append(time.process_time() - c)
print(json.dumps({"wall": walls, "cpu": cpus, "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def timed(cmd: list[str], env: dict) -> dict:
    """Run ``cmd``; wall seconds, user + system CPU seconds and peak RSS (MiB) of it and its children."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    out, err = proc.stdout.read(), proc.stderr.read()
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{cmd}: exit {status}: {err[-2000:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mib": usage.ru_maxrss / 1024, "stdout": out}


def spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", required=True, help="NAME=SITE (empty SITE: the installed tree)")
    ap.add_argument("--index", required=True)
    ap.add_argument("--blastdb", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--tasks", default="megablast,blastn")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--searches", type=int, default=3)
    ap.add_argument("--out", default="cpu_blast_ab")
    ap.add_argument("--pycache", default=None, help="PYTHONPYCACHEPREFIX (and bytecode written)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--warmup", type=int, default=1, help="untimed whole commands of each tree and task first")
    args = ap.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    base_env = dict(os.environ)
    if args.pycache:
        base_env.pop("PYTHONDONTWRITEBYTECODE", None)
        base_env["PYTHONPYCACHEPREFIX"] = args.pycache
    T = str(args.threads)
    rec: dict = {}
    for _ in range(args.warmup):  # Numba's caches filled, files in the page cache
        for task in args.tasks.split(","):
            for name, site in trees.items():
                env = dict(base_env, PYTHONPATH=site) if site else dict(base_env)
                timed([sys.executable, "-m", "gseek", "--quiet", "--device", "cpu", "-p", T, "search", "--task", task,
                       "-x", args.index, "-q", args.queries, "-o", f"{args.out}.{task}.{name}.tsv"], env)
    for r in range(args.rounds):
        for task in args.tasks.split(","):
            runs = [("blastn", "whole", ["blastn", "-task", task, "-query", args.queries, "-db", args.blastdb,
                                         "-num_threads", T, "-outfmt", "6", "-out", f"{args.out}.{task}.blastn.tsv"],
                     base_env)]
            for name, site in trees.items():
                env = dict(base_env, PYTHONPATH=site) if site else dict(base_env)
                runs.append((name, "whole", [sys.executable, "-m", "gseek", "--quiet", "--device", "cpu", "-p", T,
                                             "search", "--task", task, "-x", args.index, "-q", args.queries,
                                             "-o", f"{args.out}.{task}.{name}.tsv"], env))
                runs.append((name, "stage", [sys.executable, "-c", STAGE, args.index, args.queries, task, T,
                                             str(args.searches)], env))
            for name, kind, cmd, env in runs:
                got = timed(cmd, env)
                row = rec.setdefault(f"{task}|{name}|{kind}", {"wall": [], "cpu": [], "rss_mib": []})
                if kind == "stage":
                    stage = json.loads(got["stdout"])
                    row["wall"].append(statistics.median(stage["wall"]))
                    row["cpu"].append(statistics.median(stage["cpu"]))
                    row["rss_mib"].append(stage["rss_mib"])
                else:
                    for k in ("wall", "cpu", "rss_mib"):
                        row[k].append(got[k])
            print(f"round {r + 1} {task}: " + ", ".join(f"{k.split('|', 1)[1]} {v['wall'][-1]:.2f}"
                                                        for k, v in rec.items() if k.startswith(task)),
                  file=sys.stderr, flush=True)
    for task in args.tasks.split(","):
        outs = {name: open(f"{args.out}.{task}.{name}.tsv", "rb").read() for name in trees}
        same = len(set(outs.values())) == 1
        print(f"\n{task}: outputs of {', '.join(trees)} {'identical' if same else 'DIFFERENT'}")
        print("| run | wall s | CPU s (user + sys) | peak RSS MiB |\n|---|--:|--:|--:|")
        for key, v in rec.items():
            t, name, kind = key.split("|")
            if t == task:
                label = "blastn" if name == "blastn" else f"gseek {name} {'whole command' if kind == 'whole' else 'search stage in process'}"
                print(f"| {label} | {spread(v['wall'])} | {spread(v['cpu'])} | {spread(v['rss_mib'])} |")
        blastn = rec[f"{task}|blastn|whole"]
        for name in trees:  # each round's own ratio: the load moves both sides of it together
            whole = rec[f"{task}|{name}|whole"]
            ratios = {k: [g / b for g, b in zip(whole[k], blastn[k])] for k in ("wall", "cpu")}
            print(f"gseek {name} whole command / blastn, per round: wall {spread(ratios['wall'])}, "
                  f"CPU {spread(ratios['cpu'])}")
    if args.json:
        json.dump(rec, open(args.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

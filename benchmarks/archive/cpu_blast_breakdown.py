#!/usr/bin/env python3
"""Where one CPU BLAST command's time goes (issue 40, the CPU item): a fresh process's timeline.

    python benchmarks/archive/cpu_blast_breakdown.py [--runs 5] [--profile FILE] -- \\
        --quiet --device cpu -p 2 search --task megablast -x db.gseek -q q600.fa -o out.tsv

Each run is a fresh ``python -c`` process that runs the command in process, as ``python -m gseek`` does
(SciPy's BLAS refused, ``OMP_WAIT_POLICY=passive``), timing: NumPy's import, Numba's, ``gseek.cli``'s,
the command (``main``), and inside it the searcher's stages (``BlastSearcher.timings``, its ``_Clock`` laps)
the lookup table's build (``BlastSearcher.prepare``) and Numba's loads of cached machine code (their seconds and
number). The interpreter's own start is ``python -c pass``
timed beside it. Prints each run's line and the medians. ``--profile FILE``: one more run under cProfile
(``FILE``: its stats, for ``pstats``). ``BREAKDOWN_LOADS=1``: each Numba load of cached code (when, how long,
which thread, which function) on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CHILD = r"""
import json, os, sys, time
T0 = time.perf_counter()
prof = None
if os.environ.get("BREAKDOWN_PROFILE"):
    import cProfile
    prof = cProfile.Profile()
    prof.enable()
sys.modules.setdefault("scipy.linalg.cython_blas", None)
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
import numpy
T1 = time.perf_counter()
import numba
T2 = time.perf_counter()
import threading
from gseek.kernels import _jit
loads = []
_load = _jit._PrebuiltCache.load_overload
def load_overload(self, sig, ctx):
    t = time.perf_counter()
    r = _load(self, sig, ctx)
    loads.append((self._name, time.perf_counter() - t, t - T0, threading.current_thread().name))
    return r
_jit._PrebuiltCache.load_overload = load_overload
from gseek.cli import main
T3 = time.perf_counter()
from gseek.blast import searcher as _s
seen = {}
_search, _prepare = _s.BlastSearcher.search, _s.BlastSearcher.prepare
def search(self, q):
    t = time.perf_counter()
    r = _search(self, q)
    seen["search"] = seen.get("search", 0.0) + time.perf_counter() - t
    seen.update({"stage " + k: v for k, v in self.timings.items()})
    return r
def prepare(self, q):
    t = time.perf_counter()
    r = _prepare(self, q)
    seen["prepare"] = seen.get("prepare", 0.0) + time.perf_counter() - t
    return r
_s.BlastSearcher.search, _s.BlastSearcher.prepare = search, prepare
try:
    main(sys.argv[1:])
except SystemExit:
    pass
T4 = time.perf_counter()
if prof is not None:
    prof.disable()
    prof.dump_stats(os.environ["BREAKDOWN_PROFILE"])
if os.environ.get("BREAKDOWN_LOADS"):
    for name, took, at, thread in loads:
        print(f"  load at {at:6.3f} s took {took:6.3f} s  {thread[:20]:20} {name}", file=sys.stderr)
seen.update({"Numba loads": sum(x[1] for x in loads), "Numba loads, count": len(loads)})
seen.update({"numpy": T1 - T0, "numba": T2 - T1, "gseek.cli": T3 - T2, "main": T4 - T3, "in process": T4 - T0,
             "modules": len([m for m in sys.modules if m.startswith("gseek")])})
print("BREAKDOWN " + json.dumps(seen), file=sys.stderr)
"""


def run(argv: list[str], env: dict) -> dict:
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, *argv], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    err = proc.stderr.read()
    if env.get("BREAKDOWN_LOADS"):
        print("\n".join(x for x in err.splitlines() if x.startswith("  load ")), flush=True)
    line = [x for x in err.splitlines() if x.startswith("BREAKDOWN ")]
    if os.waitstatus_to_exitcode(status) or not line:
        raise SystemExit(f"exit {status}: {err[-2000:]}")
    got = json.loads(line[-1][len("BREAKDOWN "):])
    got.update({"whole": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mib": usage.ru_maxrss / 1024})
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--profile", default=None)
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    env = dict(os.environ)
    rows = []
    for _ in range(args.runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        bare = time.perf_counter() - t
        got = run(argv, env)
        got["python -c pass"] = bare
        rows.append(got)
        print(" ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in got.items()), flush=True)
    keys = [k for k in rows[0] if all(k in r for r in rows)]
    print("\nmedian (min-max) of", len(rows), "runs")
    for k in keys:
        xs = [r[k] for r in rows]
        print(f"  {k:<58} {statistics.median(xs):7.3f} ({min(xs):.3f}-{max(xs):.3f})")
    if args.profile:
        run(argv, dict(env, BREAKDOWN_PROFILE=args.profile))
        print(f"profile: {args.profile}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

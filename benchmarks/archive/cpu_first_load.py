#!/usr/bin/env python3
"""What a CPU command's first load of cached Numba code does once a process (issue 40, the CPU item): fresh
processes timing, in order, ``import numpy``, ``import numba``, Numba's CPU target, its runtime's
initialisation (``rtsys.initialize``: the C functions registered and the runtime's LLVM module compiled),
``import numpy.ma`` (what Numba's typing of an array imports), Numba's extension entry points
(``entrypoints.init_all``), and ``--decorate N`` functions decorated by ``gseek.kernels._jit.njit(cache=True)``
and by ``numba.njit`` without a cache (the cost of a function's cache object: its locator writes a file to
test its folder).

    python benchmarks/archive/cpu_first_load.py --rounds 5

Medians (min-max) of the rounds, milliseconds of wall time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, time
t = [time.perf_counter()]
import numpy
t.append(time.perf_counter())
import numba
t.append(time.perf_counter())
from numba.core.registry import cpu_target
ctx = cpu_target.target_context
t.append(time.perf_counter())
from numba.core.runtime import rtsys
rtsys.initialize(ctx)
t.append(time.perf_counter())
import numpy.ma
t.append(time.perf_counter())
from numba.core import entrypoints
entrypoints.init_all()
t.append(time.perf_counter())
sys.path.insert(0, sys.argv[1])
import gseek.kernels._jit
t.append(time.perf_counter())
import deco_cached
t.append(time.perf_counter())
import deco_plain
t.append(time.perf_counter())
names = ["import numpy", "import numba", "Numba's CPU target", "rtsys.initialize", "import numpy.ma",
         "entrypoints.init_all", "import gseek.kernels._jit", "decorated, gseek njit(cache=True)",
         "decorated, numba.njit (no cache)"]
print(json.dumps({n: (b - a) * 1e3 for n, a, b in zip(names, t, t[1:])}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--decorate", type=int, default=100)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name, head, opts in (("deco_cached", "from gseek.kernels._jit import njit", "cache=True, nogil=True"),
                                 ("deco_plain", "from numba import njit", "nogil=True")):
            body = [head] + [f"@njit({opts})\ndef f{i}(a, b):\n    return a + b + {i}\n" for i in range(args.decorate)]
            Path(tmp, f"{name}.py").write_text("\n".join(body))
        runs = [json.loads(subprocess.run([sys.executable, "-c", CHILD, tmp], capture_output=True, text=True,
                                          check=True).stdout) for _ in range(args.rounds)]
    print("| part | ms |\n|---|--:|")
    for name in runs[0]:
        xs = [r[name] for r in runs]
        print(f"| {name} | {statistics.median(xs):.1f} ({min(xs):.1f}-{max(xs):.1f}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

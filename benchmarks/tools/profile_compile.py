#!/usr/bin/env python3
"""What a gseek command compiles on a cold start, function by function, and the seconds each takes.

    python -P benchmarks/tools/profile_compile.py [--cache DIR] -- search -x IDX -q reads.fq -o out.sam

Runs the ``gseek`` command line in this process with Numba's compile events
recorded (``numba.core.event``: one ``numba:compile`` event per specialisation
compiled, its wall time including the functions it calls and inlines) and
CuPy's kernel loads timed. ``--cache`` sets ``NUMBA_CACHE_DIR`` (default: a
new empty folder, i.e. a cold start); run it twice with the same folder to see
the warm start. Prints one row per compiled specialisation, slowest first, the
total, and the time of the command itself. Only outermost compiles are
summed (a callee compiled inside its caller's compile is counted once, inside).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cache", help="NUMBA_CACHE_DIR (default: a new empty folder)")
    p.add_argument("--top", type=int, default=40, help="rows to print (default 40)")
    p.add_argument("argv", nargs=argparse.REMAINDER, help="the gseek command line, after --")
    args = p.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    os.environ["NUMBA_CACHE_DIR"] = args.cache or tempfile.mkdtemp(prefix="gseek-numba-cold-")
    t0 = time.perf_counter()
    from numba.core import event

    rows: list[tuple[float, str, bool]] = []
    depth = [0]

    class Compiles(event.Listener):
        def on_start(self, ev):
            if ev.kind == "numba:compile":
                depth[0] += 1
                ev.data["_t0"] = time.perf_counter()
                ev.data["_outer"] = depth[0] == 1

        def on_end(self, ev):
            if ev.kind == "numba:compile":
                depth[0] -= 1
                disp = ev.data.get("dispatcher")
                name = getattr(getattr(disp, "py_func", None), "__qualname__", str(disp))
                module = getattr(getattr(disp, "py_func", None), "__module__", "")
                sig = ev.data.get("args")
                rows.append((time.perf_counter() - ev.data["_t0"], f"{module}.{name}{tuple(sig) if sig else ''}",
                             ev.data["_outer"]))

    event.register("numba:compile", Compiles())
    from gseek.cli import main as gseek_main

    t1 = time.perf_counter()
    code = gseek_main(argv)
    t2 = time.perf_counter()
    outer = sorted((r for r in rows if r[2]), reverse=True)
    print(f"{'seconds':>8}  compiled (outermost specialisations; {len(rows)} compiles in all)")
    for seconds, name, _ in outer[: args.top]:
        print(f"{seconds:8.2f}  {name[:160]}")
    print(f"{sum(r[0] for r in outer):8.2f}  total compile ({len(outer)} outermost)")
    print(f"{t2 - t1:8.2f}  the command (exit {code}); imports before it {t1 - t0:.2f} s; cache {os.environ['NUMBA_CACHE_DIR']}")
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())

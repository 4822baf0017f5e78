#!/usr/bin/env python3
"""Summarise a pipeline trace: ``GSEEK_TRACE=t.json gseek search ...; python benchmarks/tools/trace_summary.py t.json``.

The engine (``gseek.pipeline.engine``) writes one span per stage call when
``GSEEK_TRACE`` names a file: ``read`` (the job builder waiting for the next
parsed batch), ``prelim`` (device stages), ``finalize`` (select + SAM
formatting), ``write`` and ``commit`` (the writer, in the caller's thread), ``setup``
(a prelim worker's device warm-up).
Prints, per stage, the calls, busy seconds and share of the dispatcher's wall
time, then a timeline: one row per thread, one column per slice of the wall
time, the letter of the stage that was busy most of that slice.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--width", type=int, default=100, help="timeline columns (default 100)")
    ap.add_argument("--command", nargs=2, type=float, metavar=("START", "END"),
                    help="the command's start and end (epoch seconds, date +%%s.%%N): also print the time "
                         "before the dispatcher (start-up) and after it (teardown)")
    args = ap.parse_args()
    data = json.load(open(args.trace, encoding="utf-8"))
    wall, spans = data["wall"], data["spans"]
    if args.command and "epoch" in data:
        start, end = args.command
        print(f"whole command {end - start:.3f} s: before the dispatcher {data['epoch'] - start:.3f} s, "
              f"after it {end - data['epoch'] - wall:.3f} s")
    busy: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    for s in spans:
        busy[s["stage"]] += s["end"] - s["start"]
        calls[s["stage"]] += 1
    print(f"dispatcher wall {wall:.3f} s")
    print(f"{'stage':<10}{'calls':>7}{'busy s':>9}{'of wall':>9}")
    for stage in ("setup", "read", "prelim", "finalize", "write", "commit"):
        if stage in busy:
            print(f"{stage:<10}{calls[stage]:>7}{busy[stage]:>9.3f}{busy[stage] / wall:>9.0%}")
    threads = sorted({s["thread"] for s in spans})
    step = wall / args.width
    print(f"\ntimeline ({step * 1e3:.0f} ms a column; r read, p prelim, f finalize, w write, c commit, . idle)")
    for thread in threads:
        cells = [defaultdict(float) for _ in range(args.width)]
        for s in (s for s in spans if s["thread"] == thread):
            a, b = s["start"], s["end"]
            for c in range(int(a / step), min(args.width, int(b / step) + 1)):
                lo, hi = max(a, c * step), min(b, (c + 1) * step)
                if hi > lo:
                    cells[c][s["stage"]] += hi - lo
        row = "".join(max(cell, key=cell.get)[0] if cell and max(cell.values()) > step / 2 else "."
                      for cell in cells)
        print(f"{thread.removeprefix('gseek-pipeline-'):<12} {row}")
    return 0


if __name__ == "__main__":
    import signal

    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under `| head`
    sys.exit(main())

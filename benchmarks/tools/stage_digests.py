#!/usr/bin/env python3
"""The steady search times and rows' digests of an A/B's stage profiles, as a table.

    python benchmarks/tools/stage_digests.py DIR

Reads every ``DIR/stages-*.json`` (``profile_blast_stages.py --out``; one a process of an A/B) and prints,
per set and process, the steady search's median (min-max) and the rows' SHA-256, then for each set whether
the rows were identical in every process (``benchmarks/archive/gpu_stages.sh``, ``gpu40b_ab.sh``).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def main(folder: str) -> None:
    runs = [json.loads(p.read_text()) for p in sorted(Path(folder).glob("stages-*.json"))]
    print("\n| set | tree | steady search s (median, min-max) | rows SHA-256 | same in every search |")
    print("|---|---|---|---|---|")
    digests: dict[str, set[str]] = {}
    for run in runs:
        for rec in run["sets"]:
            digests.setdefault(rec["set"], set()).add(rec["sha256"])
            s = rec["search_s"]
            print(f"| {rec['set']} | {run['tag']} | {statistics.median(s):.3f} ({min(s):.3f}-{max(s):.3f}) | "
                  f"{rec['sha256'][:16]} | {rec['same_rows']} |")
    for name, d in digests.items():
        print(f"{name}: {'outputs identical' if len(d) == 1 else 'OUTPUTS DIFFER'} across {len(runs)} processes")


if __name__ == "__main__":
    main(sys.argv[1])

#!/usr/bin/env python3
"""``runs40_ab.py`` (one side of a BLAST steady-search A/B) with a variant of this tree's round choice
switched in the process (issue 40, branch mb1g):

    python benchmarks/archive/mb1g_ab.py --variant NAME [runs40_ab.py's options]

``tree``: as installed; ``no-rows``: ``device_rounds.isolated`` without its numbering by rows (None where key x
subject cells x diagonal cells is past 62 bits, as on main: every seed of such a round to the host's pass);
``no-parts``: the host's pass serial (``rounds.PARTS_MIN`` past any round). A tree without those names
(main) takes ``tree`` only. Used by ``gpu_mb1g.sh``.
"""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--variant", default="tree", choices=["tree", "no-rows", "no-parts"])
    args, rest = ap.parse_known_args()
    if args.variant == "no-rows":
        from gseek.blast import device_rounds

        device_rounds._rows = lambda *a, **k: None
    elif args.variant == "no-parts":
        from gseek.blast import rounds

        rounds.PARTS_MIN = 1 << 62
    sys.argv = [sys.argv[0], *rest]
    runpy.run_path(str(Path(__file__).with_name("runs40_ab.py")), run_name="__main__")


if __name__ == "__main__":
    main()

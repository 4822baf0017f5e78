#!/usr/bin/env python3
"""Side-by-side benchmarks of gseek and its peers: ``python benchmarks/run.py BENCHMARK [options]``.

A thin shim: the suite lives in ``benchmarks/suite/`` (one module per
benchmark family, the harness, the data); ``--list`` names the benchmarks,
``report`` writes ``benchmarks/RESULTS-table.md`` from the kept records.
Every command written as ``python benchmarks/run.py ...`` keeps working.
"""

import sys
from pathlib import Path

# The repository root goes last, so an installed gseek is never shadowed by the source tree.
sys.path.append(str(Path(__file__).resolve().parent.parent))

from benchmarks.suite.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())

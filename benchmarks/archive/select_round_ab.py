"""``gseek.blast.rounds._select_round`` (the serial pass) and ``select_round_parts`` (the same in parts of keys on
the host's threads) of a base tree (``--base``, default ``main``) against this tree's, in one process,
alternating: 680k rank-ordered seeds (a megablast round at 1 Gbp has ~680k), 3,000 keys, clusters of near
seeds; the masks must be equal. Prints each tree's median and range of ``--rounds`` calls of each.

    python benchmarks/archive/select_round_ab.py --rounds 45
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def base_module(rev: str):
    """The base tree's ``rounds.py`` as a module of its own (compiled in a temporary folder)."""
    source = subprocess.run(["git", "show", f"{rev}:gseek/blast/rounds.py"], check=True, capture_output=True,
                            text=True).stdout
    path = Path(tempfile.mkdtemp(prefix="select_round_ab-")) / "rounds_base.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("rounds_base", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seeds(n: int = 680_000, seed: int = 5):
    rng = np.random.default_rng(seed)
    key = rng.integers(0, 3000, n).astype(np.int64)
    s = rng.integers(0, 50_000_000, n).astype(np.int64)
    diag = rng.integers(-50_000, 50_000_000, n).astype(np.int64)
    for c in rng.choice(n, 20000, replace=False):  # clusters: the seeds of one alignment
        m = rng.choice(n, 20, replace=False)
        key[m], s[m], diag[m] = key[c], s[c] + rng.integers(-900, 900, 20), diag[c] + rng.integers(-400, 400, 20)
    return key, s, diag, np.full(n, 700, np.int64)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="main")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    from gseek.blast import rounds

    base = base_module(args.base)
    fs = {"base serial": base._select_round, "this serial": rounds._select_round}
    if hasattr(base, "select_round_parts"):
        fs.update({"base parts": base.select_round_parts, "this parts": rounds.select_round_parts})
    data = seeds()
    want = fs["base serial"](*data)
    assert all(np.array_equal(f(*data), want) for f in fs.values()), "the masks differ"
    times: dict[str, list[float]] = {k: [] for k in fs}
    names = list(fs)
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            t = time.perf_counter()
            fs[name](*data)
            times[name].append(time.perf_counter() - t)
    print(f"{int(want.sum())} of {want.size} seeds taken; {args.rounds} calls each", file=sys.stderr)
    for name, v in times.items():
        print(f"{name}: median {statistics.median(v):.4f} s, range {min(v):.4f}-{max(v):.4f} s")


if __name__ == "__main__":
    main()

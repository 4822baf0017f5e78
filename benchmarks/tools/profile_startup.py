#!/usr/bin/env python3
"""Where ``gseek search``'s fixed start-up goes: imports, index load, device set-up, first calls.

    python -P benchmarks/tools/profile_startup.py INDEX READS.fq [--device gpu]

Times, in one fresh process, each step the command takes before its first
batch is mapped (warm caches: run it twice, read the second run).
"""

from __future__ import annotations

import sys
import time

T0 = time.perf_counter()


def step(name: str, t: list[float]) -> None:
    now = time.perf_counter()
    print(f"{name:<34} {now - t[0]:6.3f} s")
    t[0] = now


def main() -> int:
    t = [T0]
    index_path, reads = sys.argv[1], sys.argv[2]
    device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "gpu"
    import numpy  # noqa: F401

    step("import numpy", t)
    import gseek.cli  # noqa: F401

    step("import gseek.cli", t)
    from gseek.backend import get_backend

    backend = get_backend(device)
    step(f"backend {backend.name} (CUDA context)", t)
    from gseek.index import Index

    index = Index.load(index_path, device=backend)
    step("Index.load (verify + upload)", t)
    from gseek.mapper import Mapper

    mapper = Mapper(index, 3)
    step("Mapper (reference arrays)", t)
    from gseek.seqio import FastxReader

    batch = next(iter(FastxReader(reads, max_records=1000, threads=2)))
    step("first parse (Numba cache load)", t)
    found = mapper.search(batch)
    backend.synchronize()
    step("first search (kernel load)", t)
    result = mapper.select(batch, found)
    step("first select (Numba cache load)", t)
    from gseek.output.sam import format_mapping, sam_header

    format_mapping(result, batch, mapper.reference, raw=True)
    step("first format (Numba cache load)", t)
    sam_header(index.contigs.names, index.contigs.lengths, command="x", backend=backend.describe())
    step("SAM header", t)
    print(f"{'total':<34} {time.perf_counter() - T0:6.3f} s (after the interpreter's own start)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

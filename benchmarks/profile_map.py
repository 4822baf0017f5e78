#!/usr/bin/env python3
"""Where the time of ``gseek search --task map`` goes, stage by stage, in one thread.

    python benchmarks/profile_map.py REFERENCE.fa[.gz] [--reads N] [--device gpu|cpu] [-v K]

Builds the index, simulates N reads (``kmismatch_reads``, seed 7), then times
start-up (index load and upload, first compile), FASTQ parsing, ``Mapper.map``
(synchronised) and SAM formatting over the whole file in one thread, and
prints the top functions of a cProfile of ``Mapper.map``. Used to decide what
to optimise; not a result for RESULTS.md by itself.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("fasta")
    ap.add_argument("--reads", type=int, default=1_000_000)
    ap.add_argument("--device", default="gpu")
    ap.add_argument("-v", "--mismatches", type=int, default=3)
    args = ap.parse_args()

    from gseek.datasets.simulate import kmismatch_reads
    from gseek.index import Index
    from gseek.mapper import Mapper
    from gseek.sam import format_mapping
    from gseek.seqio import FastxReader

    work = Path(tempfile.mkdtemp(prefix="gseek-profile-map-"))
    Index.build(args.fasta, device="cpu").save(work / "ref.gseek")
    kmismatch_reads(args.fasta, args.reads, 100, args.mismatches, seed=7).write(work / "r.fq")

    t = time.perf_counter()
    index = Index.load(work / "ref.gseek", device=args.device)
    mapper = Mapper(index, args.mismatches)
    warm = next(iter(FastxReader(work / "r.fq", max_records=1000)))
    format_mapping(mapper.map(warm), warm, mapper)
    startup = time.perf_counter() - t

    times = {"parse": 0.0, "map": 0.0, "format": 0.0}
    profile = cProfile.Profile()
    reader = iter(FastxReader(work / "r.fq"))
    while True:
        t = time.perf_counter()
        batch = next(reader, None)
        times["parse"] += time.perf_counter() - t
        if batch is None:
            break
        t = time.perf_counter()
        profile.enable()
        result = mapper.map(batch)
        mapper.backend.synchronize()
        profile.disable()
        times["map"] += time.perf_counter() - t
        t = time.perf_counter()
        format_mapping(result, batch, mapper)
        times["format"] += time.perf_counter() - t
    total = sum(times.values())
    print(f"{mapper.backend.describe()}: {args.reads:,} reads, k={args.mismatches}")
    print(f"start-up (load + upload + first batch) {startup:6.2f} s")
    for name, seconds in times.items():
        print(f"{name:<8} {seconds:6.2f} s  {seconds / total:5.0%}  {args.reads / seconds / 1e6:7.2f} M reads/s")
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(18)
    print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[-2200:])
    return 0


if __name__ == "__main__":
    sys.exit(main())

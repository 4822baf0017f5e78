#!/usr/bin/env python3
"""Where the time of ``gseek search --task map`` goes, stage by stage, in one thread.

    python benchmarks/tools/profile_map.py REFERENCE.fa[.gz] [--reads N] [--device gpu|cpu] [-v K]

Builds the index, simulates N reads (``kmismatch_reads``, seed 7), then times
start-up (index load and upload, first compile), FASTQ parsing, ``Mapper.search``
(the device stages, synchronised), ``Mapper.select`` and SAM formatting over the
whole file in one thread, and prints the top functions of a cProfile of
``Mapper.search``. On the GPU it also sums the time of every gseek kernel
(CUDA events around each ``Backend.launch``): the kernel-only reads/s.
``--chunk-mb`` sets the batch size. Used to decide what to optimise; not a
result for RESULTS.md by itself.
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
    ap.add_argument("--chunk-mb", type=float, default=16)
    args = ap.parse_args()
    chunk = int(args.chunk_mb * (1 << 20))

    from gseek.datasets.simulate import kmismatch_reads
    from gseek.index import Index
    from gseek.mapper import Mapper
    from gseek.output.sam import format_mapping
    from gseek.seqio import FastxReader

    work = Path(tempfile.mkdtemp(prefix="gseek-profile-map-"))
    Index.build(args.fasta, device="cpu").save(work / "ref.gseek")
    kmismatch_reads(args.fasta, args.reads, 100, args.mismatches, seed=7).write(work / "r.fq")

    t = time.perf_counter()
    index = Index.load(work / "ref.gseek", device=args.device)
    mapper = Mapper(index, args.mismatches)
    warm = next(iter(FastxReader(work / "r.fq", max_records=1000)))
    format_mapping(mapper.map(warm), warm, mapper.reference)
    startup = time.perf_counter() - t

    kernel_events: list = []
    if mapper.backend.name == "gpu":
        import cupy

        launch = type(mapper.backend).launch

        def timed_launch(self, family, kernel, n_items, *a):
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            launch(self, family, kernel, n_items, *a)
            end.record()
            kernel_events.append((kernel, start, end))

        type(mapper.backend).launch = timed_launch

    from gseek.output import sam_records as _samfmt

    passes = {"record_bounds": 0.0, "record_fill": 0.0, "record_compact": 0.0}

    def timed(name):
        fn = getattr(_samfmt, name)

        def run(*a):
            t0 = time.perf_counter()
            try:
                return fn(*a)
            finally:
                passes[name] += time.perf_counter() - t0
        return run

    for name in passes:
        setattr(_samfmt, name, timed(name))

    times = {"parse": 0.0, "search": 0.0, "select": 0.0, "format": 0.0}
    profile = cProfile.Profile()
    reader = iter(FastxReader(work / "r.fq", chunk_bytes=chunk))
    batches = 0
    while True:
        t = time.perf_counter()
        batch = next(reader, None)
        times["parse"] += time.perf_counter() - t
        if batch is None:
            break
        batches += 1
        t = time.perf_counter()
        profile.enable()
        found = mapper.search(batch)
        mapper.backend.synchronize()
        profile.disable()
        times["search"] += time.perf_counter() - t
        t = time.perf_counter()
        result = mapper.select(batch, found)
        times["select"] += time.perf_counter() - t
        t = time.perf_counter()
        format_mapping(result, batch, mapper.reference, raw=True)
        times["format"] += time.perf_counter() - t
    total = sum(times.values())
    print(f"{mapper.backend.describe()}: {args.reads:,} reads, k={args.mismatches}, {batches} batches "
          f"of {args.chunk_mb:g} MiB")
    print(f"start-up (load + upload + first batch) {startup:6.2f} s")
    for name, seconds in times.items():
        print(f"{name:<8} {seconds:6.2f} s  {seconds / total:5.0%}  {args.reads / seconds / 1e6:7.2f} M reads/s")
    print("format passes: " + ", ".join(f"{k} {v:.3f} s" for k, v in passes.items()))
    if kernel_events:
        per_kernel: dict[str, float] = {}
        for kernel, start, end in kernel_events:
            end.synchronize()
            per_kernel[kernel] = per_kernel.get(kernel, 0.0) + cupy.cuda.get_elapsed_time(start, end) / 1e3
        busy = sum(per_kernel.values())
        print(f"gseek kernels {busy:6.3f} s  {args.reads / busy / 1e6:7.2f} M reads/s (kernel-only): "
              + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in sorted(per_kernel.items(), key=lambda x: -x[1])))
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(18)
    print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[-2200:])
    return 0


if __name__ == "__main__":
    sys.exit(main())

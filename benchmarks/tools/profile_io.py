#!/usr/bin/env python3
"""Where gseek's FASTQ reader spends its time: a stage-by-stage breakdown.

    python benchmarks/tools/profile_io.py [--reads N] [--length L] [--repeat R] [--threads T ...]

Wraps the reader's stages with timers (reading/decompressing, the Numba
``parse_chunk`` kernel, output allocation, the rest of ``_parse`` and of
``_batches``) and runs the reader over the ``io`` benchmark's data, plain and
gzip; then times the kernel alone on data already in memory with outputs
allocated once, ``bytes.count`` over the file, two ways of inflating the .gz,
the reader with ``threads=T`` (one file parsed on T threads), and pysam for
reference. Medians of R runs. Reads gseek; changes nothing in it.
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import sys
import time
import zlib
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository: benchmarks.suite
from benchmarks.suite import datagen, harness  # noqa: E402


def median_time(fn, repeat: int) -> float:
    times, _ = harness.time_repeats(fn, repeat)
    return statistics.median(times)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reads", type=int, default=1_000_000)
    p.add_argument("--length", type=int, default=100)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--threads", type=int, nargs="+", default=sorted({1, 2, os.cpu_count() or 1}),
                   help="thread counts for FastxReader(threads=T) (default: 1, 2 and every core)")
    args = p.parse_args()
    os.environ.setdefault("NUMBA_CACHE_DIR", str(harness.OUT_DIR / "numba-cache"))

    import gseek.seqio.reader as sq
    from gseek.seqio import parser as _fastx

    data = datagen.synthetic_fastq(args.reads, args.length, args.seed)
    tiny = datagen.synthetic_fastq(1000, args.length, args.seed + 1)
    plain, packed = data["path"], data["gz_path"]
    for _ in sq.FastxReader(tiny["path"]):
        pass  # compile / load the kernel
    for _ in sq.FastxReader(tiny["path"], threads=2, chunk_bytes=1 << 16):
        pass  # and the threaded reader's guessing kernels

    acc: dict[str, float] = {}

    def timed(name, fn):
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                acc[name] = acc.get(name, 0.0) + time.perf_counter() - t0

        return wrapper

    saved = (_fastx.parse_chunk, _fastx.empty_outputs, sq.FastxReader._read, sq.FastxReader._parse)
    _fastx.parse_chunk = timed("kernel", saved[0])
    _fastx.empty_outputs = timed("alloc", saved[1])
    sq.FastxReader._read = timed("read", saved[2])
    sq.FastxReader._parse = timed("parse", saved[3])

    def one_pass(path: str) -> dict[str, float]:
        acc.clear()
        t0 = time.perf_counter()
        for _ in sq.FastxReader(path):
            pass
        acc["total"] = time.perf_counter() - t0
        return dict(acc)

    print(f"data: {Path(plain).name} ({data['bytes'] / 1e6:.0f} MB plain), median of {args.repeat}")
    try:
        for path in (plain, packed):
            runs = [one_pass(path) for _ in range(args.repeat)]
            m = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            total = m["total"]
            stages = [
                ("read / decompress (FastxReader._read)", m["read"]),
                ("parse_chunk, the Numba kernel", m["kernel"]),
                ("empty_outputs (np.empty/np.zeros)", m["alloc"]),
                ("rest of _parse: data.count(b'\\n'), .copy() of 7 arrays, batch", m["parse"] - m["kernel"] - m["alloc"]),
                ("rest of _batches: data += more, data[consumed:]", total - m["parse"] - m["read"]),
            ]
            print(f"\n{Path(path).name}: FastxReader pass {total:.3f} s")
            for name, sec in stages:
                print(f"  {name:66s} {sec:6.3f} s {sec / total:6.1%}")
    finally:
        _fastx.parse_chunk, _fastx.empty_outputs, sq.FastxReader._read, sq.FastxReader._parse = saved

    raw = Path(plain).read_bytes()
    chunk = sq.DEFAULT_CHUNK_BYTES
    table = sq._TABLES["dna"]
    outs = _fastx.empty_outputs(chunk + (1 << 20), chunk // 20 + 2, True)

    def kernel_only() -> int:
        pos = reads = 0
        while pos < len(raw):
            n = min(chunk, len(raw) - pos)
            buf = np.frombuffer(raw, dtype=np.uint8, count=n, offset=pos)
            res = _fastx.parse_chunk(buf, n, pos + n >= len(raw), True, table, 33, outs[3].size - 1, chunk, *outs)
            if res[5]:
                raise SystemExit(f"parse error {res[5]}")
            pos += res[1]
            reads += res[0]
        return reads

    if kernel_only() != data["reads"]:
        raise SystemExit("kernel-only pass miscounted reads")
    k = median_time(kernel_only, args.repeat)
    print(f"\nparse_chunk alone (data in memory, outputs reused): {k:.3f} s = {len(raw) / k / 1e6:.0f} MB/s, "
          f"{k / len(raw) * 1e9:.2f} ns/byte")
    c = median_time(lambda: [raw.count(b"\n", i, i + chunk) for i in range(0, len(raw), chunk)], args.repeat)
    print(f"bytes.count(b'\\n') over the file: {c:.3f} s")

    def gzip_file():
        with gzip.GzipFile(packed) as fh:
            while fh.read(chunk):
                pass

    def zlib_object():
        d = zlib.decompressobj(31)  # one gzip member, as written by datagen
        with open(packed, "rb") as fh:
            while piece := fh.read(4 << 20):
                d.decompress(piece)
        d.flush()

    print(f"gzip.GzipFile.read(16 MiB) over the .gz: {median_time(gzip_file, 3):.3f} s; "
          f"zlib.decompressobj on 4 MiB pieces: {median_time(zlib_object, 3):.3f} s")

    for path in (plain, packed):
        row = []
        for t in args.threads:
            sec = median_time(lambda: [None for _ in sq.FastxReader(path, threads=t)], args.repeat)
            row.append(f"threads={t} {sec:.3f} s")
        print(f"FastxReader {Path(path).name}: " + ", ".join(row))

    import pysam

    def pysam_pass(path):
        with pysam.FastxFile(path) as fh:
            for rec in fh:
                len(rec.sequence)
                len(rec.quality)

    print(f"pysam.FastxFile: plain {median_time(lambda: pysam_pass(plain), 3):.3f} s, "
          f".gz {median_time(lambda: pysam_pass(packed), 3):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

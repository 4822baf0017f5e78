"""`io`: parse a FASTQ (plain and .gz) into memory, gseek against pysam and Biopython (issue 2)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from . import harness
from .harness import markdown_table, OUT_DIR, ratio, run_worker, Timing
from .registry import benchmark, Report, WORKERS
from .common import text_handle


def parse_gseek(path: str) -> tuple[int, int, int]:
    import gseek.seqio

    reads = bases = quals = 0
    for batch in gseek.seqio.FastxReader(path):
        reads += len(batch)
        bases += batch.codes.size
        quals += batch.quals.size
    return reads, bases, quals


def parse_pysam(path: str) -> tuple[int, int, int]:
    import pysam

    reads = bases = quals = 0
    with pysam.FastxFile(path) as fh:
        for rec in fh:
            reads += 1
            bases += len(rec.sequence)
            quals += len(rec.quality)
    return reads, bases, quals


def parse_biopython(path: str) -> tuple[int, int, int]:
    from Bio import SeqIO

    reads = bases = quals = 0
    with text_handle(path) as fh:
        for rec in SeqIO.parse(fh, "fastq"):
            reads += 1
            bases += len(str(rec.seq))
            quals += len(rec.letter_annotations["phred_quality"])
    return reads, bases, quals


def parse_fastq_general(path: str) -> tuple[int, int, int]:
    from Bio.SeqIO.QualityIO import FastqGeneralIterator

    reads = bases = quals = 0
    with text_handle(path) as fh:
        for _title, seq, qual in FastqGeneralIterator(fh):
            reads += 1
            bases += len(seq)
            quals += len(qual)
    return reads, bases, quals


#: name -> (parse function, module imported before timing, label for tables)
IO_PARSERS: dict[str, tuple[Callable[[str], tuple[int, int, int]], str, str]] = {
    "gseek": (parse_gseek, "gseek.seqio", "gseek FastxReader"),
    "pysam": (parse_pysam, "pysam", "pysam.FastxFile"),
    "biopython": (parse_biopython, "Bio.SeqIO", "Bio.SeqIO.parse"),
    "fastq-general": (parse_fastq_general, "Bio.SeqIO.QualityIO", "Bio FastqGeneralIterator"),
}
IO_BASELINE = "pysam"


def io_worker(spec: dict) -> dict:
    """Time one parser on one file in this (fresh) process.

    ``spec``: parser, path, repeat, warmup (a tiny file parsed once first, so
    Numba's compile and the libraries' first-call costs are excluded), cold
    (time the very first pass instead, import included separately).
    """
    parse, module, _ = IO_PARSERS[spec["parser"]]
    t0 = time.perf_counter()
    __import__(module)
    import_s = time.perf_counter() - t0
    if spec.get("cold"):
        times, counts = harness.time_repeats(lambda: parse(spec["path"]), 1)
    else:
        if spec.get("warmup"):
            parse(spec["warmup"])
        times, counts = harness.time_repeats(lambda: parse(spec["path"]), spec["repeat"])
    reads, bases, quals = counts  # type: ignore[misc]
    return {
        "times": times,
        "import_s": import_s,
        "reads": reads,
        "bases": bases,
        "quals": quals,
        "vmhwm_mib": harness.peak_rss_self_mib(),
    }


WORKERS["io"] = io_worker


def _io_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reads", type=int, default=1_000_000, help="reads in the FASTQ (default 1,000,000)")
    p.add_argument("--length", type=int, default=100, help="read length in bp (default 100)")
    p.add_argument("--repeat", type=int, default=3, help="timed runs per parser and file (default 3)")
    p.add_argument("--seed", type=int, default=42, help="seed of the synthetic reads (default 42)")
    p.add_argument(
        "--parsers",
        default=",".join(IO_PARSERS),
        help=f"comma-separated subset of {','.join(IO_PARSERS)} (default all)",
    )
    p.add_argument("--no-gz", action="store_true", help="skip the gzip-compressed input")
    p.add_argument("--no-cold", action="store_true", help="skip gseek's cold first-run timings")


def _read_through(path: str) -> None:
    """Read a file once so every parser finds it in the page cache."""
    with open(path, "rb") as fh:
        while fh.read(1 << 24):
            pass


@benchmark("io", "parse FASTQ (plain and .gz) into memory: gseek vs pysam vs Biopython", _io_options)
def bench_io(args: argparse.Namespace) -> Report:
    from . import datagen

    parsers = [p.strip() for p in args.parsers.split(",") if p.strip()]
    unknown = sorted(set(parsers) - set(IO_PARSERS))
    if unknown:
        raise SystemExit(f"run.py io: unknown parser(s) {', '.join(unknown)}; choose from {', '.join(IO_PARSERS)}")
    if args.repeat < 1:
        raise SystemExit("run.py io: --repeat must be at least 1")
    data = datagen.synthetic_fastq(args.reads, args.length, args.seed)
    tiny = datagen.synthetic_fastq(1000, args.length, args.seed + 1)
    inputs = [("fastq", data["path"])] + ([] if args.no_gz else [("fastq.gz", data["gz_path"])])
    for _, path in inputs:
        _read_through(path)

    # Numba's on-disk cache: a persistent one for warm runs, a fresh one for the cold compile.
    cache_dir = OUT_DIR / "numba-cache"
    cache_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))

    results: list[dict] = []
    timings: dict[tuple[str, str], Timing] = {}
    for kind, path in inputs:
        for name in parsers:
            spec = {"task": "io", "parser": name, "path": path, "repeat": args.repeat, "warmup": tiny["path"]}
            print(f"  io: {name} on {Path(path).name} x{args.repeat} ...", file=sys.stderr, flush=True)
            answer, proc = run_worker(spec, env=env)
            t = Timing(answer["times"], peak_rss_mib=proc.peak_rss_mib)
            timings[(name, kind)] = t
            results.append(
                {"parser": name, "input": kind, "path": path, **t.as_dict(), **answer,
                 "rss_floor_mib": proc.rss_floor_mib, "cpu_s": proc.cpu_s}
            )

    # every parser must have seen the same records
    expected = (data["reads"], data["bases"], data["bases"])
    for r in results:
        got = (r["reads"], r["bases"], r["quals"])
        if got != expected:
            raise SystemExit(
                f"run.py io: {r['parser']} on {r['input']} counted reads/bases/qualities {got}, "
                f"expected {expected}"
            )

    cold: dict[str, dict] = {}
    if "gseek" in parsers and not args.no_cold:
        with tempfile.TemporaryDirectory(prefix="numba-cold-") as fresh:
            spec = {"task": "io", "parser": "gseek", "path": data["path"], "cold": True}
            print("  io: gseek cold (empty Numba cache) ...", file=sys.stderr, flush=True)
            answer, proc = run_worker(spec, env=dict(os.environ, NUMBA_CACHE_DIR=fresh))
            cold["compile"] = {**answer, "process_s": proc.seconds, "peak_rss_mib": proc.peak_rss_mib}
        print("  io: gseek cold (Numba cache on disk) ...", file=sys.stderr, flush=True)
        answer, proc = run_worker(spec, env=env)
        cold["cached"] = {**answer, "process_s": proc.seconds, "peak_rss_mib": proc.peak_rss_mib}
        for c in cold.values():
            if (c["reads"], c["bases"], c["quals"]) != expected:
                raise SystemExit(f"run.py io: gseek cold run counted {(c['reads'], c['bases'], c['quals'])}")

    size_mb = data["bytes"] / 1e6
    rows = []
    for kind, _ in inputs:
        base = timings.get((IO_BASELINE, kind))
        for name in parsers:
            t = timings[(name, kind)]
            rows.append(
                [
                    IO_PARSERS[name][2],
                    kind,
                    f"{t.median:.2f}",
                    f"{t.best:.2f}",
                    f"{data['reads'] / t.median / 1e6:.2f}",
                    f"{size_mb / t.median:.0f}",
                    f"{t.peak_rss_mib:.0f}",
                    ratio(base.median, t.median) if base else "-",
                ]
            )
    table = markdown_table(
        ["parser", "input", "median s", "best s", "M reads/s", "MB/s", "peak RSS MiB", f"vs {IO_BASELINE}"],
        rows,
        align="llrrrrrr",
    )
    notes = [
        f"median and best of {args.repeat} runs, each parser in its own fresh Python process, after one "
        f"warm-up pass over a 1,000-read file (Numba compile excluded); files read once beforehand "
        f"(page cache warm)",
        f"MB/s = uncompressed FASTQ bytes ({size_mb:.0f} MB) / median seconds, also for .gz input; "
        f"'vs {IO_BASELINE}' = {IO_BASELINE}'s median / this median (>1 is faster)",
        "peak RSS is the worker process's own (reaped with os.wait4 by a small launcher), "
        "interpreter and imports included",
        "each parser touches every read's sequence and quality: gseek sums batch.codes.size "
        "(struct-of-arrays batches), pysam len(rec.sequence/quality), Bio.SeqIO str(rec.seq) and "
        "letter_annotations['phred_quality'], FastqGeneralIterator the (title, seq, qual) strings",
        f"all parsers counted {data['reads']:,} reads and {data['bases']:,} bases and qualities",
    ]
    if cold:
        c, k = cold["compile"], cold["cached"]
        warm = timings[("gseek", "fastq")].median
        notes.append(
            f"gseek cold first run on the plain file (new process, no warm-up): {c['times'][0]:.2f} s with an "
            f"empty Numba cache (compile ~{c['times'][0] - warm:.1f} s), {k['times'][0]:.2f} s with the "
            f"cache on disk; `import gseek.seqio` {k['import_s']:.2f} s"
        )
    return Report(
        title="Sequence I/O",
        data=data,
        table=table,
        notes=notes,
        results=results,
        extra={"cold": cold, "tiny_warmup": tiny["path"], "parsers": parsers},
    )

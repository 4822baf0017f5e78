#!/usr/bin/env python3
"""Side-by-side benchmarks of gseek and its peers; one function per benchmark.

    python benchmarks/run.py io [--reads N] [--length L] [--repeat R]

Each benchmark is a function ``bench_<name>(args) -> Report`` registered in
``BENCHMARKS`` with its options. The runner adds where and what ran (date, host,
CPU, cores, GPU, git commit, the exact command), writes the whole record as
JSON under ``benchmarks/out/`` and prints a Markdown table for RESULTS.md.
Peers run side by side with gseek in the same run, on the same host.

Not imported by the test suite, and no timing lives in unit tests.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shlex
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import harness
from harness import OUT_DIR, Timing, markdown_table, ratio, run_worker

# ------------------------------------------------------------------ registry


@dataclass
class Report:
    """What a benchmark hands back: the table, its notes and the raw figures."""

    title: str
    data: dict
    table: str
    notes: list[str] = field(default_factory=list)
    results: list[dict] = field(default_factory=list)
    extra: dict = field(default_factory=dict)


@dataclass
class Benchmark:
    run: Callable[[argparse.Namespace], Report]
    help: str
    add_options: Callable[[argparse.ArgumentParser], None]


BENCHMARKS: dict[str, Benchmark] = {}
#: Functions run inside a fresh interpreter by ``run.py _worker SPEC``.
WORKERS: dict[str, Callable[[dict], dict]] = {}


def benchmark(name: str, help: str, add_options: Callable[[argparse.ArgumentParser], None]):
    def register(fn: Callable[[argparse.Namespace], Report]):
        BENCHMARKS[name] = Benchmark(fn, help, add_options)
        return fn

    return register


# ------------------------------------------------------------------------ io


def _text_handle(path: str):
    """A text handle on ``path``, through gzip when it starts with 1f 8b."""
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="ascii")
    return open(path, encoding="ascii")


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
    with _text_handle(path) as fh:
        for rec in SeqIO.parse(fh, "fastq"):
            reads += 1
            bases += len(str(rec.seq))
            quals += len(rec.letter_annotations["phred_quality"])
    return reads, bases, quals


def parse_fastq_general(path: str) -> tuple[int, int, int]:
    from Bio.SeqIO.QualityIO import FastqGeneralIterator

    reads = bases = quals = 0
    with _text_handle(path) as fh:
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
    import datagen

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


# --------------------------------------------------------------------- index


def _sample_patterns(fasta: str, n: int, length: int, seed: int):
    """``n`` substrings of ``length`` drawn uniformly from the contigs (never across two)."""
    import numpy as np

    from gseek.seqio import read_fastx

    ref = read_fastx(fasta)
    starts = ref.offsets[:-1]
    usable = np.maximum(ref.lengths - length + 1, 0)
    rng = np.random.default_rng(seed)
    contig = rng.choice(usable.size, size=n, p=usable / usable.sum())
    pos = starts[contig] + (rng.random(n) * usable[contig]).astype(np.int64)
    codes = ref.codes[pos[:, None] + np.arange(length)].reshape(-1)
    return codes, np.arange(n + 1, dtype=np.int64) * length


def index_search_worker(spec: dict) -> dict:
    """Batched exact search on a saved index in this fresh process: count, then locate."""
    from gseek.index import Index

    t0 = time.perf_counter()
    idx = Index.load(spec["index"], device=spec["device"], threads=spec.get("threads"))
    idx.device_arrays()
    load_s = time.perf_counter() - t0
    patterns = _sample_patterns(spec["fasta"], spec["patterns"], spec["length"], spec["seed"])
    small = (patterns[0][: 1000 * spec["length"]], patterns[1][:1001])
    idx.count(small), idx.locate(small)  # compile / warm-up
    count_times, counts = harness.time_repeats(lambda: idx.count(patterns), spec["repeat"])
    locate_times, hits = harness.time_repeats(lambda: idx.locate(patterns), spec["repeat"])
    return {
        "backend": idx.backend.describe(),
        "load_s": load_s,
        "count_times": count_times,
        "locate_times": locate_times,
        "patterns": spec["patterns"],
        "occurrences": int(hits.size),
        "counted": int(counts.sum()),
        "vmhwm_mib": harness.peak_rss_self_mib(),
    }


WORKERS["index_search"] = index_search_worker


def _index_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("fasta", nargs="+", help="reference FASTA files (plain or .gz)")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="threads for peers and the CPU backend")
    p.add_argument("--patterns", type=int, default=10_000_000, help="25-mers per search batch (default 10M)")
    p.add_argument("--length", type=int, default=25, help="pattern length (default 25)")
    p.add_argument("--repeat", type=int, default=3, help="timed repeats of each search (default 3)")
    p.add_argument("--devices", default="gpu,cpu", help="backends for the search timings (default gpu,cpu)")
    p.add_argument("--no-peers", action="store_true", help="skip bowtie-build and bwa index")


def _dir_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


@benchmark("index", "build the FM-index (gseek vs bowtie-build vs bwa index), then batched count/locate", _index_options)
def bench_index(args: argparse.Namespace) -> Report:
    import shutil

    from gseek.seqio import read_fastx

    work = Path(tempfile.mkdtemp(prefix="gseek-index-bench-"))
    try:
        env = dict(os.environ)
        if not args.no_peers:
            try:
                env = harness.peer_env()
            except Exception as exc:  # no carried peers here: gseek alone
                print(f"  index: peers unavailable ({exc}); gseek only", file=sys.stderr)
        builders = {
            "gseek index": lambda fa, out: [sys.executable, "-P", "-m", "gseek", "--quiet", "index", fa, "-o", str(out)],
            f"bowtie-build --threads {args.threads}": lambda fa, out: ["bowtie-build", "--threads", str(args.threads),
                                                                        "-q", fa, str(out)],
            "bwa index": lambda fa, out: ["bwa", "index", "-p", str(out), fa],
        }
        results, rows, data = [], [], {"references": []}
        for fasta in args.fasta:
            ref = read_fastx(fasta)
            bases = ref.total_length
            data["references"].append({"path": fasta, "contigs": len(ref), "bases": bases})
            plain = work / (Path(fasta).name.removesuffix(".gz") + ".plain.fa")
            with _text_handle(fasta) as src, open(plain, "w") as dst:  # peers get the same plain FASTA
                shutil.copyfileobj(src, dst)
            for label, make in builders.items():
                tool = make("x", "y")[0]
                if tool != sys.executable and shutil.which(tool, path=env.get("PATH")) is None:
                    continue
                out = work / f"{plain.stem}.{label.split()[0]}"
                print(f"  index: {label} on {Path(fasta).name} ...", file=sys.stderr, flush=True)
                proc = harness.run_process(make(str(plain), out), env=env)
                disk = _dir_bytes(out.with_suffix(".gseek")) if label == "gseek index" else sum(
                    _dir_bytes(f) for f in work.glob(out.name + ".*"))
                results.append({"tool": label, "fasta": fasta, "bases": bases, "seconds": proc.seconds,
                                "cpu_s": proc.cpu_s, "peak_rss_mib": proc.peak_rss_mib, "disk_bytes": disk})
                rows.append([label, Path(fasta).name, f"{bases / 1e6:.1f}", f"{proc.seconds:.1f}",
                             f"{proc.cpu_s:.1f}", f"{proc.peak_rss_mib:.0f}",
                             f"{proc.peak_rss_mib * 2**20 / bases:.1f}", f"{disk / bases:.2f}"])
        table = markdown_table(
            ["build", "reference", "Mbp", "wall s", "CPU s", "peak RSS MiB", "peak B/base", "disk B/base"],
            rows, align="llrrrrrr")

        search_rows = []
        last = args.fasta[-1]
        index_dir = work / (Path(last).name.removesuffix(".gz") + ".plain.gseek")
        for device in [d.strip() for d in args.devices.split(",") if d.strip()]:
            if device == "gpu" and harness.gpu_name() == "none":
                continue
            spec = {"task": "index_search", "index": str(index_dir), "fasta": last, "device": device,
                    "threads": args.threads, "patterns": args.patterns, "length": args.length,
                    "repeat": args.repeat, "seed": 1}
            print(f"  index: search on {device} ...", file=sys.stderr, flush=True)
            answer, proc = run_worker(spec)
            c, l = Timing(answer["count_times"]), Timing(answer["locate_times"])
            results.append({"search": device, **answer, "peak_rss_mib": proc.peak_rss_mib})
            search_rows.append([answer["backend"], f"{answer['load_s']:.2f}",
                                f"{args.patterns / c.median / 1e6:.1f}",
                                f"{answer['occurrences'] / l.median / 1e6:.1f}",
                                f"{answer['occurrences'] / args.patterns:.2f}"])
        if search_rows:
            table += "\n\nSearch on the index of `" + Path(last).name + f"`: {args.patterns:,} {args.length}-mers " \
                     "sampled from the reference (seed 1), one batch, numpy in / numpy out (transfers included)\n\n"
            table += markdown_table(["backend", "load + upload s", "count M patterns/s", "locate M occ/s",
                                     "occ per pattern"], search_rows, align="lrrrr")
        notes = [
            "builds run as subprocesses on the same plain FASTA, one after the other; wall and CPU time and the "
            "process's own peak RSS from os.wait4; disk = bytes of the index files",
            f"count and locate: median of {args.repeat} repeats after a 1,000-pattern warm-up; locate includes "
            "the count pass and the sort by (pattern, position)",
        ]
        data["summary"] = ", ".join(f"{Path(r['path']).name} ({r['contigs']} contigs, {r['bases']:,} bp)"
                                    for r in data["references"])
        return Report(title="Index build and exact search", data=data, table=table, notes=notes, results=results)
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ----------------------------------------------------------------------- map


def _map_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("fasta", nargs="+", help="reference FASTA files (plain or .gz)")
    p.add_argument("--reads", type=int, default=1_000_000, help="simulated reads per reference (default 1M)")
    p.add_argument("--length", type=int, default=100, help="read length (default 100)")
    p.add_argument("-v", "--mismatches", type=int, default=3, help="k (default 3); reads carry 0..k substitutions")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="threads for peers and the CPU backend")
    p.add_argument("--devices", default="gpu,cpu", help="gseek backends to time (default gpu,cpu)")
    p.add_argument("--peers", default="bowtie-best,bowtie-all,bwa-aln",
                   help="peers to run: bowtie-best, bowtie-all, bwa-aln (default all)")
    p.add_argument("--all", action="store_true", help="also time gseek --all")


def _sam_stats(path: Path) -> dict:
    """Mapped reads and records of a SAM file (samtools-free, for agreement checks)."""
    mapped, records, reads = set(), 0, set()
    with open(path) as fh:
        for line in fh:
            if line.startswith("@"):
                continue
            name, flag = line.split("\t", 2)[:2]
            records += 1
            reads.add(name)
            if not int(flag) & 4:
                mapped.add(name)
    return {"records": records, "reads": len(reads), "mapped": len(mapped)}


@benchmark("map", "k-mismatch read mapping, whole command (FASTQ in, SAM out): gseek vs bowtie vs bwa aln",
           _map_options)
def bench_map(args: argparse.Namespace) -> Report:
    import shutil

    from gseek.datasets.simulate import kmismatch_reads

    work = Path(tempfile.mkdtemp(prefix="gseek-map-bench-"))
    try:
        env = dict(os.environ)
        try:
            env = harness.peer_env()
        except Exception as exc:
            print(f"  map: peers unavailable ({exc}); gseek only", file=sys.stderr)
        have = lambda tool: shutil.which(tool, path=env.get("PATH")) is not None  # noqa: E731
        k, T = args.mismatches, str(args.threads)
        results, rows, data = [], [], {"references": []}
        for fasta in args.fasta:
            name = Path(fasta).name.removesuffix(".gz")
            plain = work / (name + ".plain.fa")
            with _text_handle(fasta) as src, open(plain, "w") as dst:
                shutil.copyfileobj(src, dst)
            t0 = time.perf_counter()
            sim = kmismatch_reads(str(plain), args.reads, args.length, k, seed=7, both_strands=True)
            reads = work / f"{name}.reads.fq"
            sim.write(reads)
            print(f"  map: {args.reads:,} reads simulated in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            data["references"].append({"path": fasta, "reads": args.reads, "length": args.length, "k": k})
            runs = []
            harness.run_process([sys.executable, "-P", "-m", "gseek", "--quiet", "index", str(plain),
                                 "-o", str(work / name)], env=env)
            for device in [d.strip() for d in args.devices.split(",") if d.strip()]:
                if device == "gpu" and harness.gpu_name() == "none":
                    continue
                base = [sys.executable, "-P", "-m", "gseek", "--quiet", "--device", device, "-p", T, "search",
                        "-x", str(work / name), "-q", str(reads), "-v", str(k)]
                runs.append((f"gseek --device {device} -v {k}", base + ["-o", str(work / f"g-{device}.sam")],
                             work / f"g-{device}.sam"))
                if args.all:
                    runs.append((f"gseek --device {device} -v {k} --all",
                                 base + ["--all", "-o", str(work / f"ga-{device}.sam")], work / f"ga-{device}.sam"))
            peers = {p.strip() for p in args.peers.split(",") if p.strip()}
            if have("bowtie") and peers & {"bowtie-best", "bowtie-all"}:
                harness.run_process(["bowtie-build", "--threads", T, "-q", str(plain), str(work / "bt")], env=env)
                if "bowtie-best" in peers:
                    runs.append((f"bowtie -p {T} -v {k} --best", ["bowtie", "-p", T, "-v", str(k), "--best", "-S",
                                 str(work / "bt"), str(reads), str(work / "bt.sam")], work / "bt.sam"))
                if "bowtie-all" in peers:
                    runs.append((f"bowtie -p {T} -v {k} -a", ["bowtie", "-p", T, "-v", str(k), "-a", "-S",
                                 str(work / "bt"), str(reads), str(work / "bta.sam")], work / "bta.sam"))
            if have("bwa") and "bwa-aln" in peers:
                harness.run_process(["bwa", "index", "-p", str(work / "bwa"), str(plain)], env=env)
                runs.append((f"bwa aln -t {T} -n {k} -o 0 + samse", ["bash", "-c",
                             f"bwa aln -t {T} -n {k} -o 0 {work / 'bwa'} {reads} > {work / 'r.sai'} && "
                             f"bwa samse {work / 'bwa'} {work / 'r.sai'} {reads} > {work / 'bwa.sam'}"],
                             work / "bwa.sam"))
            base_time = None
            for label, cmd, out in runs:
                print(f"  map: {label} on {name} ...", file=sys.stderr, flush=True)
                proc = harness.run_process(cmd, env=env)
                stats = _sam_stats(out)
                out.unlink()
                if label.startswith("bowtie") and "--best" in label:
                    base_time = proc.seconds
                results.append({"tool": label, "reference": fasta, "seconds": proc.seconds, "cpu_s": proc.cpu_s,
                                "peak_rss_mib": proc.peak_rss_mib, **stats})
            for r in results[-len(runs):]:
                rows.append([r["tool"], name, f"{r['seconds']:.2f}", f"{r['cpu_s']:.1f}", f"{r['peak_rss_mib']:.0f}",
                             f"{args.reads / r['seconds'] / 1e6:.3f}", f"{r['mapped']:,}", f"{r['records']:,}",
                             ratio(base_time, r["seconds"]) if base_time else "-"])
            (work / (name + ".reads.fq")).unlink()
        table = markdown_table(
            ["command", "reference", "wall s", "CPU s", "peak RSS MiB", "M reads/s", "mapped reads", "SAM records",
             "vs bowtie --best"], rows, align="llrrrrrrr")
        notes = [
            f"{args.reads:,} reads of {args.length} bp per reference simulated with "
            f"gseek.datasets.simulate.kmismatch_reads (seed 7, both strands, 0..{k} substitutions), FASTQ in, "
            "SAM out, whole command wall time from process start (imports, index load, kernel compile included); "
            "indexes built beforehand; each command run once",
            "mapped reads are counted from each SAM; gseek and bowtie report every read with a placement of "
            f"<= {k} mismatches (complete), bwa aln -n {k} -o 0 is a different (seeded, quality-aware) search",
        ]
        data["summary"] = ", ".join(f"{Path(r['path']).name}: {r['reads']:,} × {r['length']} bp, k={r['k']}"
                                    for r in data["references"])
        return Report(title="k-mismatch mapping", data=data, table=table, notes=notes, results=results)
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ----------------------------------------------------------------- map-pairs


def _pairs_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("fasta", nargs="+", help="reference FASTA files (plain or .gz)")
    p.add_argument("--pairs", type=int, default=5_000_000, help="simulated pairs per reference (default 5M)")
    p.add_argument("--length", type=int, default=100, help="mate length (default 100)")
    p.add_argument("-v", "--mismatches", type=int, default=3, help="k (default 3); each mate carries 0..k substitutions")
    p.add_argument("-I", "--minins", type=int, default=0, help="shortest concordant fragment, both tools (default 0)")
    p.add_argument("-X", "--maxins", type=int, default=500, help="longest concordant fragment, both tools (default 500)")
    p.add_argument("--fragment", default="250,30", help="fragment length mean,sd (clipped to -I..-X; default 250,30)")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="-p of both tools")
    p.add_argument("--devices", default="gpu", help="gseek backends to time (default gpu)")
    p.add_argument("--warm", type=int, default=1, help="further gseek runs after the first (default 1)")
    p.add_argument("--gzip", action="store_true", help="write the FASTQ gzipped (level 1)")
    p.add_argument("--no-peers", action="store_true", help="skip bowtie")
    p.add_argument("--best", action="store_true", help="bowtie --best (default: bowtie's default, any valid pair)")


def _concordant_records(spec: tuple[str, int, int, dict[bytes, int]]):
    """The primary records with FLAG 0x2 among the lines of a SAM that start in bytes [lo, hi).

    Returns (records seen, int64 array of rows: pair, mate, contig, 0-based
    pos, reverse, NM). Pair names are ``pN`` (a ``/1``, ``/2`` is dropped).
    """
    import numpy as np

    path, lo, hi, ctg_id = spec
    rows, records = [], 0
    with open(path, "rb") as fh:
        at = lo
        if lo > 0:  # the line that holds byte lo-1 belongs to the chunk before
            fh.seek(lo - 1)
            at = lo - 1 + len(fh.readline())
        while at < hi:
            line = fh.readline()
            if not line:
                break
            at += len(line)
            if line[:1] == b"@":
                continue
            records += 1
            qname, flag, rname, pos, _ = line.split(b"\t", 4)
            flag = int(flag)
            if flag & 0x102 != 0x2:
                continue
            j = line.find(b"\tNM:i:") + 6
            e = line.find(b"\t", j)
            rows.append((int(qname[1:-2] if qname[-2:-1] == b"/" else qname[1:]), (flag >> 7) & 1,
                         ctg_id.get(rname, -2), int(pos) - 1, (flag >> 4) & 1, int(line[j:e] if e > 0 else line[j:])))
    return records, np.array(rows, dtype=np.int64).reshape(-1, 6)


def _pair_truth(sam: Path, truth: dict, processes: int = 1) -> dict:
    """Concordant pairs reported in ``sam`` (primary records with FLAG 0x2) against the planted truth.

    at_truth: both mates at their true contig, position and strand;
    elsewhere_as_good: another concordant pair with no more mismatches in all
    (NM of both mates) than the planted ones (a repeat); worse: another pair
    with more; missed: worse or none reported (a complete mapper has none).
    The file is read in ``processes`` byte ranges at once.
    """
    import multiprocessing

    import numpy as np

    n = truth["contig"].size
    ctg_id = {name.encode(): i for i, name in enumerate(truth["contig_names"])}
    size = sam.stat().st_size
    parts = max(1, min(processes, size // (1 << 20) + 1))
    bounds = [size * p // parts for p in range(parts + 1)]
    specs = [(str(sam), bounds[p], bounds[p + 1], ctg_id) for p in range(parts)]
    if parts == 1:
        answers = [_concordant_records(specs[0])]
    else:
        with multiprocessing.get_context("fork").Pool(parts) as pool:
            answers = pool.map(_concordant_records, specs)
    rows = np.concatenate([a[1] for a in answers])
    got = np.full((6, 2, n), -1, dtype=np.int64)
    got[:, rows[:, 1], rows[:, 0]] = rows.T
    got_ctg, got_pos, got_rev, got_nm = got[2], got[3], got[4], got[5]
    concordant = (got_ctg >= 0).all(axis=0)
    at_truth = concordant & ((got_ctg == truth["contig"]) & (got_pos == truth["pos"])
                             & (got_rev == truth["reverse"])).all(axis=0)
    planted = truth["mismatches"].sum(axis=0, dtype=np.int64)
    elsewhere = concordant & ~at_truth
    as_good = elsewhere & (got_nm.sum(axis=0) <= planted)
    return {"records": sum(a[0] for a in answers), "concordant": int(concordant.sum()),
            "at_truth": int(at_truth.sum()), "elsewhere_as_good": int(as_good.sum()),
            "worse": int((elsewhere & ~as_good).sum()), "not_concordant": int((~concordant).sum()),
            "missed": int((~concordant | (elsewhere & ~as_good)).sum())}


def _share(x: int, n: int) -> str:
    return f"{x:,} ({100 * x / n:.2f}%)"


def _same_records(a: Path, b: Path) -> bool:
    """Two SAM files alike but for their @PG lines (whose CL names the output)."""
    with open(a, "rb") as fa, open(b, "rb") as fb:
        heads = []
        for fh in (fa, fb):
            head = []
            while (line := fh.readline()).startswith(b"@"):
                head.append(line)
            heads.append(([x for x in head if not x.startswith(b"@PG")], line))
        if heads[0] != heads[1]:
            return False
        while True:
            x, y = fa.read(1 << 24), fb.read(1 << 24)
            if x != y:
                return False
            if not x:
                return True


@benchmark("map-pairs", "paired-end k-mismatch mapping, whole command (R1/R2 FASTQ in, SAM out): gseek vs "
           "bowtie -1 -2, checked against the planted pairs", _pairs_options)
def bench_map_pairs(args: argparse.Namespace) -> Report:
    """Paired-end mapping of simulated ``--fr`` pairs with exact truth: gseek vs bowtie 1 (issue 18).

        python benchmarks/run.py map-pairs ecoli.fa.gz bacteria75.fa.gz --threads 16   # 5M pairs each
        python benchmarks/run.py map-pairs ecoli.fa.gz --pairs 20000 --devices cpu --threads 2  # smoke run

    Per reference: pairs simulated (``datagen.kmismatch_pairs_fastq``), both
    indexes built (untimed), then whole commands timed: ``gseek search -1 -2
    -v k -I -X`` (first run, then ``--warm`` more) and ``bowtie -v k -I -X -S
    -1 -2``. Each SAM's concordant pairs are checked against the truth.
    """
    import shutil

    import datagen

    mean, sd = (float(x) for x in args.fragment.split(","))
    work = Path(tempfile.mkdtemp(prefix="gseek-pairs-bench-"))
    try:
        env = dict(os.environ)
        if not args.no_peers:
            try:
                env = harness.peer_env()
            except RuntimeError as exc:
                print(f"  map-pairs: peers unavailable ({exc}); gseek only", file=sys.stderr)
        bowtie = not args.no_peers and shutil.which("bowtie", path=env.get("PATH")) is not None
        k, T, n = args.mismatches, str(args.threads), args.pairs
        ins = ["-I", str(args.minins), "-X", str(args.maxins)]

        def stage(what: str, t0: float) -> None:
            print(f"  map-pairs: {what} in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)

        results, rows, summary, cross, data = [], [], [], [], {"references": []}
        for fasta in args.fasta:
            name = Path(fasta).name.removesuffix(".gz")
            plain = work / (name + ".plain.fa")
            t0 = time.perf_counter()
            with _text_handle(fasta) as src, open(plain, "w") as dst:
                shutil.copyfileobj(src, dst)
            suffix = ".fq.gz" if args.gzip else ".fq"
            r1, r2 = work / f"{name}_1{suffix}", work / f"{name}_2{suffix}"
            truth = datagen.kmismatch_pairs_fastq(plain, n, args.length, k, r1, r2, fragment=(mean, sd),
                                                  bounds=(args.minins, args.maxins), compress=args.gzip)
            stage(f"{n:,} pairs of {name} simulated and written", t0)
            frag = truth["fragment"]
            data["references"].append({"path": fasta, "pairs": n, "length": args.length, "k": k,
                                       "fragment": [int(frag.min()), float(frag.mean()), int(frag.max())]})
            t0 = time.perf_counter()
            harness.run_process([sys.executable, "-P", "-m", "gseek", "--quiet", "index", str(plain),
                                 "-o", str(work / name)], env=env)
            stage("gseek index built", t0)
            first, warm, peer = [], [], []  # (label, kind, run, command, output)
            for device in [d.strip() for d in args.devices.split(",") if d.strip()]:
                if device == "gpu" and harness.gpu_name() == "none":
                    print("  map-pairs: no GPU here; --device gpu skipped", file=sys.stderr)
                    continue
                cmd = [sys.executable, "-P", "-m", "gseek", "--quiet", "--device", device, "-p", T, "search",
                       "-x", str(work / name), "-1", str(r1), "-2", str(r2), "-v", str(k), *ins]
                label = f"gseek --device {device} -p {T} -v {k} -I {args.minins} -X {args.maxins}"
                out = work / f"g-{device}.sam"
                first.append((label, f"gseek-{device}", 0, cmd + ["-o", str(out)], out))
                for w in range(args.warm):
                    wout = work / f"g-{device}-warm.sam"
                    warm.append((label, f"gseek-{device}", w + 1, cmd + ["-o", str(wout)], wout))
            if bowtie:
                t0 = time.perf_counter()
                harness.run_process(["bowtie-build", "--threads", T, "-q", str(plain), str(work / "bt")], env=env)
                stage(f"bowtie-build --threads {T} done", t0)
                best = ["--best"] if args.best else []
                label = f"bowtie -p {T} -v {k}{' --best' if args.best else ''} -I {args.minins} -X {args.maxins}"
                peer.append((label, "bowtie", 0,
                             ["bowtie", "-p", T, "-v", str(k), *best, *ins, "-S", str(work / "bt"),
                              "-1", str(r1), "-2", str(r2), str(work / "bt.sam")], work / "bt.sam"))
            runs = first + peer + warm  # gseek's first runs, bowtie, then gseek's warm runs
            first_out: dict[str, Path] = {}
            by_kind: dict[str, list[dict]] = {}
            for label, kind, rep, cmd, out in runs:
                print(f"  map-pairs: {label} on {name}{' (warm)' if rep else ''} ...", file=sys.stderr, flush=True)
                proc = harness.run_process(cmd, env=env)
                print(f"  map-pairs: ... {proc.seconds:.2f} s", file=sys.stderr, flush=True)
                r = {"tool": label, "kind": kind, "run": rep, "reference": fasta, "pairs": n, "seconds": proc.seconds,
                     "cpu_s": proc.cpu_s, "peak_rss_mib": proc.peak_rss_mib}
                if rep == 0:
                    t0 = time.perf_counter()
                    r.update(_pair_truth(out, truth, args.threads))
                    stage(f"truth check of {out.name}", t0)
                    first_out[kind] = out
                else:
                    r["same_sam_as_first"] = _same_records(first_out[kind], out)
                    out.unlink()
                results.append(r)
                by_kind.setdefault(kind, []).append(r)
            gseeks = sorted(kind for kind in first_out if kind.startswith("gseek-"))
            if len(gseeks) > 1:  # the backends must agree (docs/sam.md): the SAM but for @PG
                same = all(_same_records(first_out[gseeks[0]], first_out[g]) for g in gseeks[1:])
                cross.append(f"{name}: SAM of {', '.join(gseeks)} " + ("identical" if same else "DIFFER") +
                             " (but for @PG)")
            for out in first_out.values():
                out.unlink()
            bt_s = by_kind["bowtie"][0]["seconds"] if "bowtie" in by_kind else None
            for r in results[-len(runs):]:
                check = by_kind[r["kind"]][0]
                rows.append([r["tool"] + (f" (warm {r['run']})" if r["run"] else ""), name, f"{r['seconds']:.2f}",
                             f"{r['cpu_s']:.1f}", f"{r['peak_rss_mib']:.0f}",
                             ratio(bt_s, r["seconds"]) if bt_s else "-",
                             _share(check["concordant"], n) if not r["run"] else
                             ("same SAM" if r["same_sam_as_first"] else "SAM differs!"),
                             _share(check["at_truth"], n) if not r["run"] else "",
                             f"{check['elsewhere_as_good']:,}" if not r["run"] else "",
                             f"{check['missed']:,}" if not r["run"] else ""])
            for kind, rs in by_kind.items():
                if kind == "bowtie":
                    continue
                cold, again = rs[0], rs[1:]
                warm_s = sorted(x["seconds"] for x in again)[len(again) // 2] if again else None
                b = by_kind.get("bowtie", [None])[0]
                summary.append([name, f"{n:,}", kind.removeprefix("gseek-"),
                                f"{bt_s:.2f}" if bt_s else "-", f"{cold['seconds']:.2f}",
                                f"{warm_s:.2f}" if warm_s else "-",
                                (ratio(bt_s, cold["seconds"]) + (f" / {ratio(bt_s, warm_s)}" if warm_s else ""))
                                if bt_s else "-",
                                f"{100 * b['at_truth'] / n:.2f}%" if b else "-",
                                f"{100 * cold['at_truth'] / n:.2f}%", f"{cold['missed']:,}"])
            for f in (r1, r2, plain):
                f.unlink()
        table = markdown_table(
            ["reference", "pairs", "gseek device", "bowtie s", "gseek s (first)", "gseek s (warm)",
             "speed-up first / warm", "bowtie at truth", "gseek at truth", "gseek missed"],
            summary, align="lrlrrrrrrr")
        table += "\n\nEvery command:\n\n" + markdown_table(
            ["command", "reference", "wall s", "CPU s", "peak RSS MiB", "vs bowtie", "concordant pairs",
             "both mates at truth", "elsewhere, as good", "missed"], rows, align="llrrrrrrrr")
        notes = [
            (f"{n:,} pairs of {args.length} bp per reference: fragments normal (mean {mean:g}, sd {sd:g}) clipped to "
            f"[max(I, {args.length + 1}), X] = [{max(args.minins, args.length + 1)}, {args.maxins}], uniform over "
            "the N-free stretches, either strand; mate 1 forward from the fragment's start, mate 2 reverse "
            f"complement from its end (--fr); each mate 0..{k} substitutions; quality 'I' "
            "(benchmarks/datagen.py kmismatch_pairs_fastq, seed 11); FASTQ ") + ("gzip level 1" if args.gzip else
                                                                                 "plain"),
            ("whole command wall time from process start (imports, index load, kernel compile included); indexes "
            "built beforehand; gseek's first run, then bowtie, then the warm runs; both get -I/-X explicitly"),
            ("truth: primary records with FLAG 0x2 (concordant); 'at truth' = both mates at their planted "
            "contig, position and strand; 'elsewhere, as good' = another concordant pair with no more "
            "mismatches (NM of both mates) than planted (a repeat); 'missed' = no concordant pair or a worse "
            "one — a complete best-pair mapper misses none") + ("" if args.best else
                                                               "; bowtie without --best reports any valid pair"),
        ]
        notes += cross
        data["summary"] = ", ".join(
            f"{Path(r['path']).name}: {r['pairs']:,} pairs × 2 × {r['length']} bp, k={r['k']}, fragment "
            f"{r['fragment'][0]}..{r['fragment'][2]} (mean {r['fragment'][1]:.0f})" for r in data["references"])
        return Report(title="Paired-end k-mismatch mapping", data=data, table=table, notes=notes, results=results)
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ------------------------------------------------------------------- map-bam

#: Output kinds of ``map-bam``: name -> (file suffix, extra gseek options).
BAM_FORMATS = {"sam": (".sam", []), "bam": (".bam", []), "bam-unsorted": (".bam", ["--no-sort"]),
               "sam.gz": (".sam.gz", []), "bam-l6": (".bam", ["--compression-level", "6"])}


def _bam_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("fasta", help="reference FASTA (plain or .gz)")
    p.add_argument("--reads", type=int, default=10_000_000, help="simulated reads (default 10M)")
    p.add_argument("--length", type=int, default=100, help="read length (default 100)")
    p.add_argument("-v", "--mismatches", type=int, default=3, help="k (default 3); reads carry 0..k substitutions")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="gseek -p (mapping, compression, sorting)")
    p.add_argument("--devices", default="gpu", help="gseek backends to time (default gpu)")
    p.add_argument("--formats", default="sam,bam",
                   help=f"outputs to time, in this order each repeat: {', '.join(BAM_FORMATS)} (default sam,bam)")
    p.add_argument("--repeat", type=int, default=2, help="rounds over the formats (default 2)")


def _samtools(args: list[str], env: dict[str, str]) -> str:
    import subprocess

    proc = subprocess.run(["samtools", *args], env=env, capture_output=True, text=True, check=False)
    if proc.returncode:
        raise RuntimeError(f"samtools {shlex.join(args)} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def _check_bam(bam: Path, sam_records: int, region: tuple[str, int, int], sam: Path | None, sorted_: bool,
               env: dict[str, str]) -> dict:
    """samtools' view of a BAM: quickcheck, record count, sort order, index, idxstats, one region query."""
    _samtools(["quickcheck", "-v", str(bam)], env)
    out = {"quickcheck": True, "records": int(_samtools(["view", "-c", str(bam)], env))}
    out["same_count_as_sam"] = out["records"] == sam_records
    header = _samtools(["view", "-H", str(bam)], env)
    out["SO"] = re.search(r"SO:(\S+)", header).group(1) if "SO:" in header else "-"
    if sorted_:
        out["bai"] = Path(str(bam) + ".bai").is_file()
        stats = [line.split("\t") for line in _samtools(["idxstats", str(bam)], env).splitlines()]
        out["idxstats_records"] = sum(int(s[2]) + int(s[3]) for s in stats)
        name, lo, hi = region
        out["region"] = f"{name}:{lo}-{hi}"
        out["region_records"] = int(_samtools(["view", "-c", str(bam), out["region"]], env))
        if sam is not None:  # the same records of the SAM, by samtools' filter expression
            expr = f'rname=="{name}" && pos<={hi} && endpos>={lo}'
            out["region_records_sam"] = int(_samtools(["view", "-c", "-e", expr, str(sam)], env))
    ok = out["same_count_as_sam"] and (not sorted_ or (
        out["SO"] == "coordinate" and out["bai"] and out["idxstats_records"] == sam_records
        and out["region_records"] > 0 and out["region_records"] == out.get("region_records_sam", out["region_records"])))
    out["ok"] = bool(ok)
    return out


@benchmark("map-bam", "k-mismatch mapping to SAM vs sorted, indexed BAM in one run: the BAM's cost (issue 18), "
           "checked with samtools", _bam_options)
def bench_map_bam(args: argparse.Namespace) -> Report:
    """Time ``gseek search -o x.sam`` against ``-o x.bam`` (sorted + .bai) on the same reads (issue 18).

        python benchmarks/run.py map-bam ecoli.fa.gz --threads 16                 # 10M reads, SAM vs BAM
        python benchmarks/run.py map-bam ecoli.fa.gz --reads 50000 --devices cpu  # smoke run

    The reads are both mates of ``datagen.kmismatch_pairs_fastq`` pairs (seed 7,
    vectorised; mate 2 reverse-complemented), as single reads, the index built beforehand; each round runs every format once, in order, and
    the table gives each run, the best, and the best BAM over the best SAM.
    The first output of each format is checked with samtools: ``quickcheck``,
    ``view -c`` equal to the SAM's records, ``SO:coordinate``, the ``.bai``,
    ``idxstats`` and one region query (against the SAM's records there).
    """
    import shutil

    import datagen

    from gseek.seqio import read_fastx

    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    if unknown := [f for f in formats if f not in BAM_FORMATS]:
        raise SystemExit(f"map-bam: unknown format(s) {', '.join(unknown)}; choose from {', '.join(BAM_FORMATS)}")
    work = Path(tempfile.mkdtemp(prefix="gseek-bam-bench-"))
    try:
        env = dict(os.environ)
        try:
            env = harness.peer_env()
        except RuntimeError as exc:
            print(f"  map-bam: peers unavailable ({exc}); no samtools checks", file=sys.stderr)
        samtools = shutil.which("samtools", path=env.get("PATH")) is not None
        k, T = args.mismatches, str(args.threads)
        name = Path(args.fasta).name.removesuffix(".gz")
        t0 = time.perf_counter()
        reads = work / f"{name}.reads.fq"
        # the mates of vectorised pairs, as single reads (kmismatch_reads takes ~100 s for 10M)
        half = work / "mates2.fq"
        datagen.kmismatch_pairs_fastq(args.fasta, (args.reads + 1) // 2, args.length, k, reads, half, seed=7)
        with open(reads, "ab") as dst, open(half, "rb") as src:
            shutil.copyfileobj(src, dst, 1 << 24)
        half.unlink()
        print(f"  map-bam: {args.reads:,} reads simulated and written in {time.perf_counter() - t0:.1f} s",
              file=sys.stderr, flush=True)
        ref = read_fastx(args.fasta)
        longest = int(ref.lengths.argmax())
        region = (ref.name(longest), 1, min(int(ref.lengths[longest]), 100_000))
        del ref
        t0 = time.perf_counter()
        harness.run_process([sys.executable, "-P", "-m", "gseek", "--quiet", "index", args.fasta,
                             "-o", str(work / name)], env=env)
        print(f"  map-bam: gseek index built in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
        results, rows, summary = [], [], []
        for device in [d.strip() for d in args.devices.split(",") if d.strip()]:
            if device == "gpu" and harness.gpu_name() == "none":
                print("  map-bam: no GPU here; --device gpu skipped", file=sys.stderr)
                continue
            base = [sys.executable, "-P", "-m", "gseek", "--quiet", "--device", device, "-p", T, "search",
                    "-x", str(work / name), "-q", str(reads), "-v", str(k)]
            times: dict[str, list[dict]] = {f: [] for f in formats}
            kept: dict[str, Path] = {}
            for rep in range(args.repeat):
                for fmt in formats:
                    suffix, extra = BAM_FORMATS[fmt]
                    out = work / f"{device}-{fmt}-{rep}{suffix}"
                    print(f"  map-bam: {device} -o {fmt} (round {rep + 1}) ...", file=sys.stderr, flush=True)
                    proc = harness.run_process(base + extra + ["-o", str(out)], env=dict(env, GSEEK_TRACE_BAM="1"))
                    size = out.stat().st_size
                    stamps = {m.group(2): float(m.group(1)) for m in re.finditer(
                        r"\[gseek trace\] ([0-9.]+) (bam [a-z ]+?) \d*$", proc.stderr, re.M)}
                    tail = stamps["bam child done"] - stamps["bam text end"] if len(stamps) == 3 else None
                    print(f"  map-bam: ... {proc.seconds:.2f} s, {size / 2**20:,.0f} MiB"
                          + (f", samtools after the last record {tail:.2f} s" if tail is not None else ""),
                          file=sys.stderr, flush=True)
                    times[fmt].append({"seconds": proc.seconds, "cpu_s": proc.cpu_s, "peak_rss_mib": proc.peak_rss_mib,
                                       "bytes": size, "htslib_tail_s": tail})
                    if rep == 0:
                        kept[fmt] = out
                    else:
                        out.unlink()
                        Path(str(out) + ".bai").unlink(missing_ok=True)
            checks: dict[str, dict] = {}
            if samtools:
                t0 = time.perf_counter()
                sam = kept.get("sam")
                sam_records = (int(_samtools(["view", "-c", str(sam)], env)) if sam else args.reads)
                for fmt, out in kept.items():
                    if fmt.startswith("bam"):
                        checks[fmt] = _check_bam(out, sam_records, region, sam, fmt in ("bam", "bam-l6"), env)
                print(f"  map-bam: samtools checks in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
            for out in kept.values():
                out.unlink()
                Path(str(out) + ".bai").unlink(missing_ok=True)
            best = {f: min(t["seconds"] for t in ts) for f, ts in times.items()}
            sam_best = best.get("sam")
            for fmt, ts in times.items():
                c = checks.get(fmt)
                check = "-" if c is None else (
                    ("ok: " if c["ok"] else "FAILED: ") + f"{c['records']:,} records, SO:{c['SO']}"
                    + (f", .bai, idxstats {c['idxstats_records']:,}, {c['region']} {c['region_records']:,}"
                       f" (SAM {c.get('region_records_sam', '?'):,})" if "bai" in c else ""))
                rows.append([f"gseek --device {device} -o x.{BAM_FORMATS[fmt][0].lstrip('.')}"
                             + "".join(f" {x}" for x in BAM_FORMATS[fmt][1]),
                             " / ".join(f"{t['seconds']:.2f}" for t in ts), f"{best[fmt]:.2f}",
                             f"{min(t['cpu_s'] for t in ts):.1f}", f"{max(t['peak_rss_mib'] for t in ts):.0f}",
                             f"{ts[0]['bytes'] / 2**20:,.0f}",
                             f"{best[fmt] / sam_best:.2f}" if sam_best else "-",
                             " / ".join(f"{t['htslib_tail_s']:.2f}" for t in ts if t.get("htslib_tail_s") is not None)
                             or "-", check])
                results.append({"device": device, "format": fmt, "runs": ts, "best_s": best[fmt],
                                "vs_sam": best[fmt] / sam_best if sam_best else None, "check": c})
            if sam_best and "bam" in best:
                summary.append(f"{device}: sorted BAM / SAM = {best['bam'] / sam_best:.2f} (goal <= 1.5)")
        table = markdown_table(["command", "wall s, each round", "best s", "CPU s (best)", "peak RSS MiB", "MiB",
                                "time / SAM's", "samtools after the last record, s", "samtools check"], rows,
                               align="lrrrrrrrl")
        if summary:
            table += "\n\n" + "; ".join(summary)
        notes = [
            (f"{args.reads:,} reads of {args.length} bp: both mates of benchmarks/datagen.py kmismatch_pairs_fastq "
            f"pairs (seed 7, fragments from either strand, 0..{k} substitutions per mate) as single reads; -v {k}, -p {T}; whole command wall time from process "
            "start; index built beforehand; each round runs the formats in the order shown; time / SAM's = best "
            "over best"),
            ("BAM: coordinate-sorted and indexed by gseek (the .bai written beside it); bam-unsorted = --no-sort; "
            "checks: samtools quickcheck, view -c equal to the SAM's records, @HD SO, the .bai, idxstats total, "
            "view -c of a region against samtools view -c -e (same region) on the SAM"),
        ]
        data = {"summary": f"{Path(args.fasta).name}: {args.reads:,} × {args.length} bp, k={k}"}
        return Report(title="SAM vs sorted BAM output", data=data, table=table, notes=notes, results=results)
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ------------------------------------------------------------------ startup


def _startup_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reads", type=int, default=1000, help="reads of the small search (default 1,000 lambda reads)")
    p.add_argument("--devices", default="cpu,gpu", help="backends to time (default cpu,gpu; gpu skipped without one)")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="gseek -p")
    p.add_argument("--compile", action="store_true", help="also time `gseek compile` cold and the search after it")
    p.add_argument("--no-prebuilt", action="store_true",
                   help="also time the search with the prebuilt machine code off (GSEEK_PREBUILT=0): cold and warm")
    p.add_argument("--demo", action="store_true", help="also time `gseek demo` with empty caches")
    p.add_argument("--no-cubins", action="store_true",
                   help="also time the GPU search with the shipped cubins off (GSEEK_CUBINS=0): cold and warm")
    p.add_argument("--no-cupy-cache", action="store_true",
                   help="also time the GPU search cold with the shipped CuPy kernels off (GSEEK_CUPY_CACHE=0)")


@benchmark("startup", "the first command after an install (empty Numba and CuPy caches) and the same again warm",
           _startup_options)
def bench_startup(args: argparse.Namespace) -> Report:
    """A small ``gseek search`` in fresh processes: cold (empty caches), warm, and after ``gseek compile``."""
    import shutil

    from gseek.datasets import lambda_genome, lambda_reads

    work = Path(tempfile.mkdtemp(prefix="gseek-startup-bench-"))
    try:
        reads = work / "reads.fq"
        lines = Path(lambda_reads()).read_text().splitlines()
        reads.write_text("\n".join(lines[: 4 * min(args.reads, len(lines) // 4)]) + "\n")
        gseek = [sys.executable, "-P", "-m", "gseek", "--quiet", "-p", str(args.threads)]
        env = dict(os.environ, NUMBA_CACHE_DIR=str(work / "index-cache"))
        harness.run_process(gseek + ["--device", "cpu", "index", str(lambda_genome()), "-o", str(work / "lam")],
                            env=env)
        results, rows = [], []

        def timed(device: str, label: str, cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
            proc = harness.run_process(cmd, env=env, cwd=cwd)
            results.append({"device": device, "run": label, "seconds": proc.seconds, "peak_rss_mib": proc.peak_rss_mib})
            rows.append([device, label, f"{proc.seconds:.2f}"])

        def caches(device: str, kind: str = "", **extra: str) -> dict[str, str]:
            return dict(os.environ, NUMBA_CACHE_DIR=str(work / f"numba{kind}-{device}"),
                        CUPY_CACHE_DIR=str(work / f"cupy{kind}-{device}"), **extra)

        for device in [d.strip() for d in args.devices.split(",") if d.strip()]:
            if device == "gpu" and harness.gpu_name() == "none":
                continue
            search = gseek + ["--device", device, "search", "-x", str(work / "lam"), "-q", str(reads), "-v", "3",
                              "-o", str(work / "out.sam")]
            if args.compile:
                env_c = caches(device, "-c")
                timed(device, "gseek compile (cold)",
                      gseek + ["--device", device, "compile", "--processes", str(min(4, args.threads))], env_c)
                timed(device, "search after gseek compile", search, env_c)
            for label in ("cold (caches empty)", "warm", "warm"):
                timed(device, label, search, caches(device))
            if args.no_prebuilt:  # the same without the shipped machine code: every function compiled
                for label in ("cold, prebuilt off (GSEEK_PREBUILT=0)", "warm, prebuilt off"):
                    timed(device, label, search, caches(device, "-off", GSEEK_PREBUILT="0"))
            if args.no_cubins and device == "gpu":  # the CUDA families compiled by NVRTC, as before the cubins
                for label in ("cold, cubins off (GSEEK_CUBINS=0)", "warm, cubins off"):
                    timed(device, label, search, caches(device, "-nocubin", GSEEK_CUBINS="0"))
            if args.no_cupy_cache and device == "gpu":  # CuPy's own kernels compiled by NVRTC on first use
                timed(device, "cold, shipped CuPy kernels off (GSEEK_CUPY_CACHE=0)", search,
                      caches(device, "-nocupy", GSEEK_CUPY_CACHE="0"))
            if args.demo:
                (work / f"demo-{device}").mkdir()
                timed(device, "gseek demo, cold (caches empty)", gseek + ["--device", device, "demo"],
                      caches(device, "-demo"), cwd=work / f"demo-{device}")
        table = markdown_table(["device", "run", "wall s"], rows, align="llr")
        from gseek.kernels import _cupy_cache
        from gseek.kernels._cuda import cubin_status
        from gseek.kernels._jit import prebuilt_status

        notes = [f"gseek search -v 3 of {args.reads:,} lambda reads on the lambda index, whole command in a fresh "
                 "process; cold: NUMBA_CACHE_DIR and CUPY_CACHE_DIR empty (a fresh install: Numba functions come "
                 "from the shipped prebuilt machine code where it is current, CUDA kernels from the shipped "
                 "cubins where they fit the device, else compiled); the index built beforehand with a cache of "
                 "its own",
                 f"prebuilt machine code: {prebuilt_status()}", f"shipped CUDA machine code: {cubin_status()}",
                 f"shipped CuPy kernels: {_cupy_cache.status()}"]
        return Report(title="Start-up", data={"summary": f"{args.reads:,} reads, lambda"}, table=table, notes=notes,
                      results=results)
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------- blast

#: Query sets: name -> (count, (min, max) length, substitution rate, indel rate); 10% random negatives.
#: ``w1`` is issue 17's workload 1: log-uniform lengths, each query's rates uniform in the ranges,
#: half random negatives (BLAST_SET_EXTRA); ``NAME@N`` names its first N-query variant.
BLAST_SETS = {"500bp": (100, (500, 500), 0.04, 0.004), "10kb": (100, (10_000, 10_000), 0.06, 0.006),
              "mixed": (200, (500, 5000), 0.08, 0.01),
              "w1": (1000, (500, 100_000), (0.01, 0.15), (0.001, 0.015))}
BLAST_SET_EXTRA = {"w1": {"negatives": 0.5, "log_lengths": True}}


def blast_set(db: str, spec: str, seed: int = 11):
    """The query set ``spec`` (a BLAST_SETS name, or ``NAME@N``: N queries of it) simulated from ``db``."""
    from gseek.datasets.simulate import blast_queries

    name, _, count = spec.partition("@")
    n, length, sub, indel = BLAST_SETS[name]
    return blast_queries(db, int(count) if count else n, length, seed=seed, sub_rate=sub, indel_rate=indel,
                         **BLAST_SET_EXTRA.get(name, {}))


def _describe_set(name: str) -> str:
    n, (lo, hi), sub, indel = BLAST_SETS[name]
    extra = BLAST_SET_EXTRA.get(name, {})
    rate = (lambda r, f: f"{r[0]:{f}}-{r[1]:{f}}") if isinstance(sub, tuple) else (lambda r, f: f"{r:{f}}")
    return (f"{name} = {n} x {lo}-{hi} bp{' (log-uniform)' if extra.get('log_lengths') else ''}, "
            f"{rate(sub, '.0%')} subst., {rate(indel, '.1%')} indels, {extra.get('negatives', 0.1):.0%} negatives")


def _blast_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, help="database FASTA (.gz ok), e.g. bacteria75.fa.gz")
    p.add_argument("--sets", default="500bp,10kb",
                   help=f"query sets ({', '.join(BLAST_SETS)}; NAME@N: its first N queries) or FASTA paths")
    p.add_argument("--tasks", default="megablast,blastn", help="tasks to run")
    p.add_argument("--devices", default="gpu", help="gseek backends (cpu,gpu)")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="blastn -num_threads and gseek -p")
    p.add_argument("--warm", type=int, default=1, help="warm gseek repeats after the first (cold-cache) run")
    p.add_argument("--min-recall", type=float, default=0.99, help="recall (e <= 1e-10) needed before timing counts")
    p.add_argument("--index-parts", default="all", choices=["all", "text"],
                   help="gseek index --parts: text = a BLAST-only database (no suffix array)")
    p.add_argument("--work", default=None,
                   help="keep the databases, queries and blastn's outputs here and reuse them in a later run "
                        "(steps whose outputs exist are not redone; their earlier seconds are reported)")
    p.add_argument("--gseek-options", default="", help="further gseek search options, e.g. '--db-volume-size 500M'")


def _reused_step(work: Path, key: str, outputs: list[Path], run: Callable[[], "harness.ProcResult"]) -> dict:
    """Run a step unless its outputs and its record (``work/key.json``) exist; its record either way."""
    record = work / f"{key}.json"
    if record.exists() and all(o.exists() for o in outputs):
        return dict(json.loads(record.read_text()), reused=True)
    proc = run()
    info = {"seconds": proc.seconds, "cpu_s": proc.cpu_s, "peak_rss_mib": proc.peak_rss_mib,
            "command": shlex.join(proc.cmd)}
    record.write_text(json.dumps(info))
    return info


@benchmark("blast", "gseek search --task megablast|blastn against blastn -num_threads N: recall first, then time",
           _blast_options)
def bench_blast(args: argparse.Namespace) -> Report:
    """Each query set and task: blastn (makeblastdb once), then gseek (index once; a first run with empty
    kernel caches and warm repeats); recall of blastn's HSPs with e <= 1e-10 checked before any time counts.
    The warm runs are sampled with nvidia-smi: GPU busy and the peak of GPU memory in use."""
    import shutil

    from gseek.blast.compare import COMPARE_FIELDS, compare_reports

    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="gseek-blast-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        env = harness.peer_env()
        T = str(args.threads)
        db = work / "db.fa"
        if not db.exists():
            with _text_handle(args.db) as src, open(str(db) + ".part", "w") as dst:
                shutil.copyfileobj(src, dst)
            os.replace(str(db) + ".part", db)
        rows, results = [], []
        made = _reused_step(work, "makeblastdb", [work / "db.nal"] if (work / "db.nal").exists() else [work / "db.nsq"],
                            lambda: harness.run_process(["makeblastdb", "-in", str(db), "-dbtype", "nucl",
                                                         "-out", str(work / "db")], env=env))
        results.append(dict(made, step="makeblastdb"))
        gseek = [sys.executable, "-P", "-m", "gseek", "--quiet", "-p", T]
        parts = ["--parts", "text"] if args.index_parts == "text" else []
        indexed = _reused_step(work, "gseek-index", [work / "db.gseek"],
                               lambda: harness.run_process(gseek + ["--device", "cpu", "index", str(db), *parts,
                                                                    "-o", str(work / "db")], env=env))
        results.append(dict(indexed, step=f"gseek index {' '.join(parts)}".strip()))
        rows.append(["(database)", "", f"makeblastdb / gseek index {' '.join(parts)}".strip(),
                     f"{made['seconds']:.1f}", f"{indexed['seconds']:.1f}", "",
                     f"peak RSS {made['peak_rss_mib']:,.0f} / {indexed['peak_rss_mib']:,.0f} MiB"])
        extra = shlex.split(args.gseek_options)
        for spec in [x.strip() for x in args.sets.split(",") if x.strip()]:
            if spec.partition("@")[0] in BLAST_SETS:
                queries = work / f"{spec.replace('@', '-')}.fa"
                if not queries.exists():
                    blast_set(str(db), spec).write(queries)
            else:
                queries = Path(spec)
            for task in [t.strip() for t in args.tasks.split(",") if t.strip()]:
                ref_out = work / f"{queries.stem}.{task}.blastn.tsv"
                peer = _reused_step(work, ref_out.stem, [ref_out], lambda: harness.run_process(
                    ["blastn", "-task", task, "-query", str(queries), "-db", str(work / "db"), "-num_threads", T,
                     "-outfmt", COMPARE_FIELDS, "-out", str(ref_out)], env=env))
                t_blast = peer["seconds"]
                results.append(dict(peer, set=spec, task=task, tool=f"blastn -num_threads {T}"))
                for device in [d.strip() for d in args.devices.split(",") if d.strip()]:
                    if device == "gpu" and harness.gpu_name() == "none":
                        continue
                    caches = {"NUMBA_CACHE_DIR": str(work / f"numba-{device}"),
                              "CUPY_CACHE_DIR": str(work / f"cupy-{device}")}
                    out = work / f"{queries.stem}.{task}.{device}.tsv"
                    cmd = gseek + ["--device", device, "search", "--task", task, "-x", str(work / "db"),
                                   "-q", str(queries), "--outfmt", COMPARE_FIELDS, "-o", str(out), *extra]
                    times, stages, sampled = [], "", {}
                    for rep in range(1 + args.warm):
                        sampler = _GpuSampler(memory=True) if rep == args.warm and device == "gpu" else None
                        try:
                            proc = harness.run_process(cmd, env=dict(env, **caches, GSEEK_BLAST_TIMING="1"))
                        finally:
                            busy = sampler.stop() if sampler else {}
                        if sampler and busy.get("0"):
                            sampled = {"gpu_busy_pct": sum(busy["0"]) / len(busy["0"]),
                                       "gpu_memory_peak_mib": max(sampler.memory.get("0", [0.0])),
                                       "gpu_memory_first_mib": sampler.memory.get("0", [0.0])[0]}
                        times.append(proc.seconds)
                        stages = " ".join(line for line in proc.stderr.splitlines() if "blast stages" in line)
                    cmp = compare_reports(open(out), open(ref_out))
                    ok = cmp["recall"] >= args.min_recall
                    warm = min(times[1:]) if len(times) > 1 else times[0]
                    results.append({"set": spec, "task": task, "tool": f"gseek --device {device}", "first_s": times[0],
                                    "warm_s": warm, "times": times, "stages_last_run": stages,
                                    "peak_rss_mib_last_run": proc.peak_rss_mib, "cpu_s_last_run": proc.cpu_s,
                                    **sampled, "command": shlex.join(cmd),
                                    "compare": {k: v for k, v in cmp.items() if k != "missed"},
                                    "missed": cmp["missed"][:200]})
                    print(f"  {spec} {task} {device}: blastn {t_blast:.2f} s, gseek {times}; {sampled}; {stages}",
                          file=sys.stderr)
                    rows.append([spec, task, f"gseek {device}", f"{t_blast:.2f}", f"{times[0]:.2f} / {warm:.2f}",
                                 f"{t_blast / warm:.2f}x" if ok else "recall too low",
                                 f"{cmp['recall']:.4f} ({cmp['found']}/{cmp['expected']}), bits {cmp['bits_within_1']:.3f}, "
                                 f"e {cmp['evalue_within_5pct']:.3f}, extra {cmp['extra']:.3f}"
                                 + (f"; GPU busy {sampled['gpu_busy_pct']:.0f}%, GPU memory peak "
                                    f"{sampled['gpu_memory_peak_mib']:,.0f} MiB" if sampled else "")
                                 + f"; peak RSS {proc.peak_rss_mib:,.0f} MiB (blastn {peer['peak_rss_mib']:,.0f})"])
        table = markdown_table(["set", "task", "run", f"blastn -num_threads {T} s", "gseek first / warm s",
                                "vs blastn (warm)", "recall e<=1e-10, bits +-1, e +-5%, extra; memory"], rows,
                               align="lllrrrl")
        notes = ["whole commands in fresh processes; gseek's first run with empty Numba and CuPy caches; "
                 "speed-up counted only where recall >= " + f"{args.min_recall}",
                 "GPU busy / memory: nvidia-smi utilization.gpu and memory.used of GPU 0 every 100 ms during the "
                 "last warm run (memory.used includes the CUDA context)",
                 f"query sets: {'; '.join(_describe_set(k) for k in BLAST_SETS)}; both strands"]
        return Report(title="BLAST-style search (issues 16, 17)",
                      data={"summary": f"database {Path(args.db).name}", "gseek_options": args.gseek_options},
                      table=table, notes=notes, results=results)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------- align

#: The issue's DNA scoring; a gap of k bases costs gap_open + k * gap_extend
#: (parasail's open is therefore gap_open + gap_extend).
ALIGN_SCORING = {"match": 2, "mismatch": -3, "gap_open": 5, "gap_extend": 2}
#: The lazy run keeps pairs at least this identical (`gseek align --min-identity`).
LAZY_MIN_IDENTITY = 0.97
#: parasail_aligner -b for its trace functions (alignments held before output is written).
PARASAIL_TRACE_BATCH = 1000
#: Sequences of the untimed warm-up run of each gseek command (Numba / kernel caches).
ALIGN_WARMUP_SEQS = 20


@dataclass(frozen=True)
class AlignRun:
    """One kind of all-vs-all run: gseek's options and the parasail function that does the same."""

    mode: str  # gseek --mode
    options: tuple[str, ...]  # further gseek align options
    traceback: bool  # a trace-back run (only on sets up to --tb-max-seqs)
    parasail: str | None  # parasail_aligner -a FUNC; None: no parasail run of its own
    baseline: str  # the run whose parasail row 'vs parasail' compares with


ALIGN_RUNS: dict[str, AlignRun] = {
    "local-score": AlignRun("local", ("--score-only",), False, "sw_striped_16", "local-score"),
    "global-score": AlignRun("global", ("--score-only",), False, "nw_striped_16", "global-score"),
    "local-tb": AlignRun("local", ("--traceback",), True, "sw_trace_striped_16", "local-tb"),
    "global-tb": AlignRun("global", ("--traceback",), True, "nw_trace_striped_16", "global-tb"),
    # score every pair, trace back only those that can pass; parasail has no such mode, so
    # it is set beside the full global trace-back a parasail user would filter
    "lazy": AlignRun("global", ("--min-identity", str(LAZY_MIN_IDENTITY)), False, None, "global-tb"),
}


def _int_list(text: str) -> list[int]:
    try:
        values = [int(x.replace("_", "")) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers like 1000,10000, not {text!r}") from None
    if not values or min(values) < 2:
        raise argparse.ArgumentTypeError(f"need at least one set of >= 2 sequences, not {text!r}")
    return values


def _align_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seqs", type=_int_list, default=[1000, 10000],
                   help="sizes of the all-vs-all sets, comma-separated (default 1000,10000)")
    p.add_argument("--length", type=int, default=1500, help="ancestor length in bp (default 1500, 16S-like)")
    p.add_argument("--families-of", type=int, default=20, help="members per family (default 20)")
    p.add_argument("--max-divergence", type=float, default=0.15,
                   help="a member's divergence from its ancestor is uniform in [0, this] (default 0.15)")
    p.add_argument("--seed", type=int, default=42, help="seed of dp_families (default 42)")
    p.add_argument("--threads", type=int, default=os.cpu_count(),
                   help="gseek -p and parasail_aligner -t (default: all cores)")
    p.add_argument("--devices", default="gpu,cpu", help="gseek backends to time (default gpu,cpu)")
    p.add_argument("--runs", default=",".join(ALIGN_RUNS),
                   help=f"comma-separated subset of {','.join(ALIGN_RUNS)} (default all)")
    p.add_argument("--tb-max-seqs", type=int, default=1000,
                   help="trace-back runs (local-tb, global-tb) only on sets up to this size (default 1000)")
    p.add_argument("--peer-max-seqs", type=int, default=2000,
                   help="parasail on a larger set runs on its first N sequences only (default 2000)")
    p.add_argument("--peers", default="parasail", help="parasail, or none (default parasail)")


def _pair_key(i: int, j: int, n: int) -> int:
    """Index of pair (i, j), i < j < n, in the row-major upper triangle."""
    if i > j:
        i, j = j, i
    return i * (2 * n - i - 1) // 2 + (j - i - 1)


def _cells_all_vs_all(lengths: list[int]) -> int:
    """Sum of m * n over the pairs i < j (exact, Python integers)."""
    total = sum(lengths)
    return (total * total - sum(x * x for x in lengths)) // 2


def _count_rows(path: Path) -> int:
    """Data lines of a table (a leading '#' header line is not one)."""
    lines = 0
    with open(path, "rb") as fh:
        first = fh.read(1)
        fh.seek(0)
        while chunk := fh.read(1 << 24):
            lines += chunk.count(b"\n")
    return lines - (first == b"#")


def _passes_identity(matches: int, columns: int) -> bool:
    """gseek's rule: matches / alignment columns >= the threshold (1e-12 slack)."""
    return columns > 0 and matches / columns >= LAZY_MIN_IDENTITY - 1e-12


def _no_scores(n: int):
    """One int32 per pair of ``n`` sequences (triangle order), INT32_MIN = not reported."""
    import numpy as np

    return np.full(n * (n - 1) // 2, np.iinfo(np.int32).min, dtype=np.int32)


def _gseek_table(path: Path, index: dict[str, int], n: int, limit: int, traceback: bool):
    """From a gseek align TSV of a set of ``n``: the scores of the pairs among its first
    ``limit`` sequences (:func:`_no_scores` array), the keys of all pairs passing
    LAZY_MIN_IDENTITY (trace-back tables), and the rows."""
    scores = _no_scores(n)
    passing: set[int] = set()
    rows = 0
    with open(path) as fh:
        header = fh.readline().lstrip("#").rstrip("\n").split("\t")
        col = {name: k for k, name in enumerate(header)}
        s, m, x, g = (col.get(c) for c in ("score", "matches", "mismatches", "gaps"))
        for line in fh:
            rows += 1
            parts = line.split("\t") if traceback else line.split("\t", s + 1)
            i, j = index[parts[0]], index[parts[1]]
            if not traceback and i >= limit:  # rows come in triangle order: the rest is beyond the subset
                while chunk := fh.read(1 << 24):
                    rows += chunk.count("\n")
                break
            if i < limit and j < limit:
                scores[_pair_key(i, j, n)] = int(parts[s])
            if traceback and _passes_identity(int(parts[m]), int(parts[m]) + int(parts[x]) + int(parts[g])):
                passing.add(_pair_key(i, j, n))
    return scores, passing, rows


_CIGAR_RUN = re.compile(r"(\d+)([MIDNSHP=X])")


def _parasail_table(path: Path, names: list[str], n: int, sam: bool):
    """The same three things from parasail_aligner's output on (the first sequences of) a set
    of ``n``: its CSV (``i,j,len_i,len_j,score,end_i,end_j``, 0-based sequence numbers in
    file order, i < j, i the query, ends inclusive) or SAM (``-O SAM``: read = query, RNAME =
    target; no AS tag and flag 4 where the score is 0)."""
    import numpy as np

    scores = _no_scores(n)
    passing: set[int] = set()
    if not sam:
        table = np.loadtxt(path, delimiter=",", dtype=np.int64, ndmin=2) if path.stat().st_size else \
            np.zeros((0, 7), np.int64)
        i, j = np.minimum(table[:, 0], table[:, 1]), np.maximum(table[:, 0], table[:, 1])
        scores[i * (2 * n - i - 1) // 2 + (j - i - 1)] = table[:, 4]
        return scores, passing, len(table)
    index = {name: k for k, name in enumerate(names)}
    rows = 0
    with open(path) as fh:
        for line in fh:
            if line.startswith("@"):
                continue
            rows += 1
            parts = line.rstrip("\n").split("\t")
            key = _pair_key(index[parts[0]], index[parts[2]], n)
            tag = next((t for t in parts[11:] if t.startswith("AS:i:")), None)
            scores[key] = int(tag[5:]) if tag else 0
            runs = [(int(k), op) for k, op in _CIGAR_RUN.findall(parts[5])]
            matches = sum(k for k, op in runs if op == "=")
            if _passes_identity(matches, sum(k for k, op in runs if op in "=XID")):
                passing.add(key)
    return scores, passing, rows


def _parasail_verbose(text: str) -> dict:
    """The figures parasail_aligner -v prints (on stdout): its alignment time, cells, pairs."""
    found = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, words = key.strip(), value.split()
        if not words:
            continue
        if key == "alignment time":
            found["align_s"] = float(words[0])
        elif key == "work":
            found["work_cells"] = int(words[0])
        elif key == "unique pairs":
            found["pairs"] = int(words[0])
        elif key == "file":
            found["file"] = words[0]
    return found


def _compare_scores(label: str, ours, theirs, names: list[str], n: int) -> tuple[str, bool]:
    """'scores equal N/N' over every pair parasail reported, with a few differing pairs."""
    import numpy as np

    missing = np.iinfo(np.int32).min
    reported = np.flatnonzero(theirs != missing)
    absent = int((ours[reported] == missing).sum())
    differ = reported[(ours[reported] != theirs[reported]) & (ours[reported] != missing)]
    same = reported.size - absent - differ.size
    text = f"{label}: scores equal {same:,}/{reported.size:,}"
    if absent:
        text += f"; {absent:,} pairs parasail reported are not in gseek's output"
    if differ.size:
        row_start = np.array([_pair_key(i, i + 1, n) for i in range(n)] + [n * (n - 1) // 2])
        examples = []
        for key in differ[:3]:
            i = int(np.searchsorted(row_start, key, side="right") - 1)
            j = int(key - row_start[i] + i + 1)
            examples.append(f"{names[i]} × {names[j]}: gseek {ours[key]}, parasail {theirs[key]}")
        text += f"; **{differ.size:,} differ**, e.g. " + "; ".join(examples)
    return text, same == reported.size and reported.size > 0


def _numba_cache_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) with NUMBA_CACHE_DIR on the runner's persistent cache
    (``out/numba-cache``), so gseek's compiled kernels persist between commands outside the package."""
    env = dict(os.environ if env is None else env)
    cache_dir = OUT_DIR / "numba-cache"
    cache_dir.mkdir(parents=True, exist_ok=True)
    env["NUMBA_CACHE_DIR"] = str(cache_dir)
    return env


def _gcups(cells: int, seconds: float | None) -> str:
    """Billions of DP cells per second, 2 decimals ('-' without a time)."""
    return f"{cells / seconds / 1e9:.2f}" if seconds else "-"


def _write_subset(fam, n: int, path: Path) -> None:
    """The first ``n`` members of ``fam`` as FASTA (and its truth TSV next to it)."""
    from gseek.datasets.simulate import SimulatedFamilies

    SimulatedFamilies(fam.records[:n], fam.ancestors, fam.truth[:n], fam.edits[:n]).write(path)


@benchmark("align", "all-vs-all DP of 16S-like families, whole command, GCUPS by mode: gseek vs parasail_aligner",
           _align_options)
def bench_align(args: argparse.Namespace) -> Report:
    import hashlib
    import shutil

    from gseek.datasets.simulate import dp_families

    runs = [r.strip() for r in args.runs.split(",") if r.strip()]
    devices = [d.strip() for d in args.devices.split(",") if d.strip()]
    peers = {p.strip() for p in args.peers.split(",") if p.strip()} - {"none"}
    for what, given, known in (("run", runs, ALIGN_RUNS), ("device", devices, ("gpu", "cpu")),
                               ("peer", peers, ("parasail",))):
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise SystemExit(f"run.py align: unknown {what}(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    if args.families_of < 1 or args.length < 1 or args.threads < 1 or args.peer_max_seqs < 2:
        raise SystemExit("run.py align: --families-of, --length and --threads must be >= 1, --peer-max-seqs >= 2")
    extra_notes: list[str] = []
    if "gpu" in devices and harness.gpu_name() == "none":
        devices.remove("gpu")
        extra_notes.append("no GPU on this host: gseek --device gpu not run")

    work = Path(tempfile.mkdtemp(prefix="gseek-align-bench-"))
    try:
        env = dict(os.environ)
        if peers:
            try:
                env = harness.peer_env()
            except Exception as exc:  # no carried peers here: gseek alone
                print(f"  align: peers unavailable ({exc}); gseek only", file=sys.stderr)
        env = _numba_cache_env(env)
        if peers and shutil.which("parasail_aligner", path=env.get("PATH")) is None:
            extra_notes.append("parasail_aligner not found: gseek only")
            peers = set()
        T = str(args.threads)
        s = ALIGN_SCORING
        scoring = ["--match", str(s["match"]), "--mismatch", str(s["mismatch"]), "--gap-open", str(s["gap_open"]),
                   "--gap-extend", str(s["gap_extend"])]

        def gseek_cmd(device: str, run: AlignRun, fasta: Path, out: Path) -> list[str]:
            return [sys.executable, "-P", "-m", "gseek", "--quiet", "--device", device, "-p", T, "align",
                    "-i", str(fasta), "--all-vs-all", "--mode", run.mode, *run.options, *scoring, "-o", str(out)]

        def parasail_cmd(function: str, out: Path) -> list[str]:
            cmd = ["parasail_aligner", "-x", "-d", "-t", T, "-o", str(s["gap_open"] + s["gap_extend"]),
                   "-e", str(s["gap_extend"]), "-M", str(s["match"]), "-X", str(-s["mismatch"]), "-a", function,
                   "-g", str(out)]
            # trace functions keep every alignment's trace table until a batch is written: at the
            # default batch (by half the free memory) 16 threads were killed for memory on 1,000 x 1.5 kb
            return cmd + (["-O", "SAM", "-b", str(PARASAIL_TRACE_BATCH)] if "trace" in function else []) + ["-v"]

        largest = max(args.seqs)
        t0 = time.perf_counter()
        fam = dp_families(-(-largest // args.families_of), args.families_of, args.length, seed=args.seed,
                          max_divergence=args.max_divergence)
        names = [name for name, _ in fam.records]
        lengths = [len(seq) for _, seq in fam.records]
        print(f"  align: {largest:,} sequences simulated in {time.perf_counter() - t0:.1f} s", file=sys.stderr)

        warm = work / "warmup.fa"
        _write_subset(fam, min(ALIGN_WARMUP_SEQS, largest), warm)
        for device in devices:
            for name in runs:
                print(f"  align: warm-up gseek --device {device} {name} ...", file=sys.stderr, flush=True)
                harness.run_process(gseek_cmd(device, ALIGN_RUNS[name], warm, work / "warmup.out"), env=env)

        results: list[dict] = []
        data: dict = {"sets": [], "scoring": s, "families_of": args.families_of, "length": args.length,
                      "max_divergence": args.max_divergence, "seed": args.seed}
        agreement: list[str] = []
        all_agree = True
        for n in sorted(set(args.seqs)):
            fasta = work / f"fam{n}.fa"
            _write_subset(fam, n, fasta)
            n_peer = min(n, args.peer_max_seqs)
            peer_fasta = fasta if n_peer == n else work / f"fam{n}_first{n_peer}.fa"
            if peer_fasta != fasta:
                _write_subset(fam, n_peer, peer_fasta)
            cells = _cells_all_vs_all(lengths[:n])
            peer_cells = _cells_all_vs_all(lengths[:n_peer])
            data["sets"].append({"sequences": n, "bases": sum(lengths[:n]), "pairs": n * (n - 1) // 2,
                                 "cells": cells, "sha256": hashlib.sha256(fasta.read_bytes()).hexdigest()})
            index = {name: k for k, name in enumerate(names[:n])}
            passing: dict[tuple[str, str], set[int]] = {}  # (run, tool) -> pairs >= LAZY_MIN_IDENTITY
            lazy_rows: dict[str, int] = {}
            for name in runs:
                run = ALIGN_RUNS[name]
                if run.traceback and n > args.tb_max_seqs:
                    continue
                peer_scores = None
                if "parasail" in peers and run.parasail:
                    out = work / f"parasail-{name}.{'sam' if run.traceback else 'csv'}"
                    cmd = parasail_cmd(run.parasail, out)
                    print(f"  align: parasail_aligner -a {run.parasail} on {n_peer:,} of {n:,} ...", file=sys.stderr,
                          flush=True)
                    proc = harness.run_process(cmd, env=env, stdin=peer_fasta)  # it reads the FASTA on stdin
                    own = _parasail_verbose(proc.stdout + proc.stderr)
                    peer_scores, peer_pass, rows = _parasail_table(out, names, n, run.traceback)
                    out.unlink()
                    passing[(name, "parasail")] = peer_pass
                    peer_pairs = n_peer * (n_peer - 1) // 2
                    if (own.get("file"), own.get("pairs"), own.get("work_cells")) != ("stdin", peer_pairs, peer_cells):
                        all_agree = False
                        extra_notes.append(f"**parasail {run.parasail} on {n_peer:,}: read {own.get('file')}, "
                                           f"{own.get('pairs')} pairs, {own.get('work_cells')} cells; expected "
                                           f"stdin, {peer_pairs:,} pairs, {peer_cells:,} cells**")
                    results.append({"run": name, "tool": "parasail", "device": "cpu", "sequences": n_peer, "set": n,
                                    "pairs": peer_pairs, "cells": peer_cells,
                                    "label": f"parasail_aligner -t {T} -a {run.parasail}"
                                             + (" -O SAM" if run.traceback else ""),
                                    "command": shlex.join(cmd) + f" < {peer_fasta.name}", "seconds": proc.seconds,
                                    "cpu_s": proc.cpu_s, "peak_rss_mib": proc.peak_rss_mib, "rows": rows,
                                    # Debian's 2.6 build prints 0.0000 s for every timer: then unknown
                                    "own_align_s": own.get("align_s") or None,
                                    "own_align_s_printed": own.get("align_s"), "own_work_cells": own.get("work_cells")})
                for device in devices:
                    out = work / f"gseek-{device}-{name}.tsv"
                    cmd = gseek_cmd(device, run, fasta, out)
                    print(f"  align: gseek --device {device} {name} on {n:,} ...", file=sys.stderr, flush=True)
                    proc = harness.run_process(cmd, env=env)
                    if peer_scores is not None or run.traceback or name == "lazy":
                        limit = n_peer if peer_scores is not None else n
                        scores, tb_pass, rows = _gseek_table(out, index, n, limit, run.traceback or name == "lazy")
                        passing[(name, device)] = tb_pass
                    else:
                        rows = _count_rows(out)
                    out.unlink()
                    if name == "lazy":
                        lazy_rows[device] = rows
                    label = f"gseek --device {device} align --mode {run.mode} {' '.join(run.options)}"
                    results.append({"run": name, "tool": "gseek", "device": device, "sequences": n, "set": n,
                                    "pairs": n * (n - 1) // 2, "cells": cells, "label": label,
                                    "command": shlex.join(cmd), "seconds": proc.seconds, "cpu_s": proc.cpu_s,
                                    "peak_rss_mib": proc.peak_rss_mib, "rows": rows, "own_align_s": None})
                    if peer_scores is not None:
                        subset = f" (the first {n_peer:,} of {n:,})" if n_peer < n else ""
                        text, ok = _compare_scores(f"{name}, {n_peer:,} sequences{subset}, gseek --device {device} vs "
                                                   f"parasail {run.parasail}", scores, peer_scores, names, n)
                        agreement.append(text)
                        all_agree &= ok
            for device in devices:
                lazy, full = passing.get(("lazy", device)), passing.get(("global-tb", device))
                if lazy is None or full is None:
                    continue
                same = lazy == full and lazy_rows[device] == len(lazy)
                all_agree &= same
                text = (f"lazy, {n:,} sequences, gseek --device {device}: {lazy_rows[device]:,} rows, "
                        f"{'the same pairs as' if same else '**not the same pairs as**'} the {len(full):,} of its "
                        f"full global trace-back with identity >= {LAZY_MIN_IDENTITY}")
                theirs = passing.get(("global-tb", "parasail"))
                if theirs is not None and n_peer == n:
                    text += f" (parasail nw_trace_striped_16's CIGARs: {len(theirs):,} pairs pass"
                    if theirs != lazy:
                        text += (f", {len(theirs ^ lazy):,} pairs not in both: an equal score can come with a "
                                 "CIGAR of another identity")
                    text += ")"
                agreement.append(text)
        short = [r for r in results if r["run"] != "lazy" and r["rows"] != r["pairs"]]
        all_agree &= not short
        agreement.append("rows: every command but lazy wrote one row per pair" if not short else
                         "**rows: not one per pair from " + "; ".join(f"{r['label']} on {r['sequences']:,} "
                                                                      f"({r['rows']:,} of {r['pairs']:,})"
                                                                      for r in short) + "**")
        if not all_agree:
            print("# warning: the tools' results disagree (see the notes)", file=sys.stderr, flush=True)

        peer_of = {(r["set"], r["run"]): r for r in results if r["tool"] == "parasail"}
        rows = []
        for r in sorted(results, key=lambda r: (r["set"], list(ALIGN_RUNS).index(r["run"]), r["tool"] != "gseek")):
            base = peer_of.get((r["set"], ALIGN_RUNS[r["run"]].baseline))
            if base is None:
                versus = "-"
            elif base["pairs"] == r["pairs"]:
                versus = ratio(base["seconds"], r["seconds"])
            else:  # parasail ran on the first sequences only: compare cell rates
                versus = f"{(r['cells'] / r['seconds']) / (base['cells'] / base['seconds']):.2f}x GCUPS"
            if r["run"] != ALIGN_RUNS[r["run"]].baseline and versus != "-":
                versus += f" (vs {ALIGN_RUNS[ALIGN_RUNS[r['run']].baseline].parasail})"
            seqs = f"{r['sequences']:,}" + (f" of {r['set']:,}" if r["sequences"] != r["set"] else "")
            own = r["own_align_s"]
            rows.append([r["run"], r["label"], seqs, f"{r['pairs']:,}", f"{r['cells']:.3g}", f"{r['seconds']:.2f}",
                         _gcups(r["cells"], r["seconds"]), f"{own:.2f}" if own is not None else "-",
                         _gcups(r["cells"], own), f"{r['rows']:,}", versus])
        table = markdown_table(["run", "command", "sequences", "pairs", "cells", "wall s", "GCUPS", "own align s",
                                "GCUPS (own)", "rows written", "vs parasail"], rows, align="llrrrrrrrrr")
        notes = [
            f"all-vs-all (pairs i < j) of dp_families sequences: {args.families_of} members per family drawn "
            f"from a random {args.length} bp ancestor, divergence uniform in [0, {args.max_divergence}] (90% "
            f"substitutions, 10% indel bases), seed {args.seed}; a set of N is the first N members; DNA, match "
            f"{s['match']} / mismatch {s['mismatch']} / a gap of k bases costs {s['gap_open']} + {s['gap_extend']}k "
            f"(parasail_aligner -o {s['gap_open'] + s['gap_extend']} -e {s['gap_extend']} -M {s['match']} "
            f"-X {-s['mismatch']})",
            "wall s = the whole command from process start (interpreter, imports, reading the FASTA, DP, writing "
            "every row) after one untimed warm-up run of each gseek command on "
            f"{ALIGN_WARMUP_SEQS} sequences (Numba and kernel caches on disk warm); each command run once; "
            "GCUPS = cells (sum of m*n over the pairs) / seconds / 1e9",
            f"trace-back runs only on sets up to {args.tb_max_seqs:,} sequences",
            f"lazy = `--mode global --min-identity {LAZY_MIN_IDENTITY}`: every pair scored, trace-back only of "
            f"pairs whose score allows {LAZY_MIN_IDENTITY:.0%} identity; its cells are all pairs' cells",
        ]
        if peer_of:
            zero = [r for r in peer_of.values() if r["own_align_s_printed"] == 0.0]
            notes += [
                "own align s = the tool's own figure: parasail_aligner -v's 'alignment time' (the DP of all "
                "pairs, without reading input and writing output); gseek reports none"
                + (f"; parasail printed 0.0000 s for {len(zero)} of {len(peer_of)} runs (this build's timers "
                   "all print 0.0000: read and pack, enumerate, alignment), shown as '-'" if zero else ""),
                f"parasail_aligner 2.6 (Debian) with -x (no suffix-array pair filter: every pair), -t {T} OpenMP "
                "threads, 16-bit striped functions, the FASTA on stdin (it reads stdin whenever stdin is not a "
                "terminal: as the database without -f, as the *query* file with -f); "
                f"-O SAM -b {PARASAIL_TRACE_BATCH} for the trace functions (at its default batch it was killed for "
                "memory)",
                f"parasail on sets above {args.peer_max_seqs:,} sequences runs on the first "
                f"{args.peer_max_seqs:,} only, and 'vs parasail' then compares GCUPS; otherwise 'vs parasail' = "
                "parasail's wall s / this wall s (>1: faster than parasail); lazy has no parasail counterpart "
                "and is set beside nw_trace_striped_16 (the full trace-back one would filter)",
            ]
        notes += [*extra_notes, *agreement]
        data["summary"] = (f"dp_families, {' and '.join(f'{x:,}' for x in sorted(set(args.seqs)))} sequences of "
                           f"~{args.length} bp (families of {args.families_of}, divergence <= "
                           f"{args.max_divergence}, seed {args.seed}), DNA, all-vs-all")
        return Report(title="Batched DP, all-vs-all", data=data, table=table, notes=notes, results=results,
                      extra={"agreement": agreement, "all_agree": all_agree})
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ------------------------------------------------------------------ pipeline


def _pipeline_run_options(p: argparse.ArgumentParser, sequential: str) -> None:
    """The options of both pipeline benchmarks; ``sequential`` names the command run once per file."""
    p.add_argument("--files", type=int, default=20, help="query files (default 20)")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads")
    p.add_argument("--workers", type=int, default=4, help="pipeline finalize workers (default 4)")
    p.add_argument("--device", default="auto", help="gseek --device (default auto)")
    p.add_argument("--gpus", default=None,
                   help="GPU sets for the pipeline runs, ';'-separated, e.g. '0;0,1' (one run each with "
                        "--gpus SET); default: one run without --gpus")
    p.add_argument("--no-sequential", action="store_true", help=f"skip the sequential {sequential} runs")


def _pipeline_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("fasta", help="reference FASTA (plain or .gz)")
    p.add_argument("--reads", type=int, default=250_000, help="reads per file (default 250k)")
    p.add_argument("--length", type=int, default=100, help="read length (default 100)")
    p.add_argument("-v", "--mismatches", type=int, default=3, help="k (default 3)")
    _pipeline_run_options(p, "gseek search")


class _GpuSampler:
    """Samples nvidia-smi's utilization.gpu (share of time a kernel ran) of every GPU every 100 ms;
    with ``memory``, also memory.used (MiB) into :attr:`memory`."""

    def __init__(self, memory: bool = False) -> None:
        import shutil
        import subprocess

        self.proc = None
        self.memory: dict[str, list[float]] = {}
        fields = "index,utilization.gpu" + (",memory.used" if memory else "")
        if shutil.which("nvidia-smi") and harness.gpu_name() != "none":
            self.proc = subprocess.Popen(
                ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits", "-lms", "100"],
                stdout=subprocess.PIPE, text=True)

    def stop(self) -> dict[str, list[float]]:
        """Samples by GPU index (``{}`` without nvidia-smi)."""
        if self.proc is None:
            return {}
        self.proc.terminate()
        out, _ = self.proc.communicate()
        samples: dict[str, list[float]] = {}
        for line in out.splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) >= 2 and parts[0].isdigit() and all(p.replace(".", "").isdigit() for p in parts[1:]):
                samples.setdefault(parts[0], []).append(float(parts[1]))
                if len(parts) == 3:
                    self.memory.setdefault(parts[0], []).append(float(parts[2]))
        return samples


def _gpu_sets(text: str | None) -> list[str | None]:
    """``--gpus '0;0,1'`` -> ['0', '0,1']; no --gpus -> [None] (one run without --gpus)."""
    return [g.strip() for g in text.split(";") if g.strip()] if text else [None]


def _sampled_runs(cmds: list[list[str]], env: dict[str, str] | None = None):
    """Run ``cmds`` one after the other under one :class:`_GpuSampler`: wall s from the first
    start to the last exit, CPU s summed, the GPU samples, and the last process's result."""
    sampler = _GpuSampler()
    cpu, proc = 0.0, None
    t0 = time.perf_counter()
    try:
        for cmd in cmds:
            proc = harness.run_process(cmd, env=env)
            cpu += proc.cpu_s
    finally:
        busy = sampler.stop()
    return time.perf_counter() - t0, cpu, busy, proc


def _busy_text(busy: dict[str, list[float]], gpus: str | None = None) -> str:
    """Mean utilisation of each GPU the command was given (``gpus``: '0,1'; None: GPU 0), '-' without samples."""
    used = [g.strip() for g in (gpus or "0").split(",")]
    means = [sum(busy[g]) / len(busy[g]) for g in used if busy.get(g)]
    return ", ".join(f"{m:.0f}%" for m in means) if means else "-"


GPU_BUSY_NOTE = ("GPU busy = mean of nvidia-smi utilization.gpu (share of time a kernel ran) sampled every 100 ms "
                 "during the command(s), for each GPU the command used (GPU 0 without --gpus), over the whole "
                 "wall time (start-up included); sequential: over all its processes and the gaps between them")


@benchmark("pipeline", "many query files: gseek pipeline vs sequential gseek search runs, GPU busy share",
           _pipeline_options)
def bench_pipeline(args: argparse.Namespace) -> Report:
    import shutil

    from gseek.datasets.simulate import kmismatch_reads

    work = Path(tempfile.mkdtemp(prefix="gseek-pipe-bench-"))
    try:
        plain = work / "ref.fa"
        with _text_handle(args.fasta) as src, open(plain, "w") as dst:
            shutil.copyfileobj(src, dst)
        gseek = [sys.executable, "-P", "-m", "gseek", "--quiet"]
        harness.run_process(gseek + ["index", str(plain), "-o", str(work / "ref")])
        files = []
        for i in range(args.files):
            path = work / f"q{i:02d}.fq"
            kmismatch_reads(str(plain), args.reads, args.length, args.mismatches, seed=100 + i).write(path)
            files.append(path)
        (work / "list.txt").write_text("".join(f"{f.name}\n" for f in files))
        print(f"  pipeline: {args.files} files x {args.reads:,} reads simulated", file=sys.stderr, flush=True)
        common = ["--device", args.device, "-p", str(args.threads)]

        def records(path: Path) -> bytes:
            return path.read_bytes().split(b"\n@PG", 1)[1].split(b"\n", 1)[1]

        sequential = None
        rows = []
        if not args.no_sequential:
            sequential, seq_cpu, seq_busy, _ = _sampled_runs(
                [gseek + common + ["search", "-x", str(work / "ref"), "-q", str(f), "-v", str(args.mismatches),
                                   "-o", str(f) + ".seq.sam"] for f in files])
            rows.append(["sequential gseek search x" + str(args.files), f"{sequential:.2f}", f"{seq_cpu:.1f}",
                         _busy_text(seq_busy), "1.00x"])

        runs, first_out = [], None
        for k, gpus in enumerate(_gpu_sets(args.gpus)):
            outdir = work / f"out{k}"
            extra = ["--gpus", gpus] if gpus else []
            _, _, busy, proc = _sampled_runs([gseek + common + [
                "pipeline", "--queries", str(work / "list.txt"), "-x", str(work / "ref"), "--outdir", str(outdir),
                "-v", str(args.mismatches), "--workers", str(args.workers), *extra]])
            if sequential is not None:
                same = all(records(outdir / (f.stem + ".sam")) == records(Path(str(f) + ".seq.sam")) for f in files)
            else:  # against the first pipeline run
                first_out = first_out or outdir
                same = all(records(outdir / (f.stem + ".sam")) == records(first_out / (f.stem + ".sam"))
                           for f in files)
            runs.append({"gpus": gpus, "pipeline_s": proc.seconds, "busy": busy, "identical": same})
            base = sequential if sequential is not None else runs[0]["pipeline_s"]
            rows.append([f"gseek pipeline --workers {args.workers}" + (f" --gpus {gpus}" if gpus else ""),
                         f"{proc.seconds:.2f}", f"{proc.cpu_s:.1f}", _busy_text(busy, gpus), ratio(base, proc.seconds)])
        table = markdown_table(["command", "wall s", "CPU s", "GPU busy (each GPU used)",
                                "vs sequential" if sequential is not None else "vs the first run"], rows,
                               align="lrrrr")
        notes = [
            (f"{args.files} FASTQ files x {args.reads:,} reads of {args.length} bp (kmismatch_reads, seeds 100..), "
             f"k={args.mismatches}, against {Path(args.fasta).name}; index built beforehand"),
            ("sequential = the sum of one `gseek search` process per file (start-up, index load and compile each "
             "time, as a user would run them); pipeline = one `gseek pipeline` process"),
            GPU_BUSY_NOTE,
            "pipeline outputs identical to the " + ("sequential ones" if sequential is not None else
                                                    "first pipeline run's") + " (records after @PG): "
            + ", ".join(f"{r['gpus'] or 'default'}: {r['identical']}" for r in runs),
        ]
        data = {"summary": f"{Path(args.fasta).name}: {args.files} files x {args.reads:,} x {args.length} bp, "
                           f"k={args.mismatches}"}
        return Report(title="Pipeline over many query files", data=data, table=table, notes=notes,
                      results=[{"sequential_s": sequential, **r} for r in runs])
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ------------------------------------------------------------ pipeline-align

#: pipeline-align's database: dp_families of this many members, divergence up to this from the ancestor.
PIPE_ALIGN_FAMILY = 20
PIPE_ALIGN_DB_DIVERGENCE = 0.15
#: A homologous query is a whole database sequence mutated by a divergence uniform in this range.
PIPE_ALIGN_QUERY_DIVERGENCE = (0.10, 0.20)
#: (queries, targets) of the untimed warm-up run of each command.
PIPE_ALIGN_WARMUP = (8, 16)


def _pipeline_align_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--queries", type=int, default=500, help="query sequences per file (default 500)")
    p.add_argument("--targets", type=int, default=2000, help="database sequences (default 2000)")
    p.add_argument("--length", type=int, default=1500,
                   help="length of the database's family ancestors in bp (default 1500, 16S-like)")
    p.add_argument("--mode", choices=("global", "local", "semiglobal"), default="local",
                   help="gseek align --mode (default local)")
    p.add_argument("--traceback", action="store_true", help="--traceback runs (default: --score-only)")
    p.add_argument("--job-mb", type=float, default=None, help="gseek pipeline --job-mb (default: the pipeline's)")
    p.add_argument("--seed", type=int, default=42, help="seed of the database and the queries (default 42)")
    _pipeline_run_options(p, "gseek align")


def _pipeline_align_data(work: Path, files: int, queries: int, targets: int, length: int, seed: int) -> dict:
    """Write the database ``db.fa``, the query files ``q00.fa``.. and ``list.txt`` (their names) under
    ``work``, and the warm-up inputs (``warm-db.fa``, ``warm-q.fa``, ``warm-list.txt``).

    The database is the first ``targets`` members of :func:`dp_families` (families of
    PIPE_ALIGN_FAMILY). In each file half the queries, chosen at random, are a random database
    sequence mutated (:func:`mutate`: 90% substitutions, 10% indel bases, as dp_families) by a
    divergence uniform in PIPE_ALIGN_QUERY_DIVERGENCE, named ``fNN_qJJJ_<target>``; the rest are
    uniformly random, as long as a random database sequence, named ``fNN_qJJJ_random``. File i
    draws from PCG64([seed, i]). Returns the paths and the sizes (bases, cells)."""
    import hashlib

    import numpy as np
    from gseek.datasets.simulate import _MAX_INDEL, dp_families, mutate

    from gseek.alphabet import decode_dna, encode_dna
    from gseek.seqio import write_fasta

    fam = dp_families(-(-targets // PIPE_ALIGN_FAMILY), PIPE_ALIGN_FAMILY, length, seed=seed,
                      max_divergence=PIPE_ALIGN_DB_DIVERGENCE)
    db = fam.records[:targets]
    db_codes = [encode_dna(seq) for _, seq in db]
    db_bases = sum(c.size for c in db_codes)
    write_fasta(work / "db.fa", db)
    lo, hi = PIPE_ALIGN_QUERY_DIVERGENCE
    mean_indel = (1 + _MAX_INDEL) / 2
    fw, qw = max(2, len(str(files - 1))), len(str(queries))
    paths, query_bases, homologs = [], [], 0
    for i in range(files):
        rng = np.random.Generator(np.random.PCG64([seed, i]))
        homolog = np.zeros(queries, dtype=bool)
        homolog[rng.choice(queries, size=queries // 2, replace=False)] = True
        homologs += int(homolog.sum())
        records = []
        for j in range(queries):
            name = f"f{i:0{fw}d}_q{j + 1:0{qw}d}"
            t = int(rng.integers(targets))
            if homolog[j]:
                d = rng.uniform(lo, hi)
                codes, _ = mutate(db_codes[t], rng, 0.9 * d, 0.1 * d / mean_indel)
                records.append((f"{name}_{db[t][0]}", decode_dna(codes)))
            else:
                codes = rng.integers(0, 4, size=db_codes[t].size, dtype=np.uint8)
                records.append((f"{name}_random", decode_dna(codes)))
        path = work / f"q{i:0{fw}d}.fa"
        write_fasta(path, records)
        paths.append(path)
        query_bases.append(sum(len(seq) for _, seq in records))
        if i == 0:
            write_fasta(work / "warm-q.fa", records[:PIPE_ALIGN_WARMUP[0]])
    (work / "list.txt").write_text("".join(f"{p.name}\n" for p in paths))
    write_fasta(work / "warm-db.fa", db[:PIPE_ALIGN_WARMUP[1]])
    (work / "warm-list.txt").write_text("warm-q.fa\n")
    return {"db": work / "db.fa", "files": paths, "targets": len(db), "db_bases": db_bases,
            "queries_per_file": queries, "query_bases": sum(query_bases), "homologous_queries": homologs,
            "cells": sum(q * db_bases for q in query_bases),
            "db_sha256": hashlib.sha256((work / "db.fa").read_bytes()).hexdigest()}


def _same_file(a: Path, b: Path) -> bool:
    """Both exist and hold the same bytes."""
    return a.is_file() and b.is_file() and a.stat().st_size == b.stat().st_size and a.read_bytes() == b.read_bytes()


@benchmark("pipeline-align", "many query files vs one database, batched DP: gseek pipeline --task align vs "
           "sequential gseek align runs, GCUPS, GPU busy share", _pipeline_align_options)
def bench_pipeline_align(args: argparse.Namespace) -> Report:
    import shutil

    if min(args.files, args.queries, args.targets, args.length, args.threads) < 1 or args.workers < 0:
        raise SystemExit("run.py pipeline-align: --files, --queries, --targets, --length and --threads must be "
                         ">= 1, --workers >= 0")
    work = Path(tempfile.mkdtemp(prefix="gseek-pipe-align-bench-"))
    try:
        t0 = time.perf_counter()
        data = _pipeline_align_data(work, args.files, args.queries, args.targets, args.length, args.seed)
        db, files, cells = data.pop("db"), data.pop("files"), data["cells"]
        print(f"  pipeline-align: {args.files} files x {args.queries:,} queries and {data['targets']:,} targets "
              f"simulated in {time.perf_counter() - t0:.1f} s ({cells:.3g} cells)", file=sys.stderr, flush=True)
        env = _numba_cache_env()
        gseek = [sys.executable, "-P", "-m", "gseek", "--quiet", "--device", args.device, "-p", str(args.threads)]
        dp = ["--mode", args.mode, "--traceback" if args.traceback else "--score-only"]
        pipeline_opts = ["--workers", str(args.workers)] + (["--job-mb", f"{args.job_mb:g}"] if args.job_mb else [])

        def align_cmd(target: Path, query: Path, out: Path) -> list[str]:
            return gseek + ["align", "-q", str(query), "-t", str(target), *dp, "-o", str(out)]

        def pipeline_cmd(target: Path, listing: Path, outdir: Path, gpus: str | None) -> list[str]:
            return gseek + ["pipeline", "--task", "align", "-t", str(target), "--queries", str(listing),
                            "--outdir", str(outdir), *dp, *pipeline_opts, *(["--gpus", gpus] if gpus else [])]

        def seq_out(f: Path) -> Path:
            return Path(str(f) + ".seq.tsv")

        gpu_sets = _gpu_sets(args.gpus)
        print("  pipeline-align: warm-up runs ...", file=sys.stderr, flush=True)
        harness.run_process(align_cmd(work / "warm-db.fa", work / "warm-q.fa", work / "warm.tsv"), env=env)
        harness.run_process(pipeline_cmd(work / "warm-db.fa", work / "warm-list.txt", work / "warm-out",
                                         gpu_sets[0]), env=env)

        sequential = None
        rows, seq = [], {}
        if not args.no_sequential:
            print(f"  pipeline-align: {args.files} sequential gseek align runs ...", file=sys.stderr, flush=True)
            wall, cpu, busy, _ = _sampled_runs([align_cmd(db, f, seq_out(f)) for f in files], env)
            sequential = wall
            seq = {"sequential_s": wall, "sequential_cpu_s": cpu, "sequential_busy": busy,
                   "sequential_gcups": cells / wall / 1e9}
            rows.append([f"sequential gseek align x{args.files}", f"{wall:.2f}", f"{cpu:.1f}", _busy_text(busy),
                         _gcups(cells, wall), "1.00x"])

        runs, first_out = [], None
        for k, gpus in enumerate(gpu_sets):
            outdir = work / f"out{k}"
            print(f"  pipeline-align: gseek pipeline --task align{f' --gpus {gpus}' if gpus else ''} ...",
                  file=sys.stderr, flush=True)
            _, _, busy, proc = _sampled_runs([pipeline_cmd(db, work / "list.txt", outdir, gpus)], env)
            first_out = first_out or outdir

            def reference(f: Path, first: Path = first_out) -> Path:
                return seq_out(f) if sequential is not None else first / f"{f.stem}.tsv"

            differ = [f.name for f in files if not _same_file(outdir / f"{f.stem}.tsv", reference(f))]
            out_bytes = sum((outdir / f"{f.stem}.tsv").stat().st_size for f in files
                            if (outdir / f"{f.stem}.tsv").is_file())
            runs.append({"gpus": gpus, "pipeline_s": proc.seconds, "cpu_s": proc.cpu_s,
                         "peak_rss_mib": proc.peak_rss_mib, "busy": busy, "gcups": cells / proc.seconds / 1e9,
                         "identical": not differ, "differing_files": differ, "output_bytes": out_bytes,
                         "command": shlex.join(proc.cmd)})
            if differ:
                print(f"# warning: pipeline run {gpus or 'default'}: {len(differ)} outputs differ "
                      f"({', '.join(differ[:5])})", file=sys.stderr, flush=True)
            if sequential is not None or k > 0:  # the first run's outputs are the reference without sequential
                shutil.rmtree(outdir, ignore_errors=True)
            base = sequential if sequential is not None else runs[0]["pipeline_s"]
            rows.append([f"gseek pipeline --task align --workers {args.workers}"
                         + (f" --job-mb {args.job_mb:g}" if args.job_mb else "") + (f" --gpus {gpus}" if gpus else ""),
                         f"{proc.seconds:.2f}", f"{proc.cpu_s:.1f}", _busy_text(busy, gpus), _gcups(cells, proc.seconds),
                         ratio(base, proc.seconds)])
        table = markdown_table(["command", "wall s", "CPU s", "GPU busy (each GPU used)", "GCUPS",
                                "vs sequential" if sequential is not None else "vs the first run"], rows,
                               align="lrrrrr")
        lo, hi = PIPE_ALIGN_QUERY_DIVERGENCE
        s = ALIGN_SCORING
        dp_text = " ".join(dp)
        notes = [
            (f"{args.files} query FASTA files x {args.queries:,} sequences against one database of "
             f"{data['targets']:,} sequences ({data['db_bases']:,} bp): the first {data['targets']:,} members of "
             f"dp_families ({PIPE_ALIGN_FAMILY} per family from random {args.length} bp ancestors, divergence <= "
             f"{PIPE_ALIGN_DB_DIVERGENCE}, seed {args.seed}); in each file half the queries (at random) are a "
             f"random database sequence mutated by a divergence uniform in [{lo}, {hi}] (90% substitutions, 10% "
             f"indel bases, `mutate`), the others uniformly random sequences as long as a random database "
             f"sequence; file i from PCG64([{args.seed}, i]); {data['query_bases']:,} query bp in all"),
            (f"every query against every database sequence: `gseek align {dp_text}`, default "
             f"DNA scoring (match {s['match']} / mismatch {s['mismatch']} / a gap of k bases costs "
             f"{s['gap_open']} + {s['gap_extend']}k); -p {args.threads}, --device {args.device}"),
            (f"cells = sum over the files of query bp × database bp = {cells:.4g}; GCUPS = cells / wall s / 1e9, "
             "wall s of the whole command(s): start-up, reading, DP and writing every row"),
            ((f"sequential = one `gseek align -q FILE -t DB {dp_text}` process per file, one after the other "
              "(wall s from the first start to the last exit, CPU s summed); " if sequential is not None else
              "no sequential runs (--no-sequential); ")
             + "pipeline = one `gseek pipeline --task align` process; after one untimed warm-up run of each "
             f"command on {PIPE_ALIGN_WARMUP[0]} queries x {PIPE_ALIGN_WARMUP[1]} targets (Numba and kernel "
             "caches on disk warm); each command run once"),
            GPU_BUSY_NOTE,
            ("pipeline outputs (DIR/qNN.tsv) byte-identical to the "
             + ("sequential ones (`gseek align -o`)" if sequential is not None else "first pipeline run's")
             + ": " + ", ".join(f"{r['gpus'] or 'default'}: {r['identical']}"
                                + (f" (**{len(r['differing_files'])} differ**)" if r["differing_files"] else "")
                                for r in runs)),
        ]
        data.update({"files": args.files, "length": args.length, "seed": args.seed, "mode": args.mode,
                     "traceback": args.traceback, "scoring": s,
                     "summary": (f"{args.files} files x {args.queries:,} queries vs {data['targets']:,} database "
                                 f"sequences of ~{args.length} bp (dp_families, half the queries mutated copies "
                                 f"at {lo}-{hi} divergence, seed {args.seed}), DNA, {dp_text}, "
                                 f"{cells:.3g} cells")})
        all_identical = all(r["identical"] for r in runs)
        return Report(title="Pipeline over many query files: batched DP against one database", data=data,
                      table=table, notes=notes, results=[{**seq, "cells": cells, **r} for r in runs],
                      extra={"all_identical": all_identical})
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _pipeline_blast_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, help="database FASTA (.gz ok), e.g. bacteria75.fa.gz")
    p.add_argument("--set", default="10kb", help=f"query set per file ({', '.join(BLAST_SETS)}; default 10kb)")
    p.add_argument("--per-file", type=int, default=25, help="queries per file (default 25)")
    p.add_argument("--task", default="blastn", help="megablast or blastn (default blastn)")
    p.add_argument("--splits", default="",
                   help="extra runs with `--split database` for these GPU sets, ';'-separated (e.g. '0,1')")
    _pipeline_run_options(p, "gseek search")


def _blast_list_data(work: Path, db_fasta: str, query_set: str, n_files: int, per_file: int, threads: str,
                     env: dict[str, str], name: str) -> tuple[str, list[Path]]:
    """A BLAST-only index of ``db_fasta`` in ``work`` and ``n_files`` query files of ``per_file``
    ``query_set`` queries simulated from it (file i: seed 100 + i), ``work/list.txt`` of them and
    ``work/warm.txt`` of the first: the index path and the files."""
    import shutil

    db = work / "db.fa"
    with _text_handle(db_fasta) as src, open(db, "w") as dst:
        shutil.copyfileobj(src, dst)
    t0 = time.perf_counter()
    harness.run_process([sys.executable, "-P", "-m", "gseek", "--quiet", "-p", threads, "--device", "cpu", "index",
                         str(db), "--parts", "text", "-o", str(work / "db")], env=env)
    files = []
    for i in range(n_files):
        f = work / f"q{i:02d}.fa"
        blast_set(str(db), f"{query_set}@{per_file}", seed=100 + i).write(f)
        files.append(f)
    (work / "list.txt").write_text("".join(f"{f}\n" for f in files))
    (work / "warm.txt").write_text(f"{files[0]}\n")
    print(f"  {name}: index and {n_files} x {per_file} queries ({query_set}) in {time.perf_counter() - t0:.1f} s",
          file=sys.stderr, flush=True)
    return str(work / "db.gseek"), files


@benchmark("pipeline-blast", "many BLAST query files vs one database: gseek pipeline --task megablast|blastn, "
           "one GPU against several (--gpus SET), outputs compared", _pipeline_blast_options)
def bench_pipeline_blast(args: argparse.Namespace) -> Report:
    """``python benchmarks/run.py pipeline-blast --db bacteria75.fa.gz --set 10kb --files 8 --per-file 25
    --gpus '0;0,1' --device gpu --no-sequential`` (issue 20's BLAST scaling on one host)."""
    import shutil

    if args.set not in BLAST_SETS or min(args.files, args.per_file, args.threads) < 1:
        raise SystemExit(f"run.py pipeline-blast: --set one of {', '.join(BLAST_SETS)}; --files, --per-file, "
                         "--threads >= 1")
    work = Path(tempfile.mkdtemp(prefix="gseek-pipe-blast-bench-"))
    try:
        env = _numba_cache_env()
        T = str(args.threads)
        gseek = [sys.executable, "-P", "-m", "gseek", "--quiet", "-p", T]
        idx, files = _blast_list_data(work, args.db, args.set, args.files, args.per_file, T, env, "pipeline-blast")
        base_cmd = gseek + ["--device", args.device, "pipeline", "--task", args.task, "-x", idx,
                            "--workers", str(args.workers)]

        def cmd(listing: Path, outdir: Path, gpus: str | None, split: str | None = None) -> list[str]:
            return base_cmd + ["--queries", str(listing), "--outdir", str(outdir)] + \
                (["--gpus", gpus] if gpus else []) + (["--split", split] if split else [])

        print("  pipeline-blast: warm-up run ...", file=sys.stderr, flush=True)
        harness.run_process(cmd(work / "warm.txt", work / "warm-out", _gpu_sets(args.gpus)[0]), env=env)
        runs = [(g, None) for g in _gpu_sets(args.gpus)] + \
            [(g.strip(), "database") for g in args.splits.split(";") if g.strip()]
        rows, results, first = [], [], None
        for k, (gpus, split) in enumerate(runs):
            outdir = work / f"out{k}"
            label = f"gseek pipeline --task {args.task}" + (f" --gpus {gpus}" if gpus else "") + \
                (f" --split {split}" if split else "")
            print(f"  pipeline-blast: {label} ...", file=sys.stderr, flush=True)
            _, _, busy, proc = _sampled_runs([cmd(work / "list.txt", outdir, gpus, split)], env)
            first = first or outdir
            differ = [f.name for f in files if not _same_file(outdir / f"{f.stem}.tsv", first / f"{f.stem}.tsv")]
            hsps = sum(_count_rows(outdir / f"{f.stem}.tsv") for f in files if (outdir / f"{f.stem}.tsv").is_file())
            results.append({"gpus": gpus, "split": split, "seconds": proc.seconds, "cpu_s": proc.cpu_s,
                            "busy": busy, "identical": not differ, "differing_files": differ, "hsps": hsps,
                            "command": shlex.join(proc.cmd)})
            rows.append([label, f"{proc.seconds:.2f}", f"{proc.cpu_s:.1f}", _busy_text(busy, gpus), f"{hsps:,}",
                         ratio(results[0]["seconds"], proc.seconds), "yes" if not differ else f"**{len(differ)} differ**"])
        table = markdown_table(["command", "wall s", "CPU s", "GPU busy (each GPU used)", "HSPs", "vs the first run",
                                "output = first run's"], rows, align="lrrrrrl")
        notes = [f"{args.files} query files x {args.per_file} queries of the set {_describe_set(args.set)}, simulated "
                 f"from the database by gseek.datasets.simulate.blast_queries (file i: seed 100 + i; both strands); "
                 f"`gseek index --parts text`; -p {T}, "
                 f"--device {args.device}, --workers {args.workers}; one untimed warm-up run on the first file",
                 GPU_BUSY_NOTE]
        return Report(title="BLAST-style search through the pipeline: one GPU against several",
                      data={"db": str(args.db), "set": args.set, "files": args.files, "per_file": args.per_file,
                            "task": args.task, "summary": f"{args.files} x {args.per_file} {args.set} queries, "
                            f"{args.task}, database {Path(args.db).name}"},
                      table=table, notes=notes, results=results,
                      extra={"all_identical": all(r["identical"] for r in results)})
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _cluster_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--queries", type=int, default=1000, help="query sequences per file (default 1000)")
    p.add_argument("--targets", type=int, default=2000, help="database sequences (default 2000)")
    p.add_argument("--length", type=int, default=1500, help="ancestor length in bp (default 1500)")
    p.add_argument("--files", type=int, default=10, help="query files (default 10)")
    p.add_argument("--seed", type=int, default=42, help="data seed (default 42)")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads")
    p.add_argument("--device", default="gpu", help="gseek --device of the runs and workers (default gpu)")
    p.add_argument("--local-clusters", default="1,2",
                   help="sizes of the --local-cluster runs, comma-separated (default 1,2: one worker, then two "
                        "sharing the device)")


@benchmark("cluster", "Dask runner overhead: gseek pipeline --task align in one process against --local-cluster 1 "
           "(and 2 workers sharing the device), outputs compared", _cluster_options)
def bench_cluster(args: argparse.Namespace) -> Report:
    """``python benchmarks/run.py cluster --files 10 --queries 1000 --threads 16`` (issue 19: the Dask
    runner's overhead on one GPU; the same pipeline-align data as ``pipeline-align``)."""
    import shutil

    work = Path(tempfile.mkdtemp(prefix="gseek-cluster-bench-"))
    try:
        data = _pipeline_align_data(work, args.files, args.queries, args.targets, args.length, args.seed)
        db, files, cells = data.pop("db"), data.pop("files"), data["cells"]
        env = _numba_cache_env()
        env["DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION"] = "1.0"
        base = [sys.executable, "-P", "-m", "gseek", "--quiet", "--device", args.device, "-p", str(args.threads),
                "pipeline", "--task", "align", "-t", str(db), "--mode", "local", "--score-only"]
        sizes = [int(n) for n in args.local_clusters.split(",") if n.strip()]
        runs = [("in-process", []), *((f"--local-cluster {n}" + (" (sharing the device)" if n > 1 else ""),
                                       ["--local-cluster", str(n)]) for n in sizes)]
        harness.run_process(base + ["--queries", str(work / "warm-list.txt"), "--outdir", str(work / "warm")], env=env)
        rows, results, first = [], [], None
        for k, (label, extra) in enumerate(runs):
            outdir = work / f"out{k}"
            print(f"  cluster: {label} ...", file=sys.stderr, flush=True)
            _, _, busy, proc = _sampled_runs([base + ["--queries", str(work / "list.txt"), "--outdir", str(outdir),
                                                      *extra]], env)
            first = first or outdir
            differ = [f.name for f in files if not _same_file(outdir / f"{f.stem}.tsv", first / f"{f.stem}.tsv")]
            results.append({"run": label, "seconds": proc.seconds, "cpu_s": proc.cpu_s, "busy": busy,
                            "identical": not differ, "command": shlex.join(proc.cmd)})
            rows.append([f"gseek pipeline --task align {label}", f"{proc.seconds:.2f}", f"{proc.cpu_s:.1f}",
                         _busy_text(busy), _gcups(cells, proc.seconds),
                         f"{100 * (proc.seconds / results[0]['seconds'] - 1):+.1f} %",
                         "yes" if not differ else f"**{len(differ)} differ**"])
        table = markdown_table(["command", "wall s", "CPU s", "GPU busy", "GCUPS", "vs in-process",
                                "outputs = in-process"], rows, align="lrrrrrl")
        notes = [f"{args.files} query files x {args.queries:,} sequences against {data['targets']:,} database "
                 f"sequences (pipeline-align data, seed {args.seed}), local, score only, {cells:.3g} cells; "
                 f"--device {args.device}, -p {args.threads}; one untimed in-process warm-up on "
                 f"{PIPE_ALIGN_WARMUP[0]} x {PIPE_ALIGN_WARMUP[1]}; the cluster runs start their LocalCluster "
                 "(worker processes, each loading the targets once) inside the timed command", GPU_BUSY_NOTE]
        return Report(title="Dask runner overhead on one device", data={**data, "summary":
                      f"{args.files} x {args.queries} queries vs {data['targets']} targets, {cells:.3g} cells"},
                      table=table, notes=notes, results=results,
                      extra={"all_identical": all(r["identical"] for r in results)})
    finally:
        shutil.rmtree(work, ignore_errors=True)


class _DaskProcesses:
    """A ``dask scheduler`` and ``dask worker`` processes on this host (``python -P``: the
    repository's own ``gseek/`` folder must not shadow the installed package), their output in
    ``work/dask.log``; :meth:`close` ends them all."""

    def __init__(self, work: Path, env: dict[str, str]) -> None:
        import subprocess

        self.env, self.file = env, work / "scheduler.json"
        self.log = open(work / "dask.log", "w")
        self.procs: dict[str, subprocess.Popen] = {}
        self.procs["scheduler"] = subprocess.Popen(
            [sys.executable, "-P", "-m", "distributed.cli.dask_scheduler", "--scheduler-file", str(self.file),
             "--port", "0", "--no-dashboard"], env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def worker(self, name: str, nthreads: int = 1, **env: str) -> None:
        """Start worker ``name`` (``nthreads`` threads, no memory limit) with ``env`` added to its environment."""
        import subprocess

        self.procs[name] = subprocess.Popen(
            [sys.executable, "-P", "-m", "distributed.cli.dask_worker", "--scheduler-file", str(self.file), "--name",
             name, "--nthreads", str(nthreads), "--memory-limit", "0", "--no-dashboard"], env=dict(self.env, **env),
            stdout=self.log, stderr=subprocess.STDOUT)

    def wait(self, count: int) -> str:
        """The scheduler's address, once ``count`` workers are up."""
        import json as _json

        end = time.monotonic() + 120
        while time.monotonic() < end:
            if self.file.exists():
                from distributed import Client

                address = _json.loads(self.file.read_text())["address"]
                with Client(address, timeout=30) as c:
                    c.wait_for_workers(count, timeout=120)
                return address
            time.sleep(0.2)
        raise SystemExit("the dask scheduler did not start (see dask.log)")

    def close(self) -> None:
        import subprocess

        for p in reversed(list(self.procs.values())):
            p.terminate()
        for p in self.procs.values():
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        self.log.close()


def _hetero_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seqs", type=int, default=6000, help="sequences aligned all-vs-all (default 6000)")
    p.add_argument("--length", type=int, default=1500, help="ancestor length in bp (default 1500)")
    p.add_argument("--cpu-workers", type=int, default=3, help="CPU-only workers beside the GPU worker (default 3)")
    p.add_argument("--cpu-threads", type=int, default=4, help="-p of each CPU worker's engine (default 4)")
    p.add_argument("--seed", type=int, default=42, help="data seed (default 42)")
    p.add_argument("--task", choices=("align", "map"), default="align",
                   help="align: all-vs-all DP, jobs as Dask tasks (default); map: gseek pipeline of read files, a "
                        "file a task")
    p.add_argument("--ref", default=None, help="map: the reference FASTA (.gz ok)")
    p.add_argument("--files", type=int, default=24, help="map: read files (default 24)")
    p.add_argument("--reads-per-file", type=int, default=250_000, help="map: reads of 100 bp per file (default 250k)")
    p.add_argument("--alone-threads", default=None,
                   help="map: the -p of each run on the GPU worker alone, comma-separated (default --cpu-threads; "
                        "e.g. 4,16: also the GPU worker with every core)")


def _hetero_map(args: argparse.Namespace, work: Path, env: dict[str, str], dask: _DaskProcesses) -> Report:
    """``cluster-hetero --task map``: ``gseek pipeline`` of ``--files`` read files (both mates of simulated pairs
    as single reads, 0-3 substitutions, file i from seed ``seed + i``) against ``--ref``, ``-v 3``, a file a Dask
    task, on the GPU worker alone, then with the CPU workers; outputs compared without their @PG lines (whose
    DS names the backend that wrote them)."""
    import re as _re
    import shutil

    import datagen

    t0 = time.perf_counter()
    lists = {}
    for kind, count, per_file in (("warm", 8, 20_000), ("run", args.files, args.reads_per_file)):
        lines = []
        for i in range(count):
            r1, r2 = work / f"{kind}{i:03d}.fq", work / "mate2.fq"
            datagen.kmismatch_pairs_fastq(args.ref, per_file // 2, 100, 3, r1, r2, seed=args.seed + i)
            with open(r1, "ab") as dst, open(r2, "rb") as src:
                shutil.copyfileobj(src, dst, 1 << 24)
            lines.append(f"{r1}\n")
        lists[kind] = work / f"{kind}.txt"
        lists[kind].write_text("".join(lines))
    print(f"  cluster-hetero: reads written in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    harness.run_process([sys.executable, "-P", "-m", "gseek", "--quiet", "index", args.ref, "-o", str(work / "idx")],
                        env=env)
    dask.worker("gpu")
    address = dask.wait(1)
    reads = args.files * (args.reads_per_file // 2 * 2)

    def pipeline(kind: str, run: str, threads: int) -> harness.ProcResult:
        folder = work / run
        folder.mkdir()
        return harness.run_process([sys.executable, "-P", "-m", "gseek", "--quiet", "-p", str(threads),
                                    "pipeline", "--queries", str(lists[kind]), "-x", str(work / "idx"), "-v", "3",
                                    "--outdir", "out", "--scheduler", address], env=env, cwd=folder)

    def same(a: Path, b: Path) -> bool:
        names = sorted(p.name for p in a.glob("*.sam"))
        if names != sorted(p.name for p in b.glob("*.sam")) or not names:
            return False
        for name in names:
            with open(a / name, "rb") as x, open(b / name, "rb") as y:
                if [line for line in x if not line.startswith(b"@PG")] != [line for line in y
                                                                           if not line.startswith(b"@PG")]:
                    return False
        return True

    rows, results = [], []
    alone = [int(t) for t in (args.alone_threads or str(args.cpu_threads)).split(",")]
    runs = [(f"GPU worker alone, -p {t}", 0, t) for t in alone]
    runs.append((f"GPU worker + {args.cpu_workers} CPU workers, -p {args.cpu_threads} each", args.cpu_workers,
                 args.cpu_threads))
    for label, extra_workers, threads in runs:
        for k in range(extra_workers):
            dask.worker(f"cpu{k}", CUDA_VISIBLE_DEVICES="")
        if extra_workers:
            dask.wait(1 + extra_workers)
        print(f"  cluster-hetero: {label}: warm-up ...", file=sys.stderr, flush=True)
        pipeline("warm", f"warm{len(results)}", threads)
        print(f"  cluster-hetero: {label} ...", file=sys.stderr, flush=True)
        run = f"run{len(results)}"
        proc = pipeline("run", run, threads)
        m = _re.search(r"files per worker: (.*)", proc.stderr)
        shares = dict((w.rsplit(" ", 1)[0], int(w.rsplit(" ", 1)[1])) for w in m.group(1).split(", ")) if m else {}
        shares = {**{f"cpu{k}": 0 for k in range(extra_workers)}, **shares}
        identical = same(work / run / "out", work / "run0" / "out")
        results.append({"run": label, "seconds": proc.seconds, "files_by_worker": shares, "identical": identical,
                        "command": shlex.join(proc.cmd)})
        total = sum(shares.values()) or 1
        rows.append([label, f"{proc.seconds:.2f}", f"{reads / proc.seconds / 1e6:.2f}",
                     ", ".join(f"{w} {c} ({100 * c / total:.0f} %)" for w, c in sorted(shares.items())),
                     ratio(results[0]["seconds"], proc.seconds), "yes" if identical else "**no**"])
    table = markdown_table(["cluster", "wall s", "M reads/s", "files per worker", "vs the first run",
                            "output = first (records)"], rows, align="lrrlrl")
    notes = [f"gseek -p P pipeline -v 3 of {args.files} files x {args.reads_per_file:,} reads of "
             f"100 bp (both mates of benchmarks/datagen.py kmismatch_pairs_fastq pairs, seed {args.seed} + file) "
             f"against {Path(args.ref).name}; a file a Dask task (worker-saturation 1.0); one dask scheduler and "
             f"workers on this host (one thread each); the GPU worker sees the GPU, each CPU worker runs with "
             f"CUDA_VISIBLE_DEVICES=; each cluster warmed by an untimed pipeline of 8 files of 20,000 reads"]
    return Report(title="Heterogeneous Dask cluster, read mapping: one GPU worker and CPU workers", data={
                  "summary": f"{args.files} read files, 1 GPU + {args.cpu_workers} CPU workers"},
                  table=table, notes=notes, results=results,
                  extra={"all_identical": all(r["identical"] for r in results)})


@benchmark("cluster-hetero", "a Dask cluster of one GPU worker and CPU-only workers on this host: gseek align "
           "--all-vs-all (or a pipeline of read files, --task map) against the GPU worker alone, jobs per worker",
           _hetero_options)
def bench_cluster_hetero(args: argparse.Namespace) -> Report:
    """``python benchmarks/run.py cluster-hetero --seqs 6000 --cpu-workers 3 --cpu-threads 4`` (issue 19).

    Starts ``dask scheduler`` and workers (``python -m distributed.cli.dask_worker``, one thread
    each, ``--memory-limit 0``): a worker named ``gpu`` that sees the GPU, and ``cpuK`` workers with
    ``CUDA_VISIBLE_DEVICES=`` (empty: ``--device auto`` takes their CPU); runs ``gseek align
    --all-vs-all`` with ``--scheduler`` on the GPU worker alone, then with the CPU workers too;
    compares the outputs; reads the jobs each worker ran from ``GSEEK_CLUSTER_STATS``."""
    import re as _re
    import shutil

    work = Path(tempfile.mkdtemp(prefix="gseek-hetero-bench-"))
    dask = None
    try:
        env = _numba_cache_env()
        env["DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION"] = "1.0"
        env["GSEEK_CLUSTER_STATS"] = "1"
        if args.task == "map":
            if not args.ref:
                raise SystemExit("cluster-hetero --task map: give --ref FASTA")
            dask = _DaskProcesses(work, env)
            return _hetero_map(args, work, env, dask)
        data = _pipeline_align_data(work, 1, 1, args.seqs, args.length, args.seed)
        seqs = data["db"]
        n = args.seqs
        cells = data["db_bases"] ** 2 // 2  # about: sum over i < j of len_i * len_j
        dask = _DaskProcesses(work, env)
        dask.worker("gpu")
        address = dask.wait(1)
        cmd = [sys.executable, "-P", "-m", "gseek", "align", "--all-vs-all", "-i", str(seqs), "--mode", "local",
               "--score-only", "--scheduler", address]
        lines = Path(seqs).read_text().splitlines(keepends=True)
        starts = [i for i, line in enumerate(lines) if line.startswith(">")]
        (work / "warm.fa").write_text("".join(lines[:starts[min(60, len(starts) - 1)]]))
        warm = [a if a != str(seqs) else str(work / "warm.fa") for a in cmd]
        harness.run_process(warm + ["-p", str(args.cpu_threads), "-o", str(work / "warm.tsv")], env=env)
        rows, results = [], []
        for label, extra_workers in (("GPU worker alone", 0), (f"GPU worker + {args.cpu_workers} CPU workers",
                                                                args.cpu_workers)):
            for k in range(extra_workers):
                dask.worker(f"cpu{k}", CUDA_VISIBLE_DEVICES="")
            if extra_workers:
                dask.wait(1 + extra_workers)
            out = work / f"{len(results)}.tsv"
            print(f"  cluster-hetero: {label} ...", file=sys.stderr, flush=True)
            proc = harness.run_process(cmd + ["-p", str(args.cpu_threads), "-o", str(out)], env=env)
            m = _re.search(r"jobs per worker: (.*?); backup copies sent (\d+), used (\d+)", proc.stderr)
            for line in proc.stderr.splitlines():
                if "worker timings" in line:
                    print(f"  cluster-hetero: {line}", file=sys.stderr, flush=True)
            shares = dict((w.rsplit(" ", 1)[0], int(w.rsplit(" ", 1)[1])) for w in m.group(1).split(", ")) if m else {}
            shares = {**{f"cpu{k}": 0 for k in range(extra_workers)}, **shares}  # a worker with no job used: 0
            identical = not results or _same_file(out, work / "0.tsv")
            results.append({"run": label, "seconds": proc.seconds, "jobs_by_worker": shares,
                            "backups_sent": int(m.group(2)) if m else None, "backups_used": int(m.group(3)) if m else None,
                            "identical": identical, "command": shlex.join(proc.cmd)})
            total = sum(shares.values()) or 1
            rows.append([label, f"{proc.seconds:.2f}", _gcups(cells, proc.seconds),
                         ", ".join(f"{w} {c} ({100 * c / total:.0f} %)" for w, c in sorted(shares.items())),
                         f"{results[-1]['backups_sent']} / {results[-1]['backups_used']}",
                         ratio(results[0]["seconds"], proc.seconds), "yes" if identical else "**no**"])
        table = markdown_table(["cluster", "wall s", "GCUPS (about)", "jobs per worker", "backup copies sent / used",
                                "vs GPU worker alone", "output = first"], rows, align="lrrlrrl")
        notes = [f"gseek align --all-vs-all of {n:,} sequences ({data['db_bases']:,} bp; dp_families, "
                 f"{args.length} bp ancestors, seed {args.seed}), local, score only, about {cells:.3g} cells; "
                 "one dask scheduler and workers on this host (one thread each, --memory-limit 0, worker-saturation "
                 "1.0); the GPU worker sees the GPU (--device auto takes it), each CPU worker runs with "
                 f"CUDA_VISIBLE_DEVICES= and -p {args.cpu_threads}; one untimed warm-up run on the GPU worker",
                 "backup copies: a job running long while a worker idles is sent to that worker too, the "
                 "first result taken (pipeline/cluster.py BACKUP_AFTER); a worker timed at 10x the run's "
                 "median job gets no new job while a faster one is up (SLOW_WORKER)"]
        return Report(title="Heterogeneous Dask cluster: one GPU worker and CPU workers", data={
                      "summary": f"all-vs-all of {n} sequences, 1 GPU + {args.cpu_workers} CPU workers"},
                      table=table, notes=notes, results=results,
                      extra={"all_identical": all(r["identical"] for r in results)})
    finally:
        if dask is not None:
            dask.close()
        shutil.rmtree(work, ignore_errors=True)


def _cluster_gpus_options(p: argparse.ArgumentParser) -> None:
    _cluster_options(p)
    p.add_argument("--gpus", default="0,1", help="the GPUs, one dask worker each (default 0,1)")
    p.add_argument("--blast-db", default=None, help="also the BLAST runs against this FASTA (.gz ok)")
    p.add_argument("--blast-files", type=int, default=16, help="BLAST query files (default 16)")
    p.add_argument("--blast-per-file", type=int, default=25, help="queries per BLAST file (default 25)")
    p.add_argument("--blast-set", default="10kb", help=f"BLAST query set ({', '.join(BLAST_SETS)}; default 10kb)")
    p.add_argument("--worker-threads", type=int, default=2,
                   help="threads of each GPU worker (default 2: a BLAST job on each of the GPU's two searchers)")
    p.add_argument("--no-align", action="store_true", help="only the BLAST runs")


@benchmark("cluster-gpus", "one dask worker per GPU (dask-cuda's convention) against the in-process pipeline on "
           "the same GPUs: --task align, and blastn with the database split across the workers", _cluster_gpus_options)
def bench_cluster_gpus(args: argparse.Namespace) -> Report:
    """``python benchmarks/run.py cluster-gpus --gpus 0,1 --files 12 --queries 1000 --blast-db bacteria75.fa.gz``
    (issue 20: the Dask runner on several GPUs; issue 19: its overhead on one).

    Starts a ``dask scheduler`` and one ``dask worker`` per GPU (``CUDA_VISIBLE_DEVICES=N``, one
    thread, named ``gpuN``) before timing; every command is timed whole, outputs compared with the
    first run's. Align: in-process ``--gpus 0``, the cluster with GPU 0's worker alone, in-process
    ``--gpus 0,1,...``, the cluster with every worker. BLAST (``--blast-db``): in-process on the
    first GPU and on all, the cluster (a query file per task), the cluster with ``--split database``."""
    import shutil

    gpus = [g.strip() for g in args.gpus.split(",") if g.strip()]
    work = Path(tempfile.mkdtemp(prefix="gseek-cluster-gpus-bench-"))
    dask = None
    try:
        data = _pipeline_align_data(work, args.files, args.queries, args.targets, args.length, args.seed)
        db, files, cells = data.pop("db"), data.pop("files"), data["cells"]
        env = _numba_cache_env()
        env["DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION"] = "1.0"
        T, per = str(args.threads), str(max(1, args.threads // len(gpus)))
        gseek = [sys.executable, "-P", "-m", "gseek", "--quiet", "--device", args.device]
        dask = _DaskProcesses(work, env)
        dask.worker(f"gpu{gpus[0]}", args.worker_threads, CUDA_VISIBLE_DEVICES=gpus[0])
        address = dask.wait(1)
        align = ["pipeline", "--task", "align", "-t", str(db), "--mode", "local", "--score-only"]
        (work / "warm2.txt").write_text("".join(f"warm-q.fa\tw{k}.tsv\n" for k in range(len(gpus))))

        def run(label, cmd, used, outdir, outputs, first, table, results, units):
            print(f"  cluster-gpus: {label} ...", file=sys.stderr, flush=True)
            _, _, busy, proc = _sampled_runs([cmd], env)
            differ = [o for o in outputs if not _same_file(outdir / o, first / o)]
            results.append({"run": label, "seconds": proc.seconds, "cpu_s": proc.cpu_s, "busy": busy,
                            "identical": not differ, "command": shlex.join(proc.cmd)})
            table.append([label, f"{proc.seconds:.2f}", f"{proc.cpu_s:.1f}", _busy_text(busy, used),
                          units(outdir, proc.seconds), ratio(results[0]["seconds"], proc.seconds),
                          "yes" if not differ else f"**{len(differ)} differ**"])

        rows: list[list[str]] = []
        results: list[dict] = []
        names = [f"{f.stem}.tsv" for f in files]
        one, every = gpus[0], ",".join(gpus)

        def align_cmd(outdir, gpu_list=None, cluster=False, listing="list.txt", threads=T):
            return gseek + ["-p", threads] + align + \
                ["--queries", str(work / listing), "--outdir", str(outdir)] + \
                (["--gpus", gpu_list] if gpu_list and args.device != "cpu" else []) + \
                (["--scheduler", address] if cluster else [])

        tables: list[str] = []
        if args.no_align:  # every worker up before the BLAST runs
            for g in gpus[1:]:
                dask.worker(f"gpu{g}", args.worker_threads, CUDA_VISIBLE_DEVICES=g)
            dask.wait(len(gpus))
        else:
            harness.run_process(align_cmd(work / "warm-a", one, listing="warm-list.txt"), env=env)
            harness.run_process(align_cmd(work / "warm-b", cluster=True, listing="warm-list.txt"), env=env)

            def units(outdir: Path, sec: float) -> str:
                return _gcups(cells, sec)

            first = work / "a0"
            run(f"in-process --gpus {one}", align_cmd(first, one), one, first, names, first, rows, results, units)
            run(f"--scheduler: worker gpu{one} alone", align_cmd(work / "a1", cluster=True), one, work / "a1", names,
                first, rows, results, units)
            for g in gpus[1:]:
                dask.worker(f"gpu{g}", args.worker_threads, CUDA_VISIBLE_DEVICES=g)
            dask.wait(len(gpus))
            harness.run_process(align_cmd(work / "warm-c", cluster=True, listing="warm2.txt", threads=per), env=env)
            run(f"in-process --gpus {every}", align_cmd(work / "a2", every), every, work / "a2", names, first, rows,
                results, units)
            run(f"--scheduler: {len(gpus)} workers, one per GPU", align_cmd(work / "a3", cluster=True, threads=per),
                every, work / "a3", names, first, rows, results, units)
            tables += ["**Align** (`gseek pipeline --task align`, " + f"{args.files} files x {args.queries} queries vs "
                      f"{data['targets']} targets, {cells:.3g} cells)\n\n" + markdown_table(
                          ["command", "wall s", "CPU s", "GPU busy (each GPU used)", "GCUPS", "vs 1 GPU in-process",
                           "output = first"], rows, align="lrrrrrl")]
        blast_results: list[dict] = []
        if args.blast_db:
            bwork = work / "blast"
            bwork.mkdir()
            idx, bfiles = _blast_list_data(bwork, args.blast_db, args.blast_set, args.blast_files,
                                           args.blast_per_file, T, env, "cluster-gpus")
            (bwork / "warm2.txt").write_text("".join(f"{bfiles[0]}\tw{k}.tsv\n" for k in range(len(gpus))))
            bnames = [f"{f.stem}.tsv" for f in bfiles]

            def blast_cmd(outdir, gpu_list=None, cluster=False, split=None, listing="list.txt"):
                return gseek + ["-p", per if cluster else T, "pipeline", "--task", "blastn", "-x", idx, "--queries",
                                str(bwork / listing), "--outdir", str(outdir)] + \
                    (["--gpus", gpu_list] if gpu_list and args.device != "cpu" else []) + \
                    (["--scheduler", address] if cluster else []) + (["--split", split] if split else [])

            harness.run_process(blast_cmd(bwork / "warm-a", every, listing="warm.txt"), env=env)
            harness.run_process(blast_cmd(bwork / "warm-b", cluster=True, listing="warm2.txt"), env=env)
            harness.run_process(blast_cmd(bwork / "warm-c", cluster=True, split="database", listing="warm.txt"),
                                env=env)
            brows: list[list[str]] = []
            bfirst = bwork / "b0"

            def hsps(outdir: Path, sec: float) -> str:
                return f"{sum(_count_rows(outdir / n) for n in bnames if (outdir / n).is_file()):,}"

            run(f"in-process --gpus {one}", blast_cmd(bfirst, one), one, bfirst, bnames, bfirst, brows, blast_results,
                hsps)
            run(f"in-process --gpus {every}", blast_cmd(bwork / "b1", every), every, bwork / "b1", bnames, bfirst,
                brows, blast_results, hsps)
            run(f"--scheduler: {len(gpus)} workers, a job per task", blast_cmd(bwork / "b2", cluster=True),
                every, bwork / "b2", bnames, bfirst, brows, blast_results, hsps)
            run(f"--scheduler: {len(gpus)} workers, --split database", blast_cmd(bwork / "b3", cluster=True,
                                                                              split="database"),
                every, bwork / "b3", bnames, bfirst, brows, blast_results, hsps)
            tables.append(f"**BLAST** (`gseek pipeline --task blastn`, {args.blast_files} files x "
                          f"{args.blast_per_file} {args.blast_set} queries, database {Path(args.blast_db).name})\n\n"
                          + markdown_table(["command", "wall s", "CPU s", "GPU busy (each GPU used)", "HSPs",
                                            "vs 1 GPU in-process", "output = first"], brows, align="lrrrrrl"))
        notes = [(f"a dask scheduler and one dask worker per GPU ({', '.join('gpu' + g for g in gpus)}: "
                  f"CUDA_VISIBLE_DEVICES=N, --nthreads {args.worker_threads}, --memory-limit 0), started before the "
                  "timed commands; "
                  "untimed warm-ups (in-process and on the workers) first; each command timed whole, from process "
                  f"start; -p {T} in-process, -p {per} per worker with every worker (-p {T} with one); "
                  f"--device {args.device}"), GPU_BUSY_NOTE]
        all_results = results + blast_results
        return Report(title="Dask workers, one per GPU, against the in-process pipeline", data={
                      **data, "summary": f"{len(gpus)} GPUs; align {args.files} x {args.queries}"
                      + (f"; blastn {args.blast_files} x {args.blast_per_file} {args.blast_set}" if args.blast_db
                         else "")}, table="\n\n".join(tables), notes=notes, results=all_results,
                      extra={"all_identical": all(r["identical"] for r in all_results)})
    finally:
        if dask is not None:
            dask.close()
        shutil.rmtree(work, ignore_errors=True)


# -------------------------------------------------------------------- runner


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_worker"]:
        spec = json.loads(argv[1])
        print(json.dumps(WORKERS[spec["task"]](spec)), flush=True)
        return 0

    parser = argparse.ArgumentParser(
        prog="run.py", description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="folder for the JSON records (default benchmarks/out)")
    sub = parser.add_subparsers(dest="bench", required=True, metavar="BENCHMARK")
    for name, b in BENCHMARKS.items():
        b.add_options(sub.add_parser(name, help=b.help, description=b.help))
    args = parser.parse_args(argv)

    started = harness.now_utc()
    busy_before = harness.idle_check(2.0)
    where = harness.machine()
    commit = harness.git_commit()
    command = "python " + shlex.join([os.path.relpath(sys.argv[0]) if sys.argv[0] else "run.py", *argv])
    print(f"# {args.bench}: {command}", file=sys.stderr)
    print(f"# {started.isoformat()} on {where['host']}: {where['cpu']}, {where['cores']} cores, "
          f"GPU {where['device']}, commit {commit}", file=sys.stderr, flush=True)
    if busy_before > 0.1:
        print(f"# warning: other processes keep {busy_before:.0%} of the CPUs busy; timings will be skewed",
              file=sys.stderr, flush=True)

    load = harness.HostLoad()
    t0 = time.perf_counter()
    report = BENCHMARKS[args.bench].run(args)
    elapsed = time.perf_counter() - t0
    other_cpu = load.other_fraction()
    report.notes.append(
        f"other processes on the host used {other_cpu:.0%} of its CPU time during the run "
        f"({busy_before:.0%} in the 2 s before it)"
    )
    if other_cpu > 0.1:
        print(f"# warning: other processes used {other_cpu:.0%} of the CPUs during the run; "
              "timings are skewed", file=sys.stderr, flush=True)

    record = {
        "benchmark": args.bench,
        "date": started.isoformat(),
        **where,
        "commit": commit,
        "command": command,
        "cwd": os.getcwd(),
        "versions": harness.versions(["gseek", "numpy", "numba", "pysam", "Bio", "cupy"]),
        "data": report.data,
        "results": report.results,
        "notes": report.notes,
        "table": report.table,
        "elapsed_s": elapsed,
        "loadavg_end": list(os.getloadavg()),
        "other_cpu_before": busy_before,
        "other_cpu_during": other_cpu,
        **report.extra,
    }
    path = harness.write_record(args.bench, record, args.out)

    v = record["versions"]
    data = report.data
    print()
    print(f"### {report.title}")
    print()
    print(
        f"{started.date().isoformat()} · {where['cpu']}, {where['cores']} cores · GPU: {where['device']} · "
        f"commit `{commit}` · Python {where['python']}, "
        + ", ".join(f"{k} {val}" for k, val in v.items())
    )
    print()
    if "summary" in data:
        print(f"Data: {data['summary']}")
    else:
        print(f"Data: {data.get('kind', '')} {data.get('reads', 0):,} × {data.get('length', '?')} bp, "
              f"{harness.human_bytes(data.get('bytes', 0))} plain / {harness.human_bytes(data.get('gz_bytes', 0))} "
              f"gzip (`{Path(data.get('path', '')).name}`, sha256 {data.get('sha256', '')[:12]}; "
              f"{data.get('generator', '')})")
    print()
    print(f"Command: `{command}`")
    print()
    print(report.table)
    print()
    for note in report.notes:
        print(f"- {note}")
    print()
    print(f"Record: `{os.path.relpath(path, harness.REPO)}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())

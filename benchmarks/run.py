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


# ------------------------------------------------------------------ pipeline


def _pipeline_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("fasta", help="reference FASTA (plain or .gz)")
    p.add_argument("--files", type=int, default=20, help="query files (default 20)")
    p.add_argument("--reads", type=int, default=250_000, help="reads per file (default 250k)")
    p.add_argument("--length", type=int, default=100, help="read length (default 100)")
    p.add_argument("-v", "--mismatches", type=int, default=3, help="k (default 3)")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads")
    p.add_argument("--workers", type=int, default=4, help="pipeline finalize workers (default 4)")
    p.add_argument("--device", default="auto", help="gseek --device (default auto)")


class _GpuSampler:
    """Samples nvidia-smi's utilization.gpu (share of time a kernel ran) every 100 ms."""

    def __init__(self) -> None:
        import shutil
        import subprocess

        self.proc = None
        if shutil.which("nvidia-smi") and harness.gpu_name() != "none":
            self.proc = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-lms", "100"],
                stdout=subprocess.PIPE, text=True)

    def stop(self) -> list[float]:
        if self.proc is None:
            return []
        self.proc.terminate()
        out, _ = self.proc.communicate()
        return [float(x) for x in out.split() if x.replace(".", "").isdigit()]


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

        t0 = time.perf_counter()
        seq_cpu = 0.0
        for f in files:
            proc = harness.run_process(gseek + common + ["search", "-x", str(work / "ref"), "-q", str(f),
                                                         "-v", str(args.mismatches), "-o", str(f) + ".seq.sam"])
            seq_cpu += proc.cpu_s
        sequential = time.perf_counter() - t0

        sampler = _GpuSampler()
        proc = harness.run_process(gseek + common + ["pipeline", "--queries", str(work / "list.txt"), "-x",
                                                     str(work / "ref"), "--outdir", str(work / "out"), "-v",
                                                     str(args.mismatches), "--workers", str(args.workers)])
        busy = sampler.stop()
        same = all((work / "out" / (f.stem + ".sam")).read_bytes().split(b"\n@PG", 1)[1].split(b"\n", 1)[1]
                   == Path(str(f) + ".seq.sam").read_bytes().split(b"\n@PG", 1)[1].split(b"\n", 1)[1]
                   for f in files)
        rows = [["sequential gseek search x" + str(args.files), f"{sequential:.2f}", f"{seq_cpu:.1f}", "-", "1.00x"],
                [f"gseek pipeline --workers {args.workers}", f"{proc.seconds:.2f}", f"{proc.cpu_s:.1f}",
                 f"{sum(busy) / len(busy):.0f}%" if busy else "-", ratio(sequential, proc.seconds)]]
        table = markdown_table(["command", "wall s", "CPU s", "GPU busy (mean util.)", "vs sequential"], rows,
                               align="lrrrr")
        notes = [
            f"{args.files} FASTQ files x {args.reads:,} reads of {args.length} bp (kmismatch_reads, seeds 100..), "
            f"k={args.mismatches}, against {Path(args.fasta).name}; index built beforehand",
            "sequential = the sum of one `gseek search` process per file (start-up, index load and compile each "
            "time, as a user would run them); pipeline = one `gseek pipeline` process",
            "GPU busy = mean of nvidia-smi utilization.gpu sampled every 100 ms during the pipeline run",
            f"pipeline outputs identical to the sequential ones (records after @PG): {same}",
        ]
        data = {"summary": f"{Path(args.fasta).name}: {args.files} files x {args.reads:,} x {args.length} bp, "
                           f"k={args.mismatches}"}
        return Report(title="Pipeline over many query files", data=data, table=table, notes=notes,
                      results=[{"sequential_s": sequential, "pipeline_s": proc.seconds, "busy": busy,
                                "identical": same}])
    finally:
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

"""`index`: build the FM-index (gseek, bowtie-build, bwa index), then batched count/locate."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from . import harness
from .harness import markdown_table, run_worker, Timing
from .registry import benchmark, Report, WORKERS
from .common import text_handle


def _sample_patterns(fasta: str, n: int, length: int, seed: int):
    """``n`` substrings of ``length`` drawn uniformly from the contigs (never across two)."""
    import numpy as np

    from gseek import read_fastx

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
    from gseek import Index

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

    from gseek import read_fastx

    with harness.scratch_dir("gseek-index-bench-") as work:
        env = harness.peer_env_or_host("index", "gseek only") if not args.no_peers else dict(os.environ)
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
            with text_handle(fasta) as src, open(plain, "w") as dst:  # peers get the same plain FASTA
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

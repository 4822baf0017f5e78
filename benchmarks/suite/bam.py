"""`map-bam`: k-mismatch mapping to SAM against a sorted, indexed BAM in one run (issue 18)."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
import time
from pathlib import Path

from . import harness
from .harness import markdown_table
from .common import add_read_options
from .registry import benchmark, Report


#: Output kinds of ``map-bam``: name -> (file suffix, extra gseek options).
BAM_FORMATS = {"sam": (".sam", []), "bam": (".bam", []), "bam-unsorted": (".bam", ["--no-sort"]),
               "sam.gz": (".sam.gz", []), "bam-l6": (".bam", ["--compression-level", "6"])}


def _bam_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("fasta", help="reference FASTA (plain or .gz)")
    p.add_argument("--reads", type=int, default=10_000_000, help="simulated reads (default 10M)")
    add_read_options(p)
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

    from . import datagen

    from gseek import read_fastx

    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    if unknown := [f for f in formats if f not in BAM_FORMATS]:
        raise SystemExit(f"map-bam: unknown format(s) {', '.join(unknown)}; choose from {', '.join(BAM_FORMATS)}")
    with harness.scratch_dir("gseek-bam-bench-") as work:
        env = harness.peer_env_or_host("map-bam", "no samtools checks")
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
            (f"{args.reads:,} reads of {args.length} bp: both mates of benchmarks/suite/datagen.py "
            f"kmismatch_pairs_fastq pairs (seed 7, fragments from either strand, 0..{k} substitutions per mate) as single reads; -v {k}, -p {T}; whole command wall time from process "
            "start; index built beforehand; each round runs the formats in the order shown; time / SAM's = best "
            "over best"),
            ("BAM: coordinate-sorted and indexed by gseek (the .bai written beside it); bam-unsorted = --no-sort; "
            "checks: samtools quickcheck, view -c equal to the SAM's records, @HD SO, the .bai, idxstats total, "
            "view -c of a region against samtools view -c -e (same region) on the SAM"),
        ]
        data = {"summary": f"{Path(args.fasta).name}: {args.reads:,} × {args.length} bp, k={k}"}
        return Report(title="SAM vs sorted BAM output", data=data, table=table, notes=notes, results=results)

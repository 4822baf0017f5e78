"""`pipeline`, `pipeline-align`, `pipeline-blast`: many query files through `gseek pipeline` against one
sequential command per file."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path

from . import harness
from .harness import markdown_table, ratio
from .registry import benchmark, Report
from .align import ALIGN_SCORING
from .blast import blast_set, BLAST_SETS, describe_set
from .common import (
    busy_text, count_rows, gcups, GPU_BUSY_NOTE,
    numba_cache_env, parse_gpu_sets, same_file, sampled_runs, text_handle,
)


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


@benchmark("pipeline", "many query files: gseek pipeline vs sequential gseek search runs, GPU busy share",
           _pipeline_options)
def bench_pipeline(args: argparse.Namespace) -> Report:
    import shutil

    from gseek.datasets import kmismatch_reads

    with harness.scratch_dir("gseek-pipe-bench-") as work:
        plain = work / "ref.fa"
        with text_handle(args.fasta) as src, open(plain, "w") as dst:
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
            sequential, seq_cpu, seq_busy, _ = sampled_runs(
                [gseek + common + ["search", "-x", str(work / "ref"), "-q", str(f), "-v", str(args.mismatches),
                                   "-o", str(f) + ".seq.sam"] for f in files])
            rows.append(["sequential gseek search x" + str(args.files), f"{sequential:.2f}", f"{seq_cpu:.1f}",
                         busy_text(seq_busy), "1.00x"])

        runs, first_out = [], None
        for k, gpus in enumerate(parse_gpu_sets(args.gpus)):
            outdir = work / f"out{k}"
            extra = ["--gpus", gpus] if gpus else []
            _, _, busy, proc = sampled_runs([gseek + common + [
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
                         f"{proc.seconds:.2f}", f"{proc.cpu_s:.1f}", busy_text(busy, gpus), ratio(base, proc.seconds)])
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


def pipeline_align_data(work: Path, files: int, queries: int, targets: int, length: int, seed: int) -> dict:
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

    from gseek import write_fasta
    from gseek.alphabet import decode_dna, encode_dna
    from gseek.datasets import dp_families, mutate
    from gseek.datasets.simulate import _MAX_INDEL

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


@benchmark("pipeline-align", "many query files vs one database, batched DP: gseek pipeline --task align vs "
           "sequential gseek align runs, GCUPS, GPU busy share", _pipeline_align_options)
def bench_pipeline_align(args: argparse.Namespace) -> Report:
    import shutil

    if min(args.files, args.queries, args.targets, args.length, args.threads) < 1 or args.workers < 0:
        raise SystemExit("run.py pipeline-align: --files, --queries, --targets, --length and --threads must be "
                         ">= 1, --workers >= 0")
    with harness.scratch_dir("gseek-pipe-align-bench-") as work:
        t0 = time.perf_counter()
        data = pipeline_align_data(work, args.files, args.queries, args.targets, args.length, args.seed)
        db, files, cells = data.pop("db"), data.pop("files"), data["cells"]
        print(f"  pipeline-align: {args.files} files x {args.queries:,} queries and {data['targets']:,} targets "
              f"simulated in {time.perf_counter() - t0:.1f} s ({cells:.3g} cells)", file=sys.stderr, flush=True)
        env = numba_cache_env()
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

        gpu_sets = parse_gpu_sets(args.gpus)
        print("  pipeline-align: warm-up runs ...", file=sys.stderr, flush=True)
        harness.run_process(align_cmd(work / "warm-db.fa", work / "warm-q.fa", work / "warm.tsv"), env=env)
        harness.run_process(pipeline_cmd(work / "warm-db.fa", work / "warm-list.txt", work / "warm-out",
                                         gpu_sets[0]), env=env)

        sequential = None
        rows, seq = [], {}
        if not args.no_sequential:
            print(f"  pipeline-align: {args.files} sequential gseek align runs ...", file=sys.stderr, flush=True)
            wall, cpu, busy, _ = sampled_runs([align_cmd(db, f, seq_out(f)) for f in files], env)
            sequential = wall
            seq = {"sequential_s": wall, "sequential_cpu_s": cpu, "sequential_busy": busy,
                   "sequential_gcups": cells / wall / 1e9}
            rows.append([f"sequential gseek align x{args.files}", f"{wall:.2f}", f"{cpu:.1f}", busy_text(busy),
                         gcups(cells, wall), "1.00x"])

        runs, first_out = [], None
        for k, gpus in enumerate(gpu_sets):
            outdir = work / f"out{k}"
            print(f"  pipeline-align: gseek pipeline --task align{f' --gpus {gpus}' if gpus else ''} ...",
                  file=sys.stderr, flush=True)
            _, _, busy, proc = sampled_runs([pipeline_cmd(db, work / "list.txt", outdir, gpus)], env)
            first_out = first_out or outdir

            def reference(f: Path, first: Path = first_out) -> Path:
                return seq_out(f) if sequential is not None else first / f"{f.stem}.tsv"

            differ = [f.name for f in files if not same_file(outdir / f"{f.stem}.tsv", reference(f))]
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
                         f"{proc.seconds:.2f}", f"{proc.cpu_s:.1f}", busy_text(busy, gpus), gcups(cells, proc.seconds),
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


def _pipeline_blast_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, help="database FASTA (.gz ok), e.g. bacteria75.fa.gz")
    p.add_argument("--set", default="10kb", help=f"query set per file ({', '.join(BLAST_SETS)}; default 10kb)")
    p.add_argument("--per-file", type=int, default=25, help="queries per file (default 25)")
    p.add_argument("--task", default="blastn", help="megablast or blastn (default blastn)")
    p.add_argument("--splits", default="",
                   help="extra runs with `--split database` for these GPU sets, ';'-separated (e.g. '0,1')")
    _pipeline_run_options(p, "gseek search")


def blast_list_data(work: Path, db_fasta: str, query_set: str, n_files: int, per_file: int, threads: str,
                     env: dict[str, str], name: str) -> tuple[str, list[Path]]:
    """A BLAST-only index of ``db_fasta`` in ``work`` and ``n_files`` query files of ``per_file``
    ``query_set`` queries simulated from it (file i: seed 100 + i), ``work/list.txt`` of them and
    ``work/warm.txt`` of the first: the index path and the files."""
    import shutil

    db = work / "db.fa"
    with text_handle(db_fasta) as src, open(db, "w") as dst:
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
    if args.set not in BLAST_SETS or min(args.files, args.per_file, args.threads) < 1:
        raise SystemExit(f"run.py pipeline-blast: --set one of {', '.join(BLAST_SETS)}; --files, --per-file, "
                         "--threads >= 1")
    with harness.scratch_dir("gseek-pipe-blast-bench-") as work:
        env = numba_cache_env()
        T = str(args.threads)
        gseek = [sys.executable, "-P", "-m", "gseek", "--quiet", "-p", T]
        idx, files = blast_list_data(work, args.db, args.set, args.files, args.per_file, T, env, "pipeline-blast")
        base_cmd = gseek + ["--device", args.device, "pipeline", "--task", args.task, "-x", idx,
                            "--workers", str(args.workers)]

        def cmd(listing: Path, outdir: Path, gpus: str | None, split: str | None = None) -> list[str]:
            return base_cmd + ["--queries", str(listing), "--outdir", str(outdir)] + \
                (["--gpus", gpus] if gpus else []) + (["--split", split] if split else [])

        print("  pipeline-blast: warm-up run ...", file=sys.stderr, flush=True)
        harness.run_process(cmd(work / "warm.txt", work / "warm-out", parse_gpu_sets(args.gpus)[0]), env=env)
        runs = [(g, None) for g in parse_gpu_sets(args.gpus)] + \
            [(g.strip(), "database") for g in args.splits.split(";") if g.strip()]
        rows, results, first = [], [], None
        for k, (gpus, split) in enumerate(runs):
            outdir = work / f"out{k}"
            label = f"gseek pipeline --task {args.task}" + (f" --gpus {gpus}" if gpus else "") + \
                (f" --split {split}" if split else "")
            print(f"  pipeline-blast: {label} ...", file=sys.stderr, flush=True)
            _, _, busy, proc = sampled_runs([cmd(work / "list.txt", outdir, gpus, split)], env)
            first = first or outdir
            differ = [f.name for f in files if not same_file(outdir / f"{f.stem}.tsv", first / f"{f.stem}.tsv")]
            hsps = sum(count_rows(outdir / f"{f.stem}.tsv") for f in files if (outdir / f"{f.stem}.tsv").is_file())
            results.append({"gpus": gpus, "split": split, "seconds": proc.seconds, "cpu_s": proc.cpu_s,
                            "busy": busy, "identical": not differ, "differing_files": differ, "hsps": hsps,
                            "command": shlex.join(proc.cmd)})
            rows.append([label, f"{proc.seconds:.2f}", f"{proc.cpu_s:.1f}", busy_text(busy, gpus), f"{hsps:,}",
                         ratio(results[0]["seconds"], proc.seconds), "yes" if not differ else f"**{len(differ)} differ**"])
        table = markdown_table(["command", "wall s", "CPU s", "GPU busy (each GPU used)", "HSPs", "vs the first run",
                                "output = first run's"], rows, align="lrrrrrl")
        notes = [f"{args.files} query files x {args.per_file} queries of the set {describe_set(args.set)}, simulated "
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

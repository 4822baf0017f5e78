"""Issue 40's multi-GPU item on one host: `gseek pipeline --task megablast` over many query files against the
>= 1 Gbp pan-genome on 1, 2 and 4 GPUs, the queries split (a searcher of the whole database per GPU) and the
database split (one shard a GPU, every job on all), optionally Dask workers (one per GPU); outputs compared
byte for byte, nvidia-smi sampled per GPU every 100 ms.

usage: python3 -P benchmarks/archive/gpu_multi40.py --source bacteria75.fa.xz --out DIR [--work DIR] [--gpus 0,1,2,3]
       [--files 32] [--per-file 64] [--set w1] [--task megablast] [--target-bases 1e9] [--threads N]
       [--budget S] [--dask] [--device gpu|cpu]

Steps (each timed): the pan-genome recipe's records (mutated copies of the source's contigs, the recipe's
seeds and rates, `datasets/recipes.py`), made in parallel processes, one line a sequence; `gseek index --parts
text`; FILES query files of PER_FILE queries of SET simulated from the database (file i: seed 100 + i, as
`run.py pipeline-blast`), and a one-query file (the fixed cost: start-up, the database's load and upload);
one untimed warm-up; then the fixed cost and the whole list for each GPU set and split, in the order of
PRIORITY, each only while the BUDGET (seconds since start) lasts. Results: DIR/multi40.json (rewritten after
every run, so a call cut short keeps what ran) and DIR/multi40.md. `--device cpu`: the CPU dry run (every
run without --gpus).
"""

from __future__ import annotations

import argparse
import json
import lzma
import math
import multiprocessing
import os
import shlex
import shutil
import sys
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, after an installed gseek

from benchmarks.suite import harness  # noqa: E402
from benchmarks.suite.blast import blast_set, describe_set  # noqa: E402
from benchmarks.suite.common import count_rows, numba_cache_env, same_file, GpuSampler  # noqa: E402

T0 = time.perf_counter()
_SOURCE = None  # the source batch, inherited by the forked generator processes


def elapsed() -> float:
    return time.perf_counter() - T0


def log(text: str) -> None:
    print(f"[{elapsed():7.1f} s] {text}", file=sys.stderr, flush=True)


def _copy_record(task: tuple[int, int, int, float]) -> bytes:
    """Copy ``c`` of contig ``i``: the recipe's mutation (``_pangenome_records``), as one FASTA record."""
    from numpy.random import PCG64, Generator, SeedSequence

    from gseek.alphabet import decode_dna
    from gseek.datasets.simulate import mutate

    i, c, seed, sub_rate = task
    rng = Generator(PCG64(SeedSequence([seed, i, c])))
    seq, _ = mutate(_SOURCE.codes_of(i), rng, sub_rate, sub_rate / 10)
    name = f"{_SOURCE.name(i)}_copy{c + 1:02d} sub_rate={sub_rate:.4f} indel_rate={sub_rate / 10:.4f}"
    return f">{name}\n{decode_dna(seq)}\n".encode()


def pangenome(source: Path, out: Path, target_bases: int, processes: int, seed: int = 0) -> dict:
    """The pan-genome recipe's sequences from ``source`` (.xz, .gz or plain FASTA) into ``out``."""
    global _SOURCE
    from gseek.seqio import read_fastx

    plain = out.with_name("source.fa")
    if source.suffix == ".xz":
        with lzma.open(source) as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 24)
        source = plain
    _SOURCE = read_fastx(str(source))
    bases = int(sum(len(_SOURCE.codes_of(i)) for i in range(len(_SOURCE))))
    copies = max(1, math.ceil(1.01 * target_bases / bases))
    rates = [0.01 + 0.04 * (c / (copies - 1) if copies > 1 else 0.0) for c in range(copies)]
    tasks = [(i, c, seed, rates[c]) for i in range(len(_SOURCE)) for c in range(copies)]
    part = out.with_suffix(".part")
    written = 0
    with multiprocessing.get_context("fork").Pool(processes) as pool, open(part, "wb") as fh:
        for record in pool.imap(_copy_record, tasks, chunksize=1):
            fh.write(record)
            written += len(record) - record.index(b"\n") - 2
    part.rename(out)
    plain.unlink(missing_ok=True)
    return {"source_bases": bases, "copies": copies, "contigs": len(tasks), "bases": written}


def query_files(db: Path, work: Path, query_set: str, n_files: int, per_file: int) -> list[Path]:
    """``n_files`` files of ``per_file`` queries of ``query_set`` (file i: seed 100 + i), the database read once."""
    from gseek.seqio import read_fastx

    genome = read_fastx(str(db))
    files = []
    for i in range(n_files):
        f = work / f"q{i:02d}.fa"
        blast_set(genome, f"{query_set}@{per_file}", seed=100 + i).write(f)
        files.append(f)
    return files


def busy_profile(samples: dict[str, list[float]], gpus: list[str]) -> dict:
    """Per GPU: mean busy %, seconds from the start to its first and last busy sample (100 ms apart)."""
    out = {}
    for g in gpus:
        s = samples.get(g, [])
        on = [k for k, v in enumerate(s) if v > 0]
        out[g] = {"mean": sum(s) / len(s) if s else None, "samples": len(s),
                  "first_busy_s": on[0] / 10 if on else None, "last_busy_s": on[-1] / 10 if on else None}
    return out


def trace_summary(trace: dict, started: float, seconds: float) -> dict:
    """The engine's spans (``GSEEK_TRACE``) of one command: start-up before the dispatcher, its wall, the
    searchers' device warm-up (``setup``), each prelim thread's jobs and busy seconds, and the tail (from the
    first prelim thread's last job's end to the last one's)."""
    spans = trace["spans"]
    threads: dict[str, dict] = {}
    for s in spans:
        if s["stage"] == "prelim":
            t = threads.setdefault(s["thread"], {"jobs": 0, "busy_s": 0.0, "first_s": s["start"], "last_s": 0.0})
            t["jobs"] += 1
            t["busy_s"] += s["end"] - s["start"]
            t["first_s"] = min(t["first_s"], s["start"])
            t["last_s"] = max(t["last_s"], s["end"])
    ends = [t["last_s"] for t in threads.values()]
    jobs = sorted(s["end"] - s["start"] for s in spans if s["stage"] == "prelim")
    startup = trace["epoch"] - started
    return {"startup_s": startup, "dispatcher_s": trace["wall"], "after_s": seconds - startup - trace["wall"],
            "setup_end_s": max((s["end"] for s in spans if s["stage"] == "setup"), default=0.0),
            "prelim_threads": len(threads), "prelim_busy_s": sum(t["busy_s"] for t in threads.values()),
            "tail_s": max(ends) - min(ends) if ends else 0.0, "first_prelim_s": min(
                (t["first_s"] for t in threads.values()), default=0.0),
            "job_s": {"n": len(jobs), "median": jobs[len(jobs) // 2] if jobs else 0.0,
                      "max": jobs[-1] if jobs else 0.0},
            "threads": threads}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source", required=True, help="the recipe's source FASTA (bacteria75; .xz/.gz ok)")
    p.add_argument("--out", required=True)
    p.add_argument("--work", default="/tmp/multi40")
    p.add_argument("--gpus", default="0,1,2,3")
    p.add_argument("--files", type=int, default=32)
    p.add_argument("--per-file", type=int, default=64)
    p.add_argument("--set", default="w1")
    p.add_argument("--task", default="megablast")
    p.add_argument("--target-bases", type=float, default=1e9)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--workers", type=int, default=4, help="pipeline finalize threads")
    p.add_argument("--budget", type=float, default=200.0, help="no run starts after this many seconds")
    p.add_argument("--dask", action="store_true", help="then one Dask worker a GPU (needs distributed)")
    p.add_argument("--device", default="gpu")
    p.add_argument("--runs", default=None,
                   help="instead of the default runs: 'GPUS[/database][@THREADS];...' (e.g. '0,1,2,3@16;0@16')")
    p.add_argument("--no-fixed", action="store_true", help="no one-query run before each run")
    p.add_argument("--trace", action="store_true", help="GSEEK_TRACE of each run: start-up, setup, jobs, tail")
    p.add_argument("--steady", default=None,
                   help="then in this process: the task built once, the list twice, for each "
                        "'GPUS[/database][#SEARCHERS_A_GPU];...'")
    args = p.parse_args()
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    gpus = [g.strip() for g in args.gpus.split(",") if g.strip()]
    env = numba_cache_env()
    T = str(args.threads)
    gseek = [sys.executable, "-P", "-m", "gseek", "--quiet", "-p", T]
    record: dict = {"device": harness.gpu_name(), "cores": os.cpu_count(), "args": vars(args), "steps": {},
                    "runs": []}

    def save() -> None:
        (out / "multi40.json").write_text(json.dumps(record, indent=1) + "\n")

    db = work / "pangenome.fa"
    if not db.exists():
        t = time.perf_counter()
        record["pangenome"] = pangenome(Path(args.source), db, int(args.target_bases), args.threads)
        record["steps"]["pangenome_s"] = time.perf_counter() - t
        log(f"pan-genome: {record['pangenome']}")
    t = time.perf_counter()
    harness.run_process(gseek + ["--device", "cpu", "index", str(db), "--parts", "text", "-o", str(work / "db")],
                        env=env)
    record["steps"]["index_s"] = time.perf_counter() - t
    idx = str(work / "db.gseek")
    t = time.perf_counter()
    files = query_files(db, work, args.set, args.files, args.per_file)
    record["steps"]["queries_s"] = time.perf_counter() - t
    record["query_bases"] = sum(os.path.getsize(f) for f in files)
    (work / "list.txt").write_text("".join(f"{f}\n" for f in files))
    first = files[0].read_text().split(">")[1]
    (work / "tiny.fa").write_text(">" + first)
    (work / "tiny.txt").write_text(f"{work / 'tiny.fa'}\n")
    log(f"index and {args.files} x {args.per_file} queries: {record['steps']}")
    save()

    every = ",".join(gpus)
    configs = [(gpus[0], None), (every, None), (every, "database")]
    if len(gpus) > 2:
        configs += [(",".join(gpus[:2]), None), (",".join(gpus[:2]), "database")]
    configs = [(g, s, None) for g, s in configs]
    if args.runs and args.runs != "none":
        configs = []
        for spec in args.runs.split(";"):
            spec, _, threads = spec.partition("@")
            g, _, split = spec.partition("/")
            configs.append((g or None, split or None, threads or None))
    if args.device == "cpu":  # the dry run: no --gpus
        configs = [(None, s, t) for _, s, t in configs]

    def cmd(listing: str, outdir: Path, gpu_set: str | None, split: str | None, extra=(), threads=None) -> list[str]:
        start = gseek if threads is None else gseek[:-1] + [threads]
        return start + ["--device", args.device, "pipeline", "--task", args.task, "-x", idx, "--workers",
                        str(args.workers), "--queries", str(work / listing), "--outdir", str(outdir)] + \
            (["--gpus", gpu_set] if gpu_set else []) + (["--split", split] if split else []) + list(extra)

    def timed(label: str, command: list[str], used: list[str], listing_files: list[Path], outdir: Path,
              reference: Path | None, **extra) -> dict:
        trace = work / f"trace-{len(record['runs'])}.json"
        sampler = GpuSampler()
        started = time.time()
        try:
            proc = harness.run_process(command, env=dict(env, GSEEK_TRACE=str(trace)) if args.trace else env)
        finally:
            samples = sampler.stop()
        names = [f"{f.stem}.tsv" for f in listing_files]
        differ = [n for n in names if reference is not None and not same_file(outdir / n, reference / n)]
        summary = (outdir / "summary.tsv").read_text().splitlines()[1:]
        r = {"run": label, "seconds": proc.seconds, "cpu_s": proc.cpu_s, "rss_mib": proc.peak_rss_mib,
             "busy": busy_profile(samples, used), "identical": None if reference is None else not differ,
             "differ": differ, "hsps": sum(count_rows(outdir / n) for n in names if (outdir / n).is_file()),
             "file_seconds_max": max((float(s.split("\t")[4]) for s in summary), default=None),
             "file_seconds": [float(s.split("\t")[4]) for s in summary],
             "command": shlex.join(proc.cmd), **extra}
        if args.trace and trace.exists():
            r["trace"] = trace_summary(json.loads(trace.read_text()), started, proc.seconds)
        record["runs"].append(r)
        save()
        log(f"{label}: {r['seconds']:.2f} s, busy "
            + ", ".join(f"{g} {b['mean']:.0f}%" for g, b in r["busy"].items() if b["mean"] is not None)
            + f", {r['hsps']:,} HSPs" + ("" if reference is None else f", identical {r['identical']}"))
        return r

    if args.runs == "none":
        configs = []
    else:
        log("warm-up ...")
        harness.run_process(cmd("tiny.txt", work / "warm", every if args.device != "cpu" else None, None), env=env)
    reference = None
    for k, (g, split, threads) in enumerate(configs):
        if elapsed() > args.budget:
            record["skipped"] = record.get("skipped", []) + [f"--gpus {g} --split {split} -p {threads}: out of time"]
            continue
        used = (g or "0").split(",")
        label = f"--gpus {g}" + (f" --split {split}" if split else "") + (f" -p {threads}" if threads else "")
        if not args.no_fixed:
            timed(f"{label} (one query: fixed cost)", cmd("tiny.txt", work / f"tiny{k}", g, split, threads=threads),
                  used, [], work / f"tiny{k}", None, gpus=g, split=split, threads=threads, kind="fixed")
        timed(label, cmd("list.txt", work / f"out{k}", g, split, threads=threads), used, files, work / f"out{k}",
              reference, gpus=g, split=split, threads=threads, kind="list")
        reference = reference or work / f"out{k}"
    if args.steady:
        from benchmarks.archive.gpu_multi40_steady import steady_runs

        steady_runs(args.steady, idx, files, work, reference, lambda: elapsed() > args.budget, record, save, log,
                    busy_profile)
    if args.dask and elapsed() <= args.budget - 30:  # its start, two warm-ups and two runs: ~50 s
        dask_runs(args, gpus, work, env, files, reference, cmd, timed, record)
    save()
    table(record, out / "multi40.md")
    return 0


def dask_runs(args, gpus, work, env, files, reference, cmd, timed, record) -> None:
    """One `dask worker` a GPU (CUDA_VISIBLE_DEVICES=N, a thread per searcher), the list as jobs and split."""
    from benchmarks.suite.cluster import _DaskProcesses

    t = time.perf_counter()
    env = dict(env, DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION="1.0")
    dask = _DaskProcesses(work, env)
    try:
        for g in gpus:
            dask.worker(f"gpu{g}", 4, **({"CUDA_VISIBLE_DEVICES": g} if args.device != "cpu" else {}))
        address = dask.wait(len(gpus))
        record["steps"]["dask_start_s"] = time.perf_counter() - t
        per = str(max(1, args.threads // len(gpus)))
        (work / "tiny4.txt").write_text("".join(f"{work / 'tiny.fa'}\tw{k}.tsv\n" for k in range(len(gpus))))

        def dcmd(listing: str, outdir: Path, split: str | None) -> list[str]:
            c = cmd(listing, outdir, None, split, ["--scheduler", address])
            c[c.index("-p") + 1] = per
            return c

        harness.run_process(dcmd("tiny4.txt", work / "dwarm", None), env=env)
        harness.run_process(dcmd("tiny.txt", work / "dwarm2", "database"), env=env)
        for k, split in enumerate([None, "database"]):
            if elapsed() > args.budget + 30:
                break
            timed(f"--scheduler, {len(gpus)} workers" + (f" --split {split}" if split else ", a job per task"),
                  dcmd("list.txt", work / f"dask{k}", split), gpus, files, work / f"dask{k}", reference,
                  gpus=",".join(gpus), split=split, kind="dask")
    finally:
        dask.close()


def table(record: dict, path: Path) -> None:
    runs = {r["run"]: r for r in record["runs"]}
    one = next((r for r in record["runs"] if r["kind"] == "list"), None)
    rows = []
    for r in record["runs"]:
        if r["kind"] == "fixed":
            continue
        fixed = runs.get(f"{r['run']} (one query: fixed cost)")
        busy = ", ".join(f"{b['mean']:.0f} %" for b in r["busy"].values() if b["mean"] is not None) or "-"
        last = [b["last_busy_s"] for b in r["busy"].values() if b["last_busy_s"] is not None]
        first = [b["first_busy_s"] for b in r["busy"].values() if b["first_busy_s"] is not None]
        rows.append([r["run"], f"{r['seconds']:.2f}", f"{fixed['seconds']:.2f}" if fixed else "-",
                     f"{r['cpu_s']:.0f}", busy, f"{min(first):.1f}" if first else "-",
                     f"{min(last):.1f}-{max(last):.1f}" if last else "-", f"{r['hsps']:,}",
                     f"{one['seconds'] / r['seconds']:.2f}x" if one else "-",
                     "first" if r["identical"] is None else "yes" if r["identical"] else f"{len(r['differ'])} differ"])
    text = harness.markdown_table(["command", "wall s", "one query s", "CPU s", "GPU busy", "first busy s",
                                   "last busy s (GPUs)", "HSPs", "vs 1 GPU", "output = first"], rows,
                                  align="lrrrrrrrrl")
    a = record["args"]
    head = (f"{record['device']}, {record['cores']} cores; {a['files']} files x {a['per_file']} queries "
            f"({describe_set(a['set'])}; {record.get('query_bases', 0):,} bytes), --task {a['task']}, "
            f"database {record.get('pangenome', {})}; steps {record['steps']}\n\n")
    path.write_text(head + text + "\n")
    print(head + text)


if __name__ == "__main__":
    sys.exit(main())

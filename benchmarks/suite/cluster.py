"""`cluster`, `cluster-hetero`, `cluster-gpus`: the Dask runner (issues 19, 20)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

from . import harness
from .harness import markdown_table, ratio
from .registry import benchmark, Report
from .blast import BLAST_SETS
from .common import busy_text, count_rows, gcups, GPU_BUSY_NOTE, numba_cache_env, same_file, sampled_runs
from .pipeline import blast_list_data, PIPE_ALIGN_WARMUP, pipeline_align_data


def _family_options(p: argparse.ArgumentParser) -> None:
    """The ``dp_families`` data of ``cluster`` and ``cluster-hetero``: ancestor length and seed."""
    p.add_argument("--length", type=int, default=1500, help="ancestor length in bp (default 1500)")
    p.add_argument("--seed", type=int, default=42, help="data seed (default 42)")


def _cluster_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--queries", type=int, default=1000, help="query sequences per file (default 1000)")
    p.add_argument("--targets", type=int, default=2000, help="database sequences (default 2000)")
    _family_options(p)
    p.add_argument("--files", type=int, default=10, help="query files (default 10)")
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
    with harness.scratch_dir("gseek-cluster-bench-") as work:
        data = pipeline_align_data(work, args.files, args.queries, args.targets, args.length, args.seed)
        db, files, cells = data.pop("db"), data.pop("files"), data["cells"]
        env = numba_cache_env()
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
            _, _, busy, proc = sampled_runs([base + ["--queries", str(work / "list.txt"), "--outdir", str(outdir),
                                                      *extra]], env)
            first = first or outdir
            differ = [f.name for f in files if not same_file(outdir / f"{f.stem}.tsv", first / f"{f.stem}.tsv")]
            results.append({"run": label, "seconds": proc.seconds, "cpu_s": proc.cpu_s, "busy": busy,
                            "identical": not differ, "command": shlex.join(proc.cmd)})
            rows.append([f"gseek pipeline --task align {label}", f"{proc.seconds:.2f}", f"{proc.cpu_s:.1f}",
                         busy_text(busy), gcups(cells, proc.seconds),
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
    _family_options(p)
    p.add_argument("--cpu-workers", type=int, default=3, help="CPU-only workers beside the GPU worker (default 3)")
    p.add_argument("--cpu-threads", type=int, default=4, help="-p of each CPU worker's engine (default 4)")
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

    from . import datagen

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
             f"100 bp (both mates of benchmarks/suite/datagen.py kmismatch_pairs_fastq pairs, seed {args.seed} + file) "
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
        env = numba_cache_env()
        env["DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION"] = "1.0"
        env["GSEEK_CLUSTER_STATS"] = "1"
        if args.task == "map":
            if not args.ref:
                raise SystemExit("cluster-hetero --task map: give --ref FASTA")
            dask = _DaskProcesses(work, env)
            return _hetero_map(args, work, env, dask)
        data = pipeline_align_data(work, 1, 1, args.seqs, args.length, args.seed)
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
            identical = not results or same_file(out, work / "0.tsv")
            results.append({"run": label, "seconds": proc.seconds, "jobs_by_worker": shares,
                            "backups_sent": int(m.group(2)) if m else None, "backups_used": int(m.group(3)) if m else None,
                            "identical": identical, "command": shlex.join(proc.cmd)})
            total = sum(shares.values()) or 1
            rows.append([label, f"{proc.seconds:.2f}", gcups(cells, proc.seconds),
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
        data = pipeline_align_data(work, args.files, args.queries, args.targets, args.length, args.seed)
        db, files, cells = data.pop("db"), data.pop("files"), data["cells"]
        env = numba_cache_env()
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
            _, _, busy, proc = sampled_runs([cmd], env)
            differ = [o for o in outputs if not same_file(outdir / o, first / o)]
            results.append({"run": label, "seconds": proc.seconds, "cpu_s": proc.cpu_s, "busy": busy,
                            "identical": not differ, "command": shlex.join(proc.cmd)})
            table.append([label, f"{proc.seconds:.2f}", f"{proc.cpu_s:.1f}", busy_text(busy, used),
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
                return gcups(cells, sec)

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
            idx, bfiles = blast_list_data(bwork, args.blast_db, args.blast_set, args.blast_files,
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
                return f"{sum(count_rows(outdir / n) for n in bnames if (outdir / n).is_file()):,}"

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

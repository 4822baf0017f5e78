"""Latency and throughput of ``gseek serve`` (issue 39), against the same search run as a local command
and, given a BLAST+ database of the same sequences, as ``blastn``.

Starts ``gseek serve`` on a free loopback port with the index given (default: the embedded
lambda genome, indexed into a temporary folder), then measures, with queries cut from the
reference with a few substitutions (seeded):

* latency of megablast 1 x 500 bp, 100 x 500 bp (and with ``--tenkb`` 100 x 10 kb) requests, one
  after another (p50, p99); with ``--reads N`` a request of N reads of 100 bp mapped (``--task map``,
  where the index has the FM-index);
* with ``--blastdb DB``: ``blastn -task megablast -num_threads T`` on the same query files (a fresh
  process each, as a user runs it), median of ``--blast-runs``;
* the same 1 x 500 bp search as ``gseek search`` (a fresh process each run), its bytes compared, and
  the whole ``gseek search --server`` command;
* throughput: N concurrent clients (threads), each sending ``--requests`` requests of 10 x 1 kb
  megablast queries: requests per second, and how many searches the batcher made; with ``--blastdb``
  and ``--peer-requests K`` the SequenceServer-style peer: one ``blastn`` per request, queued, over
  the first K of the same requests; with ``--gpu-sample`` the GPU's utilization sampled by
  ``nvidia-smi`` every 100 ms during each throughput run (mean, and the share of samples >= 50 %).

    python benchmarks/tools/serve_bench.py                                  # CPU, lambda
    python benchmarks/tools/serve_bench.py --device gpu --index db.gseek --reference db.fa --blastdb db \\
        --tenkb --reads 1000 --clients 1,64 --requests 10 --threads 16 --json serve.json

Prints a Markdown table; ``--json`` also writes the record. Every loop is bounded by its count.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from serve_helpers import Service  # noqa: E402

DB = "db"


def _genome(path: Path) -> list[str]:
    from gseek.seqio import read_fastx

    batch = read_fastx(path)
    return [batch.sequence(i) for i in range(len(batch))]


def _cut(genome: list[str], length: int, rng: random.Random) -> str:
    contigs = [c for c in genome if len(c) > length] or genome
    c = rng.choice(contigs)
    a = rng.randrange(0, max(1, len(c) - length))
    return c[a:a + length]


def _queries(genome: list[str], n: int, length: int, rng: random.Random, tag: str) -> str:
    out = []
    for i in range(n):
        s = list(_cut(genome, length, rng))
        for _ in range(max(1, len(s) // 100)):
            s[rng.randrange(len(s))] = "ACGT"[rng.randrange(4)]
        out.append(f">{tag}{i}\n{''.join(s)}\n")
    return "".join(out)


def _reads(genome: list[str], n: int, rng: random.Random, length: int = 100) -> str:
    out = []
    for i in range(n):
        s = list(_cut(genome, length, rng))
        for _ in range(rng.randrange(3)):
            s[rng.randrange(len(s))] = "ACGT"[rng.randrange(4)]
        out.append(f"@r{i}\n{''.join(s)}\n+\n{'I' * len(s)}\n")
    return "".join(out)


def _percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def _blastn(blastdb: str, query: Path, threads: int, cwd: Path) -> float:
    t = time.perf_counter()
    subprocess.run(["blastn", "-task", "megablast", "-db", blastdb, "-query", str(query), "-outfmt", "6",
                    "-num_threads", str(threads), "-out", str(cwd / "blastn.tsv")], check=True, cwd=cwd,
                   capture_output=True)
    return time.perf_counter() - t


class GpuSampler:
    """``nvidia-smi`` sampling the GPU's utilization every 100 ms while entered (no GPU: no samples)."""

    def __init__(self, gpu: int = 0) -> None:
        self.gpu, self.samples, self.proc = gpu, [], None

    def __enter__(self) -> GpuSampler:
        try:
            self.proc = subprocess.Popen(["nvidia-smi", "-i", str(self.gpu), "--query-gpu=utilization.gpu",
                                          "--format=csv,noheader,nounits", "-lms", "100"],
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return self
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        return self

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.strip().isdigit():
                self.samples.append(int(line))

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
            self.reader.join(timeout=10)

    def summary(self) -> dict:
        s = self.samples
        return {"samples": len(s), "mean_pct": round(statistics.mean(s), 1) if s else None,
                "busy_share": round(sum(v >= 50 for v in s) / len(s), 3) if s else None}


def _progress(args: argparse.Namespace, record: dict, line: str) -> None:
    """A measurement done: one line on stderr (flushed), the record so far in ``--json`` (a run cut
    short keeps what it measured)."""
    print(f"[serve_bench {time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", help="a gseek index (default: lambda, built here)")
    ap.add_argument("--reference", help="the FASTA the queries are cut from (default: lambda)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=2, help="the service's -p, and blastn's -num_threads")
    ap.add_argument("--runs", type=int, default=50, help="requests per latency measurement (100 x 10 kb: a fifth)")
    ap.add_argument("--local-runs", type=int, default=3, help="runs of the local command (0: none)")
    ap.add_argument("--tenkb", action="store_true", help="also 100 x 10 kb requests")
    ap.add_argument("--reads", type=int, default=0, help="also a request of this many 100 bp reads mapped")
    ap.add_argument("--blastdb", help="a BLAST+ database of the reference: blastn beside each measurement")
    ap.add_argument("--blast-runs", type=int, default=3, help="runs of blastn per query set")
    ap.add_argument("--clients", default="1,4,16", help="concurrent clients of the throughput runs")
    ap.add_argument("--requests", type=int, default=10, help="requests per client in the throughput runs")
    ap.add_argument("--peer-requests", type=int, default=0,
                    help="with --blastdb: requests of the last throughput run answered by queued blastn")
    ap.add_argument("--gpu-sample", action="store_true", help="sample the GPU's utilization (nvidia-smi, 100 ms)")
    ap.add_argument("--json", help="write the record here")
    args = ap.parse_args()
    if args.blastdb:  # blastn runs in the work folder
        args.blastdb = str(Path(args.blastdb).resolve())

    from gseek.datasets import lambda_genome
    from gseek.serve.client import Client

    work = Path(tempfile.mkdtemp(prefix="serve-bench-"))
    reference = Path(args.reference).resolve() if args.reference else lambda_genome()
    if args.index:
        index = Path(args.index).resolve()
    else:
        from gseek.index import Index

        index = work / "lambda.gseek"
        Index.build(reference, wgram=8, device="cpu").save(index)
    genome = _genome(reference)
    rng = random.Random(39)
    _progress(args, {}, f"reference read: {sum(map(len, genome)):,} bases")
    sets = {"megablast 1 x 500 bp": _queries(genome, 1, 500, rng, "one"),
            "megablast 100 x 500 bp": _queries(genome, 100, 500, rng, "hundred")}
    if args.tenkb:
        sets["megablast 100 x 10 kb"] = _queries(genome, 100, 10_000, rng, "tenkb")
    one = sets["megablast 1 x 500 bp"]
    (work / "one.fa").write_text(one)

    started = time.perf_counter()
    svc = Service(index, cwd=work, device=args.device, threads=args.threads, name=DB)
    record: dict = {"device": args.device, "index": str(index), "start_s": round(time.perf_counter() - started, 2),
                    "threads": args.threads}
    client = Client(svc.url)
    _progress(args, record, f"service started in {record['start_s']} s")
    rows: list[tuple[str, float, float, float | None]] = []
    try:
        for _ in range(3):  # warm: the searcher of these options made, the kernels run once
            client.search_bytes(DB, one)

        def latency(text: str, runs: int, task: str = "megablast", fmt: str = "6") -> list[float]:
            client.search_bytes(DB, text, task, format=fmt)  # this size's launches once
            times = []
            for _ in range(max(1, runs)):
                t = time.perf_counter()
                client.search_bytes(DB, text, task, format=fmt)
                times.append(time.perf_counter() - t)
            return times

        for name, text in sets.items():
            t = latency(text, args.runs // 5 if "10 kb" in name else args.runs)
            peer = None
            if args.blastdb:
                path = work / f"set{len(rows)}.fa"
                path.write_text(text)
                peer = statistics.median([_blastn(args.blastdb, path, args.threads, work)
                                          for _ in range(args.blast_runs)])
            rows.append((name, statistics.median(t), _percentile(t, 99), peer))
            record["latency"] = {n: {"p50_s": p50, "p99_s": p99, "blastn_s": b} for n, p50, p99, b in rows}
            _progress(args, record, f"{name}: p50 {rows[-1][1]:.4f} s, blastn {peer}")
        if args.reads and "map" in client.databases()[0]["tasks"]:
            t = latency(_reads(genome, args.reads, rng), args.runs, "map", "sam")
            rows.append((f"map {args.reads} x 100 bp reads (-v 2)", statistics.median(t), _percentile(t, 99), None))
        record["latency"] = {name: {"p50_s": p50, "p99_s": p99, "blastn_s": peer} for name, p50, p99, peer in rows}

        served = client.search_bytes(DB, [("one.fa", one)])[0]
        same = True
        for kind in ("local", "server") if args.local_runs else ():
            times = []
            for _ in range(args.local_runs):
                cmd = [sys.executable, "-m", "gseek", "--device", args.device, "-p", str(args.threads), "search", "-x",
                       str(index)] if kind == "local" else \
                      [sys.executable, "-m", "gseek", "search", "--server", svc.url, "-x", DB]
                t = time.perf_counter()
                proc = subprocess.run([*cmd, "--task", "megablast", "-q", "one.fa"], capture_output=True, cwd=work,
                                      check=True)
                times.append(time.perf_counter() - t)
                same = same and proc.stdout == served
            record[f"{kind}_command_1x500_s"] = statistics.median(times)
            record[f"{kind}_command_1x500_spread_s"] = [min(times), max(times)]
        record["bytes_equal"] = same

        throughput = {}
        for n in (int(x) for x in args.clients.split(",")):
            bodies = [_queries(genome, 10, 1000, random.Random(1000 * n + k), f"c{k}_") for k in range(n)]
            before = client.health()
            with GpuSampler() if args.gpu_sample else _Nothing() as sampler:
                t = time.perf_counter()
                with concurrent.futures.ThreadPoolExecutor(n) as pool:
                    list(pool.map(lambda body: [client.search_bytes(DB, body) for _ in range(args.requests)], bodies))
                seconds = time.perf_counter() - t
            after = client.health()
            throughput[n] = {"requests_per_s": n * args.requests / seconds, "seconds": seconds,
                             "searches": after["batches"] - before["batches"],
                             "requests": after["requests"] - before["requests"]}
            if args.gpu_sample:
                throughput[n]["gpu"] = sampler.summary()
            record["throughput"] = throughput
            _progress(args, record, f"{n} clients: {throughput[n]}")
        record["throughput"] = throughput
        if args.blastdb and args.peer_requests:  # SequenceServer-style: one blastn per request, one at a time
            n = max(throughput)
            times = []
            for k in range(args.peer_requests):
                path = work / "peer.fa"
                path.write_text(_queries(genome, 10, 1000, random.Random(1000 * n + k % n), f"c{k % n}_"))
                times.append(_blastn(args.blastdb, path, args.threads, work))
                _progress(args, record, f"queued blastn request {k + 1}: {times[-1]:.2f} s")
            record["peer_queued"] = {"requests": len(times), "requests_per_s": len(times) / sum(times),
                                     "median_s": statistics.median(times)}
    finally:
        svc.stop()

    print(f"| measurement ({args.device}, -p {args.threads}) | gseek serve | blastn -num_threads {args.threads} |")
    print("|---|--:|--:|")
    print(f"| service start (load, warm) | {record['start_s']:.2f} s | |")
    for name, p50, p99, peer in rows:
        ratio = f"{peer:.3f} s ({peer / p50:.1f}x the served p50)" if peer else ""
        print(f"| {name}: p50 / p99 | {p50 * 1000:.1f} / {p99 * 1000:.1f} ms | {ratio} |")
    if args.local_runs:
        local, server = record["local_command_1x500_s"], record["server_command_1x500_s"]
        print(f"| local `gseek search` 1 x 500 bp, median of {args.local_runs} | {local:.2f} s "
              f"({local / rows[0][1]:.0f}x the served p50; bytes equal: {same}) | |")
        print(f"| `gseek search --server` 1 x 500 bp, the whole command, median of {args.local_runs} | {server:.2f} s "
              f"({local / server:.1f}x faster than local) | |")
    peer = record.get("peer_queued")
    for n, t in throughput.items():
        gpu = f"; GPU {t['gpu']['mean_pct']} % mean, busy (>= 50 %) {t['gpu']['busy_share']:.0%} of " \
              f"{t['gpu']['samples']} samples" if t.get("gpu", {}).get("samples") else ""
        other = f"{peer['requests_per_s']:.2f} requests/s (queued, {peer['requests']} requests; gseek " \
                f"{t['requests_per_s'] / peer['requests_per_s']:.0f}x)" if peer and n == max(throughput) else ""
        print(f"| {n} clients x {args.requests} requests of 10 x 1 kb | {t['requests_per_s']:.1f} requests/s, "
              f"{t['requests']} requests in {t['searches']} searches{gpu} | {other} |")
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1))
    shutil.rmtree(work, ignore_errors=True)


class _Nothing:
    def __enter__(self) -> _Nothing:
        return self

    def __exit__(self, *exc) -> None:
        pass


if __name__ == "__main__":
    main()

"""Latency and throughput of ``gseek serve`` (issue 39), against the same search run as a local command.

Starts ``gseek serve`` on a free loopback port with the index given (default: the embedded
lambda genome, indexed into a temporary folder), then measures, with queries cut from the
reference with a few substitutions (seeded):

* latency of megablast 1 x 500 bp and 100 x 500 bp requests, one after another (p50, p99);
* the same 1 x 500 bp search as ``gseek search`` (a fresh process each run), its bytes compared;
* throughput: N concurrent clients (threads), each sending ``--requests`` requests of
  10 x 1 kb megablast queries: requests per second, and how many searches the batcher made.

    python benchmarks/tools/serve_bench.py                                  # CPU, lambda
    python benchmarks/tools/serve_bench.py --device gpu --index bact75.gseek --reference bact75.fa \\
        --clients 1,16,64 --requests 20 --json serve.json

Prints a Markdown table; ``--json`` also writes the record.
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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from serve_helpers import Service  # noqa: E402


def _genome(path: Path) -> str:
    from gseek.seqio import read_fastx

    batch = read_fastx(path)
    return "".join(batch.sequence(i) for i in range(len(batch)))


def _queries(genome: str, n: int, length: int, rng: random.Random, tag: str) -> str:
    out = []
    for i in range(n):
        a = rng.randrange(0, len(genome) - length)
        s = list(genome[a:a + length])
        for _ in range(max(1, length // 100)):
            s[rng.randrange(length)] = "ACGT"[rng.randrange(4)]
        out.append(f">{tag}{i}\n{''.join(s)}\n")
    return "".join(out)


def _percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", help="a gseek index (default: lambda, built here)")
    ap.add_argument("--reference", help="the FASTA the queries are cut from (default: lambda)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--runs", type=int, default=50, help="requests per latency measurement")
    ap.add_argument("--local-runs", type=int, default=3, help="runs of the local command")
    ap.add_argument("--clients", default="1,4,16", help="concurrent clients of the throughput runs")
    ap.add_argument("--requests", type=int, default=10, help="requests per client in the throughput runs")
    ap.add_argument("--json", help="write the record here")
    args = ap.parse_args()

    from gseek.datasets import lambda_genome
    from gseek.serve.client import Client

    work = Path(tempfile.mkdtemp(prefix="serve-bench-"))
    reference = Path(args.reference) if args.reference else lambda_genome()
    if args.index:
        index = Path(args.index)
    else:
        from gseek.index import Index

        index = work / "lambda.gseek"
        Index.build(reference, wgram=8, device="cpu").save(index)
    genome = _genome(reference)
    rng = random.Random(39)
    one = _queries(genome, 1, 500, rng, "one")
    hundred = _queries(genome, 100, 500, rng, "hundred")
    (work / "one.fa").write_text(one)

    started = time.perf_counter()
    svc = Service(index, cwd=work, device=args.device)
    record: dict = {"device": args.device, "index": str(index), "start_s": round(time.perf_counter() - started, 2)}
    client = Client(svc.url)
    try:
        for _ in range(3):  # warm: the searcher of these options made, the kernels run once
            client.search_bytes("lambda", one)

        def latency(text: str) -> list[float]:
            times = []
            for _ in range(args.runs):
                t = time.perf_counter()
                client.search_bytes("lambda", text)
                times.append(time.perf_counter() - t)
            return times

        rows = []
        for name, text in (("megablast 1 x 500 bp", one), ("megablast 100 x 500 bp", hundred)):
            t = latency(text)
            rows.append((name, statistics.median(t), _percentile(t, 99)))
        record["latency"] = {name: {"p50_s": p50, "p99_s": p99} for name, p50, p99 in rows}

        served = client.search_bytes("lambda", [("one.fa", one)])[0]
        local_times, same = [], True
        for _ in range(args.local_runs):
            t = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "gseek", "--device", args.device, "search", "-x", str(index),
                                   "--task", "megablast", "-q", "one.fa"], capture_output=True, cwd=work, check=True)
            local_times.append(time.perf_counter() - t)
            same = same and proc.stdout == served
        record["local_1x500_s"] = statistics.median(local_times)
        record["local_bytes_equal"] = same
        remote_times = []
        for _ in range(args.local_runs):  # the whole command, through the service
            t = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "gseek", "search", "--server", svc.url, "-x", "lambda",
                                   "--task", "megablast", "-q", "one.fa"], capture_output=True, cwd=work, check=True)
            remote_times.append(time.perf_counter() - t)
            same = same and proc.stdout == served
        record["server_command_1x500_s"] = statistics.median(remote_times)
        record["bytes_equal"] = same

        throughput = {}
        for n in (int(x) for x in args.clients.split(",")):
            bodies = [_queries(genome, 10, 1000, random.Random(1000 * n + k), f"c{k}_") for k in range(n)]
            before = client.health()
            t = time.perf_counter()
            with concurrent.futures.ThreadPoolExecutor(n) as pool:
                list(pool.map(lambda body: [client.search_bytes("lambda", body) for _ in range(args.requests)], bodies))
            seconds = time.perf_counter() - t
            after = client.health()
            throughput[n] = {"requests_per_s": n * args.requests / seconds, "seconds": seconds,
                             "searches": after["batches"] - before["batches"],
                             "requests": after["requests"] - before["requests"]}
        record["throughput"] = throughput
    finally:
        svc.stop()

    print(f"| measurement ({args.device}) | value |\n|---|--:|")
    print(f"| service start (load, warm) | {record['start_s']:.2f} s |")
    for name, p50, p99 in rows:
        print(f"| {name}: p50 / p99 | {p50 * 1000:.1f} / {p99 * 1000:.1f} ms |")
    print(f"| local `gseek search` 1 x 500 bp (median of {args.local_runs}) | {record['local_1x500_s']:.2f} s "
          f"({record['local_1x500_s'] / rows[0][1]:.0f}x the served p50; bytes equal: {same}) |")
    print(f"| `gseek search --server` 1 x 500 bp, the whole command (median of {args.local_runs}) | "
          f"{record['server_command_1x500_s']:.2f} s ({record['local_1x500_s'] / record['server_command_1x500_s']:.1f}x "
          f"faster than local) |")
    for n, t in throughput.items():
        print(f"| {n} clients x {args.requests} requests of 10 x 1 kb | {t['requests_per_s']:.1f} requests/s, "
              f"{t['requests']} requests in {t['searches']} searches |")
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Throughput of one ``gseek serve`` configuration (issue 39's goal): N concurrent clients, each sending
R requests of 10 x 1 kb megablast queries cut from the reference (seeded), the GPUs' utilization sampled
by ``nvidia-smi`` every 100 ms, and the service's CPU use (the user + system seconds of its process and
every process under it — its worker processes — over the run's wall seconds: 1.0 is one core busy).

The service is the ``gseek`` this Python imports (``PYTHONPATH`` picks the tree: an A/B runs this
script once per tree, alternating, as ``benchmarks/archive/gpu_serve_ab.sh`` does). Prints one JSON
line: requests per second, searches, the batches of each device worker (where the service reports
them), GPU mean utilization per GPU, the service's cores busy, and a hash of the answers (the same
requests give the same bytes in every configuration).

    python benchmarks/tools/serve_throughput.py --index big.gseek --reference big.fa --device gpu \\
        --threads 16 --clients 64 --requests 10 --gpus 0 --label B2 -- --workers 2
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import hashlib
import json
import os
import random
import signal
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks" / "tools"))

from serve_bench import DB, GpuSampler, _genome, _queries  # noqa: E402
from serve_helpers import Service  # noqa: E402


def _stat(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _cpu_seconds(pid: int) -> float:
    """User + system seconds of process ``pid`` and of every live process under it (its worker
    processes; Linux ``/proc``; 0 elsewhere)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields:
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        fields = _stat(p)
        if len(fields) > 12:
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        todo += children.get(p, [])
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--reference", required=True, help="the FASTA the queries are cut from")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--requests", type=int, default=10, help="requests per client")
    ap.add_argument("--gpus", default="", help="GPUs to sample (nvidia-smi -i), e.g. 0,1")
    ap.add_argument("--label", default="", help="the configuration's name in the JSON line")
    ap.add_argument("serve_args", nargs="*", help="more `gseek serve` options (after --)")
    args = ap.parse_args()

    from gseek.serve.client import Client

    genome = _genome(Path(args.reference))
    bodies = [_queries(genome, 10, 1000, random.Random(1000 * args.clients + c), f"c{c}_") for c in range(args.clients)]
    started = time.perf_counter()
    svc = Service(Path(args.index), *args.serve_args, device=args.device, threads=args.threads, name=DB)
    record: dict = {"label": args.label, "serve_args": args.serve_args, "start_s": round(time.perf_counter() - started, 2)}
    # the service's log (a line a request) read as it comes: a full pipe would stop the service at its next line
    log = threading.Thread(target=lambda: collections.deque(iter(lambda: svc.proc.stderr.read(1 << 16), b""), 0),
                           daemon=True)
    log.start()
    try:
        client = Client(svc.url)
        with concurrent.futures.ThreadPoolExecutor(args.clients) as pool:  # warm: each client's first request
            list(pool.map(lambda body: client.search_bytes(DB, body), bodies))
        before = client.health()
        samplers = [GpuSampler(int(g)) for g in args.gpus.split(",") if g.strip()]
        for s in samplers:
            s.__enter__()
        cpu, t = _cpu_seconds(svc.proc.pid), time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(args.clients) as pool:
            answers = list(pool.map(lambda body: [client.search_bytes(DB, body)[0] for _ in range(args.requests)],
                                    bodies))
        seconds = time.perf_counter() - t
        cpu = _cpu_seconds(svc.proc.pid) - cpu
        for s in samplers:
            s.__exit__()
        after = client.health()
    finally:
        svc.proc.send_signal(signal.SIGTERM)
        svc.proc.wait(timeout=60)
        log.join(timeout=10)
    digest = hashlib.sha256()
    for per_client in answers:
        assert len(set(per_client)) == 1, "a client's identical requests got different bytes"
        digest.update(per_client[0])
    record.update(requests=args.clients * args.requests, seconds=round(seconds, 3),
                  requests_per_s=round(args.clients * args.requests / seconds, 1),
                  searches=after["batches"] - before["batches"], service_cores=round(cpu / seconds, 2),
                  gpu={g: s.summary() for g, s in zip(args.gpus.split(","), samplers)},
                  answers_sha256=digest.hexdigest()[:16])
    if "workers" in after:  # a service that reports its workers: each one's searches and busy share, the stages
        record["worker_batches"] = [a["batches"] - b["batches"] for a, b in zip(after["workers"], before["workers"])]
        record["worker_busy"] = [round((a["seconds"] - b["seconds"]) / seconds, 3)
                                 for a, b in zip(after["workers"], before["workers"])]
        stages = {k: v - before["blast_stages"].get(k, 0.0) for k, v in after["blast_stages"].items()}
        record["stage_ms_per_search"] = {k: round(1000 * v / max(1, record["searches"]), 1) for k, v in stages.items()}
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()

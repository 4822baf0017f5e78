"""One request's latency through ``gseek serve`` with the search in the service's process (``--workers 0``)
or in a worker process (``--workers 1``), alternating: R rounds, each a fresh service per configuration
(the order reversed every other round), 40 sequential megablast requests of one 500 bp lambda slice each,
the median of the last 35 per service, and the device worker's seconds a search over those 35 (``/healthz``'s
``workers.seconds``: the search and the text, and for a worker process the hand-off and the pickles). Prints
one JSON object: per configuration the medians (ms) and the worker's ms a search, a round each.

    python benchmarks/archive/serve_latency_ab.py --rounds 3 --device cpu --threads 2
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from serve_helpers import Service, call, lambda_index  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    from gseek.datasets import lambda_genome
    from gseek.seqio import read_fastx

    genome = read_fastx(lambda_genome()).sequence(0)
    folder = Path(tempfile.mkdtemp(prefix="serve-latency-"))
    index = lambda_index(folder)
    rng = random.Random(5)
    medians: dict[str, list[float]] = {}
    worker: dict[str, list[float]] = {}
    for round_ in range(args.rounds):
        for workers in (["0", "1"] if round_ % 2 == 0 else ["1", "0"]):
            svc = Service(index, "--workers", workers, device=args.device, threads=args.threads)
            try:
                seconds = []
                for i in range(40):
                    if i == 5:
                        before = json.loads(call(svc.url + "/healthz")[1])["workers"][0]["seconds"]
                    a = rng.randrange(0, len(genome) - 500)
                    body = {"database": "lambda", "queries": f">q{i}\n{genome[a:a + 500]}\n"}
                    started = time.perf_counter()
                    status, _, _ = call(svc.url + "/api/v1/search", body)
                    seconds.append(time.perf_counter() - started)
                    assert status == 200
                after = json.loads(call(svc.url + "/healthz")[1])["workers"][0]["seconds"]
                medians.setdefault(f"workers {workers}", []).append(round(1000 * statistics.median(seconds[5:]), 1))
                worker.setdefault(f"workers {workers}", []).append(round(1000 * (after - before) / 35, 2))
            finally:
                svc.stop()
    shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps({"median_ms": medians, "worker_ms_a_search": worker}))


if __name__ == "__main__":
    main()

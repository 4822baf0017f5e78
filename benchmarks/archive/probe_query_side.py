"""The BLAST-style search's query side (DUST, strands, words, lookup table) on the host, alone and as the
pipeline runs it (one piece a searcher, all at once on threads), per pass (issue 17: 1.2 s of each
workload-1 job on the H100 host).

usage: python benchmarks/archive/probe_query_side.py QUERIES.fa [PIECES=4] [ROUNDS=3]
"""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from gseek.blast.dust import dust_mask
from gseek.blast.lookup import lookup_of_words, query_strands, seeding, word_codes
from gseek.seqio import read_fastx

LOCK = threading.Lock()


def query_side(batch, times: dict[str, float]) -> None:
    def lap(name: str, t0: float) -> float:
        t1 = time.perf_counter()
        with LOCK:
            times[name] = times.get(name, 0.0) + t1 - t0
        return t1

    codes, offsets = np.asarray(batch.codes, np.uint8), np.asarray(batch.offsets, np.int64)
    t = time.perf_counter()
    mask = dust_mask(codes, offsets, 20, 64, 1)
    t = lap("dust", t)
    seq_codes, seq_mask, seq_off, _, _ = query_strands(codes, offsets, mask, (1, -1), hard=True)
    t = lap("strands", t)
    words = word_codes(seq_codes, seq_off, 12, seq_mask)
    t = lap("words", t)
    lookup_of_words(words, 12)
    t = lap("lookup table", t)
    seeding(words)
    lap("seeding", t)


def main() -> None:
    path = sys.argv[1]
    pieces = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    batch = read_fastx(path)
    off = np.asarray(batch.offsets, np.int64)
    cuts = np.searchsorted(off, np.linspace(0, off[-1], pieces + 1)[1:-1])
    bounds = [0, *cuts.tolist(), len(batch)]
    parts = [batch[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    print(f"{len(batch)} queries, {off[-1]:,} bases, {pieces} pieces; numba threads {numba.get_num_threads()}")
    query_side(parts[0], {})  # compile / load
    print(f"threading layer {numba.threading_layer()}")
    for r in range(rounds):
        times: dict[str, float] = {}
        t = time.perf_counter()
        query_side(parts[0], times)
        alone = time.perf_counter() - t
        print(f"round {r}: one piece alone {alone:.3f} s " + " ".join(f"{k} {v:.3f}" for k, v in times.items()))
        times = {}
        t = time.perf_counter()
        with ThreadPoolExecutor(pieces) as pool:
            list(pool.map(lambda p: query_side(p, times), parts))
        wall = time.perf_counter() - t
        print(f"round {r}: {pieces} pieces at once {wall:.3f} s; summed over pieces "
              + " ".join(f"{k} {v:.3f}" for k, v in times.items()))


if __name__ == "__main__":
    main()

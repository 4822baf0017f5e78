#!/usr/bin/env python3
"""The CPU's lookup table of one query batch, built both ways (issue 40, the CPU item): the direct table
(:func:`gseek.blast.lookup.lookup_of_words`, 4^w + 1 offsets) against the compact one
(:func:`gseek.blast.compact_table.compact_lookup`, the words present), on the same words, alternating.

    python benchmarks/archive/cpu_blast_table.py --queries q600.fa --threads 1 --rounds 15

The words are a search's: both strands, DUST-masked, megablast's w = 12 (``--w``). Wall and process time,
medians (min-max), in ms.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from cpu_blast_ab import spread  # (this script's folder is on sys.path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--w", type=int, default=12)
    args = ap.parse_args()
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    sys.modules.setdefault("scipy.linalg.cython_blas", None)
    import numba
    import numpy as np

    from gseek.blast.compact_table import compact_lookup
    from gseek.blast.dust import dust_mask
    from gseek.blast.lookup import lookup_of_words, query_strands, word_codes
    from gseek.seqio import read_fastx

    batch = read_fastx(args.queries)
    codes, offsets = np.asarray(batch.codes, np.uint8), np.asarray(batch.offsets, np.int64)
    seq, mask, seq_off, _, _ = query_strands(codes, offsets, dust_mask(codes, offsets), (1, -1))
    words = word_codes(seq, seq_off, args.w, mask)
    seeding = words[words >= 0]
    print(f"positions {words.size}, seeding {seeding.size}, distinct words {np.unique(seeding).size}")
    numba.set_num_threads(args.threads)
    walls: dict[str, list[float]] = {"direct": [], "compact": []}
    cpus: dict[str, list[float]] = {"direct": [], "compact": []}
    for _ in range(args.rounds + 1):  # the first round loads the code, not counted
        for name, build in (("direct", lookup_of_words), ("compact", compact_lookup)):
            w, c = time.perf_counter(), time.process_time()
            table = build(words, args.w)
            walls[name].append(time.perf_counter() - w)
            cpus[name].append(time.process_time() - c)
            del table
    for name in walls:
        wall, cpu = (spread([1000 * x for x in xs[1:]]) for xs in (walls[name], cpus[name]))
        print(f"{args.threads} threads, {name}: wall {wall} ms, CPU {cpu} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

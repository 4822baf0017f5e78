"""In-process BLAST searches for A/B runs and Nsight Compute profiles of the gapped X-drop kernels (issue 17).

usage: python3 benchmarks/archive/ncu_xdrop.py DB.fa[.gz] QUERIES.fa[:TASK][,QUERIES2.fa[:TASK]...] [REPEAT]
Builds a text-only index of DB on the CPU, then for each repeat, each query set (TASK: megablast unless
given) and each variant of XD_WARP (';'-separated; each a ','-separated subset of score,fill: which X-drop
sweeps run one warp a seed, gseek.dp.xdrop.WARP_SCORE / WARP_FILL; then optionally @T/S: the searcher's
_HOST_SPEEDUP with and without trace-back, or @off: no extension on the host; unset: the tree's defaults) runs one
search on the GPU (NCU_DEVICE=cpu: on the CPU), printing its seconds, stage timings and a digest of its
rows (so variants and trees can be compared), and the searcher's counts. XD_AHEAD (';'-separated numbers) runs
each variant once for each value of the searcher's _AHEAD on the GPU (seeds extended ahead of their round; unset:
the tree's default); XD_TBROUNDS likewise for _TRACEBACK_ROUNDS (trace-back rounds). The first search of each set is a warm-up unless REPEAT is
1. Under `ncu -k regex:xdrop_gapped_fill ...` (benchmarks/archive/ncu_xdrop.sh) use REPEAT 1: only the chosen
launches are replayed; the rest run as usual.
"""
import hashlib
import os
import sys
import time

os.environ["GSEEK_BLAST_TIMING"] = "1"
import gseek.blast.gapped as G  # noqa: E402
import gseek.blast.searcher as S  # noqa: E402
import gseek.dp.xdrop as X  # noqa: E402
from gseek.index import Index  # noqa: E402
from gseek.index.text import ReferenceText  # noqa: E402
from gseek.seqio import read_fastx  # noqa: E402

db = sys.argv[1]
sets = [(p.split(":") + ["megablast"])[:2] for p in sys.argv[2].split(",")]
repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 1
variants = os.environ.get("XD_WARP")
variants = [None] if variants is None else variants.split(";")
aheads = os.environ.get("XD_AHEAD")
aheads = [None] if aheads is None else [int(a) for a in aheads.split(";")]
tb_rounds = os.environ.get("XD_TBROUNDS")
tb_rounds = [None] if tb_rounds is None else [int(a) for a in tb_rounds.split(";")]
variants = [(v, a, t) for v in variants for a in aheads for t in tb_rounds]
default_speedup = dict(G._HOST_SPEEDUP)
ref = ReferenceText.from_index(Index.build(db, parts="text", device="cpu"))
searchers = {}
for r in range(repeat + (repeat > 1)):
    for path, task in sets:
        queries = read_fastx(path)
        for v, ahead, tb in variants:
            if tb is not None:
                G._TRACEBACK_ROUNDS = tb
            if ahead is not None:
                G._AHEAD = {"gpu": ahead, "cpu": 0}
            if v is not None:
                kinds, _, host = v.partition("@")
                X.WARP_SCORE, X.WARP_FILL = "score" in kinds.split(","), "fill" in kinds.split(",")
                speed = host.split("/") if host and host != "off" else None
                G._HOST_SPEEDUP = ({True: 1e-12, False: 1e-12} if host == "off" else dict(default_speedup)
                                   if speed is None else {True: float(speed[0]), False: float(speed[1])})
            searcher = searchers.setdefault(task, S.BlastSearcher(ref, task=task,
                                                                  device=os.environ.get("NCU_DEVICE", "gpu")))
            searcher.timings.clear()
            searcher.counts.clear()
            searcher.counts.update(queries=0, seeds=0, gapped=0)
            t = time.perf_counter()
            hits = searcher.search(queries)
            dt = time.perf_counter() - t
            digest = hashlib.sha1(repr([hits.row(h) for h in range(len(hits))]).encode()).hexdigest()[:12]
            name = (("default" if v is None else v) + ("" if ahead is None else f" ahead={ahead}")
                    + ("" if tb is None else f" tb_rounds={tb}"))
            print(f"{'warm-up' if repeat > 1 and r == 0 else f'round {r}'} {os.path.basename(path)} {task} "
                  f"warp={name}: {dt:.2f} s, {len(hits)} hits, rows {digest} | "
                  + ", ".join(f"{k} {v:.2f}" for k, v in searcher.timings.items())
                  + " | " + ", ".join(f"{k} {v}" for k, v in searcher.counts.items()), flush=True)

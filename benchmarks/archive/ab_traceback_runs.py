"""A/B in process (issue 17): the trace-back filled in runs of seeds within the launch budget
(``xdrop_gapped(max_bytes=)``, as searched now) against one run per launch (as before ``37dcdbf``),
alternately on the pan-genome; stage timings and whether the hits are the same.

usage: python3 benchmarks/archive/ab_traceback_runs.py DB.fa QUERIES.fa [ROUNDS]
"""
import os
import sys
import time

os.environ["GSEEK_BLAST_TIMING"] = "1"
import gseek.blast.gapped as G  # noqa: E402
import gseek.blast.searcher as S  # noqa: E402
from gseek.index import Index  # noqa: E402
from gseek.index.text import ReferenceText  # noqa: E402
from gseek.seqio import read_fastx  # noqa: E402

runs = G.xdrop_gapped


def one_run(*args, max_bytes=None, **kwargs):
    return runs(*args, **kwargs)


db, path = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 1
ref = ReferenceText.from_index(Index.build(db, parts="text", device="cpu"))
searcher = S.BlastSearcher(ref, task="megablast", device="gpu")
queries = read_fastx(path)
first = searcher.search(queries)  # warms the kernels; the reference rows
rows0 = [first.row(h) for h in range(len(first))]
for _ in range(rounds):
    for label, fn in (("runs within the budget", runs), ("one run a launch", one_run)):
        G.xdrop_gapped = fn
        searcher.timings.clear()
        t = time.perf_counter()
        hits = searcher.search(queries)
        dt = time.perf_counter() - t
        same = [hits.row(h) for h in range(len(hits))] == rows0
        st = searcher.timings
        print(f"{label}: {dt:.2f} s same={same} | "
              + ", ".join(f"{k} {v:.2f}" for k, v in st.items() if "extension" in k), flush=True)

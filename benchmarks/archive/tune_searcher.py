"""Tune a constant of the BLAST searcher at scale (issue 17): in-process megablast searches with one
attribute of gseek.blast.gapped (the gapped passes' constants) set to each value in turn,
alternately; stage timings, launch and host counts, and whether the hits are the first value's.

usage: python3 benchmarks/archive/tune_searcher.py DB.fa QUERIES.fa[,QUERIES2.fa...] ATTR 'VALUE;VALUE...' [ROUNDS]
  e.g. _EXTEND_CHUNK '65536;262144', or _HOST_SPEEDUP '{True: 64.0, False: 4.0};{True: 16.0, False: 4.0}'
"""
import ast
import os
import sys
import time

os.environ["GSEEK_BLAST_TIMING"] = "1"
import gseek.blast.gapped as G  # noqa: E402
import gseek.blast.searcher as S  # noqa: E402
from gseek.index import Index  # noqa: E402
from gseek.index.text import ReferenceText  # noqa: E402
from gseek.seqio import read_fastx  # noqa: E402

db, sets, attr = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
values = [ast.literal_eval(v) for v in sys.argv[4].split(";")]
rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 2
started = time.perf_counter()
ref = ReferenceText.from_index(Index.build(db, parts="text", device="cpu"))
print(f"index {time.perf_counter() - started:.1f} s", flush=True)
searcher = S.BlastSearcher(ref, task="megablast", device="gpu")
for path in sets:
    queries = read_fastx(path)
    setattr(G, attr, values[0])
    first = searcher.search(queries)  # warms the kernels; the reference rows
    rows0 = [first.row(h) for h in range(len(first))]
    for _ in range(rounds):
        for value in values:
            setattr(G, attr, value)
            searcher.timings.clear()
            searcher.counts = {"queries": 0, "seeds": 0, "gapped": 0}
            t = time.perf_counter()
            hits = searcher.search(queries)
            dt = time.perf_counter() - t
            same = [hits.row(h) for h in range(len(hits))] == rows0
            st, ct = searcher.timings, searcher.counts
            print(f"{os.path.basename(path)} {attr}={value}: {dt:.2f} s same={same} | "
                  + ", ".join(f"{k} {v:.2f}" for k, v in st.items() if "extension" in k) + " | "
                  + ", ".join(f"{k} {v}" for k, v in ct.items() if "launches" in k or "host" in k), flush=True)

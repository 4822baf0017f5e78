"""Tune the seeds per gapped-extension launch (issue 17): in-process megablast searches on the
pan-genome with searcher._EXTEND_CHUNK varied, alternately; stage timings, launch counts and
whether the hits are the first configuration's.

usage: python3 benchmarks/tune_extend_chunk.py DB.fa QUERIES.fa[,QUERIES2.fa...] [CHUNK,CHUNK...] [ROUNDS]
"""
import os
import sys
import time

os.environ["GSEEK_BLAST_TIMING"] = "1"
import gseek.blast.searcher as S  # noqa: E402
from gseek.index import Index  # noqa: E402
from gseek.index.text import ReferenceText  # noqa: E402
from gseek.seqio import read_fastx  # noqa: E402

db, sets = sys.argv[1], sys.argv[2].split(",")
chunks = [int(c) for c in (sys.argv[3] if len(sys.argv) > 3 else "65536,262144").split(",")]
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 2
started = time.perf_counter()
ref = ReferenceText.from_index(Index.build(db, parts="text", device="cpu"))
print(f"index {time.perf_counter() - started:.1f} s", flush=True)
searcher = S.BlastSearcher(ref, task="megablast", device="gpu")
for path in sets:
    queries = read_fastx(path)
    S._EXTEND_CHUNK = chunks[0]
    first = searcher.search(queries)  # warms the kernels; the reference rows
    rows0 = [first.row(h) for h in range(len(first))]
    for _ in range(rounds):
        for chunk in chunks:
            S._EXTEND_CHUNK = chunk
            searcher.timings.clear()
            searcher.counts = {"queries": 0, "seeds": 0, "gapped": 0}
            t = time.perf_counter()
            hits = searcher.search(queries)
            dt = time.perf_counter() - t
            same = [hits.row(h) for h in range(len(hits))] == rows0
            st, ct = searcher.timings, searcher.counts
            print(f"{os.path.basename(path)} chunk {chunk}: {dt:.2f} s same={same} | "
                  + ", ".join(f"{k} {v:.2f}" for k, v in st.items() if "extension" in k) + " | "
                  + ", ".join(f"{k} {v}" for k, v in ct.items() if "launches" in k or "host" in k), flush=True)

"""Tune the host share of the gapped extensions (issue 16): in-process searches on bacteria75 with
_HOST_SPEEDUP and _HOST_MIN_EXTENT varied; stage timings and the two sides' seconds."""
import sys, time, os
os.environ["GSEEK_BLAST_TIMING"] = "1"
sys.path.append(".")  # run from the repository root: benchmarks.suite
from benchmarks.suite.blast import blast_set
import gseek.blast.gapped as G
import gseek.blast.searcher as S
from gseek.index import Index
from gseek.index.text import ReferenceText
from gseek.seqio import read_fastx

db = sys.argv[1]
index = Index.build(db, parts="text", device="cpu")
ref = ReferenceText.from_index(index)
sets = {}
for name in ("10kb", "mixed"):
    path = f"/tmp/{name}.fa"
    blast_set(db, name).write(path)
    sets[name] = read_fastx(path)
configs = [("on: 64/4", {True: 64.0, False: 4.0}), ("off", {True: 1e-9, False: 1e-9}),
           ("tb 16", {True: 16.0, False: 4.0}), ("tb 256", {True: 256.0, False: 4.0}),
           ("score 1", {True: 64.0, False: 1.0}), ("score 16", {True: 64.0, False: 16.0}),
           ("tb 32 score 8", {True: 32.0, False: 8.0})]
for task, name in (("blastn", "10kb"), ("blastn", "mixed"), ("megablast", "10kb")):
    searcher = S.BlastSearcher(ref, task=task, device="gpu")
    first = searcher.search(sets[name])
    rows0 = [first.row(h) for h in range(len(first))]
    for label, speed in configs * 2:
        G._HOST_SPEEDUP = speed
        searcher.timings.clear(); searcher.counts = {"queries": 0, "seeds": 0, "gapped": 0}
        t = time.perf_counter()
        hits = searcher.search(sets[name])
        dt = time.perf_counter() - t
        same = [hits.row(h) for h in range(len(hits))] == rows0
        st = searcher.timings
        print(f"{task} {name} [{label}] {dt:.2f} s same={same} | score-only {st.get('gapped extension, score only', 0):.2f}"
              f" tb {st.get('gapped extension with trace-back', 0):.2f} | "
              + ", ".join(f"{k.replace(' side of split extensions', '')} {v:.2f}" for k, v in st.items() if 'side' in k)
              + " | " + ", ".join(f"{k} {v}" for k, v in searcher.counts.items() if 'host' in k), flush=True)

#!/usr/bin/env bash
# Issue 40's stage "statistics, purge, order" on the 1 Gbp set: main's gseek/blast/purge.py (the device's working
# directory) against this tree's, in ONE process (one index load and warm-up for both: the device budget of the
# purge40 branch was 180 s with the machine's start):
#   data as gpu_scale40.sh makes it: the pan-genome recipe's ~1.06 Gbp from the carried bacteria75 (gpu_multi40.py's
#   `pangenome`), `gseek index --parts text`, 1,000 `w40` queries (benchmarks/suite/blast.py, seed 11);
#   a BlastSearcher of this tree (megablast, DEVICE, THREADS), warmed by one search that also keeps the inputs of
#   `_purge` and `_report_order`; then, alternating main's functions and this tree's on those inputs (REPEAT
#   times): each function's time (this tree's also at one Numba thread, the CPU backend's worst case) and equal
#   outputs; then ROUNDS steady searches each way, alternating (the searcher's module names swapped), wall and the
#   SHA-256 of the result arrays (every column and the CIGARs: equal arrays, equal text).
# Prints a summary; $OUT/purge40.json, $OUT/log.txt.
#
# usage, on the GPU machine (repository root = the device's copy of main; carry [".whl",
# ".carry/multi40/bacteria75.fa.xz", ".carry/NAME.tgz"], the tree with this script as
#   `git archive --format=tar.gz -o /work/main/.carry/NAME.tgz HEAD -- . ':(exclude)kernels/prebuilt'`):
#     mkdir -p /tmp/p40 && tar -xzf .carry/NAME.tgz -C /tmp/p40 && bash /tmp/p40/benchmarks/archive/gpu_purge40.sh
# Here, on the CPU with tiny sizes (a check of the script; the venv's gseek for both trees' other modules):
#   NO_INSTALL=1 PY=.venv/bin/python DEVICE=cpu THREADS=2 SOURCE=/tmp/small.fa.xz PAN_BASES=4e6 SET=w40@30 \
#     MAIN=/work/main OUT=/tmp/p40out bash benchmarks/archive/gpu_purge40.sh
# Knobs: REPEAT (5), ROUNDS (3), BUDGET_S (100: searches that would end past it are skipped), WORK (/tmp/purge40).
set -uo pipefail
START=$SECONDS
OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MAIN=$(cd "${MAIN:-$PWD}" && pwd)
DEVICE=${DEVICE:-gpu}; T=${THREADS:-16}; REPEAT=${REPEAT:-5}; ROUNDS=${ROUNDS:-3}; BUDGET_S=${BUDGET_S:-100}
SOURCE=${SOURCE:-$MAIN/.carry/multi40/bacteria75.fa.xz}; PAN_BASES=${PAN_BASES:-1e9}; SET=${SET:-w40}
W=${WORK:-/tmp/purge40}; mkdir -p "$W"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$OUT/log.txt"; }

if [ -z "${NO_INSTALL:-}" ]; then
  source "$HERE/benchmarks/archive/gpu_common.sh" && tree_install "$MAIN" "$HERE" || exit 1
fi
PY=${PY:-python3}
log "installed; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo 'no GPU'); $(nproc) cores"

if [ ! -s "$W/db.fa" ]; then
  $PY -P - "$HERE" "$SOURCE" "$W/db.fa" "$PAN_BASES" "$T" <<'PY' || exit 1
import sys
from pathlib import Path
sys.path.append(sys.argv[1])
from benchmarks.archive.gpu_multi40 import pangenome
print(pangenome(Path(sys.argv[2]), Path(sys.argv[3]), int(float(sys.argv[4])), int(sys.argv[5])))
PY
fi
[ -s "$W/db.gseek" ] || $PY -P -m gseek --quiet --device cpu -p "$T" index "$W/db.fa" --parts text -o "$W/db" &
[ -s "$W/q.fa" ] || $PY -P - "$HERE" "$W/db.fa" "$SET" "$W/q.fa" <<'PY' &
import sys
sys.path.append(sys.argv[1])
from benchmarks.suite.blast import blast_set
blast_set(sys.argv[2], sys.argv[3]).write(sys.argv[4])  # seed 11, as run.py blast
PY
wait
log "data: $(grep -c '>' "$W/db.fa") contigs, $(grep -c '>' "$W/q.fa") queries"

$PY -P - "$MAIN/gseek/blast/purge.py" "$W/db" "$W/q.fa" "$DEVICE" "$T" "$REPEAT" "$ROUNDS" \
  "$((BUDGET_S - (SECONDS - START)))" "$OUT/purge40.json" <<'PY' 2>&1 | tee -a "$OUT/log.txt"
import hashlib, importlib.util, json, statistics, sys, time
import numba
import numpy as np
import gseek.blast.searcher as S
from gseek.blast.searcher import BlastSearcher
from gseek.seqio import read_fastx

main_purge, index, queries, device, threads, repeat, rounds, budget, out = sys.argv[1:]
repeat, rounds, budget = int(repeat), int(rounds), float(budget)
t0 = time.perf_counter()
spec = importlib.util.spec_from_file_location("gseek.blast._purge_main", main_purge)
old = importlib.util.module_from_spec(spec)
spec.loader.exec_module(old)
KINDS = {"main": (old._purge, old._report_order), "tree": (S._purge, S._report_order)}
inputs = {}
def keep_inputs(h):
    inputs["purge"] = {k: h[k].copy() for k in ("seq", "contig", "q_start", "q_end", "s_start", "s_end", "score")}
    return KINDS["tree"][0](h)
def keep_order(*a):
    inputs["order"] = a
    return KINDS["tree"][1](*a)
batch = read_fastx(queries)
searcher = BlastSearcher(index, task="megablast", device=device, threads=int(threads))
S._purge, S._report_order = keep_inputs, keep_order
t = time.perf_counter()
searcher.search(batch)
print(f"searcher ready {t - t0:.1f} s; warm-up search (captured) {time.perf_counter() - t:.2f} s", flush=True)
h, o = inputs["purge"], inputs["order"]
rec = {"hsps": int(h["score"].size), "rows": int(o[0].size), "threads": numba.get_num_threads(),
       "backend": searcher.backend.describe()}
assert np.array_equal(old._purge(h), KINDS["tree"][0](h)), "purge differs"
for lim in ((o[6], o[7]), (5, 0), (1, 1), (3, 2)):
    assert np.array_equal(old._report_order(*o[:6], *lim), KINDS["tree"][1](*o[:6], *lim)), f"order differs {lim}"
times = {k: [] for k in ("purge main", "purge tree", "purge tree 1 thread", "order main", "order tree",
                         "order tree 1 thread")}
def timed(key, f, *a):
    t = time.perf_counter(); f(*a); times[key].append(1e3 * (time.perf_counter() - t))
for r in range(repeat):
    timed("purge main", old._purge, h); timed("purge tree", KINDS["tree"][0], h)
    timed("order main", old._report_order, *o); timed("order tree", KINDS["tree"][1], *o)
    n = numba.get_num_threads(); numba.set_num_threads(1)
    timed("purge tree 1 thread", KINDS["tree"][0], h); timed("order tree 1 thread", KINDS["tree"][1], *o)
    numba.set_num_threads(n)
rec["ms"] = {k: {"median": statistics.median(v), "min": min(v), "max": max(v)} for k, v in times.items()}
for k, v in rec["ms"].items():
    print(f"{k}: median {v['median']:.1f} ms ({v['min']:.1f}-{v['max']:.1f})", flush=True)
def digest(hits):
    d = hashlib.sha256()
    for k in sorted(hits.arrays):
        d.update(k.encode()); d.update(np.ascontiguousarray(hits.arrays[k]).tobytes())
    return d.hexdigest()
search = {"main": [], "tree": []}
sha = {"main": set(), "tree": set()}
last = 3.0
for r in range(rounds):
    for kind in ("main", "tree"):
        if time.perf_counter() - t0 + last > budget:
            print(f"skipped {kind} round {r + 1} (budget)", flush=True)
            continue
        S._purge, S._report_order = KINDS[kind]
        t = time.perf_counter()
        hits = searcher.search(batch)
        last = time.perf_counter() - t
        search[kind].append(last)
        sha[kind].add(digest(hits))
rec["search_s"] = search
rec["sha256"] = {k: sorted(v) for k, v in sha.items()}
rec["same_rows"] = len(sha["main"] | sha["tree"]) == 1
for k, v in search.items():
    if v:
        print(f"steady search {k}: median {statistics.median(v):.3f} s ({min(v):.3f}-{max(v):.3f}), n {len(v)}")
print(f"rows identical: {rec['same_rows']} {sorted(sha['main'] | sha['tree'])[0][:12] if sha['main'] else ''}; "
      f"HSPs to the purge {rec['hsps']}, rows to the order {rec['rows']}; {rec['backend']}")
json.dump(rec, open(out, "w"), indent=1)
PY
log "done"

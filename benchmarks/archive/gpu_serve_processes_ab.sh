#!/usr/bin/env bash
# gseek serve's throughput with the searches in worker processes (issue 39's goal: 64 concurrent clients x 10
# requests of 10 x 1 kb megablast against a >= 1 Gbp database, the GPU busy >= 70 %), A/B in one call: a random
# database (16 contigs, seed 7, gseek index --parts text), then benchmarks/tools/serve_throughput.py once per
# configuration, the configurations alternating in each round (first to last in odd rounds, last to first in even):
#   A    main's tree (.carry/old.tar), its defaults (one device thread in the service's process)
#   W0   this tree, --workers 0 (the searches in the service's process: main's design)
#   WN   this tree, --workers N (N worker processes on the GPU), for each N of WORKERS (default 1 2 4 8)
#   WNs  with SPLIT=1, also --workers N with -p THREADS/N (each worker's Numba passes on its share of the cores;
#        -p is per process: N workers of -p 16 run up to 16 N threads)
#   G2   this tree, --gpus 0,1 --workers 2 (two worker processes on each of two GPUs; only where there are two)
# Every answer's bytes are hashed: the same requests give the same hash in every configuration. The service's
# cores are the CPU seconds of its process and of every worker process over the run's seconds.
#
# On the GPU machine (nothing run here; the coordinator runs it), this tree carried as a tar and main's as another
# (`git archive HEAD -o .carry/serve39d.tar`, `git -C /work/main archive main -o .carry/serve39d-main.tar`;
# carry .whl, .carry/serve39d.tar, .carry/serve39d-main.tar), one nvidia-h200 call of ~6-9 minutes:
#   rm -rf /tmp/t && mkdir -p /tmp/t/.carry && tar -xf .carry/serve39d.tar -C /tmp/t \
#     && cp .carry/serve39d-main.tar /tmp/t/.carry/old.tar && cp -r .whl /tmp/t/ && cd /tmp/t \
#     && ROUNDS=2 BUDGET_S=480 bash benchmarks/archive/gpu_serve_processes_ab.sh
# (fewer rounds or WORKERS="1 2 4" where the call's budget is short: each run starts a service, 64 clients warm it
# with a request each, then send 10 each; a service of 8 worker processes loads the database 8 times: ~20 s.)
# Here, on the CPU with the venv's gseek (2026-11-28, benchmarks/RESULTS.md):
#   NO_INSTALL=1 NO_A=1 DEVICE=cpu THREADS=2 BIG_BP=2000000 CLIENTS=16 REQUESTS=5 WORKERS="1 2" ROUNDS=3 \
#     BUDGET_S=1500 bash benchmarks/archive/gpu_serve_processes_ab.sh
# TESTS: test files run first with -m gpu ($OUT/tests.txt), e.g. TESTS="tests/test_serve_workers.py".
# BUDGET_S: no run starts after this many seconds. RUN_S: one run's limit (120).
# Results: $OUT/ab.jsonl (a line a run), $OUT/ab.md (medians per configuration), $OUT/log.txt.
set -uo pipefail
OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
DEVICE=${DEVICE:-gpu}; THREADS=${THREADS:-16}; BIG_BP=${BIG_BP:-1024000000}; CLIENTS=${CLIENTS:-64}
REQUESTS=${REQUESTS:-10}; ROUNDS=${ROUNDS:-2}; BUDGET_S=${BUDGET_S:-480}; WORKERS=${WORKERS:-1 2 4 8}
RUN_S=${RUN_S:-120}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
START=$SECONDS
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$OUT/log.txt"; }

if [ -z "${NO_INSTALL:-}" ]; then
  (cd "$HERE" && source benchmarks/archive/gpu_common.sh && gpu_install old) || { log "install failed"; exit 1; }
  NEW=/tmp/new:/tmp/site; OLD=/tmp/old:/tmp/site
else
  NEW=${PYTHONPATH:-}; OLD=${PYTHONPATH:-}
fi
PY="python3 -P"; [ -n "${NO_INSTALL:-}" ] && PY="${PY_NO_INSTALL:-$HERE/.venv/bin/python} -P"
GPUS=$(nvidia-smi -L 2>/dev/null | wc -l); SAMPLE=$(seq -s, 0 $((GPUS > 0 ? GPUS - 1 : 0)))
[ "$GPUS" = 0 ] && SAMPLE=""
log "gseek $(PYTHONPATH=$NEW $PY -c 'import gseek; print(gseek.__version__)'), $GPUS GPU(s): $(nvidia-smi -L 2>/dev/null | head -1), $(nproc) cores"
if [ -n "${TESTS:-}" ]; then
  (cd "$HERE" && PYTHONPATH=$NEW timeout "${TESTS_TIMEOUT:-150}" $PY -m pytest -q -p no:randomly -p no:cacheprovider \
    -m gpu $TESTS 2>&1 | tail -8 > "$OUT/tests.txt"); log "tests: $(tail -1 "$OUT/tests.txt")"
fi

W=$(mktemp -d /tmp/serve-proc-ab-XXXX); cd "$W"   # no gseek/ folder here: `python -m gseek` imports the tree asked for
PYTHONPATH=$NEW $PY - big.fa "$BIG_BP" 16 7 <<'PY' || exit 1
import sys
import numpy as np
path, bases, contigs, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(seed)
size = bases // contigs
with open(path, "wb") as f, open("cut.fa", "wb") as cut:  # cut.fa: each contig's first 4 Mbp (queries cut there)
    for i in range(contigs):
        seq = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, size, dtype=np.uint8)].tobytes()
        f.write(b">c%d random %d bp\n%s\n" % (i, size, seq))
        cut.write(b">c%d\n%s\n" % (i, seq[:4_000_000]))
PY
log "big.fa: $(stat -c %s big.fa) bytes"
PYTHONPATH=$NEW $PY -m gseek --quiet --device "$DEVICE" -p "$THREADS" index big.fa -o big --parts text || exit 1
log "gseek index big --parts text"

# label|PYTHONPATH|serve options|threads
CONFIGS=()
[ -z "${NO_A:-}" ] && CONFIGS+=("A|$OLD||$THREADS")
CONFIGS+=("W0|$NEW|--workers 0|$THREADS")
for n in $WORKERS; do
  CONFIGS+=("W$n|$NEW|--workers $n|$THREADS")
  [ -n "${SPLIT:-}" ] && [ "$n" -gt 1 ] && CONFIGS+=("W${n}s|$NEW|--workers $n|$(( THREADS / n > 0 ? THREADS / n : 1 ))")
done
[ "$GPUS" -ge 2 ] && CONFIGS+=("G2|$NEW|--gpus 0,1 --workers 2|$THREADS")
for round in $(seq 1 "$ROUNDS"); do
  order=("${CONFIGS[@]}")
  if [ $((round % 2)) = 0 ]; then order=(); for ((i=${#CONFIGS[@]}-1; i>=0; i--)); do order+=("${CONFIGS[$i]}"); done; fi
  for cfg in "${order[@]}"; do
    IFS='|' read -r label path extra threads <<< "$cfg"
    if [ $((SECONDS - START)) -gt "$BUDGET_S" ]; then log "budget spent: $label round $round not run"; continue; fi
    env PYTHONPATH="$path" timeout "$RUN_S" $PY "$HERE/benchmarks/tools/serve_throughput.py" --index big.gseek \
      --reference cut.fa --device "$DEVICE" --threads "$threads" --clients "$CLIENTS" --requests "$REQUESTS" \
      --gpus "$SAMPLE" --label "$label" -- $extra >> "$OUT/ab.jsonl" 2>> "$OUT/log.txt"
    log "$label round $round: exit $? $(tail -1 "$OUT/ab.jsonl" | cut -c1-300)"
  done
done
$PY - "$OUT/ab.jsonl" > "$OUT/ab.md" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
print("| configuration | runs | requests/s median (min-max) | searches | service cores median (min-max) | "
      "GPU mean % (per GPU) | worker batches (last run) | worker busy (last run) | answers |")
print("|---|--:|--:|--:|--:|--:|---|---|---|")
for label in dict.fromkeys(r["label"] for r in runs):
    rs = [r for r in runs if r["label"] == label]
    rps, cores = [r["requests_per_s"] for r in rs], [r["service_cores"] for r in rs]
    gpu = {g: statistics.median([r["gpu"][g]["mean_pct"] or 0 for r in rs]) for g in rs[0]["gpu"]}
    print(f"| {label} {' '.join(rs[0]['serve_args'])} | {len(rs)} | {statistics.median(rps):.1f} ({min(rps):.1f}-"
          f"{max(rps):.1f}) | {statistics.median([r['searches'] for r in rs]):.0f} | "
          f"{statistics.median(cores):.2f} ({min(cores):.2f}-{max(cores):.2f}) | "
          f"{', '.join(f'{v:.1f}' for v in gpu.values()) or '-'} | {rs[-1].get('worker_batches', '-')} | "
          f"{rs[-1].get('worker_busy', '-')} | {', '.join(sorted({r['answers_sha256'] for r in rs}))} |")
PY
cat "$OUT/ab.md"
rm -rf "$W"

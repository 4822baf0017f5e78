#!/usr/bin/env bash
# gseek serve's throughput, A/B in one call (issue 39's goal: 64 concurrent clients x 10 requests of 10 x 1 kb
# megablast against a >= 1 Gbp database, the GPU busy >= 70 %): a random database (16 contigs, seed 7, gseek index
# --parts text), then benchmarks/tools/serve_throughput.py once per configuration, the configurations alternating in
# each round (A first in odd rounds, last in even ones):
#   A    main's tree (.carry/old.tar), its defaults (one device thread)
#   B    this tree's defaults (two device workers on the GPU, each on its own CUDA stream)
#   B1   this tree, --workers 1 (the batcher's and the engine's other changes alone)
#   B2   this tree, --gpus 0,1 (two workers on each GPU; only where there are two GPUs)
# Every answer's bytes are hashed: the same requests give the same hash in every configuration.
#
# On the GPU machine, this tree carried as a tar and main's as another (carry .whl, .carry/NAME.tar,
# .carry/NAME-main.tar):
#   mkdir -p /tmp/t/.carry && tar -xf .carry/NAME.tar -C /tmp/t && cp .carry/NAME-main.tar /tmp/t/.carry/old.tar \
#     && cp -r .whl /tmp/t/ && cd /tmp/t && bash benchmarks/archive/gpu_serve_ab.sh
# Here, on the CPU with tiny sizes (a check of the script; the venv's gseek for both trees):
#   NO_INSTALL=1 DEVICE=cpu THREADS=2 BIG_BP=2000000 CLIENTS=8 REQUESTS=3 ROUNDS=1 bash benchmarks/archive/gpu_serve_ab.sh
# TESTS: test files run first with -m gpu ($OUT/tests.txt). BUDGET_S: no run starts after this many seconds.
# Results: $OUT/ab.jsonl (a line a run), $OUT/ab.md (medians per configuration), $OUT/log.txt.
set -uo pipefail
OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
DEVICE=${DEVICE:-gpu}; THREADS=${THREADS:-16}; BIG_BP=${BIG_BP:-1024000000}; CLIENTS=${CLIENTS:-64}
REQUESTS=${REQUESTS:-10}; ROUNDS=${ROUNDS:-2}; BUDGET_S=${BUDGET_S:-400}
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
log "gseek $(PYTHONPATH=$NEW $PY -c 'import gseek; print(gseek.__version__)'), $GPUS GPU(s): $(nvidia-smi -L 2>/dev/null | head -1)"
if [ -n "${TESTS:-}" ]; then
  (cd "$HERE" && PYTHONPATH=$NEW timeout "${TESTS_TIMEOUT:-120}" $PY -m pytest -q -p no:randomly -p no:cacheprovider \
    -m gpu $TESTS 2>&1 | tail -8 > "$OUT/tests.txt"); log "tests: $(tail -1 "$OUT/tests.txt")"
fi

W=$(mktemp -d /tmp/serve-ab-XXXX); cd "$W"   # no gseek/ folder here: `python -m gseek` imports the tree asked for
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

# label|PYTHONPATH|environment|serve options; Bt (round 1 only, last): B1 with the device synchronised at each stage's
# end (GSEEK_BLAST_TIMING=1), so that the searches' stage seconds say where a search's time goes
CONFIGS=("A|$OLD||" "B|$NEW||")
[ "$GPUS" -ge 2 ] && CONFIGS+=("B2|$NEW||--gpus 0,1")
CONFIGS+=("B1|$NEW||--workers 1")
for round in $(seq 1 "$ROUNDS"); do
  order=("${CONFIGS[@]}")
  if [ $((round % 2)) = 0 ]; then order=(); for ((i=${#CONFIGS[@]}-1; i>=0; i--)); do order+=("${CONFIGS[$i]}"); done; fi
  [ "$round" = 1 ] && order+=("Bt|$NEW|GSEEK_BLAST_TIMING=1|--workers 1")
  for cfg in "${order[@]}"; do
    IFS='|' read -r label path environment extra <<< "$cfg"
    if [ $((SECONDS - START)) -gt "$BUDGET_S" ]; then log "budget spent: $label round $round not run"; continue; fi
    env PYTHONPATH="$path" $environment timeout 120 $PY "$HERE/benchmarks/tools/serve_throughput.py" --index big.gseek \
      --reference cut.fa --device "$DEVICE" --threads "$THREADS" --clients "$CLIENTS" --requests "$REQUESTS" \
      --gpus "$SAMPLE" --label "$label" -- $extra >> "$OUT/ab.jsonl" 2>> "$OUT/log.txt"
    log "$label round $round: exit $? $(tail -1 "$OUT/ab.jsonl" | cut -c1-400)"
  done
done
$PY - "$OUT/ab.jsonl" > "$OUT/ab.md" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
print("| configuration | runs | requests/s (median, min-max) | searches | service cores | GPU mean % (per GPU) | "
      "worker batches (last run) | worker busy (last run) | answers |")
print("|---|--:|--:|--:|--:|--:|---|---|---|")
for label in dict.fromkeys(r["label"] for r in runs):
    rs = [r for r in runs if r["label"] == label]
    rps = [r["requests_per_s"] for r in rs]
    gpu = {g: statistics.median([r["gpu"][g]["mean_pct"] or 0 for r in rs]) for g in rs[0]["gpu"]}
    print(f"| {label} {' '.join(rs[0]['serve_args'])} | {len(rs)} | {statistics.median(rps):.1f} ({min(rps):.1f}-"
          f"{max(rps):.1f}) | {statistics.median([r['searches'] for r in rs]):.0f} | "
          f"{statistics.median([r['service_cores'] for r in rs]):.2f} | "
          f"{', '.join(f'{v:.1f}' for v in gpu.values()) or '-'} | {rs[-1].get('worker_batches', '-')} | "
          f"{rs[-1].get('worker_busy', '-')} | {', '.join(sorted({r['answers_sha256'] for r in rs}))} |")
for r in runs:
    if r["label"] == "Bt":
        print(f"\nBt: ms per search by stage ({r['searches']} searches): {json.dumps(r.get('stage_ms_per_search'))}")
PY
cat "$OUT/ab.md"
rm -rf "$W"

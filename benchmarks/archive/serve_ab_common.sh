# Sourced by gseek serve's throughput A/B scripts (gpu_serve_ab.sh, gpu_serve_processes_ab.sh): the trees installed
# (main's from .carry/old.tar as OLD, this one as NEW; NO_INSTALL=1: the venv's gseek for both), the GPUs counted,
# TESTS run with -m gpu, a random database made and indexed (16 contigs, seed 7, gseek index --parts text) in a
# fresh folder (the current directory after sourcing); then the caller fills CONFIGS and calls serve_ab_rounds and
# serve_ab_summary. Settings (environment): OUT, DEVICE, THREADS, BIG_BP, CLIENTS, REQUESTS, ROUNDS, BUDGET_S (no
# run starts after this many seconds), RUN_S (one run's limit), TESTS, TESTS_TIMEOUT, NO_INSTALL, PY_NO_INSTALL.
set -uo pipefail
OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
DEVICE=${DEVICE:-gpu}; THREADS=${THREADS:-16}; BIG_BP=${BIG_BP:-1024000000}; CLIENTS=${CLIENTS:-64}
REQUESTS=${REQUESTS:-10}; ROUNDS=${ROUNDS:-2}; BUDGET_S=${BUDGET_S:-400}; RUN_S=${RUN_S:-120}
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

# CONFIGS: "label|PYTHONPATH|environment|serve options|threads (default THREADS)"; FIRST_ROUND: more, run last in
# round 1 only. Each round runs every configuration, first to last in odd rounds and last to first in even ones.
CONFIGS=(); FIRST_ROUND=()
serve_ab_rounds() {
  local round order cfg label path environment extra threads i
  for round in $(seq 1 "$ROUNDS"); do
    order=("${CONFIGS[@]}")
    if [ $((round % 2)) = 0 ]; then order=(); for ((i=${#CONFIGS[@]}-1; i>=0; i--)); do order+=("${CONFIGS[$i]}"); done; fi
    [ "$round" = 1 ] && order+=("${FIRST_ROUND[@]}")
    for cfg in "${order[@]}"; do
      IFS='|' read -r label path environment extra threads <<< "$cfg"
      if [ $((SECONDS - START)) -gt "$BUDGET_S" ]; then log "budget spent: $label round $round not run"; continue; fi
      env PYTHONPATH="$path" $environment timeout "$RUN_S" $PY "$HERE/benchmarks/tools/serve_throughput.py" \
        --index big.gseek --reference cut.fa --device "$DEVICE" --threads "${threads:-$THREADS}" --clients "$CLIENTS" \
        --requests "$REQUESTS" --gpus "$SAMPLE" --label "$label" -- $extra >> "$OUT/ab.jsonl" 2>> "$OUT/log.txt"
      log "$label round $round: exit $? $(tail -1 "$OUT/ab.jsonl" | cut -c1-400)"
    done
  done
}

# $OUT/ab.md: medians per configuration (and the stage seconds of a run labelled Bt), printed; the folder removed.
serve_ab_summary() {
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
for r in runs:
    if r["label"] == "Bt":
        print(f"\nBt: ms per search by stage ({r['searches']} searches): {json.dumps(r.get('stage_ms_per_search'))}")
PY
  cat "$OUT/ab.md"
  rm -rf "$W"
}

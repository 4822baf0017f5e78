#!/usr/bin/env bash
# Issue 40, the trace-back's CIGAR runs left on the device (branch runs40): `-m gpu` tests of what the branch
# touched, then the 1 Gbp megablast steady search A/B, main (the working directory) against the carried tree,
# in alternating processes (A B A B), the rows' and the runs' SHA-256 compared (runs40_ab.py).
# Data as gpu_scale40.sh makes it: the pan-genome recipe (PAN_BASES, default 1e9: 14 mutated copies of the
# carried bacteria75, gpu_multi40.py's `pangenome`, 16 processes), `gseek index --parts text`, the 1,000 `w40`
# queries (benchmarks/suite/blast.py, seed 11).
#
# usage, on the GPU machine (repository root = the device's copy of main; carry [".whl",
# ".carry/multi40/bacteria75.fa.xz", ".carry/NAME.tgz"], the tree as
#   `git archive --format=tar.gz -o /work/main/.carry/NAME.tgz HEAD -- . ':(exclude)kernels/prebuilt'`):
#     mkdir -p /tmp/runs40 && tar -xzf .carry/NAME.tgz -C /tmp/runs40 && bash /tmp/runs40/benchmarks/archive/gpu_runs40.sh
# Knobs: PAN_BASES (1e9), SET (w40), REPEAT (3), TEST_S (45: the tests' time limit), BUDGET_S (150: the second A/B pair is skipped when it would end
# later, by the first pair's time), TESTS (the pytest selection run with -m gpu).
# Writes $OUT/ab.jsonl (one line a process), $OUT/log.txt, $OUT/tests.txt.
set -uo pipefail
START=$SECONDS
OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
ROOT=$PWD
TREE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PAN_BASES=${PAN_BASES:-1e9}; SET=${SET:-w40}; REPEAT=${REPEAT:-3}; BUDGET_S=${BUDGET_S:-150}
TESTS=${TESTS:-'tests/test_blast_runs.py tests/test_greedy.py tests/test_blast_search.py -k "own or re_scor or rescor or consistent or memory or skips"'}
source "$TREE/benchmarks/archive/gpu_common.sh"
W=/tmp/runs40w; mkdir -p "$W"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$OUT/log.txt"; }

ab_install "$ROOT" "$TREE" || exit 1
log "installed A (main $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')) and B ($TREE)"

pan40_ready "${TEST_S:-45}"  # the data (CPU) beside the tests (GPU)

ab() {  # TAG PYTHONPATH [--timing]
  local tag=$1 path=$2; shift 2
  PYTHONPATH=$path python3 -P "$TREE/benchmarks/archive/runs40_ab.py" --index "$W/db" --queries "$W/q.fa" \
    --tag "$tag" --repeat "$REPEAT" --out "$OUT/ab.jsonl" "$@" 2>> "$OUT/ab.err" | tee -a "$OUT/log.txt"
}
t0=$SECONDS
ab A1 "$A"; ab B1 "$B"
pair=$((SECONDS - t0))
if [ $((SECONDS - START + pair)) -le "$BUDGET_S" ]; then
  ab A2 "$A" --timing; ab B2 "$B" --timing
else
  log "second pair skipped (BUDGET_S)"
fi
PYTHONPATH=$B python3 -P - "$OUT/ab.jsonl" <<'PY' | tee -a "$OUT/log.txt"
import json, statistics, sys
recs = [json.loads(line) for line in open(sys.argv[1])]
for side in "AB":
    rs = [r for r in recs if r["tag"].startswith(side)]
    s = [x for r in rs for x in r["search_s"]]
    if s:
        print(f"{side}: search median {statistics.median(s):.3f} s ({min(s):.3f}-{max(s):.3f}, n={len(s)}); "
              f"text {statistics.median(r['text_s'] for r in rs):.3f} s; runs read {statistics.median(r['runs_read_s'] for r in rs):.3f} s")
print("rows identical:", len({r["rows_sha256"] for r in recs}) == 1, "runs identical:", len({r["runs_sha256"] for r in recs}) == 1)
for r in recs:
    if "stages_s" in r:
        print(r["tag"], "timed", round(r["timed_search_s"], 3), {k: round(v * 1000) for k, v in r["stages_s"].items()})
PY
log "done"

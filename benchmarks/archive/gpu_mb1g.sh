#!/usr/bin/env bash
# Issue 40, megablast's round choice at 1 Gbp (branch mb1g): `-m gpu` tests of the round passes, then the
# 1 Gbp megablast steady search, main (the working directory, A) against the carried tree in three variants
# (mb1g_ab.py: B the tree, C without the isolated test's numbering by rows, D with the host's pass serial), in
# alternating processes A B C D A B C D (the second round skipped past BUDGET_S), rows and runs compared
# (SHA-256); then one process of B under profile_blast_stages.py (the stage table, CUPTI where PyTorch is).
# Data as gpu_scale40.sh / gpu_runs40.sh make it: the pan-genome recipe (PAN_BASES, default 1e9: 14 mutated
# copies of the carried bacteria75), `gseek index --parts text`, the 1,000 `w40` queries (seed 11).
#
# usage, on the GPU machine (repository root = the device's copy of main; carry [".whl",
# ".carry/multi40/bacteria75.fa.xz", ".carry/NAME.tgz"], the tree as
#   `git archive --format=tar.gz -o /work/main/.carry/NAME.tgz HEAD -- . ':(exclude)kernels/prebuilt'`):
#     mkdir -p /tmp/mb1g && tar -xzf .carry/NAME.tgz -C /tmp/mb1g && bash /tmp/mb1g/benchmarks/archive/gpu_mb1g.sh
# Knobs: PAN_BASES (1e9), SET (w40), REPEAT (3), TEST_S (60), BUDGET_S (330), VARIANTS ("B:tree C:no-rows D:no-parts"),
# PROFILE (1: B's stage table), BLASTN (1: then the blastn task's 156 x 30 kb on the 75 Mbp random database, A B A B
# through profile_blast_stages.py). Writes $OUT/ab.jsonl, $OUT/log.txt, $OUT/tests.txt, $OUT/stages_b.txt; prints the summary.
set -uo pipefail
START=$SECONDS
TREE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$TREE/benchmarks/archive/gpu_common.sh"  # (PYTHONUNBUFFERED, R: the repository root, this directory)
ROOT=$R; OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
PAN_BASES=${PAN_BASES:-1e9}; SET=${SET:-w40}; REPEAT=${REPEAT:-3}; BUDGET_S=${BUDGET_S:-330}
VARIANTS=${VARIANTS:-"B:tree C:no-rows D:no-parts"}; PROFILE=${PROFILE:-1}
TESTS=${TESTS:-'tests/test_blast_device_rounds.py tests/test_blast_device_gapped.py'}
W=/tmp/mb1gw; mkdir -p "$W"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$OUT/log.txt"; }

ab_install "$ROOT" "$TREE" || exit 1
log "installed A (main) and B ($TREE); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader); $(nproc) cores"

pan40_ready "${TEST_S:-60}"  # the data (CPU) beside the tests (GPU)

ab() {  # TAG PYTHONPATH VARIANT [--timing]
  local tag=$1 path=$2 variant=$3; shift 3
  PYTHONPATH=$path python3 -P "$TREE/benchmarks/archive/mb1g_ab.py" --variant "$variant" --index "$W/db" \
    --queries "$W/q.fa" --tag "$tag" --repeat "$REPEAT" --out "$OUT/ab.jsonl" "$@" 2>> "$OUT/ab.err" | tee -a "$OUT/log.txt"
}
one_round() {  # N [--timing]
  local n=$1; shift
  ab "A$n" "$A" tree "$@"
  for v in $VARIANTS; do ab "${v%%:*}$n" "$B" "${v#*:}" "$@"; done
}
t0=$SECONDS
one_round 1
lap=$((SECONDS - t0))
if [ $((SECONDS - START + lap)) -le "$BUDGET_S" ]; then one_round 2 --timing; else log "second round skipped (BUDGET_S)"; fi
if [ "$PROFILE" = 1 ] && [ $((SECONDS - START + lap / 3)) -le "$BUDGET_S" ]; then
  (cd "$TREE" && PYTHONPATH=$B timeout 120 python3 -P benchmarks/tools/profile_blast_stages.py --db "$W/db.fa" \
    --queries "w40=megablast:$W/q.fa" --repeat 1 --profiled 1 --threads 16 --tag B --out "$OUT/stages_b.json") \
    > "$OUT/stages_b.txt" 2>&1
  log "B's stage table:"; grep -v "^WARNING\|^gseek shipped" "$OUT/stages_b.txt" | tail -60
else
  log "stage table skipped (BUDGET_S)"
fi
if [ "${BLASTN:-0}" = 1 ]; then  # the blastn task's 156 x 30 kb on the random 75 Mbp database (the tool's data, built once)
  for tag in A1 B1 A2 B2; do
    path=$A; [ "${tag:0:1}" = B ] && path=$B
    (cd "$TREE" && PYTHONPATH=$path timeout 150 python3 -P benchmarks/tools/profile_blast_stages.py --sets blastn-30kb \
      --work /tmp/mb1g_t --repeat "$REPEAT" --profiled 0 --no-cupti --threads 16 --tag "$tag" --out "$OUT/blastn_$tag.json") \
      > "$OUT/blastn_$tag.txt" 2>&1
    log "$tag blastn-30kb: $(grep -o 'rows [0-9a-f]*\|steady search [^;]*' "$OUT/blastn_$tag.txt" | tr '\n' ' ')"
  done
fi
PYTHONPATH=$B python3 -P - "$OUT/ab.jsonl" <<'PY' | tee -a "$OUT/log.txt"
import json, statistics, sys
recs = [json.loads(line) for line in open(sys.argv[1])]
for side in sorted({r["tag"][0] for r in recs}):
    rs = [r for r in recs if r["tag"][0] == side]
    s = [x for r in rs for x in r["search_s"]]
    print(f"{side}: search median {statistics.median(s):.3f} s ({min(s):.3f}-{max(s):.3f}, n={len(s)}): "
          + " / ".join(", ".join(f"{x:.3f}" for x in r["search_s"]) for r in rs)
          + "; start+warm " + ", ".join(f"{r['start_and_warm_s']:.1f}" for r in rs) + " s")
print("rows:", sorted({(r["hsps"], r["rows_sha256"][:12]) for r in recs}), "identical:", len({r["rows_sha256"] for r in recs}) == 1,
      "runs identical:", len({r["runs_sha256"] for r in recs}) == 1)
for r in recs:
    if "stages_s" in r:
        print(r["tag"], "timed", round(r["timed_search_s"], 3), {k: round(v * 1000) for k, v in r["stages_s"].items()})
PY
log "done"

#!/usr/bin/env bash
# busy41's A/B (issue 40, GPU busy): the blastn task, 156 x 30 kb "contigs" against issue 40's 75 Mbp random
# database (gpu_scale40.sh's set 2: profile_blast_stages.py's make_data), steady search with per-stage kernel and
# host time, A = the working directory (main), B = the carried tree; B's `-m gpu` tests near the change first.
# Every summary line goes to stdout; $OUT/A.json, $OUT/B.json, $OUT/A.md, $OUT/B.md, $OUT/tests.txt.
# usage, on the GPU machine (repository root = the device's copy of main; carry [".whl", ".carry/busy41.tgz"]):
#     mkdir -p /tmp/busy41 && tar -xzf .carry/busy41.tgz -C /tmp/busy41 && bash /tmp/busy41/benchmarks/archive/gpu_busy41.sh
# Knobs: REPEAT (5), PROFILED (1), TEST_S (90).
set -uo pipefail
OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
TREE=${TREE:-/tmp/busy41}; ROOT=$PWD; W=/tmp/busy41w; mkdir -p "$W"
source "$TREE/benchmarks/archive/gpu_common.sh"
START=$SECONDS
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$OUT/log.txt"; }
ab_install "$ROOT" "$TREE" || exit 1
log "installed A (main) and B ($TREE)"
PYTHONPATH=$A python3 -P - "$TREE" "$W" <<'PY' > "$W/data.log" 2>&1 &
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1] + "/benchmarks/tools")
from profile_blast_stages import make_data
files = make_data(Path(sys.argv[2]), 75_000_000, 12, 1.0, stems=("q30k",))
Path(sys.argv[2], "db.txt").write_text(str(files["db"]))
Path(sys.argv[2], "q.txt").write_text(str(files["q30k"]))
PY
data=$!
(cd "$TREE" && PYTHONPATH=$B timeout "${TEST_S:-90}" python3 -P -m pytest -q -p no:randomly -p no:cacheprovider -m gpu \
  tests/test_blast_bounds.py tests/test_blast_kernels.py tests/test_blast_search.py \
  -k "seed_chunks or larger_seed_chunks or relaunches or scan_windows or lookup_pair_chunks") > "$OUT/tests.txt" 2>&1
log "B's tests: $(tail -1 "$OUT/tests.txt")"
wait $data; tail -2 "$W/data.log"
DB=$(cat "$W/db.txt"); Q=$(cat "$W/q.txt")
[ -s "${DB%.fa}.gseek" ] || PYTHONPATH=$A python3 -P -m gseek --quiet --device cpu -p 16 index "$DB" --parts text -o "${DB%.fa}"
log "data ready: $(grep -c '>' "$Q") queries, $(stat -c %s "$DB") bytes of database FASTA"
for tree in A B; do
  eval PYTHONPATH=\$$tree python3 -P "$TREE/benchmarks/tools/profile_blast_stages.py" --device gpu --threads 16 \
    --work "$W" --db "$DB" --queries "r75-30kb=blastn:$Q" --repeat "${REPEAT:-5}" --profiled "${PROFILED:-1}" \
    --tag "$tree" --out "$OUT/$tree.json" > "$OUT/$tree.md" 2> "$W/$tree.err"
  tail -2 "$W/$tree.err"
  log "$tree profiled"
done
for tree in A B; do
  echo "## $tree"; grep -v '^# profile' "$OUT/$tree.md" | grep -v '^$'
done
log done

#!/usr/bin/env bash
# The last device call of 2026-11-28's second session, on the merged tree (issues 36, 39, 40, 41):
#   1. -m gpu, whole suite (.ci/gpu-tests, normal install, -n 4);
#   2. issue 40's table again: the steady-state search (benchmarks/tools/profile_blast_stages.py, warm searcher,
#      median of 3) and the whole command (`gseek search` on the profile's index) on the issue's 75 Mbp random
#      sets, beside `blastn -num_threads 16` on the same files in the same call (makeblastdb of the same db.fa).
# Carry: .whl (Python 3.12 wheels) and benchmarks/peers/bundle (blastn). Results under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
timeout ${TESTS_S:-300} bash .ci/gpu-tests -m gpu -n 4 -q > "$OUT/gpu-tests.txt" 2>&1
echo "gpu-tests exit $?" >> "$OUT/gpu-tests.txt"
export PYTHONPATH=/tmp/site   # .ci/gpu-tests installed the wheels there and gseek into the system
W=/tmp/stages
timeout 200 python3 -P benchmarks/tools/profile_blast_stages.py --work $W --tag final --out "$OUT/stages.json" \
  --repeat 3 --profiled 1 --no-cupti > "$OUT/stages.md" 2> "$OUT/stages.err"; echo "stages exit $?" >> "$OUT/stages.md"
source benchmarks/env.sh || exit 1
db=$(ls $W/db-*.fa | head -1); q10=$(ls $W/q10k-*.fa | head -1); q30=$(ls $W/q30k-*.fa | head -1)
t() { local s=$EPOCHREALTIME; "$@" > /dev/null 2>> "$OUT/whole.err"; local e=$EPOCHREALTIME
      awk "BEGIN{printf \"%.2f\", $e-$s}"; }
{
  echo "makeblastdb $(t makeblastdb -in $db -dbtype nucl -out $W/bdb) s"
  idx=$(ls -d $W/db-*.gseek | head -1)   # the profile's index of the same db.fa
  echo "| set | blastn -num_threads 16 s | gseek search --device gpu -p 16 s (whole command) |"
  echo "|---|---|---|"
  for set in "megablast $q10 10kb" "megablast $q30 30kb" "blastn $q10 10kb"; do
    read task q name <<< "$set"
    for r in 1 2; do
      b=$(t blastn -task $task -db $W/bdb -query $q -num_threads 16 -outfmt 6 -out $W/b-$task-$name.tsv)
      g=$(t python3 -P -m gseek --quiet --device gpu -p 16 search --task $task -x $idx -q $q \
            -o $W/g-$task-$name.tsv)
      echo "| $task $name (round $r) | $b | $g |"
    done
    echo "lines: blastn $(wc -l < $W/b-$task-$name.tsv), gseek $(wc -l < $W/g-$task-$name.tsv)"
  done
} > "$OUT/whole.md" 2>&1
cat "$OUT/whole.md"; tail -25 "$OUT/stages.md"; tail -4 "$OUT/gpu-tests.txt"

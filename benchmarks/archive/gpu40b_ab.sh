#!/usr/bin/env bash
# Issue 40 (branch gpu40b): a GPU searcher's lookup table built on the device (gseek/blast/device_table.py)
# against main's, which builds it on the host and uploads it. Run in main's checkout (tree A) with
# .carry/gpu40b.tar.gz (`git archive` of the branch, its commit given as BREV: tree B), .whl (Python 3.12 wheels) and
# benchmarks/peers/bundle (blastn) carried:
#   1. -m gpu tests of what the branch touched ($TESTS), on tree B;
#   2. benchmarks/tools/profile_blast_stages.py (B's, with the query side's passes as regions) on issue 40's
#      75 Mbp random sets, processes alternating A, B ($ROUNDS rounds; each its own warm searchers), the rows'
#      SHA-256 compared across all of them, B's first round also on the CPU backend ($CPU_CHECK);
#   3. blastn -num_threads 16 on the same files (makeblastdb of the same db.fa), $BLASTN_ROUNDS runs a set.
# Results: $OUT/ab.md (tests, tables, digests, blastn), $OUT/stages-TREEROUND.json, $OUT/ab.err.
# Other branches (issue 40's mb40f): TREE=.carry/NAME.tar (default .carry/gpu40b.tar.gz); OVERLAY=1: TREE holds
# only the branch's changed files, laid over a copy of main's tree; B_ENV: variables of tree B's tests and
# processes (e.g. "GSEEK_CUBINS=0" where a .cu file changed).
set -uo pipefail
OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
ROOT=$PWD
export PYTHONUNBUFFERED=1
LOG=$OUT/ab.md
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/a . 2>>"$OUT/ab.err" || exit 1
TREE=${TREE:-.carry/gpu40b.tar.gz}
mkdir -p /tmp/bsrc
if [ "${OVERLAY:-0}" = 1 ]; then
  tar -cf - --exclude=./.whl --exclude=./.carry --exclude=./.git --exclude=./.venv --exclude=./benchmarks/peers \
    --exclude=./benchmarks/data . | tar -xf - -C /tmp/bsrc || exit 1
fi
tar -xf "$TREE" -C /tmp/bsrc || exit 1
(cd /tmp/bsrc && python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/b .) \
  2>>"$OUT/ab.err" || exit 1
echo "A: main $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null); B: ${BREV:-?} ($TREE)" | tee -a "$LOG"
if [ -n "${TESTS:-}" ]; then
  (cd /tmp/bsrc && env ${B_ENV:-} PYTHONPATH=/tmp/b:/tmp/site timeout "${TESTS_S:-200}" python3 -P -m pytest -q \
    -p no:randomly \
    -p no:cacheprovider -m gpu $TESTS 2>&1 | tail -15 | tee -a "$LOG")
fi
S=/tmp/bsrc/benchmarks/tools/profile_blast_stages.py
W=/tmp/stages
for r in $(seq "${ROUNDS:-2}"); do
  for t in A B; do
    lib=/tmp/$(echo $t | tr AB ab)
    extra=; [ "$t$r" = B1 ] && [ -n "${CPU_CHECK:-}" ] && extra="--cpu-check $CPU_CHECK"
    envs=; [ $t = B ] && envs=${B_ENV:-}
    env $envs PYTHONPATH=$lib:/tmp/site timeout "${PROFILE_S:-150}" python3 -P "$S" --work $W --tag "$t$r" \
      --out "$OUT/stages-$t$r.json" ${ARGS:---repeat 5 --profiled 1} $extra 2>>"$OUT/ab.err" >> "$LOG"
    echo "$t$r exit $?" >> "$LOG"
  done
done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$LOG"
python3 /tmp/bsrc/benchmarks/tools/stage_digests.py "$OUT" | tee -a "$LOG"
if [ "${BLASTN_ROUNDS:-2}" -gt 0 ] && source "$ROOT/benchmarks/env.sh"; then
  db=$(ls $W/db-*.fa | head -1); q10=$(ls $W/q10k-*.fa | head -1); q30=$(ls $W/q30k-*.fa | head -1)
  t() { local s=$EPOCHREALTIME; "$@" > /dev/null 2>> "$OUT/ab.err"; local e=$EPOCHREALTIME
        awk "BEGIN{printf \"%.3f\", $e-$s}"; }
  {
    echo "makeblastdb $(t makeblastdb -in $db -dbtype nucl -out $W/bdb) s"
    for set in "megablast $q10 10kb" "megablast $q30 30kb" "blastn $q10 10kb"; do
      read task q name <<< "$set"
      for r in $(seq "${BLASTN_ROUNDS:-2}"); do
        echo "blastn -task $task $name -num_threads 16: $(t blastn -task $task -db $W/bdb -query $q -num_threads 16 \
          -outfmt 6 -out $W/b-$task-$name.tsv) s, $(wc -l < $W/b-$task-$name.tsv) lines"
      done
    done
  } 2>&1 | tee -a "$LOG"
fi

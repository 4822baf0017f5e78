#!/usr/bin/env bash
# The last device call of 2026-11-29's session, on the merged tree (scale40, gpu40g, start40, purge40, runs40,
# mbr40), within one small budget (LIMIT_S, default 300 s of the call's wall):
#   1. the shipped CuPy kernels rebuilt for this tree (kernels/cupy_cache/ into $OUT/shipped.tar; with CUBINS=1
#      the cubins too: gpu_round3.sh's first half);
#   2. -m gpu, whole suite (.ci/gpu-tests, normal install, -n 4), at most TESTS_S seconds;
#   3. gpu_scale40.sh's set 1 (the 1 Gbp megablast set: whole command twice, steady search; blastn last, only
#      if the budget holds) and set 2 as far as SCALE_S allows;
#   4. issue 40's 75 Mbp sets (gpu_round5.sh's steps: steady search, median of REPEAT, whole commands beside
#      blastn -num_threads 16), if the budget holds.
# Summaries to stdout (the call's files may not all come back).
# Carry: .whl, benchmarks/peers/bundle, .carry/multi40/bacteria75.fa.xz. Results under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
S0=$SECONDS; LIMIT_S=${LIMIT_S:-300}
left() { echo $((LIMIT_S - (SECONDS - S0))); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
R=$(pwd)
python3 -m pip install -q --no-deps --no-build-isolation --no-index . || exit 1
if [ "${CUBINS:-0}" = 1 ]; then
  { time python3 -P -m gseek.precompile --cubins --folder "$R/kernels/cubin"; } > "$OUT/cubins.log" 2>&1
  tail -3 "$OUT/cubins.log"
fi
{ time python3 -P -m gseek.precompile --cupy-cache --folder "$R/kernels/cupy_cache"; } > "$OUT/cupy_cache.log" 2>&1
tail -4 "$OUT/cupy_cache.log"
tar cf "$OUT/shipped.tar" kernels/cubin kernels/cupy_cache
python3 -m pip install -q --no-deps --no-build-isolation --no-index . || exit 1   # with the rebuilt kernels
echo "[$((SECONDS - S0)) s] install and rebuild done"
timeout ${TESTS_S:-120} bash .ci/gpu-tests -m gpu -n 4 -q -rfE > "$OUT/gpu-tests.txt" 2>&1
echo "gpu-tests exit $?" >> "$OUT/gpu-tests.txt"
grep -E "passed|failed|FAILED|ERROR|error|exit" "$OUT/gpu-tests.txt" | tail -25
echo "[$((SECONDS - S0)) s] tests done"
export PYTHONPATH=/tmp/site
NO_INSTALL=1 BLAST_LAST=1 BUDGET_S=$(( $(left) - ${ROUND5_S:-60} )) bash benchmarks/archive/gpu_scale40.sh 2>&1 | tail -40
echo "[$((SECONDS - S0)) s] scale40 done"
if [ "$(left)" -gt 45 ]; then
  sed -n '/^W=\/tmp\/stages/,$p' benchmarks/archive/gpu_round2_final.sh | sed "s/--repeat 3/--repeat ${REPEAT:-5}/" \
      > /tmp/step3.sh
  OUT=$OUT timeout $(left) bash /tmp/step3.sh > /dev/null 2>&1
  cat "$OUT/whole.md"
  grep -E 'steady search|^### |busy|HSPs' "$OUT/stages.md" | head -40
fi
echo "[$((SECONDS - S0)) s] all done"

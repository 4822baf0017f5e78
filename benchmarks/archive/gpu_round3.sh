#!/usr/bin/env bash
# The device call of 2026-11-28's third session, on the merged tree (gpu40b, serve39c, multi40, fin41, cpu40b):
#   1. the shipped GPU machine code rebuilt for this tree (kernels/blast.cu changed: dust_reach; new CuPy
#      kernels of the device-built lookup table): kernels/cubin/ and kernels/cupy_cache/ into $OUT/shipped.tar;
#   2. the -m gpu suite on them (.ci/gpu-tests, normal install, -n 4);
#   3. issue 40's 75 Mbp sets beside `blastn -num_threads 16` (gpu_round2_final.sh's second half) when
#      benchmarks/peers/bundle travelled.
# Carry: .whl (Python 3.12 wheels) and benchmarks/peers/bundle (blastn). Results under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
R=$(pwd)
python3 -m pip install -q --no-deps --no-build-isolation --no-index . || exit 1  # precompile runs installed
{ time python3 -P -m gseek.precompile --cubins --folder "$R/kernels/cubin"; } > "$OUT/cubins.log" 2>&1
{ time python3 -P -m gseek.precompile --cupy-cache --folder "$R/kernels/cupy_cache"; } > "$OUT/cupy_cache.log" 2>&1
tar cf "$OUT/shipped.tar" kernels/cubin kernels/cupy_cache
timeout ${TESTS_S:-240} bash .ci/gpu-tests -m gpu -n 4 -q -rfE > "$OUT/gpu-tests.txt" 2>&1
echo "gpu-tests exit $?" >> "$OUT/gpu-tests.txt"
tail -15 "$OUT/gpu-tests.txt"
[ -d benchmarks/peers/bundle ] || { echo "no blastn bundle: step 3 skipped"; exit 0; }
export PYTHONPATH=/tmp/site
sed -n '/^W=\/tmp\/stages/,$p' benchmarks/archive/gpu_round2_final.sh > /tmp/step3.sh
OUT=$OUT bash /tmp/step3.sh

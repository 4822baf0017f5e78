#!/usr/bin/env bash
# The device session of 2026-11-28 (second: issues 36, 39, 40, 41 continued), one call on the GPU machine:
#   1. the shipped GPU machine code rebuilt for this tree (kernels/blast.cu changed: dc-megablast's templates,
#      the two-hit kernel): kernels/cubin/ and kernels/cupy_cache/, tarred into $OUT/shipped.tar to commit;
#   2. the -m gpu suite on them (.ci/gpu-tests, normal install, -n 4).
# Carry: .whl (Python 3.12 wheels) and .whl-extra (parasail).
set -uo pipefail
OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl .whl-extra/*.whl || exit 1
export PYTHONPATH=/tmp/site
R=$(pwd)
python3 -m pip install -q --no-deps --no-build-isolation --no-index . || exit 1  # precompile runs installed
{ time python3 -P -m gseek.precompile --cubins --folder "$R/kernels/cubin"; } > "$OUT/cubins.log" 2>&1
{ time python3 -P -m gseek.precompile --cupy-cache --folder "$R/kernels/cupy_cache"; } > "$OUT/cupy_cache.log" 2>&1
tar cf "$OUT/shipped.tar" kernels/cubin kernels/cupy_cache  # .ci/gpu-tests installs the tree again, with them
timeout ${TESTS_S:-420} bash .ci/gpu-tests -m gpu -n 4 -q ${TESTS:-} > "$OUT/gpu-tests.txt" 2>&1
echo "gpu-tests exit $?" >> "$OUT/gpu-tests.txt"
tail -30 "$OUT/gpu-tests.txt"

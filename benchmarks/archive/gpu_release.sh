#!/usr/bin/env bash
# The device session of 2026-11-28 (the round of issues 36-41), one call on the GPU machine:
#   1. the shipped GPU machine code rebuilt for this tree (the BLAST family changed: issue 36's
#      mini-extension): kernels/cubin/ (NVRTC through CuPy) and kernels/cupy_cache/ (CuPy's own
#      kernels), both tarred into $OUT/shipped.tar to be committed;
#   2. the -m gpu suite on them (.ci/gpu-tests, normal install, -n 4);
#   3. first runs on a fresh install (empty Numba and CuPy caches) and warm runs: gseek demo and a
#      megablast search of the demo's queries, GPU and CPU;
#   4. gseek serve on the lambda data: latency of small requests (benchmarks/tools/serve_bench.py).
# Carry: .whl (pysam, biopython, pydivsufsort, isal, pytest-xdist, execnet, starlette, uvicorn, h11,
# anyio, sniffio for Python 3.12) and .whl-extra (parasail).
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
timeout 400 bash .ci/gpu-tests -m gpu -n 4 -q > "$OUT/gpu-tests.txt" 2>&1; echo "gpu-tests exit $?" >> "$OUT/gpu-tests.txt"
(
  cd /tmp && rm -rf fr && mkdir fr && cd fr
  genome=$(python3 -P -c 'from gseek.datasets import lambda_genome; print(lambda_genome())')
  python3 -P -m gseek --quiet index "$genome" -o lambda
  for dev in gpu cpu; do
    export NUMBA_CACHE_DIR=/tmp/fr/numba-$dev CUPY_CACHE_DIR=/tmp/fr/cupy-$dev
    for run in first warm warm; do
      s=$EPOCHREALTIME; python3 -P -m gseek --device $dev demo -o demo-$dev > /dev/null 2> demo.err; e=$EPOCHREALTIME
      echo "demo $dev $run $(awk "BEGIN{printf \"%.2f\", $e-$s}") s $(grep -c compiling demo.err) compile-notices"
      s=$EPOCHREALTIME; python3 -P -m gseek --device $dev --quiet search --task megablast -x lambda.gseek \
        -q demo-$dev/lambda_queries.fa -o mb-$dev.tsv 2> mb.err; e=$EPOCHREALTIME
      echo "megablast $dev $run $(awk "BEGIN{printf \"%.2f\", $e-$s}") s $(grep -c compiling mb.err) compile-notices $(wc -l < mb-$dev.tsv) lines"
    done
  done
  cmp /tmp/fr/mb-gpu.tsv /tmp/fr/mb-cpu.tsv && echo "megablast GPU = CPU bytes"
) > "$OUT/first-run.txt" 2>&1
[ -n "${SERVE:-}" ] && { timeout 120 python3 -P benchmarks/tools/serve_bench.py --device gpu > "$OUT/serve.txt" 2>&1; echo "serve_bench exit $?" >> "$OUT/serve.txt"; }
true

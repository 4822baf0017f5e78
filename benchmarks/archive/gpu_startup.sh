#!/usr/bin/env bash
# Issue 15 on the GPU machine, step by step (results under $OUT, returned as one archive):
#   pyc         one command of each kind with bytecode written, as an installed machine has it (the device sets
#               PYTHONDONTWRITEBYTECODE)
#   startup     benchmarks/run.py startup --devices cpu,gpu $STARTUP_OPTS (default: every "off" row and the demo)
#   profile     the fixed costs of a small search step by step (profile_startup.py, -X importtime, a trace)
#   warm        warm small searches, GPU and CPU alternately
#   cupycache   which CuPy kernels a cold command compiles, and gseek compile's CuPy cache, tarred
#   cupybuild   the shipped copy of CuPy's kernels rebuilt here (kernels/cupy_cache/, tarred) and installed
#   cupycheck   a cold search and demo with the shipped copy: what CuPy still compiles
#   tests       the -m gpu tests (the `gpu` cases on the shipped cubins) and tests/test_cupy_cache.py
#   throughput  the 10M-read mapping against bowtie and the all-vs-all DP re-run
# Carry: .whl, .whl-extra (parasail); .carry/ecoli.fa.gz and benchmarks/peers/bundle for profile and throughput.
#   bash benchmarks/archive/gpu_startup.sh STEP...   (default: startup profile tests)
set -u
OUT=${OUT:-/tmp/gseek-out}
mkdir -p "$OUT"
source benchmarks/archive/gpu_common.sh
gpu_install .whl-extra || exit 1
steps=${*:-startup profile tests}
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
  python3 -P -c 'import cupy, numba, numpy, sys; print(sys.version.split()[0], "cupy", cupy.__version__,
"numba", numba.__version__, "numpy", numpy.__version__)'; } | tee "$OUT/device.txt"
# the small search's data: the lambda index and its first 1,000 reads
python3 -P -m gseek --quiet --device cpu index "$(python3 -P -c 'from gseek.datasets import lambda_genome as g
print(g())')" -o /tmp/lam
head -4000 "$(python3 -P -c 'from gseek.datasets import lambda_reads as r; print(r())')" > /tmp/r1000.fq

for s in $steps; do case $s in
pyc)
  for d in gpu cpu; do env -u PYTHONDONTWRITEBYTECODE python3 -P -m gseek --quiet --device $d search -x /tmp/lam \
    -q /tmp/r1000.fq -o /tmp/o.sam; done
  env -u PYTHONDONTWRITEBYTECODE python3 -P -m gseek --quiet --device gpu search -x /tmp/lam -q /tmp/r1000.fq \
    --task megablast -o /tmp/o.tsv ;;
cupybuild)  # the shipped copy of CuPy's kernels, rebuilt here and installed with the tree
  python3 -P -m gseek.precompile --cupy-cache --folder "$R/kernels/cupy_cache" > "$OUT/cupybuild.txt" 2>&1
  echo "cupybuild rc=$?"; tail -2 "$OUT/cupybuild.txt"; gpu_install .whl-extra || exit 1
  tar -czf "$OUT/cupy_cache.tar.gz" kernels/cupy_cache ;;
cupycheck)  # a cold command with the shipped copy: what CuPy still compiles (the .cu files it keeps)
  for cmd in "search -x /tmp/lam -q /tmp/r1000.fq -v 3 -o /tmp/o.sam" "demo"; do
    rm -rf /tmp/ccv /tmp/ncv /tmp/demo; mkdir -p /tmp/demo
    (cd /tmp/demo && CUPY_CACHE_DIR=/tmp/ccv CUPY_CACHE_SAVE_CUDA_SOURCE=1 NUMBA_CACHE_DIR=/tmp/ncv t python3 -P -m gseek \
      --quiet --device gpu $cmd)
    echo "$cmd: $(ls /tmp/ccv | grep -c 'cubin$') in the cache, compiled: $(ls /tmp/ccv | grep -c '\.cu$')" \
      | tee -a "$OUT/cupycheck.txt"
    grep -ho '__global__ void [a-z_0-9A-Z]*' /tmp/ccv/*.cu 2>/dev/null >> "$OUT/cupycheck.txt"
  done ;;
warm)  # warm small searches, GPU and CPU alternately
  for i in 1 2 3 4 5; do for d in gpu cpu; do t python3 -P -m gseek --quiet --device $d -p 16 search -x /tmp/lam \
    -q /tmp/r1000.fq -v 3 -o /tmp/o.sam; done; done ;;
cupycache)  # CUPY_CACHE_SAVE_CUDA_SOURCE: CuPy keeps each kernel's .cu beside its cached binary
  rm -rf /tmp/cc-*; mkdir -p /tmp/cc-map /tmp/cc-all /tmp/cc-seeded
  CUPY_CACHE_DIR=/tmp/cc-map CUPY_CACHE_SAVE_CUDA_SOURCE=1 NUMBA_CACHE_DIR=/tmp/nc-map t python3 -P -m gseek --quiet \
    --device gpu -p 16 search -x /tmp/lam -q /tmp/r1000.fq -v 3 -o /tmp/o.sam
  CUPY_CACHE_DIR=/tmp/cc-all CUPY_CACHE_SAVE_CUDA_SOURCE=1 NUMBA_CACHE_DIR=/tmp/nc-all t python3 -P -m gseek \
    --device gpu compile --processes 4
  cp /tmp/cc-all/*.cubin /tmp/cc-seeded/ 2>/dev/null
  for i in 1 2; do CUPY_CACHE_DIR=/tmp/cc-seeded NUMBA_CACHE_DIR=/tmp/nc-seeded$i t python3 -P -m gseek --quiet \
    --device gpu -p 16 search -x /tmp/lam -q /tmp/r1000.fq -v 3 -o /tmp/o.sam; done
  (cd /tmp && ls -l --time-style=+%s.%N cc-map cc-all > cc-list.txt; tar -czf "$OUT/cupy-cache.tar.gz" cc-map cc-all \
    cc-list.txt) ;;
throughput)
  source benchmarks/env.sh
  python3 benchmarks/run.py map .carry/ecoli.fa.gz --reads 10000000 --threads 16 --devices gpu,gpu \
    --peers bowtie-best > "$OUT/map10m.md" 2> "$OUT/map10m.err"; echo "map rc=$?"
  python3 benchmarks/run.py align --seqs 1000,5000 --runs local-score,global-tb --peers none --devices gpu \
    --threads 16 > "$OUT/align.md" 2> "$OUT/align.err"; echo "align rc=$?" ;;
startup)
  python3 benchmarks/run.py startup --devices cpu,gpu ${STARTUP_OPTS:---no-prebuilt --no-cubins --no-cupy-cache --demo} \
    > "$OUT/startup.md" 2> "$OUT/startup.err"; echo "startup rc=$?" ;;
profile)
  for d in gpu gpu gpu cpu cpu; do python3 -P benchmarks/tools/profile_startup.py /tmp/lam /tmp/r1000.fq --device $d; done \
    > "$OUT/profile_startup.txt" 2>&1
  for d in gpu gpu gpu cpu cpu; do t python3 -P -m gseek --device $d -p 16 search -x /tmp/lam -q /tmp/r1000.fq -v 3 \
    -o /tmp/o.sam 2>> "$OUT/summary-lines.txt"; done
  python3 -X importtime -P -m gseek --quiet --device gpu -p 16 search -x /tmp/lam -q /tmp/r1000.fq -v 3 -o /tmp/o.sam \
    2> "$OUT/importtime-gpu.txt"
  OUT=$OUT/trace bash benchmarks/tools/trace_map.sh .carry/ecoli.fa.gz 1000 gpu > /dev/null 2>&1
  OUT=$OUT/trace bash benchmarks/tools/trace_map.sh .carry/ecoli.fa.gz 1000 gpu > /dev/null 2>&1 ;;
tests)
  python3 -P -m pytest -q -p no:cacheprovider -o addopts="-ra --strict-markers" -m gpu -n 4 tests \
    > "$OUT/pytest.log" 2>&1; echo "pytest rc=$?"; tail -5 "$OUT/pytest.log"
  python3 -P -m pytest -q -p no:cacheprovider tests/test_cupy_cache.py 2>&1 | tail -3 ;;
esac; done
cp benchmarks/out/*.json "$OUT/" 2>/dev/null  # the runner's records
# At most 8 files come back from $OUT: everything in one archive.
(cd "$OUT" && tar -czf /tmp/results.tar.gz . && rm -rf ./* && mv /tmp/results.tar.gz .)

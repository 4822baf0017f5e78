# Issue 40's multi-GPU item on the 4-GPU machine: `gseek pipeline --task megablast` over 32 files x 64 w1 queries
# against the pan-genome (~1.06 Gbp, built here from the carried bacteria75) on 1, 2, 4 GPUs, the queries split and
# the database split, then (DASK=1) one Dask worker a GPU; outputs compared (gpu_multi40.py).
# usage: [DASK=1] [BUDGET=170] [RUNS='0,1,2,3@16;0@16'] [NO_FIXED=1] [TRACE=1]
#   [STEADY='0,1,2,3;0,1,2,3#2'] bash benchmarks/archive/gpu_multi40.sh   (carry [".carry/multi40"]: whl/ (isal, pysam),
#   whl-dask/ (dask, distributed, tornado, zict, tblib, locket, partd), bacteria75.fa.xz; results in $OUT)
set -u
export PYTHONUNBUFFERED=1
C=.carry/multi40
wheels=$C/whl/*.whl
[ "${DASK:-0}" = 1 ] && wheels="$wheels $C/whl-dask/*.whl"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $wheels || exit 1
PYTHONPATH=/tmp/site python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/new . || exit 1
export PYTHONPATH=/tmp/new:/tmp/site
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
nvidia-smi topo -m >> "$OUT/device.txt" 2>&1
python3 -P -c "import numba, numpy as np
f = numba.njit(parallel=True)(lambda a: a.sum())
f(np.ones(10)); print('numba', numba.__version__, 'threading layer', numba.threading_layer())" | tee -a "$OUT/device.txt"
python3 -P benchmarks/archive/gpu_multi40.py --source $C/bacteria75.fa.xz --out "$OUT" --work /tmp/multi40 \
  --budget "${BUDGET:-170}" $([ "${DASK:-0}" = 1 ] && echo --dask) ${RUNS:+--runs "$RUNS"} \
  $([ "${NO_FIXED:-0}" = 1 ] && echo --no-fixed) $([ "${TRACE:-0}" = 1 ] && echo --trace) \
  ${STEADY:+--steady "$STEADY"} 2>&1 | tee "$OUT/log.txt"

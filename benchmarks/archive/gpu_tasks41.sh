# The device session of the tasks blastn-short and dc-megablast (issue 41): this tree installed (carried as
# .carry/tasks41.tar), then the GPU cases of the discontiguous-word kernels and of the search (CPU = GPU
# bytes, default and tiny launch geometry) with GSEEK_CUBINS=0 (the changed kernels/blast.cu compiled by
# NVRTC, not the shipped stale cubins), and the blast family's changed kernels' existing GPU cases.
# Run there from the extracted tree: bash benchmarks/archive/gpu_tasks41.sh WHEEL_DIR
set -u
OUT=${OUT:-/tmp/gseek-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$1"/*.whl \
  || exit 1
PYTHONPATH=/tmp/site python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/new . || exit 1
export PYTHONPATH=/tmp/new:/tmp/site GSEEK_CUBINS=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
python3 -P -m pytest -q -p no:cacheprovider -o addopts="-ra --strict-markers" -m gpu tests/test_blast_tasks.py \
  tests/test_blast_kernels.py -k "not ungapped_extension" 2>&1 | tee "$OUT/pytest.log"
exit "${PIPESTATUS[0]}"

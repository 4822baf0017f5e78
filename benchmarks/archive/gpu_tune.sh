# A constant of the BLAST searcher tuned on the pan-genome (issue 17): benchmarks/archive/tune_searcher.py, in process,
# on w1@100 (simulated from the pan-genome, as `run.py blast` does) and ecoli156.
# usage: ATTR=_EXTEND_CHUNK VALUES='65536;262144' [ROUNDS=2] bash benchmarks/archive/gpu_tune.sh
#   carry [".whl", ".carry/bacteria75.fa.gz", ".carry/ecoli.fa.gz"]; results in $OUT/tune.txt.
source benchmarks/archive/gpu_common.sh
gpu_install || exit 1
W=$R/benchmarks/data/scale; scale_data $W
t python3 -P benchmarks/archive/tune_searcher.py $W/pangenome.fa $W/work/w1-100.fa,$W/work/ecoli156.fa \
  "$ATTR" "$VALUES" "${ROUNDS:-2}" 2>&1 | tee -a "$OUT/tune.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"

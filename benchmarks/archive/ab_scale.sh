# A/B on the pan-genome (issue 17), in process: the tree before a change (.carry/old.tar) and this one,
# ecoli156 and w1@100 (megablast) with benchmarks/archive/ncu_xdrop.py (warm-up, then REPEAT rounds; hits compared by
# digest); then (WHOLE=1) benchmarks/archive/gpu_scale.sh's whole commands against blastn for this tree.
# usage: [REPEAT=2] [WHOLE=1] bash benchmarks/archive/ab_scale.sh
#   carry [".whl", ".carry/bacteria75.fa.gz", ".carry/ecoli.fa.gz", ".carry/old.tar"] (+ "benchmarks/peers/bundle"
#   with WHOLE=1); results in $OUT/ab.txt
source benchmarks/archive/gpu_common.sh
gpu_install old || exit 1
W=$R/benchmarks/data/scale; scale_data $W
for tree in old new; do
  PYTHONPATH=/tmp/$tree:/tmp/site t timeout ${AB_LIMIT:-240} python3 -P benchmarks/archive/ncu_xdrop.py $W/pangenome.fa \
    $W/work/ecoli156.fa,$W/work/w1-100.fa ${REPEAT:-2} 2>&1 | sed "s/^/$tree: /" | tee -a $OUT/ab.txt
done
if [ -n "${WHOLE:-}" ]; then ECOLI=1 SETS=w1@100 TASKS=megablast bash benchmarks/archive/gpu_scale.sh 2>&1 | grep "^|" \
  | tee -a $OUT/whole.txt; fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"

# A/B on the pan-genome (issue 17), in process: the tree before a change (.carry/old.tar) and this one,
# ecoli156 and w1@100 (megablast) with benchmarks/ncu_xdrop.py (warm-up, then REPEAT rounds; hits compared by
# digest); then (WHOLE=1) benchmarks/gpu_scale.sh's whole commands against blastn for this tree.
# usage: [REPEAT=2] [WHOLE=1] bash benchmarks/ab_scale.sh
#   carry [".whl", ".carry/bacteria75.fa.gz", ".carry/ecoli.fa.gz", ".carry/old.tar"] (+ "benchmarks/peers/bundle"
#   with WHOLE=1); results in $OUT/ab.txt
source benchmarks/gpu_common.sh
gpu_install old || exit 1
W=$R/benchmarks/data/scale; mkdir -p $W/work
pangenome $W/pangenome.fa
ecoli156 $W/work/ecoli156.fa
python3 -P - "$R" "$W" <<'PY'
import sys
sys.path.insert(0, sys.argv[1] + "/benchmarks")
from run import blast_set
blast_set(sys.argv[2] + "/pangenome.fa", "w1@100").write(sys.argv[2] + "/work/w1-100.fa")
PY
for tree in old new; do
  PYTHONPATH=/tmp/$tree:/tmp/site t timeout ${AB_LIMIT:-240} python3 -P benchmarks/ncu_xdrop.py $W/pangenome.fa \
    $W/work/ecoli156.fa,$W/work/w1-100.fa ${REPEAT:-2} 2>&1 | sed "s/^/$tree: /" | tee -a $OUT/ab.txt
done
if [ -n "${WHOLE:-}" ]; then ECOLI=1 SETS=w1@100 TASKS=megablast bash benchmarks/gpu_scale.sh 2>&1 | grep "^|" \
  | tee -a $OUT/whole.txt; fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"

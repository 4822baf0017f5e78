# In-process A/B of the trace-back rounds (_TRACEBACK_ROUNDS, benchmarks/archive/ncu_xdrop.py XD_TBROUNDS) on the pan-genome
# (ecoli156, w1@100, then the whole w1) and bacteria75 (10kb blastn, ecoli156); the first variant of each call is
# its warm-up. usage: bash benchmarks/archive/ab_tb_rounds.sh (carry [".whl", ".carry/bacteria75.fa.gz", ".carry/ecoli.fa.gz"]);
# results in $OUT/ab.txt
source benchmarks/archive/gpu_common.sh
gpu_install || exit 1
W=$R/benchmarks/data/scale; scale_data $W
PYTHONPATH=/tmp/new:/tmp/site python3 -P - "$R" "$W" <<'PY'
import sys
sys.path.insert(0, sys.argv[1] + "/benchmarks")
from run import blast_set
blast_set(sys.argv[2] + "/pangenome.fa", "w1").write(sys.argv[2] + "/work/w1.fa")
PY
B=/tmp/abr; mkdir -p $B; blast_sets $B 10kb
XD_TBROUNDS="2;0;2;4" t timeout 150 python3 -P benchmarks/archive/ncu_xdrop.py $W/pangenome.fa $W/work/ecoli156.fa,$W/work/w1-100.fa 1 2>&1 | sed "s/^/pan: /" | tee -a $OUT/ab.txt
XD_TBROUNDS="2;0;2;4;0" t timeout 60 python3 -P benchmarks/archive/ncu_xdrop.py $R/.carry/bacteria75.fa.gz $B/10kb.fa:blastn,$W/work/ecoli156.fa:megablast 1 2>&1 | sed "s/^/b75: /" | tee -a $OUT/ab.txt
XD_TBROUNDS="2;0;4" t timeout 200 python3 -P benchmarks/archive/ncu_xdrop.py $W/pangenome.fa $W/work/w1.fa 1 2>&1 | sed "s/^/w1: /" | tee -a $OUT/ab.txt

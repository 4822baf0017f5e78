# A/B of the gapped X-drop sweeps by one warp a seed against one thread a seed (issue 17), in process:
# the tree before the change (.carry/old.tar, `git archive REV -o .carry/old.tar`) and this tree's variants
# (XD_WARP, benchmarks/archive/ncu_xdrop.py), ecoli156 (megablast) and 10kb (blastn) against bacteria75, hits compared
# by digest; then (TESTS=1) the GPU tests of the DP and BLAST files.
# usage: [VARIANTS='none;score,fill'] [TESTS=1] bash benchmarks/archive/ab_xdrop_warp.sh
#   carry [".whl", ".carry/bacteria75.fa.gz", ".carry/ecoli.fa.gz", ".carry/old.tar"]; results in $OUT
source benchmarks/archive/gpu_common.sh
gpu_install old || exit 1
W=/tmp/abx; mkdir -p $W; ecoli156 $W/ecoli156.fa; blast_sets $W 10kb
DB=$R/.carry/bacteria75.fa.gz
SETS=$W/ecoli156.fa:megablast,$W/10kb.fa:blastn
PYTHONPATH=/tmp/old:/tmp/site t timeout ${AB_LIMIT:-200} python3 -P benchmarks/archive/ncu_xdrop.py $DB $SETS ${REPEAT:-2} \
  2>&1 | sed "s/^/old: /" | tee -a $OUT/ab.txt
PYTHONPATH=/tmp/new:/tmp/site XD_WARP="${VARIANTS:-none;fill;score,fill;score,fill@8/1;score,fill@off}" t \
  timeout ${AB_LIMIT:-200} python3 -P benchmarks/archive/ncu_xdrop.py $DB $SETS ${REPEAT:-2} 2>&1 | sed "s/^/new: /" \
  | tee -a $OUT/ab.txt
if [ -n "${TESTS:-}" ]; then (cd /tmp && PYTHONPATH=/tmp/new:/tmp/site timeout ${TEST_LIMIT:-240} python3 -P -m pytest \
  -q -m gpu -p no:cacheprovider $R/tests/test_align.py $R/tests/test_blast_kernels.py $R/tests/test_blast_search.py \
  2>&1 | tail -15 | tee -a $OUT/tests.txt); fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"

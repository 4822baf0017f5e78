# A/B of the score-only rounds (issues 16, 17), in process: the tree before a change (.carry/old.tar,
# `git archive REV -o .carry/old.tar`) and this tree with XD_AHEAD's values of _AHEAD (seeds extended ahead of their
# round; benchmarks/archive/ncu_xdrop.py), warm-up then REPEAT rounds, hits compared by digest: ecoli156 and w1@100
# (megablast) on the pan-genome, 10kb (blastn) and ecoli156 (megablast) on bacteria75. Then (TESTS=1) the GPU tests
# of the BLAST files.
# usage: [XD_AHEAD='0;4096'] [REPEAT=2] [PAN=0] [TESTS=1] bash benchmarks/archive/ab_rounds.sh   (PAN=0: bacteria75 only)
#   carry [".whl", ".carry/bacteria75.fa.gz", ".carry/ecoli.fa.gz", ".carry/old.tar"]; results in $OUT/ab.txt
source benchmarks/archive/gpu_common.sh
gpu_install old || exit 1
W=$R/benchmarks/data/scale
if [ "${PAN:-1}" = 1 ]; then scale_data $W; else mkdir -p $W/work; ecoli156 $W/work/ecoli156.fa; fi
B=/tmp/abr; mkdir -p $B; blast_sets $B 10kb
export XD_AHEAD=${XD_AHEAD:-0;4096}
for tree in old new; do
  [ "${PAN:-1}" = 1 ] && PYTHONPATH=/tmp/$tree:/tmp/site t timeout ${AB_LIMIT:-300} python3 -P benchmarks/archive/ncu_xdrop.py \
    $W/pangenome.fa $W/work/ecoli156.fa,$W/work/w1-100.fa ${REPEAT:-2} 2>&1 | sed "s/^/$tree pan: /" | tee -a $OUT/ab.txt
  PYTHONPATH=/tmp/$tree:/tmp/site t timeout ${AB_LIMIT:-300} python3 -P benchmarks/archive/ncu_xdrop.py \
    $R/.carry/bacteria75.fa.gz $B/10kb.fa:blastn,$W/work/ecoli156.fa:megablast ${REPEAT:-2} 2>&1 \
    | sed "s/^/$tree b75: /" | tee -a $OUT/ab.txt
done
if [ -n "${TESTS:-}" ]; then (cd /tmp && PYTHONPATH=/tmp/new:/tmp/site timeout ${TEST_LIMIT:-240} python3 -P -m pytest \
  -q -m gpu -n 4 -p no:cacheprovider $R/tests/test_blast_search.py $R/tests/test_blast_kernels.py \
  $R/tests/test_blast_shards.py 2>&1 | tail -15 | tee -a $OUT/tests.txt); fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"

# A/B of whole `gseek search --task megablast` commands on the pan-genome (issue 17): the tree before a change
# (.carry/old.tar) and this one, alternately, outputs compared byte for byte; each timed run's stage timings
# (GSEEK_BLAST_TIMING) in $OUT/timing.txt and its pipeline trace (GSEEK_TRACE) summarised in $OUT/trace.txt.
# STAGES=0: plain commands (no stage timings or trace: GSEEK_BLAST_TIMING synchronises the device at each stage).
# usage: [ROUNDS=2] [STAGES=1] [SETS="ecoli156 w1-100"] [SCALE_SETS="w1@100 w1"] bash benchmarks/archive/ab_scale_whole.sh
#   carry [".whl", ".carry/bacteria75.fa.gz", ".carry/ecoli.fa.gz", ".carry/old.tar"] (or ".whl-blast" for ".whl":
#   the pysam and isal wheels); results in $OUT/times.txt. `git archive REV -o .carry/old.tar -- . ':!kernels/prebuilt'`
#   keeps the carry under 64 MiB (the old tree then compiles in its first run).
[ -d .whl ] || { mkdir -p .whl && cp .whl-blast/*.whl .whl/; }
source benchmarks/archive/gpu_common.sh
gpu_install old || exit 1
unset PYTHONDONTWRITEBYTECODE
W=$R/benchmarks/data/scale; scale_data $W
sets=${SETS:-ecoli156 w1-100}
G="python3 -P -m gseek --quiet -p 16"
[ -d $W/work/db.gseek ] || PYTHONPATH=/tmp/new:/tmp/site t $G --device cpu index --parts text $W/pangenome.fa -o $W/work/db.gseek
for tree in old new; do for q in $sets; do  # first runs (compile)
  PYTHONPATH=/tmp/$tree:/tmp/site t $G --device gpu search --task megablast -x $W/work/db.gseek -q $W/work/$q.fa -o $W/$tree-$q.tsv
done; done
for rep in $(seq ${ROUNDS:-2}); do for q in $sets; do for tree in old new; do
  if [ "${STAGES:-1}" = 0 ]; then
    PYTHONPATH=/tmp/$tree:/tmp/site t $G --device gpu search --task megablast -x $W/work/db.gseek -q $W/work/$q.fa \
      -o $W/$tree-$q.tsv
    continue
  fi
  s=$(date +%s.%N)
  PYTHONPATH=/tmp/$tree:/tmp/site GSEEK_BLAST_TIMING=1 GSEEK_TRACE=$W/trace.json t $G --device gpu search \
    --task megablast -x $W/work/db.gseek -q $W/work/$q.fa -o $W/$tree-$q.tsv 2> $W/err.txt
  e=$(date +%s.%N)
  grep -v "stages: ;" $W/err.txt | sed "s/^/$tree $q: /" >> $OUT/timing.txt
  { echo "== $tree $q round $rep"; python3 benchmarks/tools/trace_summary.py --command $s $e $W/trace.json; } >> $OUT/trace.txt 2>&1
done; cmp $W/old-$q.tsv $W/new-$q.tsv && echo "same output: $q" | tee -a $OUT/times.txt; done; done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"

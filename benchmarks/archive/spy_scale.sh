# py-spy samples (every thread, idle included) of a warm whole `gseek search --task ${TASK:-megablast}` on the pan-genome
# (issue 17): where the command's time goes outside the search stages; then the query side alone
# (benchmarks/archive/probe_query_side.py: one job's piece alone and four at once, on this host's cores).
# usage: [SET=ecoli156|w1|w1@100] [TASK=megablast|blastn] [PROBE=1] bash benchmarks/archive/spy_scale.sh  (carry [".whl", ".whl-spy", ".carry"]);
#   raw stacks in $OUT/spy_${SET//@/-}_${TASK:-megablast}.txt, GSEEK_BLAST_TIMING's lines in $OUT/timing_${SET//@/-}_${TASK:-megablast}.txt
source benchmarks/archive/gpu_common.sh
gpu_install .whl-spy || exit 1
export PATH=/tmp/site/bin:$PATH
unset PYTHONDONTWRITEBYTECODE
SET=${SET:-ecoli156}
W=$R/benchmarks/data/scale; mkdir -p $W/work
if [ "$SET" = ecoli156 ]; then pangenome $W/pangenome.fa; ecoli156 $W/work/ecoli156.fa
else SCALE_SETS=$SET scale_data $W; fi
Q=$W/work/${SET//@/-}.fa
G="python3 -P -m gseek --quiet -p 16"
[ -d $W/work/db.gseek ] || t $G --device cpu index --parts text $W/pangenome.fa -o $W/work/db.gseek
for i in 1 2; do t $G --device gpu search --task ${TASK:-megablast} -x $W/work/db.gseek -q $Q -o $W/o.tsv; done
GSEEK_BLAST_TIMING=1 py-spy record --idle --threads --format raw -r 100 -o $OUT/spy_${SET//@/-}_${TASK:-megablast}.txt -- \
  $G --device gpu search --task ${TASK:-megablast} -x $W/work/db.gseek -q $Q -o $W/o2.tsv 2> $OUT/timing_${SET//@/-}_${TASK:-megablast}.txt | tail -4
tail -3 $OUT/timing_${SET//@/-}_${TASK:-megablast}.txt
cmp $W/o.tsv $W/o2.tsv && echo same | tee -a $OUT/times.txt
[ "${PROBE:-1}" = 1 ] && python3 benchmarks/archive/probe_query_side.py $Q 4 3 2>&1 | tee $OUT/query_side_${SET//@/-}.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"

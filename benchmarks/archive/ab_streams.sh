# Searchers (CUDA streams) per GPU for the BLAST-style search (issue 17): whole `gseek search --task megablast`
# commands on the pan-genome with BLAST_STREAMS_PER_GPU set to each of STREAMS in turn (the file cut into one job a
# searcher, as the command does), alternately, outputs compared byte for byte with the first setting's.
# usage: [ROUNDS=2] [STREAMS="2 3 4"] [SETS="w1 ecoli156"] [SCALE_SETS=w1] bash benchmarks/archive/ab_streams.sh
#   carry [".whl", ".carry/bacteria75.fa.gz", ".carry/ecoli.fa.gz"]; results in $OUT/times.txt (stderr in timing.txt)
source benchmarks/archive/gpu_common.sh
gpu_install || exit 1
unset PYTHONDONTWRITEBYTECODE
W=$R/benchmarks/data/scale; SCALE_SETS=${SCALE_SETS:-w1} scale_data $W
sets=${SETS:-w1 ecoli156}; streams=${STREAMS:-2 3 4}; first=${streams%% *}
[ -d $W/work/db.gseek ] || t python3 -P -m gseek --quiet -p 16 --device cpu index --parts text $W/pangenome.fa \
  -o $W/work/db.gseek
run() {  # STREAMS SET [VAR=VALUE...]: one whole command
  local n=$1 q=$2; shift 2
  env "$@" python3 -P -c "import sys, gseek.pipeline.tasks.blast as b; b.BLAST_STREAMS_PER_GPU = int(sys.argv.pop(1)); \
from gseek.cli import run; sys.argv[0] = 'gseek'; run()" $n --quiet -p 16 --device gpu search --task megablast \
    -x $W/work/db.gseek -q $W/work/$q.fa -o $W/s$n-$q.tsv
}
for q in $sets; do t run $first $q; done  # first runs (compile)
for rep in $(seq ${ROUNDS:-2}); do for q in $sets; do for n in $streams; do
  local_s=$(date +%s%N)
  run $n $q 2> $W/err.txt
  local_e=$(date +%s%N)
  echo "$(( (local_e - local_s) / 1000000 )) ms: streams $n $q" | tee -a $OUT/times.txt
  cat $W/err.txt >> $OUT/timing.txt
  cmp $W/s$first-$q.tsv $W/s$n-$q.tsv || echo "DIFFERENT output: streams $n $q" | tee -a $OUT/times.txt
done; done; done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"

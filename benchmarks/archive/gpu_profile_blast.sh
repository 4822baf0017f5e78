# benchmarks/tools/profile_blast.py on the GPU machine (issues 16, 17): where an in-process search's time goes, per round
# and launch, with a cProfile of its host passes. Sets: 10kb (blastn task) on bacteria75; ecoli156, w1@100 and
# w1@500 (pan-w1-500: about one job of workload 1's whole command) (megablast) on the pan-genome.
# usage: [PROFILES="b75-10kb pan-ecoli156 pan-w1"] bash benchmarks/archive/gpu_profile_blast.sh
#   carry [".whl", ".carry/bacteria75.fa.gz", ".carry/ecoli.fa.gz"]; results in $OUT/profile_*.txt
source benchmarks/archive/gpu_common.sh
gpu_install || exit 1
W=$R/benchmarks/data/scale
for p in ${PROFILES:-b75-10kb pan-ecoli156 pan-w1}; do
  case $p in
    b75-10kb) args=".carry/bacteria75.fa.gz 10kb --task blastn" ;;
    pan-ecoli156) scale_data $W; args="$W/pangenome.fa $W/work/ecoli156.fa --task megablast" ;;
    pan-w1) scale_data $W; args="$W/pangenome.fa $W/work/w1-100.fa --task megablast" ;;
    pan-w1-500) SCALE_SETS=w1@500 scale_data $W; args="$W/pangenome.fa $W/work/w1-500.fa --task megablast" ;;
  esac
  t timeout ${PROFILE_LIMIT:-300} python3 -P benchmarks/tools/profile_blast.py $args --device gpu --repeat 1 \
    > $OUT/profile_$p.txt 2>&1
done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"

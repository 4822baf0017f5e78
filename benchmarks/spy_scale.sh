# py-spy samples (every thread, idle included) of a warm whole `gseek search --task megablast` of ecoli156 on the
# pan-genome (issue 17): where the command's time goes outside the search stages.
# usage: bash benchmarks/spy_scale.sh  (carry [".whl", ".whl-spy", ".carry/bacteria75.fa.gz", ".carry/ecoli.fa.gz"]);
#   raw stacks in $OUT/spy_ecoli156.txt
source benchmarks/gpu_common.sh
gpu_install .whl-spy || exit 1
export PATH=/tmp/site/bin:$PATH
W=$R/benchmarks/data/scale; mkdir -p $W/work
pangenome $W/pangenome.fa
ecoli156 $W/work/ecoli156.fa
G="python3 -P -m gseek --quiet -p 16"
[ -d $W/work/db.gseek ] || t $G --device cpu index --parts text $W/pangenome.fa -o $W/work/db.gseek
for i in 1 2; do t $G --device gpu search --task megablast -x $W/work/db.gseek -q $W/work/ecoli156.fa -o $W/o.tsv; done
GSEEK_BLAST_TIMING=1 py-spy record --idle --threads --format raw -r 100 -o $OUT/spy_ecoli156.txt -- \
  $G --device gpu search --task megablast -x $W/work/db.gseek -q $W/work/ecoli156.fa -o $W/o2.tsv 2>&1 | tail -4
cmp $W/o.tsv $W/o2.tsv && echo same | tee -a $OUT/times.txt

# py-spy samples (every thread, idle included) of a warm `gseek search --task blastn` (10kb) and `--task megablast`
# (500bp) on bacteria75 (issue 16). usage: bash benchmarks/archive/spy_blast.sh (carry [".whl", ".whl-spy", ".carry"]:
# .whl-spy holds the py-spy wheel, `pip download py-spy`); raw stacks in $OUT/spy_*.txt.
source benchmarks/archive/gpu_common.sh
gpu_install .whl-spy || exit 1
export PATH=/tmp/site/bin:$PATH
set --
W=/tmp/spy; rm -rf $W; mkdir -p $W
blast_sets $W 10kb 500bp
G="python3 -P -m gseek --quiet -p 16"
$G --device cpu index --parts text $R/.carry/bacteria75.fa.gz -o $W/db
for i in 1 2; do /usr/bin/time -f "%e s wall %U user %S sys" $G --device gpu search --task blastn -x $W/db -q $W/10kb.fa -o $W/o.tsv; done 2>&1 | tee -a $OUT/times.txt
py-spy record --idle --threads --format raw -r 200 -o $OUT/spy_blastn10kb.txt -- $G --device gpu search --task blastn -x $W/db -q $W/10kb.fa -o $W/o2.tsv 2>&1 | tail -3
$G --device gpu search --task megablast -x $W/db -q $W/500bp.fa -o $W/m.tsv
py-spy record --idle --threads --format raw -r 200 -o $OUT/spy_mega500.txt -- $G --device gpu search --task megablast -x $W/db -q $W/500bp.fa -o $W/m2.tsv 2>&1 | tail -3
cmp $W/o.tsv $W/o2.tsv && echo same | tee -a $OUT/times.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"

# py-spy samples (every thread, idle included) of a warm `gseek search --task blastn` (10kb) and `--task megablast`
# (500bp) on bacteria75 (issue 16). usage: bash benchmarks/spy_blast.sh (carry [".whl", ".whl-spy", ".carry"]:
# .whl-spy holds the py-spy wheel, `pip download py-spy`); raw stacks in $OUT/spy_*.txt.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .whl-spy/*.whl || exit 1
rm -rf /tmp/new; PYTHONPATH=/tmp/site python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/new . || exit 1
export PYTHONPATH=/tmp/new:/tmp/site PATH=/tmp/site/bin:$PATH
R=$PWD; set --
W=/tmp/spy; rm -rf $W; mkdir -p $W
python3 -P -c "
import sys; sys.path.insert(0, '$R/benchmarks')
from run import BLAST_SETS
from gseek.datasets.simulate import blast_queries
for name in ('10kb', '500bp'):
    n, length, sub, indel = BLAST_SETS[name]
    blast_queries('$R/.carry/bacteria75.fa.gz', n, length, seed=11, sub_rate=sub, indel_rate=indel).write('$W/' + name + '.fa')
"
G="python3 -P -m gseek --quiet -p 16"
$G --device cpu index --parts text $R/.carry/bacteria75.fa.gz -o $W/db
for i in 1 2; do /usr/bin/time -f "%e s wall %U user %S sys" $G --device gpu search --task blastn -x $W/db -q $W/10kb.fa -o $W/o.tsv; done 2>&1 | tee -a $OUT/times.txt
py-spy record --idle --threads --format raw -r 200 -o $OUT/spy_blastn10kb.txt -- $G --device gpu search --task blastn -x $W/db -q $W/10kb.fa -o $W/o2.tsv 2>&1 | tail -3
$G --device gpu search --task megablast -x $W/db -q $W/500bp.fa -o $W/m.tsv
py-spy record --idle --threads --format raw -r 200 -o $OUT/spy_mega500.txt -- $G --device gpu search --task megablast -x $W/db -q $W/500bp.fa -o $W/m2.tsv 2>&1 | tail -3
cmp $W/o.tsv $W/o2.tsv && echo same | tee -a $OUT/times.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"

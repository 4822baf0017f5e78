# BLAST's shard and volume tests on the GPU, then --db-volume-size against resident on bacteria75 (issue 17), one round.
# usage: bash benchmarks/gpu_volumes2.sh (carry [".whl", ".carry"]; results in $OUT)
set -u
export PYTHONUNBUFFERED=1
R=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
rm -rf /tmp/new; PYTHONPATH=/tmp/site python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/new . || exit 1
export PYTHONPATH=/tmp/new:/tmp/site
set --
(cd /tmp && timeout 200 python3 -P -m pytest -q -m gpu -p no:cacheprovider -n 4 $R/tests/test_blast_shards.py $R/tests/test_blast_search.py $R/tests/test_backend.py 2>&1 | tail -2 | tee -a $OUT/times.txt)
unset PYTHONDONTWRITEBYTECODE
W=/tmp/vol; rm -rf $W; mkdir -p $W
python3 -P -c "
import sys; sys.path.insert(0, '$R/benchmarks')
from run import BLAST_SETS
from gseek.datasets.simulate import blast_queries
for name in ('10kb', 'mixed'):
    n, length, sub, indel = BLAST_SETS[name]
    blast_queries('$R/.carry/bacteria75.fa.gz', n, length, seed=11, sub_rate=sub, indel_rate=indel).write('$W/' + name + '.fa')
"
G="python3 -P -m gseek --quiet -p 16"
$G --device cpu index --parts text $R/.carry/bacteria75.fa.gz -o $W/db
t() { local s=$(date +%s%N); "$@" > /dev/null 2>&1; local e=$(date +%s%N); echo "$(( (e - s) / 1000000 )) ms: $*" | tee -a $OUT/times.txt; }
$G --device gpu search --task blastn -x $W/db -q $W/mixed.fa -o $W/w.tsv --db-volume-size 5M
for v in none 40M 10M 2M; do
  extra=""; [ $v != none ] && extra="--db-volume-size $v"
  t $G --device gpu search --task blastn -x $W/db -q $W/10kb.fa -o $W/b-$v.tsv $extra
  t $G --device gpu search --task megablast -x $W/db -q $W/mixed.fa -o $W/m-$v.tsv $extra
done
for v in 40M 10M 2M; do cmp $W/b-none.tsv $W/b-$v.tsv && cmp $W/m-none.tsv $W/m-$v.tsv && echo "same output with --db-volume-size $v" | tee -a $OUT/times.txt; done

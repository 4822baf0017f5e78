# The whole -m gpu suite, then BLAST with the database in volumes (--db-volume-size) against resident, on bacteria75
# (issue 17). usage: bash benchmarks/gpu_volumes.sh (carry [".whl", ".carry"]; results in $OUT).
set -u
export PYTHONUNBUFFERED=1
R=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
rm -rf /tmp/new; PYTHONPATH=/tmp/site python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/new . || exit 1
export PYTHONPATH=/tmp/new:/tmp/site
set --
T0=$(date +%s)
(cd /tmp && timeout ${TESTS_LIMIT:-200} python3 -P -m pytest -q -m gpu "$R/tests" -p no:cacheprovider -n 4 > "$OUT/gpu_tests.txt" 2>&1; echo "rc=$? $(( $(date +%s) - T0 )) s" >> "$OUT/gpu_tests.txt"); tail -3 "$OUT/gpu_tests.txt"; grep -E "^FAILED|^ERROR" "$OUT/gpu_tests.txt" | head
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
for rep in 1 2; do for v in none 40M 10M 2M; do
  extra=""; [ $v != none ] && extra="--db-volume-size $v"
  t $G --device gpu search --task blastn -x $W/db -q $W/10kb.fa -o $W/b-$v.tsv $extra
  t $G --device gpu search --task megablast -x $W/db -q $W/mixed.fa -o $W/m-$v.tsv $extra
done; done
for v in 40M 10M 2M; do cmp $W/b-none.tsv $W/b-$v.tsv && cmp $W/m-none.tsv $W/m-$v.tsv && echo "same output with --db-volume-size $v" | tee -a $OUT/times.txt; done
python3 -P -c "
from gseek.index.text import ReferenceText, shard_ranges
from gseek.index import Index
import numpy as np
ref = ReferenceText.from_index(Index.load('$W/db', device='cpu', parts=['text']))
for v in (40e6, 10e6, 2e6):
    n = min(-(-ref.n_bases // int(v)), len(ref.contig_names))
    sizes = [int(ref.contig_offsets[b] - ref.contig_offsets[a]) for a, b in shard_ranges(ref.contig_offsets, n) if b > a]
    print(f'{v:.0e}: {len(sizes)} volumes, largest {max(sizes):,} bases')
" | tee -a $OUT/times.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"

# A/B of CuPy's late imports on a thread (issue 15): the tree before (`git archive REV -o .carry/old.tar`) and this
# tree, small BLAST and mapping commands alternately. usage: TESTS=1 bash benchmarks/archive/ab_imports.sh (carry [".whl", ".carry"]).
source benchmarks/archive/gpu_common.sh
gpu_install old || exit 1
set --
W=/tmp/ab; rm -rf $W; mkdir -p $W
blast_sets $W 10kb 500bp mixed
PYTHONPATH=/tmp/new:/tmp/site python3 -P -c "
import sys; sys.path.insert(0, '$R/benchmarks')
import datagen
datagen.kmismatch_pairs_fastq('$R/.carry/ecoli.fa.gz', 500, 100, 3, '$W/r1.fq', '$W/r2.fq', seed=7)
"
cat $W/r1.fq $W/r2.fq > $W/r.fq
G="python3 -P -m gseek --quiet -p 16"
PYTHONPATH=/tmp/new:/tmp/site $G --device cpu index --parts text $R/.carry/bacteria75.fa.gz -o $W/db
PYTHONPATH=/tmp/new:/tmp/site $G --device cpu index $R/.carry/ecoli.fa.gz -o $W/ec
echo "PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE:-unset}" | tee -a $OUT/times.txt
unset PYTHONDONTWRITEBYTECODE  # as a user's install: bytecode cached after the first run
for tree in old new; do  # compile and bytecode runs
  PYTHONPATH=/tmp/$tree:/tmp/site $G --device gpu search --task megablast -x $W/db -q $W/500bp.fa -o $W/c.tsv
  PYTHONPATH=/tmp/$tree:/tmp/site $G --device gpu search --task blastn -x $W/db -q $W/500bp.fa -o $W/c.tsv
  PYTHONPATH=/tmp/$tree:/tmp/site $G --device gpu search -x $W/ec -q $W/r.fq -v 3 -o $W/c.sam
done
for rep in 1 2 3; do for tree in old new; do
  PYTHONPATH=/tmp/$tree:/tmp/site t $G --device gpu search --task megablast -x $W/db -q $W/500bp.fa -o $W/$tree-m500.tsv
  PYTHONPATH=/tmp/$tree:/tmp/site t $G --device gpu search --task megablast -x $W/db -q $W/mixed.fa -o $W/$tree-mmixed.tsv
  PYTHONPATH=/tmp/$tree:/tmp/site t $G --device gpu search -x $W/ec -q $W/r.fq -v 3 -o $W/$tree-map.sam
  PYTHONPATH=/tmp/$tree:/tmp/site t $G --device cpu search -x $W/ec -q $W/r.fq -v 3 -o $W/$tree-mapc.sam
done; done
for tree in old new; do PYTHONPATH=/tmp/$tree:/tmp/site t $G --device gpu search --task blastn -x $W/db -q $W/10kb.fa -o $W/$tree-b10.tsv; done
for f in m500.tsv mmixed.tsv b10.tsv; do cmp $W/old-$f $W/new-$f && echo "same: $f" | tee -a $OUT/times.txt; done
grep -v "^@PG" $W/old-map.sam > $W/a; grep -v "^@PG" $W/new-map.sam > $W/b; cmp $W/a $W/b && echo "same: map.sam (but @PG)" | tee -a $OUT/times.txt
if [ -n "${TESTS:-}" ]; then (cd /tmp && PYTHONPATH=/tmp/new:/tmp/site timeout 150 python3 -P -m pytest -q -m gpu -p no:cacheprovider $R/tests/test_backend.py $R/tests/test_blast_search.py 2>&1 | tail -3 | tee -a $OUT/times.txt); fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"

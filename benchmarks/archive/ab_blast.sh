# A/B of the BLAST search on the GPU machine (issue 16): the tree before a change (`git archive REV -o .carry/old.tar`)
# and this tree, installed side by side, run alternately on bacteria75 (`.carry/bacteria75.fa.gz`); stage timings.
# usage: TESTS=1 bash benchmarks/archive/ab_blast.sh   (carry [".whl", ".carry", "benchmarks/peers/bundle"]; results in $OUT)
source benchmarks/archive/gpu_common.sh
gpu_install old || exit 1
set --; source benchmarks/env.sh >/dev/null || exit 1
W=/tmp/ab; rm -rf $W; mkdir -p $W
blast_sets $W 10kb mixed
G="python3 -P -m gseek --quiet -p 16"
unset PYTHONDONTWRITEBYTECODE  # as an installed machine: bytecode cached after the first run
PYTHONPATH=/tmp/new:/tmp/site t $G --device cpu index --parts text $R/.carry/bacteria75.fa.gz -o $W/db
zcat $R/.carry/bacteria75.fa.gz > $W/db.fa; t makeblastdb -in $W/db.fa -dbtype nucl -out $W/bdb >/dev/null
for tree in old new; do for task in blastn megablast; do  # compile runs
  PYTHONPATH=/tmp/$tree:/tmp/site $G --device gpu search --task $task -x $W/db -q $W/mixed.fa -o $W/c.tsv
done; done
for rep in 1 2; do for set in 10kb mixed; do for task in blastn megablast; do for tree in old new; do
  PYTHONPATH=/tmp/$tree:/tmp/site GSEEK_BLAST_TIMING=1 t $G --device gpu search --task $task -x $W/db -q $W/$set.fa -o $W/$tree-$set-$task.tsv 2> $W/err.txt
  grep -v "stages: ;" $W/err.txt | sed "s/^/$tree $set $task: /" >> $OUT/timing.txt
done; cmp $W/old-$set-$task.tsv $W/new-$set-$task.tsv && echo "same output: $set $task" | tee -a $OUT/times.txt; done; done; done
for set in 10kb mixed; do t blastn -task blastn -num_threads 16 -query $W/$set.fa -db $W/bdb -outfmt 6 -out $W/b.tsv; t blastn -task megablast -num_threads 16 -query $W/$set.fa -db $W/bdb -outfmt 6 -out $W/b.tsv; done
if [ -n "${TESTS:-}" ]; then (cd /tmp && PYTHONPATH=/tmp/new:/tmp/site timeout 200 python3 -P -m pytest -q -m gpu -p no:cacheprovider $R/tests/test_blast_search.py $R/tests/test_blast_kernels.py $R/tests/test_blast_shards.py $R/tests/test_backend.py 2>&1 | tail -3 | tee -a $OUT/times.txt); fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"

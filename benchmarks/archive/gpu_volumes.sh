# GPU tests, then BLAST with the database in volumes (--db-volume-size) against resident, on bacteria75 (issue 17):
# 10kb blastn and mixed megablast, ROUNDS rounds (default 1), outputs compared with cmp.
# usage: [TESTS=all|blast] [ROUNDS=N] bash benchmarks/archive/gpu_volumes.sh   (carry [".whl", ".carry"]; results in $OUT)
#   TESTS=all: the whole -m gpu suite; TESTS=blast: the BLAST search, shard and backend GPU tests; unset: none
source benchmarks/archive/gpu_common.sh
gpu_install || exit 1
set --
case "${TESTS:-}" in
  all) (cd /tmp && timeout 200 python3 -P -m pytest -q -m gpu -p no:cacheprovider -n 4 "$R/tests" 2>&1 | tail -3 | tee -a "$OUT/times.txt");;
  blast) (cd /tmp && timeout 200 python3 -P -m pytest -q -m gpu -p no:cacheprovider -n 4 "$R/tests/test_blast_shards.py" \
           "$R/tests/test_blast_search.py" "$R/tests/test_backend.py" 2>&1 | tail -2 | tee -a "$OUT/times.txt");;
esac
unset PYTHONDONTWRITEBYTECODE  # as an installed machine: bytecode cached after the first run
W=/tmp/vol; rm -rf $W; mkdir -p $W
blast_sets $W 10kb mixed
G="python3 -P -m gseek --quiet -p 16"
$G --device cpu index --parts text $R/.carry/bacteria75.fa.gz -o $W/db
$G --device gpu search --task blastn -x $W/db -q $W/mixed.fa -o $W/w.tsv --db-volume-size 5M  # compiles
for rep in $(seq "${ROUNDS:-1}"); do for v in none 40M 10M 2M; do
  extra=""; [ $v != none ] && extra="--db-volume-size $v"
  t $G --device gpu search --task blastn -x $W/db -q $W/10kb.fa -o $W/b-$v.tsv $extra
  t $G --device gpu search --task megablast -x $W/db -q $W/mixed.fa -o $W/m-$v.tsv $extra
done; done
for v in 40M 10M 2M; do
  cmp $W/b-none.tsv $W/b-$v.tsv && cmp $W/m-none.tsv $W/m-$v.tsv && echo "same output with --db-volume-size $v" | tee -a "$OUT/times.txt"
done
python3 -P - "$W/db" <<'PY' | tee -a "$OUT/times.txt"
import sys
from gseek.index import Index
from gseek.index.text import ReferenceText, shard_ranges
ref = ReferenceText.from_index(Index.load(sys.argv[1], device="cpu", parts=["text"]))
for v in (40e6, 10e6, 2e6):
    n = min(-(-ref.n_bases // int(v)), len(ref.contig_names))
    sizes = [int(ref.contig_offsets[b] - ref.contig_offsets[a]) for a, b in shard_ranges(ref.contig_offsets, n) if b > a]
    print(f"{v:.0e}: {len(sizes)} volumes, largest {max(sizes):,} bases")
PY
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"

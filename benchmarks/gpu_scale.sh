# BLAST at scale on the GPU machine (issue 17): the pan-genome recipe (mutated copies of bacteria75, ~1.06 Gbp)
# built from the carried bacteria75, then `run.py blast` against blastn -num_threads 16 on it (recall first).
# usage: [SETS=w1@100] [TASKS=megablast] [WARM=1] [GSEEK_OPTIONS=...] [ECOLI=1] bash benchmarks/gpu_scale.sh
#   carry [".whl", ".carry/bacteria75.fa.gz", "benchmarks/peers/bundle"] (and ".carry/ecoli.fa.gz" with ECOLI=1);
#   results in $OUT. The pan-genome, both databases, the queries and blastn's outputs stay in
#   benchmarks/data/scale, so a next call on the still-warm machine reuses them (run.py blast --work).
#   ECOLI=1 adds workload 3's stand-in: E. coli K-12 cut into 156 contigs (ecoli156.fa) as a query set.
source benchmarks/gpu_common.sh
gpu_install || exit 1
source benchmarks/env.sh
unset PYTHONDONTWRITEBYTECODE  # as an installed machine: bytecode cached after the first run
W=$R/benchmarks/data/scale; mkdir -p $W/work
if [ ! -s $W/pangenome.fa ]; then
  t python3 -P - "$R" "$W" <<'PY'
import sys
from pathlib import Path
from gseek.datasets.recipes import PANGENOME_BASES, _pangenome_records, _write_output
root, out = Path(sys.argv[1]), Path(sys.argv[2])
source = root / ".carry/bacteria75.fa.gz"
copies = -(-int(1.01 * PANGENOME_BASES) // 75_380_882)  # the recipe's count for bacteria75's 75,380,882 bases
_write_output(out / "pangenome.fa.part", "pangenome", {"target_bases": PANGENOME_BASES, "seed": 0},
              _pangenome_records(source, copies, 0), [{"recipe": "bacteria75 (carried)", "copies": copies}])
(out / "pangenome.fa.part").rename(out / "pangenome.fa")
PY
fi
ls -l $W/pangenome.fa | tee -a "$OUT/times.txt"
sets=${SETS:-w1@100}
if [ "${ECOLI:-0}" = 1 ]; then
  python3 -P - "$R/.carry/ecoli.fa.gz" "$W/work/ecoli156.fa" <<'PY'
import sys
from gseek.seqio import read_fastx
g = read_fastx(sys.argv[1]); seq = g.sequence(0); n = 156; step = -(-len(seq) // n)
with open(sys.argv[2], "w") as fh:
    for i in range(n):
        fh.write(f">ecoli_contig{i + 1:03d}\n{seq[i * step:(i + 1) * step]}\n")
PY
  sets="$sets,$W/work/ecoli156.fa"
fi
t python3 benchmarks/run.py --out "$OUT" blast --db $W/pangenome.fa --work $W/work --index-parts text \
  --sets "$sets" --tasks "${TASKS:-megablast}" --threads 16 --warm "${WARM:-1}" \
  --gseek-options "${GSEEK_OPTIONS:-}" 2>&1 | tail -30
ls -l $W/work | tee -a "$OUT/times.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"

# BLAST at scale on the GPU machine (issue 17): the pan-genome recipe (mutated copies of bacteria75, ~1.06 Gbp)
# built from the carried bacteria75, then `run.py blast` against blastn -num_threads 16 on it (recall first).
# usage: [SETS=w1@100] [TASKS=megablast] [WARM=1] [GSEEK_OPTIONS=...] [ECOLI=1] bash benchmarks/archive/gpu_scale.sh
#   carry [".whl", ".carry/bacteria75.fa.gz", "benchmarks/peers/bundle"] (and ".carry/ecoli.fa.gz" with ECOLI=1);
#   results in $OUT. The pan-genome, both databases, the queries and blastn's outputs stay in
#   benchmarks/data/scale, so a next call on the still-warm machine reuses them (run.py blast --work).
#   ECOLI=1 adds workload 3's stand-in: E. coli K-12 cut into 156 contigs (ecoli156.fa) as a query set.
source benchmarks/archive/gpu_common.sh
gpu_install || exit 1
source benchmarks/env.sh
unset PYTHONDONTWRITEBYTECODE  # as an installed machine: bytecode cached after the first run
W=$R/benchmarks/data/scale; mkdir -p $W/work
pangenome $W/pangenome.fa
ls -l $W/pangenome.fa | tee -a "$OUT/times.txt"
sets=${SETS:-w1@100}
if [ "${ECOLI:-0}" = 1 ]; then
  ecoli156 $W/work/ecoli156.fa
  sets="$sets,$W/work/ecoli156.fa"
fi
t python3 benchmarks/run.py --out "$OUT" blast --db $W/pangenome.fa --work $W/work --index-parts text \
  --sets "$sets" --tasks "${TASKS:-megablast}" --threads 16 --warm "${WARM:-1}" \
  --gseek-options "${GSEEK_OPTIONS:-}" 2>&1 | tail -30
ls -l $W/work | tee -a "$OUT/times.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"

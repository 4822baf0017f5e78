# Megablast's greedy extension (2026-11-27) on the GPU machine, against blastn -num_threads 16 in the same call,
# recall checked first (`run.py blast`): bacteria75 (issue 16: E. coli in 156 contigs and 10kb), then the pan-genome
# (issue 17: workload 1's 1,000 queries and the 156 contigs). Whole commands; gseek's first run with empty caches.
# usage: [PARTS="b75 pan"] [PAN_SETS=w1] [WARM=1] bash benchmarks/archive/gpu_greedy.sh
#   carry [".whl-blast", ".carry", ".whl-hold/pb"]: the pysam and isal wheels (as .whl there), bacteria75.fa.gz and
#   ecoli.fa.gz, the BLAST-only peers bundle (benchmarks/README.md); results in $OUT, data in benchmarks/data.
[ -d .whl ] || { mkdir -p .whl && cp .whl-blast/*.whl .whl/; }
export GSEEK_PEERS_ROOT=$PWD/.whl-hold/pb/root
source benchmarks/archive/gpu_common.sh
gpu_install || exit 1
source benchmarks/env.sh
unset PYTHONDONTWRITEBYTECODE  # as an installed machine: bytecode cached after the first run
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"
for part in ${PARTS:-b75 pan}; do
  if [ "$part" = b75 ]; then
    W=$R/benchmarks/data/b75; mkdir -p $W
    ecoli156 $W/ecoli156.fa
    t python3 benchmarks/run.py --out "$OUT" blast --db .carry/bacteria75.fa.gz --work $W --index-parts text \
      --sets "10kb,$W/ecoli156.fa" --tasks megablast --threads 16 --warm "${WARM:-1}" 2>&1 | tail -12
  else
    W=$R/benchmarks/data/scale; mkdir -p $W/work
    pangenome $W/pangenome.fa
    ecoli156 $W/work/ecoli156.fa
    t python3 benchmarks/run.py --out "$OUT" blast --db $W/pangenome.fa --work $W/work --index-parts text \
      --sets "${PAN_SETS:-w1},$W/work/ecoli156.fa" --tasks megablast --threads 16 --warm "${WARM:-0}" 2>&1 | tail -12
  fi
done

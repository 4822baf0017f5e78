# Issue 17's workload 2 on the GPU machine: workload 1's 1,000 queries split over 20 files (50 each, in order)
# searched by one `gseek pipeline --task megablast` (GPU busy sampled by nvidia-smi every 100 ms), by 20 sequential
# `gseek search` commands, by 20 `blastn -num_threads 16` runs and by one blastn run on their concatenation
# (workload 1 itself); the pipeline's 20 outputs laid end to end are compared with one gseek search of workload 1.
# usage: [PEERS=0] [SEQ=0] [ROUNDS=1] bash benchmarks/archive/gpu_workload2.sh  (carry [".whl-blast",
#   ".carry/bacteria75.fa.gz", ".whl-hold/pb"]); times in $OUT/times.txt, GPU samples in $OUT/busy_*.txt.
#   PEERS=0: no blastn runs; SEQ=0: no sequential gseek runs. Each round also runs the pipeline with `--job-mb 8`
#   (a job a file, each searched alone: the pipeline before 2026-11-27's gathering of small files).
[ -d .whl ] || { mkdir -p .whl && cp .whl-blast/*.whl .whl/; }
export GSEEK_PEERS_ROOT=$PWD/.whl-hold/pb/root
source benchmarks/archive/gpu_common.sh
gpu_install || exit 1
source benchmarks/env.sh
unset PYTHONDONTWRITEBYTECODE
W=$R/benchmarks/data/scale; SCALE_SETS=w1 scale_data $W
D=$W/w2; rm -rf $D; mkdir -p $D/files $D/pipe $D/seq $D/blast
awk -v d=$D/files '/^>/{if (n % 50 == 0) f = sprintf("%s/part%02d.fa", d, n / 50); n++} {print > f}' $W/work/w1.fa
ls $D/files/*.fa > $D/list.txt; wc -l < $D/list.txt | tee -a $OUT/times.txt
G="python3 -P -m gseek --quiet -p 16"
[ -d $W/work/db.gseek ] || t $G --device cpu index --parts text $W/pangenome.fa -o $W/work/db.gseek
[ "${PEERS:-1}" = 0 ] || [ -f $W/work/pan_bdb.nsq ] || [ -f $W/work/pan_bdb.00.nsq ] || t makeblastdb -in $W/pangenome.fa -dbtype nucl -out $W/work/pan_bdb > /dev/null
$G --device gpu search --task megablast -x $W/work/db.gseek -q $D/files/part00.fa -o /dev/null  # warm-up
busy() { nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 100 > "$OUT/busy_$1.txt" & echo $!; }
for r in $(seq ${ROUNDS:-1}); do
  p=$(busy pipeline)
  t $G --device gpu pipeline --task megablast -x $W/work/db.gseek --queries $D/list.txt --outdir $D/pipe
  kill $p
  p=$(busy pipeline_job_a_file)
  rm -rf $D/pipe8; t $G --device gpu pipeline --task megablast -x $W/work/db.gseek --queries $D/list.txt --outdir $D/pipe8 --job-mb 8
  kill $p
done
for f in $D/files/*.fa; do b=$(basename $f .fa); cmp -s $D/pipe/$b.tsv $D/pipe8/$b.tsv || echo "job a file differs: $b" | tee -a $OUT/times.txt; done
if [ "${SEQ:-1}" = 1 ]; then
  p=$(busy sequential)
  s=$(date +%s%N)
  for f in $D/files/*.fa; do $G --device gpu search --task megablast -x $W/work/db.gseek -q $f -o $D/seq/$(basename $f .fa).tsv; done
  e=$(date +%s%N); kill $p
  echo "$(( (e - s) / 1000000 )) ms: 20 sequential gseek search commands" | tee -a $OUT/times.txt
fi
if [ "${PEERS:-1}" = 1 ]; then
  s=$(date +%s%N)
  for f in $D/files/*.fa; do blastn -task megablast -num_threads 16 -db $W/work/pan_bdb -query $f -outfmt 6 -out $D/blast/$(basename $f .fa).tsv; done
  e=$(date +%s%N)
  echo "$(( (e - s) / 1000000 )) ms: 20 sequential blastn -task megablast -num_threads 16 runs" | tee -a $OUT/times.txt
  t blastn -task megablast -num_threads 16 -db $W/work/pan_bdb -query $W/work/w1.fa -outfmt 6 -out $D/blast_all.tsv
fi
t $G --device gpu search --task megablast -x $W/work/db.gseek -q $W/work/w1.fa -o $D/w1.tsv
[ "${SEQ:-1}" = 1 ] && for f in $D/files/*.fa; do b=$(basename $f .fa); cmp -s $D/pipe/$b.tsv $D/seq/$b.tsv || echo "differs: $b" | tee -a $OUT/times.txt; done
cat $D/pipe/part*.tsv | cmp - $D/w1.tsv && echo "pipeline outputs end to end = one search of workload 1" | tee -a $OUT/times.txt
[ "${PEERS:-1}" = 1 ] && cat $D/blast/part*.tsv | cmp -s - $D/blast_all.tsv && echo "blastn: 20 runs end to end = one run" | tee -a $OUT/times.txt
for k in pipeline pipeline_job_a_file sequential; do [ -f $OUT/busy_$k.txt ] || continue
  python3 -c "import sys; v=[float(x) for x in open(sys.argv[1]) if x.strip()]; print(sys.argv[2], 'GPU busy mean %.1f %% of %d samples' % (sum(v)/max(len(v),1), len(v)))" $OUT/busy_$k.txt $k | tee -a $OUT/times.txt
done
wc -l $D/w1.tsv | tee -a $OUT/times.txt
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"

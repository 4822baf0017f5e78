#!/usr/bin/env bash
# Trace `gseek search` (k-mismatch mapping) on simulated reads: wall time, then the stage
# summary of benchmarks/tools/trace_summary.py. Usage: bash benchmarks/tools/trace_map.sh REF.fa[.gz] READS [DEVICE]
# Writes under ${OUT:-/tmp/gseek-trace}: trace-READS.json and trace-READS.txt.
set -euo pipefail
ref=$1 reads=$2 device=${3:-gpu}
OUT=${OUT:-/tmp/gseek-trace}
work=${WORK:-/tmp/gseek-trace-work}
mkdir -p "$OUT" "$work"
py=${PYTHON:-python3}
[ -d "$work/ref.gseek" ] || $py -P -m gseek --quiet index "$ref" -o "$work/ref.gseek"
[ -f "$work/r$reads.fq" ] || $py -P -c "
from gseek.datasets.simulate import kmismatch_reads
kmismatch_reads('$ref', $reads, 100, 3, seed=7).write('$work/r$reads.fq')"
[ "${KEEP_OUTPUT:-0}" = 1 ] || rm -f "$work/out.sam"  # KEEP_OUTPUT=1: the output exists, as a re-run
start=$(date +%s.%N)
GSEEK_TRACE="$OUT/trace-$reads.json" $py -P -m gseek --quiet --device "$device" -p "$(nproc)" search \
    -x "$work/ref.gseek" -q "$work/r$reads.fq" -v 3 -o "$work/out.sam"
end=$(date +%s.%N)
{ echo "gseek search, $reads reads, device $device: whole command $($py -c "print(round($end - $start, 2))") s"
  $py benchmarks/tools/trace_summary.py "$OUT/trace-$reads.json" --command "$start" "$end"; } | tee "$OUT/trace-$reads.txt"

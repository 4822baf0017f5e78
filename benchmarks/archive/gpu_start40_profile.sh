#!/usr/bin/env bash
# Issue 40, branch start40: where a warm whole GPU command's ~2 s go, before changing anything (main's tree, the
# device's working directory, installed; this branch's tools from .carry/start40.tgz).
#   1. the data: issue 40's 75 Mbp random database and 100 x 10 kb queries (profile_blast_stages.make_data), its
#      text index; the lambda index and 1,000 lambda reads (gpu_startup.sh's small mapping);
#   2. megablast 10 kb whole commands as the machine runs them (PYTHONDONTWRITEBYTECODE=1, its packages without
#      cached bytecode), then with bytecode written once (as an installed machine has it), each timed, and one of
#      each under benchmarks/tools/profile_command.py (the timeline); -X importtime; GSEEK_BLAST_TIMING;
#   3. benchmarks/archive/probe_cuda_start.py: CUDA's start alone and beside the imports (serial, ctypes, cupy);
#   4. the mapping command (-v 3, --device $D) timed and profiled.
# Carry: .whl, .carry/start40.tgz. Results under $OUT (times.txt, timeline.txt, importtime.txt, cuda.txt).
set -uo pipefail
OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
D=${DEVICE:-gpu}; N=${DB_BASES:-75000000}
if [ -z "${SKIP_INSTALL:-}" ]; then  # (SKIP_INSTALL=1 DEVICE=cpu DB_BASES=5000000: a dry run on a machine without GPU)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
  python3 -m pip install -q --no-deps --no-build-isolation --no-index . || exit 1
  T=/tmp/start40; rm -rf $T; mkdir -p $T; tar -xzf .carry/start40.tgz -C $T || exit 1
else
  T=$PWD
fi
W=/tmp/w; mkdir -p $W
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
  python3 -P -c 'import cupy, numba, numpy, sys; print(sys.version.split()[0], "cupy", cupy.__version__,
"numba", numba.__version__, "numpy", numpy.__version__)'; } > "$OUT/times.txt" 2>&1
s=$EPOCHREALTIME
python3 -P - "$T" "$W" "$N" <<'PY' >> "$OUT/times.txt" 2>&1
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1] + "/benchmarks/tools")
from profile_blast_stages import make_data
from gseek.index import Index
files = make_data(Path(sys.argv[2]), int(sys.argv[3]), 12, 1.0)
Index.build(str(files["db"]), parts="text", device="cpu").save(sys.argv[2] + "/db.gseek")
Path(sys.argv[2] + "/q10k.fa").unlink(missing_ok=True)
Path(sys.argv[2] + "/q10k.fa").symlink_to(files["q10k"])
PY
python3 -P -m gseek --quiet --device cpu index "$(python3 -P -c 'from gseek.datasets import lambda_genome as g
print(g())')" -o $W/lam
head -4000 "$(python3 -P -c 'from gseek.datasets import lambda_reads as r; print(r())')" > $W/r1000.fq
echo "data $(awk "BEGIN{print $EPOCHREALTIME-$s}") s" >> "$OUT/times.txt"
MB="--quiet --device $D -p 16 search --task megablast -x $W/db.gseek -q $W/q10k.fa -o $W/o10.tsv"
MAP="--quiet --device $D -p 16 search -x $W/lam -q $W/r1000.fq -v 3 -o $W/o.sam"
t() { local tag=$1; shift; local s=$EPOCHREALTIME; "$@" > /dev/null 2>> "$OUT/times.txt"; local e=$EPOCHREALTIME
      echo "$(awk "BEGIN{printf \"%.3f\", $e-$s}") s: $tag" >> "$OUT/times.txt"; }
prof() {  # a timeline of one whole command, and the wall time outside it
  local tag=$1; shift; local s=$EPOCHREALTIME
  PROFILE_COMMAND_OUT=/tmp/tl.txt python3 -P $T/benchmarks/tools/profile_command.py --t0 $s -- "$@" > /dev/null
  local e=$EPOCHREALTIME
  { echo "### $tag: wall $(awk "BEGIN{printf \"%.1f\", 1000*($e-$s)}") ms"; cat /tmp/tl.txt; echo; } >> "$OUT/timeline.txt"
}
echo "## megablast 10 kb, PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE:-unset}" >> "$OUT/times.txt"
t megablast python3 -P -m gseek $MB
prof "megablast 10 kb, no bytecode cached" $MB
env -u PYTHONDONTWRITEBYTECODE python3 -P -m gseek $MB; env -u PYTHONDONTWRITEBYTECODE python3 -P -m gseek $MAP
env -u PYTHONDONTWRITEBYTECODE PROFILE_COMMAND_OUT=/dev/null python3 -P $T/benchmarks/tools/profile_command.py -- $MB
echo "## megablast 10 kb, bytecode written once" >> "$OUT/times.txt"
for i in 1 2; do t megablast python3 -P -m gseek $MB; done
prof "megablast 10 kb, bytecode cached (1)" $MB
prof "megablast 10 kb, bytecode cached (2)" $MB
python3 -P -X importtime -m gseek $MB 2> "$OUT/importtime.txt"
GSEEK_BLAST_TIMING=1 python3 -P -m gseek --device $D -p 16 search --task megablast -x $W/db.gseek -q $W/q10k.fa \
  -o $W/o10b.tsv 2>> "$OUT/times.txt"
cmp $W/o10.tsv $W/o10b.tsv && echo "rows identical, $(wc -l < $W/o10.tsv) lines, $(sha256sum < $W/o10.tsv)" >> "$OUT/times.txt"
for r in 1 2; do for m in serial ctypes cupy; do python3 -P $T/benchmarks/archive/probe_cuda_start.py $m; done
done > "$OUT/cuda.txt" 2>&1
echo "## mapping 1,000 lambda reads, -v 3" >> "$OUT/times.txt"
for i in 1 2; do t map python3 -P -m gseek $MAP; done
prof "mapping 1,000 reads -v 3" $MAP
tail -40 "$OUT/times.txt"; cat "$OUT/cuda.txt"

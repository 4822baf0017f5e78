#!/usr/bin/env bash
# Issue 40, branch start40: whole GPU commands, main's tree (A, the device's working directory) against this branch
# (B, .carry/start40.tgz with main's prebuilt set copied in; no Numba module's closure changed), alternating in fresh processes, bytecode cached (written once, as an installed machine
# has it), outputs compared by SHA-256:
#   megablast 100 x 10 kb and 156 x 30 kb, blastn task 100 x 10 kb (issue 40's 75 Mbp random database,
#   profile_blast_stages.make_data), mapping 1,000 lambda reads -v 3 (--device gpu); the CPU megablast 10 kb
#   command too (its start-up must not get slower); then one timeline of each tree (benchmarks/tools/
#   profile_command.py) and -m gpu tests/test_backend.py tests/test_gpu_start.py on B.
# ROUNDS (default 3). Carry: .whl, .carry/start40.tgz. Results under $OUT (ab.txt, timeline.txt, tests.txt).
set -uo pipefail
OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
source "$(dirname "${BASH_SOURCE[0]}")/gpu_common.sh"   # ab_rounds, ab_summary
ROUNDS=${ROUNDS:-3}; DEV=${DEV:-gpu}; N=${DB_BASES:-75000000}  # (DEV=cpu DB_BASES=3000000 SKIP_WHL=1: a dry run)
[ -n "${SKIP_WHL:-}" ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
S=/tmp/start40src; rm -rf $S /tmp/A /tmp/B; mkdir -p $S; tar -xzf .carry/start40.tgz -C $S || exit 1
mkdir -p $S/kernels/prebuilt && cp -r kernels/prebuilt/py3.12-numba0.68.0 $S/kernels/prebuilt/
python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/A . || exit 1
(cd $S && python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/B .) || exit 1
W=/tmp/w; mkdir -p $W
s=$EPOCHREALTIME
PYTHONPATH=/tmp/A:/tmp/site python3 -P - "$S" "$W" "$N" <<'PY' > "$OUT/ab.txt" 2>&1
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1] + "/benchmarks/tools")
from profile_blast_stages import make_data
from gseek.index import Index
w = Path(sys.argv[2])
files = make_data(w, int(sys.argv[3]), 12, 1.0)
Index.build(str(files["db"]), parts="text", device="cpu").save(w / "db.gseek")
for k in ("q10k", "q30k"):
    (w / f"{k}.fa").unlink(missing_ok=True)
    (w / f"{k}.fa").symlink_to(files[k])
PY
export PYTHONPATH=/tmp/A:/tmp/site
python3 -P -m gseek --quiet --device cpu index "$(python3 -P -c 'from gseek.datasets import lambda_genome as g
print(g())')" -o $W/lam
head -4000 "$(python3 -P -c 'from gseek.datasets import lambda_reads as r; print(r())')" > $W/r1000.fq
echo "data $(awk "BEGIN{print $EPOCHREALTIME-$s}") s" >> "$OUT/ab.txt"
G="--quiet --device $DEV -p 16 search"
declare -A CMD=(
  [mb10]="$G --task megablast -x $W/db.gseek -q $W/q10k.fa"
  [mb30]="$G --task megablast -x $W/db.gseek -q $W/q30k.fa"
  [bn10]="$G --task blastn -x $W/db.gseek -q $W/q10k.fa"
  [map]="$G -x $W/lam -q $W/r1000.fq -v 3"
  [cpu10]="--quiet --device cpu -p 16 search --task megablast -x $W/db.gseek -q $W/q10k.fa")
NAMES="mb10 mb30 bn10 map cpu10"
ext() { [ "$1" = map ] && echo sam || echo tsv; }
one() {  # one() TREE NAME ROUND: a whole command, its wall ms and the SHA-256 of its output
  local tree=$1 name=$2 r=$3 out=$W/$2-$1-$3.$(ext $2) s e
  s=$EPOCHREALTIME
  PYTHONPATH=/tmp/$tree:/tmp/site python3 -P -m gseek ${CMD[$name]} -o $out 2>> "$OUT/ab.txt"
  e=$EPOCHREALTIME
  echo "$name $tree $r $(awk "BEGIN{printf \"%.0f\", 1000*($e-$s)}") $(grep -v '^@PG' $out | sha256sum | cut -c1-16)" \
    >> $W/rows.txt
}
# bytecode written once for the system's packages (the trees' own: pip wrote it), the files in the page cache
for run in "A mb10" "A bn10" "A map" "A cpu10" "B mb10" "B map"; do
  read tree name <<< "$run"
  PYTHONPATH=/tmp/$tree:/tmp/site env -u PYTHONDONTWRITEBYTECODE python3 -P -m gseek ${CMD[$name]} \
    -o $W/warm.$(ext $name) 2>> "$OUT/ab.txt"
done
echo "warm-up done $(awk "BEGIN{print $EPOCHREALTIME-$s}") s" >> "$OUT/ab.txt"
: > $W/rows.txt
ab_rounds $ROUNDS $NAMES
ab_summary "## rows: name tree round ms sha256(output without @PG)" start40 $NAMES >> "$OUT/ab.txt"
for tree in B A; do
  s=$EPOCHREALTIME
  PYTHONPATH=/tmp/$tree:/tmp/site PROFILE_COMMAND_OUT=/tmp/tl.txt python3 -P $S/benchmarks/tools/profile_command.py \
    --t0 $s -- ${CMD[mb10]} -o $W/tl.tsv > /dev/null
  e=$EPOCHREALTIME
  { echo "### $tree megablast 10 kb: wall $(awk "BEGIN{printf \"%.1f\", 1000*($e-$s)}") ms"; cat /tmp/tl.txt; echo; } \
    >> "$OUT/timeline.txt"
done
(cd $S && PYTHONPATH=/tmp/B:/tmp/site timeout 60 python3 -P -m pytest -q -p no:cacheprovider -p no:randomly -m gpu \
  tests/test_backend.py tests/test_gpu_start.py > "$OUT/tests.txt" 2>&1; echo "tests rc=$?" >> "$OUT/tests.txt")  # (-m gpu: skipped on a CPU)
grep -A40 "## medians" "$OUT/ab.txt"; tail -3 "$OUT/tests.txt"

#!/usr/bin/env bash
# Issue 40, branch start41: where the blastn task's whole command on the contigs (156 x 30 kb against the 75 Mbp
# random database, profile_blast_stages.make_data) spends what its steady search does not, and this branch (B,
# .carry/start41.tgz with main's prebuilt sets copied in: no Numba module changed) against main (A, the device's
# working directory), in one call:
#   1. both trees installed; the database, its text index (`gseek index --parts text`) and the 156 contigs;
#   2. a warm-up command of each tree and task (bytecode written once, CuPy's cache on disk);
#   3. one timeline of B's and of A's blastn command (benchmarks/tools/profile_command.py, from the process's start;
#      MB_TIMELINE=1: of their megablast commands too);
#   4. whole commands, blastn task and megablast on the contigs, A and B alternating in fresh processes (ROUNDS,
#      the order swapped each round), SHA-256 of every output;
#   5. in one process (B's tree): the file through one BlastTask cut into 1, 2 and 4 jobs (start41_jobs.py: main cuts
#      it into 4 on one GPU, this branch into 1), first pass and steady passes, both tasks (JOBS=0: not run);
#   6. -m gpu tests/test_blast_jobs.py on B;
#   7. while LIMIT_S allows: issue 40's 1 Gbp megablast set (gpu_scale40.sh's data: the pan-genome recipe from
#      .carry/multi40/bacteria75.fa.xz, 1,000 `w40` queries), whole commands A/B twice and the 1/4-job passes.
# Summary to stdout; $OUT/ab.txt, timeline.txt, jobs.txt, tests.txt, scale.txt.
# Carry: .whl, .carry/start41.tgz, .carry/multi40/bacteria75.fa.xz (step 7).
# A dry run here (CPU, tiny): SKIP_WHL=1 PY=... DEV=cpu DB_BASES=2000000 SCALE=0.05 LIMIT_S=0 bash gpu_start41.sh
set -uo pipefail
OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
S0=$SECONDS; LIMIT_S=${LIMIT_S:-270}; ROUNDS=${ROUNDS:-3}; DEV=${DEV:-gpu}; N=${DB_BASES:-75000000}
SCALE=${SCALE:-1}; PY=${PY:-python3}; T=${THREADS:-16}
source "$(dirname "${BASH_SOURCE[0]}")/gpu_common.sh"   # ab_rounds, ab_summary
left() { echo $((LIMIT_S - (SECONDS - S0))); }
log() { echo "[$((SECONDS - S0)) s] $*" | tee -a "$OUT/ab.txt"; }
[ -n "${SKIP_WHL:-}" ] || $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
S=/tmp/start41src; rm -rf $S /tmp/A /tmp/B; mkdir -p $S; tar -xzf .carry/start41.tgz -C $S || exit 1
for d in kernels/prebuilt/*/; do mkdir -p $S/kernels/prebuilt; cp -r "$d" $S/kernels/prebuilt/; done
$PY -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/A . || exit 1
(cd $S && $PY -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/B .) || exit 1
log "installed"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null; nproc; } >> "$OUT/ab.txt"
W=/tmp/w41; mkdir -p $W
PYTHONPATH=/tmp/B:/tmp/site $PY -P - "$S" "$W" "$N" "$SCALE" <<'PY' >> "$OUT/ab.txt" 2>&1
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1] + "/benchmarks/tools")
from profile_blast_stages import make_data
w = Path(sys.argv[2])
files = make_data(w, int(sys.argv[3]), 12, float(sys.argv[4]), stems=("q30k",))
(w / "db.txt").write_text(str(files["db"]))
(w / "q30k.fa").unlink(missing_ok=True)
(w / "q30k.fa").symlink_to(files["q30k"])
PY
DB=$(cat $W/db.txt); IDX=${DB%.fa}
[ -s "$IDX.gseek" ] || [ -d "$IDX.gseek" ] || PYTHONPATH=/tmp/A:/tmp/site $PY -P -m gseek --quiet --device cpu -p $T \
  index "$DB" --parts text -o "$IDX" >> "$OUT/ab.txt" 2>&1
log "data: $(grep -c '>' $W/q30k.fa) queries, $(stat -L -c %s $W/q30k.fa) bytes; index $(ls -d $IDX* | tr '\n' ' ')"
G="--quiet --device $DEV -p $T search"
declare -A CMD=([bn30]="$G --task blastn -x $IDX -q $W/q30k.fa" [mb30]="$G --task megablast -x $IDX -q $W/q30k.fa")
NAMES="bn30 mb30"
one() {  # one TREE NAME ROUND: a whole command, its wall ms and the SHA-256 of its output
  local tree=$1 name=$2 r=$3 out=$W/$2-$1-$3.tsv s e
  s=$EPOCHREALTIME
  PYTHONPATH=/tmp/$tree:/tmp/site $PY -P -m gseek ${CMD[$name]} -o $out 2>> "$OUT/ab.txt"
  e=$EPOCHREALTIME
  echo "$name $tree $r $(awk "BEGIN{printf \"%.0f\", 1000*($e-$s)}") $(sha256sum < $out | cut -c1-16)" >> $W/rows.txt
}
for run in "A bn30" "B bn30" "A mb30" "B mb30"; do  # bytecode written once, CuPy's cache on disk
  read tree name <<< "$run"
  PYTHONPATH=/tmp/$tree:/tmp/site env -u PYTHONDONTWRITEBYTECODE $PY -P -m gseek ${CMD[$name]} -o $W/warm.tsv \
    2>> "$OUT/ab.txt"
done
log "warm-ups done"
: > "$OUT/timeline.txt"
for tl in B:bn30 A:bn30 $([ "${MB_TIMELINE:-0}" = 1 ] && echo B:mb30 A:mb30); do
  tree=${tl%%:*}; name=${tl#*:}
  s=$EPOCHREALTIME
  PYTHONPATH=/tmp/$tree:/tmp/site PROFILE_COMMAND_OUT=/tmp/tl.txt $PY -P $S/benchmarks/tools/profile_command.py \
    --t0 $s -- ${CMD[$name]} -o $W/tl.tsv > /dev/null
  e=$EPOCHREALTIME
  { echo "### $tree $name: wall $(awk "BEGIN{printf \"%.1f\", 1000*($e-$s)}") ms"; cat /tmp/tl.txt; echo; } \
    >> "$OUT/timeline.txt"
done
log "timelines done"
: > $W/rows.txt
ab_rounds $ROUNDS $NAMES
ab_summary "## rows: name tree round ms sha256" start41 $NAMES >> "$OUT/ab.txt"
log "A/B done"
for task in $([ "${JOBS:-1}" = 1 ] && echo blastn megablast); do
  PYTHONPATH=/tmp/B:/tmp/site timeout 90 $PY -P $S/benchmarks/archive/start41_jobs.py $IDX $W/q30k.fa $task \
    --rounds ${JOB_ROUNDS:-2} --threads $T --device $DEV --out $W/jobs >> "$OUT/jobs.txt" 2>&1
done
log "jobs done"
(cd $S && PYTHONPATH=/tmp/B:/tmp/site timeout 60 $PY -P -m pytest -q -p no:cacheprovider -p no:randomly -m gpu \
  tests/test_blast_jobs.py > "$OUT/tests.txt" 2>&1; echo "tests rc=$?" >> "$OUT/tests.txt")
log "tests done"
SOURCE=${SOURCE:-$PWD/.carry/multi40/bacteria75.fa.xz}
if [ "$(left)" -gt 100 ] && [ -s "$SOURCE" ]; then  # 7: the 1 Gbp megablast set
  P=/tmp/pan41; mkdir -p $P
  PYTHONPATH=/tmp/B:/tmp/site $PY -P - "$S" "$SOURCE" "$P" "$T" "${PAN_BASES:-1e9}" <<'PY' >> "$OUT/scale.txt" 2>&1
import sys
from pathlib import Path
sys.path.append(sys.argv[1])
from benchmarks.archive.gpu_multi40 import pangenome
from benchmarks.suite.blast import blast_set
p = Path(sys.argv[3])
print(pangenome(Path(sys.argv[2]), p / "db.fa", int(float(sys.argv[5])), int(sys.argv[4])))
blast_set(str(p / "db.fa"), "w40").write(str(p / "q.fa"))
PY
  PYTHONPATH=/tmp/A:/tmp/site $PY -P -m gseek --quiet --device cpu -p $T index $P/db.fa --parts text -o $P/db \
    >> "$OUT/scale.txt" 2>&1
  log "1 Gbp data: $(grep -c '>' $P/q.fa) queries, $(stat -L -c %s $P/q.fa) bytes"
  CMD[pan]="$G --task megablast -x $P/db -q $P/q.fa"
  PYTHONPATH=/tmp/B:/tmp/site $PY -P -m gseek ${CMD[pan]} -o $W/warm.tsv 2>> "$OUT/scale.txt"
  : > $W/rows.txt
  ab_rounds 2 pan
  { echo "## 1 Gbp megablast whole commands: name tree round ms sha256"; cat $W/rows.txt; } >> "$OUT/scale.txt"
  log "1 Gbp whole commands done"
  [ "$(left)" -gt 30 ] && PYTHONPATH=/tmp/B:/tmp/site timeout $(left) $PY -P $S/benchmarks/archive/start41_jobs.py \
    $P/db $P/q.fa megablast --cuts 1,4 --rounds 2 --threads $T --device $DEV --out $W/jobs >> "$OUT/scale.txt" 2>&1
  log "1 Gbp jobs done"
else
  log "1 Gbp set skipped ($(left) s left)"
fi
echo "=== summary"; grep -A12 "## medians" "$OUT/ab.txt"; grep -h SUMMARY "$OUT/jobs.txt" "$OUT/scale.txt" 2>/dev/null
grep -h '"first"' "$OUT/jobs.txt" "$OUT/scale.txt" 2>/dev/null; grep "1 Gbp\|^pan" "$OUT/scale.txt" "$OUT/ab.txt" 2>/dev/null
tail -2 "$OUT/tests.txt"
for tl in "B bn30" "A bn30" "B mb30" "A mb30"; do  # each timeline's headline: wall, searches, first uses by thread
  awk -v t="### $tl:" 'index($0, t) == 1 {on = 1; print; next} /^### / {on = 0}
    on && (/prelim \(|NVRTC|ReferenceText|os._exit|BlastTask\(\)|GpuBackend\(\)|finalize|Dispatcher.run/ || kinds) {print}
    on && /^repeated kinds/ {kinds = 1; print} on && /^$/ {kinds = 0}' "$OUT/timeline.txt" | head -45
done
log "all done"

#!/usr/bin/env bash
# Issue 40's table, the two rows not re-measured for a while, beside `blastn -num_threads T` in the same call:
#   1. megablast, 1,000 queries of `w40` (benchmarks/suite/blast.py: 300 bp-30 kb log-uniform, a sixth random,
#      1-12 % substitutions: the issue's "0.3-30 kb, a third distant or random") against the pan-genome recipe's
#      ~1.06 Gbp (mutated copies of the carried bacteria75, made in parallel processes by gpu_multi40.py's
#      `pangenome`; `gseek index --parts text`, makeblastdb);
#   2. the blastn task, the 156 x 30 kb "contigs" against issue 40's 75 Mbp random database
#      (profile_blast_stages.py's data, as gpu_round2_final.sh makes it).
# For each: blastn's wall; gseek's whole command twice (`gseek search`, fresh processes, first and second); the
# steady search (benchmarks/tools/profile_blast_stages.py: warm searcher, median of REPEAT, one profiled search
# per stage, nvidia-smi every 100 ms, CUPTI where PyTorch imports); HSPs, recall of blastn's HSPs with e <= 1e-10
# (gseek.blast.compare, as `run.py blast` computes it) and the rows' SHA-256 of every gseek run (whole and steady).
# Every summary line goes to stdout (the summary last); $OUT/summary.md, $OUT/log.txt, $OUT/stages1.json,
# $OUT/stages2.json (4 files).
#
# usage, on the GPU machine (repository root = the device's copy of main; carry [".whl",
# "benchmarks/peers/bundle", ".carry/multi40/bacteria75.fa.xz", ".carry/NAME.tgz"], the tree with this script as
#   `git archive --format=tar.gz -o /work/main/.carry/NAME.tgz HEAD -- . ':(exclude)kernels/prebuilt'`):
#     mkdir -p /tmp/s40 && tar -xzf .carry/NAME.tgz -C /tmp/s40 && bash /tmp/s40/benchmarks/archive/gpu_scale40.sh [TREE]
#   TREE: the tree whose gseek is measured (default: the working directory, i.e. main); give /tmp/s40 to measure
#   the carried tree (the working directory's prebuilt sets are copied into it where it has none). The tools
#   (the profiler, the query sets) are this script's tree's; the carried inputs are read from the working directory.
# Here, on the CPU with tiny sizes (a check of the script itself; the venv's gseek, blastn on PATH):
#   NO_INSTALL=1 PY=.venv/bin/python DEVICE=cpu THREADS=2 SOURCE=/tmp/small.fa.xz PAN_BASES=4e6 SET1=w40@30 \
#     DB2_BASES=2000000 SCALE2=0.05 OUT=/tmp/s40out bash benchmarks/archive/gpu_scale40.sh
# Knobs: REPEAT (3), PROFILED (1), BUDGET_S (250: a timed step that would end after it by its expected length,
# NEED_* below, is skipped; the summary still prints),
# WORK (/tmp/scale40; data kept there and reused by a second call on a still-warm machine), NO_CUPTI=1.
set -uo pipefail
START=$SECONDS
OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ROOT=$PWD
TREE=$(cd "${1:-$PWD}" && pwd)
DEVICE=${DEVICE:-gpu}; T=${THREADS:-16}; REPEAT=${REPEAT:-3}; PROFILED=${PROFILED:-1}; BUDGET_S=${BUDGET_S:-250}
SOURCE=${SOURCE:-$ROOT/.carry/multi40/bacteria75.fa.xz}; PAN_BASES=${PAN_BASES:-1e9}; SET1=${SET1:-w40}
DB2_BASES=${DB2_BASES:-75000000}; SCALE2=${SCALE2:-1}
W=${WORK:-/tmp/scale40}; G=$W/pan; R=$W/r75; mkdir -p "$G" "$R"
CF="6 qseqid sseqid sstrand qstart qend sstart send evalue bitscore"   # gseek.blast.compare.COMPARE_FIELDS
exec 3>&1   # the log's own stdout, whatever a timed command's is redirected to
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$OUT/log.txt" >&3; }
# late SECONDS STEP: true (and the step logged as skipped) when a step of about SECONDS would end after BUDGET_S
late() {
  local need=$1; shift
  [ $((SECONDS - START + need)) -gt "$BUDGET_S" ] && { log "skipped (it would end past BUDGET_S): $*"; return 0; }
  return 1
}
# timed KEY COMMAND...: COMMAND's wall seconds into $W/times.tsv (KEY<TAB>seconds<TAB>exit status)
timed() {
  local key=$1; shift; local s=$EPOCHREALTIME; "$@"; local rc=$? e=$EPOCHREALTIME
  local secs; secs=$(awk "BEGIN{printf \"%.2f\", $e - $s}")
  printf '%s\t%s\t%s\n' "$key" "$secs" "$rc" >> "$W/times.tsv"; log "$key: $secs s (exit $rc)"; return $rc
}
: > "$W/times.tsv"

if [ -z "${NO_INSTALL:-}" ]; then
  source "$HERE/benchmarks/archive/gpu_common.sh" && tree_install "$ROOT" "$TREE" || exit 1
fi
PY=${PY:-python3}
if [ -e "$ROOT/benchmarks/peers/bundle" ] || [ -d "$ROOT/benchmarks/peers/root" ]; then
  source "$ROOT/benchmarks/env.sh" || exit 1
fi
GSEEK=($PY -P -m gseek --quiet --device "$DEVICE" -p "$T"); INDEX=($PY -P -m gseek --quiet --device cpu -p "$T" index)
CUPTI=(); [ -n "${NO_CUPTI:-}" ] && CUPTI=(--no-cupti)
{
  echo "tree $TREE ($(cat "$TREE/.git-commit" 2>/dev/null || git -C "$TREE" rev-parse --short HEAD 2>/dev/null || echo '?'))"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
  echo "$(nproc) cores; $(blastn -version | head -1); $($PY -P -c 'import gseek, numpy, numba; print("gseek", gseek.__file__, "numpy", numpy.__version__, "numba", numba.__version__)')"
} | tee -a "$OUT/log.txt"
log "installed"

# -- data (untimed against each other: made in parallel) --
(  # set 2: the 75 Mbp random database and the 156 x 30 kb set (the profiler's bytes), its index and makeblastdb
  $PY -P - "$HERE" "$R" "$DB2_BASES" "$SCALE2" <<'PY'
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1] + "/benchmarks/tools")
from profile_blast_stages import make_data
files = make_data(Path(sys.argv[2]), int(sys.argv[3]), 12, float(sys.argv[4]), stems=("q30k",))
Path(sys.argv[2], "db.txt").write_text(str(files["db"]))
Path(sys.argv[2], "q.txt").write_text(str(files["q30k"]))
PY
  db=$(cat "$R/db.txt")
  [ -s "${db%.fa}.gseek" ] || "${INDEX[@]}" "$db" --parts text -o "${db%.fa}"
  [ -s "$R/bdb.nsq" ] || [ -s "$R/bdb.nal" ] || makeblastdb -in "$db" -dbtype nucl -out "$R/bdb" > /dev/null
) > "$W/prep2.log" 2>&1 &
if [ ! -s "$G/db.fa" ]; then
  timed pangenome $PY -P - "$HERE" "$SOURCE" "$G/db.fa" "$PAN_BASES" "$T" <<'PY'
import sys
from pathlib import Path
sys.path.append(sys.argv[1])
from benchmarks.archive.gpu_multi40 import pangenome
print(pangenome(Path(sys.argv[2]), Path(sys.argv[3]), int(float(sys.argv[4])), int(sys.argv[5])))
PY
fi
ls -l "$G/db.fa" | tee -a "$OUT/log.txt"
[ -s "$G/db.gseek" ] || timed "gseek index --parts text (1 Gbp)" "${INDEX[@]}" "$G/db.fa" --parts text \
  -o "$G/db" &
[ -s "$G/bdb.nsq" ] || [ -s "$G/bdb.nal" ] || timed "makeblastdb (1 Gbp)" makeblastdb -in "$G/db.fa" -dbtype nucl \
  -out "$G/bdb" > /dev/null &
[ -s "$G/q.fa" ] || $PY -P - "$HERE" "$G/db.fa" "$SET1" "$G/q.fa" <<'PY' &
import sys
sys.path.append(sys.argv[1])
from benchmarks.suite.blast import blast_set, describe_set
blast_set(sys.argv[2], sys.argv[3]).write(sys.argv[4])  # seed 11, as run.py blast
print("set 1:", sys.argv[3], "of", describe_set(sys.argv[3].partition("@")[0]))
PY
wait   # set 2's data too: nothing runs beside the timed steps
tail -3 "$W/prep2.log"
Q1=$G/q.fa; DB2=$(cat "$R/db.txt"); Q2=$(cat "$R/q.txt"); IDX2=${DB2%.fa}
log "data ready: $(grep -c '>' "$Q1") queries (set 1), $(grep -c '>' "$Q2") (set 2)"

# one set: KEY TASK DB_FASTA INDEX BLASTDB QUERIES DIR STAGES_NAME, with NEED_BLASTN, NEED_WHOLE, NEED_STEADY
# (each step's expected seconds on the H200 machine); the blastn run LAST when BLAST_LAST=1
measure() {
  local key=$1 task=$2 db=$3 idx=$4 bdb=$5 q=$6 dir=$7 st=$8
  rm -f "$dir/blastn.tsv" "$dir"/whole?.tsv "$OUT/$st.json" "$W/$st.md"   # nothing of an earlier call counts
  run_blastn() {
    late "$NEED_BLASTN" "$key blastn" || timed "$key blastn" blastn -task "$task" -db "$bdb" -query "$q" -num_threads "$T" \
      -outfmt "$CF" -out "$dir/blastn.tsv"
  }
  [ "${BLAST_LAST:-0}" = 1 ] || run_blastn
  for r in 1 2; do
    late "$NEED_WHOLE" "$key whole $r" || timed "$key whole $r" "${GSEEK[@]}" search --task "$task" -x "$idx" -q "$q" \
      -o "$dir/whole$r.tsv"
  done
  late "$NEED_STEADY" "$key steady" || timed "$key steady" $PY -P "$HERE/benchmarks/tools/profile_blast_stages.py" \
    --device "$DEVICE" --threads "$T" --work "$dir" --db "$db" --queries "$key=$task:$q" --repeat "$REPEAT" \
    --profiled "$PROFILED" --tag "$key" --out "$OUT/$st.json" "${CUPTI[@]}" > "$W/$st.md" 2> "$W/$st.err"
  tail -3 "$W/$st.err"
  [ "${BLAST_LAST:-0}" = 1 ] && run_blastn
  summary "$key" "$task" "$dir" "$OUT/$st.json" | tee -a "$OUT/summary.md"
}
# summary KEY TASK DIR STAGES_JSON: one row of the table (recall: gseek.blast.compare, as run.py blast)
summary() {
  $PY -P - "$W/times.tsv" "$@" <<'PY'
import hashlib, json, statistics, sys
from pathlib import Path
from gseek.blast.compare import compare_reports
times_f, key, task, d, stages = sys.argv[1:]
d = Path(d)
times = {}
for line in Path(times_f).read_text().splitlines():
    k, s, rc = line.split("\t")
    times[k] = float(s) if rc == "0" else None
def sec(k):
    v = times.get(k)
    return f"{v:.2f}" if v is not None else "-"
def sha(p):
    return hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None
blast, w1, w2 = times.get(f"{key} blastn"), times.get(f"{key} whole 1"), times.get(f"{key} whole 2")
st = json.loads(Path(stages).read_text())["sets"][0] if Path(stages).is_file() else {}
steady = statistics.median(st["search_s"]) if st.get("search_s") else None
def as_compare(path):  # -outfmt 6's std columns -> COMPARE_FIELDS' (strand from the subject's order)
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        yield "\t".join([f[0], f[1], "plus" if int(f[8]) <= int(f[9]) else "minus", f[6], f[7], f[8], f[9],
                         f[10], f[11]])
rec = None
if (d / "blastn.tsv").is_file() and (d / "whole1.tsv").is_file():
    rec = compare_reports(as_compare(d / "whole1.tsv"), open(d / "blastn.tsv"))
digests = {n: sha(d / f"whole{n}.tsv") for n in (1, 2)}
if st.get("sha256"):
    digests["steady"] = st["sha256"]
got = {v for v in digests.values() if v}
same = "yes" if len(got) == 1 and all(digests.values()) and st.get("same_rows", True) else \
    f"NO {digests}" if len(got) > 1 or st.get("same_rows") is False else f"partial {digests}"
lines = lambda p: sum(1 for _ in open(p)) if p.is_file() else None
x = lambda a, b: f"{a / b:.1f}x" if a and b else "-"
busy = []
if st.get("nvidia_smi_util") is not None:
    busy.append(f"nvidia-smi {st['nvidia_smi_util']:.0f} % ({st['nvidia_smi_samples']})")
if st.get("cupti_search_s"):
    busy.append(f"CUPTI {100 * st['cupti_kernel_s'] / st['cupti_search_s']:.0f} %")
row = [f"{key} ({task}, {st.get('queries', '?')} q, {st.get('query_bases', 0) / 1e6:.2f} Mbp)", sec(f"{key} blastn"),
       f"{sec(f'{key} whole 1')} / {sec(f'{key} whole 2')}", x(blast, min(v for v in (w1, w2) if v) if (w1 or w2) else None),
       f"{steady:.3f} ({min(st['search_s']):.3f}-{max(st['search_s']):.3f})" if steady else "-", x(blast, steady),
       ", ".join(busy) or "-", f"{lines(d / 'whole1.tsv')} / {lines(d / 'blastn.tsv')}",
       f"{rec['recall']:.4f} ({rec['found']}/{rec['expected']}), bits+-1 {rec['bits_within_1']:.3f}, "
       f"extra {rec['extra']:.3f}" if rec else "-", same + (f" {next(iter(got))[:12]}" if len(got) == 1 else "")]
print("| " + " | ".join(row) + " |")
PY
}
HEAD="| set | blastn -num_threads $T s | gseek whole 1st / 2nd s | x blastn (whole, best) | steady search s (median, range) | x blastn (steady) | GPU busy (steady) | HSPs gseek / blastn | recall e<=1e-10 | rows identical (whole 1, 2, steady) |"
{ echo "$HEAD"; echo "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|"; } > "$OUT/summary.md"

log "set 1: megablast, $SET1 against the pan-genome"
NEED_BLASTN=30 NEED_WHOLE=10 NEED_STEADY=50 measure "pan-w40" megablast "$G/db.fa" "$G/db" "$G/bdb" "$Q1" "$G" stages1
log "set 2: blastn task, 156 x 30 kb against the 75 Mbp random database"
BLAST_LAST=1 NEED_BLASTN=30 NEED_WHOLE=6 NEED_STEADY=25 measure "r75-30kb" blastn "$DB2" "$IDX2" "$R/bdb" "$Q2" "$R" stages2

for st in stages1 stages2; do   # the stage tables (steady search, per stage and per inner pass)
  [ -f "$W/$st.md" ] && grep -v '^# profile' "$W/$st.md"
done
echo
log "done"
cat "$OUT/summary.md"

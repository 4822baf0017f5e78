# Sourced by the GPU machine's scripts (ab_blast.sh, ab_imports.sh, spy_blast.sh, gpu_volumes.sh), from the
# repository root: the carried wheels and this tree installed, and helpers. Needs carry ".whl" and ".carry".
#   gpu_install [old] [WHEEL_DIR...]  wheels of .whl (and WHEEL_DIRs) into /tmp/site, this tree into /tmp/new;
#                                     with "old", the tree of .carry/old.tar (`git archive REV -o .carry/old.tar`)
#                                     into /tmp/old; exports PYTHONPATH=/tmp/new:/tmp/site and R (the repository)
#   tree_install ROOT TREE            ROOT's wheels (ROOT/.whl) into /tmp/site, ROOT's prebuilt sets copied into
#                                     TREE where it has none (a carried tree comes without them), TREE into
#                                     /tmp/new; exports PYTHONPATH=/tmp/new:/tmp/site
#   blast_sets DIR SET...             the `blast` benchmark's query sets (benchmarks/run.py BLAST_SETS) simulated
#                                     from .carry/bacteria75.fa.gz into DIR/SET.fa
#   pangenome FILE                    the pan-genome recipe (mutated copies of .carry/bacteria75.fa.gz, ~1.06 Gbp)
#                                     into FILE, unless it is there
#   ecoli156 FILE                     workload 3's stand-in: .carry/ecoli.fa.gz cut into 156 contigs
#   scale_data DIR                    DIR/pangenome.fa, DIR/work/ecoli156.fa and DIR/work/w1-100.fa (the first 100
#                                     of workload 1, simulated from the pan-genome as `run.py blast` does; the
#                                     sets of SCALE_SETS in its place, e.g. SCALE_SETS="w1@100 w1")
#   ab_install ROOT TREE              ROOT into /tmp/gs_a, TREE into /tmp/gs_b (A, B: their PYTHONPATHs)
#   pan40_data W PYTHONPATH TREE ROOT PAN_BASES SET  issue 40's 1 Gbp megablast set (gpu_runs40.sh, gpu_mb1g.sh)
#   pan40_ready TEST_S                pan40_data beside the `-m gpu` tests (gpu_runs40.sh, gpu_mb1g.sh)
#   t COMMAND...                      runs COMMAND, appends "MS ms: COMMAND" to $OUT/times.txt
#   ab_rounds ROUNDS NAME...          the caller's `one TREE NAME ROUND` (a command's "NAME TREE ROUND MS DIGEST" row
#                                     into $W/rows.txt) for trees A and B, each round and name, the order swapped
#                                     each round
#   ab_summary HEADER LABEL NAME...   $W/rows.txt under HEADER, then each NAME's medians and spread a tree (LABEL:
#                                     what B is) and its outputs' digests
set -u
export PYTHONUNBUFFERED=1
R=$PWD

gpu_install() {
  local old=0
  if [ "${1:-}" = old ]; then old=1; shift; fi
  local dirs=(.whl "$@")
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    $(for d in "${dirs[@]}"; do echo "$d"/*.whl; done) || return 1
  rm -rf /tmp/new; PYTHONPATH=/tmp/site python3 -m pip install -q --no-deps --no-build-isolation --no-index \
    --target /tmp/new . || return 1
  if [ $old = 1 ]; then
    rm -rf /tmp/old /tmp/oldsrc; mkdir -p /tmp/oldsrc; tar -xf .carry/old.tar -C /tmp/oldsrc
    (cd /tmp/oldsrc && PYTHONPATH=/tmp/site python3 -m pip install -q --no-deps --no-build-isolation --no-index \
      --target /tmp/old .) || return 1
  fi
  export PYTHONPATH=/tmp/new:/tmp/site
}

wheels_and_sets() {  # ROOT TREE: ROOT's wheels into /tmp/site, ROOT's prebuilt sets into TREE where it has none
  local root=$1 tree=$2 d
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "$root"/.whl/*.whl || return 1
  for d in "$root"/kernels/prebuilt/*/; do
    [ -d "$tree/kernels/prebuilt/$(basename "$d")" ] || { mkdir -p "$tree/kernels/prebuilt"; cp -r "$d" "$tree/kernels/prebuilt/"; }
  done
}

tree_install() {
  local root=$1 tree=$2
  wheels_and_sets "$root" "$tree" || return 1
  rm -rf /tmp/new
  (cd "$tree" && PYTHONPATH=/tmp/site python3 -m pip install -q --no-deps --no-build-isolation --no-index \
    --target /tmp/new .) || return 1
  export PYTHONPATH=/tmp/new:/tmp/site
}

blast_sets() {
  local dir=$1; shift
  PYTHONPATH=/tmp/new:/tmp/site python3 -P - "$R" "$dir" "$@" <<'PY'
import sys
root, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.path.insert(0, root + "/benchmarks")
from run import blast_set
for name in names:
    blast_set(root + "/.carry/bacteria75.fa.gz", name).write(f"{out}/{name.replace('@', '-')}.fa")
PY
}

pangenome() {
  [ -s "$1" ] && return 0
  t python3 -P - "$R" "$1" <<'PY'
import sys
from pathlib import Path
from gseek.datasets.recipes import PANGENOME_BASES, _pangenome_records, _write_output
root, out = Path(sys.argv[1]), Path(sys.argv[2])
source = root / ".carry/bacteria75.fa.gz"
copies = -(-int(1.01 * PANGENOME_BASES) // 75_380_882)  # the recipe's count for bacteria75's 75,380,882 bases
_write_output(out.with_suffix(".fa.part"), "pangenome", {"target_bases": PANGENOME_BASES, "seed": 0},
              _pangenome_records(source, copies, 0), [{"recipe": "bacteria75 (carried)", "copies": copies}])
out.with_suffix(".fa.part").rename(out)
PY
}

ecoli156() {
  python3 -P - "$R/.carry/ecoli.fa.gz" "$1" <<'PY'
import sys
from gseek.seqio import read_fastx
g = read_fastx(sys.argv[1]); seq = g.sequence(0); n = 156; step = -(-len(seq) // n)
with open(sys.argv[2], "w") as fh:
    for i in range(n):
        fh.write(f">ecoli_contig{i + 1:03d}\n{seq[i * step:(i + 1) * step]}\n")
PY
}

scale_data() {
  mkdir -p "$1/work"
  pangenome "$1/pangenome.fa"
  ecoli156 "$1/work/ecoli156.fa"
  PYTHONPATH=/tmp/new:/tmp/site python3 -P - "$R" "$1" ${SCALE_SETS:-w1@100} <<'PY'
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1] + "/benchmarks")
from run import blast_set
for name in sys.argv[3:]:
    out = Path(sys.argv[2] + f"/work/{name.replace('@', '-')}.fa")
    if not out.exists():
        blast_set(sys.argv[2] + "/pangenome.fa", name).write(str(out))
PY
}


# ab_install ROOT TREE: ROOT's wheels into /tmp/site, ROOT's prebuilt sets copied into TREE where it has none (a
# carried tree comes without them), ROOT into /tmp/gs_a and TREE into /tmp/gs_b side by side; sets A and B (their
# PYTHONPATHs). gpu_runs40.sh, gpu_mb1g.sh.
ab_install() {
  local root=$1 tree=$2
  wheels_and_sets "$root" "$tree" || return 1
  (cd "$root" && PYTHONPATH=/tmp/site python3 -m pip install -q --no-deps --no-build-isolation --no-index \
    --target /tmp/gs_a . ) &
  (cd "$tree" && PYTHONPATH=/tmp/site python3 -m pip install -q --no-deps --no-build-isolation --no-index \
    --target /tmp/gs_b . ) &
  wait
  A=/tmp/gs_a:/tmp/site; B=/tmp/gs_b:/tmp/site
}

# pan40_data W PYTHONPATH TREE ROOT PAN_BASES SET: issue 40's 1 Gbp megablast set (gpu_scale40.sh's) into W, each
# part unless there: W/db.fa (the pan-genome recipe from ROOT/.carry/multi40/bacteria75.fa.xz, PAN_BASES, 16
# processes, gpu_multi40.py's `pangenome`), W/q.fa (SET of benchmarks/suite/blast.py, seed 11), its
# `--parts text` index W/db.gseek; TREE's tools, gseek from PYTHONPATH.
pan40_data() {
  local W=$1 A=$2 TREE=$3 ROOT=$4 PAN_BASES=$5 SET=$6
  [ -s "$W/db.fa" ] || PYTHONPATH=$A python3 -P - "$TREE" "$ROOT/.carry/multi40/bacteria75.fa.xz" "$W/db.fa" \
    "$PAN_BASES" 16 <<'PY'
import sys
from pathlib import Path
sys.path.append(sys.argv[1])
from benchmarks.archive.gpu_multi40 import pangenome
print(pangenome(Path(sys.argv[2]), Path(sys.argv[3]), int(float(sys.argv[4])), int(sys.argv[5])))
PY
  [ -s "$W/q.fa" ] || PYTHONPATH=$A python3 -P - "$TREE" "$W/db.fa" "$SET" "$W/q.fa" <<'PY' &
import sys
sys.path.append(sys.argv[1])
from benchmarks.suite.blast import blast_set
blast_set(sys.argv[2], sys.argv[3]).write(sys.argv[4])
PY
  [ -s "$W/db.gseek" ] || PYTHONPATH=$A python3 -P -m gseek --quiet --device cpu -p 16 index "$W/db.fa" --parts text \
    -o "$W/db"
  wait
}

# pan40_ready TEST_S: pan40_data into $W (in the background, gseek of $A) beside `-m gpu` $TESTS of $TREE (gseek of
# $B, TEST_S seconds at most; $OUT/tests.txt), then a line each through `log` (the caller's).
pan40_ready() {
  pan40_data "$W" "$A" "$TREE" "$ROOT" "$PAN_BASES" "$SET" > "$W/data.log" 2>&1 &
  local data=$!
  (cd "$TREE" && eval PYTHONPATH=$B timeout "$1" python3 -P -m pytest -q -p no:randomly -p no:cacheprovider -m gpu $TESTS) \
    > "$OUT/tests.txt" 2>&1
  log "tests: $(tail -1 "$OUT/tests.txt")"
  wait $data
  tail -2 "$W/data.log" | tee -a "$OUT/log.txt"
  log "data ready: $(grep -c '>' "$W/q.fa") queries, $(stat -c %s "$W/db.fa") bytes of database FASTA"
}

t() { local s=$(date +%s%N); "$@"; local e=$(date +%s%N); echo "$(( (e - s) / 1000000 )) ms: $*" | tee -a "$OUT/times.txt"; }

ab_rounds() {
  local rounds=$1 r name; shift
  for r in $(seq 1 "$rounds"); do
    for name in "$@"; do
      if [ $((r % 2)) = 1 ]; then one A "$name" "$r"; one B "$name" "$r"; else one B "$name" "$r"; one A "$name" "$r"; fi
    done
  done
}

ab_summary() {
  local header=$1 label=$2 name tree v; shift 2
  echo "$header"; cat "$W/rows.txt"
  echo "## medians (ms) and spread, A = main, B = $label"
  for name in "$@"; do
    for tree in A B; do
      v=$(awk -v n="$name" -v t=$tree '$1==n && $2==t {print $4}' "$W/rows.txt" | sort -n | tr '\n' ' ')
      echo "$name $tree median $(echo $v | awk '{n=split($0,a," "); print a[int((n+1)/2)]}') all: $v"
    done
    echo "$name outputs: $(awk -v n="$name" '$1==n {print $5}' "$W/rows.txt" | sort -u | tr '\n' ' ')"
  done
}

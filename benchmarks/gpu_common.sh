# Sourced by the GPU machine's scripts (ab_blast.sh, ab_imports.sh, spy_blast.sh, gpu_volumes.sh), from the
# repository root: the carried wheels and this tree installed, and helpers. Needs carry ".whl" and ".carry".
#   gpu_install [old] [WHEEL_DIR...]  wheels of .whl (and WHEEL_DIRs) into /tmp/site, this tree into /tmp/new;
#                                     with "old", the tree of .carry/old.tar (`git archive REV -o .carry/old.tar`)
#                                     into /tmp/old; exports PYTHONPATH=/tmp/new:/tmp/site and R (the repository)
#   blast_sets DIR SET...             the `blast` benchmark's query sets (benchmarks/run.py BLAST_SETS) simulated
#                                     from .carry/bacteria75.fa.gz into DIR/SET.fa
#   t COMMAND...                      runs COMMAND, appends "MS ms: COMMAND" to $OUT/times.txt
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

t() { local s=$(date +%s%N); "$@"; local e=$(date +%s%N); echo "$(( (e - s) / 1000000 )) ms: $*" | tee -a "$OUT/times.txt"; }

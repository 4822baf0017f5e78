#!/usr/bin/env bash
# Issue 40: the per-stage profile of the BLAST search on the GPU in steady state (benchmarks/tools/profile_blast_stages.py)
# on the 75 Mbp random sets (megablast 100 x 10 kb and 156 x 30 kb, blastn task 100 x 10 kb). Run from the
# tree to profile (B; e.g. extracted from .carry/gpu40.tar.gz); ROOT holds .whl (Python 3.12 wheels) and, with AB=1,
# .carry/gpu40-base.tar.gz: that tree (A) against this one, processes alternating A, B (ROUNDS rounds), the rows'
# digests compared. ARGS: more options of the profile (e.g. "--repeat 3"), ARGS_B: more for B's first round only
# (e.g. "--cpu-check megablast-10kb"); TESTS: test files (and options) run first with -m gpu on tree B; A_SRC: tree A
# as a folder instead of the tarball (main's checkout: the device's working directory).
#   mkdir /tmp/t && tar -xzf .carry/gpu40.tar.gz -C /tmp/t && cd /tmp/t && ROOT=$OLDPWD bash benchmarks/archive/gpu_stages.sh
# The trees: `git archive REV | tar --delete --wildcards "kernels/prebuilt/py3.1[13]*" | gzip` (the carry limit).
# Results: $OUT/stages.md (the tables, the digests), $OUT/stages-TREEROUND.json, $OUT/stages.err.
set -uo pipefail
OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
ROOT=${ROOT:-$PWD}
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$ROOT"/.whl/*.whl \
  || exit 1
# the trees' installs made afresh: a warm machine keeps /tmp from an earlier call (another tree's), and pip --target
# leaves a package already there as it is
rm -rf /tmp/a /tmp/b
PYTHONPATH=/tmp/site python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/b . || exit 1
trees=B
if [ "${AB:-0}" = 1 ]; then
  asrc=${A_SRC:-/tmp/asrc}  # A_SRC: tree A as a folder (e.g. main's checkout, the device's working directory)
  [ -n "${A_SRC:-}" ] || { mkdir -p /tmp/asrc && tar -xzf "$ROOT/.carry/gpu40-base.tar.gz" -C /tmp/asrc; } || exit 1
  (cd "$asrc" && PYTHONPATH=/tmp/site python3 -m pip install -q --no-deps --no-build-isolation --no-index \
    --target /tmp/a .) || exit 1
  trees="A B"
fi
if [ -n "${TESTS:-}" ]; then
  PYTHONPATH=/tmp/b:/tmp/site timeout 300 python3 -P -m pytest -q -p no:randomly -p no:cacheprovider -m gpu $TESTS \
    2>&1 | tail -15 | tee -a "$OUT/stages.md"
fi
S=$PWD/benchmarks/tools/profile_blast_stages.py
for r in $(seq "${ROUNDS:-1}"); do
  for t in $trees; do
    lib=/tmp/$(echo $t | tr AB ab)
    extra=; [ "$t$r" = B1 ] && extra=${ARGS_B:-}
    PYTHONPATH=$lib:/tmp/site python3 -P "$S" --work /tmp/stages --tag "$t$r" --out "$OUT/stages-$t$r.json" ${ARGS:-} $extra \
      2>>"$OUT/stages.err" | tee -a "$OUT/stages.md"
  done
done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$OUT/stages.md"
python3 "$PWD/benchmarks/tools/stage_digests.py" "$OUT" | tee -a "$OUT/stages.md"

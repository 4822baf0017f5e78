#!/usr/bin/env bash
# The last device call of 2026-11-28's fifth session (gpu40e, mb40f, cpu40f, serve39e/f merged, the cubins and
# CuPy kernels rebuilt by gpu_round3.sh's call): issue 40's table again, with nothing else in the call — the
# steady-state search (benchmarks/tools/profile_blast_stages.py, warm searcher, median of REPEAT) and the whole
# command on the 75 Mbp random sets, beside `blastn -num_threads 16` on the same files (gpu_round2_final.sh's
# second half), the steady lines and each set's summary printed to stdout (the call's files may not all come back).
# Carry: .whl (Python 3.12 wheels) and benchmarks/peers/bundle (blastn).
set -uo pipefail
OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation --no-index . || exit 1
sed -n '/^W=\/tmp\/stages/,$p' benchmarks/archive/gpu_round2_final.sh | sed "s/--repeat 3/--repeat ${REPEAT:-5}/" \
    > /tmp/step3.sh
OUT=$OUT bash /tmp/step3.sh > /dev/null 2>&1
cat "$OUT/whole.md"
grep -E 'steady search|^### |busy|HSPs' "$OUT/stages.md" | head -40

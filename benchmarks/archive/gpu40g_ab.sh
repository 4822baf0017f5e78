#!/usr/bin/env bash
# Issue 40 (branch gpu40g): the blastn task's seed selection with packed device sorts, its columns left on the device
# for the score-only rounds, and _gapped's host arrays over the candidates the device rounds leave only; main (A,
# the device's working directory) against the branch (B), processes alternating A, B, A, B, the rows' digests
# compared, `-m gpu` tests of what the branch touched first (gpu_stages.sh). Run in main's checkout with
# .carry/gpu40g.tgz (`git archive --format=tar.gz HEAD -- . ':(exclude)kernels/prebuilt'`) and .whl carried; main's
# prebuilt set is copied into the branch's tree (its Numba modules are main's).
# Results: $OUT/stages.md, $OUT/stages-TREEROUND.json, $OUT/stages.err.
set -uo pipefail
ROOT=$PWD
rm -rf /tmp/gpu40g && mkdir -p /tmp/gpu40g && tar -xzf .carry/gpu40g.tgz -C /tmp/gpu40g || exit 1
mkdir -p /tmp/gpu40g/kernels/prebuilt && cp -r kernels/prebuilt/py3.12-numba0.68.0 /tmp/gpu40g/kernels/prebuilt/
cd /tmp/gpu40g || exit 1
ROOT=$ROOT A_SRC=$ROOT AB=1 ROUNDS=${ROUNDS:-2} ARGS=${ARGS:-"--sets blastn-10kb,megablast-10kb --repeat 5 --profiled 1"} \
  TESTS=${TESTS:-"tests/test_blast_seed_selection.py tests/test_blast_device_gapped.py tests/test_blast_device_rounds.py
  tests/test_blast_search.py::test_backends_give_byte_identical_output"} bash benchmarks/archive/gpu_stages.sh
# BREAKS=1: then each new GPU path broken once, its test expected to fail (gpu40g_breaks.sh)
[ "${BREAKS:-0}" = 1 ] && bash benchmarks/archive/gpu40g_breaks.sh 2>&1 | tee -a "${OUT:-/tmp/gseek-out}/stages.md"
rm -rf /tmp/a /tmp/b /tmp/gpu40g

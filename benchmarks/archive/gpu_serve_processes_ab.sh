#!/usr/bin/env bash
# gseek serve's throughput with the searches in worker processes (issue 39's goal: 64 concurrent clients x 10
# requests of 10 x 1 kb megablast against a >= 1 Gbp database, the GPU busy >= 70 %), A/B in one call: a random
# database (16 contigs, seed 7, gseek index --parts text), then benchmarks/tools/serve_throughput.py once per
# configuration, the configurations alternating in each round (first to last in odd rounds, last to first in even):
#   A    main's tree (.carry/old.tar), its defaults (one device thread in the service's process)
#   W0   this tree, --workers 0 (the searches in the service's process: main's design)
#   WN   this tree, --workers N (N worker processes on the GPU), for each N of WORKERS (default 1 2 4 8)
#   WNs  with SPLIT=1, also --workers N with -p THREADS/N (each worker's Numba passes on its share of the cores;
#        -p is per process: N workers of -p 16 run up to 16 N threads)
#   G2   this tree, --gpus 0,1 --workers 2 (two worker processes on each of two GPUs; only where there are two)
# Every answer's bytes are hashed: the same requests give the same hash in every configuration. The service's
# cores are the CPU seconds of its process and of every worker process over the run's seconds.
#
# On the GPU machine (nothing run here; the coordinator runs it), this tree carried as a tar and main's as another
# (`git archive HEAD -o .carry/serve39d.tar`, `git -C /work/main archive main -o .carry/serve39d-main.tar`;
# carry .whl, .carry/serve39d.tar, .carry/serve39d-main.tar), one nvidia-h200 call of ~6-9 minutes:
#   rm -rf /tmp/t && mkdir -p /tmp/t/.carry && tar -xf .carry/serve39d.tar -C /tmp/t \
#     && cp .carry/serve39d-main.tar /tmp/t/.carry/old.tar && cp -r .whl /tmp/t/ && cd /tmp/t \
#     && ROUNDS=2 BUDGET_S=480 bash benchmarks/archive/gpu_serve_processes_ab.sh
# (fewer rounds or WORKERS="1 2 4" where the call's budget is short: each run starts a service, 64 clients warm it
# with a request each, then send 10 each; a service of 8 worker processes loads the database 8 times: ~20 s.)
# Here, on the CPU with the venv's gseek (2026-11-28, benchmarks/RESULTS.md):
#   NO_INSTALL=1 NO_A=1 DEVICE=cpu THREADS=2 BIG_BP=2000000 CLIENTS=16 REQUESTS=5 WORKERS="1 2" ROUNDS=3 \
#     BUDGET_S=1500 bash benchmarks/archive/gpu_serve_processes_ab.sh
# TESTS: test files run first with -m gpu ($OUT/tests.txt), e.g. TESTS="tests/test_serve_workers.py".
# BUDGET_S: no run starts after this many seconds. RUN_S: one run's limit (120).
# Results: $OUT/ab.jsonl (a line a run), $OUT/ab.md (medians per configuration), $OUT/log.txt.
BUDGET_S=${BUDGET_S:-480}; WORKERS=${WORKERS:-1 2 4 8}
source "$(dirname "${BASH_SOURCE[0]}")/serve_ab_common.sh"

CONFIGS=()
[ -z "${NO_A:-}" ] && CONFIGS+=("A|$OLD||")
CONFIGS+=("W0|$NEW||--workers 0")
for n in $WORKERS; do
  CONFIGS+=("W$n|$NEW||--workers $n")
  [ -n "${SPLIT:-}" ] && [ "$n" -gt 1 ] && CONFIGS+=("W${n}s|$NEW||--workers $n|$(( THREADS / n > 0 ? THREADS / n : 1 ))")
done
[ "$GPUS" -ge 2 ] && CONFIGS+=("G2|$NEW||--gpus 0,1 --workers 2")
serve_ab_rounds
serve_ab_summary

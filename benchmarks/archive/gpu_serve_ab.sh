#!/usr/bin/env bash
# gseek serve's throughput, A/B in one call (issue 39's goal: 64 concurrent clients x 10 requests of 10 x 1 kb
# megablast against a >= 1 Gbp database, the GPU busy >= 70 %): a random database (16 contigs, seed 7, gseek index
# --parts text), then benchmarks/tools/serve_throughput.py once per configuration, the configurations alternating in
# each round (A first in odd rounds, last in even ones):
#   A    main's tree (.carry/old.tar), its defaults (one device thread)
#   B    this tree's defaults (two device workers on the GPU, each on its own CUDA stream)
#   B1   this tree, --workers 1 (the batcher's and the engine's other changes alone)
#   B2   this tree, --gpus 0,1 (two workers on each GPU; only where there are two GPUs)
# Every answer's bytes are hashed: the same requests give the same hash in every configuration. (Since branch
# serve39d `--workers N` is N worker processes a device, default 1: gpu_serve_processes_ab.sh measures those.)
# The setup, the rounds and the summary: serve_ab_common.sh.
#
# On the GPU machine, this tree carried as a tar and main's as another (carry .whl, .carry/NAME.tar,
# .carry/NAME-main.tar):
#   mkdir -p /tmp/t/.carry && tar -xf .carry/NAME.tar -C /tmp/t && cp .carry/NAME-main.tar /tmp/t/.carry/old.tar \
#     && cp -r .whl /tmp/t/ && cd /tmp/t && bash benchmarks/archive/gpu_serve_ab.sh
# Here, on the CPU with tiny sizes (a check of the script; the venv's gseek for both trees):
#   NO_INSTALL=1 DEVICE=cpu THREADS=2 BIG_BP=2000000 CLIENTS=8 REQUESTS=3 ROUNDS=1 bash benchmarks/archive/gpu_serve_ab.sh
# TESTS: test files run first with -m gpu ($OUT/tests.txt). BUDGET_S: no run starts after this many seconds.
# Results: $OUT/ab.jsonl (a line a run), $OUT/ab.md (medians per configuration), $OUT/log.txt.
BUDGET_S=${BUDGET_S:-400}
source "$(dirname "${BASH_SOURCE[0]}")/serve_ab_common.sh"

# Bt (round 1 only, last): B1 with the device synchronised at each stage's end (GSEEK_BLAST_TIMING=1), so that the
# searches' stage seconds say where a search's time goes
CONFIGS=("A|$OLD||" "B|$NEW||")
[ "$GPUS" -ge 2 ] && CONFIGS+=("B2|$NEW||--gpus 0,1")
CONFIGS+=("B1|$NEW||--workers 1")
FIRST_ROUND=("Bt|$NEW|GSEEK_BLAST_TIMING=1|--workers 1")
serve_ab_rounds
serve_ab_summary

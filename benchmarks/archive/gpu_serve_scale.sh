#!/usr/bin/env bash
# gseek serve at scale (issue 39's goals), in one call: a random 75 Mbp database (12 contigs, seeded), its
# gseek index (FM-index: megablast and map) and makeblastdb; gseek serve on loopback measured by
# benchmarks/tools/serve_bench.py (megablast 1 x 500 bp p50/p99, 100 x 500 bp, 100 x 10 kb, 1,000 reads
# mapped; the whole local command and the --server command; 1 and 16 clients) with blastn -num_threads T on
# the same query files in the same call. Then, while the call has time left (BIG_AFTER_S), a random >= 1 Gbp
# database (16 contigs, --parts text, makeblastdb): 64 concurrent clients x 10 requests of 10 x 1 kb against a
# SequenceServer-style peer (one blastn -num_threads T per request, queued), the GPU's utilization sampled
# by nvidia-smi every 100 ms.
#
# On the GPU machine, from the repository root (the device copy of the main checkout), this branch's changed
# files carried as .carry/serve39.tar.gz (`git diff --name-only main | tar -czf ...`: the whole tree with the
# wheels and the peers is over the 64 MiB a call carries) laid over a copy of the tree in /tmp/t; carry .whl,
# .carry/serve39.tar.gz and benchmarks/peers/bundle:
#   cp -a . /tmp/t && tar -xzf .carry/serve39.tar.gz -C /tmp/t && bash /tmp/t/benchmarks/archive/gpu_serve_scale.sh
# Here, on the CPU with tiny sizes (a check of the script itself; the venv's gseek, blastn on PATH):
#   NO_INSTALL=1 DEVICE=cpu THREADS=2 SMALL_BP=2000000 BIG_BP=4000000 RUNS=5 READS=100 \
#     bash benchmarks/archive/gpu_serve_scale.sh
# SKIP_SMALL=1: the 1 Gbp half alone. serve_bench logs each measurement to $OUT/log.txt and rewrites its
# --json as it goes, so a call cut short keeps what it measured.
# Bounds for one short call (branch serve39b): READS=0 (no mapping: the small index --parts text, no FM-index),
# LOCAL_RUNS (3), SMALL_CLIENTS (1,16), SMALL_TIMEOUT (400), BIG_RUNS (5), BIG_REQUESTS (10 a client),
# BIG_TIMEOUT (300), PEER_REQUESTS (12); TESTS: test files run first with -m gpu ($OUT/tests.txt). A whole tree carried instead of the changed files (branch serve39b:
# `git archive --format=tar.gz HEAD -o /work/main/.carry/serve39b.tar.gz`, carry .whl, that file and
# benchmarks/peers/bundle): mkdir -p /tmp/t && tar -xf .carry/serve39b.tar.gz -C /tmp/t && bash
# /tmp/t/benchmarks/archive/gpu_serve_scale.sh
# Results: $OUT/serve75.md (.json), $OUT/serve_big.md (.json), $OUT/log.txt.
set -uo pipefail
OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
DEVICE=${DEVICE:-gpu}; THREADS=${THREADS:-16}; RUNS=${RUNS:-50}; READS=${READS:-1000}
SMALL_BP=${SMALL_BP:-75000000}; BIG_BP=${BIG_BP:-1024000000}; BIG_AFTER_S=${BIG_AFTER_S:-150}
PEER_REQUESTS=${PEER_REQUESTS:-12}; CLIENTS=${CLIENTS:-64}
LOCAL_RUNS=${LOCAL_RUNS:-3}; SMALL_CLIENTS=${SMALL_CLIENTS:-1,16}; SMALL_TIMEOUT=${SMALL_TIMEOUT:-400}
BIG_RUNS=${BIG_RUNS:-5}; BIG_REQUESTS=${BIG_REQUESTS:-10}; BIG_TIMEOUT=${BIG_TIMEOUT:-300}
SMALL_PARTS=(); [ "$READS" = 0 ] && SMALL_PARTS=(--parts text)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)   # this tree (the carried one on the GPU machine)
START=$SECONDS
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$OUT/log.txt"; }

if [ -z "${NO_INSTALL:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || exit 1
  (cd "$HERE" && PYTHONPATH=/tmp/site python3 -m pip install -q --no-deps --no-build-isolation --no-index \
    --target /tmp/new .) || exit 1
  export PYTHONPATH=/tmp/new:/tmp/site
  source benchmarks/env.sh || exit 1   # blastn, makeblastdb (the carried bundle, unpacked once)
  PY="python3 -P"
else
  PY="${PY:-python3 -P}"
fi
command -v blastn >/dev/null && command -v makeblastdb >/dev/null || { log "no blastn/makeblastdb"; exit 1; }
log "gseek $($PY -c 'import gseek; print(gseek.__version__)'), $(blastn -version | head -1), $(nvidia-smi -L 2>/dev/null | head -1)"
if [ -n "${TESTS:-}" ]; then  # test files (and options) run first with -m gpu, from this tree
  (cd "$HERE" && timeout "${TESTS_TIMEOUT:-90}" $PY -m pytest -q -p no:randomly -p no:cacheprovider -m gpu $TESTS 2>&1 \
    | tail -8 > "$OUT/tests.txt"); log "tests: $(tail -1 "$OUT/tests.txt")"
fi
W=$(mktemp -d /tmp/serve-scale-XXXX)
GSEEK="$PY -m gseek --quiet --device $DEVICE -p $THREADS"

random_db() {  # random_db FILE BASES CONTIGS SEED: one line per contig
  $PY - "$@" <<'PY'
import sys
import numpy as np
path, bases, contigs, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(seed)
size = bases // contigs
with open(path, "wb") as f:
    for i in range(contigs):
        f.write(b">c%d random %d bp\n" % (i, size))
        f.write(np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, size, dtype=np.uint8)].tobytes())
        f.write(b"\n")
PY
}

cd "$W"
if [ -z "${SKIP_SMALL:-}" ]; then
random_db small.fa "$SMALL_BP" 12 5 || exit 1; log "small.fa: $(stat -c %s small.fa) bytes"
$GSEEK index small.fa -o small "${SMALL_PARTS[@]}" || exit 1; log "gseek index small ${SMALL_PARTS[*]}"
makeblastdb -in small.fa -dbtype nucl -out bsmall > /dev/null || exit 1; log "makeblastdb small"
timeout "$SMALL_TIMEOUT" $PY "$HERE/benchmarks/tools/serve_bench.py" --device "$DEVICE" --threads "$THREADS" \
  --index small.gseek --reference small.fa --blastdb bsmall --tenkb --reads "$READS" --runs "$RUNS" \
  --local-runs "$LOCAL_RUNS" --clients "$SMALL_CLIENTS" --requests 5 --json "$OUT/serve75.json" > "$OUT/serve75.md" \
  2>> "$OUT/log.txt"
log "serve_bench small: exit $?"
if [ -n "${PROFILE:-}" ]; then  # where one request's time goes, in process (benchmarks/tools/profile_serve.py)
  for n in ${PROFILE_SIZES:-1 100}; do
    extra=(); [ "$n" = 1 ] && extra=(--tables --cprofile 30)
    GSEEK_BLAST_TIMING=1 timeout 90 $PY "$HERE/benchmarks/tools/profile_serve.py" --device "$DEVICE" \
      --threads "$THREADS" --index small.gseek --reference-text small.fa --queries $n --runs 20 "${extra[@]}" \
      > "$OUT/profile_$n.md" 2>> "$OUT/log.txt"
    log "profile_serve $n x 500 bp: exit $?"
  done
fi
cat "$OUT/serve75.md"
rm -rf small.gseek bsmall.* small.fa
fi

if [ $((SECONDS - START)) -gt "$BIG_AFTER_S" ]; then log "no time left for the big database"; exit 0; fi
random_db big.fa "$BIG_BP" 16 7 || exit 1; log "big.fa: $(stat -c %s big.fa) bytes"
$GSEEK index big.fa -o big --parts text || exit 1; log "gseek index big (text)"
makeblastdb -in big.fa -dbtype nucl -out bbig -max_file_sz 4GB > /dev/null || exit 1; log "makeblastdb big"
timeout "$BIG_TIMEOUT" $PY "$HERE/benchmarks/tools/serve_bench.py" --device "$DEVICE" --threads "$THREADS" \
  --index big.gseek --reference big.fa --blastdb bbig --runs "$BIG_RUNS" --blast-runs 1 --local-runs 0 \
  --clients "$CLIENTS" --requests "$BIG_REQUESTS" \
  --peer-requests "$PEER_REQUESTS" --gpu-sample --json "$OUT/serve_big.json" > "$OUT/serve_big.md" 2>> "$OUT/log.txt"
log "serve_bench big: exit $?"
cat "$OUT/serve_big.md"
rm -rf "$W"

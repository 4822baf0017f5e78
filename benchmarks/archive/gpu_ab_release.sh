#!/usr/bin/env bash
# A/B on the GPU machine of the release round (2026-11-28): the tree before it (42b50d7, carried in
# .carry/old without its tests, benchmarks and docs) against this one, with benchmarks/ab.py: 10M reads
# (-v 3) on a random 4.6 Mbp reference, and all-vs-all DP (5,000 × 1.5 kb score-only, 1,000 with
# trace-back); outputs compared byte for byte. Carry: .whl (Python 3.12 wheels), .carry.
set -uo pipefail
OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/a .carry/old || exit 1
python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/b . || exit 1
python3 -c "
import numpy as np
s = np.random.default_rng(1).choice(np.frombuffer(b'ACGT', np.uint8), 4_600_000).tobytes().decode()
open('/tmp/ref.fa', 'w').write('>chr\n' + '\n'.join(s[i:i + 80] for i in range(0, len(s), 80)) + '\n')"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
timeout 330 python3 benchmarks/ab.py --a /tmp/a --b /tmp/b --base /tmp/site --json "$OUT/ab_map.json" --repeat 2 \
    map --reference /tmp/ref.fa --reads 10000000 > "$OUT/ab_map.md" 2> "$OUT/ab_map.err"
echo "map exit $?" >> "$OUT/ab_map.md"
timeout 200 python3 benchmarks/ab.py --a /tmp/a --b /tmp/b --base /tmp/site --json "$OUT/ab_align.json" --repeat 2 \
    align --seqs 5000 > "$OUT/ab_align.md" 2> "$OUT/ab_align.err"
echo "align exit $?" >> "$OUT/ab_align.md"

#!/usr/bin/env bash
# A/B of the release round's megablast (2026-11-28) against the tree before it (42b50d7, in .carry/old):
# a random 75 Mbp database of 12 contigs, 156 queries of 30 kb (5 % substitutions, 0.5 % indels, 10 %
# random negatives) and 100 of 10 kb cut from it; each tree's text index, a warm-up, then the searches
# alternate A, B, A, B; outputs compared byte for byte. Carry: .whl (Python 3.12 wheels), .carry.
set -uo pipefail
OUT=${OUT:-/tmp/gseek-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --upgrade --no-deps --no-build-isolation --no-index --target /tmp/a .carry/old || exit 1
python3 -m pip install -q --upgrade --no-deps --no-build-isolation --no-index --target /tmp/b . || exit 1
cd /tmp && python3 -c "
import numpy as np
rng = np.random.default_rng(5)
with open('db.fa', 'w') as f:
    for i in range(12):
        s = rng.choice(np.frombuffer(b'ACGT', np.uint8), 6_250_000).tobytes().decode()
        f.write(f'>c{i}\n' + '\n'.join(s[j:j + 80] for j in range(0, len(s), 80)) + '\n')"
B="env PYTHONPATH=/tmp/b:/tmp/site python3 -P -m gseek --quiet --device gpu -p 16"
A="env PYTHONPATH=/tmp/a:/tmp/site python3 -P -m gseek --quiet --device gpu -p 16"
env PYTHONPATH=/tmp/b:/tmp/site python3 -P -m gseek.datasets blast-queries db.fa -o q30k.fa -n 156 -l 30000 --seed 11
env PYTHONPATH=/tmp/b:/tmp/site python3 -P -m gseek.datasets blast-queries db.fa -o q10k.fa --preset 10kb --seed 12
for t in A B; do eval "\$$t index db.fa -o idx$t --parts text"; done
{
for q in q30k q10k; do
  for t in A B; do eval "\$$t search --task megablast -x idx$t.gseek -q $q.fa -o warm.tsv"; done
  for r in 1 2; do for t in A B; do
    s=$EPOCHREALTIME; eval "\$$t search --task megablast -x idx$t.gseek -q $q.fa -o $q.$t.tsv"; e=$EPOCHREALTIME
    echo "| megablast $q ($t) | $r | $(awk "BEGIN{printf \"%.2f\", $e-$s}") | $(wc -l < $q.$t.tsv) |"
  done; done
  cmp -s $q.A.tsv $q.B.tsv && echo "$q: outputs identical" || echo "$q: OUTPUTS DIFFER"
done
} > "$OUT/ab_megablast.md" 2> "$OUT/ab_megablast.err"

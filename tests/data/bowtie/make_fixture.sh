#!/usr/bin/env bash
# Regenerate the bowtie 1 fixture of tests/test_mapper.py. Run from the
# repository root with the peer tools available (benchmarks/fetch_peers.sh).
set -euo pipefail
source benchmarks/env.sh
out=tests/data/bowtie
python "$out/make_inputs.py" "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bowtie-build -q --threads 1 "$out/ref.fa" "$tmp/ref"
gzip -dc "$out/reads.fq.gz" > "$tmp/reads.fq"
for k in 0 1 2 3; do
    # columns kept: read, strand, contig, 0-based offset, mismatch descriptors
    bowtie -v "$k" -a -p 1 --suppress 5,6,7 -x "$tmp/ref" "$tmp/reads.fq" > "$tmp/v$k.txt"
    python - "$tmp/v$k.txt" "$out/bowtie_v$k.tsv" <<'PY'
import sys
rows = set()
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    mism = len(f[4].split(",")) if len(f) > 4 and f[4] else 0
    rows.add((f[0], f[2], int(f[3]), f[1], mism))
with open(sys.argv[2], "w") as fh:
    fh.write("read\tcontig\tpos\tstrand\tmismatches\n")
    for r in sorted(rows):
        fh.write("\t".join(map(str, r)) + "\n")
PY
done
bowtie --version | head -1 > "$out/bowtie_version.txt"

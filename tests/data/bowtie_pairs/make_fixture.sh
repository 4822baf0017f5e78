#!/usr/bin/env bash
# Regenerate the paired-end bowtie 1 fixture of tests/test_pairs.py. Run from
# the repository root with the peer tools available (benchmarks/fetch_peers.sh).
set -euo pipefail
source benchmarks/env.sh
out=tests/data/bowtie_pairs
python "$out/make_inputs.py" "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bowtie-build -q --threads 1 tests/data/bowtie/ref.fa "$tmp/ref"
gzip -dc "$out/r1.fq.gz" > "$tmp/r1.fq"
gzip -dc "$out/r2.fq.gz" > "$tmp/r2.fq"
# the mates reverse-complemented (--rf: both, --ff: mate 2): as tests/test_pairs.py makes them
python - "$tmp" <<'PY'
import sys
from gseek.seqio import read_fastx, write_fastq
tr = str.maketrans("ACGTN", "TGCAN")
for m in ("r1", "r2"):
    b = read_fastx(f"{sys.argv[1]}/{m}.fq")
    write_fastq(f"{sys.argv[1]}/{m}rc.fq", [(b.name(i), b.sequence(i).translate(tr)[::-1], b.quality(i)[::-1])
                                           for i in range(len(b))])
PY
# name, mate files, the bowtie options of one run (besides -a -p 1 --sam)
while read -r name m1 m2 options; do
    # shellcheck disable=SC2086
    bowtie $options -a -p 1 --sam -x "$tmp/ref" -1 "$tmp/$m1.fq" -2 "$tmp/$m2.fq" > "$tmp/$name.sam" \
        2> "$out/$name.summary.txt"
    python - "$tmp/$name.sam" "$out/$name.tsv" "$options" <<'PY'
import sys
rows = set()
for line in open(sys.argv[1]):
    if line.startswith("@"):
        continue
    f = line.split("\t")
    flag = int(f[1])
    if flag & 2 and flag & 64:  # mate 1 of a concordant pair: its mate's place is RNEXT/PNEXT
        rows.add((f[0], f[2], int(f[3]) - 1, "-" if flag & 16 else "+", int(f[7]) - 1, "-" if flag & 32 else "+"))
with open(sys.argv[2], "w") as fh:
    fh.write(f"# bowtie {sys.argv[3]} -a: every concordant pair\n")
    fh.write("pair\tcontig\tpos1\tstrand1\tpos2\tstrand2\n")
    for r in sorted(rows):
        fh.write("\t".join(map(str, r)) + "\n")
PY
done <<'RUNS'
v2_fr_I60_X350 r1 r2 -v 2 -I 60 -X 350
v3_fr r1 r2 -v 3
v1_rf_X400 r1rc r2rc -v 1 --rf -X 400
v1_ff_X400 r1 r2rc -v 1 --ff -X 400
RUNS
bowtie --version | head -1 > "$out/bowtie_version.txt"

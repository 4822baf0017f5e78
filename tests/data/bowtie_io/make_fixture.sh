#!/usr/bin/env bash
# Regenerate the bowtie input/summary fixture of tests/test_cli.py (README.md).
# Run from the repository root with the peer tools available (benchmarks/fetch_peers.sh).
set -euo pipefail
source benchmarks/env.sh "${GSEEK_PEERS_ROOT:-}"
out=tests/data/bowtie_io
python "$out/make_inputs.py" "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bowtie-build -q --threads 1 tests/data/bowtie/ref.fa "$tmp/ref"
run() {  # NAME INPUT UN AL OPTIONS...: bowtie's SAM records, --un/--al files and stderr summary as NAME.*
    local name=$1 input=$2 un=$3 al=$4
    shift 4
    bowtie -S --sam-nohead -p 1 "$@" -x "$tmp/ref" "$out/$input" --un "$tmp/un" --al "$tmp/al" \
        > "$out/$name.sam" 2> "$tmp/err"
    grep -v '^Setting the index via positional' "$tmp/err" > "$out/$name.summary"
    cp "$tmp/un" "$out/$name.$un"
    cp "$tmp/al" "$out/$name.$al"
}
run plain reads.fq un.fq al.fq -v 1 --best
run trimmed reads64.fq un.fq al.fq -v 1 --best --phred64-quals --trim5 3 --trim3 5 -s 10 -u 120
run fasta reads.fa un.fa al.fa -f -v 2 --best -s 5 -u 100
bowtie --version | head -1 > "$out/bowtie_version.txt"

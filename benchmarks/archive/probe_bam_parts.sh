#!/usr/bin/env bash
# Issue 18, sorted BAM within 1.5x of SAM: a sorted BAM written by one `samtools sort` (PARTS=1, as before) against
# one sort per range of the reference at once (gseek.output.bam.SORT_PARTS: 4 by default, 8), 10M reads of 100 bp
# against E. coli, -v 3, GPU, all cores; each round runs every output once; the tail after the last record from
# GSEEK_TRACE_BAM; the outputs checked with pysam's samtools (quickcheck, view -c, idxstats, one region) and against
# each other once decompressed. Run on the GPU machine from the repository root with carry [".whl", ".carry"].
export PYTHONUNBUFFERED=1
if [[ -z $SKIP_INSTALL ]]; then  # SKIP_INSTALL=1: the python3 on PATH has gseek and its wheels (a smoke run)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  rm -rf /tmp/new; PYTHONPATH=/tmp/site python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/new . || exit 1
  export PYTHONPATH=/tmp/new:/tmp/site
fi
DEVICE=${DEVICE:-gpu}
READS=${READS:-5000000}  # pairs: both mates mapped as single reads
ROUNDS=${ROUNDS:-2}
SETS=${SETS:-"1 4 8"}
LEVELS=${LEVELS:-default}  # zlib levels of the BAMs (default: samtools' own; e.g. "default 1")
W=/tmp/bm; rm -rf $W; mkdir -p $W; cd $W
python3 -c "
import sys; sys.path.insert(0, '$OLDPWD/benchmarks')
import datagen
datagen.kmismatch_pairs_fastq('$OLDPWD/.carry/ecoli.fa.gz', $READS, 100, 3, 'r1.fq', 'r2.fq', seed=7)"
cat r1.fq r2.fq > r.fq; rm r1.fq r2.fq
python3 -P -m gseek --quiet index $OLDPWD/.carry/ecoli.fa.gz -o ec >/dev/null
T=$(nproc)
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || echo no GPU) | tee times.txt
lscpu | grep -E "^Model name|^CPU\(s\)" | tee -a times.txt
python3 -c "import pysam, numba; print('pysam', pysam.__version__, 'samtools', pysam.__samtools_version__, 'numba', numba.__version__, numba.config.THREADING_LAYER)" | tee -a times.txt
timed() {  # label, command...: wall and CPU seconds of the command and its children, appended to times.txt
  local label=$1; shift
  python3 - "$label" "$@" <<'PY'
import resource, subprocess, sys, time
t = time.perf_counter()
rc = subprocess.run(sys.argv[2:]).returncode
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
with open("times.txt", "a") as fh:
    print(f"{sys.argv[1]}: {time.perf_counter() - t:.2f} s wall, {ru.ru_utime + ru.ru_stime:.1f} CPU s, rc {rc}", file=fh)
PY
}
cat > g.py <<'PY'
import sys

import gseek.output.bam as b

b.SORT_PARTS = int(sys.argv[1])  # gseek with SORT_PARTS = argv[1]
b.SORT_PARTS_MIN_LENGTH = 0 if b.SORT_PARTS > 1 else 1 << 62
sys.argv = ["gseek"] + sys.argv[2:]
from gseek.cli import run

run()
PY
G() { echo python3 -P g.py "$1" --quiet --device $DEVICE -p $T search -x ec -q r.fq -v 3; }
timed "sam cold" $(G 1) -o cold.sam; rm -f cold.sam
for r in $(seq 1 $ROUNDS); do
  timed "round $r sam" $(G 1) -o r$r.sam
  for p in $SETS; do
    for l in $LEVELS; do
      mkdir -p p$p$l  # one name in every folder: the @PG lines alike
      [[ $l == default ]] && level=() || level=(--compression-level $l)
      GSEEK_TRACE_BAM=1 timed "round $r bam parts=$p level=$l" $(G $p) "${level[@]}" -o p$p$l/r$r.bam 2> trace-r$r-p$p$l.txt
      python3 - trace-r$r-p$p$l.txt <<'PY' | tee -a times.txt
import re, sys
s = {m.group(2): float(m.group(1)) for m in re.finditer(r"\[gseek trace\] ([0-9.]+) (bam [a-z ]+?) \d*$", open(sys.argv[1]).read(), re.M)}
end = s.get("bam text end")
print("   after the last record: " + ", ".join(f"{k} +{v - end:.2f} s" for k, v in s.items() if end and v >= end))
PY
    done
  done
done
if [[ -n $FLOOR ]]; then  # what compressing a sorted BAM takes on every core: an uncompressed copy compressed again
  python3 -P -c "import pysam; pysam.view('-@', '$((T-1))', '-u', '-o', 'u.bam', 'p4default/r1.bam', catch_stdout=False)"
  for l in 6 1; do
    timed "floor: samtools view -@ $((T-1)) of the uncompressed sorted BAM at level $l" python3 -P -c \
      "import pysam; pysam.view('-@', '$((T-1))', '-b', '--output-fmt-option', 'level=$l', '-o', 'f$l.bam', 'u.bam', catch_stdout=False)"
    timed "floor: the same with --write-index, level $l" python3 -P -c \
      "import pysam; pysam.view('-@', '$((T-1))', '-b', '--write-index', '--output-fmt-option', 'level=$l', '-o', 'g$l.bam##idx##g$l.bam.bai', 'u.bam', catch_stdout=False)"
  done
  timed "samtools index -@ $((T-1)) of the sorted BAM" python3 -P -c "import pysam; pysam.index('-@', '$((T-1))', 'f6.bam', catch_stdout=False)"
  ls -l u.bam f6.bam f1.bam | tee -a times.txt
fi
cat times.txt
python3 - $(for p in $SETS; do for l in $LEVELS; do echo $p$l; done; done) <<'PY' | tee -a times.txt
import gzip, hashlib, sys, pysam
sets = sys.argv[1:]
n_sam = int(pysam.view("-c", "r1.sam").strip())
digests = {}
for p in sets:
    path = f"p{p}/r1.bam"
    pysam.quickcheck(path)
    n = int(pysam.view("-c", path).strip())
    idx = sum(int(x.split("\t")[2]) + int(x.split("\t")[3]) for x in pysam.idxstats(path).splitlines())
    region = int(pysam.view("-c", path, "K-12-MG1655:1000000-1100000").strip())
    h = hashlib.sha256()  # the records' bytes (the @PG lines name each output)
    with gzip.open(path) as fh:
        text = int.from_bytes(fh.read(8)[4:], "little")
        fh.read(text)
        for _ in range(int.from_bytes(fh.read(4), "little")):
            fh.read(int.from_bytes(fh.read(4), "little") + 4)
        while chunk := fh.read(1 << 24):
            h.update(chunk)
    digests[p] = h.hexdigest()
    print(f"p{p}: records {n} (SAM {n_sam}), idxstats {idx}, region {region}, records sha256 {digests[p][:16]}")
print("records of the decompressed BAMs identical:", len(set(digests.values())) == 1)
PY

#!/usr/bin/env bash
# Probe for issue 18 (benchmarks/RESULTS.md, "Sorting the records in memory: measured, reverted"): where the time of a
# sorted BAM goes when gseek sorts the SAM lines itself (gseek.output.bam.SortedText, tree 2a469e1, reverted in c08c61a:
# run it from a checkout of 2a469e1) and samtools view only compresses and indexes; samtools of the peer bundle
# against pysam's (the one gseek runs), from a file and from a pipe; samtools sort of the same SAM.
# Run on the GPU machine from the repository root with carry [".whl", ".carry", "benchmarks/peers/bundle"].
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
rm -rf /tmp/new; PYTHONPATH=/tmp/site python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/new . || exit 1
export PYTHONPATH=/tmp/new:/tmp/site
set --; source benchmarks/env.sh >/dev/null || exit 1
READS=${READS:-5000000}
W=/tmp/bm; rm -rf $W; mkdir -p $W; cd $W
python3 -c "
import sys; sys.path.insert(0, '$OLDPWD/benchmarks')
import datagen
datagen.kmismatch_pairs_fastq('$OLDPWD/.carry/ecoli.fa.gz', $READS, 100, 3, 'r1.fq', 'r2.fq', seed=7)"
cat r1.fq r2.fq > r.fq; rm r1.fq r2.fq
python3 -P -m gseek --quiet index $OLDPWD/.carry/ecoli.fa.gz -o ec >/dev/null
T=$(nproc); M=$((T-1))
t() { local s=$(date +%s%N); "$@"; local e=$(date +%s%N); echo "$(( (e - s) / 1000000 )) ms: $*" | tee -a times.txt; }
PS() { python3 -P -c "import sys, pysam; getattr(pysam, sys.argv[1])(*sys.argv[2:], catch_stdout=False)" "$@"; }
samtools --version | head -3 | tee -a times.txt
python3 -c "import pysam; print('pysam', pysam.__version__, 'samtools', pysam.__samtools_version__)" | tee -a times.txt
PS version | grep -i -E "deflate|libdeflate|zlib" | tee -a times.txt
t python3 -P -m gseek --quiet --device gpu -p $T search -x ec -q r.fq -v 3 -o x.sam
t python3 -P -m gseek --quiet --device gpu -p $T search -x ec -q r.fq -v 3 -o x.sam
GSEEK_TRACE_BAM=1 t python3 -P -m gseek --quiet --device gpu -p $T search -x ec -q r.fq -v 3 -o y.bam 2> trace_mem.txt
GSEEK_TRACE_BAM=1 t python3 -P -m gseek --quiet --device gpu -p $T search -x ec -q r.fq -v 3 -o z.bam --sort-memory 0 2> trace_sort.txt
cat trace_mem.txt trace_sort.txt | tee -a times.txt
python3 - <<'PY' | tee -a times.txt
import time, numpy as np
from gseek.output.bam import SortedText
import pysam
data = np.fromfile("x.sam", np.uint8)
nl = np.flatnonzero(data == 10)
starts = np.concatenate([[0], nl[:-1] + 1])
body = int(starts[np.argmax(data[starts] != ord("@"))])
header = pysam.AlignmentFile("x.sam").header
held = SortedText(list(header.references), 1 << 34)
cuts = np.searchsorted(nl, np.arange(body, data.size, 16 << 20)[1:])
ends = np.concatenate([nl[cuts] + 1, [data.size]])
t = time.time(); a = body
for e in ends:
    held.add(data[a:e]); a = e
print(f"add (keys + copy) of {held.size / 2**20:.0f} MiB: {time.time() - t:.2f} s")
t = time.time(); slices = held.sorted_slices(); print(f"argsort: {time.time() - t:.2f} s")
t = time.time()
with open("s.sam", "wb") as fh:
    fh.write(data[:body].tobytes().replace(b"SO:unsorted", b"SO:coordinate"))
    for s in slices:
        fh.write(s)
print(f"gather + write: {time.time() - t:.2f} s")
t = time.time(); n = sum(len(s) for s in held.sorted_slices()); print(f"gather only: {time.time() - t:.2f} s ({n} bytes)")
PY
t samtools view -@ $M -b -o a.bam s.sam
t samtools view -@ $M -b --write-index -o b.bam##idx##b.bam.bai s.sam
t bash -c "cat s.sam | samtools view -@ $M -b --write-index -o c.bam##idx##c.bam.bai -"
t PS view -@ $M -b -o d.bam s.sam
t PS view -@ $M -b --write-index -o e.bam##idx##e.bam.bai s.sam
t bash -c "cat s.sam | python3 -P -c \"import sys, pysam; pysam.view('-b', '-@', '$M', '--write-index', '-o', 'f.bam##idx##f.bam.bai', '-', catch_stdout=False)\""
t PS view -@ $M -b --write-index --output-fmt-option level=1 -o g.bam##idx##g.bam.bai s.sam
t PS view -@ $M -u -o h.bam s.sam
t samtools sort -@ $M --write-index -o i.bam##idx##i.bam.bai x.sam
t PS sort -@ $M --write-index -o j.bam##idx##j.bam.bai x.sam
ls -la *.bam | awk '{print $5, $9}' | tee -a times.txt
cp times.txt trace_*.txt $OUT/

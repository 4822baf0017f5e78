#!/usr/bin/env bash
# Probe for issue 18 (benchmarks/RESULTS.md, "Where a sorted BAM's time goes"): 10M reads against E. coli to SAM
# and BAM, then samtools sort of the SAM whole against in 4 and 8 position ranges (+ cat + index).
# Run on the GPU machine from the repository root with carry [".whl", ".carry", "benchmarks/peers/bundle"]
# (.carry/ecoli.fa.gz: one contig of 4,639,675 bp; the split assumes one contig); times in $OUT/times.txt.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
rm -rf /tmp/new; PYTHONPATH=/tmp/site python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/new . || exit 1
export PYTHONPATH=/tmp/new:/tmp/site
set --; source benchmarks/env.sh >/dev/null || exit 1
W=/tmp/bs; rm -rf $W; mkdir -p $W; cd $W
python3 -c "
import sys; sys.path.insert(0, '$OLDPWD/benchmarks')
import datagen
datagen.kmismatch_pairs_fastq('$OLDPWD/.carry/ecoli.fa.gz', 5000000, 100, 3, 'r1.fq', 'r2.fq', seed=7)"
cat r1.fq r2.fq > r.fq; rm r1.fq r2.fq
python3 -P -m gseek --quiet index $OLDPWD/.carry/ecoli.fa.gz -o ec >/dev/null
T=$(nproc)
t() { local s=$(date +%s%N); "$@"; local e=$(date +%s%N); echo "$(( (e - s) / 1000000 )) ms: $*" | tee -a times.txt; }
t python3 -P -m gseek --quiet --device gpu -p $T search -x ec -q r.fq -v 3 -o x.sam
t python3 -P -m gseek --quiet --device gpu -p $T search -x ec -q r.fq -v 3 -o x.sam
t python3 -P -m gseek --quiet --device gpu -p $T search -x ec -q r.fq -v 3 -o y.bam
t samtools sort -@ $((T-1)) --write-index -o a.bam##idx##a.bam.bai x.sam
t samtools sort -@ $((T-1)) -l 1 --write-index -o a1.bam##idx##a1.bam.bai x.sam
t samtools view -@ $((T-1)) -b -o u.bam x.sam
for P in 4 8; do
python3 - $P <<'PY'
import sys, numpy as np, time
P = int(sys.argv[1]); t = time.time()
data = np.fromfile("x.sam", np.uint8)
nl = np.flatnonzero(data == 10)
starts = np.concatenate([[0], nl[:-1] + 1])
head = int(np.argmax(data[starts] != ord("@")))  # first record line
hdr = data[:starts[head]].tobytes()
starts, ends = starts[head:], nl[head:] + 1
tabs = np.flatnonzero(data == 9)
i = np.searchsorted(tabs, starts)            # first tab of each line
rname0, pos0, pos1 = tabs[i + 1] + 1, tabs[i + 2] + 1, tabs[i + 3]
star = data[rname0] == ord("*")
# position digits -> int (<= 8 digits here)
L = (pos1 - pos0).astype(np.int64); pos = np.zeros(len(starts), np.int64)
for k in range(int(L.max())):
    ok = k < L
    pos[ok] = pos[ok] * 10 + (data[pos0[ok] + k] - 48)
total = 4639675 + 1
part = np.minimum(pos * P // total, P - 1)
part[star] = P - 1
print(f"split parse {time.time() - t:.1f} s", flush=True)
body = data[starts[0]:]
line_part = part.astype(np.int8)
byte_part = np.repeat(line_part, ends - starts)
for p in range(P):
    with open(f"part{p}.sam", "wb") as fh:
        fh.write(hdr)
        fh.write(body[byte_part == p].tobytes())
print(f"split total {time.time() - t:.1f} s", flush=True)
PY
S=$(( T / P )); [ $S -lt 1 ] && S=1
t bash -c "for p in \$(seq 0 $((P-1))); do samtools sort -@ $((S-1)) -o p\$p.bam part\$p.sam & done; wait"
t samtools cat -o b$P.bam $(for p in $(seq 0 $((P-1))); do echo p$p.bam; done)
t samtools index -@ $((T-1)) b$P.bam
samtools view b$P.bam | md5sum > b$P.md5; samtools view a.bam | md5sum > a.md5; cmp a.md5 b$P.md5 && echo "P=$P: same records in the same order as one sort" | tee -a times.txt
ls -la a.bam b$P.bam | awk '{print $5, $9}' | tee -a times.txt
rm -f part*.sam p*.bam
done
cp times.txt $OUT/

"""What blastn's HSPs that gseek did not match are (issue 17's recall check, at scale).

usage: python benchmarks/tools/blast_misses.py OURS.tsv BLASTN.tsv [MAX_EVALUE]

Both files as ``benchmarks/run.py blast`` writes them (``gseek.blast.compare.COMPARE_FIELDS``).
Each missed HSP (e <= MAX_EVALUE, default 1e-10; no HSP of ours on the same query, subject and
strand with 90 % reciprocal overlap) is put in one class:

- ``inside ours``: one of our HSPs covers >= 90 % of it on query and subject, but is longer
  (ours extended further, or joined what blastn reports as pieces);
- ``covers ours``: it covers >= 90 % of one of ours (blastn's is longer: ours stopped early);
- ``overlaps``: ours overlap it, neither covers the other;
- ``none``: nothing of ours on that query, subject and strand overlaps it (a seed or an
  extension lost).

Then the matched HSPs' bit-score differences (ours - blastn's). Prints a few examples of each.
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict

from gseek.blast.compare import _parse


def _cover(a0, a1, b0, b1) -> float:
    """The fraction of [a0, a1] that [b0, b1] covers."""
    inter = min(a1, b1) - max(a0, b0) + 1
    return max(0, inter) / (a1 - a0 + 1)


def main(ours_path: str, ref_path: str, max_evalue: float = 1e-10) -> None:
    with open(ours_path) as fh:
        ours = _parse(fh)
    with open(ref_path) as fh:
        ref = _parse(fh)
    by_key = defaultdict(list)
    for h in ours:
        by_key[h[:3]].append(h)
    classes, examples, diffs = Counter(), defaultdict(list), []
    for h in (h for h in ref if h[7] <= max_evalue):
        pool = by_key.get(h[:3], [])
        kind, best, match = "none", None, None
        for o in pool:
            mine_q, mine_s = _cover(h[3], h[4], o[3], o[4]), _cover(h[5], h[6], o[5], o[6])
            theirs_q, theirs_s = _cover(o[3], o[4], h[3], h[4]), _cover(o[5], o[6], h[5], h[6])
            if min(mine_q, mine_s, theirs_q, theirs_s) >= 0.9:
                if match is None or abs(o[8] - h[8]) < abs(match[8] - h[8]):
                    match = o
            elif min(mine_q, mine_s) >= 0.9:
                kind, best = "inside ours", o
            elif min(theirs_q, theirs_s) >= 0.9 and kind != "inside ours":
                kind, best = "covers ours", o
            elif min(mine_q, mine_s) > 0 and kind == "none":
                kind, best = "overlaps", o
        if match is not None:
            diffs.append((match[8] - h[8], h))
            continue
        classes[kind] += 1
        if len(examples[kind]) < 6:
            examples[kind].append((h, best))
    n = sum(classes.values())
    print(f"missed {n}: " + ", ".join(f"{k} {v}" for k, v in classes.most_common()))
    for kind, rows in examples.items():
        print(f"-- {kind}")
        for h, o in rows:
            print("  blastn " + " ".join(map(str, h)))
            if o is not None:
                print("  gseek  " + " ".join(map(str, o)))
    off = [d for d, _ in diffs if abs(d) > 1.0]
    print(f"matched {len(diffs)}: bits within 1: {len(diffs) - len(off)}; ours higher by > 1: "
          f"{sum(d > 0 for d in off)}, lower by > 1: {sum(d < 0 for d in off)}")
    hist = Counter(min(64, 2 ** max(0, int(abs(d)).bit_length() - 1)) * (1 if d > 0 else -1) for d in off)
    print("  bits difference (ours - blastn), by power of two: " +
          ", ".join(f"{k:+d}: {v}" for k, v in sorted(hist.items())))
    long_off = sorted(((abs(d), d, h) for d, h in diffs if abs(d) > 1.0), reverse=True)[:6]
    for _, d, h in long_off:
        print(f"  {d:+.1f}  blastn " + " ".join(map(str, h)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(float(a) for a in sys.argv[3:4]))

#!/usr/bin/env python3
"""One side of an A/B of the BLAST steady search (issue 40's trace-back runs): a warm searcher, REPEAT timed
searches, then the rows' and the CIGAR runs' digests; one JSON line appended to ``--out``.

    python benchmarks/archive/runs40_ab.py --index DB --queries Q.fa --tag A1 [--task megablast]
        [--device gpu] [--threads 16] [--repeat 3] [--timing] --out FILE.jsonl

Per search: the seconds of ``searcher.search(batch)`` with the device synchronised after it (as
``benchmarks/tools/profile_blast_stages.py`` times its steady searches). After them: the ``-outfmt 6`` text of
the last search (its seconds and SHA-256), then its CIGAR runs read (``hits.arrays["cigar"]``: where the runs
are gathered lazily, the seconds of that gather) and the SHA-256 of the runs and their offsets. ``--timing``:
one more search with ``GSEEK_BLAST_TIMING`` on (the searcher's stage laps, the device synchronised at each).
The tree measured is whichever ``gseek`` imports (``PYTHONPATH``). Used by ``gpu_runs40.sh``.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--tag", required=True)
    ap.add_argument("--task", default="megablast")
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timing", action="store_true")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    import gseek
    from gseek.blast.report import write_tabular
    from gseek.blast.searcher import BlastSearcher
    from gseek.seqio import read_fastx

    t = time.perf_counter()
    batch = read_fastx(args.queries)
    searcher = BlastSearcher(args.index, task=args.task, device=args.device, threads=args.threads)
    backend = searcher.backend
    rec = {"tag": args.tag, "gseek": os.path.dirname(gseek.__file__), "queries": len(batch)}
    searcher.search(batch)  # warm (first use: compiles, caches)
    backend.synchronize()
    rec["start_and_warm_s"] = time.perf_counter() - t
    searches = []
    for _ in range(args.repeat):
        backend.synchronize()
        t = time.perf_counter()
        hits = searcher.search(batch)
        backend.synchronize()
        searches.append(time.perf_counter() - t)
    rec["search_s"] = searches
    t = time.perf_counter()
    out = io.StringIO()
    write_tabular(hits, out)
    text = out.getvalue()
    rec["text_s"] = time.perf_counter() - t
    rec["hsps"], rec["rows_sha256"] = text.count("\n"), hashlib.sha256(text.encode()).hexdigest()
    t = time.perf_counter()
    cigar, offsets = hits.arrays["cigar"], hits.arrays["cigar_offsets"]
    rec["runs_read_s"] = time.perf_counter() - t
    rec["runs"] = int(cigar.size)
    rec["runs_sha256"] = hashlib.sha256(cigar.astype("<u4").tobytes() + offsets.astype("<i8").tobytes()).hexdigest()
    if args.timing:
        os.environ["GSEEK_BLAST_TIMING"] = "1"
        searcher.timings.clear()
        t = time.perf_counter()
        searcher.search(batch)
        rec["timed_search_s"] = time.perf_counter() - t
        rec["stages_s"] = {k: round(v, 4) for k, v in searcher.timings.items()}
        os.environ.pop("GSEEK_BLAST_TIMING")
    with open(args.out, "a") as f:
        f.write(json.dumps(rec) + "\n")
    print(f"{args.tag}: search {', '.join(f'{s:.3f}' for s in searches)} s; text {rec['text_s']:.2f} s; "
          f"runs read {rec['runs_read_s']:.3f} s; {rec['hsps']} rows {rec['rows_sha256'][:12]}, "
          f"runs {rec['runs_sha256'][:12]}; start+warm {rec['start_and_warm_s']:.1f} s", flush=True)


if __name__ == "__main__":
    main()

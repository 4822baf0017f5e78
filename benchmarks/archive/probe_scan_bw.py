"""The scan's share of the GPU's memory bandwidth (issue 17): the ``scan_pv`` kernel alone (CUDA events, the
median of repeats) over a database for one query batch's presence vector, its bytes read (the packed text,
the N mask's words where the database has N, the PV words it tests, at most every one), and their ratio to the
device's peak (memory clock x bus width x 2, from the device's properties).

usage: python benchmarks/archive/probe_scan_bw.py INDEX QUERIES.fa [megablast|blastn] [REPEATS=10]
"""

from __future__ import annotations

import sys

import numpy as np


def main() -> None:
    import cupy

    from gseek.blast.searcher import BlastSearcher
    from gseek.blast.seeds import _text, device_queries, scan_hits
    from gseek.kernels import blast as kblast
    from gseek.seqio import read_fastx

    index, queries = sys.argv[1], sys.argv[2]
    task = sys.argv[3] if len(sys.argv) > 3 else "megablast"
    repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 10
    searcher = BlastSearcher(index, task=task, device="gpu")
    prep = searcher.prepare(read_fastx(queries))
    b, ref, o = searcher.backend, searcher.ref, searcher.options
    with b.active():
        qs = device_queries(b, prep.seq_codes, prep.seq_off, prep.valid, prep.table)
        hits = scan_hits(b, ref, qs, o.lut_word, o.stride)  # warm-up, and the hits' count
        text, nmask, has_n, n_words = _text(b, ref)
        n_pos = (ref.n_bases - o.lut_word) // o.stride + 1
        out = cupy.empty(max(1024, int(hits.size)), dtype=np.int64)
        n_hits = cupy.zeros(1, dtype=np.int64)
        times = []
        for _ in range(repeats):
            n_hits[:] = 0
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            b.launch(kblast, "scan_pv", n_pos, text, nmask, has_n, n_words, np.int64(ref.n_bases),
                     np.int32(o.lut_word), np.int32(o.lut_word), np.int64(0), np.int32(o.stride), np.int64(0), qs.pv, out,
                     n_hits, np.int64(out.size))
            end.record()
            end.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, end) / 1000)
    props = cupy.cuda.runtime.getDeviceProperties(0)
    peak = 2 * props["memoryClockRate"] * 1e3 * props["memoryBusWidth"] / 8  # bytes/s (DDR)
    seconds = float(np.median(times))
    text_bytes = int(text.nbytes) + (int(nmask.nbytes) if int(has_n) else 0)
    pv_bytes = 4 * n_pos  # one PV word a stride position, at most (most are served by the caches)
    print(f"{prep.batch.codes.size:,} query bases ({task}); database {ref.n_bases:,} bases; {n_pos:,} stride "
          f"positions, {int(hits.size):,} PV hits")
    print(f"scan_pv: median {seconds * 1e3:.2f} ms of {repeats} (min {min(times) * 1e3:.2f}); text read "
          f"{text_bytes / 1e6:.1f} MB -> {text_bytes / seconds / 1e9:.1f} GB/s = {100 * text_bytes / seconds / peak:.1f} % "
          f"of the peak {peak / 1e12:.2f} TB/s; with a PV word a position at most "
          f"{(text_bytes + pv_bytes) / seconds / 1e9:.1f} GB/s ({100 * (text_bytes + pv_bytes) / seconds / peak:.1f} %)")


if __name__ == "__main__":
    main()

"""CPU score-only DP, all-vs-all of 60 x 1.5 kb (1,770 pairs): gseek's lane kernel vs parasail, alternately.

Issue 40's measurement (kernels/dp_lanes.py, the lane-a-pair kernel). Each round runs, in turn:

* ``parasail_aligner -x -d -t T -o 7 -e 2 -M 2 -X 3 -a sw_striped_16`` (or ``nw_striped_16``), the
  whole command, FASTA on stdin, CSV out (as ``benchmarks/suite/align.py`` runs it);
* ``gseek --device cpu -p T align --all-vs-all --mode local --score-only``, the whole command;
* the DP alone in this process: ``gseek.dp.score_pairs`` on the 1,770 pairs, ``CpuBackend(threads=T)``;
* parasail's python binding (the same C library) on the same pairs, T threads (it releases the GIL):
  the DP alone, beside gseek's.

Scores and end cells of the four are checked equal (parasail's ends are 0-based, gseek's 1-based;
parasail is called with gseek's target as its first sequence, so its column-major tie rule gives
gseek's row-major end cell). Medians and ranges over the rounds are printed as a Markdown table.

    source benchmarks/env.sh && python benchmarks/archive/ab_dp_lanes.py --rounds 5 --threads 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

SCORING = {"match": 2, "mismatch": -3, "gap_open": 5, "gap_extend": 2}
PARASAIL = {"local": "sw_striped_16", "global": "nw_striped_16"}


def family_set(prefix: str, threads: int):
    """benchmarks/suite/align.py's set of 60 in a new folder, encoded, its 1,770 pairs i < j, their cells, the
    sequences as text and parasail's matrix: (work, fasta, scoring, encoded, i, j, cells, texts, matrix)."""
    import parasail

    from gseek.align.aligner import encode_set, triangle
    from gseek.datasets import dp_families
    from gseek.dp import Scoring

    work = Path(tempfile.mkdtemp(prefix=prefix))
    fasta = work / "fam60.fa"
    dp_families(3, 20, 1500, seed=42, max_divergence=0.15).write(fasta)
    sc = Scoring(**SCORING)
    s = encode_set(fasta, sc, "s")
    n = len(s)
    i, j = triangle(np.arange(n * (n - 1) // 2), n)
    cells = float((s.lengths[i].astype(np.float64) * s.lengths[j]).sum())
    texts = ["".join("ACGTN"[c] for c in s.codes[s.offsets[k]:s.offsets[k + 1]]) for k in range(n)]
    matrix = parasail.matrix_create("ACGTN", SCORING["match"], SCORING["mismatch"])
    print(f"# {n} sequences, {i.size:,} pairs, {cells:.3g} cells; {threads} threads; load {os.getloadavg()}",
          file=sys.stderr)
    return work, fasta, sc, s, i, j, cells, texts, matrix


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--modes", default="local,global")
    args = p.parse_args()
    from gseek.backend import CpuBackend
    from gseek.dp import dp_flags, score_pairs

    T = str(args.threads)
    work, fasta, sc, s, i, j, cells, texts, matrix = family_set("gseek-dp-lanes-", args.threads)
    o_e = SCORING["gap_open"] + SCORING["gap_extend"]
    backend = CpuBackend(threads=args.threads)
    import parasail

    rows = []
    for mode in args.modes.split(","):
        flags = dp_flags(mode, ())
        stage = (s.codes, s.offsets[i], s.lengths[i], s.offsets[j], s.lengths[j], sc, flags)
        gseek_cmd = [sys.executable, "-P", "-m", "gseek", "--quiet", "--device", "cpu", "-p", T, "align", "-i",
                     str(fasta), "--all-vs-all", "--mode", mode, "--score-only", "--match", "2", "--mismatch", "-3",
                     "--gap-open", "5", "--gap-extend", "2", "-o", str(work / "g.tsv")]
        peer_cmd = ["parasail_aligner", "-x", "-d", "-t", T, "-o", str(o_e), "-e", str(SCORING["gap_extend"]),
                    "-M", str(SCORING["match"]), "-X", str(-SCORING["mismatch"]), "-a", PARASAIL[mode], "-g",
                    str(work / "p.csv")]
        function = getattr(parasail, PARASAIL[mode])

        def peer_python():
            def one(k):
                r = function(texts[j[k]], texts[i[k]], o_e, SCORING["gap_extend"], matrix)
                return r.score, r.end_ref + 1, r.end_query + 1
            with ThreadPoolExecutor(args.threads) as pool:
                return list(pool.map(one, range(i.size), chunksize=16))

        subprocess.run(gseek_cmd, check=True)  # warm: Numba's cache
        score_pairs(backend, *stage)
        times: dict[str, list[float]] = {k: [] for k in ("peer", "gseek", "gseek_dp", "peer_dp")}
        for _ in range(args.rounds):
            t = time.perf_counter()
            with open(fasta) as fh:
                subprocess.run(peer_cmd, stdin=fh, check=True, stdout=subprocess.DEVNULL)
            times["peer"].append(time.perf_counter() - t)
            t = time.perf_counter()
            subprocess.run(gseek_cmd, check=True)
            times["gseek"].append(time.perf_counter() - t)
            res = timed(times["gseek_dp"], score_pairs, backend, *stage)
            theirs = timed(times["peer_dp"], peer_python)
        ours = list(zip(res["score"].tolist(), res["q_end"].tolist(), res["t_end"].tolist()))
        peer_csv = np.loadtxt(work / "p.csv", delimiter=",", dtype=np.int64, ndmin=2)
        peer_scores = dict(((int(a), int(b)), int(c)) for a, b, c in peer_csv[:, [0, 1, 4]])
        tsv = [line.split("\t") for line in (work / "g.tsv").read_text().splitlines()[1:]]
        same = {
            "gseek command = in-process": [int(r[2]) for r in tsv] == res["score"].tolist(),
            "parasail_aligner scores": [peer_scores[(a, b)] for a, b in zip(i.tolist(), j.tolist())]
            == res["score"].tolist(),
            "parasail python scores and end cells": theirs == ours if mode == "local" else
            [x[0] for x in theirs] == res["score"].tolist(),
        }
        print(f"# {mode}: " + "; ".join(f"{k}: {'equal' if v else 'DIFFER'}" for k, v in same.items()),
              file=sys.stderr)
        for key, label in (("peer", f"parasail_aligner -t {T} -a {PARASAIL[mode]} (whole command)"),
                           ("gseek", f"gseek --device cpu -p {T} align --mode {mode} --score-only (whole command)"),
                           ("peer_dp", f"parasail python {PARASAIL[mode]}, {T} threads (DP only)"),
                           ("gseek_dp", f"gseek score_pairs, CpuBackend(threads={T}) (DP only)")):
            xs = times[key]
            rows.append((mode, label, statistics.median(xs), min(xs), max(xs), cells / statistics.median(xs) / 1e9))
        rows += ratio_rows(mode, times)
    print_table(rows)


def timed(times: list[float], function, *args):
    """``function(*args)``, its seconds appended to ``times``."""
    t = time.perf_counter()
    result = function(*args)
    times.append(time.perf_counter() - t)
    return result


def ratio_rows(mode: str, times: dict[str, list[float]]) -> list[tuple]:
    """The rows of gseek's medians over parasail's: the DP alone, the whole command."""
    return [(mode, "**gseek DP / parasail DP**", statistics.median(times["gseek_dp"])
             / statistics.median(times["peer_dp"]), None, None, None),
            (mode, "**gseek command / parasail_aligner**", statistics.median(times["gseek"])
             / statistics.median(times["peer"]), None, None, None)]


def print_table(rows: list[tuple]) -> None:
    """The rows (mode, run, median, min, max, GCUPS; a ratio row: min None) as a Markdown table."""
    print("| mode | run | median s | min s | max s | GCUPS |\n|---|---|--:|--:|--:|--:|")
    for mode, label, med, lo, hi, g in rows:
        if lo is None:
            print(f"| {mode} | {label} | {med:.2f}x | | | |")
        else:
            print(f"| {mode} | {label} | {med:.3f} | {lo:.3f} | {hi:.3f} | {g:.2f} |")
    print(f"# load after: {os.getloadavg()}", file=sys.stderr)


if __name__ == "__main__":
    main()

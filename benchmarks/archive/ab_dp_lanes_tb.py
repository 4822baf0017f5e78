"""CPU trace-back DP, all-vs-all of 60 x 1.5 kb (1,770 pairs): gseek vs parasail's trace kernels, alternately.

Issue 40's measurement of ``gseek align --traceback`` on the CPU (the lane-a-pair fill of
``kernels/dp_lanes.py``; before it, the one-pair kernel of ``kernels/dp.py``). Each round runs, in turn:

* ``parasail_aligner -x -d -t T -o 7 -e 2 -M 2 -X 3 -a sw_trace_striped_16 -O SAM -b 1000`` (or
  ``nw_trace_striped_16``), the whole command, FASTA on stdin (as ``benchmarks/suite/align.py`` runs it);
* ``gseek --device cpu -p T align --all-vs-all --mode MODE --traceback``, the whole command
  (``--before GSEEK``: also that executable's, e.g. main's checkout, the one-pair fill, without this
  process's ``PYTHONPATH``: run with ``PYTHONPATH`` naming a copy of this tree, the code under test stays
  fixed while the checkout changes);
* the DP alone in this process: ``gseek.dp.traceback_pairs`` on the 1,770 pairs, ``CpuBackend(threads=T)``;
* with ``--one-pair N``: the same on N of the pairs with the lanes turned off (the one-pair kernels);
* parasail's python binding (the same C library) on the same pairs, T threads (it releases the GIL):
  score and CIGAR of each pair, the DP alone beside gseek's.

Checked: gseek's command = gseek in process (scores, CIGARs); parasail's scores = gseek's; how many
CIGARs equal parasail's (parasail called with gseek's target first, as ``ab_dp_lanes.py`` does: its I and
D then read swapped). Medians and ranges over the rounds are printed as a Markdown table.

    source /work/main/benchmarks/env.sh && python benchmarks/archive/ab_dp_lanes_tb.py --rounds 3 --threads 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from ab_dp_lanes import SCORING, family_set, print_table, ratio_rows, timed  # noqa: E402  (the same set and scores)

PARASAIL = {"local": "sw_trace_striped_16", "global": "nw_trace_striped_16"}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--modes", default="local,global")
    p.add_argument("--before", default=None, help="another gseek executable to time beside this one")
    p.add_argument("--one-pair", type=int, default=0, help="pairs for the one-pair kernels' run (0: none)")
    args = p.parse_args()
    from gseek.backend import CpuBackend
    from gseek.dp import dp_flags, nwsw, traceback_pairs
    from gseek.output.cigar import cigar_strings

    T = str(args.threads)
    work, fasta, sc, s, i, j, cells, texts, matrix = family_set("gseek-dp-lanes-tb-", args.threads)
    o_e = SCORING["gap_open"] + SCORING["gap_extend"]
    backend = CpuBackend(threads=args.threads)
    import parasail
    one_pair = np.arange(min(args.one_pair, i.size))
    one_cells = float((s.lengths[i[one_pair]].astype(np.float64) * s.lengths[j[one_pair]]).sum())

    def lanes_off(backend, codes, q_off, q_len, *rest):
        return np.zeros(q_len.size, bool), None

    rows = []
    for mode in args.modes.split(","):
        flags = dp_flags(mode, ())
        stage = (s.codes, s.offsets[i], s.lengths[i], s.offsets[j], s.lengths[j], sc, flags)
        options = ["--quiet", "--device", "cpu", "-p", T, "align", "-i", str(fasta), "--all-vs-all", "--mode", mode,
                   "--traceback", "--match", "2", "--mismatch", "-3", "--gap-open", "5", "--gap-extend", "2"]
        commands = {"gseek": [sys.executable, "-P", "-m", "gseek", *options, "-o", str(work / "g.tsv")]}
        if args.before:
            commands["before"] = [args.before, *options, "-o", str(work / "b.tsv")]
        commands["peer"] = ["parasail_aligner", "-x", "-d", "-t", T, "-o", str(o_e), "-e",
                            str(SCORING["gap_extend"]), "-M", str(SCORING["match"]), "-X",
                            str(-SCORING["mismatch"]), "-a", PARASAIL[mode], "-O", "SAM", "-b", "1000", "-g",
                            str(work / "p.sam")]
        function = getattr(parasail, PARASAIL[mode])

        def peer_python():
            def one(k):
                r = function(texts[j[k]], texts[i[k]], o_e, SCORING["gap_extend"], matrix)
                return r.score, r.cigar.decode.decode()
            with ThreadPoolExecutor(args.threads) as pool:
                return list(pool.map(one, range(i.size), chunksize=16))

        # --before runs its own installation: not this process's PYTHONPATH (where it names a tree to time)
        envs = {"before": {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}}
        for key, cmd in commands.items():  # warm: Numba's cache
            if cmd[0] != "parasail_aligner":
                subprocess.run(cmd, check=True, env=envs.get(key))
        traceback_pairs(backend, *stage)
        times: dict[str, list[float]] = {k: [] for k in [*commands, "gseek_dp", "peer_dp", "one_pair_dp"]}
        for _ in range(args.rounds):
            for key, cmd in commands.items():
                t = time.perf_counter()
                with open(fasta) as fh:
                    subprocess.run(cmd, stdin=fh, check=True, stdout=subprocess.DEVNULL, env=envs.get(key))
                times[key].append(time.perf_counter() - t)
            res = timed(times["gseek_dp"], traceback_pairs, backend, *stage)
            theirs = timed(times["peer_dp"], peer_python)
            if one_pair.size:
                real = nwsw._lanes
                nwsw._lanes = lanes_off
                try:
                    part = tuple(a[one_pair] if isinstance(a, np.ndarray) and a.size == i.size else a for a in stage)
                    old = timed(times["one_pair_dp"], traceback_pairs, backend, *part)
                finally:
                    nwsw._lanes = real
                for key in old:
                    sl = slice(None) if key in ("cigar", "cigar_offsets") else one_pair
                    if key not in ("cigar", "cigar_offsets") and not np.array_equal(old[key], res[key][sl]):
                        print(f"# {mode}: one-pair kernels' {key} DIFFER", file=sys.stderr)
                old_cig = cigar_strings(old["cigar"], old["cigar_offsets"], False)
                new_cig = cigar_strings(res["cigar"], res["cigar_offsets"], False)
                if [old_cig[k] for k in range(one_pair.size)] != [new_cig[k] for k in range(one_pair.size)]:
                    print(f"# {mode}: one-pair kernels' CIGARs DIFFER", file=sys.stderr)
        cigars = cigar_strings(res["cigar"], res["cigar_offsets"], False)
        ours = [cigars[k] for k in range(i.size)]
        swap = str.maketrans("ID", "DI")
        tsv = [line.split("\t") for line in (work / "g.tsv").read_text().splitlines()[1:]]
        same = {
            "gseek command = in-process (scores)": [int(r[2]) for r in tsv] == res["score"].tolist(),
            "parasail python scores": [x[0] for x in theirs] == res["score"].tolist(),
        }
        equal_cigars = sum(x[1].translate(swap) == c for x, c in zip(theirs, ours))
        print(f"# {mode}: " + "; ".join(f"{k}: {'equal' if v else 'DIFFER'}" for k, v in same.items())
              + f"; CIGARs equal to parasail's: {equal_cigars} of {i.size}", file=sys.stderr)
        labels = {"peer": f"parasail_aligner -t {T} -a {PARASAIL[mode]} -O SAM (whole command)",
                  "gseek": f"gseek --device cpu -p {T} align --mode {mode} --traceback (whole command)",
                  "before": f"{args.before} (whole command, the one-pair fill)",
                  "peer_dp": f"parasail python {PARASAIL[mode]}, {T} threads (DP only)",
                  "gseek_dp": f"gseek traceback_pairs, CpuBackend(threads={T}) (DP only)",
                  "one_pair_dp": f"gseek traceback_pairs, lanes off, {one_pair.size} pairs (DP only)"}
        for key, label in labels.items():
            xs = times.get(key)
            if xs:
                c = one_cells if key == "one_pair_dp" else cells
                rows.append((mode, label, statistics.median(xs), min(xs), max(xs), c / statistics.median(xs) / 1e9))
        rows += ratio_rows(mode, times)
    print_table(rows)


if __name__ == "__main__":
    main()

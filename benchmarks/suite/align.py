"""`align`: all-vs-all batched DP, whole commands, GCUPS by mode against parasail_aligner (issue 4)."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import harness
from .harness import markdown_table, ratio
from .registry import benchmark, Report
from .common import count_rows, gcups, numba_cache_env


#: The issue's DNA scoring; a gap of k bases costs gap_open + k * gap_extend
#: (parasail's open is therefore gap_open + gap_extend).
ALIGN_SCORING = {"match": 2, "mismatch": -3, "gap_open": 5, "gap_extend": 2}
#: The lazy run keeps pairs at least this identical (`gseek align --min-identity`).
LAZY_MIN_IDENTITY = 0.97
#: parasail_aligner -b for its trace functions (alignments held before output is written).
PARASAIL_TRACE_BATCH = 1000
#: Sequences of the untimed warm-up run of each gseek command (Numba / kernel caches).
ALIGN_WARMUP_SEQS = 20


@dataclass(frozen=True)
class AlignRun:
    """One kind of all-vs-all run: gseek's options and the parasail function that does the same."""

    mode: str  # gseek --mode
    options: tuple[str, ...]  # further gseek align options
    traceback: bool  # a trace-back run (only on sets up to --tb-max-seqs)
    parasail: str | None  # parasail_aligner -a FUNC; None: no parasail run of its own
    baseline: str  # the run whose parasail row 'vs parasail' compares with


ALIGN_RUNS: dict[str, AlignRun] = {
    "local-score": AlignRun("local", ("--score-only",), False, "sw_striped_16", "local-score"),
    "global-score": AlignRun("global", ("--score-only",), False, "nw_striped_16", "global-score"),
    "local-tb": AlignRun("local", ("--traceback",), True, "sw_trace_striped_16", "local-tb"),
    "global-tb": AlignRun("global", ("--traceback",), True, "nw_trace_striped_16", "global-tb"),
    # score every pair, trace back only those that can pass; parasail has no such mode, so
    # it is set beside the full global trace-back a parasail user would filter
    "lazy": AlignRun("global", ("--min-identity", str(LAZY_MIN_IDENTITY)), False, None, "global-tb"),
}


def _int_list(text: str) -> list[int]:
    try:
        values = [int(x.replace("_", "")) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers like 1000,10000, not {text!r}") from None
    if not values or min(values) < 2:
        raise argparse.ArgumentTypeError(f"need at least one set of >= 2 sequences, not {text!r}")
    return values


def _align_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seqs", type=_int_list, default=[1000, 10000],
                   help="sizes of the all-vs-all sets, comma-separated (default 1000,10000)")
    p.add_argument("--length", type=int, default=1500, help="ancestor length in bp (default 1500, 16S-like)")
    p.add_argument("--families-of", type=int, default=20, help="members per family (default 20)")
    p.add_argument("--max-divergence", type=float, default=0.15,
                   help="a member's divergence from its ancestor is uniform in [0, this] (default 0.15)")
    p.add_argument("--seed", type=int, default=42, help="seed of dp_families (default 42)")
    p.add_argument("--threads", type=int, default=os.cpu_count(),
                   help="gseek -p and parasail_aligner -t (default: all cores)")
    p.add_argument("--devices", default="gpu,cpu", help="gseek backends to time (default gpu,cpu)")
    p.add_argument("--runs", default=",".join(ALIGN_RUNS),
                   help=f"comma-separated subset of {','.join(ALIGN_RUNS)} (default all)")
    p.add_argument("--tb-max-seqs", type=int, default=1000,
                   help="trace-back runs (local-tb, global-tb) only on sets up to this size (default 1000)")
    p.add_argument("--peer-max-seqs", type=int, default=2000,
                   help="parasail on a larger set runs on its first N sequences only (default 2000)")
    p.add_argument("--peers", default="parasail", help="parasail, or none (default parasail)")


def _pair_key(i: int, j: int, n: int) -> int:
    """Index of pair (i, j), i < j < n, in the row-major upper triangle."""
    if i > j:
        i, j = j, i
    return i * (2 * n - i - 1) // 2 + (j - i - 1)


def _cells_all_vs_all(lengths: list[int]) -> int:
    """Sum of m * n over the pairs i < j (exact, Python integers)."""
    total = sum(lengths)
    return (total * total - sum(x * x for x in lengths)) // 2


def _passes_identity(matches: int, columns: int) -> bool:
    """gseek's rule: matches / alignment columns >= the threshold (1e-12 slack)."""
    return columns > 0 and matches / columns >= LAZY_MIN_IDENTITY - 1e-12


def _no_scores(n: int):
    """One int32 per pair of ``n`` sequences (triangle order), INT32_MIN = not reported."""
    import numpy as np

    return np.full(n * (n - 1) // 2, np.iinfo(np.int32).min, dtype=np.int32)


def _gseek_table(path: Path, index: dict[str, int], n: int, limit: int, traceback: bool):
    """From a gseek align TSV of a set of ``n``: the scores of the pairs among its first
    ``limit`` sequences (:func:`_no_scores` array), the keys of all pairs passing
    LAZY_MIN_IDENTITY (trace-back tables), and the rows."""
    scores = _no_scores(n)
    passing: set[int] = set()
    rows = 0
    with open(path) as fh:
        header = fh.readline().lstrip("#").rstrip("\n").split("\t")
        col = {name: k for k, name in enumerate(header)}
        s, m, x, g = (col.get(c) for c in ("score", "matches", "mismatches", "gaps"))
        for line in fh:
            rows += 1
            parts = line.split("\t") if traceback else line.split("\t", s + 1)
            i, j = index[parts[0]], index[parts[1]]
            if not traceback and i >= limit:  # rows come in triangle order: the rest is beyond the subset
                while chunk := fh.read(1 << 24):
                    rows += chunk.count("\n")
                break
            if i < limit and j < limit:
                scores[_pair_key(i, j, n)] = int(parts[s])
            if traceback and _passes_identity(int(parts[m]), int(parts[m]) + int(parts[x]) + int(parts[g])):
                passing.add(_pair_key(i, j, n))
    return scores, passing, rows


_CIGAR_RUN = re.compile(r"(\d+)([MIDNSHP=X])")


def _parasail_table(path: Path, names: list[str], n: int, sam: bool):
    """The same three things from parasail_aligner's output on (the first sequences of) a set
    of ``n``: its CSV (``i,j,len_i,len_j,score,end_i,end_j``, 0-based sequence numbers in
    file order, i < j, i the query, ends inclusive) or SAM (``-O SAM``: read = query, RNAME =
    target; no AS tag and flag 4 where the score is 0)."""
    import numpy as np

    scores = _no_scores(n)
    passing: set[int] = set()
    if not sam:
        table = np.loadtxt(path, delimiter=",", dtype=np.int64, ndmin=2) if path.stat().st_size else \
            np.zeros((0, 7), np.int64)
        i, j = np.minimum(table[:, 0], table[:, 1]), np.maximum(table[:, 0], table[:, 1])
        scores[i * (2 * n - i - 1) // 2 + (j - i - 1)] = table[:, 4]
        return scores, passing, len(table)
    index = {name: k for k, name in enumerate(names)}
    rows = 0
    with open(path) as fh:
        for line in fh:
            if line.startswith("@"):
                continue
            rows += 1
            parts = line.rstrip("\n").split("\t")
            key = _pair_key(index[parts[0]], index[parts[2]], n)
            tag = next((t for t in parts[11:] if t.startswith("AS:i:")), None)
            scores[key] = int(tag[5:]) if tag else 0
            runs = [(int(k), op) for k, op in _CIGAR_RUN.findall(parts[5])]
            matches = sum(k for k, op in runs if op == "=")
            if _passes_identity(matches, sum(k for k, op in runs if op in "=XID")):
                passing.add(key)
    return scores, passing, rows


def _parasail_verbose(text: str) -> dict:
    """The figures parasail_aligner -v prints (on stdout): its alignment time, cells, pairs."""
    found = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, words = key.strip(), value.split()
        if not words:
            continue
        if key == "alignment time":
            found["align_s"] = float(words[0])
        elif key == "work":
            found["work_cells"] = int(words[0])
        elif key == "unique pairs":
            found["pairs"] = int(words[0])
        elif key == "file":
            found["file"] = words[0]
    return found


def _compare_scores(label: str, ours, theirs, names: list[str], n: int) -> tuple[str, bool]:
    """'scores equal N/N' over every pair parasail reported, with a few differing pairs."""
    import numpy as np

    missing = np.iinfo(np.int32).min
    reported = np.flatnonzero(theirs != missing)
    absent = int((ours[reported] == missing).sum())
    differ = reported[(ours[reported] != theirs[reported]) & (ours[reported] != missing)]
    same = reported.size - absent - differ.size
    text = f"{label}: scores equal {same:,}/{reported.size:,}"
    if absent:
        text += f"; {absent:,} pairs parasail reported are not in gseek's output"
    if differ.size:
        row_start = np.array([_pair_key(i, i + 1, n) for i in range(n)] + [n * (n - 1) // 2])
        examples = []
        for key in differ[:3]:
            i = int(np.searchsorted(row_start, key, side="right") - 1)
            j = int(key - row_start[i] + i + 1)
            examples.append(f"{names[i]} × {names[j]}: gseek {ours[key]}, parasail {theirs[key]}")
        text += f"; **{differ.size:,} differ**, e.g. " + "; ".join(examples)
    return text, same == reported.size and reported.size > 0


def _write_subset(fam, n: int, path: Path) -> None:
    """The first ``n`` members of ``fam`` as FASTA (and its truth TSV next to it)."""
    from gseek.datasets import SimulatedFamilies

    SimulatedFamilies(fam.records[:n], fam.ancestors, fam.truth[:n], fam.edits[:n]).write(path)


@benchmark("align", "all-vs-all DP of 16S-like families, whole command, GCUPS by mode: gseek vs parasail_aligner",
           _align_options)
def bench_align(args: argparse.Namespace) -> Report:
    import hashlib
    import shutil

    from gseek.datasets import dp_families

    runs = [r.strip() for r in args.runs.split(",") if r.strip()]
    devices = [d.strip() for d in args.devices.split(",") if d.strip()]
    peers = {p.strip() for p in args.peers.split(",") if p.strip()} - {"none"}
    for what, given, known in (("run", runs, ALIGN_RUNS), ("device", devices, ("gpu", "cpu")),
                               ("peer", peers, ("parasail",))):
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise SystemExit(f"run.py align: unknown {what}(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    if args.families_of < 1 or args.length < 1 or args.threads < 1 or args.peer_max_seqs < 2:
        raise SystemExit("run.py align: --families-of, --length and --threads must be >= 1, --peer-max-seqs >= 2")
    extra_notes: list[str] = []
    if "gpu" in devices and harness.gpu_name() == "none":
        devices.remove("gpu")
        extra_notes.append("no GPU on this host: gseek --device gpu not run")

    with harness.scratch_dir("gseek-align-bench-") as work:
        env = harness.peer_env_or_host("align", "gseek only") if peers else dict(os.environ)
        env = numba_cache_env(env)
        if peers and shutil.which("parasail_aligner", path=env.get("PATH")) is None:
            extra_notes.append("parasail_aligner not found: gseek only")
            peers = set()
        T = str(args.threads)
        s = ALIGN_SCORING
        scoring = ["--match", str(s["match"]), "--mismatch", str(s["mismatch"]), "--gap-open", str(s["gap_open"]),
                   "--gap-extend", str(s["gap_extend"])]

        def gseek_cmd(device: str, run: AlignRun, fasta: Path, out: Path) -> list[str]:
            return [sys.executable, "-P", "-m", "gseek", "--quiet", "--device", device, "-p", T, "align",
                    "-i", str(fasta), "--all-vs-all", "--mode", run.mode, *run.options, *scoring, "-o", str(out)]

        def parasail_cmd(function: str, out: Path) -> list[str]:
            cmd = ["parasail_aligner", "-x", "-d", "-t", T, "-o", str(s["gap_open"] + s["gap_extend"]),
                   "-e", str(s["gap_extend"]), "-M", str(s["match"]), "-X", str(-s["mismatch"]), "-a", function,
                   "-g", str(out)]
            # trace functions keep every alignment's trace table until a batch is written: at the
            # default batch (by half the free memory) 16 threads were killed for memory on 1,000 x 1.5 kb
            return cmd + (["-O", "SAM", "-b", str(PARASAIL_TRACE_BATCH)] if "trace" in function else []) + ["-v"]

        largest = max(args.seqs)
        t0 = time.perf_counter()
        fam = dp_families(-(-largest // args.families_of), args.families_of, args.length, seed=args.seed,
                          max_divergence=args.max_divergence)
        names = [name for name, _ in fam.records]
        lengths = [len(seq) for _, seq in fam.records]
        print(f"  align: {largest:,} sequences simulated in {time.perf_counter() - t0:.1f} s", file=sys.stderr)

        warm = work / "warmup.fa"
        _write_subset(fam, min(ALIGN_WARMUP_SEQS, largest), warm)
        for device in devices:
            for name in runs:
                print(f"  align: warm-up gseek --device {device} {name} ...", file=sys.stderr, flush=True)
                harness.run_process(gseek_cmd(device, ALIGN_RUNS[name], warm, work / "warmup.out"), env=env)

        results: list[dict] = []
        data: dict = {"sets": [], "scoring": s, "families_of": args.families_of, "length": args.length,
                      "max_divergence": args.max_divergence, "seed": args.seed}
        agreement: list[str] = []
        all_agree = True
        for n in sorted(set(args.seqs)):
            fasta = work / f"fam{n}.fa"
            _write_subset(fam, n, fasta)
            n_peer = min(n, args.peer_max_seqs)
            peer_fasta = fasta if n_peer == n else work / f"fam{n}_first{n_peer}.fa"
            if peer_fasta != fasta:
                _write_subset(fam, n_peer, peer_fasta)
            cells = _cells_all_vs_all(lengths[:n])
            peer_cells = _cells_all_vs_all(lengths[:n_peer])
            data["sets"].append({"sequences": n, "bases": sum(lengths[:n]), "pairs": n * (n - 1) // 2,
                                 "cells": cells, "sha256": hashlib.sha256(fasta.read_bytes()).hexdigest()})
            index = {name: k for k, name in enumerate(names[:n])}
            passing: dict[tuple[str, str], set[int]] = {}  # (run, tool) -> pairs >= LAZY_MIN_IDENTITY
            lazy_rows: dict[str, int] = {}
            for name in runs:
                run = ALIGN_RUNS[name]
                if run.traceback and n > args.tb_max_seqs:
                    continue
                peer_scores = None
                if "parasail" in peers and run.parasail:
                    out = work / f"parasail-{name}.{'sam' if run.traceback else 'csv'}"
                    cmd = parasail_cmd(run.parasail, out)
                    print(f"  align: parasail_aligner -a {run.parasail} on {n_peer:,} of {n:,} ...", file=sys.stderr,
                          flush=True)
                    proc = harness.run_process(cmd, env=env, stdin=peer_fasta)  # it reads the FASTA on stdin
                    own = _parasail_verbose(proc.stdout + proc.stderr)
                    peer_scores, peer_pass, rows = _parasail_table(out, names, n, run.traceback)
                    out.unlink()
                    passing[(name, "parasail")] = peer_pass
                    peer_pairs = n_peer * (n_peer - 1) // 2
                    if (own.get("file"), own.get("pairs"), own.get("work_cells")) != ("stdin", peer_pairs, peer_cells):
                        all_agree = False
                        extra_notes.append(f"**parasail {run.parasail} on {n_peer:,}: read {own.get('file')}, "
                                           f"{own.get('pairs')} pairs, {own.get('work_cells')} cells; expected "
                                           f"stdin, {peer_pairs:,} pairs, {peer_cells:,} cells**")
                    results.append({"run": name, "tool": "parasail", "device": "cpu", "sequences": n_peer, "set": n,
                                    "pairs": peer_pairs, "cells": peer_cells,
                                    "label": f"parasail_aligner -t {T} -a {run.parasail}"
                                             + (" -O SAM" if run.traceback else ""),
                                    "command": shlex.join(cmd) + f" < {peer_fasta.name}", "seconds": proc.seconds,
                                    "cpu_s": proc.cpu_s, "peak_rss_mib": proc.peak_rss_mib, "rows": rows,
                                    # Debian's 2.6 build prints 0.0000 s for every timer: then unknown
                                    "own_align_s": own.get("align_s") or None,
                                    "own_align_s_printed": own.get("align_s"), "own_work_cells": own.get("work_cells")})
                for device in devices:
                    out = work / f"gseek-{device}-{name}.tsv"
                    cmd = gseek_cmd(device, run, fasta, out)
                    print(f"  align: gseek --device {device} {name} on {n:,} ...", file=sys.stderr, flush=True)
                    proc = harness.run_process(cmd, env=env)
                    if peer_scores is not None or run.traceback or name == "lazy":
                        limit = n_peer if peer_scores is not None else n
                        scores, tb_pass, rows = _gseek_table(out, index, n, limit, run.traceback or name == "lazy")
                        passing[(name, device)] = tb_pass
                    else:
                        rows = count_rows(out)
                    out.unlink()
                    if name == "lazy":
                        lazy_rows[device] = rows
                    label = f"gseek --device {device} align --mode {run.mode} {' '.join(run.options)}"
                    results.append({"run": name, "tool": "gseek", "device": device, "sequences": n, "set": n,
                                    "pairs": n * (n - 1) // 2, "cells": cells, "label": label,
                                    "command": shlex.join(cmd), "seconds": proc.seconds, "cpu_s": proc.cpu_s,
                                    "peak_rss_mib": proc.peak_rss_mib, "rows": rows, "own_align_s": None})
                    if peer_scores is not None:
                        subset = f" (the first {n_peer:,} of {n:,})" if n_peer < n else ""
                        text, ok = _compare_scores(f"{name}, {n_peer:,} sequences{subset}, gseek --device {device} vs "
                                                   f"parasail {run.parasail}", scores, peer_scores, names, n)
                        agreement.append(text)
                        all_agree &= ok
            for device in devices:
                lazy, full = passing.get(("lazy", device)), passing.get(("global-tb", device))
                if lazy is None or full is None:
                    continue
                same = lazy == full and lazy_rows[device] == len(lazy)
                all_agree &= same
                text = (f"lazy, {n:,} sequences, gseek --device {device}: {lazy_rows[device]:,} rows, "
                        f"{'the same pairs as' if same else '**not the same pairs as**'} the {len(full):,} of its "
                        f"full global trace-back with identity >= {LAZY_MIN_IDENTITY}")
                theirs = passing.get(("global-tb", "parasail"))
                if theirs is not None and n_peer == n:
                    text += f" (parasail nw_trace_striped_16's CIGARs: {len(theirs):,} pairs pass"
                    if theirs != lazy:
                        text += (f", {len(theirs ^ lazy):,} pairs not in both: an equal score can come with a "
                                 "CIGAR of another identity")
                    text += ")"
                agreement.append(text)
        short = [r for r in results if r["run"] != "lazy" and r["rows"] != r["pairs"]]
        all_agree &= not short
        agreement.append("rows: every command but lazy wrote one row per pair" if not short else
                         "**rows: not one per pair from " + "; ".join(f"{r['label']} on {r['sequences']:,} "
                                                                      f"({r['rows']:,} of {r['pairs']:,})"
                                                                      for r in short) + "**")
        if not all_agree:
            print("# warning: the tools' results disagree (see the notes)", file=sys.stderr, flush=True)

        peer_of = {(r["set"], r["run"]): r for r in results if r["tool"] == "parasail"}
        rows = []
        for r in sorted(results, key=lambda r: (r["set"], list(ALIGN_RUNS).index(r["run"]), r["tool"] != "gseek")):
            base = peer_of.get((r["set"], ALIGN_RUNS[r["run"]].baseline))
            if base is None:
                versus = "-"
            elif base["pairs"] == r["pairs"]:
                versus = ratio(base["seconds"], r["seconds"])
            else:  # parasail ran on the first sequences only: compare cell rates
                versus = f"{(r['cells'] / r['seconds']) / (base['cells'] / base['seconds']):.2f}x GCUPS"
            if r["run"] != ALIGN_RUNS[r["run"]].baseline and versus != "-":
                versus += f" (vs {ALIGN_RUNS[ALIGN_RUNS[r['run']].baseline].parasail})"
            seqs = f"{r['sequences']:,}" + (f" of {r['set']:,}" if r["sequences"] != r["set"] else "")
            own = r["own_align_s"]
            rows.append([r["run"], r["label"], seqs, f"{r['pairs']:,}", f"{r['cells']:.3g}", f"{r['seconds']:.2f}",
                         gcups(r["cells"], r["seconds"]), f"{own:.2f}" if own is not None else "-",
                         gcups(r["cells"], own), f"{r['rows']:,}", versus])
        table = markdown_table(["run", "command", "sequences", "pairs", "cells", "wall s", "GCUPS", "own align s",
                                "GCUPS (own)", "rows written", "vs parasail"], rows, align="llrrrrrrrrr")
        notes = [
            f"all-vs-all (pairs i < j) of dp_families sequences: {args.families_of} members per family drawn "
            f"from a random {args.length} bp ancestor, divergence uniform in [0, {args.max_divergence}] (90% "
            f"substitutions, 10% indel bases), seed {args.seed}; a set of N is the first N members; DNA, match "
            f"{s['match']} / mismatch {s['mismatch']} / a gap of k bases costs {s['gap_open']} + {s['gap_extend']}k "
            f"(parasail_aligner -o {s['gap_open'] + s['gap_extend']} -e {s['gap_extend']} -M {s['match']} "
            f"-X {-s['mismatch']})",
            "wall s = the whole command from process start (interpreter, imports, reading the FASTA, DP, writing "
            "every row) after one untimed warm-up run of each gseek command on "
            f"{ALIGN_WARMUP_SEQS} sequences (Numba and kernel caches on disk warm); each command run once; "
            "GCUPS = cells (sum of m*n over the pairs) / seconds / 1e9",
            f"trace-back runs only on sets up to {args.tb_max_seqs:,} sequences",
            f"lazy = `--mode global --min-identity {LAZY_MIN_IDENTITY}`: every pair scored, trace-back only of "
            f"pairs whose score allows {LAZY_MIN_IDENTITY:.0%} identity; its cells are all pairs' cells",
        ]
        if peer_of:
            zero = [r for r in peer_of.values() if r["own_align_s_printed"] == 0.0]
            notes += [
                "own align s = the tool's own figure: parasail_aligner -v's 'alignment time' (the DP of all "
                "pairs, without reading input and writing output); gseek reports none"
                + (f"; parasail printed 0.0000 s for {len(zero)} of {len(peer_of)} runs (this build's timers "
                   "all print 0.0000: read and pack, enumerate, alignment), shown as '-'" if zero else ""),
                f"parasail_aligner 2.6 (Debian) with -x (no suffix-array pair filter: every pair), -t {T} OpenMP "
                "threads, 16-bit striped functions, the FASTA on stdin (it reads stdin whenever stdin is not a "
                "terminal: as the database without -f, as the *query* file with -f); "
                f"-O SAM -b {PARASAIL_TRACE_BATCH} for the trace functions (at its default batch it was killed for "
                "memory)",
                f"parasail on sets above {args.peer_max_seqs:,} sequences runs on the first "
                f"{args.peer_max_seqs:,} only, and 'vs parasail' then compares GCUPS; otherwise 'vs parasail' = "
                "parasail's wall s / this wall s (>1: faster than parasail); lazy has no parasail counterpart "
                "and is set beside nw_trace_striped_16 (the full trace-back one would filter)",
            ]
        notes += [*extra_notes, *agreement]
        data["summary"] = (f"dp_families, {' and '.join(f'{x:,}' for x in sorted(set(args.seqs)))} sequences of "
                           f"~{args.length} bp (families of {args.families_of}, divergence <= "
                           f"{args.max_divergence}, seed {args.seed}), DNA, all-vs-all")
        return Report(title="Batched DP, all-vs-all", data=data, table=table, notes=notes, results=results,
                      extra={"agreement": agreement, "all_agree": all_agree})

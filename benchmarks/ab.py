"""A/B of two gseek trees on one host: the same commands, alternating, outputs compared byte for byte.

For a change that must not alter outputs or speed (a refactor): each tree is
installed into its own folder (``pip install --no-deps --target DIR TREE``),
and every command runs as ``python -P -m gseek`` with ``PYTHONPATH=DIR:BASE``
(``BASE``: the folder holding the other dependencies, e.g. the device
machine's ``/tmp/site``). Each tree first runs a small warm-up of each command
(its Numba and CuPy caches), then the timed runs alternate A, B, A, B, ...

    python benchmarks/ab.py --a /tmp/old --b /tmp/new --base /tmp/site \\
        map --reference ecoli.fa.gz --reads 10000000 --repeat 2 --bowtie
    python benchmarks/ab.py --a /tmp/old --b /tmp/new --base /tmp/site \\
        align --seqs 5000 --repeat 2

Prints a Markdown table (wall s per run, the outputs' SHA-256 equal or not)
and writes the record as JSON to ``--json`` if given. SAM outputs are
compared without their ``@PG`` line (it holds the command line).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _env(site: str, base: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (site, base) if p)
    return env


def _run(cmd: list[str], env: dict, label: str, trace: str | None = None) -> float:
    if trace:  # the engine's span trace (GSEEK_TRACE); the command's start and end beside it
        env = dict(env, GSEEK_TRACE=trace)
        Path(trace + ".command").write_text(f"{time.time():.3f}")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode:
        sys.exit(f"{label}: exit {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    if trace:
        Path(trace + ".command").write_text(Path(trace + ".command").read_text() + f" {time.time():.3f}\n")
    return seconds


def _digest(path: Path) -> str:
    """SHA-256 of a SAM/TSV file without its @PG line(s)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for line in fh:
            if not line.startswith(b"@PG"):
                h.update(line)
    return h.hexdigest()


def _gseek(args: argparse.Namespace) -> list[str]:
    return [sys.executable, "-P", "-m", "gseek", "--quiet", "--device", args.device, "-p", str(args.threads)]


def bench_map(args: argparse.Namespace, work: Path) -> tuple[list[list[str]], dict]:
    ref = work / "ref.fa"
    with (subprocess.Popen(["gzip", "-dc", args.reference], stdout=subprocess.PIPE) if args.reference.endswith(".gz")
          else open(args.reference, "rb")) as src:
        data = src.stdout.read() if hasattr(src, "stdout") else src.read()
    ref.write_bytes(data)
    envs = {"A": _env(args.a, args.base), "B": _env(args.b, args.base)}
    reads, warm = work / "reads.fq", work / "warm.fq"
    t0 = time.perf_counter()
    for path, n in ((reads, args.reads), (warm, 20000)):
        subprocess.run([sys.executable, "-P", "-m", "gseek.datasets", "reads", str(ref), "-n", str(n), "-k", "3",
                        "--seed", "7", "-o", str(path)], env=envs["B"], check=True, stdout=subprocess.DEVNULL)
    print(f"reads simulated in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    rows, record = [], {"runs": []}
    for tree in "AB":
        _run(_gseek(args) + ["index", str(ref), "-o", str(work / f"idx{tree}")], envs[tree], f"index {tree}")
        _run(_gseek(args) + ["search", "-x", str(work / f"idx{tree}"), "-q", str(warm), "-v", "3", "-o",
                             str(work / "warm.sam")], envs[tree], f"warm-up {tree}")
    digests = {}
    for r in range(args.repeat):
        for tree in "AB":
            out = work / f"{tree}.sam"
            trace = os.path.join(args.trace, f"map-{tree}{r + 1}.json") if args.trace else None
            s = _run(_gseek(args) + ["search", "-x", str(work / f"idx{tree}"), "-q", str(reads), "-v", "3", "-o",
                                     str(out)], envs[tree], f"search {tree}", trace)
            digests[tree] = _digest(out)
            out.unlink()
            record["runs"].append({"tree": tree, "run": r + 1, "seconds": s})
            rows.append([f"gseek search -v 3 ({tree})", str(r + 1), f"{s:.2f}"])
            print(rows[-1], file=sys.stderr)
    if args.bowtie and shutil.which("bowtie"):
        subprocess.run(["bowtie-build", "--threads", str(args.threads), "-q", str(ref), str(work / "bt")], check=True)
        s = _run(["bowtie", "-p", str(args.threads), "-v", "3", "--best", "-S", str(work / "bt"), str(reads),
                  str(work / "bt.sam")], dict(os.environ), "bowtie")
        rows.append([f"bowtie -p {args.threads} -v 3 --best", "1", f"{s:.2f}"])
        record["runs"].append({"tree": "bowtie", "run": 1, "seconds": s})
    record["identical"] = digests.get("A") == digests.get("B")
    record["data"] = f"{args.reads:,} x 100 bp reads (gseek.datasets reads, seed 7, k 3) of {args.reference}"
    return rows, record


def bench_align(args: argparse.Namespace, work: Path) -> tuple[list[list[str]], dict]:
    envs = {"A": _env(args.a, args.base), "B": _env(args.b, args.base)}
    seqs, warm = work / "seqs.fa", work / "warm.fa"
    for path, families in ((seqs, -(-args.seqs // 20)), (warm, 1)):
        subprocess.run([sys.executable, "-P", "-m", "gseek.datasets", "dp-families", "--families", str(families),
                        "--members", "20", "--seed", "42", "-o", str(path)], env=envs["B"], check=True,
                       stdout=subprocess.DEVNULL)
    runs = [("local score-only", ["--mode", "local", "--score-only"], seqs),
            ("global trace-back", ["--mode", "global", "--traceback"], None)]
    tb = work / "tb.fa"
    subprocess.run([sys.executable, "-P", "-m", "gseek.datasets", "dp-families", "--families",
                    str(-(-args.tb_seqs // 20)), "--members", "20", "--seed", "42", "-o", str(tb)], env=envs["B"],
                   check=True, stdout=subprocess.DEVNULL)
    rows, record = [], {"runs": []}
    identical = True
    for label, options, path in runs:
        path = path or tb
        for tree in "AB":
            _run(_gseek(args) + ["align", "-i", str(warm), "--all-vs-all", *options, "-o", str(work / "w.tsv")],
                 envs[tree], f"warm-up {tree}")
        digests = {}
        for r in range(args.repeat):
            for tree in "AB":
                out = work / f"{tree}.tsv"
                s = _run(_gseek(args) + ["align", "-i", str(path), "--all-vs-all", *options, "-o", str(out)],
                         envs[tree], f"align {tree}")
                digests[tree] = _digest(out)
                out.unlink()
                record["runs"].append({"tree": tree, "run": r + 1, "kind": label, "seconds": s})
                rows.append([f"gseek align --all-vs-all {label} ({tree})", str(r + 1), f"{s:.2f}"])
                print(rows[-1], file=sys.stderr)
        identical &= digests["A"] == digests["B"]
    record["identical"] = identical
    record["data"] = (f"dp_families (seed 42, families of 20, 1.5 kb): {args.seqs:,} sequences score-only, "
                      f"{args.tb_seqs:,} with trace-back")
    return rows, record


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--a", required=True, help="site folder of tree A (the baseline)")
    p.add_argument("--b", required=True, help="site folder of tree B (the change)")
    p.add_argument("--base", default="", help="folder of the other dependencies (appended to PYTHONPATH)")
    p.add_argument("--device", default="gpu")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--json", help="write the record here")
    p.add_argument("--trace", help="folder for a GSEEK_TRACE of every timed search (benchmarks/tools/trace_summary.py)")
    sub = p.add_subparsers(dest="what", required=True)
    m = sub.add_parser("map")
    m.add_argument("--reference", required=True)
    m.add_argument("--reads", type=int, default=10_000_000)
    m.add_argument("--bowtie", action="store_true", help="also time bowtie -v 3 --best once")
    a = sub.add_parser("align")
    a.add_argument("--seqs", type=int, default=5000)
    a.add_argument("--tb-seqs", type=int, default=1000)
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gseek-ab-"))
    try:
        rows, record = (bench_map if args.what == "map" else bench_align)(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"| command | run | wall s |\n| --- | --: | --: |")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(f"\noutputs of A and B identical (but @PG): {record['identical']}; data: {record['data']}")
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()

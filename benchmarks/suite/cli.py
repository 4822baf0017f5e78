"""Side-by-side benchmarks of gseek and its peers: the runner behind ``python benchmarks/run.py``.

    python benchmarks/run.py BENCHMARK [options]   # run one benchmark (see --list)
    python benchmarks/run.py --list                # the registered benchmarks and their modules
    python benchmarks/run.py report                # benchmarks/RESULTS-table.md from benchmarks/results/
    python benchmarks/run.py keep out/X.json       # copy a record into benchmarks/results/

Each run writes its whole record as JSON to ``benchmarks/out/`` (``--keep``:
to ``benchmarks/results/`` as well) and prints a Markdown section for
RESULTS.md on stdout. ``run.py _worker SPEC`` runs one in-process case in a
fresh interpreter (``harness.run_worker``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path

from . import harness, load
from .harness import OUT_DIR, RESULTS_DIR
from .registry import WORKERS, Report

#: What every kept record has (``report`` reads these).
RECORD_KEYS = ("benchmark", "date", "device", "commit", "command", "data", "table")


def data_line(data: dict) -> str:
    """The ``Data:`` line of a benchmark's section."""
    if "summary" in data:
        return f"Data: {data['summary']}"
    return (f"Data: {data.get('kind', '')} {data.get('reads', 0):,} × {data.get('length', '?')} bp, "
            f"{harness.human_bytes(data.get('bytes', 0))} plain / {harness.human_bytes(data.get('gz_bytes', 0))} "
            f"gzip (`{Path(data.get('path', '')).name}`, sha256 {data.get('sha256', '')[:12]}; "
            f"{data.get('generator', '')})")


def peers_of(results: list[dict]) -> list[str]:
    """The peer tools a run timed beside gseek (each result's ``tool`` or ``parser`` that is not gseek's)."""
    tools = {str(r.get("tool") or r.get("parser")) for r in results
             if isinstance(r, dict) and (r.get("tool") or r.get("parser"))}
    return sorted(t for t in tools if not t.startswith("gseek"))


def list_benchmarks() -> str:
    return "\n".join(f"{name:16s} {b.module.rsplit('.', 1)[-1]:10s} {b.help}" for name, b in load().items())


def keep(paths: list[Path], results_dir: Path = RESULTS_DIR) -> list[Path]:
    """Copy records into ``results_dir`` (the ones ``report`` reads), checking each is one."""
    kept = []
    for path in paths:
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise SystemExit(f"{path}: not a benchmark record ({exc})") from None
        missing = [k for k in RECORD_KEYS if k not in record]
        if missing:
            raise SystemExit(f"{path}: not a benchmark record (no {', '.join(missing)})")
        results_dir.mkdir(parents=True, exist_ok=True)
        target = results_dir / path.name
        tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        shutil.copyfile(path, tmp)
        os.replace(tmp, target)
        kept.append(target)
    return kept


def _tools(argv: list[str]) -> int | None:
    """``--list``, ``report`` and ``keep``; None when ``argv`` names a benchmark."""
    if argv[:1] == ["--list"]:
        print(list_benchmarks())
        return 0
    if argv[:1] == ["report"]:
        from .report import main as report_main

        return report_main(argv[1:])
    if argv[:1] == ["keep"]:
        parser = argparse.ArgumentParser(prog="run.py keep", description=keep.__doc__)
        parser.add_argument("records", nargs="+", type=Path)
        parser.add_argument("--results", type=Path, default=RESULTS_DIR, help="default benchmarks/results")
        args = parser.parse_args(argv[1:])
        for path in keep(args.records, args.results):
            print(os.path.relpath(path))
        return 0
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    benchmarks = load()
    if argv[:1] == ["_worker"]:
        spec = json.loads(argv[1])
        print(json.dumps(WORKERS[spec["task"]](spec)), flush=True)
        return 0
    done = _tools(argv)
    if done is not None:
        return done

    parser = argparse.ArgumentParser(
        prog="run.py", description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Also: run.py --list | report [--records DIR] [--output FILE] | keep RECORD.json ...",
    )
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="folder for the JSON records (default benchmarks/out)")
    parser.add_argument("--keep", action="store_true",
                        help="also write the record to benchmarks/results/ (the records RESULTS-table.md is made of)")
    sub = parser.add_subparsers(dest="bench", required=True, metavar="BENCHMARK")
    for name, b in benchmarks.items():
        b.add_options(sub.add_parser(name, help=b.help, description=b.help))
    args = parser.parse_args(argv)

    started = harness.now_utc()
    busy_before = harness.idle_check(2.0)
    where = harness.machine()
    commit = harness.git_commit()
    command = "python " + shlex.join([os.path.relpath(sys.argv[0]) if sys.argv[0] else "run.py", *argv])
    print(f"# {args.bench}: {command}", file=sys.stderr)
    print(f"# {started.isoformat()} on {where['host']}: {where['cpu']}, {where['cores']} cores, "
          f"GPU {where['device']}, commit {commit}", file=sys.stderr, flush=True)
    if busy_before > 0.1:
        print(f"# warning: other processes keep {busy_before:.0%} of the CPUs busy; timings will be skewed",
              file=sys.stderr, flush=True)

    host_load = harness.HostLoad()
    t0 = time.perf_counter()
    report: Report = benchmarks[args.bench].run(args)
    elapsed = time.perf_counter() - t0
    other_cpu = host_load.other_fraction()
    report.notes.append(
        f"other processes on the host used {other_cpu:.0%} of its CPU time during the run "
        f"({busy_before:.0%} in the 2 s before it)"
    )
    if other_cpu > 0.1:
        print(f"# warning: other processes used {other_cpu:.0%} of the CPUs during the run; "
              "timings are skewed", file=sys.stderr, flush=True)

    record = {
        "schema": 1,
        "benchmark": args.bench,
        "title": report.title,
        "date": started.isoformat(),
        **where,
        "commit": commit,
        "command": command,
        "cwd": os.getcwd(),
        "versions": harness.versions(["gseek", "numpy", "numba", "pysam", "Bio", "cupy"]),
        "data": report.data,
        "data_line": data_line(report.data),
        "figures": harness.parse_tables(report.table),
        "peers": peers_of(report.results),
        "results": report.results,
        "notes": report.notes,
        "table": report.table,
        "elapsed_s": elapsed,
        "loadavg_end": list(os.getloadavg()),
        "other_cpu_before": busy_before,
        "other_cpu_during": other_cpu,
        **report.extra,
    }
    path = harness.write_record(args.bench, record, args.out)
    if args.keep:
        keep([path])

    v = record["versions"]
    print()
    print(f"### {report.title}")
    print()
    print(
        f"{started.date().isoformat()} · {where['cpu']}, {where['cores']} cores · GPU: {where['device']} · "
        f"commit `{commit}` · Python {where['python']}, "
        + ", ".join(f"{k} {val}" for k, val in v.items())
    )
    print()
    print(record["data_line"])
    print()
    print(f"Command: `{command}`")
    print()
    print(report.table)
    print()
    for note in report.notes:
        print(f"- {note}")
    print()
    print(f"Record: `{os.path.relpath(path, harness.REPO)}`")
    return 0

"""Recall of the tasks blastn-short and dc-megablast against blastn 2.12 on simulated sets (issue 41).

The sets are ``tests/data/blast_tasks/make_inputs.py``'s kinds, larger: ``--records`` records of 4
simulated genes each plus ``--lambda-bases`` of lambda as the database (``makeblastdb`` and
``gseek makeblastdb``), ``--probes`` primers and probes of 20-30 bp (blastn-short), the genes'
orthologs at 17-28 % divergence (mostly third codon positions) and diverged lambda pieces
(dc-megablast, every template kind). For each run: blastn's HSPs with e <= 1e-10 found by gseek
(``gseek.blast.compare``), bit scores within 1, e-values within 5 %, gseek's extra HSPs, the same for
all HSPs (e <= 10), and the share of blastn's lines gseek prints byte for byte; seconds of each.

    python benchmarks/tools/blast_tasks_recall.py --out /tmp/tasks --records 60 --probes 400
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import time
from pathlib import Path

from gseek.blast.compare import COMPARE_FIELDS, compare_reports

ROOT = Path(__file__).resolve().parents[2]
RUNS = [("blastn-short", [], "short.fa"), ("dc-megablast", [], "dc.fa"),
        ("dc-megablast", ["-template_type", "optimal", "-template_length", "21", "-word_size", "12"], "dc.fa"),
        ("dc-megablast", ["-template_type", "coding_and_optimal", "-template_length", "16"], "dc.fa")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--records", type=int, default=60)
    ap.add_argument("--probes", type=int, default=400)
    ap.add_argument("--lambda-bases", type=int, default=48502)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--harder", type=float, default=0.0, help="added divergence (make_inputs.main's harder)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    spec = importlib.util.spec_from_file_location("make_inputs", ROOT / "tests/data/blast_tasks/make_inputs.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    make.main(str(out), args.records, args.probes, seed=7, lambda_bases=args.lambda_bases,
              harder=args.harder)
    subprocess.run(["makeblastdb", "-in", out / "db.fa", "-dbtype", "nucl", "-out", out / "bdb"], check=True,
                   capture_output=True)
    subprocess.run([sys.executable, "-m", "gseek", "--device", "cpu", "makeblastdb", "-in", out / "db.fa", "-dbtype",
                    "nucl", "-out", out / "gdb"], check=True, capture_output=True)
    for task, extra, query in RUNS:
        common = ["-task", task, *extra, "-query", str(out / query), "-outfmt", COMPARE_FIELDS]
        t0 = time.perf_counter()
        theirs = subprocess.run(["blastn", *common, "-db", str(out / "bdb")], check=True, capture_output=True,
                                text=True).stdout.splitlines()
        t1 = time.perf_counter()
        ours = subprocess.run([sys.executable, "-m", "gseek", "--quiet", "--device", args.device, "blastn", *common,
                               "-db", str(out / "gdb")], check=True, capture_output=True, text=True).stdout.splitlines()
        t2 = time.perf_counter()
        strict, every = compare_reports(ours, theirs, 1e-10), compare_reports(ours, theirs, 10.0)
        same = sum(x in set(ours) for x in theirs)
        print(f"{task} {' '.join(extra)}: e<=1e-10 recall {strict['recall']:.4f} ({strict['found']}/{strict['expected']}),"
              f" bits within 1 {strict['bits_within_1']:.4f}, e within 5% {strict['evalue_within_5pct']:.4f}, extra "
              f"{strict['extra']:.4f}; all: recall {every['recall']:.4f} ({every['found']}/{every['expected']}), extra "
              f"{every['extra']:.4f} of {every['ours']}; lines identical {same}/{len(theirs)}; blastn {t1 - t0:.1f} s, "
              f"gseek {t2 - t1:.1f} s")
        for m in strict["missed"][:5]:
            print("   missed", m)


if __name__ == "__main__":
    main()

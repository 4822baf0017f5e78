"""gseek's benchmark suite: gseek and its peers side by side, one module per benchmark family.

    python benchmarks/run.py --list            # the registered benchmarks
    python benchmarks/run.py io --reads 20000 --repeat 1
    python benchmarks/run.py report            # RESULTS-table.md from benchmarks/results/

Modules: ``registry`` (``Report``, ``@benchmark``), ``harness`` (timing, child
processes with their own peak RSS, host and commit, records, tables),
``datagen`` (cached benchmark data), ``common`` (helpers several families
share), ``cli`` (the runner behind ``run.py``), ``report`` (the generated
table), and the families in ``FAMILIES``. Not part of the installed package.
"""

from __future__ import annotations

import importlib

from .registry import BENCHMARKS, WORKERS, Benchmark, Report, benchmark

#: The benchmark families, one module each, in the order ``--list`` shows them.
FAMILIES = ("fastq_io", "index", "mapping", "bam", "startup", "blast", "align", "pipeline", "cluster")

__all__ = ["BENCHMARKS", "WORKERS", "Benchmark", "Report", "benchmark", "FAMILIES", "load"]


def load() -> dict[str, Benchmark]:
    """Import every family module (registering its benchmarks); return the registry."""
    for family in FAMILIES:
        importlib.import_module(f"{__name__}.{family}")
    return BENCHMARKS

"""The registry of benchmarks: what a benchmark hands back and how it is registered.

A benchmark is a function ``bench_<name>(args) -> Report`` decorated with
``@benchmark(name, help, add_options)`` in one of the family modules
(``benchmarks/suite/<family>.py``); ``benchmarks.suite.load()`` imports them all.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Report:
    """What a benchmark hands back: the table, its notes and the raw figures."""

    title: str
    data: dict
    table: str
    notes: list[str] = field(default_factory=list)
    results: list[dict] = field(default_factory=list)
    extra: dict = field(default_factory=dict)


@dataclass
class Benchmark:
    run: Callable[[argparse.Namespace], Report]
    help: str
    add_options: Callable[[argparse.ArgumentParser], None]
    module: str = ""


BENCHMARKS: dict[str, Benchmark] = {}
#: Functions run inside a fresh interpreter by ``run.py _worker SPEC``.
WORKERS: dict[str, Callable[[dict], dict]] = {}


def benchmark(name: str, help: str, add_options: Callable[[argparse.ArgumentParser], None]):
    def register(fn: Callable[[argparse.Namespace], Report]):
        if name in BENCHMARKS:
            raise ValueError(f"benchmark {name!r} registered twice ({BENCHMARKS[name].module}, {fn.__module__})")
        BENCHMARKS[name] = Benchmark(fn, help, add_options, fn.__module__)
        return fn

    return register

"""``gseek compile``: every kernel into the caches, ahead of time (docs/startup.md)."""

from __future__ import annotations

import time

import click

from .app import backend, cli, common, say

@cli.command("compile")
@click.option("--only", default=",".join(("parse", "index", "map", "align", "blast")), show_default=True,
              help="Comma-separated workloads to compile: parse, index, map, align, blast.")
@click.option("--processes", type=click.IntRange(min=1), default=1, show_default=True,
              help="Compile the workloads in this many processes at once.")
@common
def compile_(only, processes) -> None:
    """Compile every kernel the commands use (Numba and, on a GPU, CUDA) into the caches, ahead of time."""
    from ..precompile import WORKLOADS, cache_dirs, compile_kernels

    chosen = tuple(w.strip() for w in only.split(",") if w.strip())
    unknown = [w for w in chosen if w not in WORKLOADS]
    if unknown or not chosen:
        raise click.BadParameter(f"choose from {', '.join(WORKLOADS)}, not {only!r}", param_hint="--only")
    started = time.perf_counter()
    seconds = compile_kernels(backend(), chosen, processes)
    for name, took in seconds.items():
        say(f"[gseek] compile: {name} {took:.1f} s")
    caches = cache_dirs()
    say(f"[gseek] compile: done in {time.perf_counter() - started:.1f} s (Numba cache: {caches['numba']}; "
         f"CuPy cache: {caches['cupy']})")
    from ..precompile import status

    shipped = status()
    say(f"[gseek] compile: prebuilt machine code (used where the cache has none): {shipped.prebuilt}")
    say(f"[gseek] compile: shipped CUDA machine code (used where it fits the device): {shipped.cubins}")
    say(f"[gseek] compile: shipped CuPy kernels (copied into CuPy's cache where they fit): {shipped.cupy_cache}")

"""`startup`: the first command after an install, cold caches and warm (issue 15)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import harness
from .harness import markdown_table
from .registry import benchmark, Report


def _startup_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reads", type=int, default=1000, help="reads of the small search (default 1,000 lambda reads)")
    p.add_argument("--devices", default="cpu,gpu", help="backends to time (default cpu,gpu; gpu skipped without one)")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="gseek -p")
    p.add_argument("--compile", action="store_true", help="also time `gseek compile` cold and the search after it")
    p.add_argument("--no-prebuilt", action="store_true",
                   help="also time the search with the prebuilt machine code off (GSEEK_PREBUILT=0): cold and warm")
    p.add_argument("--demo", action="store_true", help="also time `gseek demo` with empty caches")
    p.add_argument("--no-cubins", action="store_true",
                   help="also time the GPU search with the shipped cubins off (GSEEK_CUBINS=0): cold and warm")
    p.add_argument("--no-cupy-cache", action="store_true",
                   help="also time the GPU search cold with the shipped CuPy kernels off (GSEEK_CUPY_CACHE=0)")


@benchmark("startup", "the first command after an install (empty Numba and CuPy caches) and the same again warm",
           _startup_options)
def bench_startup(args: argparse.Namespace) -> Report:
    """A small ``gseek search`` in fresh processes: cold (empty caches), warm, and after ``gseek compile``."""
    from gseek.datasets import lambda_genome, lambda_reads

    with harness.scratch_dir("gseek-startup-bench-") as work:
        reads = work / "reads.fq"
        lines = Path(lambda_reads()).read_text().splitlines()
        reads.write_text("\n".join(lines[: 4 * min(args.reads, len(lines) // 4)]) + "\n")
        gseek = [sys.executable, "-P", "-m", "gseek", "--quiet", "-p", str(args.threads)]
        env = dict(os.environ, NUMBA_CACHE_DIR=str(work / "index-cache"))
        harness.run_process(gseek + ["--device", "cpu", "index", str(lambda_genome()), "-o", str(work / "lam")],
                            env=env)
        results, rows = [], []

        def timed(device: str, label: str, cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
            proc = harness.run_process(cmd, env=env, cwd=cwd)
            results.append({"device": device, "run": label, "seconds": proc.seconds, "peak_rss_mib": proc.peak_rss_mib})
            rows.append([device, label, f"{proc.seconds:.2f}"])

        def caches(device: str, kind: str = "", **extra: str) -> dict[str, str]:
            return dict(os.environ, NUMBA_CACHE_DIR=str(work / f"numba{kind}-{device}"),
                        CUPY_CACHE_DIR=str(work / f"cupy{kind}-{device}"), **extra)

        for device in [d.strip() for d in args.devices.split(",") if d.strip()]:
            if device == "gpu" and harness.gpu_name() == "none":
                continue
            search = gseek + ["--device", device, "search", "-x", str(work / "lam"), "-q", str(reads), "-v", "3",
                              "-o", str(work / "out.sam")]
            if args.compile:
                env_c = caches(device, "-c")
                timed(device, "gseek compile (cold)",
                      gseek + ["--device", device, "compile", "--processes", str(min(4, args.threads))], env_c)
                timed(device, "search after gseek compile", search, env_c)
            for label in ("cold (caches empty)", "warm", "warm"):
                timed(device, label, search, caches(device))
            if args.no_prebuilt:  # the same without the shipped machine code: every function compiled
                for label in ("cold, prebuilt off (GSEEK_PREBUILT=0)", "warm, prebuilt off"):
                    timed(device, label, search, caches(device, "-off", GSEEK_PREBUILT="0"))
            if args.no_cubins and device == "gpu":  # the CUDA families compiled by NVRTC, as before the cubins
                for label in ("cold, cubins off (GSEEK_CUBINS=0)", "warm, cubins off"):
                    timed(device, label, search, caches(device, "-nocubin", GSEEK_CUBINS="0"))
            if args.no_cupy_cache and device == "gpu":  # CuPy's own kernels compiled by NVRTC on first use
                timed(device, "cold, shipped CuPy kernels off (GSEEK_CUPY_CACHE=0)", search,
                      caches(device, "-nocupy", GSEEK_CUPY_CACHE="0"))
            if args.demo:
                (work / f"demo-{device}").mkdir()
                timed(device, "gseek demo, cold (caches empty)", gseek + ["--device", device, "demo"],
                      caches(device, "-demo"), cwd=work / f"demo-{device}")
        table = markdown_table(["device", "run", "wall s"], rows, align="llr")
        from gseek.kernels import _cupy_cache
        from gseek.kernels._cuda import cubin_status
        from gseek.kernels._jit import prebuilt_status

        notes = [f"gseek search -v 3 of {args.reads:,} lambda reads on the lambda index, whole command in a fresh "
                 "process; cold: NUMBA_CACHE_DIR and CUPY_CACHE_DIR empty (a fresh install: Numba functions come "
                 "from the shipped prebuilt machine code where it is current, CUDA kernels from the shipped "
                 "cubins where they fit the device, else compiled); the index built beforehand with a cache of "
                 "its own",
                 f"prebuilt machine code: {prebuilt_status()}", f"shipped CUDA machine code: {cubin_status()}",
                 f"shipped CuPy kernels: {_cupy_cache.status()}"]
        return Report(title="Start-up", data={"summary": f"{args.reads:,} reads, lambda"}, table=table, notes=notes,
                      results=results)

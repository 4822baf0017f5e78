"""Helpers that more than one benchmark family uses: input handles, Numba's cache, GCUPS, GPU busy sampling."""

from __future__ import annotations

import argparse
import gzip
import os
import time
from pathlib import Path

from . import harness
from .harness import OUT_DIR


def add_read_options(p: argparse.ArgumentParser) -> None:
    """``--length`` and ``-v`` of the benchmarks that map simulated k-mismatch reads (``map``, ``map-bam``)."""
    p.add_argument("--length", type=int, default=100, help="read length (default 100)")
    p.add_argument("-v", "--mismatches", type=int, default=3, help="k (default 3); reads carry 0..k substitutions")


def text_handle(path: str):
    """A text handle on ``path``, through gzip when it starts with 1f 8b."""
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="ascii")
    return open(path, encoding="ascii")


def count_rows(path: Path) -> int:
    """Data lines of a table (a leading '#' header line is not one)."""
    lines = 0
    with open(path, "rb") as fh:
        first = fh.read(1)
        fh.seek(0)
        while chunk := fh.read(1 << 24):
            lines += chunk.count(b"\n")
    return lines - (first == b"#")


def numba_cache_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) with NUMBA_CACHE_DIR on the runner's persistent cache
    (``out/numba-cache``), so gseek's compiled kernels persist between commands outside the package."""
    env = dict(os.environ if env is None else env)
    cache_dir = OUT_DIR / "numba-cache"
    cache_dir.mkdir(parents=True, exist_ok=True)
    env["NUMBA_CACHE_DIR"] = str(cache_dir)
    return env


def gcups(cells: int, seconds: float | None) -> str:
    """Billions of DP cells per second, 2 decimals ('-' without a time)."""
    return f"{cells / seconds / 1e9:.2f}" if seconds else "-"


class GpuSampler:
    """Samples nvidia-smi's utilization.gpu (share of time a kernel ran) of every GPU every 100 ms;
    with ``memory``, also memory.used (MiB) into :attr:`memory`."""

    def __init__(self, memory: bool = False) -> None:
        import shutil
        import subprocess

        self.proc = None
        self.memory: dict[str, list[float]] = {}
        fields = "index,utilization.gpu" + (",memory.used" if memory else "")
        if shutil.which("nvidia-smi") and harness.gpu_name() != "none":
            self.proc = subprocess.Popen(
                ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits", "-lms", "100"],
                stdout=subprocess.PIPE, text=True)

    def stop(self) -> dict[str, list[float]]:
        """Samples by GPU index (``{}`` without nvidia-smi)."""
        if self.proc is None:
            return {}
        self.proc.terminate()
        out, _ = self.proc.communicate()
        samples: dict[str, list[float]] = {}
        for line in out.splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) >= 2 and parts[0].isdigit() and all(p.replace(".", "").isdigit() for p in parts[1:]):
                samples.setdefault(parts[0], []).append(float(parts[1]))
                if len(parts) == 3:
                    self.memory.setdefault(parts[0], []).append(float(parts[2]))
        return samples


def parse_gpu_sets(text: str | None) -> list[str | None]:
    """``--gpus '0;0,1'`` -> ['0', '0,1']; no --gpus -> [None] (one run without --gpus)."""
    return [g.strip() for g in text.split(";") if g.strip()] if text else [None]


def sampled_runs(cmds: list[list[str]], env: dict[str, str] | None = None):
    """Run ``cmds`` one after the other under one :class:`GpuSampler`: wall s from the first
    start to the last exit, CPU s summed, the GPU samples, and the last process's result."""
    sampler = GpuSampler()
    cpu, proc = 0.0, None
    t0 = time.perf_counter()
    try:
        for cmd in cmds:
            proc = harness.run_process(cmd, env=env)
            cpu += proc.cpu_s
    finally:
        busy = sampler.stop()
    return time.perf_counter() - t0, cpu, busy, proc


def busy_text(busy: dict[str, list[float]], gpus: str | None = None) -> str:
    """Mean utilisation of each GPU the command was given (``gpus``: '0,1'; None: GPU 0), '-' without samples."""
    used = [g.strip() for g in (gpus or "0").split(",")]
    means = [sum(busy[g]) / len(busy[g]) for g in used if busy.get(g)]
    return ", ".join(f"{m:.0f}%" for m in means) if means else "-"


GPU_BUSY_NOTE = ("GPU busy = mean of nvidia-smi utilization.gpu (share of time a kernel ran) sampled every 100 ms "
                 "during the command(s), for each GPU the command used (GPU 0 without --gpus), over the whole "
                 "wall time (start-up included); sequential: over all its processes and the gaps between them")


def same_file(a: Path, b: Path) -> bool:
    """Both exist and hold the same bytes."""
    return a.is_file() and b.is_file() and a.stat().st_size == b.stat().st_size and a.read_bytes() == b.read_bytes()

#!/usr/bin/env python3
"""Where one whole ``gseek`` command's time goes, from the process's start to its end, on one timeline.

    python -P benchmarks/tools/profile_command.py [--t0 EPOCH] [--json FILE] [--all] -- ARGS...

Runs ``gseek ARGS...`` in this process as the console script does (:func:`gseek.cli.process.run`)
with timers around its steps, on every thread: the big imports (NumPy, Numba, CuPy, SciPy's sparse
package, gseek's modules), the backend (CuPy's device set-up, the shipped kernels' seeding, the
thread warming CuPy's kernels), the index's load and check, the task and its searchers (streams,
the free-memory probe), each ``.cu`` family's module load and each CuPy kernel module CuPy loads
(from its cache or compiled), each Numba function loaded from a cache, the text's upload, every
search, the output's open and commit, and the process's exit (``os._exit``). Prints the timeline
(start and end in ms since the process started: ``--t0`` is the shell's ``$EPOCHREALTIME`` just
before it ran the interpreter, else the kernel's start time of the process, to 10 ms), then the
same summed by step. What ``os._exit`` leaves (the kernel closing the device) is the whole
command's wall time measured outside minus the timeline's end.

Reaches into private functions on purpose (``benchmarks/tools/README.md``); a name that is not
found is reported and skipped. Events shorter than 0.5 ms of the repeated kinds are counted, not
listed (``--all`` lists them).
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import json
import os
import sys
import threading
import time

_NOW = time.time


def process_start() -> float:
    """The process's start on the wall clock, from /proc (clock ticks since boot)."""
    with open("/proc/self/stat") as fh:
        start_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as fh:
        uptime = float(fh.read().split()[0])
    return _NOW() - uptime + start_ticks / os.sysconf("SC_CLK_TCK")


#: (start, end, thread, what, kind): kind groups the repeated events (a kind's events are summed).
EVENTS: list[tuple[float, float, str, str, str]] = []
MISSING: list[str] = []
_LOCK = threading.Lock()


def record(start: float, end: float, what: str, kind: str = "") -> None:
    with _LOCK:
        EVENTS.append((start, end, threading.current_thread().name, what, kind))


def _timed(fn, what, kind=""):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start = _NOW()
        try:
            return fn(*args, **kwargs)
        finally:
            label = what(*args, **kwargs) if callable(what) else what
            record(start, _NOW(), label, kind)

    wrapper.__profiled__ = True
    return wrapper


def patch(module, path: str, what, kind: str = "") -> None:
    """Wrap ``module.path`` (``name`` or ``Class.method``) with a timer."""
    owner = module
    *outer, attr = path.split(".")
    try:
        for name in outer:
            owner = getattr(owner, name)
        fn = owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)
    except (AttributeError, KeyError):
        MISSING.append(f"{module.__name__}.{path}")
        return
    if getattr(fn, "__profiled__", False):
        return
    if isinstance(fn, (staticmethod, classmethod)):
        wrapped = type(fn)(_timed(fn.__func__, what, kind))
    else:
        wrapped = _timed(fn, what, kind)
    setattr(owner, attr, wrapped)


def _family(filename, *a, **k):
    return f"cubin module {filename}"


def _cupy_kernel(*a, **k):
    return "CuPy kernel module (its cache or NVRTC)"


def _empty_program(source, options, *a, **k):
    shown = [o for o in options if not o.startswith("-I")]
    return f"NVRTC empty program (CuPy's key), options {' '.join(shown)} (+{len(options) - len(shown)} -I)"


def _numba_load(self, sig, *a, **k):
    return f"Numba load {self._py_func.__module__.rsplit('.', 1)[-1]}.{self._py_func.__name__}"


#: After the module named is imported: (attribute, what, kind) to time.
PATCHES: dict[str, list[tuple[str, object, str]]] = {
    "gseek.cli.search": [("blast_search", "blast_search (the command)", ""),
                         ("map_search", "map_search (the command)", "")],
    "gseek.cli.app": [("backend", "cli backend()", "")],
    "gseek.cli.process": [("exit_now", "exit_now (flush, os._exit)", "")],
    "gseek.gpu_start": [("_driver_setup", "CUDA driver: cuInit and contexts (ctypes, thread)", "")],
    "gseek.backend": [("GpuBackend.__init__", "GpuBackend() (import cupy, device, seeding)", ""),
                      ("GpuBackend.with_stream", "GpuBackend.with_stream", "stream"),
                      ("CpuBackend.__init__", "CpuBackend()", "cpu backend"),
                      ("_warm_kernels", "CuPy's warm-up kernels (thread)", ""),
                      ("gpu_available", "gpu_available()", "")],
    "gseek.kernels._cuda": [("load_module", _family, "cubin module")],
    "gseek.kernels._cupy_cache": [("seed_for", "CuPy cache seeding", ""),
                                  ("nvrtc_version", "NVRTC's version (loads NVRTC)", "")],
    "gseek.kernels._jit": [("_PrebuiltCache.load_overload", _numba_load, "Numba load")],
    "cupy.cuda.runtime": [("getDeviceCount", "cupy getDeviceCount (cuInit)", "runtime"),
                          ("getDeviceProperties", "cupy getDeviceProperties", "runtime"),
                          ("memGetInfo", "cupy memGetInfo", "runtime")],
    "cupy.cuda.compiler": [("_compile_module_with_cache", _cupy_kernel, "CuPy kernel module"),
                           ("_compile_with_cache_cuda", "CuPy _compile_with_cache_cuda", "CuPy cache (cuda)"),
                           ("_preprocess", _empty_program, "NVRTC empty program")],
    "gseek.index.core": [("Index.load", "Index.load", ""), ("Index.check_in_background", "index check started", "")],
    "gseek.index.format": [("sha256_file", "SHA-256 of an index part (thread)", "")],
    "gseek.index.text": [("ReferenceText.on", "ReferenceText.on (text upload, or wait)", "text on device")],
    "gseek.pipeline.front": [("blast_files", "blast_files", ""), ("map_files", "map_files", ""),
                             ("run_one", "run_one (dispatcher)", "")],
    "gseek.pipeline.tasks.blast": [("BlastTask.__init__", "BlastTask()", ""),
                                   ("BlastTask._prelim", "prelim (search of a job)", "prelim"),
                                   ("BlastTask.finalize", "finalize (text)", "finalize"),
                                   ("_BlastSink.open", "output open", ""),
                                   ("_BlastSink.before_commit", "output before commit (check wait)", "")],
    "gseek.pipeline.tasks.map": [("MapTask.__init__", "MapTask()", ""), ("warm_host", "warm_host()", "")],
    "gseek.pipeline.engine": [("Dispatcher.run", "Dispatcher.run", ""),
                              ("Dispatcher._write", "write a job", "write")],
    "gseek.pipeline.tasks._base": [("LazySink.commit", "output commit (rename)", "")],
    "gseek.blast.searcher": [("BlastSearcher.__init__", "BlastSearcher()", "searcher"),
                             ("BlastSearcher.search", "BlastSearcher.search", "search"),
                             ("BlastSearcher.prepare", "BlastSearcher.prepare", "prepare")],
    "gseek.blast.shards": [("auto_volume_bases", "auto_volume_bases (free memory)", "")],
    "gseek.mapper.core": [("Mapper.__init__", "Mapper()", "mapper")],
}

#: Imports timed (cumulative, as ``-X importtime``'s): the first import of each, on its thread.
IMPORTS = ("numpy", "numba", "cupy", "cupyx", "cupyx.scipy.sparse", "cupyx.scipy.special", "scipy", "scipy.sparse",
           "cuda.pathfinder", "click", "gseek", "gseek.cli",
           "gseek.cli.search", "gseek.backend", "gseek.pipeline", "gseek.pipeline.tasks.blast",
           "gseek.pipeline.tasks.map", "gseek.blast.searcher", "gseek.blast", "gseek.index", "gseek.seqio",
           "gseek.kernels._jit", "gseek.mapper", "gseek.output.sam", "llvmlite.binding", "cupy_backends")


class _Loader:
    """A loader that times its module's execution, then applies the module's patches."""

    def __init__(self, loader, name: str, start: float) -> None:
        self._loader, self._name, self._start = loader, name, start

    def __getattr__(self, attr):
        return getattr(self._loader, attr)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        try:
            self._loader.exec_module(module)
        finally:
            if self._name in IMPORTS:
                record(self._start, _NOW(), f"import {self._name}", "")
            for path, what, kind in PATCHES.get(self._name, ()):
                patch(module, path, what, kind)


class _Watch(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self._busy: set[str] = set()

    def find_spec(self, name, path, target=None):
        if (name not in IMPORTS and name not in PATCHES) or name in self._busy:
            return None
        start = _NOW()
        self._busy.add(name)
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self._busy.discard(name)
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader, name, start)
        return spec


def report(t0: float, end: float, out=sys.stdout, every: bool = False) -> dict:
    rows = sorted(EVENTS)
    ms = lambda t: (t - t0) * 1000.0  # noqa: E731
    print(f"{'start ms':>9} {'end ms':>9} {'ms':>8}  {'thread':<28} what", file=out)
    kinds: dict[tuple[str, str], list[float]] = {}
    for start, stop, thread, what, kind in rows:
        if kind:
            k = kinds.setdefault((kind, thread), [0, 0.0, start, stop])
            k[0] += 1
            k[1] += stop - start
            k[2], k[3] = min(k[2], start), max(k[3], stop)
        if kind and not every and stop - start < 0.0005:
            continue
        print(f"{ms(start):9.1f} {ms(stop):9.1f} {1000 * (stop - start):8.1f}  {thread[:28]:<28} {what}", file=out)
    print(f"{ms(end):9.1f} {'':9} {'':8}  {'':<28} os._exit called", file=out)
    print("\nrepeated kinds (count, summed ms, first start - last end ms), by thread:", file=out)
    for (kind, thread), (n, total, first, last) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
        print(f"  {kind:<22} {thread[:28]:<28} {n:5d} {1000 * total:8.1f} ms  {ms(first):8.1f} - {ms(last):8.1f}",
              file=out)
    if MISSING:
        print(f"\nnot found (not timed): {', '.join(MISSING)}", file=out)
    return dict(t0=t0, end_ms=ms(end), missing=MISSING,
                events=[dict(start_ms=round(ms(a), 3), end_ms=round(ms(b), 3), thread=t, what=w, kind=k)
                        for a, b, t, w, k in rows])


def main() -> None:
    args = sys.argv[1:]
    t0, json_path, every = None, None, False
    while args and args[0] != "--":
        opt = args.pop(0)
        if opt == "--t0":
            t0 = float(args.pop(0))
        elif opt == "--json":
            json_path = args.pop(0)
        elif opt == "--all":
            every = True
        else:
            raise SystemExit(f"profile_command: unknown option {opt}")
    args = args[1:]
    t0 = t0 if t0 is not None else process_start()
    sys.meta_path.insert(0, _Watch())
    real_exit = os._exit

    def _exit(code: int) -> None:
        end = _NOW()
        with open(os.environ.get("PROFILE_COMMAND_OUT", "/dev/stderr"), "w") as out:
            rec = report(t0, end, out, every)
        if json_path:
            with open(json_path, "w") as fh:
                json.dump(dict(rec, argv=args, code=code), fh)
        real_exit(code)

    os._exit = _exit
    sys.argv = ["gseek", *args]
    from gseek.cli.process import run

    run()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The CUDA side of a GPU command's start-up, alone and beside the imports (issue 40, branch start40).

    python3 -P benchmarks/archive/probe_cuda_start.py MODE

One fresh process a run; prints one JSON line of ms from the process's start (``/proc``):

* ``serial``: what a BLAST command does today, in its order: gseek's BLAST imports (NumPy, Numba, the
  searcher), then ``import cupy``, ``getDeviceCount`` (``cuInit``), the context (the first allocation),
  a stream, ``memGetInfo``.
* ``ctypes``: the same, with a thread started first that initialises the driver and creates the primary
  context through ``libcuda`` with ``ctypes`` (which releases the GIL during the call), beside the
  imports.
* ``cupy``: the same, with a thread started first that imports CuPy and makes the context through it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

NOW = time.time
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from profile_command import process_start  # noqa: E402 - the process's start, from /proc

T0 = process_start()
marks: dict[str, float] = {}


def mark(name: str) -> None:
    marks[name] = round((NOW() - T0) * 1000, 1)


def driver_context() -> None:
    import ctypes

    mark("thread start")
    cuda = ctypes.CDLL("libcuda.so.1")
    mark("thread libcuda loaded")
    if cuda.cuInit(0) != 0:
        return
    mark("thread cuInit")
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    cuda.cuDeviceGet(ctypes.byref(dev), 0)
    cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
    mark("thread context")


def cupy_context() -> None:
    mark("thread start")
    import cupy

    mark("thread import cupy")
    cupy.cuda.runtime.getDeviceCount()
    mark("thread getDeviceCount")
    cupy.empty(1)
    mark("thread context")


def main() -> None:
    mode = sys.argv[1]
    mark("main")
    thread = None
    if mode in ("ctypes", "cupy"):
        thread = threading.Thread(target=driver_context if mode == "ctypes" else cupy_context, daemon=True)
        thread.start()
    import gseek.pipeline.tasks.blast  # noqa: F401 - NumPy, Numba, the searcher: the command's imports

    mark("gseek imports")
    if mode == "cupy":
        thread.join()
        mark("joined")
    import cupy

    mark("import cupy")
    cupy.cuda.runtime.getDeviceCount()
    mark("getDeviceCount")
    cupy.empty(1)
    mark("context")
    with cupy.cuda.Device(0):
        cupy.cuda.Stream(non_blocking=True)
    mark("stream")
    cupy.cuda.runtime.memGetInfo()
    mark("memGetInfo")
    print(json.dumps(dict(mode=mode, **marks)))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()

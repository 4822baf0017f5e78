"""A GPU command's CUDA set-up, begun on a thread as the command starts (:func:`start_driver`).

CuPy initialises the driver (``cuInit``, in its first ``getDeviceCount``) and makes the device's
primary context (its first ``setDevice`` or allocation) holding the interpreter's lock: on the H200
host 0.1 s and 0.13 s in which no other thread of the command ran. Begun here, through ``libcuda``
with :mod:`ctypes`, which releases the lock during each foreign call, both overlap the command's
imports (NumPy's and Numba's, ~0.45 s) instead, and CuPy finds them done. Nothing here imports
NumPy or CuPy.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from typing import Any

__all__ = ["LIBCUDA", "driver_found", "start_driver"]

#: The CUDA driver's library, as CuPy's runtime loads it.
LIBCUDA = "libcuda.so.1"
_drivers: dict[int, threading.Thread] = {}
_DRIVERS_LOCK = threading.Lock()


def start_driver(ordinals: Iterable[int] = (0,), library: Any = None) -> threading.Thread | None:
    """Begin the CUDA driver's set-up for the GPUs ``ordinals`` on a thread, and return it (None when
    every one was begun before, or ``GSEEK_DISABLE_GPU`` is set).

    The thread initialises the driver (``cuInit``) and makes each device's primary context, the one
    CuPy's runtime then finds made. Only a head start: where there is no driver or no such device the
    thread ends, and the backend finds and reports it as before. ``library``: the driver library (a
    test's stand-in; default :data:`LIBCUDA`). The context retained here lives as long as the
    process, as the runtime's does.
    """
    if os.environ.get("GSEEK_DISABLE_GPU"):
        return None
    with _DRIVERS_LOCK:
        todo = [int(n) for n in ordinals if int(n) not in _drivers]
        if not todo:
            return None
        thread = threading.Thread(target=_driver_setup, args=(todo, library), name="gseek-cuda-driver", daemon=True)
        for n in todo:
            _drivers[n] = thread
        thread.start()
    return thread


def driver_found(library: str | None = None) -> bool:
    """Whether the CUDA driver's library (default :data:`LIBCUDA`) loads here and ``GSEEK_DISABLE_GPU`` is
    not set: a look that touches no device (well under a millisecond where it is missing). Without it
    CuPy, if installed, finds no GPU either, and ``--device auto`` takes the CPU: a command then begins
    no GPU set-up (:func:`start_driver`) and no warm-up for one."""
    import ctypes

    if os.environ.get("GSEEK_DISABLE_GPU"):
        return False
    try:
        ctypes.CDLL(library or LIBCUDA)
    except OSError:
        return False
    return True


def _driver_setup(ordinals: list[int], library: Any = None) -> None:
    import ctypes

    try:
        cuda = library if library is not None else ctypes.CDLL(LIBCUDA)
        if cuda.cuInit(0) != 0:  # no device, no driver for it: the backend says so
            return
        for n in ordinals:
            device, context = ctypes.c_int(), ctypes.c_void_p()
            if cuda.cuDeviceGet(ctypes.byref(device), n) == 0:
                cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)
    except (OSError, AttributeError):  # no libcuda here (a machine without a GPU driver)
        pass

"""Compute backends: CPU (Numba) and GPU (CuPy), chosen when an object is built.

Stages are written once against a :class:`Backend`: they allocate with
``backend.xp`` and run kernels with ``backend.launch(family, name, n, *args)``.
On the CPU, ``launch`` calls the family's Numba twin of that name; on the GPU
it launches the CUDA kernel of the same name from the family's ``.cu`` file,
compiled once per process. Both take the same arguments in the same order and
produce identical results.

Nothing here touches CUDA at import time; CuPy is imported only when a GPU
backend is requested (``device="gpu"`` or ``"auto"``).

>>> b = get_backend("cpu", threads=1)
>>> b.name, b.threads
('cpu', 1)
"""

from __future__ import annotations

import contextlib
import copy
import functools
import os
import threading
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import numpy as np

from .errors import BackendError

__all__ = ["Backend", "CpuBackend", "GpuBackend", "get_backend", "gpu_available"]

DEVICES = ("auto", "cpu", "gpu")


class Backend:
    """Where kernels run: a device, its array module ``xp`` and ``launch`` for kernel families.

    Subclasses: :class:`CpuBackend` (Numba twins, numpy arrays) and
    :class:`GpuBackend` (CUDA kernels, CuPy arrays); build one with
    :func:`get_backend`. Stages allocate with ``backend.xp``, move arrays
    with :meth:`asarray` / :meth:`to_host` and run kernels with
    ``backend.launch(family, name, n_items, *args)``. Takes no arguments.

    >>> b = get_backend("cpu", threads=1)
    >>> isinstance(b, Backend), b.name, b.xp.__name__
    (True, 'cpu', 'numpy')
    >>> b.to_host(b.asarray([1, 2, 3], dtype="int32")).tolist()
    [1, 2, 3]
    """

    name: str = "?"
    xp: ModuleType = np

    def asarray(self, array: Any, dtype: Any = None) -> Any:
        """Return ``array`` on this backend's device (no copy if already there)."""
        return self.xp.asarray(array, dtype=dtype)

    def to_host(self, array: Any, pinned: bool = False) -> np.ndarray:
        """Return ``array`` as a numpy array on the host (``pinned``: a GPU's copy goes to page-locked
        memory of CuPy's pool, several times faster for large arrays; copy what is kept)."""
        return np.asarray(array)

    def launch(self, family: ModuleType, kernel: str, n_items: int, *args: Any) -> None:
        raise NotImplementedError

    def synchronize(self) -> None:
        """Wait for queued device work (no-op on the CPU)."""

    def free_memory(self) -> int | None:
        """Free bytes of the device's memory (None on the CPU: the host's memory is not budgeted)."""
        return None

    def active(self) -> contextlib.AbstractContextManager:
        """A context in which this backend's device is the thread's current one.

        CuPy allocates and runs array operations on the calling thread's current
        device; a stage for ``gpu:1`` run from a thread whose current device is
        0 would hand device-0 memory to its kernels. Stages enter this (see
        :func:`on_device`). Nothing to do on the CPU.
        """
        return contextlib.nullcontext()

    def describe(self) -> str:
        """One line for logs, SAM ``@PG`` and BLAST headers."""
        return self.name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"


class CpuBackend(Backend):
    """Numba twins on the host CPU, ``threads`` worker threads (default: all cores).

    Arguments:
        threads: Numba worker threads; None or 0: all of them
            (``NUMBA_NUM_THREADS``, by default the number of cores), and a
            larger number is capped at that. Negative raises
            :class:`~gseek.errors.BackendError`.

    >>> b = CpuBackend(threads=1)
    >>> b, b.threads, b.spec
    (<CpuBackend cpu (numba, 1 threads)>, 1, 'cpu')
    """

    name = "cpu"
    xp = np

    def __init__(self, threads: int | None = None) -> None:
        import numba

        limit = numba.config.NUMBA_NUM_THREADS
        if threads is None or threads == 0:
            threads = limit
        if threads < 0:
            raise BackendError(f"threads must be >= 0, not {threads}")
        self.threads = min(int(threads), limit)

    def launch(self, family: ModuleType, kernel: str, n_items: int, *args: Any) -> None:
        import numba

        numba.set_num_threads(self.threads)
        getattr(family, kernel)(*args)

    def describe(self) -> str:
        return f"cpu (numba, {self.threads} threads)"

    @property
    def spec(self) -> str:
        """The ``device`` name that builds this backend again (e.g. on another process)."""
        return "cpu"


class GpuBackend(Backend):
    """CuPy kernels on one CUDA device.

    Arguments:
        device_id: CUDA device ordinal.
        block_size: threads per block (a ``-D BLOCK`` constant of every kernel),
            a multiple of 32 in 32..1024.
        max_blocks: cap on blocks per launch; kernels loop grid-stride over
            the rest. Tests shrink both so tiny inputs cross block boundaries.

    Building one imports CuPy and checks the device; without CuPy or a
    device it raises :class:`~gseek.errors.BackendError`. Results are
    identical to :class:`CpuBackend`'s. Usually built by
    ``get_backend("gpu")`` / ``get_backend("gpu:N")``; :meth:`with_stream`
    gives a twin on its own CUDA stream. The GPU line below is skipped in the
    doctests (it needs a device):

    >>> get_backend("gpu:0", block_size=128)  # doctest: +SKIP
    <GpuBackend gpu:0 (NVIDIA H100 80GB HBM3, sm_90)>
    >>> issubclass(GpuBackend, Backend), GpuBackend.name
    (True, 'gpu')
    """

    name = "gpu"

    def __init__(self, device_id: int = 0, *, block_size: int = 256, max_blocks: int = 65535) -> None:
        try:
            import cupy
        except ImportError as exc:  # pragma: no cover - depends on the machine
            raise BackendError(f"GPU backend needs CuPy, which failed to import: {exc}") from None
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except cupy.cuda.runtime.CUDARuntimeError as exc:  # pragma: no cover
            raise BackendError(f"no CUDA device: {exc}") from None
        if not 0 <= device_id < count:
            raise BackendError(f"CUDA device {device_id} not found ({count} device(s))")
        if block_size < 32 or block_size > 1024 or block_size % 32:
            raise BackendError(f"block_size must be a multiple of 32 in 32..1024, not {block_size}")
        self.cupy = cupy
        self.xp = cupy
        self.device_id = int(device_id)
        self.device = cupy.cuda.Device(self.device_id)
        self.block_size = int(block_size)
        self.max_blocks = int(max_blocks)
        from gseek.kernels import _cupy_cache

        _cupy_cache.seed_for(cupy, self.device)  # CuPy's kernels gseek uses, where the package has them for this CuPy
        _start_late_imports(self.device_id)  # after the seeding: its kernels come from the seeded cache
        props = cupy.cuda.runtime.getDeviceProperties(self.device_id)
        self.device_name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        self.compute_capability = self.device.compute_capability
        #: None: the device's default stream; else this backend's own stream (:meth:`with_stream`).
        self.stream = None

    def with_stream(self) -> GpuBackend:
        """The same device with its own non-blocking CUDA stream: the copies and
        kernels of work run in :meth:`active` (every backend method) go there.

        Two workers on one GPU, each with its own stream, keep it busy while
        either does its host work; on the default stream a worker's wait would
        also wait for the other's kernels. Work on one stream must not read
        device arrays another stream is still writing.
        """
        twin = copy.copy(self)
        with self.device:
            twin.stream = self.cupy.cuda.Stream(non_blocking=True)
        return twin

    def active(self) -> contextlib.AbstractContextManager:
        return self.device if self.stream is None else self._on_stream()

    @contextlib.contextmanager
    def _on_stream(self) -> Iterator[None]:
        with self.device, self.stream:
            yield

    def asarray(self, array: Any, dtype: Any = None) -> Any:
        with self.active():
            return self.cupy.asarray(array, dtype=dtype)

    def to_host(self, array: Any, pinned: bool = False) -> np.ndarray:
        """The array on the host, after the device's queued work (``pinned``: in a page-locked buffer of
        CuPy's pool, returned to it when the array is freed: copy what is kept).

        The wait is a stream synchronisation before the copy: a copy to
        pageable memory issued while kernels run waits for them and meanwhile
        blocks other threads' copies (measured on an H200: another stream's
        uploads stalled for the kernel's whole time; two GPUs' prelim workers
        alternated, so two H200s ran the DP at one's speed).
        """
        if isinstance(array, np.ndarray):
            return array
        with self.active():
            self.cupy.cuda.get_current_stream().synchronize()
            if not pinned:
                return self.cupy.asnumpy(array)
            array = self.cupy.ascontiguousarray(array)
            memory = self.cupy.cuda.alloc_pinned_memory(array.nbytes)
            out = np.ndarray(array.shape, array.dtype, buffer=memory)
            array.get(out=out)
            return out

    def module(self, family: ModuleType):
        from gseek.kernels import _cuda

        return _cuda.load_module(family.CUDA_SOURCE, self.device_id, _cuda.family_options(family, self.block_size))

    def launch(self, family: ModuleType, kernel: str, n_items: int, *args: Any) -> None:
        if n_items <= 0:
            return
        blocks = min(self.max_blocks, -(-int(n_items) // self.block_size))
        with self.active():
            fn = self.module(family).get_function(kernel)
            fn((blocks,), (self.block_size,), args)

    def free_memory(self) -> int | None:
        with self.device:
            return int(self.cupy.cuda.runtime.memGetInfo()[0])

    def synchronize(self) -> None:
        with self.active():
            self.cupy.cuda.get_current_stream().synchronize()

    def describe(self) -> str:
        return f"gpu:{self.device_id} ({self.device_name}, sm_{self.compute_capability})"

    @property
    def spec(self) -> str:
        """The ``device`` name that builds this backend again (e.g. on another process)."""
        return f"gpu:{self.device_id}"


def gpu_available() -> bool:
    """True when CuPy imports and finds at least one CUDA device."""
    if os.environ.get("GSEEK_DISABLE_GPU"):
        return False
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def get_backend(device: str = "auto", threads: int | None = None, **gpu_options: Any) -> Backend:
    """Build the backend for ``device``: ``auto``, ``cpu``, ``gpu`` or ``gpu:N``.

    Arguments:
        device: ``auto`` (the GPU when CuPy finds one, else the CPU), ``cpu``,
            ``gpu`` (device 0) or ``gpu:N``, any case; a :class:`Backend` is
            returned as it is.
        threads: the CPU worker threads (default: all cores; see
            :class:`CpuBackend`).
        **gpu_options: ``block_size``, ``max_blocks`` of :class:`GpuBackend`.

    Returns the :class:`CpuBackend` or :class:`GpuBackend`. Raises
    :class:`~gseek.errors.BackendError` for an unknown name or an unusable
    GPU. With the environment variable ``GSEEK_DISABLE_GPU`` set, ``auto``
    takes the CPU and ``gpu`` raises.

    >>> cpu = get_backend("cpu", threads=1)
    >>> cpu.describe()
    'cpu (numba, 1 threads)'
    >>> get_backend(cpu) is cpu
    True
    >>> get_backend("gpu:x")
    Traceback (most recent call last):
    ...
    gseek.errors.BackendError: bad device 'gpu:x': expected gpu:N
    """
    if isinstance(device, Backend):
        return device
    dev = str(device).lower()
    if dev == "cpu":
        return CpuBackend(threads)
    if dev == "auto":
        return GpuBackend(0, **gpu_options) if gpu_available() else CpuBackend(threads)
    if dev == "gpu" or dev.startswith("gpu:"):
        ordinal = 0
        if ":" in dev:
            try:
                ordinal = int(dev.split(":", 1)[1])
            except ValueError:
                raise BackendError(f"bad device {device!r}: expected gpu:N") from None
        if os.environ.get("GSEEK_DISABLE_GPU"):
            raise BackendError("GPU requested but GSEEK_DISABLE_GPU is set")
        return GpuBackend(ordinal, **gpu_options)
    raise BackendError(f"unknown device {device!r} (expected auto, cpu, gpu or gpu:N)")


#: What CuPy imports on the first arithmetic kernel of a process: ``cupyx.scipy.sparse`` and, where
#: SciPy is installed, SciPy's sparse package with it (0.6-0.9 s on the H100 host, half of a small
#: BLAST search; ``benchmarks/RESULTS.md``, issue 16). Imported on a thread when the first GPU
#: backend is built, beside the device's set-up and the reading of the inputs, instead of inside
#: the first search (a search that gets there first waits for the same import, done once).
_LATE_IMPORTS = ("cupyx.scipy.sparse",)
_late_imports: threading.Thread | None = None


def _warm_kernels(cupy: Any) -> None:
    """CuPy's first kernel of a process runs NVRTC once on an empty program (the compiler's version,
    part of every kernel's cache key: ``_compile_with_cache_cuda``), 0.2-0.7 s that a BLAST-style
    search's four searchers paid inside their first scan (issue 17's profile). Done here instead, on
    the thread, with the kernels of that scan (sort, prefix sum, nonzero of int64: all in the shipped
    CuPy cache)."""
    x = cupy.arange(8, dtype=cupy.int64)[::-1]
    cupy.cumsum(cupy.sort(x))
    cupy.nonzero(x)
    cupy.cuda.get_current_stream().synchronize()


def _start_late_imports(device_id: int = 0) -> None:
    global _late_imports
    if _late_imports is not None:
        return

    def run() -> None:
        import importlib

        for name in _LATE_IMPORTS:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001, S110 - only a head start: the first kernel imports it (or fails) itself
                pass
        try:
            import cupy

            with cupy.cuda.Device(device_id):
                _warm_kernels(cupy)
        except Exception:  # noqa: BLE001, S110 - only a head start, as above
            pass

    _late_imports = threading.Thread(target=run, name="gseek-cupy-imports", daemon=True)
    _late_imports.start()


# Numba's "workqueue" threading layer must not be entered from two threads at
# once; "omp" and "tbb" may. Until the layer is known, parallel CPU calls take this lock.
# Re-entrant: a stage holding it may call code that takes it again.
_NUMBA_LOCK = threading.RLock()


def numba_guard(cpu: bool = True) -> contextlib.AbstractContextManager:
    """Hold this around parallel Numba work that may run beside another thread's
    (a lock under the ``workqueue`` layer or before the layer is known, nothing
    otherwise; nothing when ``cpu`` is False: device work)."""
    if not cpu:
        return contextlib.nullcontext()
    import numba

    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel function has run yet
        layer = None
    return _NUMBA_LOCK if layer in (None, "workqueue") else contextlib.nullcontext()


def on_device(stage: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``stage(backend, ...)`` with its backend's device current (:meth:`Backend.active`)."""

    @functools.wraps(stage)
    def run(backend: Backend, *args: Any, **kwargs: Any) -> Any:
        with backend.active():
            return stage(backend, *args, **kwargs)

    return run


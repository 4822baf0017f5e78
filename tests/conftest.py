"""Shared fixtures: every kernel test runs on each backend.

The ``backend`` fixture yields a CPU backend with 1 and 2 threads and, when a
CUDA device and CuPy are present, GPU backends with the default launch
geometry and a tiny one (32 threads, 2 blocks) so small inputs cross block
and grid-stride boundaries. GPU cases carry the ``gpu`` mark and are skipped
cleanly without a device; ``pytest -m gpu`` runs only them.
"""

from __future__ import annotations

import signal
import threading

import pytest

from gseek.backend import CpuBackend, GpuBackend, gpu_available

_GPU = None

# A suite started under ``nohup`` (or by a runner that ignores hangups) passes SIGHUP's SIG_IGN on to every
# command the tests start, and the tests of the commands' hangup handling (test_hostile's signal tests,
# test_outputs' nohup test) then see a hangup ignored: they start from the terminal's default, as a user's
# command does (a test of ``nohup`` sets SIG_IGN itself).
if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _gpu_ok() -> bool:
    global _GPU
    if _GPU is None:
        _GPU = gpu_available()
    return _GPU


def pytest_terminal_summary(terminalreporter):
    """Whether the run could use the prebuilt machine code (else it compiled: slower, same results),
    and whether the shipped CUDA machine code still matches the ``.cu`` sources."""
    from gseek.kernels import _cupy_cache
    from gseek.kernels._cuda import cubin_status
    from gseek.kernels._jit import prebuilt_status

    terminalreporter.write_line(f"gseek prebuilt machine code: {prebuilt_status()}")
    terminalreporter.write_line(f"gseek shipped CUDA machine code: {cubin_status()}")
    terminalreporter.write_line(f"gseek shipped CuPy kernels: {_cupy_cache.status()}")


def pytest_collection_modifyitems(config, items):
    if _gpu_ok():
        return
    skip = pytest.mark.skip(reason="no CUDA device / CuPy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


BACKENDS = [
    pytest.param("cpu-1", id="cpu-1"),
    pytest.param("cpu-2", id="cpu-2"),
    pytest.param("gpu", id="gpu", marks=pytest.mark.gpu),
    pytest.param("gpu-tiny", id="gpu-tiny", marks=pytest.mark.gpu),
]


def make_backend(kind: str):
    if kind == "cpu-1":
        return CpuBackend(threads=1)
    if kind == "cpu-2":
        return CpuBackend(threads=2)
    if kind == "gpu":
        return GpuBackend(0)
    if kind == "gpu-tiny":
        return GpuBackend(0, block_size=32, max_blocks=2)
    raise ValueError(kind)


@pytest.fixture(params=BACKENDS)
def backend(request):
    return make_backend(request.param)


@pytest.fixture(autouse=True)
def no_thread_leak():
    """Every test ends with the threads it started with."""
    before = set(threading.enumerate())
    yield
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive() and not t.daemon]
    assert not leaked, f"threads leaked: {leaked}"


@pytest.fixture
def blastdb(tmp_path):
    """The BLAST+ database fixtures (``tests/data/blastdb/``) copied to a writable folder: the conversion
    is cached beside a database (``tests/test_blastdb.py``, ``tests/test_blast_plus.py``)."""
    import shutil
    from pathlib import Path

    out = tmp_path / "db"
    shutil.copytree(Path(__file__).parent / "data" / "blastdb", out)
    return out

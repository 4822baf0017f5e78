"""A GPU command's CUDA set-up begun on a thread (``gseek.gpu_start``), against a stand-in for libcuda:
what it asks of the driver, once a device; nothing where there is no driver or no device."""

from __future__ import annotations

import subprocess
import sys

import pytest

import gseek.gpu_start as b


class FakeDriver:
    """libcuda's calls that :func:`gseek.gpu_start.start_driver` makes, recorded: device N is there when
    N < ``devices``; ``init`` is what ``cuInit`` returns (100: no device)."""

    def __init__(self, devices: int = 2, init: int = 0) -> None:
        self.calls, self.devices, self.init = [], devices, init

    def cuInit(self, flags):
        self.calls.append(("cuInit", flags))
        return self.init

    def cuDeviceGet(self, device, ordinal):
        self.calls.append(("cuDeviceGet", ordinal))
        if ordinal >= self.devices:
            return 101  # CUDA_ERROR_INVALID_DEVICE
        device._obj.value = 10 + ordinal
        return 0

    def cuDevicePrimaryCtxRetain(self, context, device):
        self.calls.append(("cuDevicePrimaryCtxRetain", device.value))
        return 0


def test_start_driver_initialises_the_driver_and_each_context_once(monkeypatch):
    """``start_driver`` runs cuInit, then each device's primary context (retained, as CuPy's runtime
    uses it), on a thread; a device begun before is not begun again; a missing device is skipped."""
    monkeypatch.setattr(b, "_drivers", {})
    monkeypatch.delenv("GSEEK_DISABLE_GPU", raising=False)
    fake = FakeDriver(devices=2)
    thread = b.start_driver([0, 1, 3], library=fake)
    thread.join(10)
    assert thread.name == "gseek-cuda-driver" and thread.daemon
    assert fake.calls == [("cuInit", 0), ("cuDeviceGet", 0), ("cuDevicePrimaryCtxRetain", 10),
                          ("cuDeviceGet", 1), ("cuDevicePrimaryCtxRetain", 11), ("cuDeviceGet", 3)]
    assert b.start_driver([1, 0], library=fake) is None  # begun already
    again = FakeDriver(devices=3)
    b.start_driver([2, 0], library=again).join(10)
    assert again.calls == [("cuInit", 0), ("cuDeviceGet", 2), ("cuDevicePrimaryCtxRetain", 12)]


def test_start_driver_without_a_driver_or_a_device_ends_quietly(monkeypatch):
    """No device (cuInit fails): no context is asked for; no libcuda at all: the thread just ends; with
    GSEEK_DISABLE_GPU nothing starts. The backend finds and reports any of these itself, as before."""
    monkeypatch.setattr(b, "_drivers", {})
    monkeypatch.delenv("GSEEK_DISABLE_GPU", raising=False)
    fake = FakeDriver(init=100)
    b.start_driver([0], library=fake).join(10)
    assert fake.calls == [("cuInit", 0)]
    monkeypatch.setattr(b, "_drivers", {})
    monkeypatch.setattr(b, "LIBCUDA", "libgseek-no-such-driver.so.1")
    b.start_driver([0]).join(10)  # OSError from ctypes, caught on the thread
    monkeypatch.setattr(b, "_drivers", {})
    monkeypatch.setenv("GSEEK_DISABLE_GPU", "1")
    assert b.start_driver([0], library=FakeDriver()) is None and b._drivers == {}


@pytest.mark.gpu
def test_a_gpu_backend_after_the_head_start(tmp_path):
    """On a GPU: the driver and the context begun by ``start_driver`` are the ones CuPy then uses (a
    kernel runs on them, the device counted)."""
    code = ("import gseek.gpu_start as g; g.start_driver([0]).join(); import cupy; "
            "from gseek.backend import get_backend; x = get_backend('gpu').asarray([1, 2, 3]); "
            "print(int((x * 2).sum()), cupy.cuda.runtime.getDeviceCount() > 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.split() == ["12", "True"]


def test_driver_found_looks_for_the_library_only(monkeypatch):
    """``driver_found``: whether the driver's library loads (a library every Linux has stands in for it),
    and never with ``GSEEK_DISABLE_GPU`` set."""
    monkeypatch.delenv("GSEEK_DISABLE_GPU", raising=False)
    assert b.driver_found("libc.so.6") and not b.driver_found("libgseek-no-such-driver.so.1")
    monkeypatch.setenv("GSEEK_DISABLE_GPU", "1")
    assert not b.driver_found("libc.so.6")

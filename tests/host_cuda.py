"""Run the ``.cu`` kernel families on the host CPU, without a GPU.

Each family's source (as the loader expands it) is compiled as C++ with a
small shim that defines just enough of CUDA, and launched as a grid of one
thread: every kernel is a grid-stride loop, so one thread covers every
element. This checks the CUDA source's logic against the Numba twin on any
machine; the ``gpu`` tests check it on a device.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from gseek.backend import Backend
from gseek.kernels import _cuda

SHIM = """
struct gseek_dim3 { unsigned x; };
static const gseek_dim3 blockIdx{0}, threadIdx{0}, blockDim{1}, gridDim{1};
#define __global__
#define __device__
#define __shared__ static
#define __forceinline__ inline
#define __launch_bounds__(n)
template <class T> static inline T __ldg(const T* p) { return *p; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline void __syncthreads() {}
// Warp kernels compile on the host but are never launched there (HostCuda.warp_kernels).
static inline int __shfl_up_sync(unsigned, int v, int) { return v; }
static inline int __shfl_sync(unsigned, int v, int) { return v; }
static inline int __shfl_xor_sync(unsigned, int v, int) { return v; }
static inline int __any_sync(unsigned, int v) { return v; }
static inline void __syncwarp() {}
"""


class HostCuda(Backend):
    """A backend whose ``launch`` calls the host-compiled CUDA kernel of that name."""

    name = "host-cuda"
    xp = np
    #: One host thread cannot run a warp's shuffles: long pairs take the one-thread kernels.
    warp_kernels = False

    def __init__(self, libraries: dict[str, str]) -> None:
        import ctypes

        self.ctypes = ctypes
        self.libraries = {name: ctypes.CDLL(path) for name, path in libraries.items()}
        self.keep: list[np.ndarray] = []

    def asarray(self, array, dtype=None):
        return np.ascontiguousarray(array, dtype=dtype)

    def launch(self, family, kernel, n_items, *args):
        c = self.ctypes
        conv = []
        for a in args:
            if isinstance(a, np.ndarray):
                if not a.flags.c_contiguous:
                    assert not a.flags.writeable, (kernel, "an output must be contiguous")
                    a = np.ascontiguousarray(a)
                    self.keep.append(a)
                conv.append(c.c_void_p(a.ctypes.data))
            elif isinstance(a, np.int64):
                conv.append(c.c_int64(int(a)))
            else:
                assert isinstance(a, np.int32), (kernel, type(a))
                conv.append(c.c_int32(int(a)))
        getattr(self.libraries[family.CUDA_SOURCE], kernel)(*conv)

    def describe(self):
        return "host-compiled " + ", ".join(f"kernels/{name}" for name in self.libraries)


def build(where, families) -> HostCuda:
    """Compile ``families`` (kernel family modules) for the host in folder ``where``."""
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler to build the .cu files for the host")
    (where / "shim.h").write_text(SHIM)
    libraries = {}
    for family in families:
        src = where / family.CUDA_SOURCE
        src.write_text(_cuda.source(family.CUDA_SOURCE))
        defines = [f"-D{k}={v}" for k, v in {**family.CONSTANTS, "BLOCK": 256}.items()]
        lib = where / f"lib{src.stem}.so"
        subprocess.run([cxx, "-O1", "-std=c++17", "-shared", "-fPIC", *defines, "-include", str(where / "shim.h"),
                        "-x", "c++", str(src), "-o", str(lib)], check=True)
        libraries[family.CUDA_SOURCE] = str(lib)
    return HostCuda(libraries)

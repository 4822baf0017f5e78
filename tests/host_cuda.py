"""Run the ``.cu`` kernel families on the host CPU, without a GPU.

Each family's source (as the loader expands it) is compiled as C++ with a
small shim that defines just enough of CUDA, and launched as a grid of one
thread: every kernel is a grid-stride loop, so one thread covers every
element. This checks the CUDA source's logic against the Numba twin on any
machine; the ``gpu`` tests check it on a device.

:func:`build_warp` runs kernels that use warp intrinsics (the DP warp
kernels): one block of 32 host threads, truly concurrent, with the shuffles,
``__any_sync``, ``__ballot_sync`` and ``__syncwarp`` built from a C++20 barrier. Slow (two
barrier waits a shuffle), so its tests use small pairs.
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
static inline int atomicAdd(int* p, int v) { int o = *p; *p += v; return o; }
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    unsigned long long o = *p; *p += v; return o;
}
// Warp kernels compile on the host but are never launched there (HostCuda.warp_kernels).
static inline int __shfl_up_sync(unsigned, int v, int) { return v; }
static inline int __shfl_sync(unsigned, int v, int) { return v; }
static inline int __shfl_xor_sync(unsigned, int v, int) { return v; }
static inline int __any_sync(unsigned, int v) { return v; }
static inline unsigned __ballot_sync(unsigned, int v) { return v ? 1u : 0u; }
static inline void __syncwarp() {}
static inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
static inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }
"""


WARP_SHIM = """
#include <atomic>
#include <barrier>
#include <thread>
#include <utility>
#include <vector>
struct gseek_dim3 { unsigned x; };
static thread_local gseek_dim3 threadIdx{0};
static const gseek_dim3 blockIdx{0}, blockDim{32}, gridDim{1};
#define __global__
#define __device__
#define __shared__ static
#define __forceinline__ inline
#define __launch_bounds__(n)
template <class T> static inline T __ldg(const T* p) { return *p; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static std::barrier<>* gseek_warp;
static volatile int gseek_lanes[32];
static inline void __syncwarp() { std::atomic_thread_fence(std::memory_order_seq_cst); gseek_warp->arrive_and_wait(); }
static inline void __syncthreads() { __syncwarp(); }
static inline int gseek_swap(int v, int src) {
    gseek_lanes[threadIdx.x] = v; __syncwarp(); int r = gseek_lanes[src & 31]; __syncwarp(); return r;
}
static inline int __shfl_up_sync(unsigned, int v, int d) { int l = threadIdx.x; return gseek_swap(v, l >= d ? l - d : l); }
static inline int __shfl_sync(unsigned, int v, int s) { return gseek_swap(v, s); }
static inline int __shfl_xor_sync(unsigned, int v, int d) { return gseek_swap(v, threadIdx.x ^ d); }
static inline int __any_sync(unsigned, int v) {
    gseek_lanes[threadIdx.x] = v; __syncwarp();
    int r = 0; for (int k = 0; k < 32; ++k) r |= gseek_lanes[k] != 0;
    __syncwarp(); return r;
}
static inline unsigned __ballot_sync(unsigned, int v) {
    gseek_lanes[threadIdx.x] = v; __syncwarp();
    unsigned r = 0; for (int k = 0; k < 32; ++k) r |= (gseek_lanes[k] != 0 ? 1u : 0u) << k;
    __syncwarp(); return r;
}
static inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
static inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }
"""

# One launch: 32 threads run the kernel with the arguments unpacked from argv.
WARP_LAUNCH = """
template <class... A, std::size_t... I>
static void gseek_call(void (*k)(A...), void** argv, std::index_sequence<I...>) {
    k(*reinterpret_cast<A*>(argv[I])...);
}
template <class... A>
static void gseek_launch(void (*k)(A...), void** argv) {
    std::barrier<> warp(32);
    gseek_warp = &warp;
    std::vector<std::thread> lanes;
    for (unsigned t = 0; t < 32; ++t)
        lanes.emplace_back([=] { threadIdx.x = t; gseek_call(k, argv, std::index_sequence_for<A...>{}); });
    for (auto& lane : lanes) lane.join();
}
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

    def c_args(self, kernel, args):
        """The launch arguments as ctypes values (arrays as pointers)."""
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
        return conv

    def launch(self, family, kernel, n_items, *args):
        getattr(self.libraries[family.CUDA_SOURCE], kernel)(*self.c_args(kernel, args))

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


class WarpHostCuda(HostCuda):
    """:class:`HostCuda` whose launches run one warp of 32 host threads."""

    name = "host-cuda-warp"
    warp_kernels = True

    def launch(self, family, kernel, n_items, *args):
        c = self.ctypes
        values = self.c_args(kernel, args)
        argv = (c.c_void_p * len(values))(*[c.cast(c.pointer(v), c.c_void_p) for v in values])
        getattr(self.libraries[family.CUDA_SOURCE], "gseek_warp_" + kernel)(argv)

    def describe(self):
        return "host-compiled, one warp of threads: " + ", ".join(f"kernels/{name}" for name in self.libraries)


def build_warp(where, family) -> WarpHostCuda:
    """Compile ``family`` for the host with warp intrinsics on 32 threads (C++20)."""
    import re

    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler to build the .cu files for the host")
    source = _cuda.source(family.CUDA_SOURCE)
    kernels = re.findall(r'extern "C" __global__ void(?: __launch_bounds__\(BLOCK\))?\s+(\w+)\(', source)
    entry = "\n".join(f'extern "C" void gseek_warp_{k}(void** argv) {{ gseek_launch(&{k}, argv); }}' for k in kernels)
    (where / "warp_shim.h").write_text(WARP_SHIM)
    src = where / ("warp_" + family.CUDA_SOURCE)
    src.write_text(source + "\n" + WARP_LAUNCH + entry + "\n")
    defines = [f"-D{k}={v}" for k, v in {**family.CONSTANTS, "BLOCK": 32}.items()]
    lib = where / f"libwarp_{src.stem}.so"
    done = subprocess.run([cxx, "-O1", "-std=c++20", "-shared", "-fPIC", "-pthread", *defines, "-include",
                           str(where / "warp_shim.h"), "-x", "c++", str(src), "-o", str(lib)], capture_output=True,
                          text=True)
    if done.returncode != 0 and "barrier" in done.stderr:
        pytest.skip("the C++ compiler has no C++20 <barrier>")
    done.check_returncode()
    return WarpHostCuda({family.CUDA_SOURCE: str(lib)})


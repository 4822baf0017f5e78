"""Run the ``.cu`` kernel families on the host CPU, without a GPU.

Each family's source (as the loader expands it) is compiled as C++ with a
small shim that defines just enough of CUDA, and launched as a grid of one
thread: every kernel is a grid-stride loop, so one thread covers every
element. This checks the CUDA source's logic against the Numba twin on any
machine; the ``gpu`` tests check it on a device.

:func:`build_warp` runs kernels that use warp intrinsics (the DP warp
kernels) as one warp of 32 lanes on one host thread. Each lane is a
coroutine with its own stack, started with ``makecontext`` (POSIX
``ucontext``) and then switched with ``_setjmp``/``_longjmp`` (no system
call a switch, unlike ``swapcontext``). The lanes take turns: a warp barrier
(``__syncwarp``, and the two barriers inside each shuffle, ``__any_sync``
and ``__ballot_sync``) saves the running lane and resumes the next one, lane
31 resuming lane 0, so every lane has arrived when lane 0 goes on.
``threadIdx.x`` is the running lane's index. The order is fixed, so a run is
deterministic, and a kernel whose lanes do not all reach the same barriers
fails its launch (an ``AssertionError``) instead of hanging. Between two
barriers the lanes run one after another, lane 0 first: a missing barrier
shows up as that order, not as a race.
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
#undef _FORTIFY_SOURCE  // its _longjmp refuses to jump to another stack
#include <cstddef>
#include <setjmp.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <utility>
struct gseek_dim3 { unsigned x; };
static gseek_dim3 threadIdx{0};  // the running lane's index: each lane sets it when it resumes
static const gseek_dim3 blockIdx{0}, blockDim{32}, gridDim{1};
#define __global__
#define __device__
#define __shared__ static
#define __forceinline__ inline
#define __launch_bounds__(n)
template <class T> static inline T __ldg(const T* p) { return *p; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
// The warp: each lane's start (a ucontext) and, once started, where it waits
// (a jmp_buf in __syncwarp); where the launcher waits; the lanes not yet returned.
static ucontext_t gseek_start[32];
static bool gseek_started[32];
static jmp_buf gseek_wait[32], gseek_home;
static int gseek_live;
static const char* gseek_error;
[[noreturn]] static void gseek_fail(const char* why) {
    gseek_error = why;
    _longjmp(gseek_home, 1);
}
[[noreturn]] static void gseek_resume(unsigned lane) {
    if (gseek_started[lane]) _longjmp(gseek_wait[lane], 1);
    gseek_started[lane] = true;
    setcontext(&gseek_start[lane]);
    gseek_fail("setcontext failed");
}
// A warp barrier: save this lane and resume the next one (lane 31 resumes lane 0).
__attribute__((noinline)) static void __syncwarp() {
    const unsigned me = threadIdx.x;
    if (gseek_live != 32) gseek_fail("a lane reached a warp barrier after another lane returned");
    __asm__ __volatile__("" ::: "memory");
    if (_setjmp(gseek_wait[me]) == 0) gseek_resume((me + 1) & 31);
    __asm__ __volatile__("" ::: "memory");
    threadIdx.x = me;
}
static inline void __syncthreads() { __syncwarp(); }
static volatile int gseek_lanes[32];
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

# One launch: 32 lanes run the kernel with the arguments unpacked from argv,
# lane 0 started from the launcher (which waits in gseek_home until lane 31 returns).
# Each lane's stack is 1 MiB above 64 KiB of guard (an overflow faults); the
# stacks are mapped at the first launch and kept. Returns 0, or 1 with the
# reason in gseek_warp_error().
WARP_LAUNCH = """
static const std::size_t gseek_guard = 1 << 16, gseek_stack = 1 << 20;
static char* gseek_stacks;
static void (*gseek_kernel)();
static void** gseek_argv;
static void (*gseek_body)(void (*)(), void**);
template <class... A, std::size_t... I>
static void gseek_call(void (*k)(A...), void** argv, std::index_sequence<I...>) {
    k(*reinterpret_cast<A*>(argv[I])...);
}
template <class... A>
static void gseek_body_of(void (*k)(), void** argv) {
    gseek_call(reinterpret_cast<void (*)(A...)>(k), argv, std::index_sequence_for<A...>{});
}
// A lane: run the kernel, then resume the next lane (lane 31: the launcher).
static void gseek_lane(int lane) {
    threadIdx.x = lane;
    gseek_body(gseek_kernel, gseek_argv);
    --gseek_live;
    if (lane < 31) gseek_resume(lane + 1);
    if (gseek_live != 0) gseek_fail("a lane returned while others waited at a warp barrier");
    _longjmp(gseek_home, 1);
}
template <class... A>
static int gseek_launch(void (*k)(A...), void** argv) {
    if (!gseek_stacks) {
        void* m = mmap(nullptr, 32 * (gseek_guard + gseek_stack), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) { gseek_error = "cannot map the lanes' stacks"; return 1; }
        gseek_stacks = static_cast<char*>(m);
        for (int t = 0; t < 32; ++t) mprotect(gseek_stacks + t * (gseek_guard + gseek_stack), gseek_guard, PROT_NONE);
    }
    gseek_kernel = reinterpret_cast<void (*)()>(k);
    gseek_argv = argv;
    gseek_body = &gseek_body_of<A...>;
    gseek_live = 32;
    gseek_error = nullptr;
    for (int t = 0; t < 32; ++t) {
        ucontext_t& c = gseek_start[t];
        if (getcontext(&c) != 0) { gseek_error = "getcontext failed"; return 1; }
        c.uc_stack.ss_sp = gseek_stacks + t * (gseek_guard + gseek_stack) + gseek_guard;
        c.uc_stack.ss_size = gseek_stack;
        c.uc_link = nullptr;
        makecontext(&c, reinterpret_cast<void (*)()>(&gseek_lane), 1, t);
        gseek_started[t] = false;
    }
    if (_setjmp(gseek_home) == 0) gseek_resume(0);
    return gseek_error != nullptr;
}
extern "C" const char* gseek_warp_error() { return gseek_error; }
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
    """:class:`HostCuda` whose launches run one warp of 32 lanes (coroutines on one host thread)."""

    name = "host-cuda-warp"
    warp_kernels = True

    def launch(self, family, kernel, n_items, *args):
        c = self.ctypes
        values = self.c_args(kernel, args)
        argv = (c.c_void_p * len(values))(*[c.cast(c.pointer(v), c.c_void_p) for v in values])
        library = self.libraries[family.CUDA_SOURCE]
        if getattr(library, "gseek_warp_" + kernel)(argv) != 0:
            library.gseek_warp_error.restype = c.c_char_p
            raise AssertionError(f"{kernel}: {library.gseek_warp_error().decode()}")

    def describe(self):
        return "host-compiled, one warp of lanes: " + ", ".join(f"kernels/{name}" for name in self.libraries)


def build_warp(where, family) -> WarpHostCuda:
    """Compile ``family`` for the host with warp intrinsics on 32 lanes of one thread."""
    import re

    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler to build the .cu files for the host")
    source = _cuda.source(family.CUDA_SOURCE)
    kernels = re.findall(r'extern "C" __global__ void(?: __launch_bounds__\(BLOCK\))?\s+(\w+)\(', source)
    entry = "\n".join(f'extern "C" int gseek_warp_{k}(void** argv) {{ return gseek_launch(&{k}, argv); }}'
                      for k in kernels)
    (where / "warp_shim.h").write_text(WARP_SHIM)
    src = where / ("warp_" + family.CUDA_SOURCE)
    src.write_text(source + "\n" + WARP_LAUNCH + entry + "\n")
    defines = [f"-D{k}={v}" for k, v in {**family.CONSTANTS, "BLOCK": 32}.items()]
    lib = where / f"libwarp_{src.stem}.so"
    done = subprocess.run([cxx, "-O1", "-std=c++17", "-shared", "-fPIC", *defines, "-include",
                           str(where / "warp_shim.h"), "-x", "c++", str(src), "-o", str(lib)], capture_output=True,
                          text=True)
    if done.returncode != 0 and "ucontext" in done.stderr:
        pytest.skip("the C library has no <ucontext.h>")
    done.check_returncode()
    return WarpHostCuda({family.CUDA_SOURCE: str(lib)})


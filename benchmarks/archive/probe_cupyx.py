"""Which CuPy call imports cupyx (and with it scipy.sparse): run steps one by one, report sys.modules after each."""
import sys, time
import numpy as np
import cupy
steps = [
    ("arange", lambda: cupy.arange(10)),
    ("searchsorted", lambda: cupy.searchsorted(cupy.arange(10), cupy.arange(5), side="right")),
    ("minus int", lambda: cupy.arange(5) - 1),
    ("minus np.int64", lambda: cupy.arange(5) - np.int64(1)),
    ("np.int64 minus", lambda: np.int64(1) - cupy.arange(5)),
    ("int64 array minus", lambda: cupy.arange(5, dtype=np.int64) - cupy.arange(5, dtype=np.int64)),
    ("lexsort", lambda: cupy.lexsort(cupy.stack([cupy.arange(5), cupy.arange(5)]))),
    ("argsort", lambda: cupy.argsort(cupy.arange(5))),
    ("sort", lambda: cupy.sort(cupy.arange(5))),
    ("nonzero", lambda: cupy.nonzero(cupy.arange(5))),
    ("cumsum", lambda: cupy.cumsum(cupy.arange(5))),
    ("any axis", lambda: (cupy.ones((2, 5)) != 0).any(axis=0)),
    ("get_array_module", lambda: cupy.get_array_module(cupy.arange(3))),
]
for name, fn in steps:
    t = time.perf_counter(); fn(); cupy.cuda.Device().synchronize(); dt = time.perf_counter() - t
    print(f"{name:20s} {dt * 1000:8.1f} ms  cupyx imported: {'cupyx' in sys.modules}  scipy.sparse: {'scipy.sparse' in sys.modules}")
print("accelerators:", cupy._core.get_elementwise_accelerators() if hasattr(cupy._core, "get_elementwise_accelerators") else "?")
import os; print("CUPY_ACCELERATORS", os.environ.get("CUPY_ACCELERATORS"), "PYTHONDONTWRITEBYTECODE", os.environ.get("PYTHONDONTWRITEBYTECODE"))
t = time.perf_counter(); import cupyx; print(f"import cupyx (if not yet): {(time.perf_counter() - t) * 1000:.0f} ms")

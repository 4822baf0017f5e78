"""The warm floor of any Numba command (docs/startup.md, "The warm floor"): numpy, numba, the first
cached dispatch (Numba's CPU target initialised once per process), then gseek.cli. Run twice: the
first run compiles ``f`` into the cache. Imports are timed in order (``import_module``)."""

import importlib
import time

t0 = time.perf_counter()
importlib.import_module("numpy")
t1 = time.perf_counter()
numba = importlib.import_module("numba")
t2 = time.perf_counter()


@numba.njit(cache=True)
def f(x):
    return x + 1


f(1)
t3 = time.perf_counter()
f(2)
t4 = time.perf_counter()
importlib.import_module("gseek.cli")
t5 = time.perf_counter()
print(f"numpy {t1 - t0:.3f}  numba import {t2 - t1:.3f}  first cached dispatch {t3 - t2:.3f}  second {t4 - t3:.4f}  "
      f"gseek.cli rest {t5 - t4:.3f}")

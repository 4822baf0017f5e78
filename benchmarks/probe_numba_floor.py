"""The warm floor of any Numba command (docs/startup.md, "The warm floor"): numpy, numba, the first
cached dispatch (Numba's CPU target initialised once per process), then gseek.cli. Run twice: the
first run compiles f into the cache."""

import time
t0 = time.perf_counter()
import numpy  # noqa: E402,F401
t1 = time.perf_counter()
import numba  # noqa: E402,F401
t2 = time.perf_counter()
from numba import njit  # noqa: E402


@njit(cache=True)
def f(x):
    return x + 1


f(1)
t3 = time.perf_counter()
f(2)
t4 = time.perf_counter()
import gseek.cli  # noqa: E402,F401
t5 = time.perf_counter()
print(f"numpy {t1-t0:.3f}  numba import {t2-t1:.3f}  first cached dispatch {t3-t2:.3f}  second {t4-t3:.4f}  "
      f"gseek.cli rest {t5-t4:.3f}")

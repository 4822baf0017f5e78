"""Loading cached machine code (``gseek.kernels._loading``): the object's own symbol table in place of its
parsed bitcode, no refresh of Numba's registries, and everything a loaded function needs still there.

Fresh processes load functions of a small package from a Numba cache filled by another process: they run,
a parallel one included, with no refresh of the target's registries (Numba's loader refreshes before
every load); a function compiled later links against a loaded one (its bitcode parsed then); one whose
machine code needs a symbol only an import of Numba's registers (a string hash) still loads and runs.
"""

from __future__ import annotations

import glob
import os
import pickle
import subprocess
import sys
import textwrap

import pytest

from gseek.kernels import _jit
from gseek.kernels._loading import object_symbols

MODULE = """
import numba
import numpy as np
from gseek.kernels._jit import njit


@njit(cache=True)
def total(values):
    return values.sum() * 2


@njit(cache=True, parallel=True)
def squares(values, out):
    for i in numba.prange(values.size):
        out[i] = values[i] * values[i]


@njit(cache=True)
def text_hash(n):
    return hash("ab" * n)
"""

#: Loads (or, in an empty cache, compiles) the three functions; prints what they return, the refreshes of the
#: target's registries, the functions compiled (not found in the cache), whether total's library holds no
#: parsed module; then what a fresh (uncached) function calling total returns, and the same question.
PROBE = """
import os
import numpy as np
import numba
from numba.core import base

MISSING = os.environ.get("PROBE_MISSING")
refreshes = []
_refresh = base.BaseContext.refresh
base.BaseContext.refresh = lambda self: refreshes.append(1) or _refresh(self)
if MISSING:  # a symbol every entry needs (the wrapper's) reported unknown: each load refreshes first
    import gseek.kernels._loading as loading

    known = loading.ll.address_of_symbol
    loading.ll.address_of_symbol = lambda name: None if name == MISSING else known(name)
import sys
from numba.core.runtime import rtsys
from cachedmod import squares, text_hash, total

made = any(f._cache._made is not None for f in (squares, text_hash, total))  # before any call
folder = os.path.isdir(os.environ["NUMBA_CACHE_DIR"])
values = np.arange(5, dtype=np.int64)
out = np.zeros(5, np.int64)
squares(values, out)
first, hashed = total(values), text_hash(3) == hash("ab" * 3)
library = total.overloads[total.signatures[0]].library
compiled = sum(sum(f.stats.cache_misses.values()) for f in (squares, text_hash, total))
print(first, out.tolist(), hashed, len(refreshes), compiled, library._shared_module is None, rtsys._init,
      "numpy.ma" in sys.modules, made, folder)


@numba.njit
def calls_total(values):
    return total(values) + 1


print(calls_total(values), library._shared_module is None)
"""


def _probe(src, cache, **more):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "GSEEK_PREBUILT"))}
    env.update(PYTHONPATH=str(src), NUMBA_CACHE_DIR=str(cache), **more)
    proc = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_cached_functions_load_without_refresh_run_and_link(tmp_path):
    """Also: no function's cache is made (nor its folder) before the function is first called; the loads compile
    no runtime module of Numba's (``rtsys`` left uninitialised until a compile) and import no ``numpy.ma``."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "cachedmod.py").write_text(textwrap.dedent(MODULE))
    first = _probe(src, tmp_path / "cache")  # compiles (and refreshes, as every compile does)
    assert first[0].startswith("20 [0, 1, 4, 9, 16] True ") and int(first[0].split()[8]) >= 3, first
    assert first[0].split()[-4:] == ["True", "False", "False", "False"], first  # the compile initialised the runtime
    loaded = _probe(src, tmp_path / "cache")
    # all three loaded: no compile, no refresh, the linking bitcode not parsed, the runtime's module not compiled
    assert loaded[0] == "20 [0, 1, 4, 9, 16] True 0 0 True False False False True", loaded
    assert loaded[1] == "21 False"  # a compile linked total (and the runtime's module): its bitcode parsed then
    unresolved = _probe(src, tmp_path / "cache", PROBE_MISSING="PyArg_UnpackTuple")
    values, refreshes, compiles = " ".join(unresolved[0].split()[:7]), *unresolved[0].split()[7:9]
    assert values == "20 [0, 1, 4, 9, 16] True" and int(refreshes) > 0 and compiles == "0", unresolved
    assert unresolved[0].split()[-4] == "True", unresolved  # the refresh initialised the runtime whole


def _shipped_objects():
    folder = _jit.PREBUILT / _jit.prebuilt_set()
    for path in sorted(glob.glob(str(folder / "*" / "*.nbc"))):
        name, kind, data = pickle.loads(open(path, "rb").read())[0]
        if kind == "object":
            yield os.path.relpath(path, folder), data


@pytest.mark.skipif(not (_jit.PREBUILT / _jit.prebuilt_set()).is_dir(), reason="no prebuilt set for this Python")
def test_the_object_defines_what_its_bitcode_defines():
    """For every shipped entry, the ELF symbol table names the functions and data its bitcode defines (what
    Numba's loader lists from the parsed bitcode)."""
    import llvmlite.binding as ll
    from numba.core.registry import cpu_target

    cpu_target.target_context  # LLVM set up
    entries = list(_shipped_objects())
    assert entries
    for path, (obj, bitcode) in entries:
        module = ll.parse_bitcode(bitcode)
        from_bitcode = {gv.name for group in (module.functions, module.global_variables) for gv in group
                        if not gv.is_declaration}
        defined, needed = object_symbols(obj)
        assert defined == from_bitcode, path
        assert needed and not needed & defined, path


ARRAYS = """
import numpy as np
from gseek.kernels._jit import njit


@njit(cache=True)
def squares_found(n, x):
    out = np.empty(n, np.int64)
    for i in range(n):
        out[i] = i * i
    return np.searchsorted(out, x), out.sum()
"""

#: Loads (or compiles) ``squares_found``, whose code calls Numba's own helpers (``np.empty``, ``np.searchsorted``);
#: prints what it returns, whether Numba's modules of those helpers were imported, the environment the load
#: gave one of them; then what a function compiled after it returns (its helpers' modules imported then).
ARRAYS_PROBE = """
import sys
import numpy as np
import numba
from arraysmod import squares_found

mods = ("numba.np.arrayobj", "numba.np.arraymath")
found = squares_found(6, 10)
loaded = [m for m in mods if m in sys.modules]
refs = squares_found.overloads[squares_found.signatures[0]].referenced_envs or []  # (None when compiled)
numba_envs = {e.globals["__name__"]: len(e.globals) for e in refs if e.globals["__name__"].startswith("numba.")}
print(found, loaded, sorted(numba_envs), set(numba_envs.values()))


@numba.njit
def later(n):
    return np.zeros(n).sum() + squares_found(n, 10)[1] + np.searchsorted(np.arange(n), 2)


print(later(6), [m for m in mods if m in sys.modules])
"""


def test_numba_helpers_environments_load_without_their_modules(tmp_path):
    """A loaded function calling Numba's helpers runs without Numba's modules of those helpers imported (their
    environments hold only the module's name: ``_loading._rebuild_env``); a function compiled later in the
    process, calling the same helpers and the loaded function, runs as it would."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "arraysmod.py").write_text(textwrap.dedent(ARRAYS))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "GSEEK_PREBUILT"))}
    env.update(PYTHONPATH=str(src), NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, "-c", ARRAYS_PROBE], env=env, capture_output=True, text=True, timeout=600)
            for _ in range(2)]  # compiles, then loads
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr
    compiled, loaded = (r.stdout.splitlines() for r in runs)
    both = "['numba.np.arrayobj', 'numba.np.arraymath']"
    assert compiled[0] == f"(4, 55) {both} [] set()", compiled
    # loaded: neither module imported, their environments (every one) holding the module's name alone
    assert loaded[0] == "(4, 55) [] ['numba.np.arraymath', 'numba.np.arrayobj'] {1}", loaded
    assert compiled[1] == loaded[1] == f"57.0 {both}", (compiled, loaded)


def _arrays():
    """Arrays of every kind Numba types: dtypes it has a type for and some it has none for, 0 to 3 dimensions,
    C, F and neither, writable and read-only."""
    import numpy as np

    dtypes = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
              np.float32, np.float64, np.complex64, np.complex128, "M8[ns]", "m8[s]", "S5", "U3", ">i4", "<f8",
              np.dtype([("a", np.int32), ("b", np.float64)]), np.dtype([("a", "S2"), ("b", ">i8")], align=True),
              np.dtype([("a", object), ("b", np.int32)]), object]
    for dtype in dtypes:
        base = np.zeros((4, 6, 2), dtype=dtype)
        for view in (base[:, 0, 0], base[0, 1:, 1], base, base[:, :, 0], base[:, :, 0].T, base[::2], base[..., ::2],
                     np.asfortranarray(base[:, :, 0]), base.reshape(-1)[:0], np.zeros((), dtype)):
            yield view
            readonly = view.view()
            readonly.flags.writeable = False
            yield readonly


def test_arguments_are_typed_as_numba_types_them(monkeypatch):
    """``_jit._typeof_argument`` gives Numba's own type (``Dispatcher.typeof_pyval``) for every kind of array, and
    for anything else (a masked array, scalars, a tuple) defers to Numba, errors included. (``numpy.ma`` is taken
    out of ``sys.modules`` for the test, as in a command that never imported it: the arrays are typed here.)"""
    import numpy as np
    from numba.core.dispatcher import Dispatcher

    np.ma  # (NumPy's attribute, which Numba's typing reads, stays)
    monkeypatch.delitem(sys.modules, "numpy.ma")

    twice = _jit.njit()(lambda a: a)
    arrays = list(_arrays())
    kinds = {(a.dtype, a.ndim, a.flags.c_contiguous, a.flags.f_contiguous, a.flags.writeable) for a in arrays}
    assert len(arrays) == 460 and len(kinds) > 250, len(kinds)
    for value in (*arrays, 3, 2.5, (1, np.int32(2)), b"ab", None):
        mine, numbas = _jit._typeof_argument(twice, value), Dispatcher.typeof_pyval(twice, value)
        assert mine == numbas and type(mine) is type(numbas), (value.dtype if hasattr(value, "dtype") else value, mine)
    masked = np.ma.masked_array(np.arange(3), mask=[0, 1, 0])
    for typeof in (_jit._typeof_argument, Dispatcher.typeof_pyval):
        with pytest.raises(Exception, match="MaskedArray"):
            typeof(twice, masked)

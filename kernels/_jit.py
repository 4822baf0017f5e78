"""``njit``: Numba's ``njit`` whose on-disk cache also reads the machine code shipped with gseek.

Numba compiles a function on its first call with new argument types and keeps
the machine code in its cache (``__pycache__`` beside the module, or
``NUMBA_CACHE_DIR``). A fresh install starts with that cache empty, and its
first command used to spend 35-65 s compiling (``docs/startup.md``). gseek
therefore ships the machine code of what ``gseek compile`` compiles, built for
a generic x86-64 CPU (it runs on any, and measured as fast as code tuned to
the host: ``benchmarks/RESULTS.md``), in :data:`PREBUILT`: one set per
Python and Numba version it was built with (``py3.11-numba0.68.1/``,
:func:`prebuilt_set`), each a folder per module holding Numba's own index and
data files, and ``manifest.json``. A process reads the set of its own Python
and Numba only.

A function decorated here with ``cache=True`` looks in Numba's cache first
(code compiled on this machine, ``gseek compile`` included), then in the
prebuilt folder of its module, and compiles only when neither has it. A
prebuilt entry is used only where it was built from exactly this code:

* Numba's own checks: the same source file content, the same bytecode of the
  function, the same signature, Numba version, Python version and target
  triple (the entry's CPU is ``generic``, whatever the host's);
* the manifest's: the same Numba, llvmlite and NumPy major version; every
  gseek module the function's module imports (the closure, at any depth, by
  its source and by what importing it loads) has the content it had when the
  entry was built, so a change to an inlined helper or a constant in another
  module is never hidden behind a stale entry; and every file of the module's
  folder has the SHA-256 the manifest gives (a damaged or half-written folder
  is not read).

Anything else (other versions, another platform, a changed module) leaves the
entry unused: the function is compiled as before, with the same
results. ``GSEEK_PREBUILT=0`` turns the prebuilt code off; ``GSEEK_PREBUILT=DIR``
reads another folder of the same form (sets inside), or DIR itself where it
holds a ``manifest.json`` (one set, whatever its name). ``python -m gseek.precompile
--prebuilt`` rebuilds the set of the Python that runs it
(:func:`gseek.precompile.build_prebuilt`).

>>> @njit(nogil=True)
... def twice(x):
...     return 2 * x
>>> twice(21)
42
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import sys
from pathlib import Path

import numba
import numpy as np
from numba.core import types
from numba.core.errors import NumbaNotImplementedError
from numba.np import numpy_support

try:
    from numba.core.caching import FunctionCache

    from ._loading import EntryFile, rebuild
except ImportError:  # a Numba whose cache is laid out otherwise: its own cache only, as cache=True gives
    FunctionCache = EntryFile = None

__all__ = ["PREBUILT", "PREBUILT_CPU", "module_digest", "njit", "prebuilt_folder", "prebuilt_modules", "prebuilt_set",
           "prebuilt_sets", "prebuilt_status"]

#: The prebuilt machine code: a set per Python and Numba (:func:`prebuilt_set`), each of ``<module>/`` folders
#: of Numba index (``.nbi``) and data (``.nbc``) files, and ``manifest.json`` (versions; each module's import
#: closure with the SHA-256 of every file in it).
PREBUILT = Path(__file__).resolve().with_name("prebuilt")
#: The CPU the prebuilt code is compiled for (``NUMBA_CPU_NAME``): LLVM's baseline x86-64, no extra features.
PREBUILT_CPU = "generic"


def njit(**options):
    """``numba.njit(**options)``; with ``cache=True`` its cache also reads :data:`PREBUILT`, and is made on the
    function's first call (:class:`_LazyCache`). Its arguments' types are Numba's, found without importing
    ``numpy.ma`` (:func:`_typeof_argument`)."""
    if FunctionCache is None:
        return numba.njit(**options)
    cache = options.pop("cache", False)

    def decorate(func):
        dispatcher = numba.njit(**options)(func)
        if hasattr(dispatcher, "enable_caching"):  # (NUMBA_DISABLE_JIT: the Python function itself)
            dispatcher.typeof_pyval = functools.partial(_typeof_argument, dispatcher)
            if cache:
                dispatcher._cache = _LazyCache(func)  # what Dispatcher.enable_caching sets, one class further
        return dispatcher

    return decorate


def _typeof_argument(dispatcher, value):
    """Numba's type of an argument (``Dispatcher.typeof_pyval``, which Numba's dispatcher asks for each new kind
    of array it is given, and for every read-only one). Numba's own first asks whether an array is a
    ``numpy.ma.MaskedArray``, importing ``numpy.ma`` (~30 ms on the VM, the first call of a command); an array
    of the exact ``ndarray`` class is not one, so its type is made here as Numba makes it
    (``numba.core.typing.typeof._typeof_ndarray``); any other value, or a dtype Numba has no type for, is
    Numba's to judge.

    >>> import numpy as np
    >>> twice = njit()(lambda a: 2 * a)
    >>> print(_typeof_argument(twice, np.zeros((2, 3), np.int32)[:, ::2]))
    array(int32, 2d, A)
    """
    if type(value) is np.ndarray and "numpy.ma" not in sys.modules:
        try:
            dtype = numpy_support.from_dtype(value.dtype)
        except NumbaNotImplementedError:
            dtype = None
        if dtype is not None:
            found = types.Array(dtype, value.ndim, numpy_support.map_layout(value), readonly=not value.flags.writeable)
            dispatcher._types_active_call.add(found)  # (what Numba's does with the type it returns)
            return found
    return type(dispatcher).typeof_pyval(dispatcher, value)


if FunctionCache is not None:

    class _LazyCache:
        """A function's :class:`_PrebuiltCache`, made when Numba first asks it for something (a load, a save).
        Making one tests that its folder is writable by creating a file there (Numba's locator): 0.1-0.2 ms a
        function, and a megablast command decorates ~100 functions and calls 28 of them."""

        def __init__(self, py_func):
            self._py_func = py_func
            self._made = None

        def __getattr__(self, name: str):  # (only for what this object lacks: the cache's own names)
            if self._made is None:
                self._made = _PrebuiltCache(self._py_func)
            return getattr(self._made, name)

    class _PrebuiltCache(FunctionCache):
        """Numba's cache of one function, then the prebuilt entry of the same function; either loaded by
        :func:`gseek.kernels._loading.rebuild` (its linking bitcode parsed only if a compile links it; the
        environments of Numba's own modules made without importing them: ``_loading.EntryFile``)."""

        def __init__(self, py_func):
            super().__init__(py_func)
            self._cache_file = EntryFile(self._cache_path, self._impl.filename_base, self._cache_file._source_stamp)

        def load_overload(self, sig, target_context):
            """Numba's, without its refresh of the target's registries first (:mod:`gseek.kernels._loading`:
            ``rebuild`` does what a load needs of it)."""
            return self._load_overload(sig, target_context)

        def _load_overload(self, sig, target_context):
            if not self._enabled:
                return None
            payload = self._cache_file.load(self._index_key(sig, target_context.codegen()))
            if payload is not None:
                return rebuild(target_context, payload)
            return _load_prebuilt(self, sig, target_context)


def _load_prebuilt(cache: _PrebuiltCache, sig, target_context):
    folder = _current_folder(cache._py_func.__module__)
    if folder is None:
        return None
    signature, magic, code = cache._index_key(sig, target_context.codegen())
    key = (signature, (magic[0], PREBUILT_CPU, ""), code)  # (triple, CPU name, CPU features) as built
    entries = EntryFile(str(folder), cache._impl.filename_base, cache._impl.locator.get_source_stamp())
    try:
        payload = entries.load(key)
        return None if payload is None else rebuild(target_context, payload)
    except Exception:  # an entry that cannot be loaded here is compiled instead, as a missing one
        return None


def prebuilt_folder() -> Path | None:
    """Where the prebuilt sets are read from: :data:`PREBUILT`, ``GSEEK_PREBUILT`` if set, None if that is ``0``."""
    chosen = os.environ.get("GSEEK_PREBUILT", "")
    return None if chosen == "0" else Path(chosen) if chosen else PREBUILT


def prebuilt_set() -> str:
    """The set this process reads and ``python -m gseek.precompile --prebuilt`` writes: its Python and
    Numba, e.g. ``py3.11-numba0.68.1`` (the manifest also checks llvmlite and NumPy's major version).

    Numba's own files name the Python (``py311``), not the Numba: one set per pair keeps builds of
    two Numbas apart.
    """
    return f"py{sys.version_info[0]}.{sys.version_info[1]}-numba{numba.__version__}"


def _versions() -> dict[str, str]:
    """What the prebuilt code must have been built with: this Numba and llvmlite, NumPy's major version."""
    import llvmlite
    import numpy

    return {"numba": numba.__version__, "llvmlite": llvmlite.__version__, "numpy": numpy.__version__.split(".")[0]}


def _built_with(manifest: dict) -> dict[str, str]:
    return {"numba": manifest.get("numba"), "llvmlite": manifest.get("llvmlite"),
            "numpy": str(manifest.get("numpy", "")).split(".")[0]}


def _set_folder() -> Path | None:
    """The set read here: this Python's and Numba's in the folder, or the folder itself if it is one."""
    folder = prebuilt_folder()
    if folder is None:
        return None
    return folder if (folder / "manifest.json").is_file() else folder / prebuilt_set()


@functools.cache
def _manifest() -> dict | None:
    folder = _set_folder()
    try:
        manifest = json.loads((folder / "manifest.json").read_text()) if folder else None
    except (OSError, ValueError):
        return None
    usable = manifest and manifest.get("format") == 2 and _built_with(manifest) == _versions()
    return manifest if usable else None


@functools.cache
def _current_folder(module: str) -> Path | None:
    """The prebuilt folder of ``module`` if every file of its import closure is as when it was built,
    and every file of the folder as the manifest says (a damaged or half-written one is not read)."""
    entry = ((_manifest() or {}).get("modules") or {}).get(module)
    if not entry or any(module_digest(name) != digest for name, digest in entry["imports"].items()):
        return None
    folder = _set_folder() / module
    for name, digest in entry["files"].items():
        try:
            if hashlib.sha256((folder / name).read_bytes()).hexdigest() != digest:
                return None
        except OSError:
            return None
    return folder


@functools.cache
def module_digest(module: str) -> str:
    """SHA-256 of the source file of ``module`` (an importable name), or ``""`` where it has none."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return ""
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        return ""
    return hashlib.sha256(Path(spec.origin).read_bytes()).hexdigest()


def prebuilt_modules() -> dict[str, bool]:
    """Each module of the prebuilt manifest -> whether its entries can be used here (nothing changed)."""
    manifest = _manifest() or {}
    return {module: _current_folder(module) is not None for module in sorted(manifest.get("modules", {}))}


def prebuilt_sets() -> dict[str, list[str]]:
    """Each set in the prebuilt folder -> the modules whose closure changed since it was built (stale:
    those compile where the set is read). Any Python can say it: the check reads source files only."""
    folder = prebuilt_folder()
    found: dict[str, list[str]] = {}
    manifests = [] if folder is None else [folder / "manifest.json"] if (folder / "manifest.json").is_file() \
        else sorted(folder.glob("*/manifest.json"))
    for manifest_file in manifests:
        try:
            manifest = json.loads(manifest_file.read_text())
            if manifest.get("format") != 2:  # another layout: not read here, not judged either
                continue
            found[manifest_file.parent.name] = [
                m for m, entry in sorted(manifest["modules"].items())
                if any(module_digest(n) != d for n, d in entry["imports"].items())]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return found


def prebuilt_status() -> str:
    """One line on the prebuilt code here: how many modules can use it, or why none can; and the
    sets for other Pythons and Numbas that a change left stale."""
    folder = prebuilt_folder()
    if folder is None:
        return "off (GSEEK_PREBUILT=0)"
    set_folder = _set_folder()
    here = set_folder.name
    sets = prebuilt_sets()
    others = [name for name in sets if name != here]
    stale_others = [f"{name} ({len(sets[name])} modules)" for name in others if sets[name]]
    tail = f"; stale in other sets: {', '.join(stale_others)}" if stale_others else ""
    try:
        built = json.loads((set_folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return (f"no set for {prebuilt_set()} in {folder} (sets: {', '.join(sets) or 'none'}): every function "
                f"compiles{tail}")
    if built.get("format") != 2 or _built_with(built) != _versions():
        return (f"set {here} built for other versions ({', '.join(f'{k} {v}' for k, v in _built_with(built).items())}; "
                f"here {', '.join(f'{k} {v}' for k, v in _versions().items())}): every function compiles{tail}")
    modules = prebuilt_modules()
    stale = [m for m, current in modules.items() if not current]
    line = f"{len(modules) - len(stale)} of {len(modules)} modules current (set {here}, {PREBUILT_CPU} CPU)"
    line += f"; changed since built: {', '.join(stale)} (python -m gseek.precompile --prebuilt)" if stale else ""
    return line + (f"; other sets: {', '.join(others)}" if others and not stale_others else "") + tail

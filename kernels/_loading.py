"""Loading a cached Numba function: its machine code, without the work only a compile needs.

A cache entry (Numba's own cache or the prebuilt set, :mod:`gseek.kernels._jit`) holds the function's
object code and, for a later compile that links against it, its library's LLVM bitcode. Numba's
loader does two things a command that only loads its functions does not need (measured on the
2-core VM, a megablast command loading 28 functions):

* before each load it refreshes the target's typing and lowering registries (``BaseContext.refresh``:
  the first one imports ~50 of Numba's modules and fills the registries, 0.15-0.45 s and 13 MB on the
  loaded VM; the later ones are cheap). A loaded function needs what its machine code calls: the
  runtime (NRT, started here), its ``reload_init`` (the threading layer of a parallel function, run
  here as Numba runs it) and the C symbols the object calls. Where one of those would not resolve,
  the refresh runs first, as Numba would (some of Numba's modules add symbols when imported); a
  compile refreshes the registries itself (``CompilerBase``).
* it parses the bitcode on every load, to list the symbols the object defines, and keeps the parsed
  module for the process: 3.5 ms and ~0.3 MB a function (the shipped set's 164 entries: 0.58 s).
  Here those symbols come from the object's ELF symbol table (0.05 ms; the same names for every
  shipped entry: ``tests/test_loading.py``) and the bitcode is parsed when a compile first links the
  library.

* unpickling an entry rebuilds the environment of every function its code calls, and Numba rebuilds
  each by importing the module that function was written in: for the helpers Numba inlines
  (``np.empty``, ``np.searchsorted``, ...: ``numba.np.arrayobj``, ``numba.np.arraymath``,
  ``numba.np.npyimpl``, with ``numba.cpython.unicode``, ``numba.np.linalg``, ...) that is ~40 imports
  Numba's own import left out, 0.04-0.08 s of a megablast command on the loaded VM. Machine code
  compiled in nopython mode reads nothing of an environment but its constants (the globals serve
  object mode), so :class:`EntryFile` gives such an environment of Numba's own modules, when it
  holds no constants and its module is not imported yet, the module's name alone
  (:func:`_rebuild_env`); one with constants, or of another module, is Numba's. Where the object
  needs a C symbol the process lacks, those modules are imported before the refresh below (some
  add symbols when imported: what Numba's loader would have found).

* before the first load (as before the first compile) Numba initialises its runtime (``rtsys.initialize``):
  it registers the runtime's C functions with LLVM and compiles the runtime's own LLVM module (its atomic
  reference counts, ``NRT_incref``, ...: 25-30 ms on the VM, the same in every process). A compile links that
  module into every function it makes, so a cached object defines those functions itself and needs only the
  C ones (every shipped entry: ``tests/test_loading.py``); a load registers those (:func:`_runtime_symbols`)
  and leaves the module to the first compile, which initialises the runtime whole
  (``CPUContext.load_additional_registries``). An object needing a symbol that does not resolve still gets
  the refresh below, which initialises it whole first.

Where this cannot be done (an object that is not 64-bit little-endian ELF, a Numba whose loader or
engine differs), Numba's own loader runs, after the refresh it would have made.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pickle
import struct
import sys

import llvmlite.binding as ll
from numba.core import environment
from numba.core.caching import IndexDataCacheFile
from numba.core.compiler import CompileResult
from numba.core import config
from numba.core.runtime import _nrt_python, rtsys

__all__ = ["EntryFile", "object_symbols", "rebuild"]

#: What a cache entry's payload holds (``CompileResult._reduce``), in order: the loader below is for this layout.
_PAYLOAD = ("libdata", "fndesc", "env", "signature", "objectmode", "lifted", "typeann", "reload_init",
            "referenced_envs")
_SAME_LAYOUT = tuple(inspect.signature(CompileResult._rebuild).parameters)[1:] == _PAYLOAD

#: ELF: section type of a symbol table; symbol types of a function, an object and no type; undefined section.
_SHT_SYMTAB, _STT_DEFINED, _SHN_UNDEF = 2, (0, 1, 2), 0


def object_symbols(obj: bytes) -> tuple[set[str], set[str]] | None:
    """The names an ELF64 little-endian object defines (its symbol table's entries with a section, of type
    function, object or none) and those it needs from elsewhere (entries without a section), or None for
    another kind of object.

    >>> object_symbols(b"MZ") is None
    True
    """
    if obj[:6] != b"\x7fELF\x02\x01":
        return None
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
    defined: set[str] = set()
    needed: set[str] = set()
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != _SHT_SYMTAB or not entsize:
            continue
        strings = sections[link][4]
        for at in range(offset + entsize, offset + size, entsize):  # entry 0 is the null symbol
            name, info, _, section = struct.unpack_from("<IBBH", obj, at)
            start = strings + name
            text = obj[start:obj.index(b"\0", start)].decode()
            if section == _SHN_UNDEF:
                if text:
                    needed.add(text)
            elif info & 0xF in _STT_DEFINED:
                defined.add(text)
    return defined, needed


def rebuild(target_context, payload: tuple) -> CompileResult:
    """The :class:`CompileResult` of a cache entry's ``payload``, as Numba's ``CompileResult._rebuild``
    after ``target_context.refresh()``, doing only what a load needs (above)."""
    name, kind, data = payload[0]
    engine = target_context.codegen()._engine
    symbols = object_symbols(data[0]) if kind == "object" and _SAME_LAYOUT else None
    if symbols is None or not isinstance(getattr(engine, "_defined_symbols", None), set):
        target_context.refresh()
        return CompileResult._rebuild(target_context, *payload)
    defined, needed = symbols
    _, fndesc, env, signature, objectmode, lifted, typeann, reload_init, referenced_envs = payload
    for init in reload_init:
        init()
    _runtime_symbols(target_context)
    unresolved = [s for s in needed if s not in engine._defined_symbols and not _resolves(s)]
    if unresolved:  # some of Numba's modules add symbols when imported: those the environments left out first
        for module in {e.globals["__name__"] for e in (env, *referenced_envs) if len(e.globals) == 1}:
            importlib.import_module(module)
        if not all(_resolves(s) for s in unresolved):
            target_context.refresh()  # what Numba's loader does first: its modules add their symbols
    library = target_context.codegen().create_library(name)
    library.enable_object_caching()
    library._set_compiled_object(data[0])
    library._get_module_for_linking = functools.partial(_linking_module, library, data[1])
    library._finalize_final_module()  # the engine takes the object (the code of the library's empty module)
    engine._defined_symbols |= defined
    entry = target_context.get_executable(library, fndesc, env)
    cres = CompileResult(target_context=target_context, typing_context=target_context.typing_context,
                         library=library, environment=env, entry_point=entry, fndesc=fndesc,
                         type_annotation=typeann, signature=signature, objectmode=objectmode, lifted=lifted,
                         typing_error=None, call_helper=None, metadata=None, reload_init=reload_init,
                         referenced_envs=referenced_envs)
    for referenced in referenced_envs:
        library.codegen.set_env(referenced.env_name, referenced)
    return cres


#: Whether this Numba's runtime needs nothing of its compiled module to run loaded code: older Numbas handed its
#: atomic functions to the C runtime (``memsys_set_atomic_inc_dec``); there a load initialises the runtime whole.
_RUNTIME_C_ONLY = not hasattr(_nrt_python, "memsys_set_atomic_inc_dec")


def _runtime_symbols(target_context) -> None:
    """The runtime's C functions registered with LLVM once a process, as the first half of Numba's
    ``rtsys.initialize`` does (its statistics switched on where ``NUMBA_NRT_STATS`` asks), without compiling its
    LLVM module (above); the whole initialisation where this Numba needs it. (Loads run under Numba's compiler
    lock, as its own do.)"""
    global _RUNTIME_READY
    if _RUNTIME_READY or rtsys._init:
        return
    if not _RUNTIME_C_ONLY:
        rtsys.initialize(target_context)
        return
    if config.NRT_STATS:
        _nrt_python.memsys_enable_stats()
    for name, address in _nrt_python.c_helpers.items():
        ll.add_symbol(name if name.startswith("_") else "NRT_" + name, address)
    _RUNTIME_READY = True


#: Set once :func:`_runtime_symbols` registered the runtime's C functions.
_RUNTIME_READY = False


def _linking_module(library, bitcode: bytes):
    """The library's module for linking into another (Numba's ``_get_module_for_linking``), parsed once."""
    if library._shared_module is None:
        library._shared_module = ll.parse_bitcode(bitcode)
    return library._shared_module


#: C symbols found in the process (:func:`_resolves`): a symbol once there stays (Numba's helpers, the
#: runtime, libc); most entries need the same few dozen.
_RESOLVED: set[str] = set()


def _resolves(symbol: str) -> bool:
    """Whether the process defines ``symbol`` (LLVM's symbol search, once a name that it finds)."""
    if symbol in _RESOLVED:
        return True
    if ll.address_of_symbol(symbol) is None:
        return False
    _RESOLVED.add(symbol)
    return True


class EntryFile(IndexDataCacheFile):
    """Numba's index and data files of one function's cache, its entries unpickled with the environments
    of Numba's own modules made without importing them (:func:`_rebuild_env`)."""

    def _load_data(self, name):
        with open(self._data_path(name), "rb") as f:
            return _EntryUnpickler(f).load()


class _EntryUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if module == "numba.core.environment" and name == "_rebuild_env":
            return _rebuild_env
        return super().find_class(module, name)


def _rebuild_env(modname: str, consts: list, env_name: str):
    """Numba's ``_rebuild_env``, except for an environment of a Numba module not imported yet that holds no
    constants: one holding the module's name alone, kept as Numba keeps its own (what nopython code reads of
    an environment is its constants; a later compile of the module's functions finds it as it would Numba's).

    >>> env = _rebuild_env("numba.np.not_a_module", [], "example_env")
    >>> env.globals, env.consts
    ({'__name__': 'numba.np.not_a_module'}, [])
    """
    if consts or modname in sys.modules or not modname.startswith("numba."):
        return environment._rebuild_env(modname, consts, env_name)
    env = environment.lookup_environment(env_name)
    if env is None:
        env = environment.Environment({"__name__": modname})
        env.env_name = env_name
        environment.Environment._memo[env_name] = env
    return env

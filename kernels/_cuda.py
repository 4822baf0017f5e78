"""Load ``.cu`` kernel families into CuPy ``RawModule`` objects.

Sources are read with :mod:`importlib.resources`, so they work from an
installed wheel. Each (family, device, constants) is loaded once per process.
CuPy compiles for the current device's architecture (``sm_90`` on Hopper) and
keeps the result in its on-disk cache. A ``#line`` directive makes NVRTC report
errors against ``kernels/<family>.cu``, and a failed compile raises
:class:`gseek.errors.KernelCompileError` naming that file and line.

A fresh install's cache is empty, and NVRTC took ~10 s for the five families
on the first GPU command (``docs/startup.md``). So the package also ships their
machine code (:data:`CUBINS`: ``manifest.json`` and one ``.cubin`` per family
and architecture), compiled by NVRTC exactly as CuPy compiles them here, with
the constants and block size a default backend uses. A shipped cubin is loaded
only where it was built from exactly this program: the same text, the same
options (:func:`cubin_key`), the device's own architecture and the SHA-256
the manifest gives; and only if the driver loads it. Anything else compiles
as before. ``GSEEK_CUBINS=0`` turns the shipped code off;
``python -m gseek.precompile --cubins`` rebuilds it (NVRTC from CuPy, no GPU
needed).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.resources
import os
import re
from pathlib import Path
from types import ModuleType

from gseek.kernels._shipped import read_manifest

from gseek.errors import KernelCompileError

#: The kernel families with a ``.cu`` file (``gseek.kernels.<name>``, whose ``CUDA_SOURCE`` names it).
FAMILIES = ("blast", "dp", "fmindex", "greedy", "kmismatch", "seqpack")
#: The shipped machine code of the families: ``manifest.json`` and ``<family>.sm_<arch>.cubin`` files.
CUBINS = Path(__file__).resolve().with_name("cubin")
#: The options CuPy's ``RawModule`` adds to ours when it compiles for a device of architecture ``arch``
#: (CuPy 14: flush-to-zero, the architecture's own machine code, device functions by default);
#: the shipped cubins are compiled with the same (``gseek.precompile.build_cubins``).
CUPY_OPTIONS = ("-ftz=true", "-arch=sm_{arch}", "--device-as-default-execution-space")

_ERROR_LINE = re.compile(r"^(?P<file>[^\s(]+\.cu)\((?P<line>\d+)\): (?P<msg>(?:catastrophic )?error.*)$", re.M)


_INCLUDE = re.compile(r'^#include "(?P<name>[\w.]+)".*$', re.M)


def source(filename: str, _seen: frozenset[str] = frozenset()) -> str:
    """Text of a kernel family's ``.cu`` file shipped in ``gseek.kernels``, with
    its local ``#include "x.cuh"`` headers expanded in place.

    Expanding here (rather than passing an include path to NVRTC) keeps every
    byte of a family in the text CuPy hashes for its cache, and ``#line``
    directives keep compile errors pointing at the right file and line.
    """
    text = importlib.resources.files("gseek.kernels").joinpath(filename).read_text()

    def expand(match: re.Match) -> str:
        name = match["name"]
        if name in _seen:
            return ""  # already included
        line = text.count("\n", 0, match.start()) + 2
        return f'#line 1 "kernels/{name}"\n{source(name, _seen | {name})}\n#line {line} "kernels/{filename}"'

    return _INCLUDE.sub(expand, text)


def family_options(family: ModuleType, block_size: int) -> tuple[tuple[str, int], ...]:
    """The ``-D`` constants of a family's program: its ``CONSTANTS`` and the block size (``BLOCK``)."""
    constants = dict(getattr(family, "CONSTANTS", {}))
    constants["BLOCK"] = int(block_size)
    return tuple(sorted(constants.items()))


def program(filename: str, code: str, options: tuple[tuple[str, int], ...]) -> tuple[str, tuple[str, ...]]:
    """The text and the options NVRTC is given for family ``filename`` (CuPy adds :data:`CUPY_OPTIONS`)."""
    return (f'#line 1 "kernels/{filename}"\n{code}',
            ("--std=c++17",) + tuple(f"-D{key}={value}" for key, value in options))


def cubin_key(filename: str, code: str, options: tuple[tuple[str, int], ...]) -> str:
    """SHA-256 of the program (text and options): what a shipped cubin must have been built from."""
    text, opts = program(filename, code, options)
    return hashlib.sha256("\0".join((text, *opts)).encode("utf-8")).hexdigest()


def compile_source(filename: str, code: str, options: tuple[tuple[str, int], ...], device_id: int = 0):
    """Compile CUDA ``code`` (reported as ``kernels/<filename>``) into a RawModule."""
    import cupy

    display = f"kernels/{filename}"
    text, opts = program(filename, code, options)
    with cupy.cuda.Device(device_id):
        module = cupy.RawModule(code=text, options=opts)
        try:
            module.compile()
        except cupy.cuda.compiler.CompileException as exc:
            raise KernelCompileError(_first_error(display, str(exc))) from None
    return module


def _first_error(display: str, log: str) -> str:
    match = _ERROR_LINE.search(log)
    if match:
        return f"{match['file']}:{match['line']}: {match['msg'].strip()}"
    first = next((line for line in log.splitlines() if line.strip()), "compilation failed")
    return f"{display}: {first.strip()}"


@functools.lru_cache(maxsize=None)
def load_module(filename: str, device_id: int, options: tuple[tuple[str, int], ...]):
    """Module of family ``filename`` for ``device_id``: the shipped cubin where it fits, else compiled;
    cached per process."""
    code = source(filename)
    module = _shipped(filename, code, options, device_id)
    return module if module is not None else compile_source(filename, code, options, device_id)


@functools.cache
def cubin_manifest() -> dict:
    """The shipped cubins' manifest (``{}`` when there is none, or ``GSEEK_CUBINS=0``)."""
    if os.environ.get("GSEEK_CUBINS", "") == "0":
        return {}
    return read_manifest(CUBINS, 1)


def _shipped(filename: str, code: str, options: tuple[tuple[str, int], ...], device_id: int):
    """The shipped cubin of this program for the device's architecture, loaded; None where there is none
    or the driver refuses it (a driver older than the NVRTC that built it, say)."""
    entries = cubin_manifest().get("families", {}).get(filename, [])
    if not entries:
        return None
    import cupy

    arch = str(cupy.cuda.Device(device_id).compute_capability)
    key = cubin_key(filename, code, options)
    for entry in entries:
        if entry.get("arch") != arch or entry.get("key") != key:
            continue
        path = CUBINS / entry["file"]
        try:
            if hashlib.sha256(path.read_bytes()).hexdigest() != entry["sha256"]:
                return None
            with cupy.cuda.Device(device_id):
                module = cupy.RawModule(path=os.fspath(path))
                module.compile()  # loads it now (cuModuleLoad), so a refusal is seen here
            return module
        except Exception:  # noqa: BLE001 - any failure to load: compiled instead, as without it
            return None
    return None


def cubin_status() -> str:
    """One line on the shipped cubins: the families whose program (with the block size they were built
    for) they still match."""
    manifest = cubin_manifest()
    if not manifest:
        return "off (GSEEK_CUBINS=0)" if os.environ.get("GSEEK_CUBINS", "") == "0" else "none"
    families = {name: importlib.import_module(f"gseek.kernels.{name}") for name in FAMILIES}
    current, stale = [], []
    for name, family in sorted(families.items()):
        key = cubin_key(family.CUDA_SOURCE, source(family.CUDA_SOURCE),
                        family_options(family, manifest.get("block_size", 0)))
        archs = [e["arch"] for e in manifest.get("families", {}).get(family.CUDA_SOURCE, []) if e.get("key") == key]
        (current if archs else stale).append(name)
    archs = sorted({e["arch"] for entries in manifest.get("families", {}).values() for e in entries})
    line = (f"{len(current)} of {len(families)} families current (sm_{', sm_'.join(archs)}; "
            f"NVRTC {manifest.get('nvrtc')})")
    return line + (f"; changed since built: {', '.join(stale)} (python -m gseek.precompile --cubins)" if stale else "")

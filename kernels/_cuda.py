"""Load ``.cu`` kernel families into CuPy ``RawModule`` objects.

Sources are read with :mod:`importlib.resources`, so they work from an
installed wheel. Each (family, device, constants) is compiled once per process
(CuPy also keeps its on-disk cache). CuPy compiles for the current device's
architecture (``sm_90`` on Hopper). A ``#line`` directive makes NVRTC report
errors against ``kernels/<family>.cu``, and a failed compile raises
:class:`gseek.errors.KernelCompileError` naming that file and line.
"""

from __future__ import annotations

import functools
import importlib.resources
import re

from gseek.errors import KernelCompileError

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


def compile_source(filename: str, code: str, options: tuple[tuple[str, int], ...], device_id: int = 0):
    """Compile CUDA ``code`` (reported as ``kernels/<filename>``) into a RawModule."""
    import cupy

    display = f"kernels/{filename}"
    opts = ("--std=c++17",) + tuple(f"-D{key}={value}" for key, value in options)
    with cupy.cuda.Device(device_id):
        module = cupy.RawModule(code=f'#line 1 "{display}"\n{code}', options=opts)
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
    """Compiled module of family ``filename`` for ``device_id``, cached per process."""
    return compile_source(filename, source(filename), options, device_id)

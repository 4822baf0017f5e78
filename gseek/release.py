"""What a release ships: the Numba each supported Python is pinned to, and whether the machine code shipped
for this Python, Numba, CuPy and device is current here (``gseek --version``, :func:`status`).

A first command compiles nothing only where the prebuilt set of its Python and Numba is shipped
(``docs/startup.md``). So ``pyproject.toml`` pins Numba and llvmlite per Python (environment markers)
to exactly the versions of the sets in ``kernels/prebuilt/``, and the supported Pythons are its
``Programming Language :: Python :: 3.x`` classifiers. Both are read back from the installed
package's metadata here, and from ``pyproject.toml`` by the build of every set
(:mod:`gseek.prebuilt_sets`) and by CI (``.ci/first-run``): one place for the facts.

>>> requirements = ["numba==0.68.1; python_version == '3.11'", "numba==0.68.0; python_version == '3.12'",
...                 "llvmlite==0.50.0; python_version < '3.14'", "numpy>=2"]
>>> pins(requirements, ["3.11", "3.12"])
{'3.11': {'numba': '0.68.1', 'llvmlite': '0.50.0'}, '3.12': {'numba': '0.68.0', 'llvmlite': '0.50.0'}}
"""

from __future__ import annotations

import importlib.metadata
import operator
import os
import platform
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

__all__ = ["ShippedStatus", "pins", "status", "supported_pythons"]

#: The packages whose exact version decides whether a prebuilt set can be used (its manifest checks them).
PINNED = ("numba", "llvmlite")

_PIN = re.compile(r"^\s*(?P<name>[A-Za-z0-9_.-]+)\s*==\s*(?P<version>[A-Za-z0-9_.+-]+)\s*(;\s*(?P<marker>.*))?$")
_CLAUSE = re.compile(r"""^\s*python_version\s*(?P<op>==|!=|<=|>=|<|>)\s*["'](?P<version>[0-9.]+)["']\s*$""")
_OPS = {"==": operator.eq, "!=": operator.ne, "<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt}


def _marker_holds(marker: str | None, python: str) -> bool:
    """Whether ``marker`` (clauses ``python_version OP 'X.Y'`` joined by ``and``; the only form the pins use)
    holds for Python ``python``; :class:`ValueError` for any other marker."""
    if not marker:
        return True
    here = tuple(int(x) for x in python.split("."))
    for clause in marker.split(" and "):
        found = _CLAUSE.match(clause)
        if not found:
            raise ValueError(f"a pin's environment marker that gseek.release does not read: {marker!r}")
        if not _OPS[found["op"]](here, tuple(int(x) for x in found["version"].split("."))):
            return False
    return True


def _metadata(key: str) -> list[str]:
    try:
        return importlib.metadata.metadata("gseek").get_all(key) or []
    except importlib.metadata.PackageNotFoundError:  # a source tree on sys.path, not installed
        return []


def supported_pythons(classifiers: Iterable[str] | None = None) -> list[str]:
    """The Python versions gseek supports and ships machine code for (``X.Y``), from the ``Programming
    Language :: Python :: X.Y`` classifiers (default: the installed package's)."""
    found = [c.rsplit("::", 1)[1].strip() for c in (_metadata("Classifier") if classifiers is None else classifiers)
             if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    return sorted(found, key=lambda v: tuple(map(int, v.split("."))))


def pins(requirements: Iterable[str] | None = None, pythons: Iterable[str] | None = None) -> dict[str, dict[str, str]]:
    """Each Python of ``pythons`` (default :func:`supported_pythons`) -> the exact versions of
    :data:`PINNED` that ``requirements`` (default: the installed package's ``Requires-Dist``) give it.
    A Python for which a package is not pinned exactly lacks that key."""
    requirements = list(_metadata("Requires-Dist") if requirements is None else requirements)
    found: dict[str, dict[str, str]] = {}
    for python in supported_pythons() if pythons is None else pythons:
        found[python] = {}
        for line in requirements:
            pin = _PIN.match(line)
            if pin and pin["name"].lower() in PINNED and _marker_holds(pin["marker"], python):
                found[python][pin["name"].lower()] = pin["version"]
    return found


@dataclass(frozen=True)
class ShippedStatus:
    """What ``gseek --version`` says: versions, the backend a command would get, and whether the shipped
    machine code is current here. ``str()`` gives the lines."""

    version: str
    python: str
    platform: str
    numba: str
    llvmlite: str
    numpy: str
    cupy: str  #: CuPy's version, or why there is none
    backend: str  #: what ``--device auto`` gets, and why
    pinned: dict[str, str]  #: the versions of :data:`PINNED` this Python is pinned to ({} where it is not supported)
    prebuilt: str  #: :func:`gseek.kernels._jit.prebuilt_status`
    prebuilt_current: bool  #: every module of this Python's and Numba's set can be used (nothing compiles)
    cubins: str  #: :func:`gseek.kernels._cuda.cubin_status`
    cupy_cache: str  #: :func:`gseek.kernels._cupy_cache.status`, and whether it fits this CuPy and device
    notes: tuple[str, ...] = field(default=())  #: what is not as shipped, one line each

    def __str__(self) -> str:
        pinned = ", ".join(f"{k} {v}" for k, v in self.pinned.items())
        return "\n".join([
            f"gseek, version {self.version}",
            f"Python {self.python} ({self.platform}); Numba {self.numba}, llvmlite {self.llvmlite}, "
            f"NumPy {self.numpy}; CuPy {self.cupy}",
            f"backend: {self.backend}",
            f"prebuilt CPU machine code: {'current' if self.prebuilt_current else 'NOT current'}: {self.prebuilt}"
            + (f" (this Python's pins: {pinned})" if pinned else ""),
            f"shipped CUDA machine code: {self.cubins}",
            f"shipped CuPy kernels: {self.cupy_cache}",
            *(f"note: {note}" for note in self.notes),
        ])


def _gpu() -> tuple[str, str, str | None]:
    """(CuPy's version or why none, the backend ``auto`` gets, the device's compute capability or None)."""
    from .backend import gpu_available

    try:
        import cupy
    except Exception as exc:  # noqa: BLE001 - CuPy missing or broken: the CPU backend, as get_backend does
        why = "not installed" if isinstance(exc, ImportError) else f"not usable ({type(exc).__name__})"
        return why, f"cpu (Numba); no GPU: CuPy {why}", None
    if os.environ.get("GSEEK_DISABLE_GPU") or not gpu_available():
        why = "GSEEK_DISABLE_GPU is set" if os.environ.get("GSEEK_DISABLE_GPU") else "no CUDA device found"
        return cupy.__version__, f"cpu (Numba); no GPU: {why}", None
    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    arch = f"{props['major']}{props['minor']}"
    count = cupy.cuda.runtime.getDeviceCount()
    return cupy.__version__, f"gpu ({count} x {name}, sm_{arch}; --device cpu for Numba)", arch


def status() -> ShippedStatus:
    """The versions here, the backend ``--device auto`` would get, and whether the machine code shipped with
    gseek (the prebuilt CPU set of this Python and Numba, the cubins, the copy of CuPy's kernels) is
    current for them. Starts no backend (no CUDA context, nothing copied into CuPy's cache)."""
    import llvmlite
    import numba
    import numpy

    from . import __version__
    from .kernels import _cupy_cache
    from .kernels._cuda import cubin_manifest, cubin_status
    from .kernels._jit import prebuilt_folder, prebuilt_modules, prebuilt_status

    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    cupy_version, backend, arch = _gpu()
    modules = prebuilt_modules()
    current = prebuilt_folder() is not None and bool(modules) and all(modules.values())  # GSEEK_PREBUILT=0: off
    pinned = pins().get(python, {})
    notes = []
    here = {"numba": numba.__version__, "llvmlite": llvmlite.__version__}
    off_pin = [f"{k} {here[k]} (pinned: {v})" for k, v in pinned.items() if here.get(k) != v]
    if off_pin:
        notes.append(f"{', '.join(off_pin)}: not what gseek pins for Python {python}; pip install 'gseek' again")
    if not pinned and python not in supported_pythons() and _metadata("Classifier"):
        notes.append(f"Python {python} is not one gseek ships machine code for ({', '.join(supported_pythons())}): "
                     "every kernel compiles on first use")
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        notes.append("the shipped machine code is for x86-64 Linux: every kernel compiles on first use here")
    cubins = cubin_status()
    shipped_cupy = _cupy_cache.manifest()
    if arch is None:
        cubins, cupy_cache = f"not used (no GPU); {cubins}", f"not used (no GPU); {_cupy_cache.status()}"
    else:
        archs = {e.get("arch") for entries in cubin_manifest().get("families", {}).values() for e in entries}
        cubins = f"{'for this GPU' if arch in archs else f'none for sm_{arch} (compiled on first use)'}; {cubins}"
        try:
            nvrtc = _cupy_cache.nvrtc_version()
        except Exception:  # noqa: BLE001 - no NVRTC: CuPy cannot compile either
            nvrtc = "none"
        fits = _cupy_cache.fits(shipped_cupy, cupy_version, nvrtc, arch)
        cupy_cache = (f"{'fit' if fits else 'do not fit'} CuPy {cupy_version}, NVRTC {nvrtc}, sm_{arch}; "
                      f"{_cupy_cache.status()}")
    return ShippedStatus(
        version=__version__, python=platform.python_version(), platform=f"{platform.system()} {platform.machine()}",
        numba=numba.__version__, llvmlite=llvmlite.__version__, numpy=numpy.__version__, cupy=cupy_version,
        backend=backend, pinned=pinned, prebuilt=prebuilt_status(), prebuilt_current=current, cubins=cubins,
        cupy_cache=cupy_cache, notes=tuple(notes))


# --------------------------------------------------------------------------- building every set


def source_tree() -> Path:
    """The source checkout gseek runs from (where ``pyproject.toml`` is); :class:`ValueError` for an install."""
    root = Path(__file__).resolve().parent.parent
    if not (root / "pyproject.toml").is_file() or not (root / "kernels" / "prebuilt").is_dir():
        raise ValueError(f"{root}: not a gseek source checkout (the prebuilt sets are built from one)")
    return root


def project_pins(root: Path) -> dict[str, dict[str, str]]:
    """:func:`pins` as ``root/pyproject.toml`` gives them (dependencies and classifiers)."""
    import tomllib

    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    return pins(project["dependencies"], supported_pythons(project["classifiers"]))


def find_python(version: str) -> str | None:
    """An interpreter of Python ``version`` (``X.Y``) that runs: ``pythonX.Y`` on ``PATH``, else pyenv's newest
    ``X.Y.*`` (a pyenv shim on ``PATH`` answers only for the versions pyenv has active: each is tried)."""
    import glob
    import shutil
    import subprocess

    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    installed = [p for p in glob.glob(os.path.join(root, "versions", f"{version}.*", "bin", "python"))
                 if re.fullmatch(rf"{re.escape(version)}\.\d+", p.split(os.sep)[-3])]
    installed.sort(key=lambda p: int(p.split(os.sep)[-3].rsplit(".", 1)[1]), reverse=True)
    for candidate in [shutil.which(f"python{version}"), *installed]:
        if not candidate:
            continue
        try:
            said = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                  capture_output=True, text=True, timeout=60).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            continue
        if said == version:
            return candidate
    return None


def build_all_sets(pythons: dict[str, str] | None = None, jobs: int | None = None, remove: bool = False,
                   venvs: str | os.PathLike | None = None, log=print) -> dict[str, str]:
    """Build the prebuilt set of every supported Python (``python -m gseek.precompile --prebuilt-all``):
    Python ``X.Y`` -> the set written (``py3.12-numba0.68.0``).

    For each Python (``pythons``: ``X.Y`` -> interpreter; default every supported one, found by
    :func:`find_python`) a virtual environment under ``venvs`` (default ``build/prebuilt-venvs/`` of the
    checkout, kept for the next build) gets ``pip install -e`` of this checkout, so pip resolves the Numba
    and llvmlite ``pyproject.toml`` pins for that Python, and runs ``python -m gseek.precompile --prebuilt``
    there, writing its set into this checkout's ``kernels/prebuilt/``. ``jobs`` builds run at once
    (default: one a core; each compiles in one process, with its own cache and set). A Python whose
    interpreter is missing, or whose build fails, raises :class:`ValueError` after the others finished.
    """
    import subprocess
    import time
    from concurrent.futures import ThreadPoolExecutor

    root = source_tree()
    wanted = project_pins(root)
    if pythons is None:
        pythons = {version: find_python(version) for version in wanted}
    missing = [v for v, exe in pythons.items() if not exe]
    if missing:
        raise ValueError(f"no interpreter found for Python {', '.join(missing)} (install it, or give "
                         f"--python {missing[0]}=PATH)")
    unpinned = [v for v in pythons if not wanted.get(v, {}).get("numba")]
    if unpinned:
        raise ValueError(f"pyproject.toml pins no Numba for Python {', '.join(unpinned)}")
    base = Path(venvs) if venvs else root / "build" / "prebuilt-venvs"
    base.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}

    def build(version: str) -> str:
        started = time.perf_counter()
        venv, log_path = base / f"py{version}", base / f"py{version}.log"
        python = venv / "bin" / "python"
        with open(log_path, "w") as out:
            def step(*argv):
                out.write(f"$ {' '.join(map(str, argv))}\n")
                out.flush()
                subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, env=env, check=True, cwd=root)

            if not python.exists():
                step(pythons[version], "-m", "venv", venv)
            step(python, "-m", "pip", "install", "-q", "-e", root)
            step(python, "-P", "-m", "gseek.precompile", "--prebuilt", *(["--remove"] if remove else []))
        built = f"py{version}-numba{wanted[version]['numba']}"
        log(f"Python {version}: set {built} in {time.perf_counter() - started:.0f} s (log: {log_path})")
        return built

    jobs = max(1, min(jobs or os.cpu_count() or 1, len(pythons)))
    results: dict[str, str] = {}
    failed: list[str] = []
    with ThreadPoolExecutor(jobs) as pool:
        futures = {version: pool.submit(build, version) for version in pythons}
        for version, future in futures.items():
            try:
                results[version] = future.result()
            except subprocess.CalledProcessError as exc:
                failed.append(f"Python {version}: {exc} (see {base / f'py{version}.log'})")
    if failed:
        raise ValueError("; ".join(failed))
    return results

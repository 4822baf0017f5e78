"""CuPy's own kernels, shipped: a seed for CuPy's on-disk kernel cache.

The GPU code also uses CuPy's array operations (comparisons, ``where``, ``take``,
``nonzero``, scans, ...). CuPy generates CUDA for each operation and type on its
first use and compiles it with NVRTC into its kernel cache (``CUPY_CACHE_DIR``,
default ``~/.cupy/kernel_cache``), ~0.15 s each: ~5 s of a fresh install's first
GPU search on an H200 (``docs/startup.md``). The package ships the files CuPy
wrote into an empty cache while ``gseek compile`` ran on a GPU (:data:`SHIPPED`:
``manifest.json`` and CuPy's cache files), and the first GPU backend of a process
copies those the cache lacks into it (:func:`seed`): only where CuPy's version,
NVRTC's version and the device's architecture are the ones they were made with.

Nothing here decides whether a file is used: CuPy does, as for any file of its
cache. A file's name is CuPy's hash of everything the binary came from (the
generated source, the options, NVRTC's version and output on an empty program,
CuPy's build), and its content starts with the SHA-1 of the binary, which CuPy
checks; a file that does not fit is never read. Copies are written under a
temporary name and renamed, as CuPy writes its own, so processes seeding one
cache at once are safe. The manifest's SHA-256 of each file is for the tests
(CuPy checks the SHA-1 a file carries when it loads it). ``GSEEK_CUPY_CACHE=0``
(or CuPy's own ``CUPY_CACHE_IN_MEMORY=1``) turns the seeding off;
``python -m gseek.precompile --cupy-cache`` rebuilds the folder (on a GPU machine).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
from pathlib import Path

from gseek.kernels._shipped import read_manifest, write_folder

#: The shipped files: ``manifest.json`` and CuPy's ``<sha1>.cubin`` cache files.
SHIPPED = Path(__file__).resolve().with_name("cupy_cache")

#: A CuPy cache file: its name (SHA-1 of what went into it) and the SHA-1 of the binary it holds, in hex.
_NAME = re.compile(r"^[0-9a-f]{40}\.cubin$")
_HASH = 40

_seeded: dict[tuple[str, str], int] = {}


def cache_dir(cupy=None) -> str:
    """CuPy's kernel cache folder: the one the imported CuPy's disk cache says it uses, else CuPy's rule
    (``CUPY_CACHE_DIR``, default ``~/.cupy/kernel_cache``; CuPy reads it once, at its import)."""
    backend = getattr(getattr(getattr(cupy, "cuda", None), "compiler", None), "_kernel_cache_backend", None)
    folder = getattr(backend, "_cache_dir", None)
    if isinstance(folder, str):
        return folder
    return os.environ.get("CUPY_CACHE_DIR", os.path.expanduser("~/.cupy/kernel_cache"))


def nvrtc_version() -> str:
    """The version of the NVRTC CuPy compiles with, such as ``"12.9"`` (needs CuPy)."""
    from cupy.cuda import nvrtc

    return ".".join(map(str, nvrtc.getVersion()))


def off() -> str:
    """Why the seeding is off (``""``: it is on): ``GSEEK_CUPY_CACHE=0``, or CuPy keeping its cache in
    memory (``CUPY_CACHE_IN_MEMORY``, read as CuPy reads it: on when it is the integer 1)."""
    if os.environ.get("GSEEK_CUPY_CACHE", "") == "0":
        return "GSEEK_CUPY_CACHE=0"
    value = os.environ.get("CUPY_CACHE_IN_MEMORY", "")
    try:
        return "CUPY_CACHE_IN_MEMORY=1" if value and int(value) == 1 else ""
    except ValueError:
        return ""


def manifest(folder: Path = SHIPPED) -> dict:
    """The shipped files' manifest (``{}`` when there is none, or it is not one)."""
    return read_manifest(folder, 1)


def valid_file(data: bytes) -> bool:
    """True for the content of a CuPy cache file: the SHA-1 (hex) of the binary that follows it."""
    return len(data) > _HASH and data[:_HASH] == hashlib.sha1(data[_HASH:], usedforsecurity=False).hexdigest().encode()


def fits(shipped: dict, cupy_version: str, nvrtc: str, arch: str) -> bool:
    """Whether the shipped files were made with this CuPy, this NVRTC and for this architecture."""
    return bool(shipped) and (shipped.get("cupy"), shipped.get("nvrtc"), shipped.get("arch")) == (
        cupy_version, nvrtc, arch)


def seed(target: str | os.PathLike, cupy_version: str, nvrtc: str, arch: str, folder: Path = SHIPPED) -> int:
    """Copy the shipped files that ``target`` (a CuPy cache folder) lacks into it, where they fit this CuPy,
    NVRTC and architecture; the number copied. Never raises for the file system: a file that cannot be
    written is left to CuPy to compile, as without this, and no temporary is left behind."""
    shipped = manifest(folder)
    if off() or not fits(shipped, cupy_version, nvrtc, arch) or not os.fspath(target):
        return 0
    try:
        os.makedirs(target, exist_ok=True)
    except OSError:
        return 0
    copied = 0
    for name in shipped.get("files", {}):
        path = os.path.join(target, name)
        if not _NAME.match(name) or os.path.exists(path):
            continue
        tmp = None
        try:
            data = (folder / name).read_bytes()
            with tempfile.NamedTemporaryFile(dir=target, delete=False) as out:
                tmp = out.name
                out.write(data)
            os.replace(tmp, path)
            copied += 1
        except OSError:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
    return copied


def seed_for(cupy, device) -> int:
    """:func:`seed` CuPy's cache for ``device`` (a ``cupy.cuda.Device``), once per process and architecture."""
    arch = str(device.compute_capability)
    key = (cache_dir(cupy), arch)
    if key not in _seeded:
        try:
            version = nvrtc_version()
        except Exception:  # noqa: BLE001 - no NVRTC: CuPy cannot compile either; nothing to seed
            version = ""
        _seeded[key] = seed(key[0], cupy.__version__, version, arch, folder=SHIPPED) if version else 0
    return _seeded[key]


def collect(source: str | os.PathLike, cupy_version: str, nvrtc: str, arch: str,
            folder: Path = SHIPPED) -> dict[str, int]:
    """Make ``folder`` the shipped copy of the CuPy cache files in ``source`` (filled from empty by
    ``gseek compile`` on a GPU): file -> bytes. CuPy cache files of ``folder`` it no longer names are
    removed (nothing else there is touched); the manifest is written last. Raises ``ValueError`` when
    ``source`` holds none (a cache CuPy kept in memory, say): that would ship nothing."""
    files = {}
    for path in sorted(Path(source).iterdir()):
        if _NAME.match(path.name):
            data = path.read_bytes()
            if valid_file(data):
                files[path.name] = data
    if not files:
        raise ValueError(f"no CuPy cache files in {source}")
    write_folder(folder, files, {"format": 1, "cupy": cupy_version, "nvrtc": nvrtc, "arch": arch,
                                 "files": {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}},
                 lambda name: bool(_NAME.match(name)))
    return {name: len(data) for name, data in files.items()}


def status() -> str:
    """One line on the shipped CuPy kernels: how many, and for which CuPy, NVRTC and architecture."""
    if off():
        return f"off ({off()})"
    shipped = manifest()
    if not shipped:
        return "none"
    return (f"{len(shipped.get('files', {}))} kernels for CuPy {shipped.get('cupy')}, NVRTC {shipped.get('nvrtc')}, "
            f"sm_{shipped.get('arch')}")

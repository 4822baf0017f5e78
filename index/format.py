"""The on-disk index: a directory of ``.npy`` parts and a versioned JSON header.

``docs/index-format.md`` describes every part. The directory is written under
a temporary name (``.NAME.tmp-PID``) in the same folder and renamed when
whole, so an interrupted save leaves nothing that looks like an index. Parts
are loaded memory-mapped (``np.load(mmap_mode="r")``); each is checked
against the header (file size, dtype, shape and, with ``verify=True``, its
SHA-256), and anything wrong is refused with one :class:`IndexFormatError`
line naming the file.

>>> import tempfile, os
>>> import numpy as np
>>> path = os.path.join(tempfile.mkdtemp(), "demo.gseek")
>>> _ = write_index(path, {"parameters": {}}, {"contig_offsets": np.array([0, 4])})
>>> sorted(os.listdir(path))
['contig_offsets.npy', 'header.json']
>>> header, arrays = read_index(path, ["contig_offsets"])
>>> header["format_version"] == FORMAT_VERSION, arrays["contig_offsets"].tolist()
(True, [0, 4])
>>> with open(os.path.join(path, "contig_offsets.npy"), "r+b") as fh:
...     _ = fh.seek(-1, 2); _ = fh.write(b"\\x07")
>>> read_index(path, ["contig_offsets"])
Traceback (most recent call last):
...
gseek.errors.IndexFormatError: .../demo.gseek/contig_offsets.npy: corrupted part (SHA-256 differs from the header)
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from gseek.errors import IndexFormatError, OptionError

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "HEADER_NAME",
    "SUFFIX",
    "IndexFormatError",
    "resolve",
    "write_index",
    "read_header",
    "read_index",
]

#: ``format`` field of every header.
FORMAT_NAME = "gseek-index"
#: Version of the layout described in docs/index-format.md; bumped on any change.
FORMAT_VERSION = 1
#: Name of the header file inside an index directory.
HEADER_NAME = "header.json"
#: Suffix tried after a path that is not itself an index (``ref.fa`` -> ``ref.fa.gseek``).
SUFFIX = ".gseek"

_CHUNK = 8 << 20


def sha256_file(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file, read in 8 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def resolve(path: str | os.PathLike) -> Path:
    """The index directory for ``path``: itself, or ``path + ".gseek"``."""
    p = Path(path)
    if not p.is_dir() and Path(str(p) + SUFFIX).is_dir():
        return Path(str(p) + SUFFIX)
    return p


def write_index(path: str | os.PathLike, header: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> Path:
    """Write ``arrays`` as ``NAME.npy`` parts plus ``header.json`` into directory ``path``.

    The header gets ``format``, ``format_version`` and a ``parts`` table (file,
    dtype, shape, bytes, sha256). An existing index at ``path`` is replaced;
    any other existing file or directory there is left alone and refused.
    """
    from gseek import __version__

    final = Path(path)
    if final.exists() and not (final.is_dir() and (final / HEADER_NAME).is_file()):
        raise OptionError(f"{final}: exists and is not a gseek index; not overwriting it")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        parts = {}
        for name, array in arrays.items():
            file = tmp / f"{name}.npy"
            array = np.ascontiguousarray(array)
            with open(file, "wb") as fh:
                np.save(fh, array, allow_pickle=False)
            parts[name] = {
                "file": file.name,
                "dtype": array.dtype.str,
                "shape": list(array.shape),
                "bytes": file.stat().st_size,
                "sha256": sha256_file(file),
            }
        full = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "gseek_version": __version__}
        full.update(header)
        full["parts"] = parts
        with open(tmp / HEADER_NAME, "w", encoding="utf-8") as fh:
            json.dump(full, fh, indent=1)
            fh.write("\n")
        if final.exists():
            old = final.with_name(f".{final.name}.old-{os.getpid()}")
            os.rename(final, old)
            os.rename(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def read_header(path: str | os.PathLike) -> dict:
    """The parsed, version-checked header of the index at ``path``."""
    root = resolve(path)
    head = root / HEADER_NAME
    if not root.is_dir():
        raise IndexFormatError(root, "no such index directory")
    if not head.is_file():
        raise IndexFormatError(root, f"not a gseek index (no {HEADER_NAME})")
    try:
        header = json.loads(head.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise IndexFormatError(head, f"unreadable header: {exc}") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise IndexFormatError(head, f"not a gseek index header (format is not {FORMAT_NAME!r})")
    version = header.get("format_version")
    if version != FORMAT_VERSION:
        raise IndexFormatError(
            head,
            f"index format version {version}, but this gseek reads version {FORMAT_VERSION}; "
            "rebuild it with `gseek index`",
        )
    if not isinstance(header.get("parts"), dict):
        raise IndexFormatError(head, "header has no parts table")
    return header


def _load_part(root: Path, name: str, entry: Any, verify: bool) -> np.ndarray:
    try:
        file = root / entry["file"]
        size, dtype, shape = int(entry["bytes"]), np.dtype(entry["dtype"]), tuple(entry["shape"])
    except (KeyError, TypeError, ValueError):
        raise IndexFormatError(root / HEADER_NAME, f"bad entry for part {name!r}") from None
    if not file.is_file():
        raise IndexFormatError(file, "missing part")
    actual = file.stat().st_size
    if actual != size:
        raise IndexFormatError(file, f"truncated or replaced part: {actual} bytes, the header says {size}")
    if verify and sha256_file(file) != entry.get("sha256"):
        raise IndexFormatError(file, "corrupted part (SHA-256 differs from the header)")
    try:
        array = np.load(file, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise IndexFormatError(file, f"unreadable part: {exc}") from None
    if array.dtype != dtype or array.shape != shape:
        raise IndexFormatError(
            file, f"part holds {array.dtype.str} {array.shape}, the header says {dtype.str} {shape}"
        )
    return array


class PartsCheck:
    """The SHA-256 check of ``names`` on a thread, while the index is in use.

    ``hashlib`` releases the GIL on large buffers, so the check runs beside
    the work (one core, ~1 s per GB). :meth:`result` waits for it and raises
    :class:`IndexFormatError` for a corrupted part, every time it is called.
    Callers check before anything computed from the index is kept (the
    mapping pipeline: before an output is renamed into place). Sizes, dtypes
    and shapes were checked at load.
    """

    def __init__(self, root: Path, header: dict, names: Iterable[str]) -> None:
        self._parts = [(root / header["parts"][n]["file"], header["parts"][n].get("sha256")) for n in names]
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="gseek-index-check", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for file, expected in self._parts:
                if sha256_file(file) != expected:
                    raise IndexFormatError(file, "corrupted part (SHA-256 differs from the header)")
        except IndexFormatError as exc:
            self._error = exc
        except OSError as exc:
            self._error = IndexFormatError(exc.filename or "index", f"unreadable part: {exc.strerror or exc}")

    def result(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise self._error


def read_index(
    path: str | os.PathLike, names: Iterable[str], *, verify: bool = True
) -> tuple[dict, dict[str, np.ndarray]]:
    """Header and memory-mapped arrays ``names`` of the index at ``path``.

    Sizes, dtypes and shapes are always checked; ``verify=True`` also checks
    each part's SHA-256 (reads every byte once: about 1 s per GB).
    """
    root = resolve(path)
    header = read_header(root)
    arrays = {}
    for name in names:
        entry = header["parts"].get(name)
        if entry is None:
            raise IndexFormatError(root / HEADER_NAME, f"the index has no part {name!r}")
        arrays[name] = _load_part(root, name, entry, verify)
    return header, arrays

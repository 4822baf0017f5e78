"""The on-disk index: a directory of ``.npy`` parts and a versioned JSON header.

``docs/index-format.md`` describes every part. The directory is written under
a temporary name (``.NAME.tmp-PID``) in the same folder and renamed when
whole, so an interrupted save leaves nothing that looks like an index. Parts
are loaded memory-mapped (``np.load(mmap_mode="r")``); each is checked
against the header (file size, dtype, shape and, with ``verify=True``, its
SHA-256), and anything wrong is refused with one :class:`IndexFormatError`
line naming the file.

>>> import tempfile, os
>>> from gseek.index import Index
>>> fasta = os.path.join(tempfile.mkdtemp(), "demo.fa")
>>> _ = open(fasta, "w").write(">a\\nGATTACA\\n")
>>> path = Index.build(fasta, wgram=2, device="cpu").save(fasta[:-3] + ".gseek")
>>> sorted(os.listdir(path))[:3]
['amb_runs.npy', 'contig_name_offsets.npy', 'contig_names.npy']
>>> header, arrays = read_index(path, ["contig_offsets"])
>>> header["format_version"] == FORMAT_VERSION, arrays["contig_offsets"].tolist()
(True, [0, 7])
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
import tokenize
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from gseek.seqio.atomic import remove_stale_temporaries
from gseek.errors import IndexFormatError, OptionError, signals_held
from gseek.kernels import fmindex as _kernels

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "DEFAULT_SA_SAMPLE",
    "HEADER_NAME",
    "SUFFIX",
    "IndexFormatError",
    "resolve",
    "write_index",
    "read_header",
    "read_index",
    "check_header",
]

#: ``format`` field of every header.
FORMAT_NAME = "gseek-index"
#: Version of the layout described in docs/index-format.md; bumped on any change.
FORMAT_VERSION = 1
#: Default SA sampling rate (text positions that are multiples of it are kept; ``header.json``'s
#: ``parameters.sa_sample`` says the rate an index was built with).
DEFAULT_SA_SAMPLE = 16
#: Name of the header file inside an index directory.
HEADER_NAME = "header.json"
#: Suffix tried after a path that is not itself an index (``ref.fa`` -> ``ref.fa.gseek``).
SUFFIX = ".gseek"

_CHUNK = 8 << 20

# Layout facts the header is checked against (docs/index-format.md, "Parts");
# the interval and block constants are the kernels' own.
_OCC_INTERVAL = {False: _kernels.OCC_INTERVAL_32, True: _kernels.OCC_INTERVAL_64}
_MARK_ROWS = {False: _kernels.MARK_ROWS_32, True: _kernels.MARK_ROWS_64}
_POS_DTYPE = {False: "<u4", True: "<i8"}
_POS32_LIMIT = 1 << 32
_STATS = ("contigs", "bases", "ambiguous", "segments", "text_length")


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
    remove_stale_temporaries(final)  # left by a killed save (SIGKILL, power loss)
    tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}")
    try:  # the folder is made inside: a signal right after mkdir still removes it
        tmp.mkdir()
        parts = {}
        for name, array in arrays.items():
            file = tmp / f"{name}.npy"
            array = np.ascontiguousarray(array)
            # NumPy's tofile turns an exception a signal's handler raises at its start (in its
            # os.PathLike check) into a TypeError: the signal waits for the part instead
            with open(file, "wb") as fh, signals_held():
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
    _check_fields(head, header)
    return header


def _is_int(value: Any) -> bool:
    return type(value) is int  # not bool, not float


def _check_fields(head: Path, header: dict) -> None:
    """Types and ranges of every field the code reads, and the parts table
    against the shapes the parameters imply (before any part is opened)."""

    def bad(message: str) -> IndexFormatError:
        return IndexFormatError(head, message)

    params = header.get("parameters")
    if not isinstance(params, dict):
        raise bad("header has no parameters table")
    pos64 = params.get("pos64")
    if type(pos64) is not bool:
        raise bad(f"parameters.pos64 must be true or false, not {pos64!r}")
    sa_sample, wgram = params.get("sa_sample"), params.get("wgram")
    if not _is_int(sa_sample) or sa_sample < 1:
        raise bad(f"parameters.sa_sample must be an integer >= 1, not {sa_sample!r}")
    if not _is_int(wgram) or not 0 <= wgram <= _kernels.WGRAM_MAX:
        raise bad(f"parameters.wgram must be an integer 0..{_kernels.WGRAM_MAX}, not {wgram!r}")
    for key, table in (("occ_interval", _OCC_INTERVAL), ("mark_rows", _MARK_ROWS)):
        if params.get(key) != table[pos64] or not _is_int(params.get(key)):
            raise bad(f"parameters.{key} is {params.get(key)!r}; {'64' if pos64 else '32'}-bit positions "
                      f"(pos64 {str(pos64).lower()}) use {table[pos64]}")
    stats = header.get("stats")
    if not isinstance(stats, dict):
        raise bad("header has no stats table")
    for key in _STATS:
        if not _is_int(stats.get(key)) or stats[key] < 0:
            raise bad(f"stats.{key} must be an integer >= 0, not {stats.get(key)!r}")
    C = header.get("C")
    if not isinstance(C, list) or len(C) != 5 or not all(_is_int(c) for c in C):
        raise bad(f"C must be a list of 5 integers, not {C!r}")
    n, segments = stats["text_length"], stats["segments"]
    if C[0] != segments + 1 or C[4] != n or any(C[i] > C[i + 1] for i in range(4)):
        raise bad(f"C {C} is not the cumulative base counts of a text of {n} characters with "
                  f"{segments + 1} separators")
    if n >= _POS32_LIMIT and not pos64:
        raise bad(f"a text of {n} characters needs 64-bit positions, but pos64 is false")
    if stats["ambiguous"] > stats["bases"]:
        raise bad(f"stats.ambiguous {stats['ambiguous']} > stats.bases {stats['bases']}")
    if not isinstance(header.get("source", ""), (str, type(None))):
        raise bad(f"source must be a string, not {header['source']!r}")
    expected = _expected_parts(header)
    for name, entry in header["parts"].items():
        if not isinstance(entry, dict) or entry.get("file") != f"{name}.npy":
            raise bad(f"bad entry for part {name!r} (its file must be {name}.npy)")
        size, sha = entry.get("bytes"), entry.get("sha256")
        if not _is_int(size) or size < 0 or not isinstance(sha, str):
            raise bad(f"bad entry for part {name!r} (bytes, sha256)")
        if name not in expected:
            continue  # not a part this version reads: never opened
        if name == "wgram" and not wgram:
            raise bad("a wgram part, but parameters.wgram is 0")
        dtype, shape = expected[name]
        if entry.get("dtype") != dtype or (shape is not None and entry.get("shape") != shape):
            want = f"{dtype} {shape}" if shape is not None else dtype
            raise bad(f"part {name!r} is {entry.get('dtype')} {entry.get('shape')}, but the parameters, C and "
                      f"stats make it {want}")
        shape_ = entry.get("shape")
        if not isinstance(shape_, list) or not all(_is_int(d) and d >= 0 for d in shape_):
            raise bad(f"bad entry for part {name!r} (shape {shape_!r})")


def _expected_parts(header: dict) -> dict[str, tuple[str, list[int] | None]]:
    """dtype and shape (None: any) of every part, from the header's parameters, C and stats."""
    params, stats = header["parameters"], header["stats"]
    wide = params["pos64"]
    pos = _POS_DTYPE[wide]
    n, contigs, segments = stats["text_length"], stats["contigs"], stats["segments"]
    sa_sample, w = params["sa_sample"], params["wgram"]
    return {
        "contig_offsets": ("<i8", [contigs + 1]),
        "contig_names": ("|u1", None),
        "contig_name_offsets": ("<i8", [contigs + 1]),
        "seg_text_start": ("<i8", [segments + 1]),
        "seg_ref_start": ("<i8", [segments]),
        "seg_contig": ("<i4", [segments]),
        "occ": ("<u4", [n // _OCC_INTERVAL[wide] + 1, _kernels.BLOCK_WORDS]),
        "dollar_rows": (pos, [segments + 2]),
        "sa_mark": ("<u4", [n // _MARK_ROWS[wide] + 1, _kernels.BLOCK_WORDS]),
        "sa_samples": (pos, [(n + sa_sample - 1) // sa_sample]),
        "wgram": (pos, [4**w, 2]),
        "text": ("<u4", [(stats["bases"] + 15) // 16]),
        "amb_runs": ("<i8", None),
    }


def check_header(path: str | os.PathLike, header: dict, arrays: Mapping[str, np.ndarray]) -> None:
    """Check the header's C and stats against the content of the loaded parts.

    The header's fields were range-checked by :func:`read_header` and each
    part's dtype and shape by its load; this compares the values a kernel
    trusts with what the parts hold: the text length (the last segment start,
    the dollar-row sentinel), the contig and N totals, and C against the base
    counts of the BWT (the last Occ block's counts plus its tail). A few
    words are read per part, whatever the index size.
    """
    head = resolve(path) / HEADER_NAME
    stats, C = header["stats"], header["C"]
    n, wide = stats["text_length"], header["parameters"]["pos64"]

    def check(name: str, what: str, found: int, expected: int) -> None:
        if int(found) != int(expected):
            raise IndexFormatError(head, f"{what} is {expected}, but {name}.npy says {int(found)}")

    if "contig_offsets" in arrays:
        offsets = arrays["contig_offsets"]
        check("contig_offsets", "the first contig offset", offsets[0], 0)
        check("contig_offsets", "stats.bases", offsets[-1], stats["bases"])
    if "contig_name_offsets" in arrays and "contig_names" in arrays:
        check("contig_name_offsets", "the name bytes", arrays["contig_name_offsets"][-1], arrays["contig_names"].size)
    if "seg_text_start" in arrays:
        check("seg_text_start", "stats.text_length", arrays["seg_text_start"][-1], n)
    if "amb_runs" in arrays:
        runs = np.asarray(arrays["amb_runs"], dtype=np.int64).reshape(-1, 2)
        check("amb_runs", "stats.ambiguous", (runs[:, 1] - runs[:, 0]).sum(), stats["ambiguous"])
    if "dollar_rows" in arrays:
        check("dollar_rows", "stats.text_length (the sentinel)", arrays["dollar_rows"][-1], n)
        if "occ" in arrays:
            totals = _bwt_base_counts(arrays["occ"], C[0], n, wide)
            counts = [C[c + 1] - C[c] for c in range(4)]
            if totals != counts:
                raise IndexFormatError(head, f"C {C} does not match the BWT: occ.npy counts {totals} of A, C, G, T "
                                             f"(C says {counts})")


def _bwt_base_counts(occ: np.ndarray, dollars: int, n: int, wide: bool) -> list[int]:
    """Occurrences of A, C, G, T in the whole BWT (rows [0, n)), dollar rows
    excluded: the last block's counts plus its characters below row n."""
    interval = _OCC_INTERVAL[wide]
    header = 8 if wide else 4
    b = n // interval
    block = np.asarray(occ[b], dtype=np.uint64)
    if wide:
        before = [int(block[2 * c]) | (int(block[2 * c + 1]) << 32) for c in range(4)]
    else:
        before = [int(block[c]) for c in range(4)]
    words = block[header:].astype(np.uint32)
    shifts = np.arange(30, -1, -2, dtype=np.uint32)
    chars = ((words[:, None] >> shifts[None, :]) & 3).reshape(-1)[: n - b * interval]
    tail = np.bincount(chars, minlength=4).tolist()
    dollars_in_block = dollars - (b * interval - sum(before))  # the placeholders (A) of dollar rows
    return [before[0] + tail[0] - dollars_in_block, *(before[c] + tail[c] for c in range(1, 4))]


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
    except OSError as exc:
        raise IndexFormatError(file, f"unreadable part: {exc.strerror or exc}") from None
    except (ValueError, EOFError, SyntaxError, tokenize.TokenError):  # what numpy's header parser raises
        raise IndexFormatError(file, "unreadable part: its .npy header is damaged; build the index again") from None
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
    check_header(root, header, arrays)
    return header, arrays

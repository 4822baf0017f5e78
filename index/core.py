"""The :class:`Index` object: build, save, load, count, locate.

>>> import os, tempfile
>>> fasta = os.path.join(tempfile.mkdtemp(), "ref.fa")
>>> _ = open(fasta, "w").write(">chr1\\nACGTACGTNNACGT\\n>chr2\\nTTACGTA\\n")
>>> idx = Index.build(fasta, sa_sample=4, wgram=3, device="cpu")
>>> idx
<Index ref.fa: 2 contigs, 21 bases (2 ambiguous), sa_sample=4, wgram=3, 32-bit, cpu (numba, ... threads)>
>>> idx.count(["ACGT", "GTAC", "TNA", "CGTT"]).tolist()
[4, 1, 0, 0]
>>> hits = idx.locate(["ACGT", "TTA"])
>>> hits.pattern.tolist(), hits.contig.tolist(), hits.position.tolist()
([0, 0, 0, 0, 1], [0, 0, 0, 1, 1], [0, 4, 10, 2, 0])
>>> [idx.contigs.names[c] for c in hits.contig[:2]]
['chr1', 'chr1']
>>> saved = idx.save(os.path.join(tempfile.mkdtemp(), "ref.gseek"))
>>> again = Index.load(saved, device="cpu", parts=["fm", "wgram"])
>>> again.count("CGTA").tolist()
[2]
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from gseek import ragged
from gseek.backend import Backend, get_backend
from gseek.errors import OptionError
from gseek.seqio import SequenceBatch, read_fastx

from . import format as _format
from .format import DEFAULT_SA_SAMPLE

if TYPE_CHECKING:
    from .search import FmArrays

# The builder (``.build``), the FM stages (``.search``) and their kernels are imported where a build, count or
# locate runs: a BLAST search loads an index's text alone and runs none of them.

#: One upload of an index's parts at a time (two threads' first searches, ``gseek serve --workers``: one copy).
_UPLOAD_LOCK = threading.Lock()

__all__ = ["Index", "ContigTable", "Occurrence", "Occurrences", "PART_GROUPS"]

#: What ``Index.build(parts=)`` builds: everything, or the text alone (the BLAST-style search).
TEXT_OR_ALL = ("all", "text")

#: Parts loadable on their own (``Index.load(parts=...)``) and the arrays of each.
#: ``contigs`` (contig table + segment table) is always loaded.
PART_GROUPS: dict[str, tuple[str, ...]] = {
    "contigs": (
        "contig_offsets",
        "contig_names",
        "contig_name_offsets",
        "seg_text_start",
        "seg_ref_start",
        "seg_contig",
    ),
    "fm": ("occ", "dollar_rows"),
    "sa": ("sa_mark", "sa_samples"),
    "wgram": ("wgram",),
    "text": ("text", "amb_runs"),
}


class Occurrence(NamedTuple):
    """One exact match: the pattern's index, the contig's number, the 0-based start in it."""

    pattern: int
    contig: int
    position: int


@dataclass(frozen=True, eq=False)
class Occurrences:
    """Exact matches as struct-of-arrays, sorted by pattern, contig, position.

    ``pattern`` (int64) indexes the query patterns, ``contig`` (int32) the
    index's contigs, ``position`` (int64) is the 0-based start in the contig.
    ``len()`` is the number of matches; iterating (or ``occ[i]``) gives each
    as an :class:`Occurrence` namedtuple (``_asdict()``).

    >>> occ = Occurrences(np.array([0, 0, 1]), np.array([0, 1, 1], np.int32), np.array([4, 2, 0]))
    >>> len(occ), occ[1], occ[-1]._asdict()
    (3, Occurrence(pattern=0, contig=1, position=2), {'pattern': 1, 'contig': 1, 'position': 0})
    """

    pattern: np.ndarray
    contig: np.ndarray
    position: np.ndarray

    def __len__(self) -> int:
        return int(self.pattern.size)

    @property
    def size(self) -> int:
        """Number of occurrences (as ``len()``)."""
        return int(self.pattern.size)

    def __iter__(self) -> Iterator[Occurrence]:
        return (Occurrence(*row) for row in zip(self.pattern.tolist(), self.contig.tolist(), self.position.tolist()))

    def __getitem__(self, i: int) -> Occurrence:
        i = int(i) + len(self) if int(i) < 0 else int(i)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return Occurrence(int(self.pattern[i]), int(self.contig[i]), int(self.position[i]))


@dataclass(frozen=True, eq=False)
class ContigTable:
    """Names, lengths and offsets (in the concatenated text) of the contigs."""

    names: tuple[str, ...]
    offsets: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def __len__(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        """Contig number of ``name`` (``KeyError`` if absent)."""
        if "_ids" not in self.__dict__:
            object.__setattr__(self, "_ids", {n: i for i, n in enumerate(self.names)})
        return self.__dict__["_ids"][name]

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> ContigTable:
        names = tuple(ragged.decode_strings(arrays["contig_names"], arrays["contig_name_offsets"], "latin-1"))
        return cls(names, np.asarray(arrays["contig_offsets"]))


class Index:
    """FM-index of a DNA reference, for exact count and locate of patterns.

    Holds the BWT with interleaved Occ blocks, sampled SA, w-gram table,
    contig table and the 2-bit forward text.

    Build with :meth:`build`, keep with :meth:`save`, open with :meth:`load`.
    Searches run on the backend chosen when the object is made (``device``)
    and return numpy arrays. ``docs/index-format.md`` describes every part.

    Arguments (of the constructor, which :meth:`build` and :meth:`load` call):
        arrays: the parts by name (numpy arrays or memory maps; made read-only).
        header: the header (``source``, ``parameters``, ``C``, ``stats``).
        backend: the :class:`~gseek.backend.Backend` searches run on.
        path: the directory it was loaded from or saved to (None before).

    >>> import os, tempfile
    >>> fasta = os.path.join(tempfile.mkdtemp(), "ref.fa")
    >>> _ = open(fasta, "w").write(">chr1\\nGATTACAGATTACA\\n>chr2\\nTTACGTA\\n")
    >>> idx = Index.build(fasta, wgram=4, device="cpu")
    >>> idx.contigs.names, idx.count(["GATTACA", "TTAC", "CCC"]).tolist()
    (('chr1', 'chr2'), [2, 3, 0])
    >>> hits = idx.locate("TTAC")
    >>> hits.contig.tolist(), hits.position.tolist()
    ([0, 0, 1], [2, 9, 0])
    >>> saved = idx.save(os.path.join(tempfile.mkdtemp(), "ref.gseek"))
    >>> Index.load(saved, device="cpu").count("ACAG").tolist()
    [1]
    """

    def __init__(self, arrays: dict[str, np.ndarray], header: dict, backend: Backend, path: Path | None = None) -> None:
        for array in arrays.values():
            if array.flags.writeable:
                array.flags.writeable = False
        self._arrays = arrays
        self.header = header
        self.backend = backend
        self.path = path
        self.contigs = ContigTable.from_arrays(arrays)
        self._device: FmArrays | None = None

    # ------------------------------------------------------------------ making

    @classmethod
    def build(
        cls,
        fasta: str | os.PathLike | SequenceBatch,
        *,
        sa_sample: int = DEFAULT_SA_SAMPLE,
        wgram: int | None = None,
        pos64: bool | None = None,
        threads: int | None = None,
        progress: bool = False,
        device: str | Backend = "auto",
        parts: str = "all",
    ) -> Index:
        """Build the index of a FASTA (or FASTQ) file or a DNA batch.

        Arguments:
            fasta: path (plain or gzip) or a :class:`~gseek.SequenceBatch`.
            sa_sample: keep SA values that are multiples of this (locate walks
                at most ``sa_sample - 1`` LF steps).
            wgram: w-gram table length 1..15, 0 for none (the table has 4**w
                entries of two positions: 128 MiB at w = 12); None: from the
                reference's length (:func:`~gseek.index.build.auto_wgram`: at most
                one entry a base, 12 from 16.8 Mbp).
            pos64: force 64-bit positions (default: only for texts >= 2^32).
            threads: CPU threads for the build and the CPU backend.
            progress: show a progress bar.
            device: backend for searches (``auto``, ``cpu``, ``gpu`` or a Backend).
            parts: ``all``, or ``text``: only the contig table and the packed text with its N
                runs, what the BLAST-style search reads (seconds, no suffix array); read
                mapping refuses such an index.
        """
        from gseek.kernels import fmindex as kernels

        from . import build as _build

        if parts not in TEXT_OR_ALL:
            raise OptionError(f"parts must be one of {', '.join(TEXT_OR_ALL)}, not {parts!r}")
        if isinstance(fasta, SequenceBatch):
            batch, source = fasta, fasta.path
        else:
            batch, source = read_fastx(fasta), os.fspath(fasta)
        if batch.alphabet != "dna":
            raise OptionError("an index is built from DNA records")
        text_only = parts == "text"
        if text_only:
            wgram = 0
        elif wgram is None:
            wgram = _build.auto_wgram(int(batch.codes.size))
        arrays, meta = _build.build_arrays(
            batch, sa_sample=sa_sample, wgram=wgram, pos64=pos64, threads=threads, progress=progress,
            text_only=text_only,
        )
        wide = meta["pos64"]
        header = {
            "source": source,
            "parameters": {
                "sa_sample": int(sa_sample),
                "wgram": int(wgram),
                "pos64": wide,
                "occ_interval": kernels.OCC_INTERVAL_64 if wide else kernels.OCC_INTERVAL_32,
                "mark_rows": kernels.MARK_ROWS_64 if wide else kernels.MARK_ROWS_32,
            },
            "C": meta["C"],
            "stats": {k: meta[k] for k in ("contigs", "bases", "ambiguous", "segments", "text_length")},
        }
        if text_only:
            header["groups"] = ["contigs", "text"]
        return cls(arrays, header, get_backend(device, threads))

    def save(self, path: str | os.PathLike) -> Path:
        """Write the index as directory ``path`` (replacing an older index there).

        Written under a temporary name and renamed when whole. Only a fully
        loaded index can be saved.
        """
        groups = self.header.get("groups", list(PART_GROUPS))
        wanted = [n for g in groups for n in PART_GROUPS[g] if n != "wgram" or self.wgram]
        missing = [n for n in wanted if n not in self._arrays]
        if missing:
            raise OptionError(f"cannot save an index loaded without part(s) {', '.join(missing)}")
        written_by_save = ("format", "format_version", "gseek_version", "parts")
        header = {k: v for k, v in self.header.items() if k not in written_by_save}
        self.path = _format.write_index(path, header, self._arrays)
        return self.path

    @classmethod
    def load(
        cls,
        path: str | os.PathLike,
        device: str | Backend = "auto",
        *,
        parts: list[str] | tuple[str, ...] | None = None,
        verify: bool = True,
        threads: int | None = None,
    ) -> Index:
        """Open a saved index, memory-mapped.

        Arguments:
            path: the index directory (or ``X`` for ``X.gseek``).
            device: backend for searches; on a GPU the parts are uploaded once,
                at the first search.
            parts: groups to load, from ``fm``, ``sa``, ``wgram``, ``text``
                (the contig table is always loaded); default all.
            verify: check every part's SHA-256 (reads each byte once, about
                1 s per GB); sizes, dtypes and shapes are checked always.
            threads: CPU threads of the CPU backend.

        Raises :class:`~gseek.index.IndexFormatError` for a missing,
        truncated or corrupted part or a wrong format version.
        """
        root = _format.resolve(path)
        header = _format.read_header(root)
        if parts is None:
            groups = [g for g, names in PART_GROUPS.items() if all(n in header["parts"] for n in names)]
        else:
            groups = ["contigs", *parts]
            unknown = sorted(set(groups) - set(PART_GROUPS))
            if unknown:
                raise OptionError(f"unknown index part(s) {', '.join(unknown)}; choose from {', '.join(PART_GROUPS)}")
        names = [n for g in dict.fromkeys(groups) for n in PART_GROUPS[g]]
        header, arrays = _format.read_index(root, names, verify=verify)
        return cls(arrays, header, get_backend(device, threads), path=root)

    def check_in_background(self) -> _format.PartsCheck:
        """Start the SHA-256 check of every loaded part on a thread (for an
        index loaded with ``verify=False``); ``.result()`` waits and raises
        :class:`~gseek.index.IndexFormatError` if a part is corrupted."""
        if self.path is None:
            raise OptionError("only an index loaded from disk can be checked")
        return _format.PartsCheck(self.path, self.header, list(self._arrays))

    # ------------------------------------------------------------------ facts

    @property
    def parameters(self) -> dict:
        return dict(self.header["parameters"])

    @property
    def sa_sample(self) -> int:
        return int(self.header["parameters"]["sa_sample"])

    @property
    def wgram(self) -> int:
        return int(self.header["parameters"]["wgram"])

    @property
    def pos64(self) -> bool:
        return bool(self.header["parameters"]["pos64"])

    @property
    def C(self) -> np.ndarray:
        """C array: rows whose suffix starts below A, C, G, T, and the text length."""
        return np.array(self.header["C"], dtype=np.int64)

    @property
    def stats(self) -> dict:
        return dict(self.header["stats"])

    @property
    def nbytes(self) -> dict[str, int]:
        """Bytes of every loaded part (host copy or memory map)."""
        return {name: int(array.nbytes) for name, array in self._arrays.items()}

    @property
    def arrays(self) -> dict[str, np.ndarray]:
        """The loaded parts (read-only numpy arrays or memory maps), by name."""
        return dict(self._arrays)

    def __repr__(self) -> str:
        s = self.header["stats"]
        where = Path(self.header.get("source") or "?").name
        return (
            f"<Index {where}: {s['contigs']} contigs, {s['bases']} bases ({s['ambiguous']} ambiguous), "
            f"sa_sample={self.sa_sample}, wgram={self.wgram}, {'64' if self.pos64 else '32'}-bit, "
            f"{self.backend.describe()}>"
        )

    def summary(self) -> str:
        """Several lines for the CLI: contigs, bases, size by part, bytes per base."""
        s = self.header["stats"]
        lines = [
            f"contigs {s['contigs']:,}  bases {s['bases']:,}  ambiguous {s['ambiguous']:,}  "
            f"segments {s['segments']:,}  text {s['text_length']:,}",
        ]
        total = 0
        for group, names in PART_GROUPS.items():
            size = sum(self._arrays[n].nbytes for n in names if n in self._arrays)
            total += size
            lines.append(f"  {group:<8} {size / 2**20:10.2f} MiB  {size / max(s['bases'], 1):6.3f} bytes/base")
        lines.append(f"  {'total':<8} {total / 2**20:10.2f} MiB  {total / max(s['bases'], 1):6.3f} bytes/base")
        return "\n".join(lines)

    # ------------------------------------------------------------------ search

    def device_arrays(self) -> FmArrays:
        """The parts on the backend's device (uploaded once, then reused)."""
        from . import search as _search

        if self._device is None:
            with _UPLOAD_LOCK:
                if self._device is None:
                    with self.backend.active():
                        self._device = _search.FmArrays.upload(self.backend, self._arrays, self.header["C"],
                                                               self.pos64)
        return self._device

    def intervals(self, patterns: Any) -> tuple[np.ndarray, np.ndarray]:
        """SA interval ``[lo, hi)`` of every pattern (``[0, 0)`` when it has no match)."""
        lo, hi = self._intervals(patterns)
        return self.backend.to_host(lo), self.backend.to_host(hi)

    def _intervals(self, patterns: Any) -> tuple[Any, Any]:
        from . import search as _search

        with self.backend.active():
            codes, offsets = _search.pattern_arrays(patterns, self.backend)
            return _search.backward_search(self.backend, self.device_arrays(), codes, offsets)

    def count(self, patterns: Any) -> np.ndarray:
        """Exact occurrences of every pattern (int64). A pattern holding an N,
        or empty, counts 0; no match spans two contigs or touches an N."""
        lo, hi = self._intervals(patterns)
        with self.backend.active():
            return self.backend.to_host(hi - lo)

    def locate(self, patterns: Any) -> Occurrences:
        """Every exact occurrence, sorted by pattern index, contig, position."""
        from . import search as _search

        b, fm = self.backend, self.device_arrays()
        lo, hi = self._intervals(patterns)
        with b.active():
            pattern, text_pos = _search.locate_rows(b, fm, lo, hi)
            contig, position = _search.text_to_contig(b, fm, text_pos)
        return Occurrences(b.to_host(pattern), b.to_host(contig), b.to_host(position))

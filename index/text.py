"""The reference text: 2-bit packed forward text, N runs and contig table, on the host and on a device.

Every job that reads reference bases uses this one object: the mapper's
verification, the SAM formatter's MD and ``=``/``X`` CIGAR, the flank index
of the N runs, and the BLAST-style search. It is built from an
:class:`~gseek.index.Index` (its ``text`` part) and never copies the text on
the host.

Layout (``docs/index-format.md``): 16 bases per ``uint32``, first base in
bits 31-30 (``pack_2bit``); an N packs as A and is listed in the sorted,
non-overlapping runs ``[start, end)`` of ``amb_runs`` (text coordinates).
Contig ``c`` is text ``[contig_offsets[c], contig_offsets[c + 1])``.

>>> import os, tempfile
>>> from gseek.index import Index
>>> fa = os.path.join(tempfile.mkdtemp(), "r.fa")
>>> _ = open(fa, "w").write(">a\\nACGTNNACGT\\n>b\\nGGGG\\n")
>>> ref = ReferenceText.from_index(Index.build(fa, wgram=2, device="cpu"))
>>> ref
ReferenceText(contigs=2, bases=14, n_runs=1)
>>> ref.bases(0, 10).tolist(), ref.contig_of(np.array([3, 11])).tolist()
([0, 1, 2, 3, 4, 4, 0, 1, 2, 3], [0, 1])
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gseek.backend import Backend

#: One lock a device, held while a text is uploaded to it (:meth:`ReferenceText.on`): the backends of a
#: device wait for one upload; other devices' uploads go on beside it.
_UPLOAD_LOCKS: dict = {}
_UPLOAD_LOCKS_LOCK = threading.Lock()

if TYPE_CHECKING:  # pragma: no cover
    from .core import Index

__all__ = ["ReferenceText", "DeviceText", "amb_mask", "shard_ranges"]


def amb_mask(runs: np.ndarray, n_words: int) -> np.ndarray:
    """Packed N mask (2 bits a base, ``pack_2bit`` layout) of the runs ``[start, end)``.

    >>> [hex(w) for w in amb_mask(np.array([[1, 3], [17, 18]]), 2)]
    ['0x3c000000', '0x30000000']
    """
    mask = np.zeros(n_words, dtype=np.uint32)
    full = np.uint32(0xFFFFFFFF)
    for a, e in np.asarray(runs, dtype=np.int64).reshape(-1, 2).tolist():
        wa, wb = a >> 4, (e - 1) >> 4
        for w in {wa, wb}:
            lo, hi = max(a, w * 16) - w * 16, min(e, w * 16 + 16) - w * 16
            bits = ((0xFFFFFFFF >> (2 * lo)) & ((0xFFFFFFFF << (2 * (16 - hi))) & 0xFFFFFFFF))
            mask[w] |= np.uint32(bits)
        if wb > wa + 1:
            mask[wa + 1 : wb] = full
    return mask


def shard_ranges(contig_offsets: np.ndarray, n: int) -> list[tuple[int, int]]:
    """The contig ranges ``[a, b)`` of ``n`` database shards, balanced by bases.

    Contig ``c`` goes to shard ``floor(n * m_c / total)``, ``m_c`` its midpoint in the
    text (``total`` bases in all): shards are contiguous, in database order, every
    contig whole and in one shard, and a shard may be empty (more shards than contigs,
    or a contig larger than a shard's share). Deterministic: the same ranges on every
    machine.

    >>> shard_ranges(np.array([0, 10, 20, 30, 40]), 2)
    [(0, 2), (2, 4)]
    >>> shard_ranges(np.array([0, 90, 100]), 3)
    [(0, 0), (0, 1), (1, 2)]
    """
    if n < 1:
        raise ValueError(f"shards: at least 1, not {n}")
    off = np.asarray(contig_offsets, np.int64)
    total = max(int(off[-1]), 1)
    owner = (n * (off[:-1] + off[1:])) // (2 * total)  # n * midpoint / total, in integers
    bounds = np.searchsorted(owner, np.arange(n + 1), side="left")
    return [(int(bounds[i]), int(bounds[i + 1])) for i in range(n)]


def _repack(text: np.ndarray, start: int, end: int) -> np.ndarray:
    """Packed words of text bases ``[start, end)`` (shifted to start a word; bases past ``end`` zero)."""
    n = end - start
    n_words = (n + 15) // 16
    if n_words == 0:
        return np.zeros(0, np.uint32)
    w0, r = start >> 4, start & 15
    words = np.asarray(text, np.uint32)
    hi = words[w0:w0 + n_words].astype(np.uint64)
    if r:
        lo = np.zeros(n_words, np.uint64)
        nxt = words[w0 + 1:w0 + 1 + n_words].astype(np.uint64)
        lo[:nxt.size] = nxt
        hi = ((hi << np.uint64(2 * r)) | (lo >> np.uint64(32 - 2 * r))) & np.uint64(0xFFFFFFFF)
    out = hi.astype(np.uint32)
    tail = n & 15
    if tail:
        out[-1] &= np.uint32((0xFFFFFFFF << (2 * (16 - tail))) & 0xFFFFFFFF)
    return out


@dataclass(frozen=True)
class DeviceText:
    """The reference text's arrays on one backend's device (what kernels read)."""

    backend: Backend
    text: Any
    nmask: Any
    contig_offsets: Any


@dataclass(frozen=True, eq=False)
class ReferenceText:
    """Packed reference text, N runs and contig table (host arrays, read-only).

    ``text``: packed words; ``amb_runs``: ``(k, 2)`` N runs; ``contig_names``
    and ``contig_offsets`` (n + 1 text offsets). ``nmask`` (the packed N mask,
    built on first use) and :meth:`on` (device copies, made once per device)
    serve the kernels.

    A *shard* (:meth:`shard`) is the text of a contiguous range of contigs, with
    its own coordinates (from 0) and contig numbers (from 0); ``origin`` is the
    database text offset of its first base, ``first_contig`` the database number
    of its first contig, and ``db_contig_names`` / ``db_contig_offsets`` the
    whole database's table (the same as its own for the whole text).
    """

    text: np.ndarray
    amb_runs: np.ndarray
    contig_names: tuple[str, ...]
    contig_offsets: np.ndarray
    _cache: dict = field(default_factory=dict, repr=False)
    origin: int = 0
    first_contig: int = 0
    db_contig_names: tuple[str, ...] | None = None
    db_contig_offsets: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.db_contig_names is None:
            object.__setattr__(self, "db_contig_names", self.contig_names)
        if self.db_contig_offsets is None:
            object.__setattr__(self, "db_contig_offsets", self.contig_offsets)

    @classmethod
    def from_index(cls, index: Index) -> ReferenceText:
        """The text of ``index`` (its ``text`` and ``amb_runs`` parts; no copy)."""
        runs = np.asarray(index.arrays["amb_runs"], dtype=np.int64).reshape(-1, 2)
        return cls(np.asarray(index.arrays["text"]), runs, tuple(index.contigs.names),
                   np.asarray(index.contigs.offsets, dtype=np.int64))

    def __repr__(self) -> str:
        where = "" if not self.is_shard else f", first_contig={self.first_contig}, origin={self.origin}"
        return f"ReferenceText(contigs={len(self.contig_names)}, bases={self.n_bases}, n_runs={self.n_runs}{where})"

    @property
    def is_shard(self) -> bool:
        """Whether this is part of a database (:meth:`shard`) rather than the whole."""
        return len(self.contig_names) != len(self.db_contig_names)

    @property
    def db_bases(self) -> int:
        """Bases of the whole database (for statistics: the same in every shard)."""
        return int(self.db_contig_offsets[-1])

    @property
    def db_sequences(self) -> int:
        """Sequences (contigs) of the whole database."""
        return len(self.db_contig_names)

    def shard(self, i: int, n: int) -> ReferenceText:
        """Shard ``i`` of ``n``: the contigs of :func:`shard_ranges` ``(i)``, their text repacked."""
        if not 0 <= i < n:
            raise ValueError(f"shard {i} of {n}: expected 0 <= i < n")
        a, b = shard_ranges(self.contig_offsets, n)[i]
        return self.contigs(a, b)

    def shards(self, n: int) -> list[ReferenceText]:
        """The non-empty shards of ``n`` (:meth:`shard`), in database order.

        >>> import os, tempfile
        >>> from gseek.index import Index
        >>> fa = os.path.join(tempfile.mkdtemp(), "r.fa")
        >>> _ = open(fa, "w").write(">a\\nACGTNNACGT\\n>b\\nGGGG\\n>c\\nTTTTTTTT\\n")
        >>> ref = ReferenceText.from_index(Index.build(fa, wgram=2, device="cpu"))
        >>> ref.shards(2)
        [ReferenceText(contigs=1, bases=10, n_runs=1, first_contig=0, origin=0), ReferenceText(contigs=2, bases=12, n_runs=0, first_contig=1, origin=10)]
        >>> ref.shards(2)[1].bases(0, 12).tolist() == ref.bases(10, 22).tolist()
        True
        """
        return [s for s in (self.shard(i, n) for i in range(n)) if s.contig_names]

    def contigs(self, a: int, b: int) -> ReferenceText:
        """The text of contigs ``[a, b)`` (this text's numbers) as a shard: repacked from base
        0, N runs clipped and moved, contig offsets from 0."""
        if not 0 <= a <= b <= len(self.contig_names):
            raise ValueError(f"contigs [{a}, {b}) of {len(self.contig_names)}")
        start, end = int(self.contig_offsets[a]), int(self.contig_offsets[b])
        runs = self.amb_runs
        keep = (runs[:, 1] > start) & (runs[:, 0] < end)
        runs = np.clip(runs[keep], start, end) - start
        return ReferenceText(_repack(self.text, start, end), np.ascontiguousarray(runs, np.int64),
                             tuple(self.contig_names[a:b]), np.asarray(self.contig_offsets[a:b + 1], np.int64) - start,
                             origin=self.origin + start, first_contig=self.first_contig + a,
                             db_contig_names=self.db_contig_names, db_contig_offsets=self.db_contig_offsets)

    @property
    def n_bases(self) -> int:
        return int(self.contig_offsets[-1])

    @property
    def n_words(self) -> int:
        return int(self.text.size)

    @property
    def n_runs(self) -> int:
        return int(self.amb_runs.shape[0])

    @property
    def has_amb(self) -> bool:
        return self.n_runs > 0

    @property
    def amb_start(self) -> np.ndarray:
        """Starts of the N runs (sorted, contiguous int64)."""
        return self._cached("amb_start", lambda: np.ascontiguousarray(self.amb_runs[:, 0]))

    @property
    def amb_end(self) -> np.ndarray:
        """Ends of the N runs (contiguous int64)."""
        return self._cached("amb_end", lambda: np.ascontiguousarray(self.amb_runs[:, 1]))

    @property
    def nmask(self) -> np.ndarray:
        """The packed N mask (one word when there is no N: kernels skip it then)."""
        return self._cached("nmask", lambda: amb_mask(self.amb_runs, self.text.size) if self.has_amb
                            else np.zeros(1, dtype=np.uint32))

    def _cached(self, key: str, make: Any) -> Any:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def on(self, backend: Backend) -> DeviceText:
        """The text, N mask and contig offsets on ``backend``'s device: uploaded once per device, and
        shared by every backend of it (a GPU's searchers, each on its own stream, read one copy)."""
        key = ("device", backend.name, getattr(backend, "device_id", 0))
        with _UPLOAD_LOCKS_LOCK:
            lock = _UPLOAD_LOCKS.setdefault(key, threading.Lock())
        with lock:  # one upload a device; its other backends wait for it (they could do nothing before it)
            if key not in self._cache:
                with backend.active():
                    dev = DeviceText(backend, backend.asarray(self.text), backend.asarray(self.nmask),
                                     backend.asarray(self.contig_offsets))
                    backend.synchronize()  # complete before another stream's kernels read it
                self._cache[key] = dev
        return self._cache[key]

    def release(self) -> None:
        """Drop the copies on every backend's device (:meth:`on` uploads again when next asked):
        a database searched in volumes holds one volume on a device at a time."""
        for key in [k for k in self._cache if isinstance(k, tuple) and k[0] == "device"]:
            del self._cache[key]

    def bases(self, start: int, end: int) -> np.ndarray:
        """Base codes 0..4 (4 = N) of text ``[start, end)``, for tests and small reads."""
        return self.bases_at(np.arange(int(start), int(end), dtype=np.int64))

    def bases_at(self, g: np.ndarray) -> np.ndarray:
        """Base codes 0..4 (4 = N) of the text positions ``g`` (int64, any order)."""
        codes = ((self.text[g >> 4] >> (30 - 2 * (g & 15)).astype(np.uint32)) & 3).astype(np.uint8)
        if self.has_amb:
            codes[((self.nmask[g >> 4] >> (30 - 2 * (g & 15)).astype(np.uint32)) & 3) != 0] = 4
        return codes

    def contig_of(self, text_pos: np.ndarray) -> np.ndarray:
        """Contig number of every text position."""
        return (np.searchsorted(self.contig_offsets, text_pos, side="right") - 1).astype(np.int32)

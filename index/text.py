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

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gseek.backend import Backend

if TYPE_CHECKING:  # pragma: no cover
    from .core import Index

__all__ = ["ReferenceText", "DeviceText", "amb_mask"]


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
    built on first use) and :meth:`on` (device copies, made once per backend)
    serve the kernels.
    """

    text: np.ndarray
    amb_runs: np.ndarray
    contig_names: tuple[str, ...]
    contig_offsets: np.ndarray
    _cache: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_index(cls, index: Index) -> ReferenceText:
        """The text of ``index`` (its ``text`` and ``amb_runs`` parts; no copy)."""
        runs = np.asarray(index.arrays["amb_runs"], dtype=np.int64).reshape(-1, 2)
        return cls(np.asarray(index.arrays["text"]), runs, tuple(index.contigs.names),
                   np.asarray(index.contigs.offsets, dtype=np.int64))

    def __repr__(self) -> str:
        return f"ReferenceText(contigs={len(self.contig_names)}, bases={self.n_bases}, n_runs={self.n_runs})"

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
        """The text, N mask and contig offsets on ``backend``'s device (uploaded once per backend)."""
        key = ("device", id(backend))
        if key not in self._cache:
            with backend.active():
                self._cache[key] = DeviceText(backend, backend.asarray(self.text), backend.asarray(self.nmask),
                                              backend.asarray(self.contig_offsets))
        return self._cache[key]

    def bases(self, start: int, end: int) -> np.ndarray:
        """Base codes 0..4 (4 = N) of text ``[start, end)``, for tests and small reads."""
        g = np.arange(int(start), int(end), dtype=np.int64)
        codes = ((self.text[g >> 4] >> (30 - 2 * (g & 15)).astype(np.uint32)) & 3).astype(np.uint8)
        if self.has_amb:
            codes[((self.nmask[g >> 4] >> (30 - 2 * (g & 15)).astype(np.uint32)) & 3) != 0] = 4
        return codes

    def contig_of(self, text_pos: np.ndarray) -> np.ndarray:
        """Contig number of every text position."""
        return (np.searchsorted(self.contig_offsets, text_pos, side="right") - 1).astype(np.int32)

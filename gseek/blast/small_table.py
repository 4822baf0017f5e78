"""The lookup table of a small query batch: its words alone, laid into resident 4^w arrays.

A direct table (:mod:`gseek.blast.lookup`) has an entry for each of the 4^w
words: for megablast (w = 12) 16.7M offsets (64 MiB) and a 2 MiB presence
vector, built on the host and uploaded for every batch, however small. For a
batch of a few hundred words that is nearly all of a warm search's fixed cost
(``gseek serve``'s one-query requests, issue 39). The scan reads the table's
offsets only at words whose presence bit is set (``scan_pv`` keeps those
positions; ``lookup_count``/``lookup_fill`` read ``first[c]`` and
``first[c + 1]`` of them), so the other entries may hold anything. A small
batch's table is therefore kept *sparse* (:class:`SparseTable`: the words
present, sorted, and their positions: the same ``positions`` as the direct
table) and laid into arrays that stay on the backend between searches
(:func:`resident_table`): the previous batch's presence bits cleared, this
batch's set, and its words' offsets written; nothing else is touched. What
the kernels read is the direct table's, so every result is the same.

One set of resident arrays per backend device, stream and word length, used
by one search at a time (a lock; a device's workers on streams of their own,
as ``gseek serve``'s, each have theirs); a search that finds it taken uses the
direct table (:meth:`SparseTable.dense`).

>>> import numpy as np
>>> from gseek.blast.lookup import lookup_of_words, word_codes
>>> words = word_codes(np.array([0, 1, 2, 3, 0, 1, 2, 4, 0, 1, 2], np.uint8), np.array([0, 11]), 3)
>>> t = sparse_lookup(words, 3)
>>> t.codes.tolist(), t.bounds.tolist(), t.positions.tolist()  # ACG (6) at 0, 4, 8; CGT, GTA, TAC once
([6, 27, 44, 49], [0, 3, 4, 5, 6], [0, 4, 8, 1, 2, 3])
>>> d = t.dense()
>>> bool((d.first == lookup_of_words(words, 3).first).all())
True
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .lookup import LookupTable

__all__ = ["SMALL_TABLE_WORDS", "SparseTable", "resident_table", "sparse_lookup"]

#: Batches of at most this many query positions (both strands) get a :class:`SparseTable`.
SMALL_TABLE_WORDS = 1 << 18


@dataclass(frozen=True)
class SparseTable:
    """The lookup table of the words present: ``codes`` (sorted, int64), ``bounds`` (their
    positions are ``positions[bounds[k]:bounds[k + 1]]``, int32) and ``positions`` (as the direct
    table's: by word, each word's in increasing order)."""

    w: int
    codes: np.ndarray
    bounds: np.ndarray
    positions: np.ndarray
    _dense: list = field(default_factory=list, repr=False, compare=False)

    @property
    def n_words(self) -> int:
        """Listed word occurrences (query positions that seed)."""
        return int(self.positions.size)

    def presence(self) -> tuple[np.ndarray, np.ndarray]:
        """The PV words holding a present word (sorted, int64) and their values (uint32)."""
        groups = self.codes >> 5
        if not groups.size:
            return groups, np.zeros(0, np.uint32)
        start = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
        bits = np.left_shift(np.uint32(1), (self.codes & 31).astype(np.uint32))
        return groups[start], np.bitwise_or.reduceat(bits, start).astype(np.uint32)

    def dense(self) -> LookupTable:
        """The direct table (:func:`~gseek.blast.lookup.lookup_of_words`'), built once."""
        if not self._dense:
            n_codes = 1 << (2 * self.w)
            first = np.empty(n_codes + 1, np.int32)
            counts = np.zeros(n_codes, np.int32)
            counts[self.codes] = np.diff(self.bounds)
            first[0] = 0
            np.cumsum(counts, out=first[1:])
            pv = np.zeros(max(1, n_codes >> 5), np.uint32)
            groups, values = self.presence()
            pv[groups] = values
            self._dense.append(LookupTable(self.w, first, self.positions, pv))
        return self._dense[0]


def sparse_lookup(words: np.ndarray, w: int) -> SparseTable:
    """The :class:`SparseTable` of :func:`~gseek.blast.lookup.word_codes`' ``words`` (of length
    ``w``): one sort of (word, position) keys."""
    pos = np.flatnonzero(words >= 0)
    keys = np.sort((words[pos].astype(np.int64) << 32) | pos)  # by word, then position: the direct table's order
    codes_all, positions = keys >> 32, (keys & 0xFFFFFFFF).astype(np.int32)
    start = np.flatnonzero(np.r_[True, codes_all[1:] != codes_all[:-1]]) if keys.size else np.zeros(0, np.int64)
    bounds = np.append(start, keys.size).astype(np.int32)
    return SparseTable(int(w), codes_all[start], bounds, positions)


class _Resident:
    """A device's 4^w offsets and PV kept between searches, and the PV words the last table set."""

    def __init__(self, backend: Any, w: int) -> None:
        xp = backend.xp
        n_codes = 1 << (2 * w)
        with backend.active():
            self.first = xp.zeros(n_codes + 1, np.int32)
            self.pv = xp.zeros(max(1, n_codes >> 5), np.uint32)
        self.groups = np.zeros(0, np.int64)
        self.lock = threading.Lock()

    def load(self, backend: Any, table: SparseTable) -> LookupTable:
        up = backend.asarray
        groups, values = table.presence()
        with backend.active():
            if self.groups.size:
                self.pv[up(self.groups)] = 0
            self.groups = groups
            if groups.size:
                codes = up(table.codes)
                self.first[codes + 1] = up(table.bounds[1:])
                self.first[codes] = up(table.bounds[:-1])
                self.pv[up(groups)] = up(values)
        return LookupTable(table.w, self.first, table.positions, self.pv)


_RESIDENT: dict[tuple[str, int, int, int], _Resident] = {}
_RESIDENT_LOCK = threading.Lock()


@contextlib.contextmanager
def resident_table(backend: Any, table: Any) -> Iterator[Any]:
    """``table`` as the search's kernels take it: a direct table as it is; a :class:`SparseTable`
    laid into the backend's resident arrays, held for the ``with`` block (the direct table where
    another search holds them)."""
    if not isinstance(table, SparseTable):
        yield table
        return
    stream = getattr(backend, "stream", None)
    key = (backend.name, int(getattr(backend, "device_id", 0)), 0 if stream is None else int(stream.ptr), table.w)
    with _RESIDENT_LOCK:
        slot = _RESIDENT.get(key)
        if slot is None:
            slot = _RESIDENT[key] = _Resident(backend, table.w)
    if not slot.lock.acquire(blocking=False):
        yield table.dense()
        return
    try:
        yield slot.load(backend, table)
    finally:
        slot.lock.release()

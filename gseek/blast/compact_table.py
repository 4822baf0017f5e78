"""The CPU's lookup table of a large batch: the words present alone, found from the presence vector by rank.

A direct table (:mod:`gseek.blast.lookup`) has 4^w + 1 offsets, megablast's
w = 12 16.7M of them (64 MiB), written whole for every batch and its PV made
by a pass over all of them: on the 2-core VM 0.07-0.09 s of a warm megablast
search of 600 x 500 bp (0.21 s), and 64 MiB of the command's memory. The scan
reads the offsets only of words whose PV bit is set (``scan_pv`` keeps those
hits), so on the CPU a batch too large for a
:class:`~gseek.blast.small_table.SparseTable` gets a :class:`CompactTable`:
the PV; ``rank``, for each PV word (32 codes), the number of present words of
lower codes; and ``bounds``, the present words' offsets in word order. Word
``c``, when present, is number ``rank[c >> 5] + popcount(pv[c >> 5] & ((1 <<
(c & 31)) - 1))`` (a bit vector's rank, as succinct indexes count) and its
query positions are ``positions[bounds[k]:bounds[k + 1]]``: the direct
table's positions, in the same order, so every result is the same. The CPU's
lookup kernels read it (:mod:`gseek.kernels.blast_compact`); a GPU searcher
given one takes :meth:`CompactTable.dense`.

It is built by parallel passes that read the seeding positions and the
4^w / 32 PV words, never the 4^w codes: the seeding positions grouped by
range of codes (:mod:`gseek.blast.lookup`'s stable counting sort), then each
range on its own thread: its positions sorted by word (a stable radix sort on
two 8-bit digits of the word's place in the range, so each word's positions
stay in increasing order), its PV bits and the rank of its PV words counted
from the range's start; then the ranges' counts of present words summed, and
each range's ranks and bounds moved by the words before it. The result is
the same for any thread count.

>>> import numpy as np
>>> from gseek.blast.lookup import lookup_of_words, word_codes
>>> words = word_codes(np.array([0, 1, 2, 3, 0, 1, 2, 4, 0, 1, 2], np.uint8), np.array([0, 11]), 3)
>>> t = compact_lookup(words, 3)
>>> t.codes().tolist(), t.bounds.tolist(), t.positions.tolist()  # ACG (6) at 0, 4, 8; CGT, GTA, TAC once
([6, 27, 44, 49], [0, 3, 4, 5, 6], [0, 4, 8, 1, 2, 3])
>>> t.positions_of(np.array([0, 1, 2])).tolist(), t.positions_of(np.array([0, 1, 3])).tolist()
([0, 4, 8], [])
>>> d = t.dense()
>>> bool((d.first == lookup_of_words(words, 3).first).all())
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np

from gseek.kernels._jit import njit
from gseek.kernels.fmindex import _popcount32

from .lookup import LookupTable, _by_range, _parts

__all__ = ["CompactTable", "compact_lookup"]


@dataclass(frozen=True)
class CompactTable:
    """The lookup table of the words present: ``pv`` (the presence vector, bit ``c & 31`` of word
    ``c >> 5``), ``rank`` (int32 a PV word: present words of lower codes), ``bounds`` (int32, one more
    than the present words: word number k's positions are ``positions[bounds[k]:bounds[k + 1]]``) and
    ``positions`` (int32, as the direct table's: by word, each word's in increasing order)."""

    w: int
    pv: np.ndarray
    rank: np.ndarray
    bounds: np.ndarray
    positions: np.ndarray
    _dense: list = field(default_factory=list, repr=False, compare=False)

    def present(self, code: int) -> bool:
        """Whether word ``code`` occurs in the queries (the PV bit)."""
        return bool((self.pv[code >> 5] >> np.uint32(code & 31)) & 1)

    def codes(self) -> np.ndarray:
        """The present words, in increasing order (int64)."""
        bits = (self.pv[:, None] >> np.arange(32, dtype=np.uint32)) & np.uint32(1)
        codes = np.flatnonzero(bits.ravel())
        return codes[codes < (1 << (2 * self.w))].astype(np.int64)

    def positions_of(self, word: np.ndarray) -> np.ndarray:
        """Query positions of the w-mer given as base codes (0..3)."""
        code = 0
        for c in np.asarray(word, dtype=np.int64).tolist():
            if not 0 <= c <= 3:
                return np.zeros(0, self.positions.dtype)
            code = (code << 2) | c
        if not self.present(code):
            return np.zeros(0, self.positions.dtype)
        g, below = code >> 5, (1 << (code & 31)) - 1
        k = int(self.rank[g]) + bin(int(self.pv[g]) & below).count("1")  # the kernels' present_index
        return self.positions[self.bounds[k]:self.bounds[k + 1]]

    def dense(self) -> LookupTable:
        """The direct table (:func:`~gseek.blast.lookup.lookup_of_words`'), built once."""
        if not self._dense:
            n_codes = 1 << (2 * self.w)
            counts = np.zeros(n_codes, self.bounds.dtype)
            counts[self.codes()] = np.diff(self.bounds)
            first = np.zeros(n_codes + 1, self.bounds.dtype)
            np.cumsum(counts, out=first[1:])
            self._dense.append(LookupTable(self.w, first, self.positions, self.pv))
        return self._dense[0]


@njit(cache=True, inline="always")
def _radix_pass(shift, a, b, src_pos, src_low, dst_pos, dst_low, at):
    """Entries ``a .. b - 1`` of ``src_*`` into ``dst_*`` from ``at`` on, stably by the 8-bit digit of
    ``low`` at ``shift``."""
    count = np.zeros(257, np.int64)
    for k in range(a, b):
        count[((src_low[k] >> shift) & 255) + 1] += 1
    for d in range(256):
        count[d + 1] += count[d]
    for k in range(a, b):
        d = (src_low[k] >> shift) & 255
        dst_pos[at + count[d]] = src_pos[k]
        dst_low[at + count[d]] = src_low[k]
        count[d] += 1


@njit(parallel=True, cache=True, nogil=True)
def _sort_ranges(span, bounds, bucket, low, pv, rank, present):
    """Each code range r on its own: its positions ``bucket[a:b]`` and places ``low[a:b]`` sorted by place
    (stable: two 8-bit digits, least significant first), its words' PV bits set, ``rank[g]`` = the range's
    present words before PV word g, ``present[r]`` = the range's present words. A range writes only its
    own entries (``span`` is a multiple of 32: its PV words are its own)."""
    n_groups = pv.size
    for r in numba.prange(bounds.size - 1):
        a, b = bounds[r], bounds[r + 1]
        if b > a:
            aside_pos = np.empty(b - a, bucket.dtype)
            aside_low = np.empty(b - a, low.dtype)
            _radix_pass(0, a, b, bucket, low, aside_pos, aside_low, 0)
            _radix_pass(8, 0, b - a, aside_pos, aside_low, bucket, low, a)
        base = r * span
        prev = -1
        for k in range(a, b):
            place = np.int64(low[k])
            if place != prev:
                code = base + place
                pv[code >> 5] |= np.uint32(1) << np.uint32(code & 31)
                prev = place
        running = 0
        for g in range(base >> 5, min(n_groups, (base + span + 31) >> 5)):
            rank[g] = running
            running += _popcount32(np.int64(pv[g]))
        present[r] = running


@njit(parallel=True, cache=True, nogil=True)
def _range_bounds(span, bounds, low, before, rank, out):
    """Each code range r on its own: ``before[r]`` (present words of the ranges before it) added to its
    PV words' ranks, and its words' first places in ``bucket`` written to ``out[before[r]:]``."""
    n_groups = rank.size
    for r in numba.prange(bounds.size - 1):
        base = r * span
        for g in range(base >> 5, min(n_groups, (base + span + 31) >> 5)):
            rank[g] += before[r]
        k_out = before[r]
        prev = -1
        for k in range(bounds[r], bounds[r + 1]):
            place = np.int64(low[k])
            if place != prev:
                out[k_out] = k
                k_out += 1
                prev = place


def compact_lookup(words: np.ndarray, w: int) -> CompactTable:
    """The :class:`CompactTable` of :func:`~gseek.blast.lookup.word_codes`' ``words`` (of length ``w``):
    what :func:`~gseek.blast.lookup.lookup_of_words` lists, without its 4^w offsets. Beside ``words`` it
    holds 4 bytes a seeding position, 8 bytes a present word and 2 x 4^w / 8 bytes (PV and ranks), and
    while it is built 2 bytes more a seeding position and one range's positions at a time a thread."""
    if words.size >= (1 << 31) - 1:
        raise ValueError(f"{words.size} query positions: at most 2^31 - 2 in one table")
    n_codes = 1 << (2 * int(w))
    parts = max(_parts(), n_codes >> 16)  # a range's places fit in 16 bits
    span = -(-n_codes // parts)
    span = min(n_codes, -(-span // 32) * 32)  # a multiple of 32 (a range's PV words are its own), or all codes
    bounds, positions, low = _by_range(words, n_codes, span, np.int32)  # by code range; by word once sorted
    parts = bounds.size - 1
    groups = max(1, n_codes >> 5)
    pv = np.zeros(groups, np.uint32)
    rank = np.empty(groups, np.int32)
    present = np.zeros(parts, np.int64)
    _sort_ranges(span, bounds, positions, low, pv, rank, present)
    before = np.zeros(parts, np.int32)
    np.cumsum(present[:-1], out=before[1:])
    first = np.empty(int(present.sum()) + 1, np.int32)
    _range_bounds(span, bounds, low, before, rank, first)
    first[-1] = positions.size
    return CompactTable(int(w), pv, rank, first, positions)

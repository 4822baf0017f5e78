"""The query lookup table built where the search runs (issue 40): words, table and PV from sorted keys.

A GPU searcher's batch too large for a :class:`~gseek.blast.small_table.SparseTable` had its direct
table built on the host (:func:`gseek.blast.lookup.lookup_of_words`: 4^w + 1 offsets, 64 MiB for
megablast's w = 12) and uploaded with every search: with the words and the seeding flags a third of
a warm megablast search of 100 x 10 kb on an H200 (``benchmarks/RESULTS.md``, issue 40's profile).
Here the host keeps the strands and the DUST mask (:class:`QueryMask`, in place of the table) and
the backend builds the rest from the uploaded sequences and mask (:func:`build_on`):

* every position's word (:func:`words_of`): the ``w`` bases from it as a 2-bit code, -1 where they
  run past the sequence's end or hold an N or a masked base (a prefix sum of those bases);
* the table (:func:`table_of`): the seeding positions' keys ``word << 32 | position`` sorted (each
  word's positions in increasing order, as the host's counting sort lists them), the offsets the
  cumulative counts of the words, the PV a bit a word present.

Every function takes the array module ``xp`` (NumPy or CuPy): on NumPy they are the CPU twin of what
runs on the GPU, and both equal :func:`~gseek.blast.lookup.word_codes` and
:func:`~gseek.blast.lookup.lookup_of_words` exactly (``tests/test_blast_device_table.py``).

>>> codes = np.array([0, 1, 2, 3, 0, 1, 2, 4, 0, 1, 2], np.uint8)  # ACGTACGNACG
>>> words = words_of(np, codes, np.array([0, 11]), np.zeros(11, np.uint8), 3)
>>> words.tolist()
[6, 27, 44, 49, 6, -1, -1, -1, 6, -1, -1]
>>> t = table_of(np, words, 3)
>>> t.positions_of(np.array([0, 1, 2])).tolist()
[0, 4, 8]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .lookup import MAX_LOOKUP_WORD, LookupTable, lookup_of_words, seeding, word_codes

__all__ = ["QueryMask", "build_on", "table_of", "words_of"]


@dataclass(frozen=True)
class QueryMask:
    """A batch's lookup table not yet built: its word length ``w`` and the searched strands' mask
    (uint8, non-zero where a base may not seed), built on the searching backend by :func:`build_on`."""

    w: int
    mask: np.ndarray

    @property
    def n_words(self) -> int:
        """Query positions (an upper bound of the positions that seed: the table is not built yet)."""
        return int(self.mask.size)


def words_of(xp: Any, codes: Any, offsets: Any, mask: Any, w: int) -> Any:
    """The code of the ``w``-mer starting at every position of ``codes`` (int32; -1 where it runs past
    its sequence's end, ``offsets`` being the sequences' n + 1 bounds, or holds an N or a masked
    base): :func:`~gseek.blast.lookup.word_codes`' result, from whole-array passes of ``xp``."""
    n = int(codes.size)
    if n == 0:
        return xp.zeros(0, np.int32)
    offsets = xp.asarray(offsets, np.int64)
    at = xp.arange(n, dtype=np.int64)
    end = offsets[1:][xp.searchsorted(offsets[1:], at, side="right")]  # each position's sequence end
    bad = xp.zeros(n + 1, np.int32)  # bases that may not seed before each position (a prefix sum)
    bad[1:] = xp.cumsum((codes > 3) | (mask != 0), dtype=np.int32)
    stop = xp.minimum(at + w, n)
    ok = (at + w <= end) & (bad[stop] == bad[at])
    base = xp.zeros(n + w, np.int32)
    base[:n] = codes & 3
    code = xp.zeros(n, np.int32)
    for k in range(w):  # first base in the high bits
        code <<= 2
        code |= base[k:k + n]
    return xp.where(ok, code, np.int32(-1)).astype(np.int32, copy=False)


def table_of(xp: Any, words: Any, w: int) -> LookupTable:
    """The lookup table and PV of ``words`` (:func:`words_of`' result; arrays of ``xp``), int32 offsets
    and positions: :func:`~gseek.blast.lookup.lookup_of_words`' result for fewer than 2^31 - 1 words."""
    if int(words.size) >= (1 << 31) - 1:
        raise ValueError(f"{words.size} query positions: at most 2^31 - 2 in one table")
    n_codes = 1 << (2 * int(w))
    pos = xp.flatnonzero(words >= 0)
    seeding = words[pos]
    keys = xp.sort((seeding.astype(np.int64) << 32) | pos.astype(np.int64))  # by word, then position
    positions = (keys & 0xFFFFFFFF).astype(np.int32)
    counts = xp.bincount(seeding, minlength=n_codes)
    first = xp.zeros(n_codes + 1, np.int32)
    first[1:] = xp.cumsum(counts, dtype=np.int32)
    present = xp.zeros(max(32, n_codes), np.uint32)
    present[:n_codes] = counts > 0
    bit = xp.arange(32, dtype=np.uint32)
    pv = (present.reshape(-1, 32) << bit).sum(axis=1, dtype=np.uint32)  # distinct bits: the sum is their OR
    return LookupTable(int(w), first, positions, pv)


def build_on(backend: Any, table: QueryMask, codes: np.ndarray, offsets: np.ndarray) -> tuple[Any, Any, Any]:
    """``table``'s lookup table, the seeding flags (uint8, 1 where a word seeds) and the sequences
    ``codes``, on ``backend`` (a GPU: from the uploaded codes and mask; the CPU: the host's
    parallel passes). Call it with the backend active."""
    if not 1 <= int(table.w) <= MAX_LOOKUP_WORD:
        raise ValueError(f"lookup word length must be 1..{MAX_LOOKUP_WORD}, not {table.w}")
    if backend.name != "gpu":
        words = word_codes(codes, offsets, table.w, table.mask)
        return lookup_of_words(words, table.w), seeding(words), codes
    xp = backend.xp
    dev_codes = backend.asarray(np.ascontiguousarray(codes, np.uint8))
    words = words_of(xp, dev_codes, backend.asarray(offsets, np.int64),
                     backend.asarray(np.ascontiguousarray(table.mask, np.uint8)), table.w)
    return table_of(xp, words, table.w), (words >= 0).view(np.uint8), dev_codes

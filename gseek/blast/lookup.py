"""The query lookup table and its presence vector (G-BLASTN's query side; BLAST+'s nucleotide lookup).

Every w-mer of a batch of queries — but those touching an N (code 4) or a
masked base (DUST, lowercase) — is listed under its 2-bit code: word ``c``'s
query positions are ``positions[first[c]:first[c + 1]]``, in increasing
order (positions index the queries' concatenated codes). The presence vector
(PV) holds one bit a word, set where the word occurs, so a scan can drop most
database words with one bit test in fast memory before it reads the table
(G-BLASTN keeps the PV in shared memory and the table in global memory).
Many queries share one table: the database is scanned once per batch.

The table is built on the host in two Numba passes, count then fill (a prefix
sum places each word's list), so it is the same for any thread count.

>>> import numpy as np
>>> codes = np.array([0, 1, 2, 3, 0, 1, 2, 4, 0, 1, 2], np.uint8)  # ACGTACGNACG
>>> t = build_lookup(codes, np.array([0, 11]), w=3)
>>> t.positions_of(np.array([0, 1, 2])).tolist()  # ACG
[0, 4, 8]
>>> t.positions_of(np.array([1, 2, 4])).size  # a word with an N never seeds
0
>>> bool(t.present(6)), bool(t.present(7))  # ACG = 0b000110, ACT = 0b000111
(True, False)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gseek.errors import OptionError
from gseek.kernels._jit import njit

__all__ = ["LookupTable", "build_lookup", "word_codes", "MAX_LOOKUP_WORD"]

#: Longest word a direct table (4^w lists, a 4^w-bit PV) is built for: 4^14 = 268M lists
#: would already be 1 GiB of offsets; BLAST+'s nucleotide lookups use w <= 12 (megablast's
#: word size 28 is reached by mini-extension from a shorter table word).
MAX_LOOKUP_WORD = 13


@njit(cache=True, nogil=True)
def _words(codes, offsets, mask, w, out):
    """Code of the w-mer starting at every position, -1 where it runs past its query's
    end or holds an N or a masked base (one pass, a rolling code per query)."""
    keep = (1 << (2 * w)) - 1
    for q in range(offsets.size - 1):
        a, b = offsets[q], offsets[q + 1]
        code = 0
        valid = 0  # bases in the current run without N or mask, up to w
        for i in range(a, b):
            out[i] = -1
            c = codes[i]
            if c > 3 or mask[i] != 0:
                valid = 0
                code = 0
                continue
            code = ((code << 2) | c) & keep
            if valid < w:
                valid += 1
            if valid == w:
                out[i - w + 1] = code


@njit(cache=True, nogil=True)
def _count(words, counts):
    for i in range(words.size):
        if words[i] >= 0:
            counts[words[i]] += 1


@njit(cache=True, nogil=True)
def _fill(words, first, positions, pv):
    cursor = first[:-1].copy()
    for i in range(words.size):
        c = words[i]
        if c >= 0:
            positions[cursor[c]] = i
            cursor[c] += 1
            pv[c >> 5] |= np.uint32(1) << np.uint32(c & 31)


@dataclass(frozen=True)
class LookupTable:
    """Word -> query positions (``first``/``positions``, a ragged array over all 4^w
    words) and the presence vector ``pv`` (bit ``c & 31`` of word ``c >> 5``)."""

    w: int
    first: np.ndarray
    positions: np.ndarray
    pv: np.ndarray

    @property
    def n_words(self) -> int:
        """Listed word occurrences (query positions that seed)."""
        return int(self.positions.size)

    def present(self, code: int) -> bool:
        """Whether word ``code`` occurs in the queries (the PV bit)."""
        return bool((self.pv[code >> 5] >> np.uint32(code & 31)) & 1)

    def positions_of(self, word: np.ndarray) -> np.ndarray:
        """Query positions of the w-mer given as base codes (0..3)."""
        code = 0
        for c in np.asarray(word, dtype=np.int64).tolist():
            if not 0 <= c <= 3:
                return np.zeros(0, np.int64)
            code = (code << 2) | c
        return self.positions[self.first[code]:self.first[code + 1]]


def word_codes(codes: np.ndarray, offsets: np.ndarray, w: int, mask: np.ndarray | None = None) -> np.ndarray:
    """The code of the w-mer starting at every position (int64; -1 where none seeds)."""
    if not 1 <= int(w) <= MAX_LOOKUP_WORD:
        raise OptionError(f"lookup word length must be 1..{MAX_LOOKUP_WORD}, not {w}")
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    mask = np.zeros(codes.size, np.uint8) if mask is None else np.ascontiguousarray(mask, dtype=np.uint8)
    if mask.size != codes.size:
        raise OptionError(f"mask has {mask.size} entries for {codes.size} bases")
    out = np.empty(codes.size, np.int64)
    _words(codes, np.ascontiguousarray(offsets, dtype=np.int64), mask, int(w), out)
    return out


def build_lookup(codes: np.ndarray, offsets: np.ndarray, w: int, mask: np.ndarray | None = None) -> LookupTable:
    """The lookup table and PV of every query ``codes[offsets[q]:offsets[q + 1]]`` for words of ``w``.

    Arguments:
        codes: the queries' base codes (0..3, 4 = N), concatenated (both strands, if
            both are searched: the caller lays the reverse complements after them).
        offsets: n + 1 query offsets into ``codes``.
        w: the table's word length (1..:data:`MAX_LOOKUP_WORD`).
        mask: non-zero where a base may not seed (DUST, lowercase); None: no mask.
    """
    words = word_codes(codes, offsets, w, mask)
    wide = codes.size >= (1 << 31) - 1
    index = np.int64 if wide else np.int32  # offsets and positions: int32 whenever they fit
    first = np.zeros((1 << (2 * int(w))) + 1, index)
    _count(words, first[1:])
    np.cumsum(first, out=first)  # in place: the exclusive prefix sum, first[0] = 0
    positions = np.empty(int(first[-1]), index)
    pv = np.zeros(max(1, (1 << (2 * int(w))) >> 5), np.uint32)
    _fill(words, first, positions, pv)
    return LookupTable(int(w), first, positions, pv)

"""CIGAR text from BAM-encoded runs (``length << 4 | op``), for many alignments at once.

The DP stages (:mod:`gseek.dp`) return every pair's CIGAR as runs in one
``uint32`` array with offsets; :func:`cigar_strings` writes all their text in
two parallel Numba passes (size, prefix sum, fill) with the shared byte
writers of :mod:`gseek.output._text`. ``=``/``X`` by default, ``M`` on request.
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np

from gseek import ragged
from gseek.kernels import dp
from gseek.kernels._jit import njit

from ._text import _byte, _int

__all__ = ["CigarStrings", "cigar_strings", "OP_LETTERS"]

#: CIGAR letter of each DP trace-back op code.
OP_LETTERS = {dp.OP_I: "I", dp.OP_D: "D", dp.OP_EQ: "=", dp.OP_X: "X"}

_OP_LETTER = np.zeros(16, np.uint8)
for _op, _letter in OP_LETTERS.items():
    _OP_LETTER[_op] = ord(_letter)


@njit(cache=True, parallel=True, nogil=True, error_model="numpy")
def _cigar_pass(runs, run_offsets, merge_m, letters, text, text_offsets, write):
    """Text length of every pair's CIGAR (``write=False``: into ``text_offsets[p + 1]``)
    or the text itself written at ``text_offsets`` (``write=True``). With
    ``merge_m``, ``=``/``X`` runs are one ``M`` run."""
    n = run_offsets.size - 1
    for p in numba.prange(n):
        start = text_offsets[p] if write else 0
        pos = start
        length = 0
        letter = 0
        for r in range(run_offsets[p], run_offsets[p + 1] + 1):
            if r < run_offsets[p + 1]:
                run = runs[r]
                c = letters[run & 15]
                if merge_m and (c == 61 or c == 88):  # '=' 'X'
                    c = 77  # 'M'
                if c == letter:
                    length += run >> 4
                    continue
            if length > 0:
                pos = _int(text, pos, length, write)
                pos = _byte(text, pos, letter, write)
            if r < run_offsets[p + 1]:
                letter = c
                length = runs[r] >> 4
        if not write:
            text_offsets[p + 1] = pos - start


def cigar_strings(runs: np.ndarray, run_offsets: np.ndarray, merge_m: bool = False) -> CigarStrings:
    """CIGAR text of all pairs at once from BAM-encoded runs (pair p's runs
    are ``runs[run_offsets[p]:run_offsets[p + 1]]``).

    >>> c = cigar_strings(np.array([4 << 4 | 7, 1 << 4 | 8, 3 << 4 | 7], np.uint32), np.array([0, 3, 3]))
    >>> list(c), list(cigar_strings(c.runs, c.run_offsets, merge_m=True))
    (['4=1X3=', ''], ['8M', ''])
    """
    runs = np.ascontiguousarray(runs, np.uint32)
    run_offsets = np.ascontiguousarray(run_offsets, np.int64)
    sizes = np.zeros(run_offsets.size, np.int64)
    _cigar_pass(runs, run_offsets, merge_m, _OP_LETTER, np.zeros(0, np.uint8), sizes, False)
    offsets = np.cumsum(sizes)  # sizes[0] is 0: the offsets of every pair's text
    text = np.empty(int(offsets[-1]), np.uint8)
    _cigar_pass(runs, run_offsets, merge_m, _OP_LETTER, text, offsets, True)
    return CigarStrings(text, offsets, runs, run_offsets)


class CigarStrings(Sequence):
    """The CIGARs of many alignments: one byte buffer of text plus offsets
    (``text[offsets[i]:offsets[i + 1]]``), and the BAM-encoded runs they were
    made from. Items decode to ``str`` when read; ``''`` is an empty alignment.
    """

    __slots__ = ("text", "offsets", "runs", "run_offsets")

    def __init__(self, text: np.ndarray, offsets: np.ndarray, runs: np.ndarray, run_offsets: np.ndarray) -> None:
        self.text, self.offsets, self.runs, self.run_offsets = text, offsets, runs, run_offsets

    def __len__(self) -> int:
        return self.offsets.size - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        return self.text[self.offsets[i]:self.offsets[i + 1]].tobytes().decode("ascii")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CigarStrings):
            return np.array_equal(self.offsets - self.offsets[0], other.offsets - other.offsets[0]) and \
                self.text[self.offsets[0]:self.offsets[-1]].tobytes() == \
                other.text[other.offsets[0]:other.offsets[-1]].tobytes()
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<CigarStrings {len(self)} alignments, {self.text.size} bytes>"

    def take(self, idx: np.ndarray) -> CigarStrings:
        """The CIGARs at ``idx`` (an index array)."""
        idx = np.asarray(idx, np.int64)
        return CigarStrings(*ragged.gather(self.text, self.offsets, idx), *ragged.gather(self.runs, self.run_offsets, idx))

    @staticmethod
    def concat(parts: Sequence[CigarStrings]) -> CigarStrings:
        """One :class:`CigarStrings` holding ``parts`` in order."""
        return CigarStrings(*ragged.concat([(p.text, p.offsets) for p in parts]),
                            *ragged.concat([(p.runs, p.run_offsets) for p in parts]))

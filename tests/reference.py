"""Slow, readable references for the kernels; the twins are tested against these.

Written for clarity, not speed: plain Python loops over plain Python values.
"""

from __future__ import annotations

import numpy as np

BASES = "ACGT"


def pack_2bit(codes: list[int]) -> tuple[list[int], list[int]]:
    """16 bases per 32-bit word, first base in the top two bits; N packs as A
    and sets its two bits in the N mask."""
    packed, nmask = [], []
    for start in range(0, len(codes), 16):
        word = mask = 0
        for j in range(16):
            code = codes[start + j] if start + j < len(codes) else 0
            shift = 30 - 2 * j
            if code == 4:
                mask |= 0b11 << shift
                code = 0
            word |= code << shift
        packed.append(word)
        nmask.append(mask)
    return packed, nmask


def reverse_complement(seq: str) -> str:
    """Reverse complement of an ACGTN string (N stays N)."""
    return "".join({"A": "T", "C": "G", "G": "C", "T": "A", "N": "N"}[b] for b in reversed(seq))


def wgram_codes(records: list[str], w: int) -> list[int]:
    """Code of every w-mer (A=0..T=3, first base most significant); 2**32-1 where
    the window holds an N or runs past the end of its record."""
    out = []
    for seq in records:
        for i in range(len(seq)):
            window = seq[i : i + w]
            if len(window) < w or "N" in window:
                out.append(2**32 - 1)
            else:
                code = 0
                for base in window:
                    code = code * 4 + BASES.index(base)
                out.append(code)
    return out


def random_records(rng: np.random.Generator, n: int, max_len: int, n_rate: float = 0.05) -> list[str]:
    """Random ACGTN strings (some empty) for kernel tests."""
    out = []
    for _ in range(n):
        length = int(rng.integers(0, max_len + 1))
        letters = rng.choice(list("ACGT"), size=length)
        letters[rng.random(length) < n_rate] = "N"
        out.append("".join(letters))
    return out


# --------------------------------------------------------------------------- FM-index (issue 3)

#: The separator of the index text; it sorts before every base.
SEPARATOR = "$"
_RANK = {"$": 0, "A": 1, "C": 2, "G": 3, "T": 4}


def fm_text(records: list[str]) -> str:
    """The text an FM-index is built on: '$', then every maximal N-free run of
    every record followed by '$' (an N run or a record end is one '$')."""
    text = SEPARATOR
    for seq in records:
        for run in seq.split("N"):
            if run:
                text += run + SEPARATOR
    return text


def suffix_array(text: str) -> list[int]:
    """Start of every suffix of ``text`` in sorted order ($ < A < C < G < T;
    a suffix that is a prefix of another sorts first).

    Sorting by the first k characters gives the suffix order as soon as those
    prefixes are all different, so k doubles until they are.
    """
    data = bytes(_RANK[ch] for ch in text)
    k = 16
    while True:
        prefixes = [data[i : i + k] for i in range(len(data))]
        if len(set(prefixes)) == len(prefixes):
            return sorted(range(len(data)), key=lambda i: prefixes[i])
        k *= 2


def bwt(text: str, sa: list[int]) -> str:
    """Burrows-Wheeler transform: the character before each sorted suffix
    (the last character for the suffix at 0)."""
    return "".join(text[i - 1] for i in sa)


def occ_table(bwt_text: str) -> list[list[int]]:
    """occ[i][c]: occurrences of base 'ACGT'[c] in bwt_text[:i], i = 0..n."""
    occ = [[0, 0, 0, 0]]
    for ch in bwt_text:
        row = list(occ[-1])
        if ch in BASES:
            row[BASES.index(ch)] += 1
        occ.append(row)
    return occ


def c_array(text: str) -> list[int]:
    """C[c]: characters of the text smaller than base c, then len(text)."""
    return [sum(_RANK[ch] < _RANK[base] for ch in text) for base in BASES] + [len(text)]


def sa_interval(text: str, sa: list[int], pattern: str) -> tuple[int, int]:
    """Rows [lo, hi) whose suffix starts with ``pattern``; (0, 0) if none."""
    rows = [row for row, start in enumerate(sa) if text[start : start + len(pattern)] == pattern]
    return (rows[0], rows[-1] + 1) if rows else (0, 0)


def find_all(records: list[str], pattern: str) -> list[tuple[int, int]]:
    """Brute-force exact search: every (record, position) where ``pattern``
    occurs. N matches nothing, so a pattern holding N (or empty) has no hit."""
    if not pattern or "N" in pattern:
        return []
    hits = []
    for record, seq in enumerate(records):
        at = seq.find(pattern)
        while at != -1:
            hits.append((record, at))
            at = seq.find(pattern, at + 1)
    return hits

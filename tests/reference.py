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

"""Residue alphabets: byte -> code tables used by the parsers and kernels.

DNA codes are ``A=0, C=1, G=2, T=3`` and ``N=4`` for every ambiguous IUPAC
letter (R Y S W K M B D H V N). ``U`` reads as ``T``. Ambiguous bases are never
turned into a random base: code 4 is carried through packing as a separate
ambiguity mask, and every later comparison treats it as a mismatch.

Lowercase letters are accepted and reported as soft-mask runs by the parser.
Spaces, tabs and ``\\r`` inside sequence lines are skipped; any other byte is
an error naming the file and line.

>>> decode_dna(encode_dna("ACGTNacgtRy"))
'ACGTNACGTNN'
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "DNA_BASES",
    "DNA_N",
    "INVALID",
    "SKIP",
    "dna_table",
    "protein_table",
    "encode_dna",
    "decode_dna",
    "COMPLEMENT",
]

DNA_BASES = "ACGT"
#: Code of an ambiguous base (N and the other IUPAC ambiguity letters).
DNA_N = 4
#: Table value of a byte that is not allowed in a sequence line.
INVALID = 255
#: Table value of a byte that is skipped inside sequence lines (blank space).
SKIP = 254

_IUPAC_AMBIGUOUS = "RYSWKMBDHVN"
_PROTEIN_LETTERS = "ABCDEFGHIKLMNPQRSTVWXYZUO*"

#: Complement of each DNA code (N stays N).
COMPLEMENT = np.array([3, 2, 1, 0, 4], dtype=np.uint8)


def _blank_table() -> np.ndarray:
    table = np.full(256, INVALID, dtype=np.uint8)
    for ch in b" \t\r\v\f":
        table[ch] = SKIP
    return table


def dna_table() -> np.ndarray:
    """Return the 256-entry byte -> DNA code table (both cases)."""
    table = _blank_table()
    for code, base in enumerate(DNA_BASES):
        table[ord(base)] = table[ord(base.lower())] = code
    table[ord("U")] = table[ord("u")] = 3
    for base in _IUPAC_AMBIGUOUS:
        table[ord(base)] = table[ord(base.lower())] = DNA_N
    return table


def protein_table() -> np.ndarray:
    """Return the byte -> residue table for protein: uppercase ASCII letters."""
    table = _blank_table()
    for letter in _PROTEIN_LETTERS:
        table[ord(letter)] = table[ord(letter.lower())] = ord(letter)
    return table


_DNA = dna_table()
_DECODE = np.frombuffer(b"ACGTN", dtype=np.uint8)


def encode_dna(seq: str | bytes) -> np.ndarray:
    """Encode a DNA string into codes 0..4; raise ``ValueError`` on other letters."""
    raw = np.frombuffer(seq.encode() if isinstance(seq, str) else seq, dtype=np.uint8)
    codes = _DNA[raw]
    if (codes >= SKIP).any():
        bad = chr(raw[np.argmax(codes >= SKIP)])
        raise ValueError(f"invalid DNA letter {bad!r}")
    return codes


def decode_dna(codes: np.ndarray) -> str:
    """Decode codes 0..4 back into an ``ACGTN`` string."""
    return _DECODE[np.asarray(codes, dtype=np.uint8)].tobytes().decode()

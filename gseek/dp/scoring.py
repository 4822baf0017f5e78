"""Substitution scores and gap costs of the DP stages (:class:`Scoring`), and named presets.

>>> Scoring(**SCORING_PRESETS["megablast"]).gap_cost(2)
4
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gseek.errors import OptionError

__all__ = ["Scoring", "SCORING_PRESETS", "DNA_LETTERS"]

#: Residue letters of the DNA codes 0..4.
DNA_LETTERS = "ACGTN"


@dataclass(frozen=True)
class Scoring:
    """Substitution scores and gap costs.

    DNA (no ``matrix``): ``match`` / ``mismatch`` scores over A C G T; every
    ambiguous base (N and the IUPAC letters, read as N) scores ``n_score``
    against anything, itself included (default: ``mismatch``), and is never a
    match (``X`` in the CIGAR). ``matrix`` names a Biopython substitution
    matrix (``Bio.Align.substitution_matrices.load``), e.g. ``"BLOSUM62"``.
    Gap costs are non-negative: a gap of length k scores
    ``-(gap_open + k * gap_extend)``; ``gap_open=0`` is a linear gap.

    Arguments:
        match, mismatch: DNA scores of equal / different bases (``match`` > 0;
            both unused with a ``matrix``). Default 2 / -3 (blastn's).
        gap_open, gap_extend: gap costs, as above (default 5 and 2).
        matrix: a Biopython matrix name for protein (or other) scoring; None: DNA.
        n_score: DNA score of an ambiguous base (default: ``mismatch``).

    Invalid values raise :class:`~gseek.errors.OptionError`.

    >>> Scoring().gap_cost(3)
    11
    >>> Scoring(matrix="BLOSUM62", gap_open=11, gap_extend=1).score("W", "W")
    11
    """

    match: int = 2
    mismatch: int = -3
    gap_open: int = 5
    gap_extend: int = 2
    matrix: str | None = None
    n_score: int | None = None

    def __post_init__(self) -> None:
        for name in ("match", "mismatch", "gap_open", "gap_extend"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise OptionError(f"{name} must be an integer, not {value!r}")
        if self.n_score is not None and not isinstance(self.n_score, (int, np.integer)):
            raise OptionError(f"n_score must be an integer, not {self.n_score!r}")
        if self.gap_open < 0 or self.gap_extend < 0:
            raise OptionError(
                f"gap costs must be >= 0 (gap_open={self.gap_open}, gap_extend={self.gap_extend}); "
                "a gap of length k scores -(gap_open + k*gap_extend)")
        if self.gap_open + self.gap_extend == 0:
            raise OptionError("gap_open + gap_extend must be > 0 (free gaps make every alignment tie)")
        if self.matrix is None and self.match <= 0:
            raise OptionError(f"match must be > 0, not {self.match}")
        self._build()

    def _build(self) -> None:
        if self.matrix is None:
            alphabet = DNA_LETTERS
            n_score = self.mismatch if self.n_score is None else self.n_score
            table = np.full((5, 5), self.mismatch, dtype=np.int32)
            np.fill_diagonal(table, self.match)
            table[4, :] = table[:, 4] = n_score
            no_match = 4
            lookup = np.full(256, 255, dtype=np.uint8)
            for code, letter in enumerate("ACGT"):
                lookup[ord(letter)] = lookup[ord(letter.lower())] = code
            lookup[ord("U")] = lookup[ord("u")] = 3
            for letter in "RYSWKMBDHVN":
                lookup[ord(letter)] = lookup[ord(letter.lower())] = 4
        else:
            from Bio.Align import substitution_matrices

            try:
                matrix = substitution_matrices.load(self.matrix)
            except (FileNotFoundError, ValueError, OSError):
                names = ", ".join(substitution_matrices.load())
                raise OptionError(f"unknown substitution matrix {self.matrix!r} (Biopython has: {names})") from None
            values = np.asarray(matrix, dtype=np.float64)
            if not np.array_equal(values, np.round(values)):
                raise OptionError(f"matrix {self.matrix} has non-integer scores; gseek needs integer scores")
            alphabet = str(matrix.alphabet)
            table = values.astype(np.int32)
            no_match = -1
            lookup = np.full(256, 255, dtype=np.uint8)
            for code, letter in enumerate(alphabet):
                lookup[ord(letter)] = code
                if letter.isalpha():
                    lookup[ord(letter.lower())] = code
        object.__setattr__(self, "alphabet", alphabet)
        object.__setattr__(self, "table", np.ascontiguousarray(table))
        object.__setattr__(self, "no_match_code", no_match)
        object.__setattr__(self, "lookup", lookup)

    @property
    def is_dna(self) -> bool:
        return self.matrix is None

    def gap_cost(self, length: int) -> int:
        """Cost of one gap of ``length`` columns."""
        return self.gap_open + length * self.gap_extend if length > 0 else 0

    def score(self, a: str, b: str) -> int:
        """Score of residue ``a`` against residue ``b``."""
        return int(self.table[self.encode(a)[0], self.encode(b)[0]])

    def encode(self, seq: str | bytes, where: str = "sequence") -> np.ndarray:
        """Codes of ``seq`` in this scoring's alphabet; unknown residues raise."""
        raw = np.frombuffer(seq.encode("latin-1") if isinstance(seq, str) else bytes(seq), dtype=np.uint8)
        codes = self.lookup[raw]
        if (codes == 255).any():
            pos = int(np.argmax(codes == 255))
            raise OptionError(f"{where}: residue {chr(raw[pos])!r} at position {pos + 1} is not in the "
                              f"alphabet of {self._what()} ({self.alphabet})")
        return codes

    def _what(self) -> str:
        return f"matrix {self.matrix}" if self.matrix else "DNA scoring"

    def equal_residues(self, a: int, b: int) -> bool:
        return a == b and a != self.no_match_code


#: Named scoring schemes; overrides apply on top.
SCORING_PRESETS: dict[str, dict[str, Any]] = {
    "dna": {},  # match 2, mismatch -3, gap 5 + 2k: blastn's defaults
    "megablast": {"match": 1, "mismatch": -2, "gap_open": 2, "gap_extend": 1},
    "edit": {"match": 1, "mismatch": -1, "gap_open": 0, "gap_extend": 1},
    "blosum62": {"matrix": "BLOSUM62", "gap_open": 11, "gap_extend": 1},
    "blosum50": {"matrix": "BLOSUM50", "gap_open": 10, "gap_extend": 2},
}

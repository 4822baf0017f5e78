"""Alignment results: struct-of-arrays rows (:class:`AlignmentResults`), row views
(:class:`Alignment`, whose ``str()`` is the output line) and the output columns.

``Alignment.value`` is the slow, readable definition of every column's text;
the bulk formatter :class:`gseek.output.tabular.TsvFormatter` must equal it
byte for byte.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gseek import tables
from gseek.errors import OptionError
from gseek.output.cigar import CigarStrings

from .tables import alignment_columns, typed_value

__all__ = ["AlignmentResults", "Alignment", "parse_outfmt", "NEEDS_TRACEBACK", "OUTFMT6_DEFAULT",
           "OUTFMT6_KEYWORDS"]

_TSV_COLUMNS = ("qname", "tname", "score", "qstart", "qend", "tstart", "tend", "qlen", "tlen", "identity",
                "matches", "mismatches", "gapopens", "gaps", "cigar")
_SCORE_COLUMNS = ("qname", "tname", "score", "qend", "tend", "qlen", "tlen")
#: ``outfmt 6`` without column names: BLAST's first ten columns, then the raw score.
OUTFMT6_DEFAULT = ("qseqid", "sseqid", "pident", "length", "mismatch", "gapopen", "qstart", "qend", "sstart",
                   "send", "score")
OUTFMT6_KEYWORDS = ("qseqid", "sseqid", "pident", "nident", "length", "mismatch", "gapopen", "gaps", "qstart",
                    "qend", "sstart", "send", "qlen", "slen", "score", "cigar")


def parse_outfmt(outfmt: str | None, traceback: bool) -> tuple[str, ...]:
    """Columns for ``outfmt``: None (gseek TSV), ``"6"`` or ``"6 col col ..."``.

    >>> parse_outfmt("6 qseqid sseqid score", True)
    ('qseqid', 'sseqid', 'score')
    """
    if outfmt is None or str(outfmt).strip() in ("", "tsv"):
        return _TSV_COLUMNS if traceback else _SCORE_COLUMNS
    words = str(outfmt).split()
    if words[0] != "6":
        raise OptionError(f"outfmt must be 'tsv', '6' or '6 COLUMNS...', not {outfmt!r}")
    columns = tuple(words[1:]) or OUTFMT6_DEFAULT
    for col in columns:
        if col not in OUTFMT6_KEYWORDS:
            raise OptionError(f"unknown outfmt 6 column {col!r} (known: {' '.join(OUTFMT6_KEYWORDS)})")
    return columns


#: outfmt 6 columns that need the trace-back (asking for them turns it on).
NEEDS_TRACEBACK = {"pident", "nident", "length", "mismatch", "gapopen", "gaps", "qstart", "sstart", "cigar"}


@dataclass(frozen=True, eq=False)
class AlignmentResults:
    """Alignments of many pairs as struct-of-arrays; ``results[i]`` is a row view.

    ``query``/``target`` index ``query_names``/``target_names``; coordinates
    are 0-based half-open. Trace-back fields are None for score-only results.

    Arguments (the fields; results are made by :class:`~gseek.align.PairAligner`):
        query_names, target_names: the sequence names.
        query, target: per pair, the index of its query and target.
        score, q_end, t_end, q_len, t_len: score, alignment ends, lengths.
        q_start, t_start, matches, mismatches, gap_cols, gap_opens, cigars:
            the trace-back (None without it); ``cigars`` is a
            :class:`~gseek.output.cigar.CigarStrings`.
        columns: the output columns of ``str(results[i])`` and :meth:`header`.

    ``results[i]`` (and iteration) gives :class:`Alignment` views, whose
    ``str()`` is the output line (``_asdict()``: its columns by name); :meth:`lines`
    yields them all, :meth:`take` keeps some rows; :meth:`to_pandas` /
    :meth:`to_arrow` make the table of the output's columns.

    >>> from gseek import PairAligner
    >>> results = PairAligner(traceback=True, device="cpu").align_pairs(["ACGTACGT", "GATTACA"],
    ...                                                                  ["ACGACGT", "GATTTACA"])
    >>> results, results.score.tolist(), results.identity.tolist()
    (<AlignmentResults 2 pairs, trace-back>, [7, 7], [0.875, 0.875])
    >>> results[1], results[1].cigar
    (<Alignment q1 vs t1 score=7>, '2=1D5=')
    >>> print(results.header()); print("\\n".join(results.lines()))
    qname tname score qstart qend tstart tend qlen tlen identity matches mismatches gapopens gaps cigar
    q0    t0    7     0      8    0      7    8    7    0.8750   7       0          1        1    3=1I4=
    q1    t1    7     0      7    0      8    7    8    0.8750   7       0          1        1    2=1D5=
    >>> len(results.take(results.query == 0))
    1
    """

    query_names: Sequence[str]
    target_names: Sequence[str]
    query: np.ndarray
    target: np.ndarray
    score: np.ndarray
    q_end: np.ndarray
    t_end: np.ndarray
    q_len: np.ndarray
    t_len: np.ndarray
    q_start: np.ndarray | None = None
    t_start: np.ndarray | None = None
    matches: np.ndarray | None = None
    mismatches: np.ndarray | None = None
    gap_cols: np.ndarray | None = None
    gap_opens: np.ndarray | None = None
    cigars: CigarStrings | None = None
    columns: tuple[str, ...] = ()

    def __len__(self) -> int:
        return int(self.score.size)

    def __getitem__(self, i: int) -> Alignment:
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        return Alignment(self, i % len(self) if len(self) else i)

    def __iter__(self) -> Iterator[Alignment]:
        return (Alignment(self, i) for i in range(len(self)))

    def __repr__(self) -> str:
        kind = "trace-back" if self.traceback else "score-only"
        return f"<AlignmentResults {len(self)} pairs, {kind}>"

    @property
    def traceback(self) -> bool:
        return self.cigars is not None

    @property
    def identity(self) -> np.ndarray:
        """matches / alignment columns (0 for an empty alignment)."""
        length = self.alignment_length
        return np.where(length > 0, self.matches / np.maximum(length, 1), 0.0)

    @property
    def alignment_length(self) -> np.ndarray:
        return self.matches + self.mismatches + self.gap_cols

    def header(self) -> str:
        return "\t".join(self.columns)

    def lines(self) -> Iterator[str]:
        for i in range(len(self)):
            yield str(Alignment(self, i))

    def to_pandas(self) -> Any:
        """The rows as a :class:`pandas.DataFrame` with the output's columns and values
        (:attr:`columns`; :mod:`gseek.align.tables`). Needs pandas (the ``tables`` extra)."""
        return tables.to_pandas(alignment_columns(self), "AlignmentResults.to_pandas()")

    def to_arrow(self) -> Any:
        """:meth:`to_pandas`'s table as a :class:`pyarrow.Table` (needs pyarrow)."""
        return tables.to_arrow(alignment_columns(self), "AlignmentResults.to_arrow()")

    def take(self, keep: np.ndarray) -> AlignmentResults:
        """The rows where ``keep`` (bool mask or indices)."""
        idx = np.flatnonzero(keep) if np.asarray(keep).dtype == bool else np.asarray(keep)
        fields = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray):
                value = value[idx]
            elif f.name == "cigars" and value is not None:
                value = value.take(idx)
            fields[f.name] = value
        return AlignmentResults(**fields)


class Alignment:
    """One row of :class:`AlignmentResults`; ``str()`` is its output line."""

    __slots__ = ("_r", "_i")

    def __init__(self, results: AlignmentResults, i: int) -> None:
        self._r, self._i = results, i

    def _get(self, name):
        value = getattr(self._r, name)
        return None if value is None else value[self._i]

    query_name = property(lambda self: self._r.query_names[int(self._r.query[self._i])])
    target_name = property(lambda self: self._r.target_names[int(self._r.target[self._i])])
    score = property(lambda self: int(self._r.score[self._i]))
    q_start = property(lambda self: None if self._r.q_start is None else int(self._r.q_start[self._i]))
    q_end = property(lambda self: int(self._r.q_end[self._i]))
    t_start = property(lambda self: None if self._r.t_start is None else int(self._r.t_start[self._i]))
    t_end = property(lambda self: int(self._r.t_end[self._i]))
    cigar = property(lambda self: self._get("cigars"))

    @property
    def identity(self) -> float | None:
        if self._r.matches is None:
            return None
        length = self.length
        return int(self._r.matches[self._i]) / length if length else 0.0

    @property
    def length(self) -> int:
        r, i = self._r, self._i
        return int(r.matches[i] + r.mismatches[i] + r.gap_cols[i])

    def value(self, column: str) -> str:
        """Text of one output column."""
        r, i = self._r, self._i
        if column in ("qname", "qseqid"):
            return self.query_name
        if column in ("tname", "sseqid"):
            return self.target_name
        if column == "score":
            return str(self.score)
        one_based = "qseqid" in r.columns or "sseqid" in r.columns
        if column == "qstart":
            return str(self.q_start + 1 if one_based and self.length else self.q_start)
        if column == "qend":
            return str(self.q_end)
        if column == "tstart":
            return str(self.t_start)
        if column == "sstart":
            return str(self.t_start + 1 if self.length else self.t_start)
        if column in ("tend", "send"):
            return str(self.t_end)
        if column in ("qlen",):
            return str(int(r.q_len[i]))
        if column in ("tlen", "slen"):
            return str(int(r.t_len[i]))
        if column == "identity":
            return f"{self.identity:.4f}"
        if column == "pident":
            return f"{100.0 * self.identity:.3f}"
        if column in ("matches", "nident"):
            return str(int(r.matches[i]))
        if column in ("mismatches", "mismatch"):
            return str(int(r.mismatches[i]))
        if column in ("gapopens", "gapopen"):
            return str(int(r.gap_opens[i]))
        if column == "gaps":
            return str(int(r.gap_cols[i]))
        if column == "length":
            return str(self.length)
        if column == "cigar":
            return self.cigar or "*"
        raise OptionError(f"unknown column {column!r}")

    def _asdict(self) -> dict[str, Any]:
        """The row's output columns and values (as :meth:`AlignmentResults.to_pandas`'s row).

        >>> from gseek import PairAligner
        >>> PairAligner(device="cpu").align("ACGT", "ACGA")._asdict()
        {'qname': 'q0', 'tname': 't0', 'score': 3, 'qend': 4, 'tend': 4, 'qlen': 4, 'tlen': 4}
        """
        return {c: typed_value(c, self.value(c)) for c in self._r.columns}

    def __str__(self) -> str:
        return "\t".join(self.value(c) for c in self._r.columns)

    def __repr__(self) -> str:
        return f"<Alignment {self.query_name} vs {self.target_name} score={self.score}>"

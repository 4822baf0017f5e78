""":class:`~gseek.align.AlignmentResults` as a table: the output's columns, one row a pair.

:func:`alignment_columns` gives the columns of ``gseek align``'s output for
the same results (``results.columns``: the TSV's ``qname tname score ...`` or
the ``outfmt 6`` keywords asked for), with the values
:meth:`Alignment.value <gseek.align.Alignment.value>` prints, read back as a
reader of the text would: names as strings, numbers as integers (``qstart``
and ``sstart`` 1-based where the text has them so), ``identity`` and
``pident`` as the floats their printed text parses to (``0.875``), ``cigar``
``*`` when empty.

>>> from gseek import PairAligner
>>> results = PairAligner(traceback=True, device="cpu").align_pairs(["ACGTACGT", "GATTACA"], ["ACGACGT", "GATTTACA"])
>>> columns = alignment_columns(results)
>>> list(columns)
['qname', 'tname', 'score', 'qstart', 'qend', 'tstart', 'tend', 'qlen', 'tlen', 'identity', 'matches', 'mismatches', 'gapopens', 'gaps', 'cigar']
>>> columns["qname"].tolist(), columns["identity"].tolist(), columns["cigar"].tolist()
(['q0', 'q1'], [0.875, 0.875], ['3=1I4=', '2=1D5='])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gseek.errors import OptionError

__all__ = ["alignment_columns", "typed_value"]

#: Column -> the results' integer field it prints (``length``: matches + mismatches + gap columns).
_INTEGERS = {"score": "score", "qend": "q_end", "tstart": "t_start", "tend": "t_end", "send": "t_end",
             "qlen": "q_len", "tlen": "t_len", "slen": "t_len", "matches": "matches", "nident": "matches",
             "mismatches": "mismatches", "mismatch": "mismatches", "gapopens": "gap_opens", "gapopen": "gap_opens",
             "gaps": "gap_cols"}


def _rounded(values: np.ndarray, digits: int) -> np.ndarray:
    """What ``f"{x:.{digits}f}"`` reads back as (the printed decimal, not the double)."""
    return np.array([float(f"{x:.{digits}f}") for x in values.tolist()], dtype=np.float64)


def alignment_columns(results: Any) -> dict[str, np.ndarray]:
    """The output columns of ``results`` (column -> numpy array), one row a pair."""
    r = results
    n = len(r)
    columns: dict[str, np.ndarray] = {}
    length = identity = None
    if r.traceback:
        length = np.asarray(r.alignment_length, np.int64)
        identity = np.where(length > 0, np.asarray(r.matches) / np.maximum(length, 1), 0.0)
    one_based = "qseqid" in r.columns or "sseqid" in r.columns
    for column in r.columns:
        value: Any
        if column in ("qname", "qseqid", "tname", "sseqid"):
            query = column in ("qname", "qseqid")
            names = np.array(list(r.query_names if query else r.target_names), dtype=object)
            value = names[np.asarray(r.query if query else r.target, np.int64)] if n else np.zeros(0, object)
        elif column in _INTEGERS or column in ("qstart", "sstart", "length", "identity", "pident", "cigar"):
            needs = _INTEGERS.get(column, column)
            if needs not in ("score", "q_end", "t_end", "q_len", "t_len") and not r.traceback:
                raise OptionError(f"column {column!r} needs the trace-back; these results are score-only")
            if column == "qstart":
                value = np.asarray(r.q_start, np.int64) + ((length > 0) if one_based else 0)
            elif column == "sstart":
                value = np.asarray(r.t_start, np.int64) + (length > 0)
            elif column == "length":
                value = length
            elif column == "identity":
                value = _rounded(identity, 4)
            elif column == "pident":
                value = _rounded(100.0 * identity, 3)
            elif column == "cigar":
                value = np.array([c or "*" for c in r.cigars], dtype=object)
            else:
                value = np.asarray(getattr(r, needs), np.int64)
        else:
            raise OptionError(f"unknown column {column!r}")
        columns[column] = np.asarray(value)
    return columns


def typed_value(column: str, text: str) -> str | int | float:
    """One printed value of ``column`` as :func:`alignment_columns` types it.

    >>> typed_value("pident", "87.500"), typed_value("qstart", "1"), typed_value("cigar", "*")
    (87.5, 1, '*')
    """
    if column in ("identity", "pident"):
        return float(text)
    if column in _INTEGERS or column in ("qstart", "sstart", "length"):
        return int(text)
    return text

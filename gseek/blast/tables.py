""":class:`~gseek.blast.searcher.BlastHits` as a table or as records: the ``-outfmt 6`` columns.

One row an HSP, in the report's order; the columns are BLAST+'s field keywords
(default ``std``: ``qaccver saccver pident length mismatch gapopen qstart qend
sstart send evalue bitscore``; any of :data:`gseek.blast.report.FIELDS`) and
the values are the ``-outfmt 6`` text's (:func:`gseek.blast.report.tabular_lines`),
read back as a reader of that text would: names as strings, counts and
coordinates as integers (1-based, ``sstart > send`` on the minus strand),
``pident``, ``evalue`` and ``bitscore`` as the floats their printed text
parses to (``1e-50``, not the unrounded e-value). :func:`hsp_columns` gives
the columns (for :func:`gseek.tables.to_pandas` / ``to_arrow``),
:func:`hsp_records` the rows as namedtuples (``_asdict()``), :func:`to_pandas` and
:func:`to_arrow` the tables (``BlastHits.to_pandas()`` / ``to_arrow()`` / ``iter()``).

>>> from gseek import BlastSearcher, Index
>>> from gseek.datasets import lambda_genome
>>> from gseek.seqio import read_fastx
>>> ref = read_fastx(lambda_genome()).sequence(0)
>>> searcher = BlastSearcher(Index.build(lambda_genome(), parts="text", device="cpu"), device="cpu")
>>> hits = searcher.search([("q1", ref[1000:1500])])
>>> columns = hsp_columns(hits)
>>> columns["qaccver"].tolist(), columns["pident"].tolist(), columns["sstart"].tolist(), columns["evalue"].tolist()
(['q1'], [100.0], [1001], [0.0])
>>> record, = hsp_records(hits, "qaccver sstart send bitscore")
>>> record
Hsp(qaccver='q1', sstart=1001, send=1500, bitscore=924.0)
>>> record._asdict()["send"]
1500
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from gseek import tables

from .report import STD, parse_fields, tabular_lines

__all__ = ["INT_FIELDS", "FLOAT_FIELDS", "hsp_fields", "hsp_columns", "hsp_records", "to_pandas", "to_arrow"]

#: Keywords printed as integers.
INT_FIELDS = frozenset({"length", "mismatch", "gapopen", "qstart", "qend", "sstart", "send", "nident", "gaps",
                        "score", "positive", "qlen", "slen", "qcovhsp"})
#: Keywords printed as decimals (read back as floats).
FLOAT_FIELDS = frozenset({"pident", "ppos", "evalue", "bitscore"})


def hsp_fields(fields: str | Iterable[str] | None = None) -> tuple[str, ...]:
    """The keywords of ``fields``: None (``std``), a list, or a string of them
    (``"qseqid sseqid evalue"``, also with ``-outfmt``'s leading ``6``), checked."""
    if fields is None:
        return tuple(STD)
    words = fields.split() if isinstance(fields, str) else [str(f) for f in fields]
    if words and words[0] in ("6", "7"):
        words = words[1:]
    return tuple(parse_fields(" ".join(["6", *words])))


def hsp_columns(hits: Any, fields: str | Iterable[str] | None = None) -> dict[str, np.ndarray]:
    """The ``-outfmt 6`` columns of every HSP of ``hits`` (keyword -> numpy array)."""
    names = hsp_fields(fields)
    rows = [line.split("\t") for line in tabular_lines(hits, names)] if len(hits) else []
    texts = list(zip(*rows)) if rows else [()] * len(names)
    columns: dict[str, np.ndarray] = {}
    for name, text in zip(names, texts):
        if name in INT_FIELDS:
            columns[name] = np.array([int(t) for t in text], dtype=np.int64)
        elif name in FLOAT_FIELDS:
            columns[name] = np.array([float(t) for t in text], dtype=np.float64)
        else:
            columns[name] = np.array(text, dtype=object)
    return columns


@functools.lru_cache(maxsize=64)
def _record_type(names: tuple[str, ...]) -> type:
    return collections.namedtuple("Hsp", names)


def hsp_records(hits: Any, fields: str | Iterable[str] | None = None) -> Iterator[tuple]:
    """Every HSP of ``hits`` as an ``Hsp`` namedtuple of :func:`hsp_columns`' values
    (Python ``str``, ``int``, ``float``), in the report's order."""
    columns = hsp_columns(hits, fields)
    record = _record_type(tuple(columns))
    return (record(*row) for row in zip(*(c.tolist() for c in columns.values())))


def to_pandas(hits: Any, fields: str | Iterable[str] | None = None) -> Any:
    """``hits.to_pandas(fields)``: a :class:`pandas.DataFrame` of :func:`hsp_columns` (needs
    pandas, the ``tables`` extra), a row an HSP, the ``-outfmt 6`` keywords as column names."""
    return tables.to_pandas(hsp_columns(hits, fields), "BlastHits.to_pandas()")


def to_arrow(hits: Any, fields: str | Iterable[str] | None = None) -> Any:
    """``hits.to_arrow(fields)``: :func:`to_pandas`'s table as a :class:`pyarrow.Table` (needs pyarrow)."""
    return tables.to_arrow(hsp_columns(hits, fields), "BlastHits.to_arrow()")

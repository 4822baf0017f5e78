"""Results as tables: the columns of a result's text output to pandas or Arrow (both optional).

The results (:class:`~gseek.MappingResult`, :class:`~gseek.BlastHits`,
:class:`~gseek.AlignmentResults`) each make an ordered dict of columns -- one
row per hit, the text output's column names and values (SAM's fields, BLAST+'s
``-outfmt 6`` keywords, the align TSV's columns), names as strings, numbers
as typed values that read back from the text as they are here -- and hand it
to :func:`to_pandas` or :func:`to_arrow`. pandas and pyarrow are the
``tables`` extra (``pip install 'gseek[tables]'``); without them these raise
an :class:`ImportError` saying so.

>>> import numpy as np
>>> columns = {"qseqid": np.array(["q1", "q2"], dtype=object), "score": np.array([7, 9])}
>>> to_pandas(columns)
  qseqid  score
0     q1      7
1     q2      9
>>> to_arrow(columns).column_names
['qseqid', 'score']
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

__all__ = ["require", "to_pandas", "to_arrow"]

#: Module -> the pip requirement that provides it.
_PACKAGES = {"pandas": "pandas>=2", "pyarrow": "pyarrow>=14"}


def require(module: str, what: str = "this") -> Any:
    """Import the optional ``module`` (``pandas`` or ``pyarrow``), or raise an
    :class:`ImportError` naming it and the extra that installs it.

    >>> require("pandas").__name__
    'pandas'
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{what} needs {module} ({_PACKAGES.get(module, module)}), an optional dependency of "
                          f"gseek: pip install 'gseek[tables]' (or pip install {module})") from exc


def to_pandas(columns: Mapping[str, Any], what: str = "to_pandas()", types: Mapping[str, str] | None = None) -> Any:
    """A :class:`pandas.DataFrame` of ``columns`` (name -> numpy array, all of one length), in order.

    ``types``: the type (``"int64"`` or ``"string"``) of a column that may hold
    None (an optional SAM tag): such an integer column becomes pandas' nullable
    ``Int64``, whatever values it holds (all None too).
    """
    pd = require("pandas", what)
    types = types or {}
    return pd.DataFrame({name: _nullable(pd, values, types.get(name)) for name, values in columns.items()},
                        columns=list(columns))


def _nullable(pd: Any, values: Any, kind: str | None) -> Any:
    if getattr(values, "dtype", None) != object or kind != "int64":
        return values
    return pd.array(list(values), dtype="Int64")


def to_arrow(columns: Mapping[str, Any], what: str = "to_arrow()", types: Mapping[str, str] | None = None) -> Any:
    """A :class:`pyarrow.Table` of ``columns``; a missing value (None) is null.

    Numbers keep their numpy type, an object column is ``types[name]``
    (``"int64"`` or ``"string"``; not named there: ``string``), so that a table's
    schema does not depend on its values (an optional tag that no row holds).
    """
    pa = require("pyarrow", what)
    types = types or {}
    arrays = []
    for name, values in columns.items():
        if getattr(values, "dtype", None) is not None and values.dtype != object:
            arrays.append(pa.array(values))
        else:
            kind = pa.int64() if types.get(name) == "int64" else pa.string()
            arrays.append(pa.array(list(values), type=kind, from_pandas=True))
    return pa.table(arrays, names=list(columns))

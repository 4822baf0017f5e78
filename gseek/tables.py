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


def to_pandas(columns: Mapping[str, Any], what: str = "to_pandas()") -> Any:
    """A :class:`pandas.DataFrame` of ``columns`` (name -> numpy array, all of one length), in order;
    an optional integer (an object column of integers and None) becomes pandas' nullable ``Int64``."""
    pd = require("pandas", what)
    return pd.DataFrame({name: _nullable(pd, values) for name, values in columns.items()}, columns=list(columns))


def _nullable(pd: Any, values: Any) -> Any:
    """An object column of integers and None (an optional SAM tag) as pandas' ``Int64``."""
    if getattr(values, "dtype", None) != object:
        return values
    present = [v for v in values if v is not None]
    if present and all(type(v) is int for v in present):
        return pd.array(list(values), dtype="Int64")
    return values


def to_arrow(columns: Mapping[str, Any], what: str = "to_arrow()") -> Any:
    """A :class:`pyarrow.Table` of ``columns``; a missing value (None) is null.

    Strings become Arrow ``string`` columns, numbers keep their numpy type
    (an object column of integers and None, as an optional SAM tag, becomes
    ``int64`` with nulls; an empty one, ``string``).
    """
    pa = require("pyarrow", what)
    arrays = []
    for values in columns.values():
        if getattr(values, "dtype", None) is not None and values.dtype != object:
            arrays.append(pa.array(values))
        else:
            values = list(values)  # strings, or optional values (None: null); none at all: strings
            arrays.append(pa.array(values, type=None if values else pa.string(), from_pandas=True))
    return pa.table(arrays, names=list(columns))

"""Names of a package loaded with their module on first use (PEP 562): ``import gseek`` loads no Numba,
and a BLAST command loads no mapper (``gseek.pipeline``)."""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy_names(package: str, table: dict[str, str], namespace: dict[str, object]) -> Callable[[str], object]:
    """The ``__getattr__`` of ``package``: a name of ``table`` (name -> the module defining it) is imported
    on first use and kept in ``namespace`` (the package's globals); any other raises ``AttributeError``."""

    def __getattr__(name: str) -> object:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__

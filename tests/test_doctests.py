"""Run the docstring examples of every gseek module, so they cannot rot."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import gseek


def _modules():
    names = ["gseek"]
    for info in pkgutil.walk_packages(gseek.__path__, "gseek."):
        if info.name.endswith("__main__"):
            continue
        names.append(info.name)
    for sub in ("gseek.index", "gseek.kernels", "gseek.pipeline", "gseek.datasets"):
        package = importlib.import_module(sub)
        names.append(sub)
        names += [i.name for i in pkgutil.walk_packages(package.__path__, sub + ".") if not i.name.endswith("__main__")]
    return sorted(set(names))


@pytest.mark.parametrize("name", _modules())
def test_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"

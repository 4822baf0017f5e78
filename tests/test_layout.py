"""The package's shape: imports run one way (kernels -> stages -> output -> pipeline -> CLI), no
import cycle, and the public API answers from ``import gseek`` (docs/architecture.md, "Layers").

The import graph is read from the source (every ``import`` statement, those inside functions
too; only ``if TYPE_CHECKING:`` blocks are left out), so a lazy import cannot hide a cycle.
"""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Source folder -> package (pyproject.toml's package-dir).
PACKAGES = {"gseek": "gseek", "index": "gseek.index", "kernels": "gseek.kernels", "pipeline": "gseek.pipeline",
            "datasets": "gseek.datasets"}
#: Layer of each module (the longest matching prefix); a module imports its own layer or lower ones.
LAYERS = {
    "gseek": 0, "gseek.errors": 0, "gseek.alphabet": 0, "gseek.ragged": 0,
    "gseek.kernels": 1, "gseek.backend": 1, "gseek.gpu_start": 1,
    "gseek.seqio": 2, "gseek.encode": 2, "gseek.index": 2, "gseek.dp": 2, "gseek.mapper": 2, "gseek.blast": 2,
    "gseek.output": 3,
    "gseek.align": 4,
    "gseek.pipeline": 5,
    "gseek.datasets": 6, "gseek.demo": 6, "gseek.precompile": 6, "gseek.release": 6, "gseek.cli": 6,
    "gseek.__main__": 6, "gseek.serve": 6,
}
LAYER_NAMES = ["base", "kernels/backend", "stages", "output", "aligner", "pipeline", "front doors"]


def _modules() -> dict[str, Path]:
    found = {}
    for folder, package in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(name: str, path: Path) -> set[str]:
    """The gseek modules ``name`` imports anywhere in its source (not under TYPE_CHECKING)."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.Import):
                out.update(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (child.level - 1)]
                    module = ".".join(base + ([child.module] if child.module else []))
                else:
                    module = child.module or ""
                for alias in child.names:
                    sub = f"{module}.{alias.name}"
                    out.add(sub if sub in MODULES else module)
            visit(child)

    visit(ast.parse(path.read_text()))
    return {m for m in out if m in MODULES and m != name}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _layer(module: str) -> int:
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS[best]


def test_every_module_has_a_layer():
    for module in MODULES:
        assert _layer(module) is not None, module


def test_imports_run_one_way():
    upward = [f"{m} ({LAYER_NAMES[_layer(m)]}) imports {d} ({LAYER_NAMES[_layer(d)]})"
              for m, deps in GRAPH.items() for d in sorted(deps) if _layer(d) > _layer(m)]
    assert not upward, "\n".join(upward)


def test_no_import_cycle():
    # Tarjan's strongly connected components; any component of more than one module is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in GRAPH:
        if v not in index:
            strong(v)
    assert not cycles, cycles


def test_the_checker_sees_a_cycle_and_an_upward_import(tmp_path, monkeypatch):
    """The walk above finds what it must find: an upward import inside a function."""
    fake = tmp_path / "fake.py"
    fake.write_text("def f():\n    from gseek.pipeline import run_pipeline\n")
    assert "gseek.pipeline" in _imports("gseek.ragged", fake)
    guarded = tmp_path / "guarded.py"
    guarded.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import gseek.cli\n")
    assert _imports("gseek.ragged", guarded) == set()


PUBLIC = ["Index", "Mapper", "MappingResult", "PairAligner", "Scoring", "FastxReader", "read_fastx", "map_files",
          "map_reads", "align_files", "run_pipeline", "get_backend", "GseekError", "OptionError", "FastxError"]


@pytest.mark.parametrize("name", PUBLIC)
def test_public_api_from_import_gseek(name):
    import gseek

    value = getattr(gseek, name)
    assert name in dir(gseek) and name in gseek.__all__
    doc = inspect.getdoc(value) or ""
    assert doc.strip(), f"gseek.{name} has no docstring"


def test_import_gseek_loads_neither_numba_nor_cupy():
    code = "import sys, gseek; print(sorted(m for m in ('numba', 'cupy', 'numpy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_package_is_installed():
    """pyproject.toml lists every package folder: a wheel (not only an editable
    install) holds each sub-package."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    packages = {name for name, path in MODULES.items() if path.name == "__init__.py"}
    assert packages == listed, f"missing: {sorted(packages - listed)}, extra: {sorted(listed - packages)}"


def test_no_module_is_a_room_to_split():
    """No module of the package (gseek/, index/, pipeline/, datasets/) is over 600 lines (kernels/ holds
    the kernel families and their twins, one file a family)."""
    big = {name: n for name, path in MODULES.items() if not name.startswith("gseek.kernels")
           and (n := len(path.read_text().splitlines())) > 600}
    assert big == {}


def test_command_modules_import_public_names_only():
    """The CLI's command modules import no private gseek module or name (build status is
    gseek.precompile.status())."""
    private = []
    for name, path in MODULES.items():
        if not name.startswith("gseek.cli"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                parts = (node.module or "").split(".") + [a.name for a in node.names]
                if any(p.startswith("_") and not p.startswith("__") for p in parts):
                    private.append(f"{name}: from {'.' * node.level}{node.module} import "
                                   f"{', '.join(a.name for a in node.names)}")
            elif isinstance(node, ast.Import):
                private += [f"{name}: import {a.name}" for a in node.names
                            if any(p.startswith("_") for p in a.name.split("."))]
    assert private == []


def test_the_command_line_starts_without_numba():
    """``import gseek.cli`` (every command's start, and ``gseek search --server``'s whole client) loads
    neither NumPy, Numba nor a stage package: each command imports what it runs."""
    code = ("import sys, gseek.cli; print(sorted(m for m in ('numpy', 'numba', 'cupy', 'gseek.blast', 'gseek.mapper',"
            " 'gseek.index', 'gseek.pipeline', 'starlette') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out

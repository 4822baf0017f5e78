"""The prebuilt machine code (``gseek.kernels._jit``, ``gseek.precompile.build_prebuilt``).

A small package of three modules is compiled for the generic CPU in one process, collected and
written as a prebuilt folder, then used by fresh processes with empty Numba caches: loaded without
a compile while its modules are unchanged, compiled again (with the new result) once a module it
imports changes, even one Numba's own cache does not watch.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from gseek.kernels import _jit
from gseek.precompile import collect_prebuilt, write_prebuilt

PACKAGE = {
    "__init__.py": "",
    "consts.py": "SCALE = 3\n",
    "helper.py": """
        from gseek.kernels._jit import njit
        from jitpkg.consts import SCALE


        @njit(cache=True, inline="always")
        def scaled(x):
            return x * SCALE
        """,
    "main.py": """
        from gseek.kernels._jit import njit
        from jitpkg.helper import scaled


        @njit(cache=True)
        def total(values):
            s = 0
            for v in values:
                s += scaled(v)
            return s
        """,
}

#: Calls total(0..3) in a fresh process; prints its value and how many functions Numba compiled.
PROBE = """
import numpy as np
from numba.core import event

compiled = []


class Compiles(event.Listener):
    def on_start(self, ev):
        pass

    def on_end(self, ev):
        compiled.append(ev)


event.register("numba:compile", Compiles())
from jitpkg.main import total

print(total(np.arange(4, dtype=np.int64)), len(compiled))
"""


def _run(src, cache, **env):
    """total(0..3) and the number of compiles, in a fresh process with Numba cache ``cache``."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "GSEEK_PREBUILT"))}
    full.update(PYTHONPATH=str(src), NUMBA_CACHE_DIR=str(cache), **env)
    out = subprocess.run([sys.executable, "-c", PROBE], env=full, capture_output=True, text=True, check=True)
    value, compiles = out.stdout.split()
    return int(value), int(compiles)


@pytest.fixture
def package(tmp_path, monkeypatch):
    src = tmp_path / "src"
    (src / "jitpkg").mkdir(parents=True)
    for name, text in PACKAGE.items():
        (src / "jitpkg" / name).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(src))
    _jit.module_digest.cache_clear()
    yield src
    _jit.module_digest.cache_clear()
    for name in [m for m in sys.modules if m == "jitpkg" or m.startswith("jitpkg.")]:
        del sys.modules[name]


def test_prebuilt_code_is_used_only_while_every_module_it_was_built_from_is_unchanged(package, tmp_path):
    built = _run(package, tmp_path / "c0", NUMBA_CPU_NAME=_jit.PREBUILT_CPU, GSEEK_PREBUILT="0")
    assert built[0] == 18 and built[1] >= 1
    entries = collect_prebuilt(tmp_path / "c0", packages=("jitpkg",))
    assert sorted(entries) == ["jitpkg.main"]  # scaled is inlined, never compiled by itself
    assert any(name.endswith(".nbi") for name in entries["jitpkg.main"])
    folder = tmp_path / "prebuilt"  # its sets: this Python's and Numba's only
    here = folder / _jit.prebuilt_set()
    assert write_prebuilt(entries, here, packages=("jitpkg",)) == {"jitpkg.main": "written"}
    manifest = json.loads((here / "manifest.json").read_text())
    assert manifest["cpu"] == "generic" and sorted(manifest["modules"]["jitpkg.main"]["imports"]) == [
        "jitpkg", "jitpkg.consts", "jitpkg.helper", "jitpkg.main"]  # the package's __init__ runs first
    assert sorted(manifest["modules"]["jitpkg.main"]["files"]) == sorted(entries["jitpkg.main"])
    assert write_prebuilt(entries, here, packages=("jitpkg",)) == {"jitpkg.main": "kept"}

    # A fresh process with an empty cache runs the prebuilt code, compiling nothing.
    assert _run(package, tmp_path / "c1", GSEEK_PREBUILT=str(folder)) == (18, 0)
    # Turned off, or with the folder's manifest of another Numba (or llvmlite, or NumPy): compiled.
    assert _run(package, tmp_path / "c2", GSEEK_PREBUILT="0") == (18, 1)
    for version in ({"numba": "0.0.1"}, {"llvmlite": "0.0.1"}, {"numpy": "1.26"}):
        other = tmp_path / f"other-{next(iter(version))}"
        (other / here.name).mkdir(parents=True)
        (other / here.name / "manifest.json").write_text(json.dumps(dict(manifest, **version)))
        (other / here.name / "jitpkg.main").symlink_to(here / "jitpkg.main")
        assert _run(package, tmp_path / f"c3-{other.name}", GSEEK_PREBUILT=str(other)) == (18, 1), version
    # The set of another Python or Numba (named so) is not read, whatever its manifest says.
    renamed = tmp_path / "renamed"
    shutil.copytree(folder, renamed)
    (renamed / here.name).rename(renamed / "py3.0-numba0.0.1")
    assert _run(package, tmp_path / "c6", GSEEK_PREBUILT=str(renamed)) == (18, 1)
    # A damaged data file (same size, one byte changed) is not read: compiled, right.
    damaged = tmp_path / "damaged"
    shutil.copytree(folder, damaged)
    data = next(damaged.glob("*/jitpkg.main/*.nbc"))
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    data.write_bytes(bytes(raw))
    assert _run(package, tmp_path / "c5", GSEEK_PREBUILT=str(damaged)) == (18, 1)

    # A constant two imports away changes: neither main.py nor helper.py did, so Numba's own
    # checks pass; the manifest's closure does not, and the new value is compiled.
    (package / "jitpkg" / "consts.py").write_text("SCALE = 5\n")
    assert _run(package, tmp_path / "c4", GSEEK_PREBUILT=str(folder)) == (30, 1)


def test_a_build_that_lost_modules_or_compiled_nothing_is_refused(package, tmp_path):
    """A module of the old manifest without entries now (a link in the path, a workload gone) is not
    dropped silently; nothing at all is an error; cache files of no module are an error. Built
    through a symbolic link, the files are still found (named as Numba names them: the link kept)."""
    link = tmp_path / "link"
    link.symlink_to(package)
    sys.path.insert(0, str(link))  # found first: jitpkg's files are seen through the link, as the build saw them
    try:
        _run(link, tmp_path / "c0", NUMBA_CPU_NAME=_jit.PREBUILT_CPU, GSEEK_PREBUILT="0")
        entries = collect_prebuilt(tmp_path / "c0", packages=("jitpkg",))
    finally:
        sys.path.remove(str(link))
    assert sorted(entries) == ["jitpkg.main"]
    folder = tmp_path / "prebuilt" / _jit.prebuilt_set()
    write_prebuilt(entries, folder, packages=("jitpkg",))
    with pytest.raises(ValueError, match="compiled"):
        write_prebuilt({}, folder, packages=("jitpkg",))
    with pytest.raises(ValueError, match="jitpkg.main"):
        write_prebuilt({"jitpkg.helper": entries["jitpkg.main"]}, folder, packages=("jitpkg",))
    assert (folder / "jitpkg.main").is_dir()
    with pytest.raises(ValueError, match="no module of"):
        collect_prebuilt(tmp_path / "c0", packages=("gseek",))


def test_each_shipped_set_names_a_folder_of_entries_for_each_module():
    """Every set (this Python's and Numba's among them) is whole: its manifest's modules are its folders,
    each holding the files the manifest lists, every index with its data; its name says its versions."""
    sets = sorted(p for p in _jit.PREBUILT.iterdir() if p.is_dir())
    assert sets  # (this Python's and Numba's may be missing: a newer Numba compiles; the status line says so)
    for folder in sets:
        manifest = json.loads((folder / "manifest.json").read_text())
        assert manifest["format"] == 2 and manifest["cpu"] == _jit.PREBUILT_CPU and manifest["modules"], folder
        assert folder.name == f"py{manifest['python']}-numba{manifest['numba']}"
        for module, entry in manifest["modules"].items():
            names = sorted(p.name for p in (folder / module).iterdir())
            assert module in entry["imports"] and sorted(entry["files"]) == names, (folder.name, module)
            tag = "py" + manifest["python"].replace(".", "")
            for index in (n for n in names if n.endswith(".nbi")):
                assert f".{tag}." in index, (folder.name, index)  # Numba's own name of the Python
                assert any(n.startswith(index[: -len("nbi")]) and n.endswith(".nbc") for n in names), (module, index)
        assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == sorted(manifest["modules"])


def test_the_status_names_the_set_read_and_the_stale_modules_of_others(package, tmp_path, monkeypatch):
    """A change to a module shows in every set built before it (their Pythons need not be this one)."""
    _run(package, tmp_path / "c0", NUMBA_CPU_NAME=_jit.PREBUILT_CPU, GSEEK_PREBUILT="0")
    entries = collect_prebuilt(tmp_path / "c0", packages=("jitpkg",))
    folder = tmp_path / "prebuilt"
    write_prebuilt(entries, folder / _jit.prebuilt_set(), packages=("jitpkg",))
    shutil.copytree(folder / _jit.prebuilt_set(), folder / "py3.0-numba0.0.1")
    monkeypatch.setenv("GSEEK_PREBUILT", str(folder))
    for cached in (_jit._manifest, _jit._current_folder, _jit.module_digest):
        cached.cache_clear()
    try:
        assert _jit.prebuilt_sets() == {"py3.0-numba0.0.1": [], _jit.prebuilt_set(): []}
        assert _jit.prebuilt_status().endswith("; other sets: py3.0-numba0.0.1")
        (package / "jitpkg" / "consts.py").write_text("SCALE = 5\n")
        _jit.module_digest.cache_clear()
        assert _jit.prebuilt_sets() == {"py3.0-numba0.0.1": ["jitpkg.main"], _jit.prebuilt_set(): ["jitpkg.main"]}
        assert _jit.prebuilt_status().endswith("; stale in other sets: py3.0-numba0.0.1 (1 modules)")
    finally:
        monkeypatch.delenv("GSEEK_PREBUILT")
        for cached in (_jit._manifest, _jit._current_folder, _jit.module_digest):
            cached.cache_clear()

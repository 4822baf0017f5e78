"""What a release ships (issue 37): the Numba each supported Python is pinned to has its prebuilt set,
``gseek --version`` says whether the shipped code is current, the wheel is tagged for what it holds,
and the build of every set runs one venv per Python."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from gseek import release
from gseek.kernels._jit import PREBUILT

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_every_supported_python_is_pinned_to_a_shipped_set():
    """What pip resolves for each supported Python (the pins) is a set shipped in kernels/prebuilt/, built
    with the pinned llvmlite: a first command there compiles nothing. A pin moved without its set (or a
    set missing: python -m gseek.precompile --prebuilt-all) fails here."""
    pythons = release.supported_pythons(PROJECT["classifiers"])
    assert pythons == ["3.11", "3.12", "3.13"]
    assert PROJECT["requires-python"] == f">={pythons[0]}"
    pinned = release.pins(PROJECT["dependencies"], pythons)
    assert pinned["3.12"]["numba"] == "0.68.0"  # the GPU machine's Numba, which it cannot upgrade
    for python, versions in pinned.items():
        assert set(versions) == {"numba", "llvmlite"}, python
        manifest = PREBUILT / f"py{python}-numba{versions['numba']}" / "manifest.json"
        assert manifest.is_file(), f"no prebuilt set for Python {python} with Numba {versions['numba']}"
        built = json.loads(manifest.read_text())
        assert (built["python"], built["numba"], built["llvmlite"]) == (python, versions["numba"],
                                                                      versions["llvmlite"])
    shipped = {p.name for p in PREBUILT.iterdir() if p.is_dir()}
    assert shipped == {f"py{p}-numba{v['numba']}" for p, v in pinned.items()}, "a set no pin resolves to"


def test_pins_read_markers_and_refuse_what_they_cannot_read():
    requirements = ["numba==0.68.1; python_version == '3.11'", "numba>=0.68; python_version >= '3.14'",
                    'llvmlite==0.50.0; python_version >= "3.11" and python_version < "3.14"', "numpy>=2"]
    assert release.pins(requirements, ["3.11", "3.13", "3.14"]) == {
        "3.11": {"numba": "0.68.1", "llvmlite": "0.50.0"}, "3.13": {"llvmlite": "0.50.0"}, "3.14": {}}
    with pytest.raises(ValueError, match="environment marker"):
        release.pins(["numba==0.68.1; sys_platform == 'linux'"], ["3.11"])
    assert release.supported_pythons(["Programming Language :: Python :: 3.13", "Programming Language :: Python :: 3",
                                      "Programming Language :: Python :: 3.9"]) == ["3.9", "3.13"]


def test_version_names_backend_versions_and_whether_the_shipped_code_is_current(monkeypatch, capsys):
    from gseek.cli import main

    assert main(["--version"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"gseek, version {release.status().version}"
    assert re.match(r"Python 3\.\d+\.\d+ \(\w+ \w+\); Numba \S+, llvmlite \S+, NumPy \S+; CuPy ", lines[1])
    assert lines[2].startswith("backend: ")
    assert re.match(r"prebuilt CPU machine code: (current|NOT current): ", lines[3])
    assert lines[4].startswith("shipped CUDA machine code: ") and lines[5].startswith("shipped CuPy kernels: ")
    monkeypatch.setenv("GSEEK_PREBUILT", "0")
    off = release.status()
    assert not off.prebuilt_current and "NOT current: off (GSEEK_PREBUILT=0)" in str(off)
    monkeypatch.setattr(release, "pins", lambda *a: {f"{sys.version_info[0]}.{sys.version_info[1]}": {"numba": "0.1"}})
    assert any("(pinned: 0.1): not what gseek pins" in note for note in release.status().notes)


def test_build_all_sets_builds_each_python_in_its_own_venv(tmp_path, monkeypatch):
    """The flow of ``--prebuilt-all`` (the compile itself is ``--prebuilt``'s, tested in test_prebuilt.py):
    a venv per Python from its interpreter, ``pip install -e`` of the checkout, ``--prebuilt`` there."""
    ran = []

    def fake_run(argv, **kwargs):
        ran.append([str(a) for a in argv])
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(subprocess, "run", fake_run)
    done = release.build_all_sets({"3.11": "/py311", "3.13": "/py313"}, jobs=1, venvs=tmp_path, log=lambda _: None)
    pinned = release.project_pins(ROOT)
    assert done == {v: f"py{v}-numba{pinned[v]['numba']}" for v in ("3.11", "3.13")}
    assert [r for r in ran if "venv" in r] == [["/py311", "-m", "venv", str(tmp_path / "py3.11")],
                                              ["/py313", "-m", "venv", str(tmp_path / "py3.13")]]
    assert [str(tmp_path / "py3.13/bin/python"), "-m", "pip", "install", "-q", "-e", str(ROOT)] in ran
    assert [str(tmp_path / "py3.13/bin/python"), "-P", "-m", "gseek.precompile", "--prebuilt"] in ran
    with pytest.raises(ValueError, match="no interpreter found for Python 3.13"):
        release.build_all_sets({"3.13": None}, venvs=tmp_path)
    with pytest.raises(ValueError, match="pins no Numba for Python 3.10"):
        release.build_all_sets({"3.10": "/py310"}, venvs=tmp_path)


@pytest.mark.slow
def test_the_wheel_is_tagged_for_x86_64_linux_and_holds_the_license_and_machine_code(tmp_path):
    """``pip wheel --no-deps .``: machine code for one platform is not ``py3-none-any``."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(ROOT), "-w", str(tmp_path)],
                   check=True, capture_output=True, cwd=tmp_path)
    (wheel,) = tmp_path.glob("gseek-*.whl")
    assert wheel.name.endswith("-py3-none-manylinux_2_28_x86_64.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        info = next(n.rsplit("/", 1)[0] for n in names if n.endswith(".dist-info/WHEEL"))
        assert "Tag: py3-none-manylinux_2_28_x86_64" in z.read(f"{info}/WHEEL").decode()
        assert "MIT License" in z.read(next(n for n in names if n.endswith("/LICENSE"))).decode()
        metadata = z.read(f"{info}/METADATA").decode()
    for field in ("Author: ", "Project-URL: Source, ", "Keywords: ",
                  "Classifier: Programming Language :: Python :: 3.13", "Requires-Dist: numba==0.68.0; python_version == \"3.12\""):
        assert field in metadata
    for shipped in ("gseek/kernels/prebuilt/*/manifest.json", "gseek/kernels/cubin/manifest.json",
                    "gseek/kernels/cupy_cache/manifest.json"):
        assert any(Path(n).match(shipped) for n in names), shipped
    sets = {n.split("/")[3] for n in names if n.startswith("gseek/kernels/prebuilt/")}
    assert sets == {p.name for p in PREBUILT.iterdir() if p.is_dir()}


def test_the_conda_recipe_pins_what_pyproject_pins():
    """docs/conda/meta.yaml builds one package per Python: each pins that Python's Numba, as pyproject does."""
    recipe = (ROOT / "docs" / "conda" / "meta.yaml").read_text()
    pinned = release.pins(PROJECT["dependencies"], release.supported_pythons(PROJECT["classifiers"]))
    numba = dict((f"{p[0]}.{p[1:]}", v) for v, p in re.findall(r"- numba ==(\S+)\s+# \[py == (\d+)\]", recipe))
    assert numba == {p: v["numba"] for p, v in pinned.items()}
    assert re.findall(r"- llvmlite ==(\S+)", recipe) == sorted({v["llvmlite"] for v in pinned.values()})
    order = sorted(pinned, key=lambda p: tuple(map(int, p.split("."))))
    low, high = (p.replace(".", "") for p in (order[0], order[-1]))
    assert f"skip: true  # [not linux64 or py < {low} or py > {high}]" in recipe
    assert re.search(r'{% set version = "(.+)" %}', recipe)[1] == release.status().version


def test_find_python_returns_an_interpreter_that_runs_that_version():
    """A pyenv shim on PATH exists for every version but runs only the active ones: each candidate is run."""
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    found = release.find_python(here)
    said = subprocess.run([found, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True)
    assert said.stdout.strip() == str(sys.version_info[:2])
    assert release.find_python("3.99") is None

"""The shipped CUDA machine code (``gseek.kernels._cuda``: ``kernels/cubin/``).

Which module a GPU backend gets: the shipped cubin only for exactly the program it was built from
(text and options), on a device of its architecture, with the file as the manifest says, loaded by
the driver; anything else compiles with NVRTC as before. The choice is tested here with a stand-in
for CuPy (no GPU needed); the kernels themselves are tested on the GPU machine (``-m gpu``).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import shutil
import sys
import types

import pytest

from gseek.kernels import _cuda


class _Device:
    def __init__(self, capability: str) -> None:
        self.compute_capability = capability

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def _fake_cupy(capability: str = "90", refuse: bool = False) -> tuple[types.ModuleType, list]:
    """A stand-in for CuPy: devices of ``capability``; ``RawModule`` records how it was made
    (``("path", file)`` or ``("code", options)``); a driver that refuses every cubin if ``refuse``."""
    made: list = []

    class RawModule:
        def __init__(self, code=None, *, path=None, options=()):
            self.how = ("path", path) if path is not None else ("code", tuple(options))

        def compile(self):
            if refuse and self.how[0] == "path":
                raise RuntimeError("CUDA_ERROR_UNSUPPORTED_PTX_VERSION")
            made.append(self.how)

    compiler = types.SimpleNamespace(CompileException=type("CompileException", (Exception,), {}))
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(Device=lambda device_id=0: _Device(capability), compiler=compiler)
    cupy.RawModule = RawModule
    return cupy, made


@pytest.fixture
def fresh(monkeypatch):
    """Clear the per-process caches before and after (they remember the manifest and the modules)."""
    monkeypatch.delenv("GSEEK_CUBINS", raising=False)
    _cuda.load_module.cache_clear()
    _cuda.cubin_manifest.cache_clear()
    yield monkeypatch
    _cuda.load_module.cache_clear()
    _cuda.cubin_manifest.cache_clear()


def _load(monkeypatch, family: str = "seqpack", block: int = 256, **cupy_options) -> list:
    cupy, made = _fake_cupy(**cupy_options)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    module = importlib.import_module(f"gseek.kernels.{family}")
    _cuda.load_module(module.CUDA_SOURCE, 0, _cuda.family_options(module, block))
    return made


def test_a_default_backend_on_the_shipped_architecture_loads_the_shipped_cubin(fresh):
    for family in _cuda.FAMILIES:
        made = _load(fresh, family)
        file = importlib.import_module(f"gseek.kernels.{family}").CUDA_SOURCE.replace(".cu", ".sm_90.cubin")
        assert made == [("path", str(_cuda.CUBINS / file))], family


@pytest.mark.parametrize("case", ["other architecture", "other block size", "turned off", "driver refuses"])
def test_anything_else_compiles_the_source(fresh, case):
    options = dict(capability="80" if case == "other architecture" else "90", refuse=case == "driver refuses")
    if case == "turned off":
        fresh.setenv("GSEEK_CUBINS", "0")
    made = _load(fresh, block=128 if case == "other block size" else 256, **options)
    assert len(made) == 1 and made[0][0] == "code", made
    assert f"-DBLOCK={128 if case == 'other block size' else 256}" in made[0][1]


def test_a_damaged_or_stale_cubin_is_not_loaded(fresh, tmp_path):
    """A file whose bytes differ from the manifest's SHA-256, or a program changed since the build
    (another key), compiles instead."""
    folder = tmp_path / "cubin"
    shutil.copytree(_cuda.CUBINS, folder)
    fresh.setattr(_cuda, "CUBINS", folder)
    raw = bytearray((folder / "seqpack.sm_90.cubin").read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (folder / "seqpack.sm_90.cubin").write_bytes(bytes(raw))
    assert _load(fresh)[0][0] == "code"
    _cuda.load_module.cache_clear()
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["families"]["fmindex.cu"][0]["key"] = "0" * 64
    (folder / "manifest.json").write_text(json.dumps(manifest))
    _cuda.cubin_manifest.cache_clear()
    assert _load(fresh, "fmindex")[0][0] == "code"
    status = _cuda.cubin_status()  # (the status compares programs, not bytes)
    assert status.startswith("5 of 6 families current") and status.endswith("changed since built: fmindex "
                                                                             "(python -m gseek.precompile --cubins)")


def test_the_program_key_changes_with_the_text_and_every_option():
    text = _cuda.source("seqpack.cu")
    base = _cuda.cubin_key("seqpack.cu", text, (("BLOCK", 256),))
    assert base == _cuda.cubin_key("seqpack.cu", text, (("BLOCK", 256),))
    assert base != _cuda.cubin_key("seqpack.cu", text, (("BLOCK", 128),))
    assert base != _cuda.cubin_key("seqpack.cu", text + "\n", (("BLOCK", 256),))
    assert base != _cuda.cubin_key("seqpack.cu", text, (("BLOCK", 256), ("X", 1)))
    assert base != _cuda.cubin_key("dp.cu", text, (("BLOCK", 256),))  # the #line names the file


def test_the_shipped_cubins_match_the_sources():
    """Every family has a cubin for sm_90 built from its program as it is now (a changed ``.cu`` file,
    header or constant needs ``python -m gseek.precompile --cubins``, with CuPy installed: no GPU),
    each an ELF file with the manifest's SHA-256, and no file the manifest does not name."""
    manifest = json.loads((_cuda.CUBINS / "manifest.json").read_text())
    assert manifest["format"] == 1 and manifest["block_size"] == 256
    for name in _cuda.FAMILIES:
        family = importlib.import_module(f"gseek.kernels.{name}")
        key = _cuda.cubin_key(family.CUDA_SOURCE, _cuda.source(family.CUDA_SOURCE),
                              _cuda.family_options(family, manifest["block_size"]))
        entries = manifest["families"][family.CUDA_SOURCE]
        assert [e["arch"] for e in entries if e["key"] == key] == ["90"], (name, "stale: rebuild the cubins")
        for entry in entries:
            data = (_cuda.CUBINS / entry["file"]).read_bytes()
            assert data[:4] == b"\x7fELF" and hashlib.sha256(data).hexdigest() == entry["sha256"], entry["file"]
    named = {e["file"] for entries in manifest["families"].values() for e in entries} | {"manifest.json"}
    assert {p.name for p in _cuda.CUBINS.iterdir()} == named
    assert _cuda.cubin_status().startswith("6 of 6 families current (sm_90;")

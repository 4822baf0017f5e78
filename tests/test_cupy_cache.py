"""The shipped copy of CuPy's own kernels (``gseek.kernels._cupy_cache``: ``kernels/cupy_cache/``).

What is seeded into CuPy's kernel cache: the shipped files the cache lacks, only for the CuPy, NVRTC
and architecture they were made with, written under a temporary name and renamed; never an error for
the file system. Tested with plain folders (no CuPy or GPU needed); that a cold GPU search compiles
none of them is checked on the GPU machine (``benchmarks/archive/gpu_startup.sh``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import types
from pathlib import Path

import pytest

from gseek.kernels import _cupy_cache

FIT = ("14.2.0", "12.9", "90")


def _entry(binary: bytes) -> bytes:
    """A CuPy cache file's content: the SHA-1 (hex) of the binary, then the binary."""
    return hashlib.sha1(binary).hexdigest().encode() + binary


def _name(i: int) -> str:
    return hashlib.sha1(b"key %d" % i).hexdigest() + ".cubin"


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """A shipped folder of three files made for FIT, built by ``collect`` from a filled CuPy cache."""
    monkeypatch.delenv("GSEEK_CUPY_CACHE", raising=False)
    monkeypatch.delenv("CUPY_CACHE_IN_MEMORY", raising=False)
    filled = tmp_path / "filled"
    filled.mkdir()
    for i in range(3):
        (filled / _name(i)).write_bytes(_entry(b"cubin %d" % i))
        (filled / (_name(i) + ".cu")).write_text("// the source CuPy keeps with CUPY_CACHE_SAVE_CUDA_SOURCE")
    (filled / _name(9)).write_bytes(b"0" * 40 + b"a file whose hash does not match")
    (filled / "tmpab12cd").write_bytes(_entry(b"a temporary of CuPy's"))
    folder = tmp_path / "shipped"
    sizes = _cupy_cache.collect(filled, *FIT, folder=folder)
    assert sorted(sizes) == sorted(_name(i) for i in range(3))  # no source, no bad file, no temporary
    return folder


def test_collect_writes_the_files_and_a_manifest_of_them(shipped):
    manifest = json.loads((shipped / "manifest.json").read_text())
    assert (manifest["cupy"], manifest["nvrtc"], manifest["arch"]) == FIT
    assert sorted(manifest["files"]) == sorted(p.name for p in shipped.glob("*.cubin"))
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((shipped / name).read_bytes()).hexdigest() == digest


def test_collect_again_removes_what_the_cache_no_longer_has(shipped, tmp_path):
    filled = tmp_path / "filled2"
    filled.mkdir()
    (filled / _name(1)).write_bytes(_entry(b"cubin 1"))
    _cupy_cache.collect(filled, *FIT, folder=shipped)
    assert [p.name for p in shipped.glob("*.cubin")] == [_name(1)]


def test_seed_copies_only_what_the_cache_lacks(shipped, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / _name(0)).write_bytes(b"the cache's own file")
    assert _cupy_cache.seed(cache, *FIT, folder=shipped) == 2
    assert (cache / _name(0)).read_bytes() == b"the cache's own file"  # never overwritten
    for i in (1, 2):
        assert (cache / _name(i)).read_bytes() == _entry(b"cubin %d" % i)
        assert _cupy_cache.valid_file((cache / _name(i)).read_bytes())
    assert sorted(os.listdir(cache)) == sorted(_name(i) for i in range(3))  # no temporary left
    assert _cupy_cache.seed(cache, *FIT, folder=shipped) == 0  # done once


def test_seed_makes_the_cache_folder(shipped, tmp_path):
    cache = tmp_path / "new" / "kernel_cache"
    assert _cupy_cache.seed(cache, *FIT, folder=shipped) == 3


@pytest.mark.parametrize("other", [("14.1.0", "12.9", "90"), ("14.2.0", "12.8", "90"), ("14.2.0", "12.9", "80")])
def test_seed_copies_nothing_for_another_cupy_nvrtc_or_architecture(shipped, tmp_path, other):
    cache = tmp_path / "cache"
    assert _cupy_cache.seed(cache, *other, folder=shipped) == 0
    assert not cache.exists() or not os.listdir(cache)


@pytest.mark.parametrize("key, value", [("GSEEK_CUPY_CACHE", "0"), ("CUPY_CACHE_IN_MEMORY", "1")])
def test_seed_is_off_by_the_environment(shipped, tmp_path, monkeypatch, key, value):
    monkeypatch.setenv(key, value)
    assert _cupy_cache.seed(tmp_path / "cache", *FIT, folder=shipped) == 0
    assert _cupy_cache.status() == f"off ({key}={value})"


@pytest.mark.parametrize("value", ["0", "false", "yes", ""])
def test_cupy_cache_in_memory_is_read_as_cupy_reads_it(shipped, tmp_path, monkeypatch, value):
    """CuPy keeps its cache in memory only for an integer 1; anything else still uses the disk."""
    monkeypatch.setenv("CUPY_CACHE_IN_MEMORY", value)
    assert _cupy_cache.off() == ""
    assert _cupy_cache.seed(tmp_path / "cache", *FIT, folder=shipped) == 3


def test_a_file_that_cannot_be_written_leaves_no_temporary(shipped, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    real = os.replace

    def refuse_one(src, dst):
        if os.path.basename(dst) == _name(1):
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(_cupy_cache.os, "replace", refuse_one)
    assert _cupy_cache.seed(cache, *FIT, folder=shipped) == 2  # the others still copied
    assert sorted(os.listdir(cache)) == sorted([_name(0), _name(2)])


@pytest.mark.parametrize("text", ["[1]", "not json", '{"format": 2}'])
def test_a_manifest_that_is_not_one_seeds_nothing(shipped, tmp_path, text):
    (shipped / "manifest.json").write_text(text)
    assert _cupy_cache.manifest(shipped) == {}
    assert _cupy_cache.seed(tmp_path / "cache", *FIT, folder=shipped) == 0


def test_collect_touches_only_cupy_cache_files_and_refuses_an_empty_cache(shipped, tmp_path):
    (shipped / "dp.sm_90.cubin").write_bytes(b"another folder's file")
    filled = tmp_path / "filled2"
    filled.mkdir()
    (filled / _name(1)).write_bytes(_entry(b"cubin 1"))
    _cupy_cache.collect(filled, *FIT, folder=shipped)
    assert (shipped / "dp.sm_90.cubin").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="no CuPy cache files"):
        _cupy_cache.collect(empty, *FIT, folder=shipped)
    assert [p.name for p in shipped.glob("*.cubin") if p.name != "dp.sm_90.cubin"] == [_name(1)]


def test_the_cache_folder_is_the_one_cupy_uses(tmp_path, monkeypatch):
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path / "from-env"))
    assert _cupy_cache.cache_dir() == str(tmp_path / "from-env")
    backend = types.SimpleNamespace(_cache_dir=str(tmp_path / "cupy-read-at-import"))
    cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(compiler=types.SimpleNamespace(
        _kernel_cache_backend=backend)))
    assert _cupy_cache.cache_dir(cupy) == str(tmp_path / "cupy-read-at-import")
    monkeypatch.delenv("CUPY_CACHE_DIR")
    assert _cupy_cache.cache_dir() == os.path.expanduser("~/.cupy/kernel_cache")


def test_an_unwritable_cache_is_no_error(shipped, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert _cupy_cache.seed(blocker / "cache", *FIT, folder=shipped) == 0


def test_seed_for_a_device_seeds_once_per_cache_and_architecture(shipped, tmp_path, monkeypatch):
    monkeypatch.setattr(_cupy_cache, "SHIPPED", shipped)
    monkeypatch.setattr(_cupy_cache, "_seeded", {})
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path / "cache"))
    nvrtc = types.SimpleNamespace(getVersion=lambda: (12, 9))
    cupy = types.SimpleNamespace(__version__="14.2.0", cuda=types.SimpleNamespace(nvrtc=nvrtc))
    for name, module in (("cupy", cupy), ("cupy.cuda", cupy.cuda), ("cupy.cuda.nvrtc", nvrtc)):
        monkeypatch.setitem(sys.modules, name, module)
    device = types.SimpleNamespace(compute_capability="90")
    assert _cupy_cache.seed_for(cupy, device) == 3
    (tmp_path / "cache" / _name(0)).unlink()
    assert _cupy_cache.seed_for(cupy, device) == 3  # remembered: no second look in this process


def test_the_shipped_folder_is_consistent():
    """Every shipped file is named in the manifest with its SHA-256 and is a valid CuPy cache file."""
    if not (_cupy_cache.SHIPPED / "manifest.json").exists():
        pytest.skip("no shipped CuPy kernels")
    manifest = _cupy_cache.manifest()
    assert manifest, "kernels/cupy_cache/manifest.json is not a manifest"
    files = {p.name for p in _cupy_cache.SHIPPED.glob("*.cubin")}
    assert files == set(manifest["files"])
    for name in files:
        data = (_cupy_cache.SHIPPED / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == manifest["files"][name]
        assert _cupy_cache.valid_file(data), name
    assert _cupy_cache.status().startswith(f"{len(files)} kernels for CuPy ")


@pytest.mark.gpu
@pytest.mark.parametrize("task", ["map", "megablast"])
def test_a_cold_gpu_command_compiles_none_of_cupys_kernels(tmp_path, task):
    """With the shipped copy fitting this CuPy and device, a first search in an empty CuPy cache finds
    every CuPy kernel it uses there: CuPy keeps a ``.cu`` (CUPY_CACHE_SAVE_CUDA_SOURCE) only for what it
    compiles. Fails when the GPU code starts using a CuPy operation the copy lacks (rebuild it:
    ``python -m gseek.precompile --cupy-cache`` on a GPU machine)."""
    import subprocess

    import cupy

    from gseek.datasets import lambda_genome, lambda_reads
    from gseek.index import Index

    shipped = _cupy_cache.manifest()
    if not _cupy_cache.fits(shipped, cupy.__version__, _cupy_cache.nvrtc_version(),
                            str(cupy.cuda.Device(0).compute_capability)):
        pytest.skip(f"the shipped CuPy kernels are not for this CuPy and device ({_cupy_cache.status()})")
    Index.build(lambda_genome(), device="cpu").save(tmp_path / "lam.gseek")
    reads = tmp_path / "r.fq"
    reads.write_text("".join(Path(lambda_reads()).read_text().splitlines(True)[:400]))
    cache = tmp_path / "cupy"
    env = dict(os.environ, CUPY_CACHE_DIR=str(cache), CUPY_CACHE_SAVE_CUDA_SOURCE="1",
               NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    for key in ("GSEEK_CUPY_CACHE", "CUPY_CACHE_IN_MEMORY"):
        env.pop(key, None)
    extra = ["--task", "megablast", "-o", str(tmp_path / "o.tsv")] if task == "megablast" else \
        ["-v", "3", "-o", str(tmp_path / "o.sam")]
    subprocess.run([sys.executable, "-m", "gseek", "--quiet", "--device", "gpu", "search", "-x",
                    str(tmp_path / "lam.gseek"), "-q", str(reads), *extra], env=env, check=True, cwd=tmp_path)
    compiled = sorted(p.name for p in cache.glob("*.cu"))
    assert not compiled, f"CuPy compiled {len(compiled)} kernel(s) the shipped copy lacks"
    assert 0 < len(list(cache.glob("*.cubin"))) <= len(shipped["files"])  # seeded, and CuPy read from disk

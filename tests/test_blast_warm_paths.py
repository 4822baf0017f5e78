"""``gseek.blast.warm_paths``: the sizes that send a search's passes to their large forms lowered while
``gseek compile`` searches, and put back after; a search within them gives the same lines (on a GPU the
large searches' device passes, on the CPU the table of a large query batch)."""

from __future__ import annotations

import pytest

from gseek.blast import device_rounds, gapped, searcher, seeds, warm_paths
from gseek.blast.searcher import BlastSearcher

from test_blast_device_rounds import _lines  # (the lines of a search, `6 std btop`)
from test_blast_search import lambda_text, queries  # noqa: F401  (the fixtures: the lambda text, the test queries)


def _sizes():
    return searcher.SMALL_TABLE_WORDS, seeds.DEVICE_MIN, dict(gapped._DEVICE_ROUNDS), device_rounds._CELL_BITS


def test_large_paths_lower_the_sizes_and_put_them_back():
    before = _sizes()
    with warm_paths.large_paths():
        small, seeds_min, rounds_min, bits = _sizes()
        assert small < 0 and seeds_min == 0 and rounds_min["gpu"] == 1 and bits < 62
        assert rounds_min["cpu"] == before[2]["cpu"]  # the CPU's rounds stay on the host
    assert _sizes() == before
    with pytest.raises(RuntimeError), warm_paths.large_paths():
        raise RuntimeError("a failed search within")
    assert _sizes() == before


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("task", ["megablast", "blastn"])
def test_a_search_on_the_large_paths_gives_the_same_lines(lambda_text, queries, device, task):
    want = _lines(BlastSearcher(lambda_text, task=task, device="cpu").search(queries))
    with warm_paths.large_paths():
        got = _lines(BlastSearcher(lambda_text, task=task, device=device).search(queries))
    assert got == want and len(want) > 10


@pytest.mark.gpu
@pytest.mark.xfail(strict=True, reason="kernels/cupy_cache/ was built before gseek/blast/warm_paths.py: rebuild it on a GPU "
                   "(python -m gseek.precompile --cupy-cache), then drop this mark")
def test_the_large_paths_compile_none_of_cupys_kernels(tmp_path):
    """A cold process's searches on the large paths (both tasks) find every CuPy kernel they use in the shipped
    copy (``gseek compile`` now runs them: :func:`warm_paths.warm_large_searches`): CuPy keeps a ``.cu`` only for
    what it compiles (as ``test_cupy_cache.py``'s cold command)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from gseek.datasets import lambda_genome
    from gseek.index import Index

    Index.build(lambda_genome(), wgram=8, device="cpu").save(tmp_path / "lam.gseek")
    queries = Path(__file__).resolve().parent / "data" / "blast" / "search_queries.fa"
    code = ("from gseek.blast import warm_paths\nfrom gseek.blast.searcher import BlastSearcher\n"
            "from gseek.seqio import read_fastx\nwith warm_paths.large_paths():\n"
            "    for task in ('megablast', 'blastn'):\n"
            f"        BlastSearcher({str(tmp_path / 'lam.gseek')!r}, task=task, device='gpu')"
            f".search(read_fastx({str(queries)!r})).arrays['cigar']\n")
    cache = tmp_path / "cupy"
    env = dict(os.environ, CUPY_CACHE_DIR=str(cache), CUPY_CACHE_SAVE_CUDA_SOURCE="1",
               NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    for key in ("GSEEK_CUPY_CACHE", "CUPY_CACHE_IN_MEMORY"):
        env.pop(key, None)
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=tmp_path)
    compiled = sorted(p.name for p in cache.glob("*.cu"))
    assert not compiled, f"CuPy compiled {len(compiled)} kernel(s) the shipped copy lacks"

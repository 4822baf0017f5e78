"""The passes only large searches take, run on tiny data: ``gseek compile``'s blast workload.

A search sends a pass to the device, or to another form of it, only past a size (the lookup table
built on the device past :data:`~gseek.blast.small_table.SMALL_TABLE_WORDS` query positions, the
seed selection and the rounds' passes on the device past
:data:`~gseek.blast.device_rounds.DEVICE_MIN` seeds, the conflict cells numbered by rows past
62 bits, the round choice in parts past :data:`~gseek.blast.rounds.PARTS_MIN` seeds, DUST's reach
on the device on every GPU). The workload's data is far below those sizes, so before this module a
fresh install compiled those passes' kernels in its first large search: CuPy's (~0.15 s each,
31 of them) and Numba's for DUST's device path, 13-15 s of the first megablast command against a
1 Gbp database on an H200 (the second took 3.2 s; ``benchmarks/RESULTS.md``, the session of
2026-11-29, second). :func:`large_paths` lowers those sizes while the workload searches, so the
shipped caches (``kernels/cupy_cache/``, ``kernels/prebuilt/``) hold them. The sizes only choose
where a pass runs: the results are the same either way (each pass's tests).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["large_paths", "warm_large_searches"]


@contextlib.contextmanager
def large_paths() -> Iterator[None]:
    """Within it, a GPU search of any size takes the paths of a large one (see the module); the
    sizes restored after."""
    from . import device_rounds, gapped, searcher, seeds

    saved = (searcher.SMALL_TABLE_WORDS, seeds.DEVICE_MIN, dict(gapped._DEVICE_ROUNDS), device_rounds._CELL_BITS)
    searcher.SMALL_TABLE_WORDS, seeds.DEVICE_MIN, device_rounds._CELL_BITS = -1, 0, 24
    gapped._DEVICE_ROUNDS["gpu"] = 1
    try:
        yield
    finally:
        searcher.SMALL_TABLE_WORDS, seeds.DEVICE_MIN, _, device_rounds._CELL_BITS = saved
        gapped._DEVICE_ROUNDS.clear()
        gapped._DEVICE_ROUNDS.update(saved[2])


def warm_large_searches(backend: Any, index_path: Path, queries: Any) -> None:
    """The large searches' passes compiled for ``backend``: on a GPU both tasks' searches of ``queries``
    against ``index_path`` within :func:`large_paths`; on any backend DUST's device path's host passes
    (records with and without an N) through the CPU backend, and the round choice in parts."""
    from gseek.backend import get_backend

    from . import dust, rounds
    from .searcher import BlastSearcher

    codes = np.concatenate([np.tile(np.arange(4, dtype=np.uint8), 50), np.zeros(80, np.uint8), [4],
                            np.tile(np.array([2, 0, 3, 3, 0, 1, 0], np.uint8), 30)])
    dust.dust_intervals(codes, np.array([0, 200, codes.size], np.int64), backend=get_backend("cpu"))
    rounds.select_round_parts(*[range(rounds.PARTS_MIN)] * 4)
    if backend.name != "gpu":
        return
    with large_paths():
        for task in ("megablast", "blastn"):
            BlastSearcher(index_path, task=task, device=backend).search(queries).arrays["cigar"]

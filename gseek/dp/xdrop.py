"""BLAST's X-drop extensions of seeds: ungapped, and gapped (banded Gotoh) with trace-back.

Used by ``gseek align``'s stages and by the BLAST-style search: each takes
a backend, one residue array and per-seed offsets, lengths and seed cells,
and runs the ``dp`` kernel family (CUDA or its Numba twin) with identical
results. Rules in ``docs/alignment.md``.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any

import numpy as np

from gseek import ragged
from gseek.backend import Backend, on_device
from gseek.errors import OptionError
from gseek.kernels import dp

from .scoring import Scoring
from .seeds import seed_arrays

__all__ = ["xdrop_ungapped", "xdrop_gapped", "xdrop_gapped_scores"]

#: Gapped X-drop sweeps by one warp a seed (``*_warp`` kernels: a row 32 columns at a time) where
#: the backend has warp kernels, instead of one thread a seed; the same results either way.
WARP_SCORE = True
WARP_FILL = True
#: On the CPU, the extension with trace-back is one sweep a side and the walk, a seed at a time on
#: host threads (:func:`_traceback_on_host`), instead of the score, fill and walk launches a GPU
#: runs (the second sweep sizes the GPU's memory before the launch); the same results either way.
#: The blastn task of 600 x 500 bp queries against 240 kb (benchmarks/RESULTS.md, 2026-11-28): the
#: trace-back's 117 M cells swept once, where the launches swept them and then the 28 M up to the best
#: rows again, storing bytes (the fill: 0.45 s of the 1.3 s trace-back on 2 cores).
HOST_TRACEBACK = True
#: The trace-back bytes a host thread holds at first (grown as one seed needs more).
HOST_TB_BYTES = 1 << 16


def _kernel(backend: Backend, name: str, warp: bool, n: int) -> tuple[str, int]:
    """The kernel for ``n`` seeds and the threads to launch: one a seed, or a warp a seed."""
    if warp and getattr(backend, "warp_kernels", True):
        return name + "_warp", n * dp.WARP
    return name, n


@on_device
def xdrop_ungapped(backend: Backend, codes: Any, q_off: np.ndarray, q_len: np.ndarray, t_off: np.ndarray,
                   t_len: np.ndarray, q_pos: np.ndarray, t_pos: np.ndarray, scoring: Scoring,
                   xdrop: int) -> dict[str, np.ndarray]:
    """BLAST's ungapped X-drop extension of seeds ``(q_pos, t_pos)`` both ways.

    Returns ``score``, ``q_start``, ``q_end`` (the target extent is the same
    diagonal: ``t_start = q_start + t_pos - q_pos``).

    >>> from gseek import get_backend
    >>> s = Scoring(match=1, mismatch=-3)
    >>> codes = np.concatenate([s.encode("GGGACGTACGTCCC"), s.encode("TTTACGTACGTAAA")])
    >>> r = xdrop_ungapped(get_backend("cpu"), codes, [0], [14], [14], [14], [5], [5], s, 5)
    >>> int(r["score"][0]), int(r["q_start"][0]), int(r["q_end"][0])
    (8, 3, 11)
    """
    n = len(q_len)
    res = [backend.xp.empty(n, dtype=np.int32) for _ in range(3)]
    if n:
        args = [backend.asarray(np.asarray(a, dtype=d)) for a, d in
                ((q_off, np.int64), (q_len, np.int32), (t_off, np.int64), (t_len, np.int32),
                 (q_pos, np.int32), (t_pos, np.int32))]
        backend.launch(dp, "xdrop_ungapped", n, backend.asarray(codes, dtype=np.uint8), *args, np.int64(n),
                       backend.asarray(scoring.table.ravel()), np.int32(scoring.table.shape[0]), np.int32(xdrop), *res)
    score, q_start, q_end = (backend.to_host(r) for r in res)
    return {"score": score, "q_start": q_start, "q_end": q_end}


@on_device
def xdrop_gapped(backend: Backend, codes: Any, q_off: np.ndarray, q_len: np.ndarray, t_off: np.ndarray,
                 t_len: np.ndarray, q_pos: np.ndarray, t_pos: np.ndarray, scoring: Scoring, xdrop: int,
                 traceback: bool = True, max_bytes: int | None = None) -> dict[str, np.ndarray]:
    """BLAST-style gapped X-drop extension of seed pairs ``(q_pos, t_pos)``
    left and right (rules in ``docs/alignment.md``).

    The seed pair is aligned; each side is a row-by-row DP from the seed
    that drops cells more than ``xdrop`` below the best score so far and
    ends at its best cell. Returns host arrays ``score``, ``q_start``,
    ``q_end``, ``t_start``, ``t_end``, ``edges`` (bit 1: the left side, bit 2: the
    right side had a live cell at the target's end, so a longer target could
    extend it: a caller passing a window redoes those) and, with ``traceback``, ``matches``,
    ``mismatches``, ``gap_cols``, ``gap_opens`` and the CIGARs (pair p's
    BAM-encoded runs at ``cigar[cigar_offsets[p]:cigar_offsets[p + 1]]``).
    Trace-back is count -> prefix sum -> fill: a score-only sweep sizes the
    trace-back bytes, a second sweep stores them and counts CIGAR runs, a
    walk writes the runs. ``max_bytes`` bounds the trace-back bytes and row
    index (12 bytes a query row) of one fill: the seeds are filled and walked
    in runs that keep to it (a seed that needs more, alone); each seed's
    result is its own, so the runs change nothing but the memory.

    >>> from gseek import get_backend
    >>> s = Scoring()
    >>> q, t = "TTGACGTTACGGATCCATTT", "AAGACGTTACCGGATCCAAA"
    >>> codes = np.concatenate([s.encode(q), s.encode(t)])
    >>> r = xdrop_gapped(get_backend("cpu"), codes, [0], [20], [20], [20], [4], [4], s, 20)
    >>> [int(r[k][0]) for k in ("score", "q_start", "q_end", "t_start", "t_end")]
    [23, 2, 17, 2, 18]
    >>> from gseek.output.cigar import cigar_strings
    >>> print(cigar_strings(r["cigar"], r["cigar_offsets"])[0])
    7=1D8=
    """
    n = len(q_len)
    q_off, q_len, t_off, t_len, q_pos, t_pos = seed_arrays(q_off, q_len, t_off, t_len, q_pos, t_pos)
    if not 0 <= int(xdrop) < (1 << 26):
        raise OptionError(f"xdrop must be in [0, 2^26), not {xdrop}")
    names = ("score", "q_start", "q_end", "t_start", "t_end")
    out: dict[str, np.ndarray] = {k: np.zeros(n, np.int32) for k in (*names, "edges")}
    if traceback:
        out.update({k: np.zeros(n, np.int32) for k in ("matches", "mismatches", "gap_cols", "gap_opens")})
        out["cigar"], out["cigar_offsets"] = np.zeros(0, np.uint32), np.zeros(n + 1, np.int64)
    if n == 0:
        return out
    if traceback and HOST_TRACEBACK and backend.name == "cpu":
        return _traceback_on_host(backend, codes, q_off, q_len, t_off, t_len, q_pos, t_pos, scoring, xdrop, out)
    xp = backend.xp
    width = np.maximum(t_pos, t_len - t_pos - 1).astype(np.int64) + 1
    work_off = ragged.offsets(2 * width)
    dev = [backend.asarray(a) for a in (q_off, q_len, t_off, t_len, q_pos, t_pos)]
    args, work, res, cells, rows = _score_sweep(backend, codes, dev, scoring, xdrop, backend.asarray(work_off),
                                                int(work_off[-1]))
    host = backend.to_host(res)
    for row, name in enumerate(names):
        out[name] = host[row].copy()
    out["edges"] = host[5].copy()
    if not traceback:
        return out
    cells_h, rows_h = backend.to_host(cells), backend.to_host(rows).astype(np.int64)
    need = np.cumsum(cells_h + 12 * rows_h)
    work_off_d = backend.asarray(work_off[:-1])
    stats_h, parts, lo = np.empty((5, n), np.int32), [], 0
    while lo < n:  # seeds lo:hi, whose trace-back keeps to max_bytes (at least one)
        hi = n if max_bytes is None else max(lo + 1, int(np.searchsorted(
            need, (need[lo - 1] if lo else 0) + max_bytes, side="right")))
        m = hi - lo
        tb_off, row_off = ragged.offsets(cells_h[lo:hi]), ragged.offsets(rows_h[lo:hi])
        tb = xp.empty(max(int(tb_off[-1]), 1), dtype=np.uint8)
        row_start = xp.empty(max(int(row_off[-1]), 1), dtype=np.int32)
        row_tb = xp.empty(max(int(row_off[-1]), 1), dtype=np.int64)
        sub = [a[lo:hi] for a in dev]
        ends = [res[1][lo:hi], res[2][lo:hi], res[3][lo:hi], res[4][lo:hi]]
        stats = xp.empty((5, m), dtype=np.int32)
        tb_off_d, row_off_d = backend.asarray(tb_off[:-1]), backend.asarray(row_off[:-1])
        backend.launch(dp, *_kernel(backend, "xdrop_gapped_fill", WARP_FILL, m), args[0], *sub, np.int64(m), *args[8:],
                       np.int32(scoring.no_match_code), work_off_d[lo:hi], work, *ends, tb_off_d, tb, row_off_d,
                       row_start, row_tb, *stats)
        host = backend.to_host(stats)
        stats_h[:, lo:hi] = host
        cig_off = ragged.offsets(host[0].astype(np.int64))
        cigar = xp.empty(max(int(cig_off[-1]), 1), dtype=np.uint32)
        backend.launch(dp, "xdrop_gapped_walk", m, args[0], sub[0], sub[2], sub[4], sub[5], np.int64(m),
                       np.int32(scoring.no_match_code), *ends, tb, row_off_d, row_start, row_tb, stats[0],
                       backend.asarray(cig_off[:-1]), cigar)
        parts.append((backend.to_host(cigar)[: int(cig_off[-1])].copy(), cig_off))
        del tb, row_start, row_tb  # before the next run's
        lo = hi
    for row, name in enumerate(("matches", "mismatches", "gap_cols", "gap_opens"), 1):
        out[name] = stats_h[row].copy()
    out["cigar"], out["cigar_offsets"] = ragged.concat(parts)
    return out


def _score_sweep(backend: Backend, codes: Any, dev: list[Any], scoring: Scoring, xdrop: int, work_off: Any,
                 work_size: int) -> tuple[list[Any], Any, Any, Any, Any]:
    """The score-only sweep of :func:`xdrop_gapped` over seeds ``dev`` (its six per-seed arrays on the
    device; ``work_off``: each seed's DP rows' offset there, ``work_size`` their sum): the launch's
    arguments, its rows, the results (6 x n: score, q_start, q_end, t_start, t_end, edges) and each
    seed's trace-back cells and rows."""
    xp, n = backend.xp, int(dev[0].size)
    args = [backend.asarray(codes, dtype=np.uint8), *dev, np.int64(n), backend.asarray(scoring.table.ravel()),
            np.int32(scoring.table.shape[0]), np.int32(scoring.gap_open), np.int32(scoring.gap_extend), np.int32(xdrop)]
    work = xp.empty(work_size, dtype=np.int32)
    res = xp.empty((6, n), dtype=np.int32)
    cells, rows = xp.empty(n, dtype=np.int64), xp.empty(n, dtype=np.int32)
    backend.launch(dp, *_kernel(backend, "xdrop_gapped_score", WARP_SCORE, n), *args, work_off, work, *res, cells, rows)
    return args, work, res, cells, rows


def xdrop_gapped_scores(backend: Backend, codes: Any, q_off: Any, q_len: Any, t_off: Any, t_len: Any, q_pos: Any,
                        t_pos: Any, scoring: Scoring, xdrop: int) -> Any:
    """:func:`xdrop_gapped`'s score-only results of seeds given as arrays of ``backend`` (int64
    offsets, int32 lengths and seed pairs, valid seed pairs), left there: a 6 x n int32 array of
    score, q_start, q_end, t_start, t_end and edges (one launch; no check of the seed pairs).

    >>> from gseek import get_backend
    >>> s = Scoring()
    >>> codes = np.concatenate([s.encode("TTGACGTTACGGATCCATTT"), s.encode("AAGACGTTACCGGATCCAAA")])
    >>> i64, i32 = (lambda *v: np.array(v, np.int64)), (lambda *v: np.array(v, np.int32))
    >>> r = xdrop_gapped_scores(get_backend("cpu"), codes, i64(0), i32(20), i64(20), i32(20), i32(4), i32(4), s, 20)
    >>> r[:5, 0].tolist()
    [23, 2, 17, 2, 18]
    """
    xp = backend.xp
    if not 0 <= int(xdrop) < (1 << 26):
        raise OptionError(f"xdrop must be in [0, 2^26), not {xdrop}")
    n = int(q_len.size)
    if n == 0:
        return xp.zeros((6, 0), dtype=np.int32)
    width = xp.maximum(t_pos, t_len - t_pos - 1).astype(np.int64) + 1
    work_off = xp.zeros(n + 1, dtype=np.int64)
    xp.cumsum(2 * width, out=work_off[1:])
    return _score_sweep(backend, codes, [q_off, q_len, t_off, t_len, q_pos, t_pos], scoring, xdrop, work_off,
                        int(work_off[-1]))[2]


#: Pieces of the seeds a host thread extends at a time (:func:`_traceback_on_host`), per thread.
HOST_PIECES = 16


def _traceback_on_host(backend: Backend, codes: Any, q_off: np.ndarray, q_len: np.ndarray, t_off: np.ndarray,
                       t_len: np.ndarray, q_pos: np.ndarray, t_pos: np.ndarray, scoring: Scoring, xdrop: int,
                       out: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """:func:`xdrop_gapped` with trace-back on the CPU: one sweep a side and the walk, a seed at a
    time (``dp.xdrop_gapped_host``), in pieces on the backend's threads; the results of the count,
    fill and walk launches, without the second sweep a GPU needs to size its memory, and with a
    thread's buffers, not every seed's, held at once."""
    n = int(q_len.size)
    codes = np.ascontiguousarray(codes, np.uint8)
    table = np.ascontiguousarray(scoring.table.ravel())
    res = np.zeros((10, n), np.int32)
    n_cigar = np.zeros(n, np.int64)
    bounds = np.linspace(0, n, min(n, max(1, backend.threads) * HOST_PIECES) + 1).astype(np.int64)
    consts = (table, np.int32(scoring.table.shape[0]), np.int32(scoring.gap_open), np.int32(scoring.gap_extend),
              np.int32(xdrop), np.int32(scoring.no_match_code), np.int64(HOST_TB_BYTES), res, n_cigar)

    def piece(i: int) -> np.ndarray:
        return dp.xdrop_gapped_host(codes, q_off, q_len, t_off, t_len, q_pos, t_pos, bounds[i], bounds[i + 1], *consts)

    if backend.threads > 1 and bounds.size > 2:
        with concurrent.futures.ThreadPoolExecutor(backend.threads) as pool:
            parts = list(pool.map(piece, range(bounds.size - 1)))
    else:
        parts = [piece(i) for i in range(bounds.size - 1)]
    names = ("score", "q_start", "q_end", "t_start", "t_end", "edges", "matches", "mismatches", "gap_cols", "gap_opens")
    for row, name in enumerate(names):
        out[name] = res[row]
    out["cigar"] = np.concatenate(parts) if parts else np.zeros(0, np.uint32)
    out["cigar_offsets"] = ragged.offsets(n_cigar)
    return out

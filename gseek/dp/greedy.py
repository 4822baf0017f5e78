"""Megablast's greedy gapped extension of seeds, score only or with its edit script.

BLAST+ extends megablast's seeds (linear gap costs) with the greedy algorithm of Zhang
et al. (2000) as its ``BLAST_GreedyAlign`` runs it, not with a DP: the ends, scores and
gap placements of blastn's megablast HSPs are that algorithm's (``docs/blast.md``,
"Megablast's greedy extension"). :func:`greedy_gapped` runs the ``greedy`` kernel family
(CUDA, or its Numba twin) on a backend, with identical results, the edit script edited as
BLAST+ edits it (the kernel ``greedy_reduce``). The readable reference is ``tests/reference_greedy.py``.

Scores are at twice the scale: a match ``2 * reward``, a mismatch ``2 * penalty``, a gap
column ``reward - 2 * penalty``, X doubled (BLAST+'s own arithmetic for an odd reward).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from gseek import ragged
from gseek.backend import Backend, on_device
from gseek.errors import OptionError
from gseek.kernels import greedy

from .runs import LazyRuns
from .seeds import seed_arrays

__all__ = ["greedy_gapped", "SUB", "INS", "DEL"]

SUB, INS, DEL = greedy.SUB, greedy.INS, greedy.DEL
#: Diagonals a side's ring holds at first (a power of two); a seed whose range outgrows it is
#: extended again with a ring four times wider.
RING = 128
#: One warp a seed (``*_warp`` kernels: a distance's diagonals 32 at a time) where the backend has warp
#: kernels, instead of one thread a seed; the same results either way. One thread a seed was 5x slower than
#: the DP's warp on 100 kb pairs at 15 % divergence on an H100 (``benchmarks/archive/probe_greedy.py``).
WARP = True


def _kernel(backend: Backend, name: str, n: int) -> tuple[str, int]:
    """The kernel for ``n`` seeds and the threads to launch: a warp a seed, or one thread."""
    if WARP and getattr(backend, "warp_kernels", True):
        return name + "_warp", 32 * n
    return name, n


def _memory(match: int, mismatch: int, xdrop: int) -> int:
    """The ring of per-distance best scores: a power of two above the X-drop's look-back."""
    look = (xdrop + match // 2) // (match + mismatch) + 1
    return 1 << int(look + 1).bit_length()


@on_device
def greedy_gapped(backend: Backend, codes: Any, q_off: np.ndarray, q_len: np.ndarray, t_off: np.ndarray,
                  t_len: np.ndarray, q_pos: np.ndarray, t_pos: np.ndarray, match: int, mismatch: int, xdrop: int,
                  traceback: bool = False, max_bytes: int | None = None,
                  rescore: tuple[int, int, int, np.ndarray] | None = None,
                  timings: dict[str, float] | None = None) -> dict[str, np.ndarray]:
    """Greedy gapped extension of seed pairs ``(q_pos, t_pos)`` (the right side from the pair,
    the left side from the pair before it), at twice the scale (``match`` = 2 x reward,
    ``mismatch`` = -2 x penalty, a positive cost, ``xdrop`` doubled).

    Returns host arrays ``score``, ``q_start``, ``q_end``, ``t_start``, ``t_end`` (0-based,
    half-open), ``q_seed``, ``t_seed`` (where a trace-back of the HSP starts: the middle of the
    longest run of matches the sides found, inside the HSP), ``edges`` (bit 1: the left side,
    bit 2: the right side reached the end of the target it was given, so a longer target could
    extend it) and, with ``traceback``, the edit script of each alignment after BLAST+'s gap edits
    (``s_ReduceGaps``, the kernel ``greedy_reduce``): operations ``ops`` (:data:`SUB` columns,
    :data:`INS` query bases, :data:`DEL` target bases) and their lengths ``op_len``, seed ``p``'s at
    ``ops[op_offsets[p]:op_offsets[p + 1]]``. ``max_bytes`` bounds one fill's trace-back
    memory (seeds in runs; a seed that needs more, alone). ``timings``: seconds added to its
    ``greedy: ...`` entries (the device synchronised at their bounds).

    With ``traceback`` and ``rescore = (reward, penalty, n_score, cutoff)`` (``cutoff`` per seed) each
    alignment is then scored again on the device as BLAST+ scores a megablast HSP after its trace-back
    (the kernel ``greedy_rescore``: N scored ``n_score``, the best-scoring part kept and grown by exact
    matches; ``docs/blast.md``), and instead of the edit scripts the result holds ``kept`` (the part's
    score reaches the seed's cutoff), its ``final_score`` (reported units) and ends ``final_q_start``,
    ``final_q_end``, ``final_t_start``, ``final_t_end``, ``matches``, ``mismatches``, ``gap_cols``,
    ``gap_opens`` and its BAM CIGAR runs (``=``/``X``/``I``/``D``) ``runs``, a
    :class:`~gseek.dp.runs.LazyRuns` that leaves them on the device until gathered (most searches print
    none: ``runs.gather()`` gives ``(cigar, cigar_offsets)``).

    >>> from gseek import get_backend
    >>> from gseek.dp.scoring import Scoring
    >>> s = Scoring()
    >>> q, t = "TTGACGTTACGGATCCATTTGACTCGA", "AAGACGTTACCGGATCCATTTGACTAAA"
    >>> codes = np.concatenate([s.encode(q), s.encode(t)])
    >>> r = greedy_gapped(get_backend("cpu"), codes, [0], [27], [27], [28], [14], [15], 2, 4, 40, traceback=True)
    >>> [int(r[k][0]) for k in ("score", "q_start", "q_end", "t_start", "t_end")]
    [39, 2, 24, 2, 25]
    >>> [(int(o), int(n)) for o, n in zip(r["ops"], r["op_len"])]  # 7 columns, a target base against a gap, 15
    [(0, 7), (2, 1), (0, 15)]
    """
    n = len(q_len)
    q_off, q_len, t_off, t_len, q_pos, t_pos = seed_arrays(q_off, q_len, t_off, t_len, q_pos, t_pos)
    if not 0 <= int(xdrop) < (1 << 26) or match <= 0 or match % 2 or mismatch <= 0:
        raise OptionError(f"greedy extension: match {match} (even, > 0), mismatch cost {mismatch} (> 0) and "
                          f"xdrop {xdrop} (in [0, 2^26)) do not fit")
    names = ("score", "q_start", "q_end", "t_start", "t_end", "q_seed", "t_seed")
    out: dict[str, np.ndarray] = {k: np.zeros(n, np.int32) for k in (*names, "edges")}
    if traceback and rescore is not None:
        out.update({k: np.zeros(n, np.int32) for k in _FINAL})
        out["kept"] = np.zeros(n, bool)
        out["runs"] = LazyRuns.of(np.zeros(0, np.uint32), np.zeros(n + 1, np.int64))
    elif traceback:
        out["ops"], out["op_len"], out["op_offsets"] = np.zeros(0, np.uint8), np.zeros(0, np.int32), \
            np.zeros(n + 1, np.int64)
    if n == 0:
        return out
    xp = backend.xp
    clock = _Laps(backend, timings)
    memory = _memory(match, mismatch, xdrop)
    dev_codes = backend.asarray(codes, dtype=np.uint8)
    dev = [backend.asarray(a) for a in (q_off, q_len, t_off, t_len, q_pos, t_pos)]
    consts = (np.int32(match), np.int32(mismatch), np.int32(xdrop))
    width = np.full(n, RING, np.int64)
    dist = np.zeros(2 * n, np.int32)
    cells = np.zeros(2 * n, np.int64)
    todo = np.arange(n)
    while todo.size:  # seeds whose diagonals outgrew their ring: again, wider
        m = todo.size
        w = int(width[todo[0]])
        sub = dev if m == n else [a[backend.asarray(todo)] for a in dev]
        work_off = np.arange(m, dtype=np.int64) * (2 * w + memory)
        work = xp.empty(int(m * (2 * w + memory)), dtype=np.int32)
        block = xp.empty((10, m), dtype=np.int32)  # the eight results and the sides' distances: one download
        res, d_dev = [block[row] for row in range(8)], block[8:].reshape(-1)
        c_dev = xp.empty(2 * m, dtype=np.int64)
        backend.launch(greedy, *_kernel(backend, "greedy_gapped_score", m), dev_codes, *sub, np.int64(m), *consts,
                       np.int64(w), np.int64(memory), backend.asarray(work_off), work, *res, d_dev, c_dev)
        host = backend.to_host(block)
        for row, name in enumerate(names):
            out[name][todo] = host[row]
        edges = host[7]
        out["edges"][todo] = edges & (greedy.EDGE_LEFT | greedy.EDGE_RIGHT)
        pairs = np.stack([2 * todo, 2 * todo + 1], axis=1).ravel()
        dist[pairs] = host[8:].reshape(-1)
        cells[pairs] = backend.to_host(c_dev)
        grow = (edges & greedy.OVERFLOW) != 0
        todo = todo[grow]
        width[todo] = 4 * w
        del work
    clock.lap("greedy: score-only launches")
    if not traceback:
        return out
    rows = dist.astype(np.int64)
    room = 2 * (dist[0::2].astype(np.int64) + dist[1::2]) + 4
    need = np.cumsum(4 * (cells[0::2] + cells[1::2]) + 12 * (rows[0::2] + rows[1::2]) + 5 * room)
    parts, lo = [], 0
    while lo < n:  # seeds lo:hi, whose trace-back keeps to max_bytes (at least one)
        hi = n if max_bytes is None else max(lo + 1, int(np.searchsorted(
            need, (need[lo - 1] if lo else 0) + max_bytes, side="right")))
        m = hi - lo
        w = int(width[lo:hi].max())
        sub = [a[lo:hi] for a in dev]
        work_off = np.arange(m, dtype=np.int64) * (2 * w + memory)
        work = xp.empty(int(m * (2 * w + memory)), dtype=np.int32)
        tb_off = ragged.offsets(cells[2 * lo:2 * hi])
        row_off = ragged.offsets(rows[2 * lo:2 * hi])
        ops_off = ragged.offsets(room[lo:hi])
        tb = xp.empty(max(int(tb_off[-1]), 1), dtype=np.int32)
        row_lo = xp.empty(max(int(row_off[-1]), 1), dtype=np.int32)
        row_tb = xp.empty(max(int(row_off[-1]), 1), dtype=np.int64)
        ops_t = xp.empty(max(int(ops_off[-1]), 1), dtype=np.uint8)
        ops_n = xp.empty(max(int(ops_off[-1]), 1), dtype=np.int32)
        nops = xp.empty(m, dtype=np.int32)
        d_ops_off = backend.asarray(ops_off)
        backend.launch(greedy, *_kernel(backend, "greedy_gapped_fill", m), dev_codes, *sub, np.int64(m), *consts,
                       np.int64(w), np.int64(memory), backend.asarray(work_off), work,
                       backend.asarray(dist[2 * lo:2 * hi]), backend.asarray(tb_off[:-1]), tb,
                       backend.asarray(row_off[:-1]), row_lo, row_tb, d_ops_off, ops_t, ops_n, nops)
        del work, tb, row_lo, row_tb
        clock.lap("greedy: fill launches")
        ends = [backend.asarray(out[k][lo:hi]) for k in ("q_start", "q_end", "t_start", "t_end")]
        backend.launch(greedy, "greedy_reduce", m, dev_codes, *sub[:4], np.int64(m), *ends, d_ops_off, ops_t, ops_n,
                       nops)
        if rescore is None:
            t_h, n_h = backend.to_host(ops_t), backend.to_host(ops_n)
            counts = backend.to_host(nops).astype(np.int64)
            keep = ragged.offsets(counts)
            index = np.repeat(ops_off[:-1], counts) + (np.arange(int(keep[-1])) - np.repeat(keep[:-1], counts))
            parts.append((t_h[index], n_h[index], keep))
        else:
            parts.append(_rescored(backend, out, lo, hi, dev_codes, sub, ends, d_ops_off, ops_t, ops_n, nops, rescore))
        lo = hi
        clock.lap("greedy: gap edits" if rescore is None else "greedy: gap edits and scored again")
    if rescore is not None:
        out["runs"] = LazyRuns.concat(parts)
        return out
    out["ops"] = np.concatenate([p[0] for p in parts]).astype(np.uint8)
    out["op_len"] = np.concatenate([p[1] for p in parts]).astype(np.int32)
    out["op_offsets"] = ragged.offsets(np.concatenate([np.diff(p[2]) for p in parts]))
    return out


#: The re-scored results, per seed.
_FINAL = ("final_score", "final_q_start", "final_q_end", "final_t_start", "final_t_end", "matches", "mismatches",
          "gap_cols", "gap_opens")


def _rescored(backend, out, lo, hi, dev_codes, sub, ends, d_ops_off, ops_t, ops_n, nops, rescore):
    """Seeds ``lo:hi``'s edit scripts (on the device) scored again and split into BAM runs: their
    ``_FINAL`` values and ``kept`` into ``out``; returns their runs, left on the device (:class:`LazyRuns`)."""
    xp = backend.xp
    m = hi - lo
    reward, penalty, n_score, cutoff = rescore
    block = xp.empty((6, m), dtype=np.int32)  # score, ends, the first operation kept: one download
    final = [block[row] for row in range(6)]
    backend.launch(greedy, *_kernel(backend, "greedy_rescore", m), dev_codes, *sub[:4], np.int64(m), ends[0], ends[2],
                   d_ops_off, ops_t, ops_n, nops, np.int32(reward), np.int32(penalty), np.int32(n_score),
                   backend.asarray(np.asarray(cutoff[lo:hi], np.int64)), *final)
    stats = xp.zeros((5, m), dtype=np.int64)
    empty = xp.zeros(1, dtype=np.uint32)
    args = (dev_codes, sub[0], sub[2], np.int64(m), final[1], final[3], d_ops_off, ops_t, ops_n, final[5], nops)
    backend.launch(greedy, *_kernel(backend, "greedy_runs", m), *args, xp.zeros(m + 1, dtype=np.int64), empty, stats,
                   np.int32(0))
    counted = backend.to_host(stats)
    run_off = ragged.offsets(counted[0])
    runs = xp.empty(max(int(run_off[-1]), 1), dtype=np.uint32)
    backend.launch(greedy, *_kernel(backend, "greedy_runs", m), *args, backend.asarray(run_off), runs, stats,
                   np.int32(1))
    host = backend.to_host(block)[:5]
    kept = backend.to_host(nops) > 0
    for name, values in zip(_FINAL, (*host, *counted[1:])):
        out[name][lo:hi] = values
    out["kept"][lo:hi] = kept
    return LazyRuns.of(runs, run_off, None if isinstance(runs, np.ndarray) else backend)


class _Laps:
    """Adds the seconds since the last lap to ``timings[name]`` (the device synchronised first); nothing
    without ``timings``."""

    def __init__(self, backend: Backend, timings: dict[str, float] | None) -> None:
        self.backend, self.timings = backend, timings
        self.last = time.perf_counter()

    def lap(self, name: str) -> None:
        if self.timings is None:
            return
        self.backend.synchronize()
        now = time.perf_counter()
        self.timings[name] = self.timings.get(name, 0.0) + now - self.last
        self.last = now

"""Batched Needleman-Wunsch / Smith-Waterman / semiglobal DP with Gotoh gaps: the score and trace-back stages.

:func:`score_pairs` scores every pair of a batch; :func:`traceback_pairs`
also walks the trace-back and returns each pair's CIGAR runs; both take a
backend and arrays and run the ``dp`` kernel family (CUDA on the GPU, its
Numba twin on the CPU) with identical results. :class:`DPWorkspace` keeps the
device buffers between batches; :func:`identity_score_bound` is LazyRScan's
bound (score everything, trace back only what can pass). Kernel shapes,
scoring conventions and tie rules are in ``docs/alignment.md``.

>>> from gseek import get_backend
>>> from gseek.dp.scoring import Scoring
>>> s = Scoring()
>>> codes = np.concatenate([s.encode("ACGTACGT"), s.encode("ACGACGT")])
>>> score_pairs(get_backend("cpu"), codes, [0], [8], [8], [7], s, dp_flags("global", ()))["score"].tolist()
[7]
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from gseek import ragged
from gseek.backend import Backend, on_device
from gseek.errors import OptionError
from gseek.kernels import dp, dp_lanes

from .scoring import Scoring

__all__ = ["MODES", "FREE_END_NAMES", "DPWorkspace", "dp_flags", "score_pairs", "traceback_pairs",
           "identity_score_bound", "check_range", "WALK_FIELDS", "MAX_SCORE_REACH"]

MODES = ("global", "local", "semiglobal")
FREE_END_NAMES = ("query_start", "query_end", "target_start", "target_end")
_FREE_FLAGS = dict(zip(FREE_END_NAMES, (dp.FREE_QS, dp.FREE_QE, dp.FREE_TS, dp.FREE_TE)))



def dp_flags(mode: str, free_ends: tuple[str, ...]) -> int:
    """The DP kernels' flags of ``mode`` (semiglobal: with these free ends)."""
    if mode == "local":
        return dp.LOCAL
    if mode == "semiglobal":
        return sum(_FREE_FLAGS[name] for name in free_ends)
    return 0


def _sort_slots(q_len: np.ndarray, t_len: np.ndarray, strip: int) -> np.ndarray:
    """Slot order: longest work first, so a warp holds pairs of equal shape."""
    strips = -(-q_len // strip)
    # One packed key (strips, target length), descending, stable: the order
    # of np.lexsort((-t_len, -strips)) at 2/3 of its cost.
    return np.argsort(-((strips << 32) | t_len), kind="stable").astype(np.int64, copy=False)


def _group_offsets(sizes: np.ndarray) -> tuple[np.ndarray, int]:
    """Start of each group of LANES slots in an interleaved buffer whose slot k
    needs ``sizes[k]`` words: group g is ``LANES * max(sizes of g)`` words."""
    lanes = dp.LANES
    n_groups = -(-sizes.size // lanes)
    padded = np.zeros(n_groups * lanes, dtype=np.int64)
    padded[: sizes.size] = sizes
    offsets = ragged.offsets(padded.reshape(n_groups, lanes).max(axis=1) * lanes)
    return offsets, int(offsets[-1])


class DPWorkspace:
    """Device buffers of the DP stages, reused between batches.

    A buffer grows to the largest size asked for and is never shrunk, so a
    stream of batches allocates once. One workspace per job (a
    :class:`PairAligner` owns one); not shared between threads.

    >>> from gseek import get_backend
    >>> ws = DPWorkspace(get_backend("cpu"))
    >>> a = ws.get("tb", 10, np.uint32); b = ws.get("tb", 4, np.uint32)
    >>> a.size, b.size, np.shares_memory(a, b)
    (10, 4, True)
    """

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._buffers: dict[str, Any] = {}
        self._resident: dict[str, tuple[tuple[Any, ...], Any]] = {}

    def get(self, name: str, size: int, dtype: Any) -> Any:
        """A buffer of ``size`` elements (contents undefined)."""
        size = max(int(size), 1)
        buf = self._buffers.get(name)
        if buf is None or buf.size < size or buf.dtype != np.dtype(dtype):
            self._buffers.pop(name, None)  # free the old one first
            buf = self.backend.xp.empty(size + size // 8, dtype=dtype)
            self._buffers[name] = buf
        return buf[:size]

    def resident(self, name: str, owners: tuple[Any, ...], make: Any) -> Any:
        """``make()`` on the device, uploaded once and kept while the same ``owners``
        (compared by identity) ask for it: a target set and the scoring table stay
        on the device for every batch of a job instead of being sent again."""
        held = self._resident.get(name)
        if held is not None and len(held[0]) == len(owners) and all(a is b for a, b in zip(held[0], owners)):
            return held[1]
        self._resident.pop(name, None)
        array = self.backend.asarray(make())
        self._resident[name] = (owners, array)
        return array

    @property
    def nbytes(self) -> int:
        return sum(int(b.nbytes) for b in self._buffers.values())


def score_pairs(backend: Backend, codes: Any, q_off: np.ndarray, q_len: np.ndarray, t_off: np.ndarray,
                t_len: np.ndarray, scoring: Scoring, flags: int,
                workspace: DPWorkspace | None = None) -> dict[str, np.ndarray]:
    """Score every pair ``(codes[q_off:q_off+q_len], codes[t_off:t_off+t_len])``.

    Returns host arrays ``score``, ``q_end``, ``t_end`` (the end cell) and
    ``rerun`` (True where 16-bit strip scores overflowed and the pair was
    re-scored with 32 bits).
    """
    return _run_dp(backend, codes, q_off, q_len, t_off, t_len, scoring, flags, False,
                   workspace or DPWorkspace(backend))


WALK_FIELDS = ("q_start", "t_start", "matches", "mismatches", "gap_cols", "gap_opens")


#: Pairs with at least WARP_MIN_STRIPS strips of query rows (one warp pass
#: of 32 strips) and WARP_MIN_COLUMNS target columns are swept by one warp
#: each, as a wavefront of 32 strips, instead of one thread each: measured on
#: an H100 it is faster from 1.5 kb on (1.37 vs 1.15 TCUPS score-only; the
#: trace-back fill 2.3-4x), and 27x at 10 kb, where a batch of one-thread
#: slots cannot fill the device. A pass spends 31 of its n + 31 steps filling
#: and draining the wavefront, hence the column floor. The choice changes
#: speed and the trace-back layout, never a result.
WARP_MIN_STRIPS = 32
WARP_MIN_COLUMNS = 128


def _warp_mask(backend: Backend, q_len: np.ndarray, t_len: np.ndarray, strip: int) -> np.ndarray:
    """Slots for the warp kernels (none on a backend without them)."""
    if not getattr(backend, "warp_kernels", True):
        return np.zeros(q_len.size, bool)
    return (-(-q_len.astype(np.int64) // strip) >= WARP_MIN_STRIPS) & (t_len >= WARP_MIN_COLUMNS)


def _tb_words(q_len: np.ndarray, t_len: np.ndarray, warp: bool) -> np.ndarray:
    """Trace-back words of each slot: one per TB_STRIP rows and column; a
    warp's slot holds whole passes of 32 strips, each n + 31 steps long."""
    q_len, t_len = q_len.astype(np.int64), t_len.astype(np.int64)
    strips = -(-q_len // dp.TB_STRIP)
    if warp:
        return -(-strips // dp.WARP) * (t_len + dp.WARP - 1) * dp.WARP
    return strips * t_len


def _new_out(n: int, traceback: bool) -> dict[str, Any]:
    """The result arrays of ``n`` pairs, zero (with ``traceback``: the walk's and ``n_cigar``)."""
    out: dict[str, Any] = {k: np.zeros(n, np.int32) for k in ("score", "q_end", "t_end")}
    out["rerun"] = np.zeros(n, bool)
    if traceback:
        out.update({k: np.zeros(n, np.int32) for k in WALK_FIELDS})
        out["n_cigar"] = np.zeros(n, np.int64)
    return out


@on_device
def _run_dp(backend, codes, q_off, q_len, t_off, t_len, scoring, flags, traceback, ws):
    """One batch: score (and with ``traceback`` fill, walk, write CIGAR runs)."""
    q_off, q_len = np.asarray(q_off, np.int64), np.asarray(q_len, np.int32)
    t_off, t_len = np.asarray(t_off, np.int64), np.asarray(t_len, np.int32)
    n = q_len.size
    out = _new_out(n, traceback)
    if n == 0:
        if traceback:
            out.pop("n_cigar")
            out["cigar"], out["cigar_offsets"] = np.zeros(0, np.uint32), np.zeros(1, np.int64)
        return out
    check_range(q_len, t_len, scoring)
    strip = dp.TB_STRIP if traceback else dp.SCORE_STRIP
    order = _sort_slots(q_len.astype(np.int64), t_len.astype(np.int64), strip)
    if not traceback and backend.name == "cpu":
        order = order[~_lanes(backend, codes, q_off, q_len, t_off, t_len, scoring, flags, out)[0][order]]
        if order.size == 0:
            return out
    long = _warp_mask(backend, q_len[order], t_len[order], strip)
    table = ws.resident("table", (scoring,), lambda: scoring.table.ravel())
    codes = backend.asarray(codes, dtype=np.uint8)
    walks: list = []
    groups = [(order[long == warp], warp) for warp in (False, True)]
    tb16 = [None, None]
    if traceback:
        # One 16-bit trace-back buffer for both shapes (the walks read them after both fills),
        # so the workspace holds one batch's budget, not one per shape.
        sizes = [_tb_size(q_len[slots], t_len[slots], warp) for slots, warp in groups]
        buf = ws.get("tb16", sizes[0] + sizes[1], np.uint32)
        tb16 = [buf[: sizes[0]], buf[sizes[0]:]]
    for (slots, warp), tb in zip(groups, tb16):
        if slots.size:
            _run_slots(backend, codes, table, q_off, q_len, t_off, t_len, scoring, flags, traceback, ws, slots,
                       warp, tb, out, walks)
    if traceback:
        # Runs of pair p at cigar[offsets[p]:offsets[p + 1]], in pair order.
        offsets = ragged.offsets(out.pop("n_cigar"))
        cigar = ws.get("cigar", offsets[-1], np.uint32)
        for slots, walk, counts in walks:
            backend.launch(dp, "dp_walk", slots.size, *walk, counts, backend.asarray(offsets[slots]), cigar)
        out["cigar"] = backend.to_host(cigar)[: int(offsets[-1])].copy()  # never a view of the workspace
        out["cigar_offsets"] = offsets
    return out


def _lane_groups(q_off: np.ndarray, q_len: np.ndarray, t_len: np.ndarray, scoring: Scoring, flags: int,
                 tb_bytes: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs the CPU sweeps a SIMD lane each (:mod:`gseek.kernels.dp_lanes`), in groups of at most
    LANES pairs: (slots, group offsets, group splits), longest groups first. A group holds one
    query's pairs, or (local DNA) the last pairs of two queries, ``split`` pairs of the first.

    A pair is taken where no value of its DP can leave ``[-INT16_REACH, INT16_REACH]``: H lies
    between the all-gap path, ``-(2 gap_open + (m + n) gap_extend)`` (local: 0), and the best
    substitution times the shorter length; E and F are at most one gap open below it, a diagonal
    step one substitution off it. Targets longer than MAX_COLUMNS stay out (a local end column is
    kept in int16). With ``tb_bytes`` (trace-back), a group's trace-back words (its query rows by its
    longest target, :func:`_lane_tb_bytes`) stay within it: a longer pair stays out, two queries
    share a group only where it holds both.
    """
    lanes = dp_lanes.LANES
    table = scoring.table
    o, e = scoring.gap_open, scoring.gap_extend
    q_len, t_len = q_len.astype(np.int64), t_len.astype(np.int64)
    high = max(int(table.max()), 0) * np.minimum(q_len, t_len)
    low = 0 if flags & dp.LOCAL else 2 * o + (q_len + t_len) * e
    reach = np.maximum(high, low) + o + e + int(np.abs(table).max())
    fits = (reach <= dp_lanes.INT16_REACH) & (t_len <= dp_lanes.MAX_COLUMNS)
    if tb_bytes is not None:
        fits &= _lane_tb_bytes(q_len, t_len) <= tb_bytes
    taken = np.flatnonzero(fits)
    # one query's pairs side by side (longest targets first), cut every LANES pairs
    slots = taken[np.lexsort((-t_len[taken], q_len[taken], q_off[taken]))]
    if slots.size == 0:
        return slots, np.zeros(1, np.int64), np.zeros(0, np.int64)
    new_query = np.ones(slots.size, bool)
    new_query[1:] = (q_off[slots][1:] != q_off[slots][:-1]) | (q_len[slots][1:] != q_len[slots][:-1])
    run_start = np.flatnonzero(new_query)
    rank = np.arange(slots.size) - np.repeat(run_start, np.diff(np.append(run_start, slots.size)))
    starts = np.flatnonzero(rank % lanes == 0)
    sizes = np.diff(np.append(starts, slots.size))
    size_of = dict(zip(starts.tolist(), sizes.tolist()))
    chunks = [[a] for a, k in size_of.items() if k == lanes]
    part = sorted((a for a, k in size_of.items() if k < lanes), key=lambda a: -size_of[a])
    # a local query's last pairs share a group with another's (a profile row per pair of residues:
    # DNA, (alpha + 1)^2 rows at most): 60 sequences all-vs-all fill 92% of the lanes, not 64%
    two = flags & dp.LOCAL and (table.shape[0] + 1) ** 2 <= 64
    first, last = 0, len(part) - 1
    while first <= last:
        a, b = slots[part[first]], slots[part[last]]
        if two and first < last and size_of[part[first]] + size_of[part[last]] <= lanes and (
                tb_bytes is None or _lane_tb_bytes(max(q_len[a], q_len[b]), max(t_len[a], t_len[b])) <= tb_bytes):
            chunks.append([part[first], part[last]])
            last -= 1
        else:
            chunks.append([part[first]])
        first += 1
    # the longest sweeps first, so that the threads (dealt groups in turn) end together
    cost = [max(q_len[slots[a]] for a in c) * max(t_len[slots[a]] for a in c) for c in chunks]
    chunks = [chunks[c] for c in np.argsort(-np.array(cost), kind="stable")]
    slots = np.concatenate([slots[a:a + size_of[a]] for c in chunks for a in c])
    split = np.array([size_of[c[0]] for c in chunks], np.int64)
    return slots, ragged.offsets(np.array([sum(size_of[a] for a in c) for c in chunks])), split


def _lane_tb_bytes(q_len: Any, t_len: Any) -> Any:
    """Trace-back bytes of a lane group of ``q_len`` query rows and ``t_len`` columns (``dp_lanes.tb_words``)."""
    return -(-q_len // dp.TB_STRIP) * t_len * dp_lanes.LANES * 4


def _lanes(backend, codes, q_off, q_len, t_off, t_len, scoring, flags, out,
           tb_bytes: int | None = None) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Score the pairs :func:`_lane_groups` takes into ``out`` (their ``rerun`` stays False: their
    values never leave int16); with ``tb_bytes`` (a thread's trace-back buffer at most) also trace
    them back: their ``n_cigar`` and WALK_FIELDS into ``out``, and their runs as (slots, runs) pieces,
    the runs of each piece's slots laid end to end in that order. Returns (True where a pair was
    taken, the pieces)."""
    slots, group_off, group_split = _lane_groups(q_off, q_len, t_len, scoring, flags, tb_bytes)
    done = np.zeros(q_len.size, bool)
    if slots.size == 0:
        return done, []
    pad = np.int16(min(int(scoring.table.min()), -1))
    args = (codes, q_off, q_len, t_off, t_len, slots, group_off, group_split, scoring.table.ravel(),
            np.int32(scoring.table.shape[0]), np.int32(scoring.gap_open), np.int32(scoring.gap_extend),
            np.int32(flags), pad)
    threads = min(backend.threads, group_off.size - 1)
    outputs = (out["score"], out["q_end"], out["t_end"])
    if tb_bytes is None:
        def run(t):
            return dp_lanes.dp_score_lanes(*args, t, threads, *outputs)
    else:
        walk = np.zeros((7, q_len.size), np.int32)

        def run(t):
            return dp_lanes.dp_traceback_lanes(*args, np.int32(scoring.no_match_code), t, threads, *outputs, walk)
    if threads == 1:
        runs = [run(0)]
    else:  # groups dealt round-robin (longest first) to threads, each a call without the GIL
        with ThreadPoolExecutor(threads, thread_name_prefix="gseek-dp-lanes") as pool:
            runs = list(pool.map(run, range(threads)))
    done[slots] = True
    if tb_bytes is None:
        return done, []
    out["n_cigar"][slots] = walk[0][slots]
    for row, name in enumerate(WALK_FIELDS, 1):
        out[name][slots] = walk[row][slots]
    groups = [slots[group_off[g]:group_off[g + 1]] for g in range(group_off.size - 1)]
    return done, [(np.concatenate(groups[t::threads]), runs[t]) for t in range(threads)]


#: Every DP value must stay far from NEG_INF (-2^28): |score| < 2^27.
MAX_SCORE_REACH = 1 << 27


def check_range(q_len: np.ndarray, t_len: np.ndarray, scoring: Scoring) -> None:
    """Refuse pairs whose scores could leave the DP's range: a column costs or
    gains at most max(|substitution|, gap_open + gap_extend)."""
    column = max(int(np.abs(scoring.table).max()), scoring.gap_open + scoring.gap_extend)
    reach = int((q_len.astype(np.int64) + t_len).max()) * column
    if reach >= MAX_SCORE_REACH:
        raise OptionError(f"scores of up to {reach:,} in magnitude are possible with these scores and lengths "
                          f"(the DP's range is {MAX_SCORE_REACH:,}): lower the scores or shorten the sequences")


def _tb_layout(q_len: np.ndarray, t_len: np.ndarray, warp: bool) -> tuple[np.ndarray, int]:
    """Trace-back offsets of sorted slots (per group of LANES, or per slot for
    a warp's) and the words they need."""
    sizes = _tb_words(q_len, t_len, warp)
    if warp:
        off = ragged.offsets(sizes)
        return off, int(off[-1])
    return _group_offsets(sizes)


def _tb_size(q_len: np.ndarray, t_len: np.ndarray, warp: bool) -> int:
    return _tb_layout(q_len, t_len, warp)[1] if q_len.size else 0


def _run_slots(backend, codes, table, q_off, q_len, t_off, t_len, scoring, flags, traceback, ws, pending, warp,
               tb16, out, walks):
    """The slots ``pending`` (sorted), one thread each or (``warp``) one warp
    each: 16-bit sweep, 32-bit re-run of the flagged slots; with
    ``traceback`` also the first walk (run counts, start cells), whose
    arguments go to ``walks`` for the second. ``tb16``: the 16-bit fill's
    trace-back words (the re-run's come from the workspace)."""
    alpha = np.int32(scoring.table.shape[0])
    suffix, tag = ("_warp", "w") if warp else ("", "")
    for width in (16, 32):
        k = pending.size
        sq_off, sq_len = q_off[pending], q_len[pending]
        st_off, st_len = t_off[pending], t_len[pending]
        words = 1 if width == 16 else 2
        sizes = words * (st_len.astype(np.int64) + 1)
        if warp:
            grp_off = ragged.offsets(sizes)
            work_size = int(grp_off[-1])
        else:
            grp_off, work_size = _group_offsets(sizes)
        dev = [backend.asarray(a) for a in (sq_off, sq_len, st_off, st_len)]
        work = ws.get("work", work_size, np.int32)
        res = ws.get("res", 3 * k, np.int32).reshape(3, k)
        overflow = ws.get("overflow", k, np.uint8)
        args = [codes, *dev, np.int64(k), table, alpha, np.int32(scoring.gap_open), np.int32(scoring.gap_extend),
                np.int32(flags), backend.asarray(grp_off), work]
        threads = 32 * k if warp else k
        if traceback:
            tb_off, tb_size = _tb_layout(sq_len, st_len, warp)
            tb_off = backend.asarray(tb_off)
            tb = tb16 if width == 16 else ws.get(f"tb32{tag}", tb_size, np.uint32)
            assert tb.size >= tb_size
            backend.launch(dp, f"dp_fill{width}{suffix}", threads, *args, tb_off, tb, *res, overflow)
        else:
            backend.launch(dp, f"dp_score{width}{suffix}", threads, *args, *res, overflow)
        (score, q_end, t_end), ovf = backend.to_host(res), backend.to_host(overflow)
        done = ovf == 0 if width == 16 else np.ones(k, bool)
        idx = pending[done]
        out["score"][idx], out["q_end"][idx], out["t_end"][idx] = score[done], q_end[done], t_end[done]
        if width == 32:
            out["rerun"][idx] = True
        if traceback:
            # Slots left for the 32-bit run walk nothing: their end cell becomes (0, 0).
            ends = backend.asarray(np.where(done, np.stack([q_end, t_end]), 0).astype(np.int32))
            walk = [codes, *dev, np.int64(k), np.int32(flags), np.int32(scoring.no_match_code), np.int32(warp), tb_off, tb,
                    ends[0], ends[1]]
            stats = ws.get(f"walk{width}", 7 * k, np.int32).reshape(7, k)
            backend.launch(dp, "dp_walk_count", k, *walk, *stats)
            stats = backend.to_host(stats)
            out["n_cigar"][idx] = stats[0][done]
            for row, name in enumerate(WALK_FIELDS, 1):
                out[name][idx] = stats[row][done]
            walks.append((pending, walk, backend.asarray(np.where(done, stats[0], 0).astype(np.int32))))
        pending = pending[~done]
        if pending.size == 0:
            break


def traceback_pairs(backend: Backend, codes: Any, q_off: np.ndarray, q_len: np.ndarray, t_off: np.ndarray,
                    t_len: np.ndarray, scoring: Scoring, flags: int, max_bytes: int = 256 << 20,
                    workspace: DPWorkspace | None = None) -> dict[str, Any]:
    """Align every pair with trace-back, in batches whose 4-bit trace-back
    matrices fit ``max_bytes``. On the CPU, the pairs whose values stay in int16
    go first, a SIMD lane each (:mod:`gseek.kernels.dp_lanes`), where their lane
    group's trace-back fits a thread's share of ``max_bytes`` (one group a
    thread at a time); the one-pair kernels take the others. The results are
    the same either way.

    Returns host arrays ``score``, ``q_start``, ``q_end``, ``t_start``,
    ``t_end``, ``matches``, ``mismatches``, ``gap_cols``, ``gap_opens``,
    ``rerun``, and the CIGARs of all pairs as one array: pair p's BAM-encoded
    runs (``len << 4 | op``) are ``cigar[cigar_offsets[p]:cigar_offsets[p + 1]]``.
    """
    ws = workspace or DPWorkspace(backend)
    q_off, t_off = np.asarray(q_off, np.int64), np.asarray(t_off, np.int64)
    q_len, t_len = np.asarray(q_len, np.int64), np.asarray(t_len, np.int64)
    n = q_len.size
    rest = np.arange(n)
    lanes: dict[str, Any] = {}
    pieces: list[tuple[np.ndarray, np.ndarray]] = []
    if backend.name == "cpu" and n:
        # every pair that fits swept a SIMD lane each, a group's trace-back a thread's share of max_bytes
        check_range(q_len, t_len, scoring)
        lanes = _new_out(n, True)
        done, pieces = _lanes(backend, codes, q_off, q_len.astype(np.int32), t_off, t_len.astype(np.int32), scoring,
                              flags, lanes, max(1, max_bytes // backend.threads))
        rest = np.flatnonzero(~done)
    long = _warp_mask(backend, q_len[rest], t_len[rest], dp.TB_STRIP)
    cost = np.cumsum(4 * np.where(long, _tb_words(q_len[rest], t_len[rest], True),
                                  _tb_words(q_len[rest], t_len[rest], False)) + 64)
    parts = []
    start = 0
    while start < rest.size:
        before = cost[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(cost, before + max_bytes, side="right")))
        sl = rest[start:stop]
        parts.append(_run_dp(backend, codes, q_off[sl], q_len[sl], t_off[sl], t_len[sl], scoring, flags, True, ws))
        start = stop
    if rest.size < n:
        return _merged(lanes, pieces, rest, parts)
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return _run_dp(backend, codes, q_off, q_len, t_off, t_len, scoring, flags, True, ws)
    out = {key: np.concatenate([p[key] for p in parts]) for key in parts[0] if key not in ("cigar", "cigar_offsets")}
    out["cigar"], out["cigar_offsets"] = ragged.concat([(p["cigar"], p["cigar_offsets"]) for p in parts])
    return out


def _merged(out: dict[str, Any], pieces: list[tuple[np.ndarray, np.ndarray]], rest: np.ndarray,
            parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The lanes' results (``out``, every pair's arrays, and their runs in ``pieces``) with the
    batches of the one-pair kernels (``parts``, of the pairs ``rest`` in order) in pair order."""
    at = 0
    for part in parts:
        idx = rest[at:at + part["score"].size]
        at += idx.size
        for key in out:
            if key != "n_cigar":
                out[key][idx] = part[key]
        out["n_cigar"][idx] = np.diff(part["cigar_offsets"])
        pieces = pieces + [(idx, part["cigar"])]
    offsets = ragged.offsets(out.pop("n_cigar"))
    cigar = np.empty(int(offsets[-1]), np.uint32)
    for idx, runs in pieces:
        counts = offsets[idx + 1] - offsets[idx]
        cigar[np.repeat(offsets[idx] - ragged.offsets(counts)[:-1], counts) + np.arange(runs.size)] = runs
    out["cigar"], out["cigar_offsets"] = cigar, offsets
    return out


def identity_score_bound(min_identity: float, q_len: np.ndarray, t_len: np.ndarray, mode: str,
                         scoring: Scoring) -> np.ndarray:
    """Lowest score an alignment of identity >= ``min_identity`` can have, per pair.

    Identity is matches / alignment columns. With M matches, at most
    M (1 - F) / F other columns, each scoring at least ``worst`` (the lowest
    substitution score or one column of a fresh gap, ``-(gap_open +
    gap_extend)``), so score >= M * c with c = match_min + (1 - F) / F * worst,
    minimised over the possible M (global: M >= F * max(m, n)). Pairs scoring
    below it cannot pass, so lazy trace-back skips them.

    >>> identity_score_bound(0.97, np.array([100]), np.array([100]), "global", Scoring()).tolist()
    [173]
    """
    F = float(min_identity)
    q_len, t_len = np.asarray(q_len, np.int64), np.asarray(t_len, np.int64)
    if F <= 0:
        return np.full(q_len.size, np.iinfo(np.int64).min // 4, dtype=np.int64)
    table = scoring.table
    codes = [c for c in range(table.shape[0]) if c != scoring.no_match_code]
    match_min = int(min(table[c, c] for c in codes))
    worst = min(int(table.min()), -(scoring.gap_open + scoring.gap_extend))
    c = match_min + (1.0 - F) / F * worst
    m_max = np.minimum(q_len, t_len)
    m_min = np.ceil(F * np.maximum(q_len, t_len) - 1e-9).astype(np.int64) if mode == "global" else np.ones_like(m_max)
    bound = np.where(c >= 0, c * m_min, c * m_max)
    bound = np.floor(bound + 1e-9).astype(np.int64)
    impossible = m_min > m_max
    bound[impossible] = np.iinfo(np.int64).max // 4
    return bound

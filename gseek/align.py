"""Batched pairwise alignment: global (NW), local (SW), semiglobal; Gotoh gaps.

One configured :class:`PairAligner` per job, struct-of-arrays results whose
rows print as tab-separated lines. Scoring conventions, tie-breaking and the
output columns are in ``docs/alignment.md``; in short: a gap of length k costs
``gap_open + k * gap_extend`` (BLAST+), coordinates are 0-based half-open,
rows index the query and the CIGAR is the query's (``I`` consumes the query,
``D`` the target).

>>> aligner = PairAligner(mode="global", device="cpu", threads=1)
>>> aligner
PairAligner(device='cpu')
>>> aligner.align("ACGTACGT", "ACGACGT").score
7
>>> hit = PairAligner(mode="local", traceback=True, device="cpu").align("TTTACGTACGTTT", "GGACGTCCGTGG")
>>> print(hit)
q0	t0	11	3	11	2	10	13	12	0.8750	7	1	0	0	4=1X3=
>>> hit.cigar, hit.identity
('4=1X3=', 0.875)

The stages (:func:`score_pairs`, :func:`traceback_pairs`, :func:`xdrop_ungapped`,
:func:`xdrop_gapped`) take a backend and arrays and run the ``dp`` kernel
family (CUDA on the GPU, its Numba twin on the CPU) with identical results.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from gseek.kernels import dp

from .backend import Backend, get_backend, numba_guard, on_device
from .errors import OptionError
from ._tsvfmt import TsvFormatter, byte_encoding
from .seqio import SequenceBatch, open_output

__all__ = [
    "Scoring",
    "PairAligner",
    "AlignmentResults",
    "Alignment",
    "AlignmentWriter",
    "score_pairs",
    "traceback_pairs",
    "DPWorkspace",
    "CigarStrings",
    "cigar_strings",
    "xdrop_ungapped",
    "xdrop_gapped",
    "identity_score_bound",
    "MODES",
    "SCORING_PRESETS",
]

MODES = ("global", "local", "semiglobal")
FREE_END_NAMES = ("query_start", "query_end", "target_start", "target_end")
_FREE_FLAGS = dict(zip(FREE_END_NAMES, (dp.FREE_QS, dp.FREE_QE, dp.FREE_TS, dp.FREE_TE)))
_CIGAR_LETTERS = {dp.OP_I: "I", dp.OP_D: "D", dp.OP_EQ: "=", dp.OP_X: "X"}
_DNA_LETTERS = "ACGTN"


# --------------------------------------------------------------------------- scoring


@dataclass(frozen=True)
class Scoring:
    """Substitution scores and gap costs.

    DNA (no ``matrix``): ``match`` / ``mismatch`` scores over A C G T; every
    ambiguous base (N and the IUPAC letters, read as N) scores ``n_score``
    against anything, itself included (default: ``mismatch``), and is never a
    match (``X`` in the CIGAR). ``matrix`` names a Biopython substitution
    matrix (``Bio.Align.substitution_matrices.load``), e.g. ``"BLOSUM62"``.
    Gap costs are non-negative: a gap of length k scores
    ``-(gap_open + k * gap_extend)``; ``gap_open=0`` is a linear gap.

    >>> Scoring().gap_cost(3)
    11
    >>> Scoring(matrix="BLOSUM62", gap_open=11, gap_extend=1).score("W", "W")
    11
    """

    match: int = 2
    mismatch: int = -3
    gap_open: int = 5
    gap_extend: int = 2
    matrix: str | None = None
    n_score: int | None = None

    def __post_init__(self) -> None:
        for name in ("match", "mismatch", "gap_open", "gap_extend"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise OptionError(f"{name} must be an integer, not {value!r}")
        if self.n_score is not None and not isinstance(self.n_score, (int, np.integer)):
            raise OptionError(f"n_score must be an integer, not {self.n_score!r}")
        if self.gap_open < 0 or self.gap_extend < 0:
            raise OptionError(
                f"gap costs must be >= 0 (gap_open={self.gap_open}, gap_extend={self.gap_extend}); "
                "a gap of length k scores -(gap_open + k*gap_extend)")
        if self.gap_open + self.gap_extend == 0:
            raise OptionError("gap_open + gap_extend must be > 0 (free gaps make every alignment tie)")
        if self.matrix is None and self.match <= 0:
            raise OptionError(f"match must be > 0, not {self.match}")
        self._build()

    def _build(self) -> None:
        if self.matrix is None:
            alphabet = _DNA_LETTERS
            n_score = self.mismatch if self.n_score is None else self.n_score
            table = np.full((5, 5), self.mismatch, dtype=np.int32)
            np.fill_diagonal(table, self.match)
            table[4, :] = table[:, 4] = n_score
            no_match = 4
            lookup = np.full(256, 255, dtype=np.uint8)
            for code, letter in enumerate("ACGT"):
                lookup[ord(letter)] = lookup[ord(letter.lower())] = code
            lookup[ord("U")] = lookup[ord("u")] = 3
            for letter in "RYSWKMBDHVN":
                lookup[ord(letter)] = lookup[ord(letter.lower())] = 4
        else:
            from Bio.Align import substitution_matrices

            try:
                matrix = substitution_matrices.load(self.matrix)
            except (FileNotFoundError, ValueError, OSError):
                names = ", ".join(substitution_matrices.load())
                raise OptionError(f"unknown substitution matrix {self.matrix!r} (Biopython has: {names})") from None
            values = np.asarray(matrix, dtype=np.float64)
            if not np.array_equal(values, np.round(values)):
                raise OptionError(f"matrix {self.matrix} has non-integer scores; gseek needs integer scores")
            alphabet = str(matrix.alphabet)
            table = values.astype(np.int32)
            no_match = -1
            lookup = np.full(256, 255, dtype=np.uint8)
            for code, letter in enumerate(alphabet):
                lookup[ord(letter)] = code
                if letter.isalpha():
                    lookup[ord(letter.lower())] = code
        object.__setattr__(self, "alphabet", alphabet)
        object.__setattr__(self, "table", np.ascontiguousarray(table))
        object.__setattr__(self, "no_match_code", no_match)
        object.__setattr__(self, "lookup", lookup)

    @property
    def is_dna(self) -> bool:
        return self.matrix is None

    def gap_cost(self, length: int) -> int:
        """Cost of one gap of ``length`` columns."""
        return self.gap_open + length * self.gap_extend if length > 0 else 0

    def score(self, a: str, b: str) -> int:
        """Score of residue ``a`` against residue ``b``."""
        return int(self.table[self.encode(a)[0], self.encode(b)[0]])

    def encode(self, seq: str | bytes, where: str = "sequence") -> np.ndarray:
        """Codes of ``seq`` in this scoring's alphabet; unknown residues raise."""
        raw = np.frombuffer(seq.encode("latin-1") if isinstance(seq, str) else bytes(seq), dtype=np.uint8)
        codes = self.lookup[raw]
        if (codes == 255).any():
            pos = int(np.argmax(codes == 255))
            raise OptionError(f"{where}: residue {chr(raw[pos])!r} at position {pos + 1} is not in the "
                              f"alphabet of {self._what()} ({self.alphabet})")
        return codes

    def _what(self) -> str:
        return f"matrix {self.matrix}" if self.matrix else "DNA scoring"

    def equal_residues(self, a: int, b: int) -> bool:
        return a == b and a != self.no_match_code


#: Named scoring schemes; overrides apply on top.
SCORING_PRESETS: dict[str, dict[str, Any]] = {
    "dna": {},  # match 2, mismatch -3, gap 5 + 2k: blastn's defaults
    "megablast": {"match": 1, "mismatch": -2, "gap_open": 2, "gap_extend": 1},
    "edit": {"match": 1, "mismatch": -1, "gap_open": 0, "gap_extend": 1},
    "blosum62": {"matrix": "BLOSUM62", "gap_open": 11, "gap_extend": 1},
    "blosum50": {"matrix": "BLOSUM50", "gap_open": 10, "gap_extend": 2},
}


# --------------------------------------------------------------------------- stages


def _flags(mode: str, free_ends: tuple[str, ...]) -> int:
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
    per_group = padded.reshape(n_groups, lanes).max(axis=1) * lanes
    offsets = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(per_group, out=offsets[1:])
    return offsets, int(offsets[-1])


def _i32(x: Any) -> np.int32:
    return np.int32(x)


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

    def get(self, name: str, size: int, dtype: Any) -> Any:
        """A buffer of ``size`` elements (contents undefined)."""
        size = max(int(size), 1)
        buf = self._buffers.get(name)
        if buf is None or buf.size < size or buf.dtype != np.dtype(dtype):
            self._buffers.pop(name, None)  # free the old one first
            buf = self.backend.xp.empty(size + size // 8, dtype=dtype)
            self._buffers[name] = buf
        return buf[:size]

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


_WALK_FIELDS = ("q_start", "t_start", "matches", "mismatches", "gap_cols", "gap_opens")


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


@on_device
def _run_dp(backend, codes, q_off, q_len, t_off, t_len, scoring, flags, traceback, ws):
    """One batch: score (and with ``traceback`` fill, walk, write CIGAR runs)."""
    q_off, q_len = np.asarray(q_off, np.int64), np.asarray(q_len, np.int32)
    t_off, t_len = np.asarray(t_off, np.int64), np.asarray(t_len, np.int32)
    n = q_len.size
    out: dict[str, Any] = {k: np.zeros(n, np.int32) for k in ("score", "q_end", "t_end")}
    out["rerun"] = np.zeros(n, bool)
    if traceback:
        out.update({k: np.zeros(n, np.int32) for k in _WALK_FIELDS})
        out["n_cigar"] = np.zeros(n, np.int64)
    if n == 0:
        if traceback:
            out.pop("n_cigar")
            out["cigar"], out["cigar_offsets"] = np.zeros(0, np.uint32), np.zeros(1, np.int64)
        return out
    _check_range(q_len, t_len, scoring)
    strip = dp.TB_STRIP if traceback else dp.SCORE_STRIP
    order = _sort_slots(q_len.astype(np.int64), t_len.astype(np.int64), strip)
    long = _warp_mask(backend, q_len[order], t_len[order], strip)
    table = backend.asarray(scoring.table.ravel())
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
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(out.pop("n_cigar"), out=offsets[1:])
        cigar = ws.get("cigar", offsets[-1], np.uint32)
        for slots, walk, counts in walks:
            backend.launch(dp, "dp_walk", slots.size, *walk, counts, backend.asarray(offsets[slots]), cigar)
        out["cigar"] = backend.to_host(cigar)[: int(offsets[-1])].copy()  # never a view of the workspace
        out["cigar_offsets"] = offsets
    return out


#: Every DP value must stay far from NEG_INF (-2^28): |score| < 2^27.
MAX_SCORE_REACH = 1 << 27


def _check_range(q_len: np.ndarray, t_len: np.ndarray, scoring: Scoring) -> None:
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
        off = _prefix(sizes)
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
    alpha = _i32(scoring.table.shape[0])
    suffix, tag = ("_warp", "w") if warp else ("", "")
    for width in (16, 32):
        k = pending.size
        sq_off, sq_len = q_off[pending], q_len[pending]
        st_off, st_len = t_off[pending], t_len[pending]
        words = 1 if width == 16 else 2
        sizes = words * (st_len.astype(np.int64) + 1)
        if warp:
            grp_off = _prefix(sizes)
            work_size = int(grp_off[-1])
        else:
            grp_off, work_size = _group_offsets(sizes)
        dev = [backend.asarray(a) for a in (sq_off, sq_len, st_off, st_len)]
        work = ws.get("work", work_size, np.int32)
        res = ws.get("res", 3 * k, np.int32).reshape(3, k)
        overflow = ws.get("overflow", k, np.uint8)
        args = [codes, *dev, np.int64(k), table, alpha, _i32(scoring.gap_open), _i32(scoring.gap_extend),
                _i32(flags), backend.asarray(grp_off), work]
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
            walk = [codes, *dev, np.int64(k), _i32(flags), _i32(scoring.no_match_code), _i32(warp), tb_off, tb,
                    ends[0], ends[1]]
            stats = ws.get(f"walk{width}", 7 * k, np.int32).reshape(7, k)
            backend.launch(dp, "dp_walk_count", k, *walk, *stats)
            stats = backend.to_host(stats)
            out["n_cigar"][idx] = stats[0][done]
            for row, name in enumerate(_WALK_FIELDS, 1):
                out[name][idx] = stats[row][done]
            walks.append((pending, walk, backend.asarray(np.where(done, stats[0], 0).astype(np.int32))))
        pending = pending[~done]
        if pending.size == 0:
            break


def traceback_pairs(backend: Backend, codes: Any, q_off: np.ndarray, q_len: np.ndarray, t_off: np.ndarray,
                    t_len: np.ndarray, scoring: Scoring, flags: int, max_bytes: int = 256 << 20,
                    workspace: DPWorkspace | None = None) -> dict[str, Any]:
    """Align every pair with trace-back, in batches whose 4-bit trace-back
    matrices fit ``max_bytes``.

    Returns host arrays ``score``, ``q_start``, ``q_end``, ``t_start``,
    ``t_end``, ``matches``, ``mismatches``, ``gap_cols``, ``gap_opens``,
    ``rerun``, and the CIGARs of all pairs as one array: pair p's BAM-encoded
    runs (``len << 4 | op``) are ``cigar[cigar_offsets[p]:cigar_offsets[p + 1]]``.
    """
    ws = workspace or DPWorkspace(backend)
    q_off, t_off = np.asarray(q_off, np.int64), np.asarray(t_off, np.int64)
    q_len, t_len = np.asarray(q_len, np.int64), np.asarray(t_len, np.int64)
    n = q_len.size
    long = _warp_mask(backend, q_len, t_len, dp.TB_STRIP)
    cost = np.cumsum(4 * np.where(long, _tb_words(q_len, t_len, True), _tb_words(q_len, t_len, False)) + 64)
    parts = []
    start = 0
    while start < n:
        before = cost[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(cost, before + max_bytes, side="right")))
        sl = slice(start, stop)
        parts.append(_run_dp(backend, codes, q_off[sl], q_len[sl], t_off[sl], t_len[sl], scoring, flags, True, ws))
        start = stop
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return _run_dp(backend, codes, q_off, q_len, t_off, t_len, scoring, flags, True, ws)
    out = {key: np.concatenate([p[key] for p in parts]) for key in parts[0] if key != "cigar_offsets"}
    shift = np.cumsum([0] + [p["cigar_offsets"][-1] for p in parts[:-1]])
    out["cigar_offsets"] = np.concatenate([[0]] + [p["cigar_offsets"][1:] + d for p, d in zip(parts, shift)])
    return out


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
                       backend.asarray(scoring.table.ravel()), _i32(scoring.table.shape[0]), _i32(xdrop), *res)
    score, q_start, q_end = (backend.to_host(r) for r in res)
    return {"score": score, "q_start": q_start, "q_end": q_end}


def _prefix(sizes: np.ndarray) -> np.ndarray:
    """Start of each item in a buffer of ``sizes`` (n + 1 offsets)."""
    out = np.zeros(sizes.size + 1, np.int64)
    np.cumsum(sizes, out=out[1:])
    return out


@on_device
def xdrop_gapped(backend: Backend, codes: Any, q_off: np.ndarray, q_len: np.ndarray, t_off: np.ndarray,
                 t_len: np.ndarray, q_pos: np.ndarray, t_pos: np.ndarray, scoring: Scoring, xdrop: int,
                 traceback: bool = True) -> dict[str, np.ndarray]:
    """BLAST-style gapped X-drop extension of seed pairs ``(q_pos, t_pos)``
    left and right (rules in ``docs/alignment.md``).

    The seed pair is aligned; each side is a row-by-row DP from the seed
    that drops cells more than ``xdrop`` below the best score so far and
    ends at its best cell. Returns host arrays ``score``, ``q_start``,
    ``q_end``, ``t_start``, ``t_end`` and, with ``traceback``, ``matches``,
    ``mismatches``, ``gap_cols``, ``gap_opens`` and the CIGARs (pair p's
    BAM-encoded runs at ``cigar[cigar_offsets[p]:cigar_offsets[p + 1]]``).
    Trace-back is count -> prefix sum -> fill: a score-only sweep sizes the
    trace-back bytes, a second sweep stores them and counts CIGAR runs, a
    walk writes the runs.

    >>> from gseek import get_backend
    >>> s = Scoring()
    >>> q, t = "TTGACGTTACGGATCCATTT", "AAGACGTTACCGGATCCAAA"
    >>> codes = np.concatenate([s.encode(q), s.encode(t)])
    >>> r = xdrop_gapped(get_backend("cpu"), codes, [0], [20], [20], [20], [4], [4], s, 20)
    >>> [int(r[k][0]) for k in ("score", "q_start", "q_end", "t_start", "t_end")]
    [23, 2, 17, 2, 18]
    >>> print(cigar_strings(r["cigar"], r["cigar_offsets"])[0])
    7=1D8=
    """
    n = len(q_len)
    q_off, t_off = np.asarray(q_off, np.int64), np.asarray(t_off, np.int64)
    q_len, t_len = np.asarray(q_len, np.int32), np.asarray(t_len, np.int32)
    q_pos, t_pos = np.asarray(q_pos, np.int32), np.asarray(t_pos, np.int32)
    bad = (q_pos < 0) | (q_pos >= q_len) | (t_pos < 0) | (t_pos >= t_len)
    if bad.any():
        k = int(np.argmax(bad))
        raise OptionError(f"seed {k}: (q_pos, t_pos) = ({q_pos[k]}, {t_pos[k]}) is not a residue pair of "
                          f"lengths ({q_len[k]}, {t_len[k]})")
    if not 0 <= int(xdrop) < (1 << 26):
        raise OptionError(f"xdrop must be in [0, 2^26), not {xdrop}")
    names = ("score", "q_start", "q_end", "t_start", "t_end")
    out: dict[str, np.ndarray] = {k: np.zeros(n, np.int32) for k in names}
    if traceback:
        out.update({k: np.zeros(n, np.int32) for k in ("matches", "mismatches", "gap_cols", "gap_opens")})
        out["cigar"], out["cigar_offsets"] = np.zeros(0, np.uint32), np.zeros(n + 1, np.int64)
    if n == 0:
        return out
    xp = backend.xp
    width = np.maximum(t_pos, t_len - t_pos - 1).astype(np.int64) + 1
    work_off = _prefix(2 * width)
    dev = [backend.asarray(a) for a in (q_off, q_len, t_off, t_len, q_pos, t_pos)]
    args = [backend.asarray(codes, dtype=np.uint8), *dev, np.int64(n), backend.asarray(scoring.table.ravel()),
            _i32(scoring.table.shape[0]), _i32(scoring.gap_open), _i32(scoring.gap_extend), _i32(xdrop)]
    work = xp.empty(int(work_off[-1]), dtype=np.int32)
    res = xp.empty((5, n), dtype=np.int32)
    cells, rows = xp.empty(n, dtype=np.int64), xp.empty(n, dtype=np.int32)
    backend.launch(dp, "xdrop_gapped_score", n, *args, backend.asarray(work_off), work, *res, cells, rows)
    host = backend.to_host(res)
    for row, name in enumerate(names):
        out[name] = host[row].copy()
    if not traceback:
        return out
    tb_off, row_off = _prefix(backend.to_host(cells)), _prefix(backend.to_host(rows))
    tb = xp.empty(max(int(tb_off[-1]), 1), dtype=np.uint8)
    row_start = xp.empty(max(int(row_off[-1]), 1), dtype=np.int32)
    row_tb = xp.empty(max(int(row_off[-1]), 1), dtype=np.int64)
    ends = [res[1], res[2], res[3], res[4]]
    stats = xp.empty((5, n), dtype=np.int32)
    tb_off_d, row_off_d = backend.asarray(tb_off[:-1]), backend.asarray(row_off[:-1])
    backend.launch(dp, "xdrop_gapped_fill", n, *args, _i32(scoring.no_match_code), backend.asarray(work_off), work,
                   *ends, tb_off_d, tb, row_off_d, row_start, row_tb, *stats)
    host = backend.to_host(stats)
    for row, name in enumerate(("matches", "mismatches", "gap_cols", "gap_opens"), 1):
        out[name] = host[row].copy()
    cig_off = _prefix(host[0].astype(np.int64))
    cigar = xp.empty(max(int(cig_off[-1]), 1), dtype=np.uint32)
    backend.launch(dp, "xdrop_gapped_walk", n, args[0], dev[0], dev[2], dev[4], dev[5], np.int64(n),
                   _i32(scoring.no_match_code), *ends, tb, row_off_d, row_start, row_tb, stats[0],
                   backend.asarray(cig_off[:-1]), cigar)
    out["cigar"] = backend.to_host(cigar)[: int(cig_off[-1])].copy()
    out["cigar_offsets"] = cig_off
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


# --------------------------------------------------------------------------- results


_TSV_COLUMNS = ("qname", "tname", "score", "qstart", "qend", "tstart", "tend", "qlen", "tlen", "identity",
                "matches", "mismatches", "gapopens", "gaps", "cigar")
_SCORE_COLUMNS = ("qname", "tname", "score", "qend", "tend", "qlen", "tlen")
#: ``outfmt 6`` without column names: BLAST's first ten columns, then the raw score.
OUTFMT6_DEFAULT = ("qseqid", "sseqid", "pident", "length", "mismatch", "gapopen", "qstart", "qend", "sstart",
                   "send", "score")
OUTFMT6_KEYWORDS = ("qseqid", "sseqid", "pident", "nident", "length", "mismatch", "gapopen", "gaps", "qstart",
                    "qend", "sstart", "send", "qlen", "slen", "score", "cigar")


def parse_outfmt(outfmt: str | None, traceback: bool) -> tuple[str, ...]:
    """Columns for ``outfmt``: None (gseek TSV), ``"6"`` or ``"6 col col ..."``.

    >>> parse_outfmt("6 qseqid sseqid score", True)
    ('qseqid', 'sseqid', 'score')
    """
    if outfmt is None or str(outfmt).strip() in ("", "tsv"):
        return _TSV_COLUMNS if traceback else _SCORE_COLUMNS
    words = str(outfmt).split()
    if words[0] != "6":
        raise OptionError(f"outfmt must be 'tsv', '6' or '6 COLUMNS...', not {outfmt!r}")
    columns = tuple(words[1:]) or OUTFMT6_DEFAULT
    for col in columns:
        if col not in OUTFMT6_KEYWORDS:
            raise OptionError(f"unknown outfmt 6 column {col!r} (known: {' '.join(OUTFMT6_KEYWORDS)})")
    return columns


#: outfmt 6 columns that need the trace-back (asking for them turns it on).
NEEDS_TRACEBACK = {"pident", "nident", "length", "mismatch", "gapopen", "gaps", "qstart", "sstart", "cigar"}


@dataclass(frozen=True, eq=False)
class AlignmentResults:
    """Alignments of many pairs as struct-of-arrays; ``results[i]`` is a row view.

    ``query``/``target`` index ``query_names``/``target_names``; coordinates
    are 0-based half-open. Trace-back fields are None for score-only results.
    """

    query_names: Sequence[str]
    target_names: Sequence[str]
    query: np.ndarray
    target: np.ndarray
    score: np.ndarray
    q_end: np.ndarray
    t_end: np.ndarray
    q_len: np.ndarray
    t_len: np.ndarray
    q_start: np.ndarray | None = None
    t_start: np.ndarray | None = None
    matches: np.ndarray | None = None
    mismatches: np.ndarray | None = None
    gap_cols: np.ndarray | None = None
    gap_opens: np.ndarray | None = None
    cigars: CigarStrings | None = None
    columns: tuple[str, ...] = ()

    def __len__(self) -> int:
        return int(self.score.size)

    def __getitem__(self, i: int) -> Alignment:
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        return Alignment(self, i % len(self) if len(self) else i)

    def __iter__(self) -> Iterator[Alignment]:
        return (Alignment(self, i) for i in range(len(self)))

    def __repr__(self) -> str:
        kind = "trace-back" if self.traceback else "score-only"
        return f"<AlignmentResults {len(self)} pairs, {kind}>"

    @property
    def traceback(self) -> bool:
        return self.cigars is not None

    @property
    def identity(self) -> np.ndarray:
        """matches / alignment columns (0 for an empty alignment)."""
        length = self.alignment_length
        return np.where(length > 0, self.matches / np.maximum(length, 1), 0.0)

    @property
    def alignment_length(self) -> np.ndarray:
        return self.matches + self.mismatches + self.gap_cols

    def header(self) -> str:
        return "\t".join(self.columns)

    def lines(self) -> Iterator[str]:
        for i in range(len(self)):
            yield str(Alignment(self, i))

    def take(self, keep: np.ndarray) -> AlignmentResults:
        """The rows where ``keep`` (bool mask or indices)."""
        idx = np.flatnonzero(keep) if np.asarray(keep).dtype == bool else np.asarray(keep)
        fields = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray):
                value = value[idx]
            elif f.name == "cigars" and value is not None:
                value = value.take(idx)
            fields[f.name] = value
        return AlignmentResults(**fields)


class Alignment:
    """One row of :class:`AlignmentResults`; ``str()`` is its output line."""

    __slots__ = ("_r", "_i")

    def __init__(self, results: AlignmentResults, i: int) -> None:
        self._r, self._i = results, i

    def _get(self, name):
        value = getattr(self._r, name)
        return None if value is None else value[self._i]

    query_name = property(lambda self: self._r.query_names[int(self._r.query[self._i])])
    target_name = property(lambda self: self._r.target_names[int(self._r.target[self._i])])
    score = property(lambda self: int(self._r.score[self._i]))
    q_start = property(lambda self: None if self._r.q_start is None else int(self._r.q_start[self._i]))
    q_end = property(lambda self: int(self._r.q_end[self._i]))
    t_start = property(lambda self: None if self._r.t_start is None else int(self._r.t_start[self._i]))
    t_end = property(lambda self: int(self._r.t_end[self._i]))
    cigar = property(lambda self: self._get("cigars"))

    @property
    def identity(self) -> float | None:
        if self._r.matches is None:
            return None
        length = self.length
        return int(self._r.matches[self._i]) / length if length else 0.0

    @property
    def length(self) -> int:
        r, i = self._r, self._i
        return int(r.matches[i] + r.mismatches[i] + r.gap_cols[i])

    def value(self, column: str) -> str:
        """Text of one output column."""
        r, i = self._r, self._i
        if column in ("qname", "qseqid"):
            return self.query_name
        if column in ("tname", "sseqid"):
            return self.target_name
        if column == "score":
            return str(self.score)
        one_based = "qseqid" in r.columns or "sseqid" in r.columns
        if column == "qstart":
            return str(self.q_start + 1 if one_based and self.length else self.q_start)
        if column == "qend":
            return str(self.q_end)
        if column == "tstart":
            return str(self.t_start)
        if column == "sstart":
            return str(self.t_start + 1 if self.length else self.t_start)
        if column in ("tend", "send"):
            return str(self.t_end)
        if column in ("qlen",):
            return str(int(r.q_len[i]))
        if column in ("tlen", "slen"):
            return str(int(r.t_len[i]))
        if column == "identity":
            return f"{self.identity:.4f}"
        if column == "pident":
            return f"{100.0 * self.identity:.3f}"
        if column in ("matches", "nident"):
            return str(int(r.matches[i]))
        if column in ("mismatches", "mismatch"):
            return str(int(r.mismatches[i]))
        if column in ("gapopens", "gapopen"):
            return str(int(r.gap_opens[i]))
        if column == "gaps":
            return str(int(r.gap_cols[i]))
        if column == "length":
            return str(self.length)
        if column == "cigar":
            return self.cigar or "*"
        raise OptionError(f"unknown column {column!r}")

    def __str__(self) -> str:
        return "\t".join(self.value(c) for c in self._r.columns)

    def __repr__(self) -> str:
        return f"<Alignment {self.query_name} vs {self.target_name} score={self.score}>"


_OP_LETTER = np.zeros(16, np.uint8)
for _op, _letter in _CIGAR_LETTERS.items():
    _OP_LETTER[_op] = ord(_letter)


@numba.njit(cache=True)
def _digits(x):
    d = 1
    while x >= 10:
        x //= 10
        d += 1
    return d


@numba.njit(cache=True, parallel=True)
def _cigar_pass(runs, run_offsets, merge_m, letters, text, text_offsets, write):
    """Text length of every pair's CIGAR (``write=False``) or the text itself
    written at ``text_offsets`` (``write=True``). With ``merge_m``, ``=``/``X``
    runs are one ``M`` run."""
    n = run_offsets.size - 1
    for p in numba.prange(n):
        pos = text_offsets[p]
        length = 0
        letter = 0
        size = 0
        for r in range(run_offsets[p], run_offsets[p + 1] + 1):
            if r < run_offsets[p + 1]:
                run = runs[r]
                c = letters[run & 15]
                if merge_m and (c == 61 or c == 88):  # '=' 'X'
                    c = 77  # 'M'
                if c == letter:
                    length += run >> 4
                    continue
            if length > 0:
                d = _digits(length)
                if write:
                    x = length
                    for k in range(d - 1, -1, -1):
                        text[pos + k] = 48 + x % 10
                        x //= 10
                    text[pos + d] = letter
                pos += d + 1
                size += d + 1
            if r < run_offsets[p + 1]:
                letter = c
                length = runs[r] >> 4
        if not write:
            text_offsets[p + 1] = size


def cigar_strings(runs: np.ndarray, run_offsets: np.ndarray, merge_m: bool = False) -> CigarStrings:
    """CIGAR text of all pairs at once from BAM-encoded runs (pair p's runs
    are ``runs[run_offsets[p]:run_offsets[p + 1]]``).

    >>> c = cigar_strings(np.array([4 << 4 | 7, 1 << 4 | 8, 3 << 4 | 7], np.uint32), np.array([0, 3, 3]))
    >>> list(c), list(cigar_strings(c.runs, c.run_offsets, merge_m=True))
    (['4=1X3=', ''], ['8M', ''])
    """
    runs = np.ascontiguousarray(runs, np.uint32)
    run_offsets = np.ascontiguousarray(run_offsets, np.int64)
    sizes = np.zeros(run_offsets.size, np.int64)
    _cigar_pass(runs, run_offsets, merge_m, _OP_LETTER, np.zeros(0, np.uint8), sizes, False)
    offsets = np.cumsum(sizes)
    text = np.empty(int(offsets[-1]), np.uint8)
    _cigar_pass(runs, run_offsets, merge_m, _OP_LETTER, text, offsets, True)
    return CigarStrings(text, offsets, runs, run_offsets)


class CigarStrings(Sequence):
    """The CIGARs of many alignments: one byte buffer of text plus offsets
    (``text[offsets[i]:offsets[i + 1]]``), and the BAM-encoded runs they were
    made from. Items decode to ``str`` when read; ``''`` is an empty alignment.
    """

    __slots__ = ("text", "offsets", "runs", "run_offsets")

    def __init__(self, text: np.ndarray, offsets: np.ndarray, runs: np.ndarray, run_offsets: np.ndarray) -> None:
        self.text, self.offsets, self.runs, self.run_offsets = text, offsets, runs, run_offsets

    def __len__(self) -> int:
        return self.offsets.size - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        return self.text[self.offsets[i]:self.offsets[i + 1]].tobytes().decode("ascii")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CigarStrings):
            return np.array_equal(self.offsets - self.offsets[0], other.offsets - other.offsets[0]) and \
                self.text[self.offsets[0]:self.offsets[-1]].tobytes() == \
                other.text[other.offsets[0]:other.offsets[-1]].tobytes()
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<CigarStrings {len(self)} alignments, {self.text.size} bytes>"

    def take(self, idx: np.ndarray) -> CigarStrings:
        """The CIGARs at ``idx`` (an index array)."""
        idx = np.asarray(idx, np.int64)
        return CigarStrings(*_gather(self.text, self.offsets, idx), *_gather(self.runs, self.run_offsets, idx))

    @staticmethod
    def concat(parts: Sequence[CigarStrings]) -> CigarStrings:
        """One :class:`CigarStrings` holding ``parts`` in order."""
        def join(data, offs):
            shift = np.cumsum([0] + [o[-1] - o[0] for o in offs[:-1]])
            return (np.concatenate([d[o[0]:o[-1]] for d, o in zip(data, offs)]),
                    np.concatenate([[0]] + [o[1:] - o[0] + s for o, s in zip(offs, shift)]).astype(np.int64))
        return CigarStrings(*join([p.text for p in parts], [p.offsets for p in parts]),
                            *join([p.runs for p in parts], [p.run_offsets for p in parts]))


def _gather(data: np.ndarray, offsets: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Variable-length items ``idx`` of (data, offsets), vectorised."""
    starts, sizes = offsets[idx], offsets[idx + 1] - offsets[idx]
    new = np.zeros(idx.size + 1, np.int64)
    np.cumsum(sizes, out=new[1:])
    where = np.repeat(starts - new[:-1], sizes) + np.arange(new[-1])
    return data[where], new


# --------------------------------------------------------------------------- the aligner


class _Set:
    """Sequences of one side, encoded: codes, offsets, lengths, names."""

    def __init__(self, codes, offsets, names):
        self.codes, self.offsets, self.names = codes, offsets, names
        self.lengths = np.diff(offsets).astype(np.int32)

    def __len__(self) -> int:
        return len(self.names)


def _encode_set(seqs: Any, scoring: Scoring, prefix: str) -> _Set:
    if isinstance(seqs, (str, bytes)):
        seqs = [seqs]
    if isinstance(seqs, SequenceBatch):
        names = seqs.name_list()
        if seqs.alphabet == "dna":
            if scoring.is_dna:
                codes = seqs.codes.astype(np.uint8, copy=False)
            else:
                text = np.frombuffer(_DNA_LETTERS.encode(), np.uint8)[seqs.codes]
                codes = _lookup(scoring, text, seqs.offsets, names)
        else:
            codes = _lookup(scoring, seqs.codes, seqs.offsets, names)
        offsets = np.asarray(seqs.offsets, np.int64)
    else:
        if isinstance(seqs, dict):
            names, texts = list(seqs), list(seqs.values())
        else:
            texts = list(seqs)
            names = [f"{prefix}{i}" for i in range(len(texts))]
        raw = [t.encode("latin-1") if isinstance(t, str) else bytes(t) for t in texts]
        offsets = np.zeros(len(raw) + 1, np.int64)
        np.cumsum([len(r) for r in raw], out=offsets[1:])
        codes = _lookup(scoring, np.frombuffer(b"".join(raw), np.uint8), offsets, names)
    lengths = np.diff(offsets)
    if lengths.size and (lengths == 0).any():
        raise OptionError(f"sequence {names[int(np.argmax(lengths == 0))]!r} is empty")
    return _Set(np.ascontiguousarray(codes), offsets, names)


def read_pair_list(path: str | os.PathLike, query_names: list[str],
                   target_names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(query index, target index) of each ``query<TAB>target`` line of ``path``.

    Blank lines and ``#`` comments are skipped; an unknown name or a short
    line raises :class:`~gseek.errors.OptionError` naming ``path:line``.
    """
    q_at = {n: i for i, n in enumerate(query_names)}
    t_at = {n: i for i, n in enumerate(target_names)}
    qi, ti = [], []
    with open(path) as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split()
            if len(fields) < 2:
                raise OptionError(f"{path}:{line_no}: expected 'query<TAB>target'")
            if fields[0] not in q_at or fields[1] not in t_at:
                missing = fields[0] if fields[0] not in q_at else fields[1]
                raise OptionError(f"{path}:{line_no}: no sequence named {missing!r}")
            qi.append(q_at[fields[0]])
            ti.append(t_at[fields[1]])
    return np.array(qi, np.int64), np.array(ti, np.int64)


def _lookup(scoring: Scoring, raw: np.ndarray, offsets: np.ndarray, names: list[str]) -> np.ndarray:
    codes = scoring.lookup[raw]
    bad = codes == 255
    if bad.any():
        pos = int(np.argmax(bad))
        rec = int(np.searchsorted(offsets, pos, side="right") - 1)
        raise OptionError(f"sequence {names[rec]!r}: residue {chr(raw[pos])!r} at position {pos - offsets[rec] + 1} "
                          f"is not in the alphabet of {scoring._what()} ({scoring.alphabet})")
    return codes


_DEFAULTS: dict[str, Any] = {
    "mode": "global", "scoring": "dna", "traceback": False, "device": "auto", "threads": None,
    "free_ends": FREE_END_NAMES, "min_score": None, "min_identity": None, "cigar_m": False,
    "outfmt": None, "batch_pairs": 1 << 16, "traceback_memory": None,
}
_SCORING_FIELDS = ("match", "mismatch", "gap_open", "gap_extend", "matrix", "n_score")


class PairAligner:
    """Batched NW / SW / semiglobal aligner; one configured object per job.

    Arguments (unknown names raise :class:`OptionError`):
        mode: ``global``, ``local`` or ``semiglobal``.
        scoring: a preset name (:data:`SCORING_PRESETS`: dna, megablast, edit,
            blosum62, blosum50) or a :class:`Scoring`; ``match``, ``mismatch``,
            ``gap_open``, ``gap_extend``, ``matrix``, ``n_score`` override it.
        traceback: also report start cells, CIGAR, identity, gaps.
        free_ends: semiglobal only: which overhangs are free, any of
            ``query_start``, ``query_end``, ``target_start``, ``target_end``
            (default all four, parasail's ``sg``).
        min_score, min_identity: lazy trace-back (LazyRScan): score every
            pair, trace back only pairs that can pass, keep pairs that pass.
        cigar_m: write ``M`` instead of ``=``/``X``.
        outfmt: None (gseek TSV), ``"6"`` or ``"6 COLUMNS..."``; columns
            that need the trace-back (pident, cigar, qstart, ...) turn it on.
        device, threads: the backend (``auto``, ``cpu``, ``gpu``), chosen now.
        batch_pairs, traceback_memory: pairs per scoring batch; bytes of
            trace-back matrices per batch (default: 256 MiB on the CPU, 40%
            of the free device memory on a GPU, so that enough long pairs
            are in flight to fill the device).

    >>> a = PairAligner(mode="semiglobal", free_ends=("target_start", "target_end"), device="cpu")
    >>> a.align("ACGT", "TTACGTTT").score
    8
    >>> PairAligner(colour="red")
    Traceback (most recent call last):
    ...
    gseek.errors.OptionError: unknown PairAligner option 'colour' (known: ...)
    """

    def __init__(self, **options: Any) -> None:
        known = set(_DEFAULTS) | set(_SCORING_FIELDS)
        for name in options:
            if name not in known:
                raise OptionError(f"unknown PairAligner option {name!r} (known: {', '.join(sorted(known))})")
        self._given = dict(options)
        opts = {**_DEFAULTS, **{k: v for k, v in options.items() if k in _DEFAULTS}}
        if opts["mode"] not in MODES:
            raise OptionError(f"mode must be one of {', '.join(MODES)}, not {opts['mode']!r}")
        self.mode: str = opts["mode"]
        base = opts["scoring"]
        overrides = {k: options[k] for k in _SCORING_FIELDS if k in options}
        if overrides.get("matrix") is not None and {"match", "mismatch"} & set(overrides):
            raise OptionError("match/mismatch do not apply with a substitution matrix (it gives every pair's score)")
        if isinstance(base, Scoring):
            fields = dataclasses.asdict(base)
        elif isinstance(base, str) and base.lower() in SCORING_PRESETS:
            fields = {**dataclasses.asdict(Scoring()), **SCORING_PRESETS[base.lower()]}
        else:
            raise OptionError(f"scoring must be a Scoring or one of {', '.join(SCORING_PRESETS)}, not {base!r}")
        self.scoring = Scoring(**{**fields, **overrides})
        free = opts["free_ends"]
        free = (free,) if isinstance(free, str) else tuple(free)
        for name in free:
            if name not in FREE_END_NAMES:
                raise OptionError(f"free_ends: {name!r} is not one of {', '.join(FREE_END_NAMES)}")
        if "free_ends" in options and self.mode != "semiglobal":
            raise OptionError("free_ends applies to mode='semiglobal' only")
        self.free_ends = free
        self.flags = _flags(self.mode, free)
        self.min_score = opts["min_score"]
        self.min_identity = opts["min_identity"]
        if self.min_identity is not None and not 0.0 <= float(self.min_identity) <= 1.0:
            raise OptionError(f"min_identity is a fraction in [0, 1] (e.g. 0.97), not {self.min_identity}")
        self.lazy = self.min_score is not None or self.min_identity is not None
        self.traceback = bool(opts["traceback"]) or self.min_identity is not None
        self.cigar_m = bool(opts["cigar_m"])
        if self.cigar_m and not self.traceback:
            raise OptionError("cigar_m needs the trace-back (traceback=True): score-only results have no CIGAR")
        columns = parse_outfmt(opts["outfmt"], True)
        if opts["outfmt"] is not None and NEEDS_TRACEBACK & set(columns):
            self.traceback = True
        self.columns = parse_outfmt(opts["outfmt"], self.traceback)
        self.batch_pairs = int(opts["batch_pairs"])
        given_memory = opts["traceback_memory"]
        self.traceback_memory = 1 if given_memory is None else int(given_memory)
        if self.batch_pairs < 1 or self.traceback_memory < 1:
            raise OptionError("batch_pairs and traceback_memory must be >= 1")
        self.backend: Backend = get_backend(opts["device"], threads=opts["threads"])
        if opts["traceback_memory"] is None:
            self.traceback_memory = _default_traceback_memory(self.backend)
        self.workspace = DPWorkspace(self.backend)

    def __repr__(self) -> str:
        shown = {k: v for k, v in self._given.items()
                 if k != "threads" and (k not in _DEFAULTS or v != _DEFAULTS[k])}
        if "device" in shown:
            shown["device"] = self.backend.name
        return "PairAligner(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"

    # -- front doors

    def align(self, query: str, target: str) -> Alignment:
        """Align one pair; the row view of a one-pair result.

        >>> PairAligner(device="cpu", traceback=True).align("ACGT", "AGT").cigar
        '1=1I2='
        """
        results = self._run(_encode_set([query], self.scoring, "q"), _encode_set([target], self.scoring, "t"),
                            np.zeros(1, np.int64), np.zeros(1, np.int64), lazy=False)
        return results[0]

    def align_pairs(self, queries: Any, targets: Any) -> AlignmentResults:
        """Align ``queries[i]`` with ``targets[i]`` for every i."""
        q = _encode_set(queries, self.scoring, "q")
        t = _encode_set(targets, self.scoring, "t")
        if len(q) != len(t):
            raise OptionError(f"align_pairs needs as many queries as targets ({len(q)} != {len(t)})")
        idx = np.arange(len(q), dtype=np.int64)
        return self._concat(q, t, self.iter_pairs(q, t, idx, idx))

    def all_vs_all(self, seqs: Any) -> AlignmentResults:
        """Align every pair ``i < j`` of ``seqs`` (query i, target j)."""
        s = _encode_set(seqs, self.scoring, "s")
        return self._concat(s, s, self.iter_all_vs_all(s))

    def query_vs_database(self, queries: Any, database: Any) -> AlignmentResults:
        """Align every query with every database sequence."""
        q = _encode_set(queries, self.scoring, "q")
        t = _encode_set(database, self.scoring, "t")
        return self._concat(q, t, self.iter_query_vs_database(q, t))

    # -- streaming

    # ``progress``: called with the number of pairs of each chunk once it is
    # aligned (a lazy chunk can keep fewer rows than it aligned).

    def iter_all_vs_all(self, seqs: Any, progress: Callable[[int], None] | None = None) -> Iterator[AlignmentResults]:
        """Stream :meth:`all_vs_all` in chunks of at most ``batch_pairs`` pairs."""
        s = self._encoded(seqs, "s")
        n = len(s)
        total = n * (n - 1) // 2
        for start in range(0, total, self.batch_pairs):
            k = np.arange(start, min(total, start + self.batch_pairs), dtype=np.int64)
            i, j = _triangle(k, n)
            yield from self.iter_pairs(s, s, i, j, progress)

    def iter_query_vs_database(self, queries: Any, database: Any,
                               progress: Callable[[int], None] | None = None) -> Iterator[AlignmentResults]:
        """Stream :meth:`query_vs_database` in chunks."""
        q, t = self._encoded(queries, "q"), self._encoded(database, "t")
        total = len(q) * len(t)
        for start in range(0, total, self.batch_pairs):
            k = np.arange(start, min(total, start + self.batch_pairs), dtype=np.int64)
            yield from self.iter_pairs(q, t, k // len(t), k % len(t), progress)

    def iter_pair_list(self, queries: Any, targets: Any, path: str | os.PathLike,
                       progress: Callable[[int], None] | None = None) -> Iterator[AlignmentResults]:
        """Stream the pairs named in ``path`` (``query<TAB>target`` lines) in chunks."""
        q, t = self._encoded(queries, "q"), self._encoded(targets, "t")
        qi, ti = read_pair_list(path, q.names, t.names)
        yield from self.iter_pairs(q, t, qi, ti, progress)

    def iter_pairs(self, queries: Any, targets: Any, query_index: np.ndarray, target_index: np.ndarray,
                   progress: Callable[[int], None] | None = None) -> Iterator[AlignmentResults]:
        """Stream the pairs ``(queries[query_index[k]], targets[target_index[k]])`` in chunks."""
        q, t = self._encoded(queries, "q"), self._encoded(targets, "t")
        qi = np.asarray(query_index, dtype=np.int64)
        ti = np.asarray(target_index, dtype=np.int64)
        for start in range(0, qi.size, self.batch_pairs):
            sl = slice(start, start + self.batch_pairs)
            chunk = self._run(q, t, qi[sl], ti[sl], lazy=self.lazy)
            if progress is not None:
                progress(qi[sl].size)
            yield chunk

    def _encoded(self, seqs: Any, prefix: str) -> _Set:
        return seqs if isinstance(seqs, _Set) else _encode_set(seqs, self.scoring, prefix)

    def _concat(self, q: _Set, t: _Set, parts: Iterable[AlignmentResults]) -> AlignmentResults:
        parts = list(parts)
        if not parts:
            empty = np.zeros(0, np.int32)
            return self._results(q, t, np.zeros(0, np.int64), np.zeros(0, np.int64),
                                 {"score": empty, "q_end": empty, "t_end": empty}, None)
        if len(parts) == 1:
            return parts[0]
        fields = {}
        for f in dataclasses.fields(AlignmentResults):
            values = [getattr(p, f.name) for p in parts]
            if isinstance(values[0], np.ndarray):
                fields[f.name] = np.concatenate(values)
            elif f.name == "cigars" and values[0] is not None:
                fields[f.name] = CigarStrings.concat(values)
            else:
                fields[f.name] = values[0]
        return AlignmentResults(**fields)

    def _run(self, q: _Set, t: _Set, qi: np.ndarray, ti: np.ndarray, lazy: bool) -> AlignmentResults:
        backend = self.backend
        codes, t_shift = _joined(q, t)
        q_off, q_len = q.offsets[qi], q.lengths[qi]
        t_off, t_len = t.offsets[ti] + t_shift, t.lengths[ti]
        if not self.traceback and not lazy:
            res = score_pairs(backend, codes, q_off, q_len, t_off, t_len, self.scoring, self.flags, self.workspace)
            return self._results(q, t, qi, ti, res, None)
        if lazy:
            res = score_pairs(backend, codes, q_off, q_len, t_off, t_len, self.scoring, self.flags, self.workspace)
            keep = np.ones(qi.size, bool)
            if self.min_score is not None:
                keep &= res["score"] >= self.min_score
            if self.min_identity is not None:
                keep &= res["score"] >= identity_score_bound(self.min_identity, q_len, t_len, self.mode,
                                                             self.scoring)
            if not self.traceback:
                return self._results(q, t, qi, ti, res, None).take(keep)
            qi, ti, q_off, q_len, t_off, t_len = (a[keep] for a in (qi, ti, q_off, q_len, t_off, t_len))
        res = traceback_pairs(backend, codes, q_off, q_len, t_off, t_len, self.scoring, self.flags,
                              self.traceback_memory, self.workspace)
        results = self._results(q, t, qi, ti, res, res)
        if self.min_identity is not None:
            results = results.take(results.identity >= float(self.min_identity) - 1e-12)
        return results

    def _results(self, q, t, qi, ti, res, tb) -> AlignmentResults:
        extra: dict[str, Any] = {}
        if tb is not None:
            extra = {k: tb[k] for k in _WALK_FIELDS}
            with numba_guard():  # a parallel Numba pass, maybe beside other threads' (device workers)
                extra["cigars"] = cigar_strings(tb["cigar"], tb["cigar_offsets"], self.cigar_m)
        return AlignmentResults(
            query_names=q.names, target_names=t.names, query=qi, target=ti, score=res["score"],
            q_end=res["q_end"], t_end=res["t_end"], q_len=q.lengths[qi], t_len=t.lengths[ti],
            columns=self.columns, **extra)


def _default_traceback_memory(backend: Backend) -> int:
    """Trace-back bytes per batch: 256 MiB on the CPU; on a GPU 40% of the
    free device memory (one thread per pair: a 1.5 kb pair needs 1.1 MB of
    trace-back, and the device needs tens of thousands of pairs in flight)."""
    if backend.name != "gpu":
        return 256 << 20
    with backend.device:
        free, _ = backend.cupy.cuda.runtime.memGetInfo()
    return max(256 << 20, int(0.4 * free))


def _joined(q: _Set, t: _Set) -> tuple[np.ndarray, int]:
    """One residue array holding both sides (one upload per call)."""
    if q is t:
        return q.codes, 0
    return np.concatenate([q.codes, t.codes]), int(q.codes.size)


def _triangle(k: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(i, j) with i < j of the k-th pair in row-major order of the upper triangle."""
    # Row i starts at i*n - i*(i+1)/2; solve for i with floating point, then fix.
    kf = k.astype(np.float64)
    i = np.floor(((2 * n - 1) - np.sqrt((2 * n - 1) ** 2 - 8 * kf)) / 2).astype(np.int64)
    row_start = i * n - i * (i + 1) // 2
    over = row_start > k
    i[over] -= 1
    row_start = i * n - i * (i + 1) // 2
    nxt = (i + 1) * n - (i + 1) * (i + 2) // 2
    under = k >= nxt
    i[under] += 1
    row_start = i * n - i * (i + 1) // 2
    j = k - row_start + i + 1
    return i, j


# --------------------------------------------------------------------------- writer


def stream_encoding(fh: Any) -> tuple[str, str]:
    """``(encoding, errors)`` of the bytes :class:`AlignmentWriter` makes for the
    text stream ``fh``: the stream's own when it is a plain byte encoding with a
    binary layer (a file from ``open_output``: ascii, strict), else utf-8 with
    surrogatepass (that text is decoded again and written as text)."""
    encoding = getattr(fh, "encoding", None)
    if byte_encoding(encoding) and getattr(fh, "buffer", None) is not None:
        return encoding, getattr(fh, "errors", None) or "strict"
    return "utf-8", "surrogatepass"


class AlignmentWriter:
    """Stream results to a file, written under a temporary name and renamed
    when complete (``-`` or None: stdout).

    Rows are formatted in bulk (:class:`gseek._tsvfmt.TsvFormatter`, the same
    text as :meth:`AlignmentResults.lines`) and written as bytes in the
    stream's encoding (``open_output``'s for a file, stdout's own).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "out.tsv")
    >>> a = PairAligner(device="cpu")
    >>> with AlignmentWriter(path, a.columns) as w:
    ...     w.write(a.align_pairs(["ACGT"], ["ACGA"]))
    >>> print(open(path).read(), end="")
    #qname	tname	score	qend	tend	qlen	tlen
    q0	t0	3	4	4	4	4
    """

    def __init__(self, path: str | os.PathLike | None, columns: Sequence[str], header: bool = True) -> None:
        self.path = None if path in (None, "-") else path
        self.columns = tuple(columns)
        self.header = header and self.columns[0] != "qseqid"
        self.rows = 0

    def __enter__(self) -> AlignmentWriter:
        import sys

        if self.path is None:
            self._ctx = None
            self._fh = sys.stdout
        else:
            self._ctx = open_output(self.path, "w")
            self._fh = self._ctx.__enter__()
        # Bytes go to the text stream's binary layer when its encoding is a
        # plain one (ascii, utf-8, latin-1); a text-only stream (io.StringIO)
        # or another encoding gets the same text decoded, so it encodes it.
        self._binary = getattr(self._fh, "buffer", None) if byte_encoding(getattr(self._fh, "encoding", None)) \
            else None
        self._formatter = TsvFormatter(*stream_encoding(self._fh))
        if self.header:
            self._fh.write("#" + "\t".join(self.columns) + "\n")
        return self

    def write(self, results: AlignmentResults) -> None:
        n = len(results)
        self.write_encoded(self._formatter.format(results) if n else None, n)

    @property
    def encoding(self) -> tuple[str, str]:
        """``(encoding, errors)`` that :meth:`write_encoded`'s bytes must be made with
        (a :class:`~gseek._tsvfmt.TsvFormatter` of these), once entered."""
        return self._formatter.encoding, self._formatter.errors

    def write_encoded(self, text: np.ndarray | None, rows: int) -> None:
        """Write ``rows`` rows already formatted (``TsvFormatter(*self.encoding).format``),
        e.g. on another thread."""
        if rows:
            if self._binary is None:
                self._fh.write(text.tobytes().decode("utf-8", "surrogatepass"))
            else:
                self._fh.flush()  # the header, or anything else written as text, goes first
                self._binary.write(text)
        self.rows += rows

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._ctx is not None:
            self._ctx.__exit__(exc_type, exc, tb)
        else:
            self._fh.flush()

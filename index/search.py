"""Exact search stages over the ``fmindex`` kernel family: count and locate.

Each stage takes a :class:`~gseek.Backend` and arrays on its device and
returns arrays on that device, launching the CUDA kernel or its Numba twin of
the same name. Locate is count -> prefix sum -> fill: one backward search per
pattern gives its SA interval, an exclusive prefix sum of the interval sizes
gives every occurrence a slot, and one thread per slot walks LF to a sampled
row. The fill order is then sorted by (pattern, text position), so the output
is the same on every backend and for every thread count.

>>> import os, tempfile
>>> from gseek.index import Index
>>> fasta = os.path.join(tempfile.mkdtemp(), "demo.fa")
>>> _ = open(fasta, "w").write(">one\\nAGATNGAT\\n>two\\nCCGTTC\\n")
>>> idx = Index.build(fasta, wgram=2, sa_sample=4, device="cpu")
>>> codes, offsets = pattern_arrays(["GAT", "TT", "ANA"])
>>> fm = idx.device_arrays()
>>> lo, hi = backward_search(idx.backend, fm, codes, offsets)
>>> (hi - lo).tolist()
[2, 1, 0]
>>> pattern, text_pos = locate_rows(idx.backend, fm, lo, hi)
>>> contig, pos = text_to_contig(idx.backend, fm, text_pos)
>>> pattern.tolist(), contig.tolist(), pos.tolist()
([0, 0, 1], [0, 0, 1], [1, 5, 3])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gseek import ragged
from gseek.alphabet import encode_dna
from gseek.backend import Backend, on_device
from gseek.errors import OptionError
from gseek.kernels import fmindex
from gseek.seqio import SequenceBatch

__all__ = [
    "FmArrays",
    "pattern_arrays",
    "backward_search",
    "locate_rows",
    "text_to_contig",
    "extend_intervals",
    "occ_at",
    "sa_at",
]


#: The w-gram table of an index built without one (read-only, as the table of an index is, so the
#: kernels that take it see one argument type either way: one compiled specialisation, not two).
_NO_WGRAM = np.zeros(2, dtype=np.uint32)
_NO_WGRAM.flags.writeable = False


@dataclass(frozen=True)
class FmArrays:
    """The index arrays the kernels read, resident on one backend's device.

    Position arrays are ``uint32`` views (two words per value when ``wide``);
    parts that were not loaded are ``None``.
    """

    occ: Any
    dollar_rows: Any
    C: Any
    wgram: Any
    w: int
    wide: int
    sa_mark: Any
    sa_samples: Any
    seg_text_start: Any
    seg_ref_start: Any
    seg_contig: Any
    contig_offsets: Any

    @classmethod
    def upload(cls, backend: Backend, arrays: dict[str, np.ndarray], C: list[int], wide: bool) -> FmArrays:
        def put(name, as_words=False):
            array = arrays.get(name)
            if array is None:
                return None
            array = np.asarray(array).reshape(-1)
            return backend.asarray(array.view(np.uint32) if as_words else array)

        wgram = put("wgram", as_words=True)
        w = 0
        if wgram is not None:
            w = (int(arrays["wgram"].shape[0]).bit_length() - 1) // 2
        return cls(
            occ=put("occ"),
            dollar_rows=put("dollar_rows", as_words=True),
            C=backend.asarray(np.asarray(C, dtype=np.int64)),
            wgram=wgram if wgram is not None else backend.asarray(_NO_WGRAM),
            w=w,
            wide=int(wide),
            sa_mark=put("sa_mark"),
            sa_samples=put("sa_samples", as_words=True),
            seg_text_start=put("seg_text_start"),
            seg_ref_start=put("seg_ref_start"),
            seg_contig=put("seg_contig"),
            contig_offsets=put("contig_offsets"),
        )

    def need(self, *names: str, why: str) -> None:
        missing = [n for n in names if getattr(self, n) is None]
        if missing:
            raise OptionError(f"{why} needs index part(s) {', '.join(missing)}, which were not loaded")


def pattern_arrays(patterns: Any, backend: Backend | None = None) -> tuple[Any, Any]:
    """Patterns as ``(codes uint8, offsets int64)``, on ``backend``'s device if given.

    Accepts a :class:`~gseek.SequenceBatch` (DNA), one string, a list of
    strings (``ACGTN``, IUPAC letters as N, either case) or ``(codes,
    offsets)``. Array input is checked where it lives (on the GPU after one
    upload, not by passes over host memory).
    """
    xp = np if backend is None else backend.xp
    put = (lambda a, dtype: np.ascontiguousarray(a, dtype=dtype)) if backend is None else backend.asarray
    if isinstance(patterns, SequenceBatch):
        if patterns.alphabet != "dna":
            raise OptionError("patterns must be DNA")
        return put(patterns.codes, np.uint8), put(patterns.offsets, np.int64)
    if isinstance(patterns, (str, bytes)):
        patterns = [patterns]
    if isinstance(patterns, tuple) and len(patterns) == 2 and not isinstance(patterns[0], (str, bytes)):
        codes = put(patterns[0], np.uint8)
        offsets = put(patterns[1], np.int64)
        bad = offsets.ndim != 1 or offsets.size < 1 or int(offsets[0]) != 0 or int(offsets[-1]) != codes.size
        # min, not any(): CuPy compiles a CUB block reduction for any() on first use (docs/startup.md)
        if bad or (offsets.size > 1 and int(xp.diff(offsets).min()) < 0):
            raise OptionError("pattern offsets must start at 0, never decrease, and end at len(codes)")
        if codes.size and int(codes.max()) > 4:
            raise OptionError("pattern codes must be 0..4 (A, C, G, T, N)")
        return codes, offsets
    texts = [p.decode("ascii") if isinstance(p, bytes) else str(p) for p in patterns]
    offsets = ragged.offsets([len(t) for t in texts])
    try:
        codes = encode_dna("".join(texts))
    except ValueError:
        for i, t in enumerate(texts):
            try:
                encode_dna(t)
            except ValueError as exc:
                raise OptionError(f"pattern {i}: {exc}") from None
        raise
    return put(codes, np.uint8), put(offsets, np.int64)


@on_device
def backward_search(backend: Backend, fm: FmArrays, codes: Any, offsets: Any) -> tuple[Any, Any]:
    """SA interval ``[lo, hi)`` of every pattern (``[0, 0)`` when absent, empty or holding an N)."""
    fm.need("occ", "dollar_rows", why="search")
    codes = backend.asarray(codes, dtype=np.uint8)
    offsets = backend.asarray(offsets, dtype=np.int64)
    n = int(offsets.size) - 1
    lo = backend.xp.empty(n, dtype=np.int64)
    hi = backend.xp.empty(n, dtype=np.int64)
    backend.launch(
        fmindex, "backward_search", n,
        fm.occ, fm.dollar_rows, fm.C, fm.wgram, np.int64(fm.w), np.int64(fm.wide),
        codes, offsets, np.int64(n), lo, hi,
    )  # fmt: skip
    return lo, hi


@on_device
def locate_rows(backend: Backend, fm: FmArrays, lo: Any, hi: Any, *, sort: bool = True) -> tuple[Any, Any]:
    """Every row of every interval as ``(interval index, text position)``: sorted by
    interval, then text position, or (``sort=False``) interval by interval in SA order."""
    fm.need("occ", "dollar_rows", "sa_mark", "sa_samples", why="locate")
    xp = backend.xp
    n = int(lo.size)
    starts = ragged.offsets(hi - lo)
    total = int(starts[-1])
    pattern = xp.empty(total, dtype=np.int64)
    text_pos = xp.empty(total, dtype=np.int64)
    backend.launch(
        fmindex, "locate_fill", total,
        fm.occ, fm.dollar_rows, fm.C, fm.sa_mark, fm.sa_samples, np.int64(fm.wide),
        lo, starts, np.int64(n), np.int64(total), pattern, text_pos,
    )  # fmt: skip
    if total == 0 or not sort:
        return pattern, text_pos
    order = xp.lexsort(xp.stack([text_pos, pattern]))
    return pattern[order], text_pos[order]


@on_device
def text_to_contig(backend: Backend, fm: FmArrays, text_pos: Any) -> tuple[Any, Any]:
    """Text positions -> ``(contig index int32, 0-based position in the contig int64)``."""
    xp = backend.xp
    n = int(text_pos.size)
    contig = xp.empty(n, dtype=np.int32)
    pos = xp.empty(n, dtype=np.int64)
    n_segments = int(fm.seg_text_start.size) - 1
    backend.launch(
        fmindex, "text_to_contig", n,
        fm.seg_text_start, fm.seg_ref_start, fm.seg_contig, np.int64(n_segments), fm.contig_offsets,
        text_pos, np.int64(n), contig, pos,
    )  # fmt: skip
    return contig, pos


@on_device
def extend_intervals(backend: Backend, fm: FmArrays, lo: Any, hi: Any) -> tuple[Any, Any]:
    """Prepend every base to every interval's string: entry ``c * n + x`` is
    the interval of base c followed by interval x (``[0, 0)`` when empty)."""
    fm.need("occ", "dollar_rows", why="extend")
    lo = backend.asarray(lo, dtype=np.int64)
    hi = backend.asarray(hi, dtype=np.int64)
    n = int(lo.size)
    out_lo = backend.xp.empty(4 * n, dtype=np.int64)
    out_hi = backend.xp.empty(4 * n, dtype=np.int64)
    backend.launch(
        fmindex, "extend_intervals", n,
        fm.occ, fm.dollar_rows, fm.C, np.int64(fm.wide), lo, hi, np.int64(n), out_lo, out_hi,
    )  # fmt: skip
    return out_lo, out_hi


@on_device
def occ_at(backend: Backend, fm: FmArrays, rows: Any) -> Any:
    """``Occ(c, row)`` for every row and base, shape ``(len(rows), 4)`` int64."""
    fm.need("occ", "dollar_rows", why="occ")
    rows = backend.asarray(rows, dtype=np.int64)
    n = int(rows.size)
    out = backend.xp.empty(4 * n, dtype=np.int64)
    backend.launch(fmindex, "occ_at", n, fm.occ, fm.dollar_rows, np.int64(fm.wide), rows, np.int64(n), out)
    return out.reshape(n, 4)


@on_device
def sa_at(backend: Backend, fm: FmArrays, rows: Any) -> Any:
    """Suffix-array values (text positions) of ``rows``, through the sampled SA."""
    fm.need("occ", "dollar_rows", "sa_mark", "sa_samples", why="sa_at")
    rows = backend.asarray(rows, dtype=np.int64)
    n = int(rows.size)
    out = backend.xp.empty(n, dtype=np.int64)
    backend.launch(
        fmindex, "sa_at", n,
        fm.occ, fm.dollar_rows, fm.C, fm.sa_mark, fm.sa_samples, np.int64(fm.wide), rows, np.int64(n), out,
    )  # fmt: skip
    return out


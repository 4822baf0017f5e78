"""SAM record lines shared out among the parts of a coordinate-sorted output: :func:`route_lines`.

A sorted BAM of many records is written by several ``samtools sort`` children
at once (:class:`~gseek.output.bam.HtslibWriter`, ``parts``), each sorting the
records of one range of the reference, and one the records without a
reference name; the parts laid end to end are the one sort's records in its
order. samtools sort orders records by reference number, then position (then
strand; ties in input order), so records placed at one (reference, position)
always share a part, and each part gets its records in input order.

:func:`route_lines` cuts a batch of record lines (each ending in a newline,
as :mod:`gseek.output.sam_records` writes them) into the parts in one
parallel Numba pass without the GIL: the lines of part 0, then of part 1, ...,
each in input order.

>>> import numpy as np
>>> parts = Parts(["c1", "c2"], [100, 50], 2)
>>> text = np.frombuffer(b"a\\t0\\tc2\\t7\\tx\\nb\\t4\\t*\\t0\\ty\\nc\\t0\\tc1\\t3\\tz\\n", np.uint8)
>>> out, starts = route_lines(text, parts)
>>> bytes(out).decode().split("\\n")[:-1], starts.tolist()
(['c\\t0\\tc1\\t3\\tz', 'a\\t0\\tc2\\t7\\tx', 'b\\t4\\t*\\t0\\ty'], [0, 11, 22, 32])
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np

from gseek.kernels._jit import njit

__all__ = ["Parts", "route_lines"]

_TAB, _NL, _ZERO = 9, 10, 48
#: Bytes of text a thread of :func:`route_lines` takes at least.
CHUNK_BYTES = 1 << 20


class Parts:
    """How records are shared out: ``n`` ranges of the reference's coordinates (contigs laid end to
    end in header order, cut into ``n`` equal stretches), then one part for the records without a
    reference (RNAME ``*``; also a name the header lacks and a line without RNAME and POS: samtools
    reports those).

    Arguments:
        names, lengths: the header's reference sequences (``@SQ`` SN and LN), in order.
        n: position ranges (at least 1).
    """

    def __init__(self, names: Sequence[str], lengths: Sequence[int], n: int) -> None:
        if n < 1:
            raise ValueError(f"parts: at least 1 range, not {n}")
        self.n = int(n)
        encoded = [name.encode("latin-1") for name in names]
        order = sorted(range(len(encoded)), key=encoded.__getitem__)
        sizes = np.array([len(encoded[i]) for i in order], dtype=np.int64)
        #: The names sorted (bytes and offsets), and each one's reference number.
        self.name_bytes = np.frombuffer(b"".join(encoded[i] for i in order), dtype=np.uint8).copy()
        self.name_off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.name_tid = np.array(order, dtype=np.int64)
        #: Where each reference starts in the coordinates laid end to end.
        self.start = np.concatenate([[0], np.cumsum(np.asarray(lengths, dtype=np.int64))]).astype(np.int64)
        total = int(self.start[-1])
        #: Part ``p`` holds the positions ``cuts[p-1] <= g < cuts[p]`` (g: the 1-based POS laid end to end).
        self.cuts = np.array([total * (p + 1) // self.n + 1 for p in range(self.n - 1)], dtype=np.int64)

    @property
    def count(self) -> int:
        """Parts in all: the ranges and the part of the records without a reference."""
        return self.n + 1


@njit(cache=True, nogil=True)
def _part_of(text, a, e, names, name_off, name_tid, start, cuts, n):
    """The part of the line ``text[a:e]`` (``text[e]`` its newline): its RNAME (field 3) looked up
    among the sorted names, its POS (field 4, at most the reference's length) laid end to end and
    placed among the cuts. A line without those fields, or with a POS that is not a number, goes
    to the last part (samtools names what is wrong with it)."""
    q = a
    tabs = 0
    while tabs < 2 and q < e:  # to the start of RNAME
        if text[q] == _TAB:
            tabs += 1
        q += 1
    r0 = q
    while q < e and text[q] != _TAB:
        q += 1
    r1 = q
    if tabs < 2 or q == e:
        return n
    lo, hi = 0, name_tid.size  # binary search: the first name not below RNAME
    while lo < hi:
        mid = (lo + hi) // 2
        b0, b1 = name_off[mid], name_off[mid + 1]
        cmp = 0
        k = 0
        while cmp == 0:
            if r0 + k == r1:
                cmp = 0 if b0 + k == b1 else -1
                break
            if b0 + k == b1:
                cmp = 1
                break
            x, y = text[r0 + k], names[b0 + k]
            cmp = -1 if x < y else (1 if x > y else 0)
            k += 1
        if cmp > 0:
            lo = mid + 1
        else:
            hi = mid
    if lo == name_tid.size or name_off[lo + 1] - name_off[lo] != r1 - r0:
        return n  # "*", or a name the header lacks
    for k in range(r1 - r0):
        if text[r0 + k] != names[name_off[lo] + k]:
            return n
    tid = name_tid[lo]
    pos = 0
    q = r1 + 1
    while q < e and text[q] != _TAB:
        digit = text[q] - _ZERO
        if digit < 0 or digit > 9 or q - r1 > 18:
            return n
        pos = pos * 10 + digit
        q += 1
    if q == r1 + 1:
        return n
    g = start[tid] + min(pos, start[tid + 1] - start[tid])  # past its reference's end: at the end (as it sorts)
    part = 0
    while part < cuts.size and cuts[part] <= g:
        part += 1
    return part


@njit(cache=True, nogil=True)
def _line_start(text, at):
    """Where the line holding ``text[at]`` starts."""
    while at > 0 and text[at - 1] != _NL:
        at -= 1
    return at


@njit(parallel=True, cache=True, nogil=True)
def _route(text, bounds, names, name_off, name_tid, start, cuts, n, sizes, out, out_at, fill):
    """One pass over the chunks ``text[bounds[c]:bounds[c+1]]`` (each a whole number of lines):
    ``sizes[c, p]``, the bytes of part ``p``'s lines in chunk ``c``; with ``fill``, those lines
    copied to ``out`` from ``out_at[c, p]`` on (in input order)."""
    for c in numba.prange(bounds.size - 1):
        at = out_at[c].copy() if fill else out_at[c]
        a = bounds[c]
        end = bounds[c + 1]
        while a < end:
            b = a
            while text[b] != _NL:
                b += 1
            p = _part_of(text, a, b, names, name_off, name_tid, start, cuts, n)
            b += 1
            if fill:
                o = at[p]
                for k in range(b - a):
                    out[o + k] = text[a + k]
                at[p] = o + b - a
            else:
                sizes[c, p] += b - a
            a = b


def route_lines(text: np.ndarray, parts: Parts, threads: int | None = None,
                chunk_bytes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The record lines of ``text`` (``uint8``, whole lines) grouped by part: the text of part 0,
    then part 1, ..., each in input order, and where each part's text starts (``parts.count + 1``
    offsets). The same for any thread count (``threads``: chunks to share out, default Numba's;
    a chunk ``chunk_bytes`` at least, default :data:`CHUNK_BYTES`)."""
    text = np.ascontiguousarray(text, dtype=np.uint8)
    if text.size and text[-1] != _NL:
        raise ValueError("SAM text must end in a newline")
    threads = int(threads or numba.get_num_threads())
    chunks = max(1, min(threads * 4, text.size // max(1, int(chunk_bytes or CHUNK_BYTES))))
    bounds = np.array([0] + [_line_start(text, text.size * c // chunks) for c in range(1, chunks)] + [text.size],
                      dtype=np.int64)
    bounds = np.maximum.accumulate(bounds)
    sizes = np.zeros((chunks, parts.count), dtype=np.int64)
    args = (parts.name_bytes, parts.name_off, parts.name_tid, parts.start, parts.cuts, parts.n)
    out = np.empty(text.size, dtype=np.uint8)
    _route(text, bounds, *args, sizes, out, sizes, False)
    totals = sizes.sum(axis=0)
    starts = np.concatenate([[0], np.cumsum(totals)]).astype(np.int64)
    out_at = starts[:-1][None, :] + np.cumsum(sizes, axis=0) - sizes  # part start + earlier chunks' bytes
    _route(text, bounds, *args, sizes, out, out_at, True)
    return out, starts

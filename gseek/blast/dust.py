"""Symmetric DUST: the low-complexity intervals of DNA that BLAST+ masks (``dustmasker``, ``blastn -dust yes``).

Morgulis, Gertz, Schäffer and Agarwala (2006), "A fast and symmetric DUST implementation to
mask low-complexity DNA sequences". For a stretch ``x`` of DNA holding ``l`` triplets (3-mers),
``c_t`` of them equal to triplet ``t``, the score is ``S(x) = sum_t c_t (c_t - 1) / 2 / (l - 1)``:
how often triplets repeat, per triplet. ``x`` is a *perfect interval* when ``S(x) > level / 10``
and no stretch inside ``x`` scores higher (ties allowed). Every perfect interval at most
``window`` bases long is masked; masked intervals fewer than ``linker`` bases apart are merged
(``linker=1``: those that overlap or touch).

This is the definition computed directly (not the paper's incremental window lists): for every
end ``e`` and every start ``s`` within ``window`` bases of it, ``S(s, e)`` is extended one
triplet to the left, and the best score inside ``[s, e)`` is the larger of those inside
``[s + 1, e)`` and ``[s, e - 1)`` (one row of that table per end), so the work is
``O(bases * window)``, in one Numba pass per record. Scores are compared as integer
cross-products, never as floats.

An N (``code > 3``) is read as blastn reads it. BLAST+'s DUST (``CSymDustMasker``, since the
end of 2015, 2.12 included) reads each N as a pseudo-random base: the low bits of ``CRandom``'s
lagged Fibonacci generator from its fixed start, a new generator per query, one draw each time
the masker reads an N. It reads some bases twice: after a homopolymer window (``window`` equal
bases) it starts again from that window's start, and after the record's end it reads the last
``window`` bases again; each reading draws its own N's, and the intervals of all readings are
merged. :func:`_readings_with_n` follows those readings, so a record holding an N gets blastn's
intervals (a run of N is masked only where its draws happen to repeat); a record without one
gets the single pass above, which equals them. Code 4 stands for every ambiguous letter, and all
are read so, where blastn reads the others (R, Y, ...) as A (``docs/blast.md``, "DUST").

>>> import numpy as np
>>> from gseek.alphabet import encode_dna
>>> codes = encode_dna("GATCCGTAAGCT" + "A" * 20 + "TGCATGGCTAGCCTGA")
>>> dust_intervals(codes, np.array([0, codes.size]))
array([[12, 32]])
>>> int(dust_mask(codes, np.array([0, codes.size])).sum())
20
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from gseek.errors import OptionError
from gseek.kernels._jit import njit
from gseek.kernels import blast as kblast
from gseek.kernels.blast import dust_span
from gseek.ragged import even_cuts

__all__ = ["dust_intervals", "dust_mask", "DUST_LEVEL", "DUST_WINDOW", "DUST_LINKER"]

#: BLAST+'s defaults (dustmasker ``-level``, ``-window``, ``-linker``; blastn ``-dust yes``).
DUST_LEVEL = 20
DUST_WINDOW = 64
DUST_LINKER = 1
#: Starts a record's pass reads at a time on the host (:func:`_perfect_reach`; any value gives the same).
_HOST_SPAN = 1 << 16
#: Starts a thread of the backend's pass reads (:func:`_on_backend`; any value gives the same). A thread's
#: time grows with its span and ``window`` (it reads span + window bases): with 256, 1 Mbp of queries was
#: ~4k threads, one warp an H200 multiprocessor, and ``dust_reach`` took 5.5 ms (issue 40's profile, the
#: 10 kb and the 30 kb megablast sets alike); 64 gives four times the threads for 1.6 times the reads.
DEVICE_SPAN = 64


@njit(cache=True, nogil=True)
def _perfect_reach(seq, base, level, window, linker, out, k, first, chunk):
    """The perfect intervals of ``seq`` (codes 0-3), at ``base`` in ``out``'s coordinates: for each
    start s in order, [s, reach(s)) with reach(s) the largest end of one, merged after
    ``out[first:k]`` (one fewer than ``linker`` bases after the last joins it); returns the new ``k``.

    The reach of ``chunk`` starts at a time (:func:`gseek.kernels.blast.dust_span`, which states the
    rules: a span of starts read with the ``window`` bases after it gives the one pass's reach), so
    a record costs a span's bases and triplets, whatever its length."""
    n = seq.size
    reach = np.empty(max(1, min(chunk, n - 2)), np.int64)
    for lo in range(0, n - 2, chunk):
        hi = min(n - 2, lo + chunk)
        dust_span(seq, lo, min(n, hi + window), lo, hi, level, window, reach, lo)
        for s in range(lo, hi):
            d = reach[s - lo]
            k = _write_out(s, s + d if d >= 0 else -1, base, linker, out, k, first)
    return k


@njit(cache=True, nogil=True)
def _write_out(s, e, base, linker, out, k, first):
    """[s, e) (none where e < 0) at ``base``, merged after ``out[first:k]``; the new ``k``."""
    if e < 0:
        return k
    if k > first and base + s - out[k - 1, 1] < linker:
        if base + e > out[k - 1, 1]:
            out[k - 1, 1] = base + e
    else:
        out[k, 0], out[k, 1] = base + s, base + e
        k += 1
    return k


#: ``CRandom``'s start (BLAST+ ``util/random_gen.cpp``, ``Reset``): 33 words of state, read from
#: index ``_LFG_J`` and ``_LFG_K`` down.
_LFG_STATE = np.array([
    0xd53f1852, 0xdfc78b83, 0x4f256096, 0x0e643df7, 0x82c359bf, 0xc7794dfa, 0xd5e9ffaa, 0x2c8cb64a,
    0x2f07b334, 0xad5a7eb5, 0x96dc0cde, 0x6fc24589, 0xa5853646, 0xe71576e2, 0x0dae30df, 0xb09ce711,
    0x5e56ef87, 0x4b4b0082, 0x6f4f340e, 0xc5bb17e8, 0xd788d765, 0x67498087, 0x9d7aba26, 0x261351d4,
    0x411ee7ea, 0x0393a263, 0x2c5a5835, 0xc115fcd8, 0x25e9132c, 0xd0c6e906, 0xc2bc5b2d, 0x6c065c98,
    0x6e37bd55], np.int64)
_LFG_J, _LFG_K = 12, 32


@njit(cache=True, nogil=True)
def _read_base(seq, p, state, jk):
    """The base the masker reads at ``seq[p]``: itself, or for an N (``> 3``) the next draw of the
    generator (``state``, and its two indices ``jk``): the sum of two state words (mod 2^32)
    replaces one, both indices step down; ``GetRand`` drops the lowest bit, the masker keeps two."""
    if seq[p] <= 3:
        return seq[p]
    j, k = jk[0], jk[1]
    r = (state[k] + state[j]) & 0xFFFFFFFF
    state[k] = r
    j -= 1
    k -= 1
    if k < 0:
        k = state.size - 1
    elif j < 0:
        j = state.size - 1
    jk[0], jk[1] = j, k
    return (r >> 1) & 3


@njit(cache=True, nogil=True)
def _readings_with_n(seq, base, level, window, linker, out, k, first, chunk):
    """:func:`_perfect_reach` of a record holding an N, as blastn's masker reads it: reading after
    reading (each from ``start``, N's drawn as read), a window of ``window - 2`` triplets sliding
    over the bases read. A window of one triplet (a homopolymer) is extended base by base while
    it stays one; where it stops, the reading ends before the base that broke it, and the next
    begins at the window's start. A reading that reaches the record's end is followed by one of
    the last ``window`` bases (where the window had slid); one that never slid is the last."""
    n = seq.size
    state = _LFG_STATE.copy()
    jk = np.array([_LFG_J, _LFG_K], np.int64)
    cap = window - 2
    read = np.empty(n, np.uint8)  # the values of the current reading
    ring = np.empty(cap, np.int64)  # the window's triplets, oldest at ``head``
    counts = np.zeros(64, np.int64)
    start = 0
    while n - 1 > start + 2:
        counts[:] = 0
        head = size = slid = distinct = 0
        read[start] = _read_base(seq, start, state, jk)
        read[start + 1] = _read_base(seq, start + 1, state, jk)
        t = np.int64(read[start]) * 4 + read[start + 1]
        pos, end, homopolymer = start + 2, n, False
        while pos < n:
            read[pos] = _read_base(seq, pos, state, jk)
            t = ((t << 2) & 63) + read[pos]
            if size >= cap:  # slide: the oldest triplet leaves
                old = ring[head]
                head = (head + 1) % cap
                size -= 1
                slid += 1
                counts[old] -= 1
                if counts[old] == 0:
                    distinct -= 1
            ring[(head + size) % cap] = t
            size += 1
            if counts[t] == 0:
                distinct += 1
            counts[t] += 1
            if homopolymer and distinct > 1:
                end = pos  # the reading stops before the base that broke the homopolymer
                break
            homopolymer = size >= cap and distinct <= 1
            pos += 1
        k = _perfect_reach(read[start:end], base + start, level, window, linker, out, k, first, chunk)
        if slid == 0:
            break
        start += slid
    return k


@njit(cache=True, nogil=True)
def _intervals(codes, offsets, level, window, linker, chunk, n_only=False):
    out = np.empty((codes.size + 1, 2), np.int64)
    k = 0
    for q in range(offsets.size - 1):
        a, b = offsets[q], offsets[q + 1]
        seq = codes[a:b]
        has_n = False
        for i in range(seq.size):
            if seq[i] > 3:
                has_n = True
                break
        if has_n:
            k = _readings_with_n(seq, a, level, window, linker, out, k, k, chunk)
        elif not n_only:
            k = _perfect_reach(seq, a, level, window, linker, out, k, k, chunk)
    return out[:k].copy()


def _check(codes, offsets, level, window, linker):
    codes = np.ascontiguousarray(codes, np.uint8)
    offsets = np.ascontiguousarray(offsets, np.int64)
    if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0 or offsets[-1] != codes.size \
            or (np.diff(offsets) < 0).any():
        raise OptionError(f"offsets must rise from 0 to len(codes) = {codes.size}")
    if int(level) < 1:
        raise OptionError(f"DUST level must be >= 1, got {level}")
    if int(window) < 4:
        raise OptionError(f"DUST window must be >= 4 bases, got {window}")
    if int(linker) < 0:
        raise OptionError(f"DUST linker must be >= 0, got {linker}")
    return codes, offsets


def dust_intervals(codes, offsets, level: int = DUST_LEVEL, window: int = DUST_WINDOW,
                   linker: int = DUST_LINKER, backend: Any = None) -> np.ndarray:
    """The masked ``[start, end)`` intervals, a ``(k, 2)`` int64 array in ``codes`` coordinates.

    codes: uint8 DNA codes (0-3 = ACGT, 4 = N) of all records, concatenated; offsets: the
    records' bounds (``offsets[i]:offsets[i + 1]``); no interval crosses a record's bound.
    level, window, linker: as dustmasker's ``-level``, ``-window``, ``-linker``.
    backend: where given (and ``window`` < 128), the N-free records' pass runs there
    (:func:`_on_backend`); the same intervals.

    >>> import numpy as np
    >>> from gseek.alphabet import encode_dna
    >>> codes = encode_dna("ACGT" * 3 + "CAG" * 10 + "TTGACCATGA")
    >>> dust_intervals(codes, np.array([0, 12, codes.size]))  # two records
    array([[12, 42]])
    """
    codes, offsets = _check(codes, offsets, level, window, linker)
    if backend is not None and int(window) < kblast.DUST_RING:
        return _on_backend(backend, codes, offsets, int(level), int(window), int(linker))
    n_rec = offsets.size - 1
    # records are independent: groups of records of about equal bases on threads (the pass holds no GIL)
    groups = min(n_rec, os.cpu_count() or 1, max(1, codes.size // (1 << 16)))
    if groups <= 1:
        return _intervals(codes, offsets, int(level), int(window), int(linker), _HOST_SPAN)
    cuts = even_cuts(offsets, codes.size, groups)
    bounds = [0, *cuts.tolist(), n_rec]

    def group(a: int, b: int) -> np.ndarray:
        return _intervals(codes, offsets[a:b + 1], int(level), int(window), int(linker), _HOST_SPAN)

    # the first group on this thread, the others on threads of their own (one thread started on 2 cores, not two)
    with ThreadPoolExecutor(len(bounds) - 2) as pool:
        later = [pool.submit(group, a, b) for a, b in zip(bounds[1:-1], bounds[2:])]
        return np.concatenate([group(bounds[0], bounds[1]), *(f.result() for f in later)])


@njit(cache=True, nogil=True)
def _fold(starts, ends, offsets, linker):
    """The intervals ``[starts[i], ends[i])`` (in increasing start order) merged within each record as
    :func:`_perfect_reach` merges its own (:func:`_write_out`)."""
    out = np.empty((starts.size, 2), np.int64)
    k = first = 0
    q = -1
    for i in range(starts.size):
        s = starts[i]
        if q < 0 or s >= offsets[q + 1]:  # a later record: nothing to merge with
            q = np.searchsorted(offsets, s, side="right") - 1
            first = k
        k = _write_out(s, ends[i], 0, linker, out, k, first)
    return out[:k].copy()


def _on_backend(backend: Any, codes: np.ndarray, offsets: np.ndarray, level: int, window: int,
                linker: int) -> np.ndarray:
    """:func:`dust_intervals` with the N-free records' reach computed by ``dust_reach`` on ``backend``
    (:data:`DEVICE_SPAN` starts a thread), merged on the host; the records holding an N by the host's
    pass (their readings draw the N's in order)."""
    lengths = np.diff(offsets)
    with_n = np.zeros(lengths.size, bool)
    up = backend.asarray
    with backend.active():
        dev_codes = up(codes)
        at_n = backend.to_host(backend.xp.flatnonzero(dev_codes > 3))
    if at_n.size:
        with_n[np.searchsorted(offsets, at_n, side="right") - 1] = True
    parts = [_intervals(codes, offsets, level, window, linker, _HOST_SPAN, True)] if at_n.size else []
    rec = np.flatnonzero(~with_n & (lengths >= 3))
    if rec.size:
        starts = lengths[rec] - 2
        per = -(-starts // DEVICE_SPAN)
        owner = np.repeat(rec, per)
        lo = offsets[owner] + (np.arange(int(per.sum())) - np.repeat(np.cumsum(per) - per, per)) * DEVICE_SPAN
        end = offsets[owner + 1]
        hi = np.minimum(lo + DEVICE_SPAN, end - 2)
        with backend.active():
            reach = backend.xp.full(codes.size, -1, np.int32)
            backend.launch(kblast, "dust_reach", lo.size, dev_codes, up(lo), up(hi), up(end), np.int64(lo.size),
                           np.int64(level), np.int64(window), reach)
            at = backend.xp.flatnonzero(reach >= 0)
            s, e = backend.to_host(at), backend.to_host(at + reach[at])
        parts.append(_fold(s.astype(np.int64), e.astype(np.int64), offsets, linker))
    if not parts:
        return np.zeros((0, 2), np.int64)
    out = np.concatenate(parts)
    return out[np.argsort(out[:, 0], kind="stable")]


def dust_mask(codes, offsets, level: int = DUST_LEVEL, window: int = DUST_WINDOW,
              linker: int = DUST_LINKER, backend: Any = None) -> np.ndarray:
    """A uint8 mask over ``codes``, 1 on every base :func:`dust_intervals` masks (the ``mask``
    of :func:`gseek.blast.lookup.build_lookup`: a masked base never seeds).

    >>> import numpy as np
    >>> from gseek.alphabet import encode_dna
    >>> dust_mask(encode_dna("GACT" + "A" * 8 + "GCTC"), np.array([0, 16]))
    array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0], dtype=uint8)
    """
    intervals = dust_intervals(codes, offsets, level, window, linker, backend)
    mask = np.zeros(np.asarray(codes).size, np.uint8)
    for start, end in intervals.tolist():
        mask[start:end] = 1
    return mask

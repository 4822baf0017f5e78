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

import numpy as np

from gseek.errors import OptionError
from gseek.kernels._jit import njit

__all__ = ["dust_intervals", "dust_mask", "DUST_LEVEL", "DUST_WINDOW", "DUST_LINKER"]

#: BLAST+'s defaults (dustmasker ``-level``, ``-window``, ``-linker``; blastn ``-dust yes``).
DUST_LEVEL = 20
DUST_WINDOW = 64
DUST_LINKER = 1


@njit(cache=True, nogil=True)
def _perfect_reach(seq, base, level, window, linker, out, k, first):
    """The perfect intervals of ``seq`` (codes 0-3), at ``base`` in ``out``'s coordinates: for each
    start s in order, [s, reach(s)) with reach(s) the largest end of one, merged after
    ``out[first:k]`` (one fewer than ``linker`` bases after the last joins it); returns the new ``k``.

    For each end e, the stretches [s, e) are scored from s = e - 3 down, one triplet at a time; but
    a stretch can score above the level only if it is short enough: its repeats ``r`` are at most
    those of the whole window [e - window, e) (``whole``, kept as the window slides), and
    ``r * 10 > level * l`` needs ``l < 10 * whole / level``. So only those starts are scored (about
    15 of 62 in random DNA). ``best[s]`` is then kept only where s is scored: a stretch [x, y) above
    the level was scored at its end y, so ``best[x]`` holds it, and every later walk over a start
    s <= x passes x first (whatever it left stale below its last start, it never reads).

    Only the starts of the last ``window`` ends are ever read or written, so ``best`` and ``reach``
    are rings of ``ring`` (>= window + 1) slots, a slot emptied when its start s = e - 3 comes in,
    and s written out once no later end can reach it (e > s + window): a record costs its bases and
    a triplet a base (uint8), whatever its length."""
    n = seq.size
    counts = np.zeros(64, np.int64)  # triplets of the stretch being scored (emptied after each end)
    slide = np.zeros(64, np.int64)  # triplets of the whole window
    whole = 0  # the whole window's repeats: sum of c (c - 1) / 2 over slide
    tri = np.empty(max(n - 2, 0), np.uint8)  # the triplet starting at each position
    for s in range(n - 2):
        tri[s] = seq[s] * 16 + seq[s + 1] * 4 + seq[s + 2]
    ring = 1
    while ring < window + 1:
        ring *= 2
    slot = ring - 1
    # best_r/best_l[s]: the best score (r / l) of a stretch above the level inside [s, e - 1) before
    # end e is done, inside [s, e) after, where s is scored; best_r = 0 means none. Only ratios are
    # ever compared. One row, rewritten in place: a walk reads best[s] before it writes it.
    best_r = np.zeros(ring, np.int64)
    best_l = np.ones(ring, np.int64)
    reach = np.full(ring, -1, np.int64)
    written = 0  # the starts below are written out
    for e in range(3, n + 1):
        lowest = max(0, e - window)
        best_r[(e - 3) & slot], best_l[(e - 3) & slot], reach[(e - 3) & slot] = 0, 1, -1
        t = tri[e - 3]  # the window gains the triplet at e - 3 and loses the one before ``lowest``
        whole += slide[t]
        slide[t] += 1
        if lowest > 0:
            t = tri[lowest - 1]
            slide[t] -= 1
            whole -= slide[t]
        # only a stretch of l <= longest can score above the level, whatever its triplets
        longest = (10 * whole - 1) // level  # the largest l with level * l < 10 * whole
        last = max(lowest, e - 3 - longest)  # starts below ``last`` have l > longest
        r = 0
        m_r, m_l = 0, 1  # best inside [s + 1, e): none yet for s = e - 3
        for s in range(e - 3, last - 1, -1):
            t = tri[s]
            r += counts[t]  # sum of c (c - 1) / 2 grows by the count before this triplet
            counts[t] += 1
            l = e - s - 3  # triplets - 1
            # best inside [s + 1, e) (m_r / m_l, the previous s's) and inside [s, e - 1)
            if s + 4 <= e:
                p_r, p_l = best_r[s & slot], best_l[s & slot]
                if p_r * m_l > m_r * p_l:
                    m_r, m_l = p_r, p_l
            if l >= 1 and r * 10 > level * l:
                if r * m_l >= m_r * l:  # no stretch inside scores higher: perfect
                    if e > reach[s & slot]:
                        reach[s & slot] = e
                    m_r, m_l = r, l
            best_r[s & slot], best_l[s & slot] = m_r, m_l
        for s in range(e - 3, last - 1, -1):
            counts[tri[s]] -= 1
        if e - window >= written:  # no later end reaches start e - window
            k = _write_out(written, reach[written & slot], base, linker, out, k, first)
            written += 1
    for s in range(written, n - 2):
        k = _write_out(s, reach[s & slot], base, linker, out, k, first)
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
def _readings_with_n(seq, base, level, window, linker, out, k, first):
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
        k = _perfect_reach(read[start:end], base + start, level, window, linker, out, k, first)
        if slid == 0:
            break
        start += slid
    return k


@njit(cache=True, nogil=True)
def _intervals(codes, offsets, level, window, linker):
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
            k = _readings_with_n(seq, a, level, window, linker, out, k, k)
        else:
            k = _perfect_reach(seq, a, level, window, linker, out, k, k)
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
                   linker: int = DUST_LINKER) -> np.ndarray:
    """The masked ``[start, end)`` intervals, a ``(k, 2)`` int64 array in ``codes`` coordinates.

    codes: uint8 DNA codes (0-3 = ACGT, 4 = N) of all records, concatenated; offsets: the
    records' bounds (``offsets[i]:offsets[i + 1]``); no interval crosses a record's bound.
    level, window, linker: as dustmasker's ``-level``, ``-window``, ``-linker``.

    >>> import numpy as np
    >>> from gseek.alphabet import encode_dna
    >>> codes = encode_dna("ACGT" * 3 + "CAG" * 10 + "TTGACCATGA")
    >>> dust_intervals(codes, np.array([0, 12, codes.size]))  # two records
    array([[12, 42]])
    """
    codes, offsets = _check(codes, offsets, level, window, linker)
    n_rec = offsets.size - 1
    # records are independent: groups of records of about equal bases on threads (the pass holds no GIL)
    groups = min(n_rec, os.cpu_count() or 1, max(1, codes.size // (1 << 16)))
    if groups <= 1:
        return _intervals(codes, offsets, int(level), int(window), int(linker))
    cuts = np.unique(np.searchsorted(offsets, np.linspace(0, codes.size, groups + 1)[1:-1]))
    bounds = [0, *cuts.tolist(), n_rec]
    with ThreadPoolExecutor(len(bounds) - 1) as pool:
        parts = list(pool.map(lambda ab: _intervals(codes, offsets[ab[0]:ab[1] + 1], int(level), int(window),
                                                    int(linker)), zip(bounds[:-1], bounds[1:])))
    return np.concatenate(parts)


def dust_mask(codes, offsets, level: int = DUST_LEVEL, window: int = DUST_WINDOW,
              linker: int = DUST_LINKER) -> np.ndarray:
    """A uint8 mask over ``codes``, 1 on every base :func:`dust_intervals` masks (the ``mask``
    of :func:`gseek.blast.lookup.build_lookup`: a masked base never seeds).

    >>> import numpy as np
    >>> from gseek.alphabet import encode_dna
    >>> dust_mask(encode_dna("GACT" + "A" * 8 + "GCTC"), np.array([0, 16]))
    array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0], dtype=uint8)
    """
    intervals = dust_intervals(codes, offsets, level, window, linker)
    mask = np.zeros(np.asarray(codes).size, np.uint8)
    for start, end in intervals.tolist():
        mask[start:end] = 1
    return mask

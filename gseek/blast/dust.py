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

As dustmasker, a base other than A/C/G/T (``code > 3``) is read as A: an N does not break a
repeat. Known difference: dustmasker never masks a run of N inside a record, where gseek masks
a run of 7 or more as poly-A (see ``docs/blast.md``, "DUST").

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
def _perfect_reach(seq, level, window, reach):
    """reach[s] = the largest end e of a perfect interval [s, e) of ``seq`` (codes 0-3), or -1.

    For each end e, the stretches [s, e) are scored from s = e - 3 down, one triplet at a time; but
    a stretch can score above the level only if it is short enough: its repeats ``r`` are at most
    those of the whole window [e - window, e) (``whole``, kept as the window slides), and
    ``r * 10 > level * l`` needs ``l < 10 * whole / level``. So only those starts are scored (about
    15 of 62 in random DNA). ``best[s]`` is then kept only where s is scored: a stretch [x, y) above
    the level was scored at its end y, so ``best[x]`` holds it, and every later walk over a start
    s <= x passes x first (whatever it left stale below its last start, it never reads)."""
    n = seq.size
    counts = np.zeros(64, np.int64)  # triplets of the stretch being scored (emptied after each end)
    slide = np.zeros(64, np.int64)  # triplets of the whole window
    whole = 0  # the whole window's repeats: sum of c (c - 1) / 2 over slide
    tri = np.zeros(max(n - 2, 0), np.int64)  # the triplet starting at each position
    for s in range(n - 2):
        tri[s] = seq[s] * 16 + seq[s + 1] * 4 + seq[s + 2]
    # best_r/best_l[s]: the best score (r / l) of a stretch above the level inside [s, e - 1) before
    # end e is done, inside [s, e) after, where s is scored; best_r = 0 means none. Only ratios are
    # ever compared. One row, rewritten in place: a walk reads best[s] before it writes it.
    best_r = np.zeros(n + 1, np.int64)
    best_l = np.ones(n + 1, np.int64)
    for s in range(n):
        reach[s] = -1
    for e in range(3, n + 1):
        lowest = max(0, e - window)
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
                p_r, p_l = best_r[s], best_l[s]
                if p_r * m_l > m_r * p_l:
                    m_r, m_l = p_r, p_l
            if l >= 1 and r * 10 > level * l:
                if r * m_l >= m_r * l:  # no stretch inside scores higher: perfect
                    if e > reach[s]:
                        reach[s] = e
                    m_r, m_l = r, l
            best_r[s], best_l[s] = m_r, m_l
        for s in range(e - 3, last - 1, -1):
            counts[tri[s]] -= 1


@njit(cache=True, nogil=True)
def _intervals(codes, offsets, level, window, linker):
    out = np.empty((codes.size + 1, 2), np.int64)
    k = 0
    for q in range(offsets.size - 1):
        a, b = offsets[q], offsets[q + 1]
        seq = codes[a:b].astype(np.int64)
        for i in range(seq.size):
            if seq[i] > 3:
                seq[i] = 0  # dustmasker reads a non-ACGT letter as A
        reach = np.empty(seq.size, np.int64)
        _perfect_reach(seq, level, window, reach)
        first = k
        for s in range(seq.size):
            e = reach[s]
            if e < 0:
                continue
            if k > first and a + s - out[k - 1, 1] < linker:
                if a + e > out[k - 1, 1]:
                    out[k - 1, 1] = a + e
            else:
                out[k, 0], out[k, 1] = a + s, a + e
                k += 1
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

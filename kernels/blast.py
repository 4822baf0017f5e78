"""Numba twins of ``kernels/blast.cu``: the BLAST-style search's database side.

Same kernel names, same argument order as the CUDA file. The database is the
index's 2-bit packed text (16 bases a ``uint32``, first base in the high bits)
with its packed N mask (``has_n == 0``: no N anywhere, the mask is not read);
contig ``c`` is text ``[contig_off[c], contig_off[c + 1])``. The queries (both
strands of every query, one *sequence* each) are base codes ``qcodes`` (0..3,
4 = N) with ``qoff`` bounds; ``qvalid[i]`` is 1 where the table word of length
``lut_w`` starting at query position ``i`` is listed in the lookup table.

* ``scan_pv``: every *stride position* ``p = phase + k * stride`` of the text whose
  ``lut_w`` bases hold no N and whose word's presence-vector bit is set is a
  hit. The CUDA kernel gathers hits in a block-local shared buffer flushed with
  one global atomic (unordered; the stage sorts them); this twin counts per
  chunk, then fills, in increasing order. ``n_hits[0]`` is the number of hits,
  of which the first ``capacity`` are stored. ``phase`` (0 for a whole
  database) keeps a shard's stride positions those of the whole database.
* A *table word* is the ``lut_w`` bases from its position (``tmask == 0``), or, for
  discontiguous words (dc-megablast), the bases of the ``span`` from its position that the
  template selects (bit ``span - 1 - j`` of ``tmask`` set: base ``j``), first base in the code's
  high bits; the scan then tests ``span`` bases for N and ``n_bases - span`` bounds its positions.
* ``lookup_count`` / ``lookup_fill``: each hit expands into one (query
  position, text position) pair per query position of its word: count, then
  (after an exclusive prefix sum) fill.
* ``mini_extend``: each pair is extended exactly, both ways, along its
  diagonal while the bases are equal and neither is N, never past a query
  sequence's or a contig's bounds. The run is a seed when it is at least
  ``word`` bases long and this pair is its *first finder*: no earlier stride
  position of the same run (``stride`` bases back, while its table word is
  inside the run) starts a listed query word. So each seed is kept once,
  whatever the order of the pairs. The left walk stops at the first such
  position, and only a first finder walks right: a pair costs a few strides
  inside a long run (a repeat), not the run's length. ``run_q``, ``run_s``,
  ``run_len`` are the run's where ``keep`` is 1 (elsewhere unspecified).
* ``two_hit`` (discontiguous words, in place of ``mini_extend``): a pair is a seed when its
  ``span`` lies inside its contig and, with ``window > 0``, another template hit lies
  ``d = span .. window`` bases before it on its diagonal, inside its query sequence and contig:
  the query word at ``q - d`` listed (``qvalid``) and equal to the N-free text word at ``s - d``
  under ``tmask`` or, when not 0, ``tmask2`` (BLAST+'s two-hit rule, asked of any earlier hit,
  not of the diagonal's last one: so it needs no order). The seed's run is empty: the ungapped
  extension scores its bases.
* ``ungapped_extend``: BLAST's ungapped X-drop extension of every seed run,
  right then left, scoring ``reward`` / ``penalty`` (an N on either side
  scores ``n_score``); the extension ends at its best score.
* ``unpack_ranges``: text ranges ``[start[r], start[r] + len)`` into base
  codes 0..4 at ``out_off[r]`` (the subject windows of gapped extension).
* ``dust_reach``: the query side's symmetric DUST (``gseek.blast.dust``), one span of
  starts of an N-free record a thread: each start's reach (:func:`dust_span`, which the
  host's pass runs too).

Every output element is computed independently (the scan's chunks are
counted, then filled), so results do not depend on the thread count.
"""

from __future__ import annotations

import numba
import numpy as np

from gseek.kernels._jit import njit
from gseek.kernels.seqpack import _record_of

CUDA_SOURCE = "blast.cu"
#: Entries of the scan's block-local hit buffer (CUDA; twice the largest block).
SCAN_BUFFER = 2048
#: Slots of the CUDA ``dust_reach``'s rings (a power of two): windows up to ``DUST_RING - 1`` bases.
DUST_RING = 128
CONSTANTS: dict[str, int] = {"SCAN_BUFFER": SCAN_BUFFER, "DUST_RING": DUST_RING}

#: Stride positions a CPU scan chunk covers.
_CHUNK = 1 << 16


@njit(cache=True, inline="always")
def _base(text, g):
    return (text[g >> 4] >> np.uint32(30 - 2 * (g & 15))) & np.uint32(3)


@njit(cache=True, inline="always")
def _is_n(nmask, has_n, g):
    if has_n == 0:
        return False
    return ((nmask[g >> 4] >> np.uint32(30 - 2 * (g & 15))) & np.uint32(3)) != 0


@njit(cache=True, inline="always")
def _bits(words, n_words, p, w):
    """The 2w bits of bases p .. p + w - 1 of a packed array (w <= 16)."""
    i = p >> 4
    hi = np.uint64(words[i])
    lo = np.uint64(words[i + 1]) if i + 1 < n_words else np.uint64(0)
    both = (hi << np.uint64(32)) | lo
    shift = np.uint64(64 - 2 * ((p & 15) + w))
    return np.int64((both >> shift) & np.uint64((1 << (2 * w)) - 1))


@njit(cache=True, inline="always")
def _span_bits(words, n_words, p, n):
    """The 2n bits of bases p .. p + n - 1 of a packed array (n <= 32), first base in the high bits."""
    if n <= 16:
        return np.uint64(_bits(words, n_words, p, n))
    i = p >> 4
    a = (np.uint64(words[i]) << np.uint64(32)) | (np.uint64(words[i + 1]) if i + 1 < n_words else np.uint64(0))
    b = np.uint64(words[i + 2]) if i + 2 < n_words else np.uint64(0)
    o = p & 15
    x = a
    if o:
        x = (a << np.uint64(2 * o)) | (b >> np.uint64(32 - 2 * o))
    return x >> np.uint64(64 - 2 * n)


@njit(cache=True, inline="always")
def _word_at(text, n_words, p, lut_w, span, tmask):
    """The table word at p: ``lut_w`` bases (``tmask == 0``) or the template's bases of ``span``."""
    if tmask == 0:
        return _bits(text, n_words, p, lut_w)
    x = _span_bits(text, n_words, p, span)
    code = 0
    for j in range(span):
        if (tmask >> (span - 1 - j)) & 1:
            code = (code << 2) | np.int64((x >> np.uint64(2 * (span - 1 - j))) & np.uint64(3))
    return code


@njit(cache=True, inline="always")
def _query_word(qcodes, q, span, tmask):
    code = 0
    for j in range(span):
        if (tmask >> (span - 1 - j)) & 1:
            code = (code << 2) | np.int64(qcodes[q + j])
    return code


@njit(cache=True, inline="always")
def _hit(text, nmask, has_n, n_words, pv, p, w, span, tmask):
    if has_n != 0 and _span_bits(nmask, n_words, p, span) != 0:
        return False
    c = _word_at(text, n_words, p, w, span, tmask)
    return ((pv[c >> 5] >> np.uint32(c & 31)) & np.uint32(1)) != 0




@njit(parallel=True, cache=True, nogil=True)
def scan_pv(text, nmask, has_n, n_words, n_bases, lut_w, span, tmask, stride, phase, pv, hits, n_hits, capacity):
    n_pos = (n_bases - phase - span) // stride + 1 if n_bases >= phase + span else 0
    n_chunks = (n_pos + _CHUNK - 1) // _CHUNK
    counts = np.zeros(n_chunks + 1, np.int64)
    for k in numba.prange(n_chunks):
        c = 0
        for j in range(k * _CHUNK, min(n_pos, (k + 1) * _CHUNK)):
            if _hit(text, nmask, has_n, n_words, pv, phase + j * stride, lut_w, span, tmask):
                c += 1
        counts[k + 1] = c
    for k in range(n_chunks):
        counts[k + 1] += counts[k]
    for k in numba.prange(n_chunks):
        o = counts[k]
        for j in range(k * _CHUNK, min(n_pos, (k + 1) * _CHUNK)):
            if _hit(text, nmask, has_n, n_words, pv, phase + j * stride, lut_w, span, tmask):
                if o < capacity:
                    hits[o] = phase + j * stride
                o += 1
    n_hits[0] = counts[n_chunks]


@njit(parallel=True, cache=True, nogil=True)
def lookup_count(hits, n, text, n_words, lut_w, span, tmask, first, counts):
    for h in numba.prange(n):
        c = _word_at(text, n_words, hits[h], lut_w, span, tmask)
        counts[h] = first[c + 1] - first[c]


@njit(parallel=True, cache=True, nogil=True)
def lookup_fill(hits, n, text, n_words, lut_w, span, tmask, first, positions, out_off, q_pos, s_pos):
    for h in numba.prange(n):
        c = _word_at(text, n_words, hits[h], lut_w, span, tmask)
        o = out_off[h]
        for j in range(first[c], first[c + 1]):
            q_pos[o] = positions[j]
            s_pos[o] = hits[h]
            o += 1


@njit(cache=True, inline="always")
def _bounds(qoff, n_seq, contig_off, n_contigs, q, s):
    """The query sequence holding q and the contig holding s: (qa, qb, ca, cb)."""
    r = _record_of(qoff, n_seq, q)
    c = _record_of(contig_off, n_contigs, s)
    return qoff[r], qoff[r + 1], contig_off[c], contig_off[c + 1]


@njit(parallel=True, cache=True, nogil=True)
def mini_extend(text, nmask, has_n, contig_off, n_contigs, qcodes, qoff, n_seq, qvalid, q_pos, s_pos, n,
                lut_w, stride, word, keep, run_q, run_s, run_len):
    for i in numba.prange(n):
        q = q_pos[i]
        s = s_pos[i]
        qa, qb, ca, cb = _bounds(qoff, n_seq, contig_off, n_contigs, q, s)
        ok = s + lut_w <= cb
        left = 0
        right = lut_w
        k = 0
        if ok:
            # left, stopping at the first earlier stride position of the run that starts a listed
            # query word (its pair finds the run: this one is no seed), so that a pair inside a long
            # run (a repeat) costs at most a few strides, not the run's length
            k = 1
            step = 0
            while q - left - 1 >= qa and s - left - 1 >= ca:
                b = qcodes[q - left - 1]
                g = s - left - 1
                if b > 3 or _is_n(nmask, has_n, g) or _base(text, g) != b:
                    break
                left += 1
                step += 1
                if step == stride:
                    step = 0
                    if qvalid[q - left] != 0:
                        k = 0
                        break
            if k == 1:
                while q + right < qb and s + right < cb:
                    b = qcodes[q + right]
                    g = s + right
                    if b > 3 or _is_n(nmask, has_n, g) or _base(text, g) != b:
                        break
                    right += 1
                if left + right < word:
                    k = 0
        keep[i] = k
        run_q[i] = q - left
        run_s[i] = s - left
        run_len[i] = left + right


@njit(parallel=True, cache=True, nogil=True)
def two_hit(text, nmask, has_n, n_words, contig_off, n_contigs, qcodes, qoff, n_seq, qvalid, q_pos, s_pos, n, span,
            tmask, tmask2, window, keep):
    for i in numba.prange(n):
        q = q_pos[i]
        s = s_pos[i]
        qa, _, ca, cb = _bounds(qoff, n_seq, contig_off, n_contigs, q, s)
        k = 0
        if s + span <= cb:
            k = 1 if window == 0 else 0
            d = span
            while d <= window and k == 0:
                q2 = q - d
                s2 = s - d
                if q2 < qa or s2 < ca:
                    break
                d += 1
                if qvalid[q2] == 0 or (has_n != 0 and _span_bits(nmask, n_words, s2, span) != 0):
                    continue
                if _word_at(text, n_words, s2, 0, span, tmask) == _query_word(qcodes, q2, span, tmask):
                    k = 1
                elif tmask2 != 0 and _word_at(text, n_words, s2, 0, span, tmask2) == _query_word(qcodes, q2, span,
                                                                                                 tmask2):
                    k = 1
        keep[i] = k


@njit(cache=True, inline="always")
def _xdrop_walk(text, nmask, has_n, qcodes, q, g, qlim, glim, step, reward, penalty, n_score, xdrop):
    """X-drop walk along one diagonal from (q, g) by ``step`` (+1 right, -1 left) while inside
    ``qlim``/``glim`` (exclusive ends on the right, first positions on the left): (best gain,
    bases reaching it)."""
    best = 0
    run = 0
    reach = 0
    j = 0
    while True:
        qi = q + step * j
        gi = g + step * j
        if step > 0 and (qi >= qlim or gi >= glim):
            break
        if step < 0 and (qi < qlim or gi < glim):
            break
        b = qcodes[qi]
        if b > 3 or _is_n(nmask, has_n, gi):
            run += n_score
        elif _base(text, gi) == b:
            run += reward
        else:
            run += penalty
        j += 1
        if run > best:
            best = run
            reach = j
        elif run < best - xdrop:
            break
    return best, reach


@njit(parallel=True, cache=True, nogil=True)
def ungapped_extend(text, nmask, has_n, contig_off, n_contigs, qcodes, qoff, n_seq, run_q, run_s, run_len, n,
                    reward, penalty, n_score, xdrop, score, q_start, q_end):
    for i in numba.prange(n):
        q0 = run_q[i]
        s0 = run_s[i]
        length = run_len[i]
        qa, qb, ca, cb = _bounds(qoff, n_seq, contig_off, n_contigs, q0, s0)
        best_r, end = _xdrop_walk(text, nmask, has_n, qcodes, q0 + length, s0 + length, qb, cb, 1, reward, penalty,
                                  n_score, xdrop)
        best_l, start = _xdrop_walk(text, nmask, has_n, qcodes, q0 - 1, s0 - 1, qa, ca, -1, reward, penalty,
                                    n_score, xdrop)
        score[i] = length * reward + best_r + best_l
        q_start[i] = q0 - start
        q_end[i] = q0 + length + end


@njit(parallel=True, cache=True, nogil=True)
def unpack_ranges(text, nmask, has_n, start, out_off, n_ranges, codes):
    for r in numba.prange(n_ranges):
        for i in range(out_off[r], out_off[r + 1]):
            g = start[r] + (i - out_off[r])
            codes[i] = 4 if _is_n(nmask, has_n, g) else _base(text, g)


@njit(cache=True, nogil=True)
def _dust_keep(s, e, a, lo, hi, reach, reach_base):
    if lo <= a + s < hi:
        reach[a + s - reach_base] = e - s if e >= 0 else -1


@njit(cache=True, nogil=True)
def dust_span(codes, a, b, lo, hi, level, window, reach, reach_base):
    """Symmetric DUST (``gseek.blast.dust``) of the starts ``lo .. hi - 1`` read from ``codes[a:b]``
    (codes 0-3; ``a <= lo``, ``b`` the record's end or at least ``window`` bases after ``hi``):
    ``reach[s - reach_base]`` = ``e - s`` for the largest end ``e`` of a perfect interval ``[s, e)``,
    -1 where none starts at ``s``.

    For each end e, the stretches [s, e) are scored from s = e - 3 down, one triplet at a time; but
    a stretch can score above the level only if it is short enough: its repeats ``r`` are at most
    those of the whole window [e - window, e) (``whole``, kept as the window slides), and
    ``r * 10 > level * l`` needs ``l < 10 * whole / level``. So only those starts are scored (about
    15 of 62 in random DNA). ``best[s]`` is then kept only where s is scored: a stretch [x, y) above
    the level was scored at its end y, so ``best[x]`` holds it, and every later walk over a start
    s <= x passes x first (whatever it left stale below its last start, it never reads).

    Only the starts of the last ``window`` ends are ever read or written, so ``best`` and ``ends``
    are rings of ``ring`` (>= window + 1) slots, a slot emptied when its start s = e - 3 comes in.
    Start s's reach depends only on the bases of [s, s + window) (its stretches and the starts after
    it; a window cut short at ``a`` holds every stretch from s still, so it prunes only stretches that
    cannot score): a record read in spans of starts (one a GPU thread) gives the one pass's reach."""
    n = b - a
    tri = np.empty(max(n - 2, 0), np.uint8)  # the triplet starting at each position
    for s in range(n - 2):
        tri[s] = codes[a + s] * 16 + codes[a + s + 1] * 4 + codes[a + s + 2]
    counts = np.zeros(64, np.int64)  # triplets of the stretch being scored (emptied after each end)
    slide = np.zeros(64, np.int64)  # triplets of the whole window
    whole = 0  # the whole window's repeats: sum of c (c - 1) / 2 over slide
    ring = 1
    while ring < window + 1:
        ring *= 2
    slot = ring - 1
    # best_r/best_l[s]: the best score (r / l) of a stretch above the level inside [s, e - 1) before
    # end e is done, inside [s, e) after, where s is scored; best_r = 0 means none. Only ratios are
    # ever compared. One row, rewritten in place: a walk reads best[s] before it writes it.
    best_r = np.zeros(ring, np.int64)
    best_l = np.ones(ring, np.int64)
    ends = np.full(ring, -1, np.int64)
    written = 0  # the starts below are final (no later end reaches them)
    for e in range(3, n + 1):
        lowest = max(0, e - window)
        best_r[(e - 3) & slot], best_l[(e - 3) & slot], ends[(e - 3) & slot] = 0, 1, -1
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
                    if e > ends[s & slot]:
                        ends[s & slot] = e
                    m_r, m_l = r, l
            best_r[s & slot], best_l[s & slot] = m_r, m_l
        for s in range(e - 3, last - 1, -1):
            counts[tri[s]] -= 1
        if e - window >= written:  # no later end reaches start e - window
            _dust_keep(written, ends[written & slot], a, lo, hi, reach, reach_base)
            written += 1
    for s in range(written, n - 2):
        _dust_keep(s, ends[s & slot], a, lo, hi, reach, reach_base)


@njit(parallel=True, cache=True, nogil=True)
def dust_reach(codes, span_lo, span_hi, rec_end, n_spans, level, window, reach):
    """:func:`dust_span` of every span of starts ``span_lo[i] .. span_hi[i] - 1`` of an N-free record
    ending at ``rec_end[i]`` (one a thread; ``reach`` indexed by position)."""
    for i in numba.prange(n_spans):
        lo, hi = span_lo[i], span_hi[i]
        dust_span(codes, lo, min(rec_end[i], hi + window), lo, hi, level, window, reach, 0)

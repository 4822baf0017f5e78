"""Slow, readable references of the ``blast`` kernel family (kernels/blast.py, kernels/blast.cu).

Plain Python over plain lists of base codes (0..3, 4 = N), written from the rules of the
kernels' docstring, not from their code. The text is the unpacked database (all contigs
concatenated, ``contig_off`` their n + 1 bounds); the queries are the sequences of one batch
(``qoff`` their n + 1 bounds into ``qcodes``). ``listed[i]`` is True where the table word of
``lut_w`` bases starting at query position ``i`` is in the lookup table: it fits inside its
sequence and touches no N and no masked base.

:func:`seed_oracle` finds the seeds without scan, lookup or mini-extension: by comparing every
diagonal of every (query sequence, contig) pair.
"""

from __future__ import annotations

import numpy as np


def _code(word: list[int]) -> int:
    code = 0
    for c in word:
        code = code * 4 + c
    return code


def _owner(offsets: list[int], x: int) -> int:
    """The record ``r`` with ``offsets[r] <= x < offsets[r + 1]``."""
    for r in range(len(offsets) - 1):
        if offsets[r] <= x < offsets[r + 1]:
            return r
    raise ValueError(x)


def listed_positions(qcodes: list[int], qoff: list[int], lut_w: int, mask: list[int] | None = None) -> list[bool]:
    """Whether the table word at each query position is listed (inside its sequence, no N, not masked)."""
    mask = mask or [0] * len(qcodes)
    out = [False] * len(qcodes)
    for r in range(len(qoff) - 1):
        for i in range(qoff[r], qoff[r + 1] - lut_w + 1):
            window = range(i, i + lut_w)
            out[i] = all(qcodes[j] < 4 and not mask[j] for j in window)
    return out


def lookup_table(qcodes: list[int], listed: list[bool], lut_w: int) -> dict[int, list[int]]:
    """Word code -> its listed query positions, in increasing order."""
    table: dict[int, list[int]] = {}
    for i, ok in enumerate(listed):
        if ok:
            table.setdefault(_code(qcodes[i:i + lut_w]), []).append(i)
    return table


def scan(text: list[int], lut_w: int, stride: int, table: dict[int, list[int]], phase: int = 0) -> list[int]:
    """Stride positions ``p = phase + k * stride`` whose ``lut_w`` text bases hold no N and whose word is
    in the table (the presence vector). Contig bounds are not looked at: a word may cross one."""
    hits = []
    for p in range(phase, len(text) - lut_w + 1, stride):
        word = text[p:p + lut_w]
        if 4 not in word and _code(word) in table:
            hits.append(p)
    return hits


def lookup_pairs(text: list[int], hits: list[int], lut_w: int, table: dict[int, list[int]]) -> list[tuple[int, int]]:
    """One (query position, text position) pair per query position of each hit's word, hit by hit."""
    return [(q, p) for p in hits for q in table.get(_code(text[p:p + lut_w]), [])]


def exact_run(text, contig_off, qcodes, qoff, q, s) -> tuple[int, int] | None:
    """The maximal run of equal, N-free bases through (q, s) along its diagonal, inside q's sequence
    and s's contig: (bases left of (q, s), bases from (q, s) on); None when (q, s) itself differs."""
    r, c = _owner(qoff, q), _owner(contig_off, s)

    def same(i, g):
        return qoff[r] <= i < qoff[r + 1] and contig_off[c] <= g < contig_off[c + 1] \
            and qcodes[i] < 4 and text[g] < 4 and qcodes[i] == text[g]

    if not same(q, s):
        return None
    left = 0
    while same(q - left - 1, s - left - 1):
        left += 1
    right = 0
    while same(q + right, s + right):
        right += 1
    return left, right


def mini_extend(text, contig_off, qcodes, qoff, listed, pairs, lut_w, stride, word):
    """Per pair: (keep, run_q, run_s, run_len) of the exact run through it, or None where the
    pair's text word crosses its contig's end (never a seed). ``keep``: the run is at least
    ``word`` long and this pair is its first finder — no stride position before it in the run
    (its table word inside the run) starts a listed query word. The kernels give the run only
    where ``keep`` is 1 (they stop reading a run at its first earlier finder)."""
    out = []
    for q, s in pairs:
        c = _owner(contig_off, s)
        if s + lut_w > contig_off[c + 1]:
            out.append(None)
            continue
        left, right = exact_run(text, contig_off, qcodes, qoff, q, s)
        assert right >= lut_w, "a lookup pair's word is equal on both sides"
        first = not any(listed[q - back] for back in range(stride, left + 1, stride))
        out.append((int(left + right >= word and first), q - left, s - left, left + right))
    return out


def seed_oracle(text, contig_off, qcodes, qoff, listed, lut_w, stride, word) -> set[tuple[int, int, int]]:
    """Every seed as (run_q, run_s, run_len), by brute force: each maximal exact N-free diagonal
    run between a query sequence and a contig, at least ``word`` long, holding a text position
    ``p`` with ``p % stride == 0`` whose table word lies inside the run and whose query word is
    listed."""
    t = np.asarray(text)
    qc = np.asarray(qcodes)
    seeds = set()
    for r in range(len(qoff) - 1):
        qa, qb = qoff[r], qoff[r + 1]
        for c in range(len(contig_off) - 1):
            ca, cb = contig_off[c], contig_off[c + 1]
            for d in range(-(qb - qa) + 1, cb - ca):   # text offset - query offset
                i0 = max(0, -d)
                i1 = min(qb - qa, cb - ca - d)
                if i1 <= i0:
                    continue
                a = qc[qa + i0:qa + i1]
                b = t[ca + i0 + d:ca + i1 + d]
                eq = np.concatenate([[False], (a == b) & (a < 4), [False]])
                starts = np.flatnonzero(~eq[:-1] & eq[1:])
                ends = np.flatnonzero(eq[:-1] & ~eq[1:])
                for x, y in zip(starts.tolist(), ends.tolist()):
                    if y - x < word:
                        continue
                    q0, s0 = qa + i0 + x, ca + i0 + d + x
                    length = y - x
                    for p in range(s0, s0 + length - lut_w + 1):
                        if p % stride == 0 and listed[q0 + (p - s0)]:
                            seeds.add((q0, s0, length))
                            break
    return seeds


def ungapped_extend(text, contig_off, qcodes, qoff, run_q, run_s, run_len, reward, penalty, n_score, xdrop):
    """BLAST's ungapped X-drop extension of a seed run: walk right from its end, then left from its
    start, each while inside the sequence and the contig, scoring ``reward`` for equal bases and
    ``penalty`` otherwise, ``n_score`` where either side is N; stop when the running score falls more
    than ``xdrop`` below the best, and keep the extent of the best (an empty walk if nothing beats 0).
    Returns (score, q_start, q_end)."""
    r, c = _owner(qoff, run_q), _owner(contig_off, run_s)

    def walk(q, s, step):
        best = run = reach = 0
        j = 0
        while qoff[r] <= q + step * j < qoff[r + 1] and contig_off[c] <= s + step * j < contig_off[c + 1]:
            a, b = qcodes[q + step * j], text[s + step * j]
            run += n_score if a > 3 or b > 3 else reward if a == b else penalty
            j += 1
            if run > best:
                best, reach = run, j
            elif run < best - xdrop:
                break
        return best, reach

    right, end = walk(run_q + run_len, run_s + run_len, +1)
    left, start = walk(run_q - 1, run_s - 1, -1)
    return run_len * reward + right + left, run_q - start, run_q + run_len + end


def unpack_ranges(text, starts, lengths) -> list[int]:
    """Base codes of text ranges ``[start, start + length)``, concatenated."""
    out = []
    for a, n in zip(starts, lengths):
        out.extend(text[a:a + n])
    return out


# --------------------------------------------------------------------------- discontiguous words (dc-megablast)


def template_word(bases: list[int], pattern: str) -> int:
    """The word of a template over ``bases`` (as many as the pattern): the bases under its '1's, in
    order, read as a base-4 number (the first base the most significant)."""
    return _code([b for b, keep in zip(bases, pattern) if keep == "1"])


def template_listed(qcodes, qoff, pattern: str, mask=None) -> list[bool]:
    """Whether a template word starts at each query position: its whole span (the '0's too) inside
    the sequence, without N and unmasked, as BLAST+ lists discontiguous words."""
    return listed_positions(qcodes, qoff, len(pattern), mask)


def template_table(qcodes, listed, pattern: str) -> dict[int, list[int]]:
    """Template word -> its listed query positions, in increasing order."""
    table: dict[int, list[int]] = {}
    for i, ok in enumerate(listed):
        if ok:
            table.setdefault(template_word(qcodes[i:i + len(pattern)], pattern), []).append(i)
    return table


def template_scan(text, pattern: str, table) -> list[int]:
    """Every text position whose template span holds no N and whose word is in the table (BLAST+
    scans discontiguous words at every base); a span may cross a contig's end."""
    span = len(pattern)
    return [p for p in range(len(text) - span + 1)
            if 4 not in text[p:p + span] and template_word(text[p:p + span], pattern) in table]


def template_pairs(text, hits, pattern: str, table) -> list[tuple[int, int]]:
    """One (query position, text position) pair per query position of each hit's word."""
    span = len(pattern)
    return [(q, p) for p in hits for q in table.get(template_word(text[p:p + span], pattern), [])]


def two_hit(text, contig_off, qcodes, qoff, listed, pairs, patterns: list[str], window: int) -> list[int]:
    """Per pair, 1 when it is a seed: its span inside its contig and (``window`` > 0) another word hit
    under any of ``patterns`` starting d = span .. window bases before it on its diagonal, inside its
    query sequence and contig (BLAST+'s two-hit rule for discontiguous words, window 40)."""
    span = len(patterns[0])
    out = []
    for q, s in pairs:
        r, c = _owner(qoff, q), _owner(contig_off, s)
        if s + span > contig_off[c + 1]:
            out.append(0)
            continue
        if window == 0:
            out.append(1)
            continue
        found = 0
        for d in range(span, window + 1):
            q2, s2 = q - d, s - d
            if q2 < qoff[r] or s2 < contig_off[c]:
                break
            t = text[s2:s2 + span]
            if listed[q2] and 4 not in t and any(
                    template_word(t, p) == template_word(qcodes[q2:q2 + span], p) for p in patterns):
                found = 1
                break
        out.append(found)
    return out

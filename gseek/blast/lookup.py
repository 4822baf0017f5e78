"""The query lookup table and its presence vector (G-BLASTN's query side; BLAST+'s nucleotide lookup).

Every w-mer of a batch of queries — but those touching an N (code 4) or a
masked base (DUST, lowercase) — is listed under its 2-bit code: word ``c``'s
query positions are ``positions[first[c]:first[c + 1]]``, in increasing
order (positions index the queries' concatenated codes). The presence vector
(PV) holds one bit a word, set where the word occurs, so a scan can drop most
database words with one bit test in fast memory before it reads the table
(G-BLASTN keeps the PV in shared memory and the table in global memory).
Many queries share one table: the database is scanned once per batch.

The query side is built on the host in parallel Numba passes: the searched
strands laid end to end (:func:`query_strands`), every position's word
(:func:`word_codes`, in pieces of positions), then the table: the seeding
positions sorted by range of codes (a stable counting sort), then each range
counted, its offsets placed and its lists filled on its own thread, in position
order; so it is the same for any thread count.

>>> import numpy as np
>>> codes = np.array([0, 1, 2, 3, 0, 1, 2, 4, 0, 1, 2], np.uint8)  # ACGTACGNACG
>>> t = build_lookup(codes, np.array([0, 11]), w=3)
>>> t.positions_of(np.array([0, 1, 2])).tolist()  # ACG
[0, 4, 8]
>>> t.positions_of(np.array([1, 2, 4])).size  # a word with an N never seeds
0
>>> bool(t.present(6)), bool(t.present(7))  # ACG = 0b000110, ACT = 0b000111
(True, False)
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from gseek.errors import OptionError
from gseek.kernels._jit import njit

__all__ = ["LookupTable", "build_lookup", "lookup_of_words", "query_strands", "seeding", "word_codes",
           "MAX_LOOKUP_WORD", "Template", "TEMPLATES", "template_of", "template_word_codes"]

#: Longest word a direct table (4^w lists, a 4^w-bit PV) is built for: 4^14 = 268M lists
#: would already be 1 GiB of offsets; BLAST+'s nucleotide lookups use w <= 12 (megablast's
#: word size 28 is reached by mini-extension from a shorter table word).
MAX_LOOKUP_WORD = 13


#: BLAST+'s discontiguous word templates (dc-megablast; ``blast_nalookup.h``, read 5' to 3'): (weight,
#: length, type) -> '1' where the base is part of the word. Coding templates leave out every third
#: base (a codon's wobble position); the optimal ones maximise the chance of a hit in random
#: alignments.
TEMPLATES: dict[tuple[int, int, str], str] = {
    (12, 16, "optimal"): "1110110110110111", (11, 16, "optimal"): "1110010110110111",
    (12, 18, "optimal"): "111010110010110111", (11, 18, "optimal"): "111010010110010111",
    (12, 21, "optimal"): "111010010110010010111", (11, 21, "optimal"): "111010010100010010111",
    (12, 16, "coding"): "1111101101101101", (11, 16, "coding"): "1101101101101101",
    (12, 18, "coding"): "101101101101101101", (11, 18, "coding"): "101101100101101101",
    (12, 21, "coding"): "100101101101100101101", (11, 21, "coding"): "100101100101100101101",
}


@dataclass(frozen=True)
class Template:
    """A discontiguous word: ``pattern`` over ``span`` bases, '1' where a base is in the word (its
    ``weight`` bases, first base in the word code's high bits). ``mask``: bit ``span - 1 - j`` set
    where base ``j`` is in the word (what the kernels take)."""

    pattern: str

    @property
    def span(self) -> int:
        return len(self.pattern)

    @property
    def weight(self) -> int:
        return self.pattern.count("1")

    @property
    def mask(self) -> int:
        return int(self.pattern, 2)


def template_of(weight: int, length: int, kind: str) -> Template:
    """BLAST+'s template of ``weight`` (11, 12) bases over ``length`` (16, 18, 21), ``coding`` or ``optimal``."""
    key = (int(weight), int(length), kind)
    if key not in TEMPLATES:
        raise OptionError(f"no discontiguous template of weight {weight}, length {length}, type {kind!r}")
    return Template(TEMPLATES[key])


#: Bases (or words) of one parallel piece of the query-side passes; several pieces a thread.
_BLOCK = 1 << 16


@njit(parallel=True, cache=True, nogil=True)
def _strands(codes, offsets, mask, seq_query, seq_strand, seq_off, hard, block, seq_codes, seq_mask):
    """Sequence k is query ``seq_query[k]`` (plus strand) or its reverse complement (minus), its
    mask beside it; ``hard``: a masked base is N. In pieces of ``block`` output bases."""
    n = seq_off[-1]
    for p in numba.prange((n + block - 1) // block):
        j, stop = p * block, min(n, (p + 1) * block)
        k = np.searchsorted(seq_off, j, side="right") - 1
        while j < stop:
            a, b, o = offsets[seq_query[k]], offsets[seq_query[k] + 1], seq_off[k]
            end = min(stop, seq_off[k + 1])
            plus = seq_strand[k] > 0
            for i in range(j, end):
                src = a + (i - o) if plus else b - 1 - (i - o)
                c = codes[src]
                if not plus and c < 4:
                    c = 3 - c
                m = mask[src]
                seq_codes[i] = 4 if hard and m != 0 else c
                seq_mask[i] = m
            j = end
            k += 1


@njit(parallel=True, cache=True, nogil=True)
def _words(codes, offsets, mask, w, block, out):
    """Code of the w-mer starting at every position, -1 where it runs past its query's end or
    holds an N or a masked base: a rolling code, in pieces of ``block`` starting positions (a
    piece reads up to w - 1 bases past its end)."""
    n = codes.size
    keep = (1 << (2 * w)) - 1
    for p in numba.prange((n + block - 1) // block):
        j, stop = p * block, min(n, (p + 1) * block)
        for i in range(j, stop):
            out[i] = -1
        q = np.searchsorted(offsets, j, side="right") - 1
        code = 0
        valid = 0  # bases in the current run without N or mask, up to w
        for i in range(j, min(n, stop + w - 1)):
            while i >= offsets[q + 1]:  # a new query (skipping empty ones): a new run
                q += 1
                valid = 0
                code = 0
            c = codes[i]
            if c > 3 or mask[i] != 0:
                valid = 0
                code = 0
                continue
            code = ((code << 2) | c) & keep
            if valid < w:
                valid += 1
            if valid == w and i - w + 1 >= j:
                out[i - w + 1] = code


@njit(parallel=True, cache=True, nogil=True)
def _template_words(codes, offsets, mask, span, tmask, block, out):
    """Code of the template word starting at every position (its ``tmask`` bases of the ``span``
    from there), -1 where the span runs past its query's end or holds an N or a masked base. In
    pieces of ``block`` starting positions."""
    n = codes.size
    for p in numba.prange((n + block - 1) // block):
        j, stop = p * block, min(n, (p + 1) * block)
        q = np.searchsorted(offsets, j, side="right") - 1
        for i in range(j, stop):
            while i >= offsets[q + 1]:
                q += 1
            code = 0
            ok = i + span <= offsets[q + 1]
            k = 0
            while ok and k < span:
                c = codes[i + k]
                if c > 3 or mask[i + k] != 0:
                    ok = False
                elif (tmask >> (span - 1 - k)) & 1:
                    code = (code << 2) | c
                k += 1
            out[i] = code if ok else -1


@njit(parallel=True, cache=True, nogil=True)
def _bucket_counts(words, span, block, counts):
    """counts[b, r] = the seeding words of position block b whose code lies in range r (codes
    ``r * span .. (r + 1) * span - 1``)."""
    n = words.size
    for b in numba.prange(counts.shape[0]):
        for i in range(b * block, min(n, (b + 1) * block)):
            c = words[i]
            if c >= 0:
                counts[b, c // span] += 1


@njit(parallel=True, cache=True, nogil=True)
def _bucket_fill(words, span, block, starts, bucket, low):
    """The seeding positions grouped by code range, each range's in increasing position order, and
    their words' places in the range beside them (``low``: ``code - r * span < 2^16``; a stable
    counting sort: block b writes its positions of range r from ``starts[b, r]`` on)."""
    n = words.size
    for b in numba.prange(starts.shape[0]):
        cursor = starts[b].copy()
        for i in range(b * block, min(n, (b + 1) * block)):
            c = words[i]
            if c >= 0:
                r = c // span
                bucket[cursor[r]] = i
                low[cursor[r]] = c - r * span
                cursor[r] += 1


@njit(parallel=True, cache=True, nogil=True)
def _table(span, bounds, bucket, low, first):
    """Each code range r on its own: its words counted into ``first``, turned into offsets from the
    range's place in ``bucket`` (``bounds[r]``), then its positions sorted by word in that place (the
    range's part copied aside first), each word's in increasing order: ``bucket`` becomes the table's
    positions. A range writes only its own entries of ``first`` and its own part of ``bucket``."""
    n_codes = first.size - 1
    for r in numba.prange(bounds.size - 1):
        lo, hi = r * span, min(n_codes, (r + 1) * span)
        a, b = bounds[r], bounds[r + 1]
        for k in range(a, b):
            first[lo + low[k]] += 1
        at = a
        for c in range(lo, hi):  # counts -> offsets, in place (only this range's entries)
            size = first[c]
            first[c] = at
            at += size
        cursor = first[lo:hi].copy()
        aside = bucket[a:b].copy()
        for k in range(a, b):
            c = low[k]
            bucket[cursor[c]] = aside[k - a]
            cursor[c] += 1


@njit(parallel=True, cache=True, nogil=True)
def _presence(first, pv):
    """PV bit c set where word c has positions."""
    n_codes = first.size - 1
    for g in numba.prange(pv.size):
        bits = np.uint32(0)
        for b in range(32):
            c = g * 32 + b
            if c < n_codes and first[c + 1] > first[c]:
                bits |= np.uint32(1) << np.uint32(b)
        pv[g] = bits


@njit(parallel=True, cache=True, nogil=True)
def _seeding(words, valid):
    for i in numba.prange(words.size):
        valid[i] = 1 if words[i] >= 0 else 0


@dataclass(frozen=True)
class LookupTable:
    """Word -> query positions (``first``/``positions``, a ragged array over all 4^w
    words) and the presence vector ``pv`` (bit ``c & 31`` of word ``c >> 5``)."""

    w: int
    first: np.ndarray
    positions: np.ndarray
    pv: np.ndarray

    @property
    def n_words(self) -> int:
        """Listed word occurrences (query positions that seed)."""
        return int(self.positions.size)

    def present(self, code: int) -> bool:
        """Whether word ``code`` occurs in the queries (the PV bit)."""
        return bool((self.pv[code >> 5] >> np.uint32(code & 31)) & 1)

    def positions_of(self, word: np.ndarray) -> np.ndarray:
        """Query positions of the w-mer given as base codes (0..3)."""
        code = 0
        for c in np.asarray(word, dtype=np.int64).tolist():
            if not 0 <= c <= 3:
                return np.zeros(0, np.int64)
            code = (code << 2) | c
        return self.positions[self.first[code]:self.first[code + 1]]


def _parts() -> int:
    """Code ranges of the table's passes: one a Numba thread."""
    return max(1, numba.get_num_threads())


def word_codes(codes: np.ndarray, offsets: np.ndarray, w: int, mask: np.ndarray | None = None) -> np.ndarray:
    """The code of the w-mer starting at every position (int32: ``4^w <= 2^26``; -1 where none seeds)."""
    if not 1 <= int(w) <= MAX_LOOKUP_WORD:
        raise OptionError(f"lookup word length must be 1..{MAX_LOOKUP_WORD}, not {w}")
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    mask = np.zeros(codes.size, np.uint8) if mask is None else np.ascontiguousarray(mask, dtype=np.uint8)
    if mask.size != codes.size:
        raise OptionError(f"mask has {mask.size} entries for {codes.size} bases")
    out = np.empty(codes.size, np.int32)
    _words(codes, np.ascontiguousarray(offsets, dtype=np.int64), mask, int(w), _BLOCK, out)
    return out


def template_word_codes(codes: np.ndarray, offsets: np.ndarray, template: Template,
                        mask: np.ndarray | None = None) -> np.ndarray:
    """The code of the ``template`` word starting at every position (int64; -1 where none seeds: the
    template's span must fit in the query and hold no N and no masked base, as BLAST+ lists them).

    >>> import numpy as np
    >>> template_word_codes(np.array([0, 1, 2, 3, 0], np.uint8), np.array([0, 5]), Template("101")).tolist()
    [2, 7, 8, -1, -1]
    """
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    mask = np.zeros(codes.size, np.uint8) if mask is None else np.ascontiguousarray(mask, dtype=np.uint8)
    out = np.empty(codes.size, np.int64)
    _template_words(codes, np.ascontiguousarray(offsets, dtype=np.int64), mask, template.span, template.mask,
                    _BLOCK, out)
    return out


def _by_range(words: np.ndarray, n_codes: int, span: int, index: type) -> tuple[np.ndarray, ...]:
    """The seeding positions of ``words`` grouped by range of ``span`` codes (<= 2^16), each range's in
    increasing order (a stable counting sort, a block of positions a thread): the ranges' bounds (int64),
    the positions (``index``) and each one's word's place in its range (uint16)."""
    parts = -(-n_codes // span)
    blocks = max(1, -(-words.size // _BLOCK))
    counts = np.zeros((blocks, parts), np.int64)
    _bucket_counts(words, span, _BLOCK, counts)
    # block b's place for range r: after every range before r, and range r's words of blocks before b
    starts = np.cumsum(counts.T.ravel()).reshape(parts, blocks).T - counts
    bounds = np.zeros(parts + 1, np.int64)
    np.cumsum(counts.sum(axis=0), out=bounds[1:])
    positions = np.empty(int(bounds[-1]), index)
    low = np.empty(int(bounds[-1]), np.uint16)
    _bucket_fill(words, span, _BLOCK, np.ascontiguousarray(starts), positions, low)
    return bounds, positions, low


def lookup_of_words(words: np.ndarray, w: int) -> LookupTable:
    """The lookup table and PV of :func:`word_codes`' ``words`` (of length ``w``).

    A stable counting sort of the seeding positions by code range (one range a thread), then each
    range's counts, offsets and lists on its own thread, in place: every pass reads each word once or
    twice, whatever the thread count, and the result is the same for any thread count. Beside
    ``words`` (4 bytes a position) it holds the table (4 bytes a seeding position, 4^w + 1 offsets),
    while it is built 2 bytes more a seeding position (its word's place in its range) and one
    range's positions at a time a thread."""
    wide = words.size >= (1 << 31) - 1
    index = np.int64 if wide else np.int32  # offsets and positions: int32 whenever they fit
    n_codes = 1 << (2 * int(w))
    parts = max(_parts(), n_codes >> 16)  # a range's counts and cursors (256 KiB) stay in a core's cache
    span = -(-n_codes // parts)
    bounds, positions, low = _by_range(words, n_codes, span, index)  # by code range; by word once _table ran
    first = np.zeros(n_codes + 1, index)
    _table(span, bounds.astype(index), positions, low, first)
    del low
    first[n_codes] = bounds[-1]
    pv = np.zeros(max(1, n_codes >> 5), np.uint32)
    _presence(first, pv)
    return LookupTable(int(w), first, positions, pv)


def seeding(words: np.ndarray) -> np.ndarray:
    """uint8, 1 where a word of :func:`word_codes` seeds (``words >= 0``)."""
    valid = np.empty(words.size, np.uint8)
    _seeding(words, valid)
    return valid


def build_lookup(codes: np.ndarray, offsets: np.ndarray, w: int, mask: np.ndarray | None = None) -> LookupTable:
    """The lookup table and PV of every query ``codes[offsets[q]:offsets[q + 1]]`` for words of ``w``.

    Arguments:
        codes: the queries' base codes (0..3, 4 = N), concatenated (both strands, if
            both are searched: the caller lays the reverse complements after them).
        offsets: n + 1 query offsets into ``codes``.
        w: the table's word length (1..:data:`MAX_LOOKUP_WORD`).
        mask: non-zero where a base may not seed (DUST, lowercase); None: no mask.
    """
    return lookup_of_words(word_codes(codes, offsets, w, mask), w)


def query_strands(codes: np.ndarray, offsets: np.ndarray, mask: np.ndarray, strands: tuple[int, ...],
                  hard: bool = False) -> tuple[np.ndarray, ...]:
    """The searched strands of every query, concatenated query-major (for each query, its
    ``strands`` in order: +1 the query, -1 its reverse complement), and their masks.

    Returns ``(seq_codes, seq_mask, seq_off, seq_query, seq_strand)``: codes and mask (uint8) of
    the sequences laid end to end, their n + 1 offsets, and each sequence's query and strand.
    ``hard``: a masked base is also N in ``seq_codes`` (BLAST+'s hard masking).

    >>> import numpy as np
    >>> c, m, off, q, st = query_strands(np.array([0, 0, 1, 4], np.uint8), np.array([0, 4]),
    ...                                  np.array([0, 1, 0, 0], np.uint8), (1, -1))
    >>> c.tolist(), m.tolist(), off.tolist()  # AACN, then NGTT
    ([0, 0, 1, 4, 4, 2, 3, 3], [0, 1, 0, 0, 0, 0, 1, 0], [0, 4, 8])
    """
    offsets = np.ascontiguousarray(offsets, np.int64)
    nq = offsets.size - 1
    qlen = np.diff(offsets)
    seq_query = np.repeat(np.arange(nq, dtype=np.int64), len(strands))
    seq_strand = np.tile(np.array(strands, np.int8), nq)
    seq_off = np.zeros(seq_query.size + 1, np.int64)
    np.cumsum(qlen[seq_query], out=seq_off[1:])
    n = int(seq_off[-1])
    seq_codes, seq_mask = np.empty(n, np.uint8), np.empty(n, np.uint8)
    _strands(np.ascontiguousarray(codes, np.uint8), offsets, np.ascontiguousarray(mask, np.uint8), seq_query,
             seq_strand, seq_off, bool(hard), _BLOCK, seq_codes, seq_mask)
    return seq_codes, seq_mask, seq_off, seq_query, seq_strand

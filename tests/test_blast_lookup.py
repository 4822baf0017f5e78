"""The BLAST query lookup table and presence vector (gseek.blast.lookup) against a slow readable
reference: every w-mer of every query, none across a query boundary, none touching an N or a
masked base, positions in increasing order, the PV bit set exactly for the words listed."""

from __future__ import annotations

import numpy as np
import pytest

from gseek.blast import lookup
from gseek.blast.lookup import MAX_LOOKUP_WORD, build_lookup, query_strands, seeding, word_codes
from gseek.errors import OptionError


def reference(codes, offsets, w, mask):
    """word code -> list of positions, by reading every window of every query."""
    table: dict[int, list[int]] = {}
    for q in range(len(offsets) - 1):
        for i in range(offsets[q], offsets[q + 1] - w + 1):
            window = codes[i : i + w]
            if (window > 3).any() or mask[i : i + w].any():
                continue
            code = 0
            for c in window.tolist():
                code = (code << 2) | c
            table.setdefault(code, []).append(i)
    return table


def reference_strands(codes, offsets, mask, strands, hard):
    """Each query's strands in turn: the query (+1) or its reverse complement (-1), mask beside it."""
    seqs, masks, lengths, query, strand = [], [], [], [], []
    for q in range(len(offsets) - 1):
        c, m = codes[offsets[q]:offsets[q + 1]], mask[offsets[q]:offsets[q + 1]]
        for s in strands:
            sc = c.copy() if s > 0 else np.where(c[::-1] < 4, 3 - c[::-1], 4).astype(np.uint8)
            sm = m.copy() if s > 0 else m[::-1].copy()
            if hard:
                sc[sm != 0] = 4
            seqs.append(sc)
            masks.append(sm)
            lengths.append(c.size)
            query.append(q)
            strand.append(s)
    join = (lambda parts: np.concatenate(parts).astype(np.uint8)) if seqs else (lambda parts: np.zeros(0, np.uint8))
    return join(seqs), join(masks), np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64), query, strand


def _queries(rng, n, n_rate=0.02, mask_rate=0.03):
    lengths = rng.integers(0, 80, n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    codes = rng.integers(0, 4, int(offsets[-1])).astype(np.uint8)
    codes[rng.random(codes.size) < n_rate] = 4
    mask = (rng.random(codes.size) < mask_rate).astype(np.uint8)
    return codes, offsets, mask


@pytest.mark.parametrize("w", [1, 2, 5, 8, 11, 12])
@pytest.mark.parametrize("seed", range(3))
def test_table_equals_the_reference(w, seed):
    rng = np.random.default_rng(100 * w + seed)
    codes, offsets, mask = _queries(rng, 40)
    if w <= 5:  # short words: many repeats per word
        codes = rng.integers(0, 4, codes.size).astype(np.uint8)
    table = build_lookup(codes, offsets, w, mask)
    want = reference(codes, offsets, w, mask)
    assert table.first.size == 4**w + 1 and table.first[0] == 0
    got = {c: table.positions[table.first[c]:table.first[c + 1]].tolist()
           for c in np.flatnonzero(np.diff(table.first)).tolist()}
    assert got == want
    # The presence vector's bits, all 4**w of them, read at once (bit c & 31 of word c >> 5: bit c of
    # the little-endian bytes); present() on every word present and on as many absent ones.
    bits = np.unpackbits(table.pv.astype("<u4").view(np.uint8), bitorder="little")[: 4**w]
    assert set(np.flatnonzero(bits).tolist()) == set(want)
    absent = np.flatnonzero(bits == 0)
    probe = rng.choice(absent, min(absent.size, len(want)), replace=False).tolist() if absent.size else []
    assert all(table.present(c) for c in want) and not any(table.present(c) for c in probe)
    assert table.n_words == sum(len(v) for v in want.values())


def test_words_never_cross_a_query_boundary():
    codes = np.array([0, 1, 2, 3, 0, 1], np.uint8)  # ACGTAC
    whole = build_lookup(codes, np.array([0, 6]), 4)
    split = build_lookup(codes, np.array([0, 3, 6]), 4)  # ACG | TAC: no 4-mer fits in either
    assert whole.n_words == 3 and split.n_words == 0
    assert word_codes(codes, np.array([0, 3, 6]), 2).tolist() == [1, 6, -1, 12, 1, -1]


def test_mask_and_n_stop_seeding():
    codes = np.array([0, 0, 0, 0, 0, 0], np.uint8)
    mask = np.array([0, 0, 1, 0, 0, 0], np.uint8)
    t = build_lookup(codes, np.array([0, 6]), 2, mask)
    assert t.positions_of(np.array([0, 0])).tolist() == [0, 3, 4]
    codes[4] = 4
    t = build_lookup(codes, np.array([0, 6]), 2)
    assert t.positions_of(np.array([0, 0])).tolist() == [0, 1, 2]


def test_bad_word_length_and_mask_are_refused():
    with pytest.raises(OptionError, match="word length"):
        build_lookup(np.zeros(4, np.uint8), np.array([0, 4]), MAX_LOOKUP_WORD + 1)
    with pytest.raises(OptionError, match="mask has 3 entries"):
        build_lookup(np.zeros(4, np.uint8), np.array([0, 4]), 2, np.zeros(3, np.uint8))


@pytest.mark.parametrize("seed", range(6))
def test_parallel_pieces_give_the_same_strands_words_and_table(seed, monkeypatch):
    """The query side's parallel passes, cut into pieces of a few bases (words and strands that
    cross a piece, empty queries, a piece of many short queries) and several code ranges, equal the
    references; the seeding flags are the words that seed."""
    rng = np.random.default_rng(seed)
    codes, offsets, mask = _queries(rng, 30)
    offsets[rng.integers(1, offsets.size, 5)] = offsets[rng.integers(1, offsets.size, 5)]
    offsets = np.maximum.accumulate(offsets)
    offsets[-1] = codes.size
    monkeypatch.setattr(lookup, "_BLOCK", int(rng.integers(1, 12)))
    monkeypatch.setattr(lookup, "_parts", lambda: int(rng.integers(1, 9)))
    strands = [(1, -1), (1,), (-1,)][seed % 3]
    hard = seed % 2 == 1
    got = query_strands(codes, offsets, mask, strands, hard)
    want = reference_strands(codes, offsets, mask, strands, hard)
    for g, v in zip(got, want):
        assert np.asarray(g).tolist() == list(np.asarray(v).tolist())
    seq_codes, seq_mask, seq_off = got[:3]
    w = int(rng.integers(2, 7))
    words = word_codes(seq_codes, seq_off, w, seq_mask)
    table = build_lookup(seq_codes, seq_off, w, seq_mask)
    ref = reference(seq_codes, seq_off, w, seq_mask)
    assert {c: table.positions[table.first[c]:table.first[c + 1]].tolist()
            for c in np.flatnonzero(np.diff(table.first)).tolist()} == ref
    assert sorted(np.flatnonzero(words >= 0).tolist()) == sorted(p for v in ref.values() for p in v)
    assert (seeding(words) == (words >= 0)).all()

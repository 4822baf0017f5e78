"""The BLAST query lookup table and presence vector (gseek.blast.lookup) against a slow readable
reference: every w-mer of every query, none across a query boundary, none touching an N or a
masked base, positions in increasing order, the PV bit set exactly for the words listed."""

from __future__ import annotations

import numpy as np
import pytest

from gseek.blast.lookup import MAX_LOOKUP_WORD, build_lookup, word_codes
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

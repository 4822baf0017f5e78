"""The CPU's compact lookup table (gseek.blast.compact_table, kernels/blast_compact.py): the direct table's
positions and presence vector exactly, every present word's positions found through the PV's rank; its
lookup pairs the reference's, its seeds the direct table's; searches through it print the direct table's
lines for batches on both sides of the small-table threshold, on 1 and 2 threads."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import reference_blast as ref
from gseek.backend import CpuBackend
from gseek.blast import searcher as searcher_module
from gseek.blast.compact_table import CompactTable, compact_lookup
from gseek.blast.lookup import TEMPLATES, Template, lookup_of_words, query_strands, template_word_codes, word_codes
from gseek.blast.searcher import BlastSearcher
from gseek.blast.seeds import device_queries, find_seeds
from gseek.datasets import lambda_genome
from gseek.kernels import blast_compact as kcompact
from gseek.seqio import read_fastx

from test_blast_kernels import GEOMETRIES, random_case
from test_blast_search import _lines, lambda_text  # noqa: F401  (the lambda text fixture, the report's lines)


@pytest.fixture(params=[1, 2], ids=["threads1", "threads2"])
def threads(request):
    """Numba's threads for the table's passes (the result is the same for any number)."""
    before = numba.get_num_threads()
    numba.set_num_threads(min(request.param, numba.config.NUMBA_NUM_THREADS))
    yield request.param
    numba.set_num_threads(before)


def strands_of(rng, n_queries, max_length=300, repeat=True):
    """Both strands of random queries (N's, masked bases, a long repeat, empty ones), as a search lays
    them out: codes, offsets and mask."""
    lengths = rng.integers(0, max_length, n_queries)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    codes = rng.integers(0, 4, int(offsets[-1])).astype(np.uint8)
    codes[rng.random(codes.size) < 0.02] = 4
    if repeat and codes.size > 80:  # a word at many positions
        codes[10:80] = 0
    mask = (rng.random(codes.size) < 0.03).astype(np.uint8)
    if codes.size > 200:
        mask[120:200] = 1  # a masked stretch (DUST, lowercase)
    seq_codes, seq_mask, seq_off, _, _ = query_strands(codes, offsets, mask, (1, -1))
    return seq_codes, seq_off, seq_mask


def assert_same_table(compact: CompactTable, direct, rng) -> None:
    assert np.array_equal(compact.positions, direct.positions)
    assert np.array_equal(compact.pv, direct.pv)
    assert compact.positions.size == direct.n_words
    assert np.array_equal(compact.dense().first, direct.first)
    present = np.flatnonzero(np.diff(direct.first) > 0)
    assert np.array_equal(compact.codes(), present)
    assert compact.bounds.size == present.size + 1
    # every present word's positions through the rank (as the kernels find them), and some absent words'
    w = compact.w
    absent = rng.integers(0, 1 << (2 * w), 50)
    for c in np.concatenate([present, absent]).tolist():
        word = [(c >> (2 * (w - 1 - j))) & 3 for j in range(w)]
        assert compact.positions_of(np.array(word)).tolist() == direct.positions_of(np.array(word)).tolist()


@pytest.mark.parametrize("w", [1, 2, 3, 5, 8, 11, 12])
@pytest.mark.parametrize("n_queries", [0, 1, 40, 700])
def test_compact_table_is_the_direct_one(threads, w, n_queries):
    rng = np.random.default_rng(1000 * w + n_queries)
    codes, offsets, mask = strands_of(rng, n_queries)
    words = word_codes(codes, offsets, w, mask)
    assert_same_table(compact_lookup(words, w), lookup_of_words(words, w), rng)


@pytest.mark.parametrize("key", [(11, 16, "coding"), (12, 21, "optimal")])
def test_compact_table_of_template_words(threads, key):
    """dc-megablast's discontiguous words: the same table as the direct one."""
    rng = np.random.default_rng(key[1])
    codes, offsets, mask = strands_of(rng, 200)
    words = template_word_codes(codes, offsets, Template(TEMPLATES[key]), mask)
    assert_same_table(compact_lookup(words, key[0]), lookup_of_words(words, key[0]), rng)


def _compact_case(threads, seed, word, lut_w, stride):
    """A CPU backend, :func:`random_case`'s case and its batch with a compact table (and the table)."""
    backend = CpuBackend(threads=threads)
    case = random_case(seed, word, lut_w, stride)
    codes, off = np.array(case.qcodes, np.uint8), np.array(case.qoff, np.int64)
    words = word_codes(codes, off, case.lut_w, np.array(case.mask, np.uint8))
    table = compact_lookup(words, case.lut_w)
    qs = device_queries(backend, codes, off, (words >= 0).view(np.uint8), table)
    assert qs.rank is not None
    return backend, case, qs, table


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("word, lut_w, stride", GEOMETRIES)
def test_lookup_pairs_equal_the_reference(threads, seed, word, lut_w, stride):
    """lookup_count_compact + lookup_fill_compact on the reference scan's hits: the reference's pairs, in order."""
    backend, case, qs, _ = _compact_case(threads, seed, word, lut_w, stride)
    hits = np.array(ref.scan(case.text, lut_w, stride, case.table), np.int64)
    n, text, n_words = hits.size, case.ref_text.text, np.int64(case.ref_text.n_words)
    word_args = (np.int32(lut_w), np.int32(lut_w), np.int64(0))
    counts = np.zeros(n, np.int64)
    backend.launch(kcompact, "lookup_count_compact", n, hits, np.int64(n), text, n_words, *word_args, qs.pv, qs.rank,
                   qs.first, counts)
    off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    q_pos, s_pos = np.zeros(int(off[-1]), np.int32), np.zeros(int(off[-1]), np.int64)
    backend.launch(kcompact, "lookup_fill_compact", n, hits, np.int64(n), text, n_words, *word_args, qs.pv, qs.rank,
                   qs.first, qs.positions, off[:-1], q_pos, s_pos)
    want = ref.lookup_pairs(case.text, hits.tolist(), lut_w, case.table)
    assert want
    assert list(zip(q_pos.tolist(), s_pos.tolist())) == want


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("word, lut_w, stride", GEOMETRIES)
def test_seeds_through_the_compact_table_are_the_direct_tables(threads, seed, word, lut_w, stride):
    backend, case, qs, table = _compact_case(threads, seed, word, lut_w, stride)
    direct = device_queries(backend, qs.codes, qs.offsets, qs.valid, table.dense())
    assert direct.rank is None
    got = find_seeds(backend, case.ref_text, qs, lut_w, stride, word)
    want = find_seeds(backend, case.ref_text, direct, lut_w, stride, word)
    assert len(want)
    for a, b in zip((got.q, got.s, got.length), (want.q, want.s, want.length)):
        assert np.array_equal(a, b)


def _batches(rng, genome, sizes):
    """Batches of mutated lambda slices (300-1,000 bp; some masked in lowercase, one holding N's)."""
    out = []
    for b, n in enumerate(sizes):
        qs = []
        for k in range(n):
            length = int(rng.integers(300, 1000))
            a = int(rng.integers(0, len(genome) - length))
            s = list(genome[a:a + length])
            for _ in range(length // 40):
                s[int(rng.integers(len(s)))] = "ACGT"[int(rng.integers(4))]
            if k % 5 == 1:
                s[50:110] = [c.lower() for c in s[50:110]]
            if k % 7 == 3:
                s[200:210] = "N" * 10
            qs.append((f"b{b}q{k}", "".join(s)))
        out.append(qs)
    return out


@pytest.mark.parametrize("task", ["megablast", "blastn", "dc-megablast"])
def test_searches_through_the_compact_table_print_the_direct_tables_lines(lambda_text, monkeypatch, threads, task):
    """With the small-table threshold at 4,000 positions, batches of 1-12 queries (both strands: 600-24,000
    positions) fall on both sides of it: a CPU searcher's lines (compact tables above it) are those of a
    searcher that builds the direct table, and each batch's lines are its queries' lines of one search of
    them all."""
    monkeypatch.setattr(searcher_module, "SMALL_TABLE_WORDS", 4000)
    genome = read_fastx(lambda_genome()).sequence(0)
    batches = _batches(np.random.default_rng(7), genome, (1, 3, 12, 2, 6))
    sizes = [2 * sum(len(s) for _, s in b) for b in batches]
    assert min(sizes) <= 4000 < max(sizes)
    options = {"lcase_masking": True}
    compact = BlastSearcher(lambda_text, task=task, device="cpu", threads=threads, **options)
    big = next(b for b, size in zip(batches, sizes) if size > 4000)
    prepared = compact.prepare(big)
    assert isinstance(prepared.table, CompactTable) or task == "dc-megablast"
    assert all(isinstance(t, CompactTable) for t in (prepared.table, *prepared.more_tables)) or task != "dc-megablast"
    got = [_lines(compact.search(b)) for b in batches]
    assert sum(map(len, got)) > 10
    monkeypatch.setattr(searcher_module, "compact_lookup", lookup_of_words)
    direct = BlastSearcher(lambda_text, task=task, device="cpu", threads=threads, **options)
    assert not isinstance(direct.prepare(big).table, CompactTable)
    assert got == [_lines(direct.search(b)) for b in batches]
    whole = _lines(direct.search([q for b in batches for q in b]))
    assert sorted(line for lines in got for line in lines) == sorted(whole)

"""A small batch's sparse lookup table (gseek.blast.small_table): the direct table's positions and
presence vector exactly, its offsets exactly where the kernels read them (the present words),
whatever tables were laid into the resident arrays before; searches through it print the lines
the direct table gives."""

from __future__ import annotations

import numpy as np
import pytest

from gseek.backend import get_backend
from gseek.blast import searcher as searcher_module
from gseek.blast.lookup import lookup_of_words, word_codes
from gseek.blast.searcher import BlastSearcher
from gseek.blast.small_table import SparseTable, resident_table, sparse_lookup
from gseek.datasets import lambda_genome
from gseek.seqio import read_fastx

from test_blast_search import _lines, lambda_text  # noqa: F401  (the lambda text fixture, the report's lines)


def random_queries(rng, n_queries):
    """Codes, offsets and mask of ``n_queries`` random queries of 0-299 bases (N's, masked bases, a repeat)."""
    lengths = rng.integers(0, 300, n_queries)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    codes = rng.integers(0, 4, int(offsets[-1])).astype(np.uint8)
    codes[rng.random(codes.size) < 0.02] = 4
    if codes.size > 40:  # a repeat: a word at many positions
        codes[10:40] = 0
    mask = (rng.random(codes.size) < 0.03).astype(np.uint8)
    return codes, offsets, mask


def _words(rng, n_queries, w):
    codes, offsets, mask = random_queries(rng, n_queries)
    return word_codes(codes, offsets, w, mask)


@pytest.mark.parametrize("w", [1, 2, 5, 8, 11, 12])
@pytest.mark.parametrize("seed", range(3))
def test_sparse_table_is_the_direct_one(w, seed):
    words = _words(np.random.default_rng(seed), 1 + seed * 7, w)
    direct, sparse = lookup_of_words(words, w), sparse_lookup(words, w)
    assert np.array_equal(sparse.positions, direct.positions)
    dense = sparse.dense()
    assert np.array_equal(dense.first, direct.first) and np.array_equal(dense.pv, direct.pv)
    assert sparse.n_words == direct.n_words


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("w", [5, 12])
def test_resident_arrays_read_as_the_direct_table(device, w):
    """Tables laid in one after another (large, small, empty, large): each time the PV is the direct
    table's whole and the offsets of every present word (and the next) are the direct table's."""
    backend = get_backend(device)
    rng = np.random.default_rng(w)
    for n in (40, 1, 0, 25, 3):
        words = _words(rng, n, w)
        direct = lookup_of_words(words, w)
        with resident_table(backend, sparse_lookup(words, w)) as table:
            pv, first = backend.to_host(table.pv), backend.to_host(table.first)
            assert np.array_equal(pv, direct.pv)
            present = np.flatnonzero(np.diff(direct.first) > 0)
            for at in (present, present + 1):
                assert np.array_equal(first[at], direct.first[at])
            assert np.array_equal(backend.to_host(table.positions), direct.positions)
            with resident_table(backend, sparse_lookup(words, w)) as other:  # held: the direct table
                assert np.array_equal(other.first, direct.first) and np.array_equal(other.pv, direct.pv)


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("task", ["megablast", "blastn"])
def test_searches_through_the_resident_table_print_the_direct_tables_lines(lambda_text, monkeypatch, device, task):
    """One searcher, batches one after another through the resident arrays (each leaves its words
    there), against a searcher that builds the direct table for every batch."""
    genome = read_fastx(lambda_genome()).sequence(0)
    rng = np.random.default_rng(3)
    batches = []
    for n in (1, 12, 1, 5):
        qs = []
        for k in range(n):
            a = int(rng.integers(0, len(genome) - 600))
            s = list(genome[a:a + 300 + 50 * k])
            for _ in range(4):
                s[int(rng.integers(len(s)))] = "ACGT"[int(rng.integers(4))]
            qs.append((f"q{n}_{k}", "".join(s)))
        batches.append(qs)
    small = BlastSearcher(lambda_text, task=task, device=device)
    small_lines = [_lines(small.search(b)) for b in batches]
    assert isinstance(small.prepare(batches[0]).table, SparseTable)
    monkeypatch.setattr(searcher_module, "SMALL_TABLE_WORDS", -1)
    direct = BlastSearcher(lambda_text, task=task, device=device)
    assert not isinstance(direct.prepare(batches[0]).table, SparseTable)
    assert small_lines == [_lines(direct.search(b)) for b in batches]
    assert all(small_lines)

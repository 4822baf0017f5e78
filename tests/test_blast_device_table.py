"""The lookup table built where the search runs (gseek.blast.device_table): on NumPy (the CPU twin)
and on CuPy, its words are the host's ``word_codes`` and its table and PV the slow reference's and
the host's ``lookup_of_words`` exactly; a GPU searcher's batches built so print the CPU's lines."""

from __future__ import annotations

import numpy as np
import pytest

from gseek.backend import get_backend
from gseek.blast import searcher as searcher_module
from gseek.blast.device_table import QueryMask, build_on, table_of, words_of
from gseek.blast.lookup import lookup_of_words, query_strands, word_codes
from gseek.blast.searcher import BlastSearcher
from gseek.datasets import lambda_genome
from gseek.seqio import read_fastx

from test_blast_lookup import reference
from test_blast_search import _lines, lambda_text  # noqa: F401  (the lambda text fixture, the report's lines)
from test_blast_small_table import random_queries


def _xp(device):
    backend = get_backend(device)
    return backend, (np if backend.name == "cpu" else backend.xp)


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("w", [1, 2, 3, 5, 8, 11, 12])
@pytest.mark.parametrize("seed", range(3))
def test_words_and_table_are_the_reference(device, w, seed):
    backend, xp = _xp(device)
    codes, offsets, mask = random_queries(np.random.default_rng(seed), 1 + seed * 9)
    with backend.active():
        words = words_of(xp, backend.asarray(codes), backend.asarray(offsets), backend.asarray(mask), w)
        table = table_of(xp, words, w)
        words, first, positions, pv = (backend.to_host(a) for a in (words, table.first, table.positions, table.pv))
    host_words = word_codes(codes, offsets, w, mask)
    assert words.dtype == np.int32 and np.array_equal(words, host_words)
    host = lookup_of_words(host_words, w)
    for got, want in ((first, host.first), (positions, host.positions), (pv, host.pv)):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    ref = reference(codes, offsets, w, mask)
    n_codes = 1 << (2 * w)
    assert sum(len(v) for v in ref.values()) == positions.size
    for c in range(n_codes) if n_codes <= 4096 else sorted(ref):
        assert positions[first[c]:first[c + 1]].tolist() == ref.get(c, [])
        assert bool((pv[c >> 5] >> np.uint32(c & 31)) & 1) == (c in ref)


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_build_on_gives_the_table_the_flags_and_the_codes(device):
    backend, _ = _xp(device)
    codes, offsets, mask = random_queries(np.random.default_rng(7), 30)
    seq_codes, seq_mask, seq_off, _, _ = query_strands(codes, offsets, mask, (1, -1))
    words = word_codes(seq_codes, seq_off, 11, seq_mask)
    host = lookup_of_words(words, 11)
    with backend.active():
        table, valid, dev_codes = build_on(backend, QueryMask(11, seq_mask), seq_codes, seq_off)
        got = [backend.to_host(a) for a in (table.first, table.positions, table.pv, valid, dev_codes)]
    for a, b in zip(got, (host.first, host.positions, host.pv, (words >= 0).astype(np.uint8), seq_codes)):
        assert a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("task", ["megablast", "blastn"])
def test_gpu_searches_through_the_device_table_print_the_cpus_lines(lambda_text, monkeypatch, task):
    """Every batch a direct table (none small): a GPU searcher builds it on the device."""
    genome = read_fastx(lambda_genome()).sequence(0)
    rng = np.random.default_rng(5)
    queries = []
    for k in range(9):
        a = int(rng.integers(0, len(genome) - 3000))
        s = list(genome[a:a + 400 + 300 * k])
        for _ in range(6):
            s[int(rng.integers(len(s)))] = "ACGTN"[int(rng.integers(5))]
        queries.append((f"q{k}", "".join(s)))
    queries.append(("low", "ACACACACACACACACACACACACAC" * 4 + genome[5000:5600]))  # DUST masks its start
    monkeypatch.setattr(searcher_module, "SMALL_TABLE_WORDS", -1)
    gpu = BlastSearcher(lambda_text, task=task, device="gpu")
    assert isinstance(gpu.prepare(queries).table, QueryMask)
    lines = _lines(gpu.search(queries))
    assert len(lines) > 9
    assert lines == _lines(BlastSearcher(lambda_text, task=task, device="cpu").search(queries))

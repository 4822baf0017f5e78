"""Bounded cost of the BLAST-style search on pathological input (issue 36, section 4).

* Many seed hits (``--word-size 4`` against lambda): the seed stage holds one chunk of (query,
  text) pairs and its seeds at a time (:func:`gseek.blast.seeds.seed_candidates`), and the chunk
  sizes change no line of the output.
* A long exact repeat (poly-A against poly-A): a lookup pair inside a run stops at the run's first
  earlier finder (the mini-extension kernels), so finding the seeds costs about a stride a pair,
  not the run's length (it was cubic in the repeat: 10 kb 61 s).
* A long query: the query side (DUST, strands, word codes, lookup table) holds about 20 bytes a base
  at its peak (a 50 Mbp query: 1.4 GB; it held 2.5 GB: int64 word codes and DUST arrays).

Measurements against blastn 2.12: ``benchmarks/RESULTS.md`` (2026-11-28, issue 36).
"""

from __future__ import annotations

import io
import subprocess
import sys
import time

import numpy as np
import pytest

import gseek.blast.seeds as seeds_module
from gseek.blast.report import write_tabular
from gseek.blast.searcher import BlastSearcher
from gseek.datasets import lambda_genome
from gseek.index import Index
from gseek.index.text import ReferenceText
from gseek.seqio import read_fastx

FIELDS = "6 std score sstrand nident gaps qcovhsp"


@pytest.fixture(scope="module")
def lambda_text():
    return ReferenceText.from_index(Index.build(lambda_genome(), wgram=4, device="cpu"))


@pytest.fixture(scope="module")
def many_hits():
    """A query with many word-4 hits on lambda: 3 kb of random bases around three pieces of lambda
    (one reverse-complemented, one with substitutions)."""
    ref = read_fastx(lambda_genome()).sequence(0)
    rng = np.random.default_rng(36)

    def random(n):
        return "".join(rng.choice(list("ACGT"), n))

    mutated = list(ref[30000:30400])
    for i in rng.choice(len(mutated), 30, replace=False):
        mutated[i] = "ACGT"[("ACGT".index(mutated[i]) + 1) % 4]
    rc = ref[12000:12300][::-1].translate(str.maketrans("ACGT", "TGCA"))
    return [("many", random(1000) + ref[5000:5250] + random(1000) + rc + random(1000) + "".join(mutated)),
            ("few", ref[40000:40120])]


def _direct(table):
    """A prepared batch's lookup table as the kernels take it (a small batch's compact table made direct)."""
    return table.dense() if hasattr(table, "dense") else table


def _lines(hits) -> list[str]:
    out = io.StringIO()
    write_tabular(hits, out, FIELDS)
    return out.getvalue().splitlines()


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("ungapped", [False, True])
def test_seed_chunks_change_nothing_and_bound_what_is_held(lambda_text, many_hits, monkeypatch, device, ungapped):
    """blastn, word size 4: the seed stage in chunks of at most 2,000 pairs (and scan windows of 4,096
    stride positions) gives the lines of one chunk, and holds no more than a chunk's pairs and
    seeds at once (a single hit's pairs, at most one word's query positions, may exceed it)."""
    whole = BlastSearcher(lambda_text, task="blastn", device=device, word_size=4, ungapped=ungapped)
    want = _lines(whole.search(many_hits))
    assert len(want) >= 4
    assert whole.counts["most pairs in a seed chunk"] > 100_000  # one chunk held every pair

    monkeypatch.setattr(seeds_module, "SCAN_CHUNK", 4096)
    monkeypatch.setattr(seeds_module, "GPU_CHUNKS", (4096, seeds_module.PAIR_CHUNK))
    chunked = BlastSearcher(lambda_text, task="blastn", device=device, word_size=4, ungapped=ungapped)
    chunked.pair_chunk = 2000
    assert _lines(chunked.search(many_hits)) == want
    prepared = chunked.prepare(many_hits)
    most_of_a_word = int(np.diff(_direct(prepared.table).first).max())
    assert chunked.counts["most pairs in a seed chunk"] <= max(2000, most_of_a_word)
    assert chunked.counts["most seeds in a seed chunk"] <= max(2000, most_of_a_word)
    assert chunked.counts["seeds"] == whole.counts["seeds"]


@pytest.mark.parametrize("name, free, larger", [("gpu", 1 << 40, True), ("gpu", 1 << 30, False), ("gpu", None, False),
                                                ("cpu", 1 << 40, False)])
def test_a_gpu_with_room_takes_larger_seed_chunks(name, free, larger):
    """A GPU whose free memory holds ``GPU_ROOM`` times the larger chunks' pairs takes them (fewer waits
    between chunks); a smaller one, or the CPU, the defaults."""

    class Fake:
        def __init__(self):
            self.name = name

        def free_memory(self):
            return free

    want = seeds_module.GPU_CHUNKS if larger else (seeds_module.SCAN_CHUNK, seeds_module.PAIR_CHUNK)
    assert seeds_module.GPU_CHUNKS[1] > seeds_module.PAIR_CHUNK
    assert seeds_module.chunk_sizes(Fake()) == want


def test_ungapped_cutoff_before_the_purge_changes_nothing(lambda_text, many_hits, monkeypatch):
    """``--ungapped``: the seeds scoring below their query's e-value score are dropped chunk by chunk
    (they are never reported and never purge a reported HSP): the lines of no cutoff."""
    searcher = BlastSearcher(lambda_text, task="blastn", device="cpu", ungapped=True, evalue=1e-3)
    want = _lines(searcher.search(many_hits))
    cut = searcher._ungapped_cutoffs(np.array([0, 1]))
    assert (cut > 1).all()
    monkeypatch.setattr(BlastSearcher, "_ungapped_cutoffs", lambda self, seq_query: np.zeros(seq_query.size, np.int64))
    everything = BlastSearcher(lambda_text, task="blastn", device="cpu", ungapped=True, evalue=1e-3)
    assert _lines(everything.search(many_hits)) == want
    assert everything.counts["gapped"] > 2 * searcher.counts["gapped"]


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_a_long_repeat_costs_about_a_stride_a_lookup_pair(tmp_path, device):
    """megablast, no DUST, 12 kb of poly-A against 12 kb of poly-A: ~500 thousand lookup pairs (~700
    stride positions by 12 kb of query positions), each on a diagonal run of up to 12 kb. Reading
    each pair's run to its ends was ~5e10 base comparisons (over 100 s); stopping at the run's first
    earlier finder, ~1e8. The seeds are one a diagonal, each run whole."""
    from gseek.blast.seeds import device_queries, find_seeds

    n = 12_000
    fa = tmp_path / "a.fa"
    fa.write_text(">polyA\n" + "A" * n + "\n")
    text = ReferenceText.from_index(Index.build(fa, wgram=4, device="cpu"))
    searcher = BlastSearcher(text, task="megablast", device=device, dust=None)
    opts = searcher.options

    def seeds_of(query):
        prep = searcher.prepare([("q", query)])
        be = searcher.backend
        qs = device_queries(be, prep.seq_codes, prep.seq_off, prep.valid, _direct(prep.table))
        return find_seeds(be, text, qs, opts.lut_word, opts.stride, opts.word_size)

    seeds_of("A" * 200)  # compiled here, not timed
    started = time.perf_counter()
    seeds = seeds_of("A" * n)
    spent = time.perf_counter() - started
    be = searcher.backend
    q, s, length = (be.to_host(a) for a in (seeds.q, seeds.s, seeds.length))
    plus = q < n  # the minus strand (poly-T) has no seed
    assert plus.all()
    diag = s - q
    assert np.unique(diag).size == diag.size == 2 * (n - opts.word_size) + 1
    assert (length == n - np.abs(diag)).all()  # each diagonal's run, whole
    assert spent < 20, f"{spent:.1f} s to find the seeds of a 12 kb repeat"


def test_a_string_is_one_query(lambda_text):
    """``search("GGCT...")`` searches one query (issue 38: it was one query a letter, and no hit)."""
    ref = read_fastx(lambda_genome()).sequence(0)
    searcher = BlastSearcher(lambda_text, task="megablast", device="cpu")
    hits = searcher.search(ref[2000:2400])
    assert hits.query_names == ["query0"]
    assert _lines(hits) == _lines(searcher.search([("query0", ref[2000:2400])]))
    assert hits.row(0).split("\t")[:4] == ["query0", "gi|9626243|ref|NC_001416.1|", "100.000", "400"]


@pytest.mark.parametrize("window", [7, 1000])
def test_scan_windows_are_the_whole_scan(tmp_path, many_hits, window):
    """The scan in windows of ``window`` stride positions (:func:`gseek.blast.seeds.scan_hits`'s
    ``window``), of the whole text and of shards whose start is no stride position: the hits of one
    scan, in order."""
    from gseek.blast.seeds import _stride_positions, device_queries, scan_hits

    genome = read_fastx(lambda_genome()).sequence(0)
    bounds = (0, 10001, 20003, 33337, len(genome))  # contigs, so that shards start off the stride
    fa = tmp_path / "cut.fa"
    fa.write_text("".join(f">c{i}\n{genome[a:b]}\n" for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]))))
    cut = ReferenceText.from_index(Index.build(fa, wgram=4, device="cpu"))
    searcher = BlastSearcher(cut, task="megablast", device="cpu")
    opts, be = searcher.options, searcher.backend
    prep = searcher.prepare(many_hits)
    qs = device_queries(be, prep.seq_codes, prep.seq_off, prep.valid, _direct(prep.table))
    for text in (cut, *cut.shards(3)):
        whole = be.to_host(scan_hits(be, text, qs, opts.lut_word, opts.stride)).tolist()
        n_pos = _stride_positions(text, opts.lut_word, opts.stride)[1]
        got = [h for j0 in range(0, n_pos, window)
               for h in be.to_host(scan_hits(be, text, qs, opts.lut_word, opts.stride, (j0, j0 + window))).tolist()]
        assert got == whole and whole
    assert any(s.origin % opts.stride for s in cut.shards(3))


_QUERY_SIDE_PEAK = """
import resource, sys
import numpy as np
from gseek.backend import get_backend
from gseek.blast.lookup import lookup_of_words, seeding, word_codes
from gseek.blast.options import BlastOptions
from gseek.blast.searcher import BlastSearcher
from gseek.seqio import SequenceBatch

def query_side(bases):
    codes = np.random.default_rng(bases).integers(0, 4, bases).astype(np.uint8)
    batch = SequenceBatch.from_codes(codes, np.array([0, bases], np.int64), ["q"], "<q>")
    searcher = BlastSearcher.__new__(BlastSearcher)  # the query side only, as prepare builds it
    searcher.options = BlastOptions(task="megablast")
    searcher.backend = get_backend("cpu", 1)
    seq_codes, seq_mask, seq_off, _, _ = searcher._sequences(batch)
    words = word_codes(seq_codes, seq_off, searcher.options.lut_word, seq_mask)
    del seq_mask
    table, valid = lookup_of_words(words, searcher.options.lut_word), seeding(words)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

query_side(100_000)
print(query_side(2_000_000), query_side(6_000_000))
"""


def test_a_long_query_side_holds_about_20_bytes_a_base():
    """The peak of the query side grows by at most 30 bytes a query base (both strands): it grew by
    ~44 (int64 word codes beside the counting sort's int32 positions, codes and table; DUST 40 bytes
    a base of a record). In a fresh process, from 2 to 6 Mbp."""
    out = subprocess.run([sys.executable, "-c", _QUERY_SIDE_PEAK], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    small, large = map(int, out.stdout.split())
    assert (large - small) / 4_000_000 < 30, (small, large)

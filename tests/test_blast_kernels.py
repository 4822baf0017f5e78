"""The ``blast`` kernel family (kernels/blast.py and kernels/blast.cu) against the slow references
of tests/reference_blast.py, through the stages of gseek.blast.seeds and direct launches.

Every test runs on the Numba twins (``cpu``), on the CUDA source compiled for the host and run by
one thread (``host-cuda``), and on a GPU with the default and a tiny launch geometry (32 threads,
2 blocks: hits cross blocks and the scan's shared-buffer flushes); GPU cases skip without one.
Inputs: random texts of several contigs (one shorter than a table word) with N runs, random
queries with planted matches on both strands, masks, short and empty queries.
"""

from __future__ import annotations

import numpy as np
import pytest
from host_cuda import build as host_cuda_build

import reference_blast as ref
from reference import pack_2bit
from gseek.backend import CpuBackend, GpuBackend
from gseek.blast.lookup import build_lookup, word_codes
from gseek.blast.seeds import device_queries, find_seeds, scan_hits, ungapped_extend, unpack_ranges
from gseek.index.text import ReferenceText
from gseek.kernels import blast as kblast

COMPLEMENT = [3, 2, 1, 0, 4]
#: (word, lut_w, stride): blastn's 11/11/1, megablast's 28/12/17, and two between.
GEOMETRIES = [(11, 11, 1), (28, 12, 17), (16, 12, 5), (8, 6, 3)]


@pytest.fixture(scope="module")
def host_cuda(tmp_path_factory):
    return host_cuda_build(tmp_path_factory.mktemp("hostblast"), [kblast])


@pytest.fixture(params=["cpu", "host-cuda", pytest.param("gpu", marks=pytest.mark.gpu),
                        pytest.param("gpu-tiny", marks=pytest.mark.gpu)])
def backend(request):
    """This module's backends (overrides conftest's): the host-compiled CUDA source is one of them."""
    if request.param == "cpu":
        return CpuBackend(threads=2)
    if request.param == "host-cuda":
        return request.getfixturevalue("host_cuda")
    if request.param == "gpu":
        return GpuBackend(0)
    return GpuBackend(0, block_size=32, max_blocks=2)


# --------------------------------------------------------------------------- inputs


class Case:
    """A database text and a batch of query sequences, as the references and the stages see them."""

    def __init__(self, contigs: list[list[int]], queries: list[list[int]], lut_w: int, stride: int, word: int,
                 masks: list[list[int]] | None = None, both_strands: bool = True):
        self.text = [c for contig in contigs for c in contig]
        self.contig_off = [0] + np.cumsum([len(c) for c in contigs]).tolist()
        seqs, seq_masks = [], []
        for k, q in enumerate(queries):
            m = masks[k] if masks else [0] * len(q)
            seqs.append(q)
            seq_masks.append(m)
            if both_strands:
                seqs.append([COMPLEMENT[c] for c in reversed(q)])
                seq_masks.append(m[::-1])
        self.qcodes = [c for s in seqs for c in s]
        self.mask = [c for m in seq_masks for c in m]
        self.qoff = [0] + np.cumsum([len(s) for s in seqs]).tolist()
        self.lut_w, self.stride, self.word = lut_w, stride, word
        self._on: dict[int, tuple] = {}
        self.listed = ref.listed_positions(self.qcodes, self.qoff, lut_w, self.mask)
        self.table = ref.lookup_table(self.qcodes, self.listed, lut_w)
        packed, _ = pack_2bit(self.text)
        n = np.array(self.text + [0]) == 4
        edges = np.flatnonzero(np.diff(np.concatenate([[0], n.astype(np.int8)])))
        runs = edges.reshape(-1, 2) if edges.size else np.zeros((0, 2), np.int64)
        self.ref_text = ReferenceText(np.array(packed, np.uint32), np.asarray(runs, np.int64),
                                      tuple(f"c{k}" for k in range(len(contigs))),
                                      np.array(self.contig_off, np.int64))

    def queries(self, backend):
        """The batch on ``backend`` (built once per backend: a 4^12-word table takes a while)."""
        if id(backend) not in self._on:
            self._on[id(backend)] = (backend, self._queries(backend))
        return self._on[id(backend)][1]

    def _queries(self, backend):
        codes = np.array(self.qcodes, np.uint8)
        off = np.array(self.qoff, np.int64)
        mask = np.array(self.mask, np.uint8)
        table = build_lookup(codes, off, self.lut_w, mask)
        valid = (word_codes(codes, off, self.lut_w, mask) >= 0).astype(np.uint8)
        assert valid.tolist() == [int(x) for x in self.listed]
        return device_queries(backend, codes, off, valid, table)


def _mutated(rng, seq, rate):
    out = list(seq)
    for i in np.flatnonzero(rng.random(len(out)) < rate).tolist():
        out[i] = int(rng.integers(0, 5)) if rng.random() < 0.1 else (out[i] + int(rng.integers(1, 4))) % 4
    return out


def random_case(seed: int, word: int, lut_w: int, stride: int, n_queries: int = 8) -> Case:
    """Contigs (one shorter than a word) with N runs; queries: planted slices of the text (both
    strands, some mutated, some across an N run), random ones, one shorter than a word, an empty
    one; masked stretches."""
    rng = np.random.default_rng(seed)
    contigs = [rng.integers(0, 4, int(n)).tolist() for n in rng.integers(300, 1200, 4)]
    contigs.insert(2, rng.integers(0, 4, lut_w - 2).tolist())
    for c in contigs:
        for _ in range(int(rng.integers(0, 3))):
            a, n = int(rng.integers(0, len(c))), int(rng.integers(1, 30))
            c[a:a + n] = [4] * len(c[a:a + n])
    contigs[0][:3] = [4, 4, 4]
    text = [x for c in contigs for x in c]
    queries = []
    for k in range(n_queries):
        q = rng.integers(0, 4, int(rng.integers(0, 60))).tolist()
        for _ in range(int(rng.integers(1, 4))):
            a = int(rng.integers(0, len(text) - 120))
            piece = _mutated(rng, text[a:a + int(rng.integers(word, 120))], [0.0, 0.03, 0.1][k % 3])
            if rng.random() < 0.4:
                piece = [COMPLEMENT[c] for c in reversed(piece)]
            q += piece + rng.integers(0, 4, int(rng.integers(0, 20))).tolist()
        if k == 2:
            q[5:8] = [4, 4, 4]
        queries.append(q)
    n_runs = [i for i in range(1, len(text)) if text[i] == 4 and text[i - 1] != 4]
    for i in n_runs[:3]:  # across an N run, the query holding A where the text (packed as A) holds N
        queries.append([0 if c == 4 else c for c in text[max(0, i - word - 10):i + word + 40]])
    queries.append(text[40:40 + word - 1])   # shorter than a word (but holds table words)
    queries.append([])                        # empty
    queries.append(text[100:100 + lut_w - 1])  # shorter than a table word
    masks = []
    for q in queries:
        m = [0] * len(q)
        if len(q) > 40 and rng.random() < 0.5:
            a, n = int(rng.integers(0, len(q) - 20)), int(rng.integers(5, 20))
            m[a:a + n] = [1] * n
        masks.append(m)
    assert len(n_runs) >= 2
    return Case(contigs, queries, lut_w, stride, word, masks)


_ORACLE: dict[tuple, set] = {}


def oracle_of(seed: int, case: Case) -> set:
    """The brute-force seeds of ``random_case(seed, ...)`` (computed once; every backend reuses them)."""
    key = (seed, case.word, case.lut_w, case.stride)
    if key not in _ORACLE:
        _ORACLE[key] = ref.seed_oracle(case.text, case.contig_off, case.qcodes, case.qoff, case.listed, case.lut_w,
                                       case.stride, case.word)
    return _ORACLE[key]


CASES = [pytest.param(seed, *g, id=f"w{g[0]}-lut{g[1]}-s{g[2]}-{seed}") for g in GEOMETRIES for seed in (1, 2)]


# --------------------------------------------------------------------------- each kernel


@pytest.mark.parametrize("seed, word, lut_w, stride", CASES)
def test_scan_equals_the_reference(backend, seed, word, lut_w, stride):
    case = random_case(seed, word, lut_w, stride)
    hits = backend.to_host(scan_hits(backend, case.ref_text, case.queries(backend), lut_w, stride))
    want = ref.scan(case.text, lut_w, stride, case.table)
    assert want, "the case should have hits"
    assert hits.tolist() == want


def _pairs_on(backend, case, hits):
    """lookup_count + lookup_fill launched directly on ``hits`` (host array)."""
    qs = case.queries(backend)
    dev = case.ref_text.on(backend)
    n = hits.size
    counts = backend.xp.zeros(n, dtype=np.int64)
    d_hits = backend.asarray(hits.astype(np.int64))
    backend.launch(kblast, "lookup_count", n, d_hits, np.int64(n), dev.text, np.int64(case.ref_text.n_words),
                   np.int32(case.lut_w), np.int32(case.lut_w), np.int64(0), qs.first, counts)
    counts = backend.to_host(counts)
    off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    m = int(off[-1])
    q_pos, s_pos = backend.xp.zeros(m, dtype=np.int32), backend.xp.zeros(m, dtype=np.int64)
    backend.launch(kblast, "lookup_fill", n, d_hits, np.int64(n), dev.text, np.int64(case.ref_text.n_words),
                   np.int32(case.lut_w), np.int32(case.lut_w), np.int64(0), qs.first, qs.positions, backend.asarray(off[:-1]), q_pos, s_pos)
    return counts, list(zip(backend.to_host(q_pos).tolist(), backend.to_host(s_pos).tolist()))


@pytest.mark.parametrize("seed, word, lut_w, stride", CASES[:4])
def test_lookup_expansion_equals_the_reference(backend, seed, word, lut_w, stride):
    case = random_case(seed, word, lut_w, stride)
    hits = ref.scan(case.text, lut_w, stride, case.table)
    counts, pairs = _pairs_on(backend, case, np.array(hits, np.int64))
    want = ref.lookup_pairs(case.text, hits, lut_w, case.table)
    assert pairs == want
    assert counts.sum() == len(want)


def _mini_extend_on(backend, case, pairs):
    qs = case.queries(backend)
    rt = case.ref_text
    dev = rt.on(backend)
    m = len(pairs)
    q_pos = backend.asarray(np.array([p[0] for p in pairs], np.int32))
    s_pos = backend.asarray(np.array([p[1] for p in pairs], np.int64))
    keep = backend.xp.zeros(m, dtype=np.uint8)
    run_q, run_s = backend.xp.zeros(m, dtype=np.int64), backend.xp.zeros(m, dtype=np.int64)
    run_len = backend.xp.zeros(m, dtype=np.int32)
    backend.launch(kblast, "mini_extend", m, dev.text, dev.nmask, np.int32(int(rt.has_amb)), dev.contig_offsets,
                   np.int64(len(rt.contig_names)), qs.codes, qs.offsets, np.int64(qs.n_seq), qs.valid, q_pos, s_pos,
                   np.int64(m), np.int32(case.lut_w), np.int32(case.stride), np.int32(case.word), keep, run_q, run_s,
                   run_len)
    return [backend.to_host(a).tolist() for a in (keep, run_q, run_s, run_len)]


@pytest.mark.parametrize("seed, word, lut_w, stride", CASES)
def test_mini_extension_and_first_finder_equal_the_reference(backend, seed, word, lut_w, stride):
    case = random_case(seed, word, lut_w, stride)
    hits = ref.scan(case.text, lut_w, stride, case.table)
    pairs = ref.lookup_pairs(case.text, hits, lut_w, case.table)
    pairs = [pairs[i] for i in np.random.default_rng(seed).permutation(len(pairs))]  # any order
    keep, run_q, run_s, run_len = _mini_extend_on(backend, case, pairs)
    want = ref.mini_extend(case.text, case.contig_off, case.qcodes, case.qoff, case.listed, pairs, lut_w, stride,
                           word)
    for i, w in enumerate(want):
        if w is None:  # the word crosses its contig's end
            assert keep[i] == 0, pairs[i]
        elif w[0]:  # a seed: its run
            assert (keep[i], run_q[i], run_s[i], run_len[i]) == w, pairs[i]
        else:  # no seed (the run is not read to its end: unspecified)
            assert keep[i] == 0, pairs[i]
    assert sum(keep) == len({(q, s, n) for k, q, s, n in zip(keep, run_q, run_s, run_len) if k}), "a seed twice"


@pytest.mark.parametrize("seed, word, lut_w, stride", CASES)
def test_seeds_are_every_maximal_run_once(backend, seed, word, lut_w, stride):
    """find_seeds (scan, lookup, mini-extension) equals the brute-force oracle: every maximal exact
    run >= word holding a stride-aligned listed table word, once."""
    case = random_case(seed, word, lut_w, stride)
    seeds = find_seeds(backend, case.ref_text, case.queries(backend), lut_w, stride, word)
    got = list(zip(*(backend.to_host(a).tolist() for a in (seeds.q, seeds.s, seeds.length))))
    oracle = oracle_of(seed, case)
    assert len(oracle) >= 5, "the case should plant seeds"
    assert got == sorted(oracle)  # each once, ordered by (q, s)


@pytest.mark.parametrize("reward, penalty, n_score, xdrop", [(1, -2, -1, 16), (2, -3, -2, 30), (1, -3, -3, 3),
                                                             (2, -3, -2, 1)])
@pytest.mark.parametrize("seed, word, lut_w, stride", [CASES[0], CASES[3], CASES[6]])
def test_ungapped_extension_equals_the_reference(backend, seed, word, lut_w, stride, reward, penalty, n_score, xdrop):
    case = random_case(seed, word, lut_w, stride)
    seeds = find_seeds(backend, case.ref_text, case.queries(backend), lut_w, stride, word)
    got = ungapped_extend(backend, case.ref_text, case.queries(backend), seeds, reward, penalty, n_score, xdrop)
    got = {k: backend.to_host(v) for k, v in got.items()}
    sq, ss, sl = (backend.to_host(a) for a in (seeds.q, seeds.s, seeds.length))
    assert len(seeds)
    for i in range(len(seeds)):
        want = ref.ungapped_extend(case.text, case.contig_off, case.qcodes, case.qoff, int(sq[i]),
                                   int(ss[i]), int(sl[i]), reward, penalty, n_score, xdrop)
        assert (got["score"][i], got["q_start"][i], got["q_end"][i]) == want, i


def test_unpack_ranges_equal_the_reference(backend):
    case = random_case(5, 11, 11, 1, n_queries=1)
    rng = np.random.default_rng(5)
    n = len(case.text)
    starts = rng.integers(0, n - 200, 40).tolist() + [0, n - 7, 10]
    lengths = rng.integers(0, 200, 40).tolist() + [5, 7, 0]     # empty ranges, the text's ends
    codes, off = unpack_ranges(backend, case.ref_text, np.array(starts), np.array(lengths))
    want = ref.unpack_ranges(case.text, starts, lengths)
    assert backend.to_host(codes)[:off[-1]].tolist() == want
    assert off.tolist() == [0] + np.cumsum(lengths).tolist()
    assert 4 in want


# --------------------------------------------------------------------------- edges


@pytest.mark.parametrize("bound", [False, True])
def test_scan_relaunches_when_hits_exceed_the_first_capacity(backend, monkeypatch, bound):
    """Word 4, stride 1, queries holding every 4-mer: nearly every text position hits, far more
    than the first capacity (1024) and than a scan buffer's flush (SCAN_BUFFER / 2 per block);
    ``bound``: a GPU's window sized for a hit at every position (else the guess, the scan again)."""
    import gseek.blast.seeds as seeds_module

    if not bound:
        monkeypatch.setattr(seeds_module, "GPU_CHUNKS", (0, seeds_module.GPU_CHUNKS[1]))
    rng = np.random.default_rng(7)
    contigs = [rng.integers(0, 4, 2600).tolist(), rng.integers(0, 4, 2400).tolist()]
    contigs[1][100:140] = [4] * 40
    every = [c for k in range(256) for c in ((k >> 6) & 3, (k >> 4) & 3, (k >> 2) & 3, k & 3)]
    case = Case(contigs, [every, rng.integers(0, 4, 300).tolist()], 4, 1, 4, both_strands=False)
    hits = backend.to_host(scan_hits(backend, case.ref_text, case.queries(backend), 4, 1))
    want = ref.scan(case.text, 4, 1, case.table)
    n_pos = len(case.text) - 3
    assert len(want) > max(1024, n_pos // 64) and len(want) > 2 * kblast.SCAN_BUFFER
    assert hits.tolist() == want
    seeds = find_seeds(backend, case.ref_text, case.queries(backend), 4, 1, 6)
    oracle = ref.seed_oracle(case.text, case.contig_off, case.qcodes, case.qoff, case.listed, 4, 1, 6)
    assert list(zip(seeds.q.tolist(), seeds.s.tolist(), seeds.length.tolist())) == sorted(oracle)


def test_word_across_a_contig_boundary_is_a_hit_but_never_a_seed(backend):
    rng = np.random.default_rng(8)
    a, b = rng.integers(0, 4, 36).tolist(), rng.integers(0, 4, 40).tolist()  # contig 1 starts at 36
    across = (a + b)[30:46]          # 6 bases of contig 0, 10 of contig 1
    case = Case([a, b], [across], 12, 3, 12, both_strands=False)
    hits = backend.to_host(scan_hits(backend, case.ref_text, case.queries(backend), 12, 3)).tolist()
    assert hits == ref.scan(case.text, 12, 3, case.table)
    assert any(p < 36 < p + 12 for p in hits), "the text word across the boundary is found by the scan"
    seeds = find_seeds(backend, case.ref_text, case.queries(backend), 12, 3, 12)
    assert len(seeds) == 0
    # the same bases in one contig seed
    whole = Case([a + b], [across], 12, 3, 12, both_strands=False)
    seeds = find_seeds(backend, whole.ref_text, whole.queries(backend), 12, 3, 12)
    assert (seeds.q.tolist(), seeds.s.tolist(), seeds.length.tolist()) == ([0], [30], [16])
    # Queries starting 1..11 bases before the boundary: the first table word of each crosses it by
    # 1..11 bases (stride 1), and only the part in contig 1 seeds.
    for k in range(1, 12):
        case = Case([a, b], [(a + b)[36 - k:36 + 14]], 12, 1, 12, both_strands=False)
        pairs = ref.lookup_pairs(case.text, ref.scan(case.text, 12, 1, case.table), 12, case.table)
        keep, *_ = _mini_extend_on(backend, case, pairs)
        want = ref.mini_extend(case.text, case.contig_off, case.qcodes, case.qoff, case.listed, pairs, 12, 1, 12)
        assert keep == [w[0] if w else 0 for w in want], k
        seeds = find_seeds(backend, case.ref_text, case.queries(backend), 12, 1, 12)
        assert list(zip(seeds.q.tolist(), seeds.s.tolist(), seeds.length.tolist())) == [(k, 36, 14)], k


def test_short_and_empty_queries_give_no_seeds(backend):
    rng = np.random.default_rng(9)
    text = rng.integers(0, 4, 500).tolist()
    # Only queries shorter than the word (one shorter than the table word) and empty ones.
    case = Case([text], [text[10:37], [], text[50:61], [], text[200:227]], 12, 17, 28)
    qs = case.queries(backend)
    hits = backend.to_host(scan_hits(backend, case.ref_text, qs, 12, 17)).tolist()
    assert hits == ref.scan(case.text, 12, 17, case.table)
    assert len(find_seeds(backend, case.ref_text, qs, 12, 17, 28)) == 0
    empty = Case([text], [[], []], 12, 17, 28)
    assert len(backend.to_host(scan_hits(backend, empty.ref_text, empty.queries(backend), 12, 17))) == 0
    seeds = find_seeds(backend, empty.ref_text, empty.queries(backend), 12, 17, 28)
    assert len(seeds) == 0
    ung = ungapped_extend(backend, empty.ref_text, empty.queries(backend), seeds, 1, -2, -1, 16)
    assert all(v.size == 0 for v in ung.values())


def test_a_text_shorter_than_the_table_word_has_no_hits(backend):
    case = Case([[0, 1, 2, 3, 0]], [[0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0]], 11, 1, 11)
    assert backend.to_host(scan_hits(backend, case.ref_text, case.queries(backend), 11, 1)).size == 0
    assert len(find_seeds(backend, case.ref_text, case.queries(backend), 11, 1, 11)) == 0


def test_the_oracle_is_not_trivial():
    """The reference seeds of a hand-made case: a run found at its first stride position only,
    a run too short, a run whose only listed word is masked."""
    text = [0, 1, 2, 3] * 2 + [3, 3, 2, 1, 0, 0, 1, 2, 2, 3, 1, 0, 2, 2, 1, 3] + [0] * 8
    q = text[8:24]  # the middle 16 bases: one run of 16 at text 8
    case = Case([text], [q], 4, 4, 8, both_strands=False)
    assert ref.seed_oracle(case.text, case.contig_off, case.qcodes, case.qoff, case.listed, 4, 4, 8) == {(0, 8, 16)}
    pairs = ref.lookup_pairs(case.text, ref.scan(case.text, 4, 4, case.table), 4, case.table)
    kept = [w for w in ref.mini_extend(case.text, case.contig_off, case.qcodes, case.qoff, case.listed, pairs,
                                       4, 4, 8) if w and w[0]]
    assert kept == [(1, 0, 8, 16)]
    masked = Case([text], [q], 4, 4, 8, masks=[[1] * 13 + [0] * 3], both_strands=False)
    assert ref.seed_oracle(masked.text, masked.contig_off, masked.qcodes, masked.qoff, masked.listed, 4, 4, 8) == set()
    assert ref.seed_oracle(case.text, case.contig_off, case.qcodes, case.qoff, case.listed, 4, 4, 17) == set()

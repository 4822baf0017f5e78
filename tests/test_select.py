"""``Mapper.select`` (Numba, ``gseek.mapper.select``) equals the numpy reference on random placements."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import reference_select

from gseek.mapper import select as _select
from gseek.index import Index
from gseek.mapper import Mapper, Placements
from gseek.seqio import SequenceBatch

FIELDS = [f.name for f in dataclasses.fields(reference_select.MappingResult) if f.name not in ("names", "contig_names", "batch", "reference")]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    rng = np.random.default_rng(5)
    fasta = tmp_path_factory.mktemp("select") / "ref.fa"
    with open(fasta, "w") as fh:
        for i, length in enumerate((700, 50, 1200)):
            fh.write(f">c{i}\n{''.join(rng.choice(list('ACGT'), length))}\n")
    return Index.build(fasta, wgram=4, sa_sample=4, device="cpu")


def random_placements(rng, index, n_reads, k, max_per_read):
    lengths = np.asarray(index.contigs.lengths)
    rows = []
    for r in range(n_reads):
        m = int(rng.integers(0, max_per_read + 1)) if rng.random() < 0.8 else 0
        seen = set()
        while len(seen) < m:
            c = int(rng.integers(0, lengths.size))
            seen.add((c, int(rng.integers(0, lengths[c] - 20)), int(rng.choice([-1, 1]))))
        for c, pos, strand in seen:
            rows.append((r, strand, c, pos, int(rng.integers(0, k + 1))))
    rng.shuffle(rows)
    a = np.array(rows, dtype=np.int64).reshape(-1, 5)
    status = np.zeros(n_reads, dtype=np.int8)
    return Placements(status, a[:, 0].copy(), a[:, 1].astype(np.int8), a[:, 2].astype(np.int32), a[:, 3].copy(),
                      a[:, 4].astype(np.int16))


def batch_of(rng, n_reads):
    names = ["" if rng.random() < 0.05 else f"r{rng.integers(0, 10**9)}/{i}" for i in range(n_reads)]
    codes = np.zeros(20 * n_reads, dtype=np.uint8)
    offsets = np.arange(0, 20 * n_reads + 1, 20, dtype=np.int64)
    return SequenceBatch.from_codes(codes, offsets, names, "<test>")


@pytest.mark.parametrize("options", [
    dict(), dict(xa_limit=0), dict(xa_limit=100), dict(max_alignments=1), dict(max_alignments=3),
    dict(report_all=True), dict(report_all=True, max_hits=2),
], ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "best")
@pytest.mark.parametrize("seed", range(3))
def test_select_equals_reference(index, options, seed):
    rng = np.random.default_rng(seed)
    k = 3
    mapper = Mapper(index, k, **options)
    batch = batch_of(rng, 300)
    placements = random_placements(rng, index, 300, k, max_per_read=[3, 12, 40][seed])
    got = mapper.select(batch, placements)
    want = reference_select.select(mapper, batch, placements)
    assert got.n_reads == 300 and len(got) > 0
    for name in FIELDS:
        g, w = np.asarray(getattr(got, name)), np.asarray(getattr(want, name))
        assert g.dtype == w.dtype, name
        assert g.tolist() == w.tolist(), name


def test_select_of_nothing(index):
    mapper = Mapper(index, 2)
    batch = batch_of(np.random.default_rng(0), 4)
    empty = Placements(np.zeros(4, np.int8), np.zeros(0, np.int64), np.zeros(0, np.int8), np.zeros(0, np.int32),
                       np.zeros(0, np.int64), np.zeros(0, np.int16))
    got = mapper.select(batch, empty)
    assert len(got) == 0 and got.best.tolist() == [-1] * 4 and got.mapq.tolist() == [0] * 4


def test_name_hashes_equal_reference():
    rng = np.random.default_rng(1)
    batch = batch_of(rng, 500)
    got = _select.name_hashes(batch.names, batch.name_offsets)
    assert got.tolist() == reference_select.name_hashes(batch).tolist()
    assert len(set(got.tolist())) > 450  # names differ, hashes do too

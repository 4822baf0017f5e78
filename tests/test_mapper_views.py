"""The mappy-style Python API: per-read and per-hit views of a MappingResult,
``Mapper.map(seq)`` and ``Mapper.map_file`` (``gseek/mapper/hits.py``)."""

from __future__ import annotations

import numpy as np
import pysam
import pytest

from gseek.datasets import lambda_genome, lambda_reads
from gseek.index import Index
from gseek.mapper import Hit, MappedRead, Mapper, md_string
from gseek.pipeline import map_reads
from gseek.seqio import read_fastx

OPTIONS = dict(mismatches=3, max_alignments=3)  # secondary hits of worse strata too


@pytest.fixture(scope="module")
def lambda_index(tmp_path_factory):
    """The lambda genome and a second contig: a copy of 3 kb of it with a
    substitution every 40 bases, so reads there have hits in two strata."""
    genome = read_fastx(lambda_genome()).sequence(0)
    copy = list(genome[5000:8000])
    for p in range(17, len(copy), 40):
        copy[p] = "ACGT"[("ACGT".index(copy[p]) + 1) % 4] if copy[p] in "ACGT" else "A"
    fasta = tmp_path_factory.mktemp("ref") / "ref.fa"
    fasta.write_text(f">lambda\n{genome}\n>copy\n{''.join(copy)}\n")
    return Index.build(fasta, wgram=8, device="cpu")


@pytest.fixture(scope="module")
def mapped(lambda_index):
    batch = read_fastx(lambda_reads())
    return batch, Mapper(lambda_index, **OPTIONS).map(batch)


def test_views_equal_the_arrays(mapped):
    batch, result = mapped
    reads = list(result)
    assert len(reads) == result.n_reads == len(batch) and all(isinstance(r, MappedRead) for r in reads)
    lengths = batch.lengths
    j = 0
    for i, read in enumerate(reads):
        assert read.index == i and read.name == batch.name_list()[i] == result.names[i]
        assert (read.mapq, read.best, read.n_best, read.n_second, read.status, read.is_mapped) == (
            result.mapq[i], result.best[i], result.n_best[i], result.n_second[i], result.status[i],
            result.best[i] >= 0)
        for hit in read.hits:
            assert isinstance(hit, Hit) and hit.read_index == i and hit.read_name == read.name
            assert (hit.ctg, hit.r_st, hit.strand, hit.NM, hit.is_primary) == (
                result.contig_names[result.contig[j]], result.pos[j], result.strand[j], result.mismatches[j],
                not result.secondary[j])
            assert (hit.q_st, hit.q_en, hit.blen, hit.r_en) == (0, lengths[i], lengths[i], result.pos[j] + lengths[i])
            assert hit.cigar_str == f"{lengths[i]}M" and hit.cigar == [[lengths[i], 0]]
            assert hit.ctg_len == {"lambda": 48502, "copy": 3000}[hit.ctg] and hit.mlen == lengths[i] - result.mismatches[j]
            j += 1
        assert (len(read.hits) > 0) == read.is_mapped
    assert j == len(result)
    assert {len(r.hits) for r in reads} >= {0, 1, 2} and any(not h.is_primary for r in reads for h in r.hits)
    assert result.hit_view(-1).r_st == result.pos[-1] and result.read_view(-1).name == result.names[-1]
    with pytest.raises(IndexError):
        result.read_view(result.n_reads)


def test_nm_md_mapq_equal_the_sam_tags(mapped, lambda_index, tmp_path):
    """Every hit of the lambda reads against the SAM record map_reads writes for it
    (same order: reads in input order, primary first): position, strand, MAPQ,
    CIGAR, NM and MD (computed per hit from the reference, not by the formatter)."""
    batch, result = mapped
    map_reads(lambda_index, lambda_reads(), tmp_path / "out.sam", no_unal=True, device="cpu", **OPTIONS)
    with pysam.AlignmentFile(str(tmp_path / "out.sam")) as sam:
        records = list(sam)
    hits = [h for read in result for h in read.hits]
    assert len(records) == len(hits) > 1000
    assert sum(h.NM > 0 for h in hits) > 500 and any(h.strand < 0 and h.NM > 1 for h in hits)
    for rec, hit in zip(records, hits):
        assert (rec.query_name, rec.reference_name, rec.reference_start, rec.reference_end) == (
            hit.read_name, hit.ctg, hit.r_st, hit.r_en)
        assert (rec.is_reverse, not rec.is_secondary, rec.mapping_quality, rec.cigarstring) == (
            hit.strand < 0, hit.is_primary, hit.mapq, hit.cigar_str)
        assert (rec.get_tag("NM"), rec.get_tag("MD")) == (hit.NM, hit.MD)
        read, ref = hit.aligned_bases()
        assert md_string(read, ref) == (hit.MD, hit.NM)
    # the =/X CIGAR of --cigar-eq
    map_reads(lambda_index, lambda_reads(), tmp_path / "eq.sam", no_unal=True, cigar_eq=True, device="cpu",
              **OPTIONS)
    with pysam.AlignmentFile(str(tmp_path / "eq.sam")) as sam:
        cigars = [rec.cigarstring for rec in sam]
    assert cigars == [h.cigar_eq_str for h in hits] and any("X" in c for c in cigars)


def test_str_is_a_paf_line(mapped):
    batch, result = mapped
    read = next(r for r in result if len(r.hits) > 1 and any(h.strand < 0 for h in r.hits))
    for hit in read.hits:
        cols = str(hit).split("\t")
        n = hit.blen
        assert cols == [hit.read_name, str(n), "0", str(n), "+" if hit.strand > 0 else "-", hit.ctg, str(hit.ctg_len),
                        str(hit.r_st), str(hit.r_st + n), str(n - hit.NM), str(n), str(hit.mapq),
                        "tp:A:P" if hit.is_primary else "tp:A:S", f"NM:i:{hit.NM}", f"cg:Z:{n}M"]
    assert str(read) == "\n".join(map(str, read.hits))
    assert repr(read.hits[0]).startswith(f"Hit(ctg={read.hits[0].ctg!r}, r_st=")


def test_map_one_read_gives_its_hits(mapped, lambda_index):
    batch, result = mapped
    mapper = Mapper(lambda_index, **OPTIONS)
    for i in (0, 1, 2, 7):
        seq = batch.sequence(i)
        hits = mapper.map(seq)
        whole = result.read_view(i).hits
        assert isinstance(hits, list)
        # the tie among equal best hits is chosen by the read's name: read0 here, not the FASTQ name
        assert sorted((h.ctg, h.r_st, h.strand, h.NM, h.MD) for h in hits) == sorted(
            (h.ctg, h.r_st, h.strand, h.NM, h.MD) for h in whole)
    assert mapper.map("ACGT") == []  # too short: not searched, no hits
    # a list still gives the struct-of-arrays result, byte for byte as before
    many = mapper.map([batch.sequence(i) for i in range(50)])
    assert many.n_reads == 50 and many.placements() == Mapper(lambda_index, **OPTIONS).map(
        [batch.sequence(i) for i in range(50)]).placements()


def test_map_file_equals_map(mapped, lambda_index):
    """map_file over the lambda reads (several batches) gives map()'s reads and hits."""
    batch, result = mapped
    got = list(Mapper(lambda_index, **OPTIONS).map_file(lambda_reads(), max_records=300))
    assert len(got) == result.n_reads
    for (name, hits), read in zip(got, result):
        assert name == read.name
        assert [(h.ctg, h.r_st, h.strand, h.NM, h.mapq, h.is_primary, h.MD) for h in hits] == [
            (h.ctg, h.r_st, h.strand, h.NM, h.mapq, h.is_primary, h.MD) for h in read.hits]


def test_a_result_without_its_reads_says_so(mapped):
    import dataclasses

    _, result = mapped
    bare = dataclasses.replace(result, batch=None, reference=None)
    hit = bare.hit_view(0)
    assert (hit.r_st, hit.NM, hit.ctg) == (result.pos[0], result.mismatches[0], result.contig_names[result.contig[0]])
    for field in ("MD", "r_en", "ctg_len"):
        with pytest.raises(ValueError, match="holds no (batch|reference)"):
            getattr(hit, field)


def test_md_string():
    assert md_string(np.array([0, 1, 2, 3]), np.array([0, 1, 2, 3])) == ("4", 0)
    assert md_string(np.array([1, 1, 2, 4]), np.array([0, 1, 2, 3])) == ("0A2T0", 2)
    assert md_string(np.array([0, 1, 2, 3]), np.array([0, 4, 2, 3])) == ("1N2", 1)

"""The k-mismatch read mapper (issue 5): completeness against a brute-force
oracle on every backend, reporting modes, SAM/BAM output, agreement with
bowtie 1, simulated truth, bad input, and the CUDA twin compiled for the host."""

from __future__ import annotations

import re

import csv
import json
import os
from pathlib import Path

import numpy as np
import pysam
import pytest
from host_cuda import build as host_cuda_build
from reference import reverse_complement
from reference_map import all_placements, best_counts, md_string, piece_occurrences

from gseek.backend import CpuBackend
from gseek.errors import FastxError, IndexFormatError, OptionError
from gseek.index import Index
from gseek.index import search as stages
from gseek.kernels import _cuda, kmismatch
from gseek.mapper import MAX_READ_LENGTH, STATUS_TOO_SHORT, Mapper, mapq_scale
from gseek.mapper.approx import dfs_intervals
from gseek.pipeline import map_reads
from gseek.seqio import read_fastx

DATA = Path(__file__).parent / "data" / "bowtie"

# --------------------------------------------------------------------------- genomes and reads


def _dna(rng, n):
    return "".join(rng.choice(list("ACGT"), size=n))


def _genome(seed: int, sizes) -> list[str]:
    """Random contigs with planted (mutated, sometimes reverse-complemented)
    repeats across contigs, a tandem repeat and runs of N, one at a contig end."""
    rng = np.random.default_rng(seed)
    contigs = [_dna(rng, s) for s in sizes]
    for _ in range(6):
        a, b = (int(x) for x in rng.integers(len(contigs), size=2))
        L = int(rng.integers(40, 160))
        if min(len(contigs[a]), len(contigs[b])) <= L:
            continue
        s, t = int(rng.integers(0, len(contigs[a]) - L)), int(rng.integers(0, len(contigs[b]) - L))
        seg = list(contigs[a][s : s + L])
        for p in rng.integers(0, L, 2):
            seg[p] = "ACGT"[int(rng.integers(4))]
        seg = "".join(seg)
        if rng.random() < 0.5:
            seg = reverse_complement(seg)
        contigs[b] = contigs[b][:t] + seg + contigs[b][t + L :]
    contigs[0] = contigs[0][:200] + "ACGTT" * 12 + contigs[0][260:]
    for _ in range(5):
        c = int(rng.integers(len(contigs)))
        L = int(rng.integers(1, 14))
        s = int(rng.integers(0, len(contigs[c]) - L))
        contigs[c] = contigs[c][:s] + "N" * L + contigs[c][s + L :]
    contigs[1] = "NN" + contigs[1][2:]
    return contigs


def _reads(seed: int, contigs: list[str], n: int, k: int, lo: int = 20, hi: int = 150) -> list[str]:
    """Reads cut from the genome (some at contig ends, some over N runs), with
    up to k + 1 substitutions or N, half reverse-complemented, some random."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        c = contigs[int(rng.integers(len(contigs)))]
        L = int(rng.integers(lo, min(hi, len(c)) + 1))
        u = rng.random()
        s = 0 if u < 0.1 else len(c) - L if u < 0.2 else int(rng.integers(0, len(c) - L + 1))
        seq = list(c[s : s + L])
        for p in rng.integers(0, L, int(rng.integers(0, k + 2))):
            seq[p] = "ACGTN"[int(rng.integers(5))]
        read = "".join(seq)
        if rng.random() < 0.5:
            read = reverse_complement(read)
        if rng.random() < 0.05:
            read = _dna(rng, L)
        out.append(read)
    return out


def _fasta(path: Path, records) -> Path:
    path.write_text("".join(f">c{i}\n{seq}\n" for i, seq in enumerate(records)))
    return path


def _fastq(path: Path, reads: list[str], names=None) -> Path:
    names = names or [f"q{i}" for i in range(len(reads))]
    quals = ["".join(chr(33 + 2 + (j * 7 + i) % 39) for j in range(len(r))) for i, r in enumerate(reads)]
    path.write_text("".join(f"@{n}\n{r}\n+\n{q}\n" for n, r, q in zip(names, reads, quals)))
    return path


@pytest.fixture(scope="module")
def genome(tmp_path_factory):
    contigs = _genome(11, [2500, 900, 1400, 60])
    fasta = _fasta(tmp_path_factory.mktemp("genome") / "g.fa", contigs)
    return contigs, Index.build(fasta, wgram=5, sa_sample=4, device="cpu"), fasta


def _on(index: Index, backend) -> Index:
    return Index(index.arrays, index.header, backend)


def _check_unique(result):
    assert len(result.placements()) == len(result), "a placement reported twice"


# --------------------------------------------------------------------------- completeness


@pytest.mark.parametrize("k", range(6))
def test_all_equals_the_oracle(backend, genome, k):
    contigs, index, _ = genome
    reads = _reads(100 + k, contigs, 50, k)
    result = Mapper(_on(index, backend), k, report_all=True).map(reads)
    _check_unique(result)
    assert result.placements() == all_placements(contigs, reads, k)


@pytest.mark.parametrize("k, min_piece", [(2, 30), (4, 12), (6, 10), (8, 12), (8, 32)])
def test_approximate_pieces_are_complete(backend, genome, k, min_piece):
    """Short reads / large k: pieces with a mismatch budget (backtracking) and
    the explicit candidates next to reference N keep the search complete."""
    contigs, index, _ = genome
    reads = _reads(200 + k, contigs, 14, k, lo=16, hi=45)
    mapper = Mapper(_on(index, backend), k, report_all=True, min_piece=min_piece)
    assert any(max(mapper.piece_plan(len(r))[1]) > 0 for r in reads)
    result = mapper.map(reads)
    _check_unique(result)
    assert result.placements() == all_placements(contigs, reads, k)


def _many_n_runs(seed: int, sizes, n_runs: int) -> tuple[list[str], list[tuple[int, int, int]]]:
    """Random contigs with ``n_runs`` N runs of 1..30 bases (some at contig ends,
    some overlapping or a few bases apart); returns the contigs and the runs."""
    rng = np.random.default_rng(seed)
    contigs = [list(_dna(rng, s)) for s in sizes]
    runs = []
    for i in range(n_runs):
        c = int(rng.integers(len(contigs)))
        L = int(rng.choice([1, 1, 2, 3, 5, 9, 30]))
        s = int(rng.integers(0, len(contigs[c]) - L + 1))
        if i % 10 == 0:
            s = 0 if i % 20 == 0 else len(contigs[c]) - L
        elif i % 10 == 1 and runs:
            c, s0, L0 = runs[-1]
            s = min(s0 + L0 + int(rng.integers(0, 4)), len(contigs[c]) - L)
        contigs[c][s : s + L] = "N" * L
        runs.append((c, s, L))
    return ["".join(c) for c in contigs], runs


def _reads_over_n(seed: int, contigs, runs, n: int, k: int, lo: int, hi: int) -> list[str]:
    """Reads covering 1..k + 1 bases at one end of an N run (the N read as a base),
    with up to k substitutions or N, half reverse-complemented."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        c, s, L = runs[int(rng.integers(len(runs)))]
        length = int(rng.integers(lo, hi + 1))
        inside = int(rng.integers(1, k + 2))
        start = s + min(inside, L) - length if rng.random() < 0.5 else s + L - min(inside, L)
        start = int(np.clip(start, 0, len(contigs[c]) - length))
        read = list(contigs[c][start : start + length].replace("N", "ACGT"[int(rng.integers(4))]))
        for p in rng.integers(0, length, int(rng.integers(0, k))):
            read[p] = "ACGTN"[int(rng.integers(5))]
        read = "".join(read)
        out.append(reverse_complement(read) if rng.random() < 0.5 else read)
    return out


@pytest.fixture(scope="module")
def many_n(tmp_path_factory):
    """150 N runs in 6.1 kbp; the same plus a 60 kbp contig with 1,500 more; their
    indexes; a cache of oracle answers."""
    contigs, runs = _many_n_runs(3, [4000, 1500, 600], 150)
    far, _ = _many_n_runs(4, [60000], 1500)
    folder = tmp_path_factory.mktemp("many_n")
    genomes = (contigs, contigs + far)
    indexes = [Index.build(_fasta(folder / f"g{i}.fa", g), wgram=5, sa_sample=4, device="cpu")
               for i, g in enumerate(genomes)]
    return genomes, runs, indexes, {}


@pytest.mark.parametrize("k, min_piece", [(1, 20), (2, 14), (3, 12), (4, 10), (6, 10)])
def test_many_n_runs_short_reads_complete_and_bounded(backend, many_n, k, min_piece):
    """Approximate mode next to many reference N runs: every placement of the
    oracle (N counted as a mismatch) and no other, from candidates that follow
    the piece hits, not reads x windows next to every N run (what the N-edge
    brute force verified). 1,500 more N runs, in a contig no read comes from,
    add flank candidates at the rate the same bases add in the reference index."""
    genomes, runs, indexes, oracle = many_n
    reads = _reads_over_n(40 + k, genomes[0], runs, 60, k, 16, min(40, (k + 1) * min_piece - 1))
    counts = []
    for i, (genome, index) in enumerate(zip(genomes, indexes)):
        mapper = Mapper(_on(index, backend), k, report_all=True, min_piece=min_piece)
        assert all(max(mapper.piece_plan(len(r))[1]) > 0 for r in reads)  # all approximate
        result = mapper.map(reads)
        _check_unique(result)
        if (i, k) not in oracle:
            oracle[i, k] = all_placements(genome, reads, k)
        want = oracle[i, k]
        assert result.placements() == want
        assert sum("N" in genome[c][p : p + len(reads[r])] for r, c, p, _, _ in want) >= 10
        flank = mapper.stats["flank_candidates"]
        brute_force = 2 * sum(L + len(r) - 1 for r in reads for _, _, L in runs)
        assert 0 < flank < brute_force / 100
        counts.append((flank, mapper.stats["candidates"] - flank))
    (flank0, index0), (flank1, index1) = counts
    assert flank1 - flank0 <= 1.5 * (index1 - index0) + len(reads), counts


def test_flank_index_is_built_only_for_approximate_reads(genome):
    contigs, index, _ = genome
    mapper = Mapper(index, 2)
    mapper.map([contigs[0][300:400], contigs[2][10:90]])
    assert mapper.stats["flank_bases"] == 0 and mapper.stats["flank_candidates"] == 0
    mapper.map([contigs[0][300:320]])
    assert mapper.stats["flank_bases"] > 0 and mapper.stats["reads"] == 3


@pytest.mark.parametrize("norc, nofw", [(True, False), (False, True)])
def test_one_strand(genome, norc, nofw):
    contigs, index, _ = genome
    reads = _reads(7, contigs, 40, 3)
    result = Mapper(index, 3, report_all=True, norc=norc, nofw=nofw).map(reads)
    assert result.placements() == all_placements(contigs, reads, 3, fw=not nofw, rc=not norc)


def test_piece_search_equals_its_reference(genome):
    """dfs_count/dfs_fill + locate: every window within the budget, none with a reference N."""
    contigs, index, _ = genome
    rng = np.random.default_rng(5)
    mapper = Mapper(index, 2)
    b, xp = mapper.backend, mapper.backend.xp
    for _ in range(6):
        c = contigs[int(rng.integers(3))]
        s = int(rng.integers(0, len(c) - 14))
        piece = list(c[s : s + 12].replace("N", "A"))
        piece[int(rng.integers(12))] = "ACGTN"[int(rng.integers(5))]
        piece = "".join(piece)
        for budget in (0, 1, 2):
            codes = np.array(["ACGTN".index(x) for x in piece], dtype=np.uint8)
            lo, hi, _ = dfs_intervals(b, mapper.fm, b.asarray(codes), b.asarray(np.array([0, 12])),
                                      b.asarray(np.array([budget])), b.asarray(np.array([0])))
            pattern, text_pos = stages.locate_rows(b, mapper.fm, xp.asarray(lo), xp.asarray(hi))
            contig, pos = stages.text_to_contig(b, mapper.fm, text_pos)
            got = set(zip(contig.tolist(), pos.tolist()))
            assert len(got) == pos.size
            assert got == piece_occurrences(contigs, piece, budget)


# --------------------------------------------------------------------------- reporting


def test_best_mode_counts_ties_and_mapq(backend, genome):
    contigs, index, _ = genome
    reads = _reads(21, contigs, 60, 3)
    want = all_placements(contigs, reads, 3)
    best, second, n_best, n_second = best_counts(want, len(reads))
    result = Mapper(_on(index, backend), 3).map(reads)
    assert result.best.tolist() == best and result.second.tolist() == second
    assert result.n_best.tolist() == n_best and result.n_second.tolist() == n_second
    assert np.array_equal(result.hit_offsets, np.cumsum([0] + [int(b >= 0) for b in best]))
    for j in range(len(result)):
        r = int(result.read[j])
        assert (r, *(int(x[j]) for x in (result.contig, result.pos, result.strand, result.mismatches))) in want
        assert result.mismatches[j] == best[r] and not result.secondary[j]
    assert np.array_equal(result.mapq, mapq_scale(result.best, result.second, result.n_best, result.n_second))
    assert set(result.mapq[result.n_best > 1].tolist()) <= {0, 1, 2, 3}
    assert (result.mapq[result.best < 0] == 0).all()
    assert (result.mapq[(result.n_best == 1) & (result.second < 0)] == 60).all()


def test_tie_choice_is_deterministic_and_independent_of_batches(genome, tmp_path):
    """The same read name gets the same placement, in any batch and thread count."""
    contigs, index, _ = genome
    reads = _reads(31, contigs, 80, 2)
    reads += [contigs[0][200:240]] * 4  # inside the tandem repeat: ties
    fq = _fastq(tmp_path / "r.fq", reads)
    outputs = []
    for chunk, threads in ((1 << 20, 1), (300, 2)):
        out = tmp_path / f"o{chunk}.sam"
        map_reads(_on(index, CpuBackend(threads)), fq, out, mismatches=2, chunk_bytes=chunk, command="test")
        outputs.append(out.read_text().split("\n@PG")[1].split("\n", 1)[1])  # @PG DS names the backend
    assert outputs[0] == outputs[1]
    records = [line.split("\t") for line in outputs[0].splitlines() if not line.startswith("@")]
    tied = [r for r in records if r[0] in {f"q{i}" for i in range(80, 84)}]
    assert len({(r[2], r[3]) for r in tied}) > 1, "identical tied reads with different names spread over copies"


def test_k_reports_best_strata_first(genome):
    contigs, index, _ = genome
    reads = _reads(41, contigs, 60, 3)
    want = all_placements(contigs, reads, 3)
    result = Mapper(index, 3, max_alignments=3).map(reads)
    assert result.placements() <= want
    for i in range(len(reads)):
        mine = sorted(m for r, *_, m in want if r == i)
        lo, hi = result.hit_offsets[i], result.hit_offsets[i + 1]
        assert hi - lo == min(3, len(mine))
        assert sorted(result.mismatches[lo:hi].tolist()) == mine[: hi - lo]
        assert result.secondary[lo:hi].tolist() == [False, True, True][: hi - lo]


def test_max_hits_caps_all_and_says_so(genome, tmp_path):
    contigs, index, _ = genome
    read = contigs[0][200:250]  # tandem repeat: many placements
    result = Mapper(index, 2, report_all=True, max_hits=2).map([read, contigs[2][300:400]])
    assert result.n_found[0] > 2 and result.hit_offsets[1] == 2 and result.capped.tolist() == [True, False]
    fq = _fastq(tmp_path / "r.fq", [read])
    map_reads(index, fq, tmp_path / "o.sam", mismatches=2, report_all=True, max_hits=2)
    lines = [x for x in (tmp_path / "o.sam").read_text().splitlines() if not x.startswith("@")]
    assert len(lines) == 2 and all(f"ZH:i:{result.n_found[0]}" in x for x in lines)


def test_options_are_checked(genome):
    _, index, _ = genome
    for options, message in [
        (dict(mismatches=9), "0..8"),
        (dict(mismatches=-1), "0..8"),
        (dict(max_alignments=0), ">= 1"),
        (dict(max_alignments=2, report_all=True), "one of"),
        (dict(max_hits=3), "report_all"),
        (dict(norc=True, nofw=True), "no strand"),
    ]:
        with pytest.raises(OptionError, match=message):
            Mapper(index, **options)
    assert repr(Mapper(index, 3, max_alignments=2)) == "Mapper(mismatches=3, max_alignments=2, device='cpu')"


# --------------------------------------------------------------------------- simulated truth, bowtie


def test_simulated_reads_are_found_at_their_origin():
    from gseek.datasets import lambda_genome
    from gseek.datasets.simulate import kmismatch_reads

    index = Index.build(lambda_genome(), wgram=8, device="cpu")
    sim = kmismatch_reads(lambda_genome(), 1500, (20, 300), 3, seed=3, n_rate=0.01, random_fraction=0.02)
    batch = read_fastx(_write_sim(sim))
    every = Mapper(index, 3, report_all=True).map(batch).placements()
    best = Mapper(index, 3).map(batch)
    for i in np.flatnonzero(sim.contig >= 0).tolist():
        origin = (i, int(sim.contig[i]), int(sim.pos[i]), int(sim.strand[i]), int(sim.mismatches[i]))
        assert origin in every
        if best.n_best[i] == 1 and best.best[i] == sim.mismatches[i]:
            j = best.hit_offsets[i]
            assert (best.contig[j], best.pos[j], best.strand[j], best.mismatches[j]) == origin[1:]


def _write_sim(sim) -> Path:
    import tempfile

    path = Path(tempfile.mkdtemp()) / "sim.fq"
    sim.write(path)
    return path


@pytest.mark.parametrize("k", range(4))
def test_agrees_with_bowtie(k):
    """`--all` equals `bowtie -v k -a` on 3,000 reads (fixture: tests/data/bowtie/README.md)."""
    index = Index.build(DATA / "ref.fa", wgram=10, device="cpu")
    batch = read_fastx(DATA / "reads.fq.gz")
    names = batch.name_list()
    with open(DATA / f"bowtie_v{k}.tsv") as fh:
        want = {(r["read"], r["contig"], int(r["pos"]), r["strand"], int(r["mismatches"]))
                for r in csv.DictReader(fh, delimiter="\t")}
    result = Mapper(index, k, report_all=True).map(batch)
    got = {(names[r], result.contig_names[c], p, "+" if s > 0 else "-", m)
           for r, c, p, s, m in zip(result.read.tolist(), result.contig.tolist(), result.pos.tolist(),
                                    result.strand.tolist(), result.mismatches.tolist())}
    assert got == want


# --------------------------------------------------------------------------- SAM / BAM


def _sam_records(path):
    with pysam.AlignmentFile(str(path), check_sq=False) as fh:
        return list(fh)


def test_sam_fields_tags_and_strands(genome, tmp_path):
    contigs, index, _ = genome
    reads = _reads(51, contigs, 60, 3)
    reads.append("ACGT" * (MAX_READ_LENGTH // 4 + 1))  # too long: unmapped with a reason
    fq = _fastq(tmp_path / "r.fq", reads)
    out = tmp_path / "out.sam"
    counts = map_reads(index, fq, out, mismatches=3, command="gseek search -q r.fq -v 3")
    pysam.quickcheck(str(out))
    assert pysam.view("-c", str(out)).strip() == str(len(reads))
    assert counts["reads"] == len(reads) and counts["too_long"] == 1 and counts["records"] == len(reads)
    with pysam.AlignmentFile(str(out)) as fh:
        header = fh.header.to_dict()
        records = list(fh)
    assert [sq["SN"] for sq in header["SQ"]] == [f"c{i}" for i in range(len(contigs))]
    assert header["PG"][0]["CL"] == "gseek search -q r.fq -v 3"
    batch = read_fastx(fq)
    for rec, i in zip(records, range(len(reads))):
        assert rec.query_name == f"q{i}"
        if rec.is_unmapped:
            assert rec.query_sequence == reads[i]  # unmapped: original orientation
            continue
        assert rec.mapping_quality != 255 and rec.cigarstring == f"{len(reads[i])}M"
        window = contigs[rec.reference_id][rec.reference_start : rec.reference_start + len(reads[i])]
        fw = reverse_complement(reads[i]) if rec.is_reverse else reads[i]
        assert rec.query_sequence == fw
        qual = batch.quality(i)
        assert pysam.array_to_qualitystring(rec.query_qualities) == (qual[::-1] if rec.is_reverse else qual)
        assert rec.get_tag("MD") == md_string(fw, window)
        assert rec.get_tag("NM") == sum(a != b or "N" in (a, b) for a, b in zip(fw, window))
        assert rec.get_tag("X0") >= 1
    assert records[-1].is_unmapped and records[-1].get_tag("YF") == "TOO_LONG"


def test_xa_lists_alternatives_in_bwa_format(genome, tmp_path):
    contigs, index, _ = genome
    read = contigs[0][202:242]  # inside the tandem repeat
    fq = _fastq(tmp_path / "r.fq", [read])
    map_reads(index, fq, tmp_path / "o.sam", mismatches=1, xa_limit=50)
    (rec,) = _sam_records(tmp_path / "o.sam")
    alts = rec.get_tag("XA").rstrip(";").split(";")
    assert len(alts) == rec.get_tag("X0") + rec.get_tag("X1") - 1
    for alt in alts:
        name, pos, cigar, nm = alt.split(",")
        assert name == "c0" and pos[0] in "+-" and cigar == "40M" and int(nm) <= 1


def test_bam_no_unal_cigar_eq_and_atomic_output(genome, tmp_path):
    contigs, index, _ = genome
    reads = _reads(61, contigs, 40, 2)
    fq = _fastq(tmp_path / "r.fq", reads)
    map_reads(index, fq, tmp_path / "o.bam", mismatches=2, no_unal=True, cigar_eq=True)
    pysam.quickcheck(str(tmp_path / "o.bam"))
    records = _sam_records(tmp_path / "o.bam")
    assert records and not any(r.is_unmapped for r in records)
    for rec in records:
        assert set(rec.cigarstring) <= set("0123456789=X")
        assert sum(n for op, n in rec.cigartuples if op == 8) == rec.get_tag("NM")
    assert sorted(os.listdir(tmp_path)) == ["o.bam", "o.bam.bai", "r.fq"]  # sorted and indexed by default
    bad = tmp_path / "bad.fq"
    bad.write_text(_fastq(tmp_path / "ok.fq", reads[:3]).read_text() + "@broken\nACGTACGTACGTACGTACGT\n+\nIIII\n")
    with pytest.raises(FastxError, match="quality length"):
        map_reads(index, bad, tmp_path / "bad.sam", mismatches=2, chunk_bytes=200)
    assert not any(name.startswith(".bad.sam") or name == "bad.sam" for name in os.listdir(tmp_path))


# --------------------------------------------------------------------------- bad input


def test_bad_input_gives_one_clear_error(genome, tmp_path):
    _, index, fasta = genome
    saved = index.save(tmp_path / "g.gseek")
    empty = tmp_path / "empty.fq"
    empty.write_text("")
    with pytest.raises(FastxError, match="empty"):
        map_reads(saved, empty, tmp_path / "o.sam")
    short = _fastq(tmp_path / "short.fq", ["ACGT" * 10, "ACGTAC"])
    bad = tmp_path / "bad.fq"
    bad.write_text("@a\nACGTACGTACGTACGTACGT\n+\nIIII\n")
    with pytest.raises(FastxError, match="quality length"):
        map_reads(saved, bad, tmp_path / "o.sam")
    with pytest.raises(IndexFormatError, match="no such index"):
        map_reads(tmp_path / "missing", short, tmp_path / "o.sam")
    header = json.loads((saved / "header.json").read_text())
    header["format_version"] += 1
    (saved / "header.json").write_text(json.dumps(header))
    with pytest.raises(IndexFormatError, match="rebuild"):
        map_reads(saved, short, tmp_path / "o.sam")
    no_text = Index.load(index.save(tmp_path / "h.gseek"), device="cpu", parts=["fm", "sa"])
    with pytest.raises(OptionError, match="needs index parts"):
        Mapper(no_text, 2)
    assert not (tmp_path / "o.sam").exists()


def _short_reads(tmp_path, genome) -> tuple[Path, list[str]]:
    contigs = genome[0]
    reads = [contigs[0][300:340], "ACGTAC", "", contigs[2][100:115], contigs[2][100:116]]
    return _fastq(tmp_path / "short.fq", reads), reads


def test_short_and_empty_reads_are_unmapped_not_errors(genome, tmp_path):
    """Reads under MIN_READ_LENGTH (an empty record too) are not searched:
    unmapped, status STATUS_TOO_SHORT, counted; the file maps."""
    _, index, _ = genome
    fq, reads = _short_reads(tmp_path, genome)
    result = Mapper(index, 2).map(read_fastx(fq))
    assert result.status.tolist() == [0, STATUS_TOO_SHORT, STATUS_TOO_SHORT, STATUS_TOO_SHORT, 0]
    assert (result.best >= 0).tolist() == [True, False, False, False, True]
    assert result.hit_offsets.tolist() == [0, 1, 1, 1, 1, 2] and result.mapq[1:4].tolist() == [0, 0, 0]
    counts = map_reads(index, fq, tmp_path / "o.sam", mismatches=2)
    assert {k: v for k, v in counts.items() if k != "device"} == dict(reads=5, mapped=2, unmapped=3, too_long=0,
                                                                     too_short=3, records=5, alignments=2)
    assert counts["device"].startswith("cpu")
    records = _sam_records(tmp_path / "o.sam")
    assert [r.query_name for r in records] == [f"q{i}" for i in range(5)]
    assert [r.is_unmapped for r in records] == [False, True, True, True, False]
    assert records[1].query_sequence == "ACGTAC" and records[2].query_sequence is None  # SEQ '*'
    counts = map_reads(index, fq, tmp_path / "m.sam", mismatches=2, no_unal=True)
    assert counts["records"] == 2 and counts["too_short"] == 3


def test_short_reads_carry_a_reason_tag(genome, tmp_path):
    _, index, _ = genome
    fq, _ = _short_reads(tmp_path, genome)
    map_reads(index, fq, tmp_path / "o.sam", mismatches=2)
    records = _sam_records(tmp_path / "o.sam")
    assert [r.get_tag("YF") if r.has_tag("YF") else None for r in records] == [None] + ["TOO_SHORT"] * 3 + [None]


# --------------------------------------------------------------------------- the CUDA twin, on the host


@pytest.fixture(scope="module")
def host_cuda(tmp_path_factory):
    from gseek.kernels import fmindex, seqpack

    return host_cuda_build(tmp_path_factory.mktemp("hostcuda"), [seqpack, fmindex, kmismatch])


@pytest.mark.parametrize("k, min_piece", [(3, None), (5, 12), (8, 30)])
def test_cuda_source_matches_the_numba_twin_on_the_host(genome, host_cuda, k, min_piece):
    contigs, index, _ = genome
    reads = _reads(300 + k, contigs, 30, k, lo=16, hi=120)
    cpu = Mapper(index, k, report_all=True, min_piece=min_piece).map(reads)
    host = Mapper(index, k, report_all=True, min_piece=min_piece, device=host_cuda).map(reads)
    for name in ("read", "contig", "pos", "strand", "mismatches", "n_best", "n_second", "mapq"):
        assert np.array_equal(getattr(cpu, name), getattr(host, name)), name


def test_fmindex_and_kmismatch_share_one_occ_header():
    """Both families walk the index with kernels/fm_occ.cuh, expanded by the loader."""
    header = _cuda.source("fm_occ.cuh")
    for family in ("fmindex.cu", "kmismatch.cu"):
        text = _cuda.source(family)
        assert header in text and not re.search(r'^#include "', text, re.M)
        assert text.count("i64 occ_count(") == 1


def test_warm_up_leaves_results_and_counters_alone(tmp_path):
    rng = np.random.default_rng(3)
    seq = "".join(rng.choice(list("ACGT"), 600))
    fasta = tmp_path / "n.fa"
    ref = seq[:300] + "NN" + seq[300:]
    fasta.write_text(f">c\n{ref}\n")
    index = Index.build(fasta, wgram=4, sa_sample=4, device="cpu")
    read = ref[270:320]  # 50 bp over the N run (2 mismatches): approximate mode, flank index
    cold, warm = Mapper(index, 3, min_piece=30), Mapper(index, 3, min_piece=30)
    warm.warm_up()
    assert warm.stats == dict(reads=0, candidates=0, flank_candidates=0, flank_bases=0)
    a, b = cold.map([read]), warm.map([read])
    assert a.placements() == b.placements() and len(a) == 1
    assert warm.stats == cold.stats and cold.stats["flank_bases"] > 0

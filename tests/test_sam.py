"""SAM records from the Numba formatter (``gseek.output.sam_records``) equal the slow
Python reference (``tests/reference_sam.py``) byte for byte: every reporting
mode and option, N in reads and reference, both strands, FASTA and FASTQ,
several batch sizes and thread counts, and random placements that are not
real mappings (long reads, mismatches everywhere, N runs on word edges)."""

from __future__ import annotations

import os
from pathlib import Path

import numba
import numpy as np
import pytest
import reference_sam
from reference import reverse_complement

from gseek.backend import CpuBackend
from gseek.index import Index
from gseek.mapper import MAX_READ_LENGTH, Mapper, MappingResult
from gseek.pipeline import map_reads
from gseek.output.sam import format_mapping, format_unmapped
from gseek.seqio import FastxReader, read_fastx

# --------------------------------------------------------------------------- inputs


def _dna(rng, n: int) -> str:
    return "".join(rng.choice(list("ACGT"), size=n))


def _genome(seed: int) -> list[str]:
    """Contigs with exact and mutated repeats (both orientations), a tandem
    repeat, and N runs, two of them on 16-base word edges."""
    rng = np.random.default_rng(seed)
    contigs = [_dna(rng, n) for n in (1800, 700, 1100, 90)]
    unit = _dna(rng, 120)
    for c, at, rc in ((0, 300, False), (1, 100, True), (2, 500, False), (2, 800, True)):
        copy = list(reverse_complement(unit) if rc else unit)
        if c == 2:
            copy[int(rng.integers(120))] = "ACGT"[int(rng.integers(4))]
        contigs[c] = contigs[c][:at] + "".join(copy) + contigs[c][at + 120 :]
    contigs[0] = contigs[0][:1000] + "ACGTT" * 14 + contigs[0][1070:]
    for c, at, n in ((0, 1200, 5), (1, 15, 2), (2, 32, 16), (2, 1000, 1), (3, 80, 10)):
        contigs[c] = contigs[c][:at] + "N" * n + contigs[c][at + n :]
    return contigs


def _reads(seed: int, contigs: list[str], n: int) -> list[str]:
    """Reads from the genome (repeats, contig ends, over N), with substitutions
    and N, half reverse-complemented, some random (unmapped)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        c = contigs[int(rng.integers(len(contigs)))]
        length = int(rng.integers(16, min(260, len(c)) + 1))
        u = rng.random()
        s = 0 if u < 0.1 else len(c) - length if u < 0.2 else int(rng.integers(0, len(c) - length + 1))
        seq = list(c[s : s + length])
        for p in rng.integers(0, length, int(rng.integers(0, 5))):
            seq[p] = "ACGTN"[int(rng.integers(5))]
        read = "".join(seq)
        if rng.random() < 0.5:
            read = reverse_complement(read)
        if rng.random() < 0.05:
            read = _dna(rng, length)
        out.append(read)
    out += [contigs[0][300:420], contigs[0][1005:1060], contigs[2][505:600]]  # repeats: ties, XA, -k
    out.append("ACGT" * (MAX_READ_LENGTH // 4 + 1))  # too long: YF:Z:TOO_LONG
    return out


def _write(path: Path, reads: list[str], fastq: bool, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    with open(path, "w") as fh:
        for i, read in enumerate(reads):
            name = f"r{i}" + "x" * int(rng.integers(0, 12))
            if fastq:
                qual = "".join(chr(33 + int(q)) for q in rng.integers(0, 42, len(read)))
                fh.write(f"@{name} d\n{read}\n+\n{qual}\n")
            else:
                fh.write(f">{name}\n{read}\n")
    return path


@pytest.fixture(scope="module")
def genome(tmp_path_factory):
    contigs = _genome(3)
    where = tmp_path_factory.mktemp("sam")
    fasta = where / "g.fa"
    fasta.write_text("".join(f">chr{i} contig {i}\n{seq}\n" for i, seq in enumerate(contigs)))
    return contigs, Index.build(fasta, wgram=5, sa_sample=4, device="cpu"), where


MODES = [
    pytest.param(dict(), id="best"),
    pytest.param(dict(xa_limit=50), id="best-xa50"),
    pytest.param(dict(xa_limit=0), id="best-xa0"),
    pytest.param(dict(max_alignments=3), id="k3"),
    pytest.param(dict(report_all=True), id="all"),
    pytest.param(dict(report_all=True, max_hits=2), id="all-max2"),
    pytest.param(dict(norc=True), id="norc"),
]


def _same(result, batch, mapper, **options):
    got = format_mapping(result, batch, mapper.reference, threads=getattr(mapper.backend, "threads", None), **options)
    want = reference_sam.format_mapping(result, batch, mapper.reference, **options)
    assert got[1] == want[1]
    if got[0] != want[0]:  # show the first differing line
        for a, b in zip(got[0].splitlines(), want[0].splitlines()):
            assert a == b
        assert got[0] == want[0]


# --------------------------------------------------------------------------- mapped batches


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fastq", [True, False], ids=["fastq", "fasta"])
def test_format_mapping_equals_the_reference(genome, mode, fastq):
    contigs, index, where = genome
    path = _write(where / f"r{fastq}.fx", _reads(11, contigs, 150), fastq, 5)
    batch = read_fastx(path)
    mapper = Mapper(index, 3, **mode)
    result = mapper.map(batch)
    assert len(result) > 0 and (result.best < 0).any()
    for no_unal in (False, True):
        for cigar_eq in (False, True):
            _same(result, batch, mapper, no_unal=no_unal, cigar_eq=cigar_eq)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("threads", [1, 2])
def test_batches_and_threads(genome, seed, threads):
    """Small chunks (batches of a few reads) and 1 or 2 Numba threads."""
    contigs, index, where = genome
    path = _write(where / f"b{seed}.fq", _reads(100 + seed, contigs, 60), True, seed)
    mapper = Mapper(index, int(seed % 4) + 1, report_all=bool(seed % 2), device=CpuBackend(threads))
    for batch in FastxReader(path, chunk_bytes=[600, 2000, 1 << 20][seed % 3]):
        result = mapper.map(batch)
        _same(result, batch, mapper, cigar_eq=bool(seed % 2))
    assert numba.get_num_threads() == threads


def test_map_reads_writes_the_reference_text(genome, tmp_path):
    """Whole command: any chunk size and thread count gives the reference text."""
    contigs, index, where = genome
    path = _write(tmp_path / "r.fq", _reads(7, contigs, 80), True, 7)
    batch = read_fastx(path)
    mapper = Mapper(index, 2, max_alignments=2)
    want, _ = reference_sam.format_mapping(mapper.map(batch), batch, mapper.reference, cigar_eq=True)
    for chunk, threads in ((1 << 20, 1), (700, 2)):
        out = tmp_path / f"o{chunk}.sam"
        map_reads(Index(index.arrays, index.header, CpuBackend(threads)), path, out, mismatches=2,
                  max_alignments=2, cigar_eq=True, chunk_bytes=chunk)
        text = out.read_text(encoding="latin-1")
        assert "".join(x for x in text.splitlines(True) if not x.startswith("@")) == want


# --------------------------------------------------------------------------- random placements


def _random_result(rng, batch, mapper, contig_names, contig_lengths) -> MappingResult:
    """Random hits (not real mappings: any number of mismatches, NM counting
    them) grouped by read, random counts, XA lists and caps, some reads unmapped."""
    n = len(batch)
    lengths = batch.lengths
    per_read = rng.integers(0, 4, n)
    per_read[rng.random(n) < 0.2] = 0
    read, contig, pos, strand, secondary = [], [], [], [], []
    for i in range(n):
        fits = np.flatnonzero(contig_lengths >= lengths[i])
        for h in range(int(per_read[i]) if fits.size else 0):
            c = int(rng.choice(fits))
            read.append(i)
            contig.append(c)
            pos.append(int(rng.integers(0, contig_lengths[c] - lengths[i] + 1)))
            strand.append(1 if rng.random() < 0.5 else -1)
            secondary.append(h > 0)
    per_read = np.bincount(np.array(read, dtype=np.int64), minlength=n)
    read, contig, pos, strand = (np.array(x, dtype=t) for x, t in ((read, np.int64), (contig, np.int32),
                                                                     (pos, np.int64), (strand, np.int8)))
    # NM is the hit's true mismatch count (the formatter's contract: MD stops at the last one)
    _, at_off, _ = reference_sam.mismatch_positions(batch, mapper.reference, contig, pos, strand, read)
    mm = np.diff(at_off).astype(np.int16)
    hit_offsets = np.concatenate([[0], np.cumsum(per_read)]).astype(np.int64)
    mapped = per_read > 0
    alts = np.where(mapped, rng.integers(0, 4, n), 0)
    alt_offsets = np.concatenate([[0], np.cumsum(alts)]).astype(np.int64)
    a = int(alt_offsets[-1])
    best = np.where(mapped, rng.integers(0, 4, n), -1).astype(np.int16)
    return MappingResult(
        names=tuple(batch.name_list()), contig_names=tuple(contig_names),
        read=read, contig=contig, pos=pos, strand=strand, mismatches=mm,
        secondary=np.array(secondary, dtype=bool), hit_offsets=hit_offsets, best=best,
        second=np.where(mapped, best + 1, -1).astype(np.int16), n_best=per_read + rng.integers(0, 3, n),
        n_second=rng.integers(0, 1000, n), n_found=per_read + rng.integers(0, 100000, n),
        mapq=rng.integers(0, 61, n).astype(np.uint8),
        status=np.digitize(rng.random(n), [0.8, 0.9]).astype(np.int8), alt_offsets=alt_offsets,
        alt_contig=rng.integers(0, len(contig_names), a).astype(np.int32),
        alt_pos=rng.integers(0, 10**9, a), alt_strand=rng.choice([-1, 1], a).astype(np.int8),
        alt_mismatches=rng.integers(0, 9, a).astype(np.int16), capped=rng.random(n) < 0.3,
    )


@pytest.mark.parametrize("seed", range(6))
def test_random_placements_equal_the_reference(genome, tmp_path, seed):
    """MD/NM/CIGAR over 64-base blocks, N on both sides, mismatches at both ends."""
    contigs, index, _ = genome
    rng = np.random.default_rng(seed)
    reads = []
    for _ in range(40):
        length = int(rng.choice([16, 63, 64, 65, 127, 128, 129, int(rng.integers(16, 400))]))
        u = rng.random()
        if u < 0.3:  # all N / all mismatching / random
            reads.append("N" * length if u < 0.1 else _dna(rng, length))
        else:
            c = contigs[int(rng.integers(3))]
            s = int(rng.integers(0, len(c) - length))
            seq = list(c[s : s + length].replace("N", "A"))
            for p in list(rng.integers(0, length, int(rng.integers(0, 12)))) + [0, length - 1]:
                seq[p] = "ACGTN"[int(rng.integers(5))]
            reads.append("".join(seq))
    batch = read_fastx(_write(tmp_path / "r.fq", reads, seed % 2 == 0, seed))
    mapper = Mapper(index, 2, device=CpuBackend(1 + seed % 2))
    names = index.contigs.names
    result = _random_result(rng, batch, mapper, names, np.asarray(index.contigs.lengths))
    assert len(result) > 0
    for cigar_eq in (False, True):
        _same(result, batch, mapper, cigar_eq=cigar_eq, no_unal=bool(seed % 3 == 0))


@pytest.mark.parametrize("seed", range(2))
def test_placements_over_long_reference_n_runs(tmp_path, seed):
    """Hits covering whole 64-base blocks of reference N (runs of 70 and 150, and
    two runs a base apart), both strands, against the reference's MD and CIGAR."""
    rng = np.random.default_rng(50 + seed)
    contig = _dna(rng, 300) + "N" * 150 + _dna(rng, 200) + "N" * 70 + "A" + "N" * 3 + _dna(rng, 300)
    fasta = tmp_path / "n.fa"
    fasta.write_text(f">n\n{contig}\n>m\n{_dna(rng, 400)}\n")
    index = Index.build(fasta, wgram=5, sa_sample=4, device="cpu")
    reads = [_dna(rng, int(rng.choice([64, 100, 150, 200]))) for _ in range(60)]
    batch = read_fastx(_write(tmp_path / "r.fq", reads, True, seed))
    mapper = Mapper(index, 2, device=CpuBackend(1 + seed))
    result = _random_result(rng, batch, mapper, index.contigs.names, np.asarray(index.contigs.lengths))
    covered = [(c, q) for c, q, i in zip(result.contig, result.pos, result.read)
               if c == 0 and q <= 300 and q + batch.lengths[i] >= 300 + 64]
    assert covered  # some hits hold a whole block of N
    for cigar_eq in (False, True):
        _same(result, batch, mapper, cigar_eq=cigar_eq)


# --------------------------------------------------------------------------- unmapped records


@pytest.mark.parametrize("fastq", [True, False], ids=["fastq", "fasta"])
def test_format_unmapped_equals_the_reference(tmp_path, fastq):
    reads = ["ACGTNACGTRYA", "GGGG", "N" * 70]
    batch = read_fastx(_write(tmp_path / "u.fx", reads, fastq, 1))
    for rows in ([0, 1, 2], [2, 0], [1, 1], []):
        for tags in (None, {0: "YF:Z:TOO_LONG", 2: ""}, {1: "XX:i:5"}):
            assert format_unmapped(batch, np.array(rows, dtype=np.int64), tags) == \
                reference_sam.format_unmapped(batch, np.array(rows, dtype=np.int64), tags)


def test_empty_read_is_a_star(tmp_path):
    path = tmp_path / "e.fq"
    path.write_text("@e\n\n+\n\n@f\nAC\n+\nII\n")
    batch = read_fastx(path)
    want = "e\t4\t*\t0\t0\t*\t*\t0\t0\t*\t*\nf\t4\t*\t0\t0\t*\t*\t0\t0\tAC\tII\n"
    assert format_unmapped(batch, np.arange(2)) == want
    assert format_unmapped(batch, np.arange(2)) == reference_sam.format_unmapped(batch, np.arange(2))


def test_failed_bam_conversion_is_one_error_and_leaves_nothing(tmp_path):
    from gseek.errors import GseekError
    from gseek.output.sam import SamWriter, sam_header

    out = tmp_path / "x.bam"
    with pytest.raises(GseekError, match=r"x.bam: BAM conversion failed") as info:
        with SamWriter(out, sam_header(["c"], [10], command="t", backend="cpu")) as sam:
            sam.write_text("not\ta\tsam\trecord\n", 1)
    assert "\n" not in str(info.value)
    assert "stdout=" not in str(info.value) and "\\n" not in str(info.value)  # samtools' line, not pysam's repr
    assert str(info.value).split("conversion failed: ")[1] == "samtools sort: truncated file. Aborting"
    assert list(tmp_path.iterdir()) == []


def test_buffer_pool_reuses_written_buffers():
    from gseek.output.sam_records import BufferPool

    pool = BufferPool(keep=1)
    a = pool.get(1000)
    assert a.size == 1000 and a.dtype == np.uint8
    pool.put(a)
    b = pool.get(900)  # fits in a's buffer: the same memory again
    assert b.size == 900 and np.shares_memory(a, b)
    assert not np.shares_memory(pool.get(10), b)  # b is out: a fresh buffer
    pool.put(b)
    pool.put(np.empty(5000, np.uint8))  # the pool keeps one
    assert np.shares_memory(pool.get(100), b)


def test_header_with_any_character_in_the_command_line(tmp_path):
    from gseek.output.sam import SamWriter, sam_header

    header = sam_header(["chr\xe9"], [10], command="gseek search -q reads_\u03b1.fq", backend="cpu")
    with SamWriter(tmp_path / "o.sam", header) as sam:
        sam.write_text("r\t4\t*\t0\t0\t*\t*\t0\t0\t*\t*\n", 1)
    raw = (tmp_path / "o.sam").read_bytes()
    assert "reads_\u03b1.fq".encode() in raw  # @PG CL in UTF-8
    assert b"SN:chr\xe9\t" in raw  # contig names byte for byte (latin-1), as in the records


def test_buffer_pool_ignores_a_second_put_of_one_buffer():
    from gseek.output.sam_records import BufferPool

    pool = BufferPool(keep=4)
    a = pool.get(64)
    pool.put(a)
    pool.put(a[:10])  # the same buffer again (a view of it)
    x, y = pool.get(64), pool.get(64)
    assert not np.shares_memory(x, y)


# --------------------------------------------------------------------------- output formats (issue 13 item 11)


def test_sam_gz_is_bgzf_of_the_same_sam_text(genome, tmp_path):
    """``.sam.gz`` (any case) is BGZF: the SAM text of ``.sam`` byte for byte once
    decompressed, blocks with the ``BC`` field, the end-of-file block, readable by
    htslib; ``x.BAM`` is BAM (unsorted: the records in the same order)."""
    import gzip

    import pysam

    from gseek.output.bgzf import BLOCK_INPUT, EOF_BLOCK

    contigs, index, _ = genome
    path = _write(tmp_path / "r.fq", _reads(11, contigs, 3000), True, 11)
    outs = {name: tmp_path / name for name in ("x.sam", "x.sam.gz", "y.SAM.GZ", "x.BAM")}
    for out in outs.values():
        map_reads(index, path, out, mismatches=2, command="t", sort=False if out.name == "x.BAM" else None)
    sam = outs["x.sam"].read_bytes()
    assert len(sam) > 2 * BLOCK_INPUT  # several blocks
    for name in ("x.sam.gz", "y.SAM.GZ"):
        packed = outs[name].read_bytes()
        assert gzip.decompress(packed) == sam and packed.endswith(EOF_BLOCK)
        at = 0
        while at < len(packed):  # every member is a BGZF block that says its size
            assert packed[at : at + 4] == b"\x1f\x8b\x08\x04" and packed[at + 12 : at + 14] == b"BC"
            at += int.from_bytes(packed[at + 16 : at + 18], "little") + 1
        assert at == len(packed)
    with pysam.AlignmentFile(str(outs["x.sam.gz"])) as a, pysam.AlignmentFile(str(outs["x.sam"])) as b:
        assert [r.to_string() for r in a] == [r.to_string() for r in b]
    with pysam.AlignmentFile(str(outs["x.BAM"]), "rb") as bam, pysam.AlignmentFile(str(outs["x.sam"])) as b:
        assert [r.to_string() for r in bam] == [r.to_string() for r in b]


def test_incompressible_data_fits_its_blocks():
    """Random bytes, written in pieces that straddle blocks: each block of
    BLOCK_INPUT bytes still fits the 64 KiB a BGZF block may take."""
    import gzip
    import io

    from gseek.output.bgzf import BLOCK_INPUT, BgzfWriter

    data = np.random.default_rng(5).integers(0, 256, 3 * BLOCK_INPUT + 17, dtype=np.uint8).tobytes()
    raw = io.BytesIO()
    with BgzfWriter(raw, level=9) as fh:
        for start in range(0, len(data), 1000):
            fh.write(data[start : start + 1000])
    packed = raw.getvalue()
    assert gzip.decompress(packed) == data
    sizes, at = [], 0
    while at < len(packed):
        sizes.append(int.from_bytes(packed[at + 16 : at + 18], "little") + 1)
        at += sizes[-1]
    assert len(sizes) == 5 and max(sizes) <= 1 << 16  # 3 whole blocks, the rest, the end-of-file block


@pytest.mark.parametrize("name, rule", [
    ("x.cram", "CRAM output is encoded against the reference; give --reference FASTA$"),
    ("x.txt", "not a SAM output.*\\.sam, \\.bam, \\.cram or \\.sam\\.gz"),
    ("x.sam.bz2", "not a SAM output.*\\.sam, \\.bam, \\.cram or \\.sam\\.gz"),
    ("x", "not a SAM output.*\\.sam, \\.bam, \\.cram or \\.sam\\.gz"),
    ("x.sam", "--sort applies to .bam and .cram output files"),
])
def test_other_output_names_are_refused(genome, tmp_path, name, rule):
    """Refused before anything is written: no file (CRAM without a reference;
    --sort for SAM text)."""
    from gseek.errors import OutputError

    contigs, index, _ = genome
    path = _write(tmp_path / "r.fq", _reads(12, contigs, 5), True, 12)
    with pytest.raises(OutputError, match=rf"{name}: {rule}"):
        map_reads(index, path, tmp_path / name, sort=True if name == "x.sam" else None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.fq"]


def test_special_files_are_sam_whatever_their_name(genome, tmp_path):
    from gseek.output.sam import sam_format

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert sam_format(fifo) == sam_format("/dev/null") == sam_format("-") == "sam"
    bam_fifo = tmp_path / "pipe.bam"
    os.mkfifo(bam_fifo)
    assert sam_format(bam_fifo) == "bam"


# --------------------------------------------------------------------------- QNAME (issue 13 items 8, 11)


@pytest.mark.parametrize("name, ok", [("n" * 254, True), ("!?AZaz~09", True), ("n" * 255, False),
                                      ("r@1", False), ("r\u00e9ad", False), ("r\x01", False), ("", False)])
def test_read_names_sam_cannot_hold_are_refused_with_file_and_line(genome, tmp_path, name, ok):
    """QNAME is ``[!-?A-~]{1,254}``: a read outside that fails the file naming its
    line, in whichever batch it is, before any SAM is written."""
    from gseek.errors import FastxError

    contigs, index, _ = genome
    reads = _reads(13, contigs, 40)
    text = "".join(f"@r{i}\n{seq}\n+\n{'I' * len(seq)}\n" for i, seq in enumerate(reads))
    text += f"@{name}\nACGTACGTACGTACGTACGT\n+\nIIIIIIIIIIIIIIIIIIII\n@last\nACGTACGTACGTACGTACGT\n+\n{'I' * 20}\n"
    path = tmp_path / "r.fq"
    path.write_bytes(text.encode("utf-8"))
    out = tmp_path / "out.bam"
    if ok:
        map_reads(index, path, out, chunk_bytes=1000)
        return
    rule = "header line has no record name" if not name else "read name"  # the parser's rule, or SAM's
    with pytest.raises(FastxError, match=rf"^{path}:{4 * len(reads) + 1}: {rule}"):
        map_reads(index, path, out, chunk_bytes=1000)  # several batches: the bad read is in a later one
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.fq"]


def test_the_first_bad_name_is_named():
    from gseek.errors import FastxError
    from gseek.output.sam import check_read_names
    from gseek.seqio import SequenceBatch

    codes = np.zeros(12, np.uint8)
    batch = SequenceBatch.from_codes(codes, np.arange(0, 13, 3), ["ok", "b@d", "n" * 300, "x y"], "s.fa")
    with pytest.raises(FastxError, match=r"^s.fa:3: read name 'b@d'"):
        check_read_names(batch)
    batch = SequenceBatch.from_codes(codes, np.arange(0, 13, 3), ["ok", "n" * 300, "b@d", "x"], "s.fa")
    with pytest.raises(FastxError, match=r"^s.fa:3: read name of 300 characters"):
        check_read_names(batch)
    batch = SequenceBatch.from_codes(codes, np.arange(0, 13, 3), ["ok", "fine", "", "b@d"], "s.fa")
    with pytest.raises(FastxError, match=r"^s.fa:5: read without a name"):
        check_read_names(batch)


def test_write_unmapped_checks_names(tmp_path):
    from gseek.errors import FastxError
    from gseek.output.sam import SamWriter, sam_header
    from gseek.seqio import SequenceBatch

    batch = SequenceBatch.from_codes(np.zeros(4, np.uint8), np.array([0, 2, 4]), ["a", "b@"], "u.fa")
    with pytest.raises(FastxError, match="u.fa:3"):
        with SamWriter(tmp_path / "u.sam", sam_header(["c"], [10], command="t", backend="cpu")) as sam:
            sam.write_unmapped(batch)
    assert list(tmp_path.iterdir()) == []


def test_mapped_and_unmapped_text_share_one_compiled_formatter(tmp_path):
    """A search formats unmapped-only batches (and warm_host's one record) and mapped
    ones: all go through one specialisation of the record formatter (each is ~11 s of a
    cold start), whatever the arrays' origin (index parts are read-only)."""
    import subprocess
    import sys

    from gseek.datasets import lambda_genome, lambda_reads

    code = (
        "import sys\n"
        "from gseek.index import Index\nfrom gseek.pipeline import map_reads\nfrom gseek.pipeline.tasks import warm_host\n"
        "from gseek.output import sam_records\n"
        "warm_host().join()\n"
        f"idx = Index.build({str(lambda_genome())!r}, wgram=8, device='cpu').save({str(tmp_path / 'l.gseek')!r})\n"
        f"map_reads(str(idx), {str(lambda_reads())!r}, {str(tmp_path / 'o.sam')!r}, mismatches=2, device='cpu')\n"
        "print(len(sam_records.record_fill.signatures), len(sam_records.record_bounds.signatures))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["1", "1"], out


# --------------------------------------------------------------------------- BAM, CRAM, read groups (issue 18)


def _records(path, **open_options) -> list[str]:
    import pysam

    with pysam.AlignmentFile(str(path), **open_options) as fh:
        return [r.to_string() for r in fh]


@pytest.fixture(scope="module")
def mapped_sam(genome):
    """The lambda-free test genome's reads, mapped once to SAM (-k 3: secondary records too)."""
    contigs, index, where = genome
    reads = _write(where / "bam_reads.fq", _reads(21, contigs, 400), True, 21)
    sam = where / "plain.sam"
    map_reads(index, reads, sam, mismatches=2, max_alignments=3, command="gseek t")
    return reads, sam


def test_sorted_bam_equals_samtools_sort_of_the_sam_and_is_indexed(genome, mapped_sam, tmp_path):
    """``x.bam`` is sorted by default: record for record ``samtools sort`` of the SAM
    output; its ``.bai`` answers a region query; the header has one ``@PG`` (gseek's,
    with the user's command line: no temporary name) and nothing is left beside it."""
    import pysam

    _, index, _ = genome
    reads, sam = mapped_sam
    out = tmp_path / "x.bam"
    map_reads(index, reads, out, mismatches=2, max_alignments=3, command="gseek t")
    want = tmp_path / "want.bam"
    pysam.sort("--no-PG", "-o", str(want), str(sam), catch_stdout=False)
    got = _records(out)
    assert got == _records(want) and len(got) > 400
    assert sorted(p.name for p in tmp_path.iterdir()) == ["want.bam", "x.bam", "x.bam.bai"]
    with pysam.AlignmentFile(str(out)) as bam:
        header = bam.header.to_dict()
        assert header["HD"]["SO"] == "coordinate"
        assert [pg["ID"] for pg in header["PG"]] == ["gseek"] and header["PG"][0]["CL"] == "gseek t"
        assert ".tmp-" not in str(bam.header)
        region = [r.to_string() for r in bam.fetch("chr0", 300, 420)]
    overlapping = [r for r in got if r.split("\t")[2] == "chr0" and int(r.split("\t")[3]) <= 420
                   and int(r.split("\t")[3]) + len(r.split("\t")[9]) - 1 > 300]
    assert region == overlapping and len(region) > 3


def test_bam_threads_give_the_same_records(genome, mapped_sam, tmp_path):
    """htslib's threads (``-p``) compress, sort and index: the records do not change."""
    _, index, _ = genome
    reads, _ = mapped_sam
    for threads in (1, 2):
        map_reads(index, reads, tmp_path / f"t{threads}.bam", mismatches=2, max_alignments=3, threads=threads)
    assert _records(tmp_path / "t1.bam") == _records(tmp_path / "t2.bam")


def test_a_bam_sorted_in_parts_is_the_one_sort_decompressed(genome, mapped_sam, tmp_path, monkeypatch):
    """Against a reference of ``SORT_PARTS_MIN_LENGTH`` or more the sorted BAM is written by a
    ``samtools sort`` per range of the reference (and one for the unplaced reads), laid end to end:
    the one sort's BAM once decompressed (header, records, their order), with its own index; the
    same bytes for any thread count; nothing left beside it."""
    import gzip

    import pysam

    from gseek.output import bam, sam_route

    _, index, _ = genome
    reads, sam = mapped_sam
    map_reads(index, reads, tmp_path / "one.bam", mismatches=2, max_alignments=3, command="gseek t")
    monkeypatch.setattr(bam, "SORT_PARTS_MIN_LENGTH", 0)
    monkeypatch.setattr(sam_route, "CHUNK_BYTES", 256)  # the routing pass in many chunks (as by a batch of MiBs)
    for parts, threads in ((4, 1), (4, 9), (2, 2)):  # sorts of 1 and 2 threads; 4 and 36 chunks
        monkeypatch.setattr(bam, "SORT_PARTS", parts)
        map_reads(index, reads, tmp_path / f"p{parts}t{threads}.bam", mismatches=2, max_alignments=3,
                  command="gseek t", threads=threads)
    one = gzip.decompress((tmp_path / "one.bam").read_bytes())
    for name in ("p4t1", "p4t9", "p2t2"):
        assert gzip.decompress((tmp_path / f"{name}.bam").read_bytes()) == one, name
    assert (tmp_path / "p4t1.bam").read_bytes() == (tmp_path / "p4t9.bam").read_bytes()
    assert (tmp_path / "p4t1.bam").read_bytes() != (tmp_path / "one.bam").read_bytes()  # other BGZF blocks
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{n}.bam{s}" for n in ("one", "p4t1", "p4t9", "p2t2") for s in ("", ".bai"))
    with pysam.AlignmentFile(str(sam)) as fh:  # every part of the four held records: the cuts were crossed
        names, lengths = list(fh.references), list(fh.lengths)
    text = b"".join(line for line in sam.read_bytes().splitlines(keepends=True) if not line.startswith(b"@"))
    _, starts = sam_route.route_lines(np.frombuffer(text, np.uint8), sam_route.Parts(names, lengths, 4))
    assert all(np.diff(starts) > 0), starts
    records = _records(tmp_path / "one.bam")
    assert any(r.split("\t")[2] == "*" for r in records) and len({r.split("\t")[2] for r in records}) == 5
    with pysam.AlignmentFile(str(tmp_path / "p4t1.bam")) as got, pysam.AlignmentFile(str(tmp_path / "one.bam")) as want:
        for contig in ("chr0", "chr1", "chr2", "chr3"):
            length = got.get_reference_length(contig)
            for start in range(0, length, max(1, length // 7)):
                assert [r.to_string() for r in got.fetch(contig, start, start + 50)] == \
                    [r.to_string() for r in want.fetch(contig, start, start + 50)]
        assert got.mapped == want.mapped and got.unmapped == want.unmapped > 0


def test_cram_round_trip_with_the_reference(genome, mapped_sam, tmp_path):
    """``x.cram`` with the reference: sorted, ``.crai`` beside it, and decoded
    against the reference it gives the sorted BAM's records (tags as a set: CRAM
    may rebuild MD/NM)."""
    import pysam

    _, index, where = genome
    reads, _ = mapped_sam
    fasta = tmp_path / "g.fa"
    fasta.write_bytes((where / "g.fa").read_bytes())
    map_reads(index, reads, tmp_path / "x.cram", mismatches=2, max_alignments=3, reference=fasta)
    map_reads(index, reads, tmp_path / "x.bam", mismatches=2, max_alignments=3)
    assert (tmp_path / "x.cram.crai").exists() and (tmp_path / "x.cram").read_bytes()[:4] == b"CRAM"

    def canonical(lines):
        return [(*f[:11], frozenset(f[11:])) for f in (line.split("\t") for line in lines)]

    cram = _records(tmp_path / "x.cram", reference_filename=str(fasta))
    assert canonical(cram) == canonical(_records(tmp_path / "x.bam"))
    with pysam.AlignmentFile(str(tmp_path / "x.cram"), reference_filename=str(fasta)) as fh:
        assert sum(1 for _ in fh.fetch("chr2", 500, 600)) > 0


def test_no_sort_keeps_input_order_and_removes_an_old_index(genome, mapped_sam, tmp_path):
    """``sort=False``: BAM records in the SAM's order, no index; the index of a
    former sorted file of that name is removed (it would describe another file)."""
    _, index, _ = genome
    reads, sam = mapped_sam
    out = tmp_path / "x.bam"
    map_reads(index, reads, out, mismatches=2, max_alignments=3)
    assert (tmp_path / "x.bam.bai").exists()
    map_reads(index, reads, out, mismatches=2, max_alignments=3, sort=False)
    assert _records(out) == _records(sam)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.bam"]


def test_compression_level_changes_the_bytes_not_the_records(genome, mapped_sam, tmp_path):
    """``compression_level`` (samtools' ``-l``): sorted and unsorted BAM and ``.sam.gz`` hold the same
    records at every level; 0 stores, 1 is larger than the default (samtools', 6); out of range is refused."""
    import gzip
    import zlib

    from gseek.errors import OptionError
    from gseek.output.bam import BAM_LEVEL

    _, index, _ = genome
    reads, sam = mapped_sam
    assert BAM_LEVEL is None
    sizes = {}
    for sort in (True, False):
        for level in (None, 0, 1):
            out = tmp_path / f"x-{sort}-{level}.bam"
            map_reads(index, reads, out, mismatches=2, max_alignments=3, sort=sort, compression_level=level)
            got = _records(out)
            assert sorted(got) == sorted(_records(sam)) and (sort or got == _records(sam))
            sizes[sort, level] = out.stat().st_size
        assert sizes[sort, 0] > sizes[sort, 1] > sizes[sort, None]
    with open(tmp_path / f"x-{True}-{0}.bam", "rb") as fh:  # level 0: deflate's stored blocks
        head = fh.read(1 << 16)
    assert zlib.decompressobj(-15).decompress(head[18:]).startswith(b"BAM\1")
    for level in (1, 9):
        map_reads(index, reads, tmp_path / f"x{level}.sam.gz", mismatches=2, max_alignments=3, compression_level=level)
        text = gzip.decompress((tmp_path / f"x{level}.sam.gz").read_bytes())
        assert [x for x in text.splitlines() if not x.startswith(b"@PG")] == \
            [x for x in sam.read_bytes().splitlines() if not x.startswith(b"@PG")]
    assert (tmp_path / "x1.sam.gz").stat().st_size > (tmp_path / "x9.sam.gz").stat().st_size
    with pytest.raises(OptionError, match="compression level must be 0 to 9"):
        map_reads(index, reads, tmp_path / "bad.bam", mismatches=2, compression_level=10)


def test_read_group_header_and_tags(genome, mapped_sam, tmp_path):
    """``read_group``: one ``@RG`` line and ``RG:Z:ID`` ending every record; the
    records are otherwise the SAM of a run without it, byte for byte; BAM too."""
    import pysam

    from gseek.output.sam import read_group

    _, index, _ = genome
    reads, sam = mapped_sam
    group = read_group("lane1", ["SM:sample 1", "PL:ILLUMINA"])
    for name in ("rg.sam", "rg.bam"):
        map_reads(index, reads, tmp_path / name, mismatches=2, max_alignments=3, command="gseek t",
                  read_group=group)
    plain = sam.read_text().splitlines()
    tagged = (tmp_path / "rg.sam").read_text().splitlines()
    assert [line for line in tagged if line.startswith("@RG")] == ["@RG\tID:lane1\tSM:sample 1\tPL:ILLUMINA"]
    records = [line for line in tagged if not line.startswith("@")]
    assert all(line.endswith("\tRG:Z:lane1") for line in records)
    assert [line.removesuffix("\tRG:Z:lane1") for line in records] == [x for x in plain if not x.startswith("@")]
    with pysam.AlignmentFile(str(tmp_path / "rg.bam")) as bam:
        assert bam.header.to_dict()["RG"] == [{"ID": "lane1", "SM": "sample 1", "PL": "ILLUMINA"}]
        assert {r.get_tag("RG") for r in bam} == {"lane1"}


@pytest.mark.parametrize("line, want", [
    (r"@RG\tID:lane1\tSM:s1", {"ID": "lane1", "SM": "s1"}),
    ("@RG\tID:lane1\tSM:s1", {"ID": "lane1", "SM": "s1"}),  # real tabs
    (r"@RG\tSM:s1\tID:x\tPL:ILLUMINA\tLB:lib 1", {"ID": "x", "SM": "s1", "PL": "ILLUMINA", "LB": "lib 1"}),
    (r"ID:x", "expected an @RG line"),
    (r"@RG", "expected an @RG line"),
    (r"@RG\tSM:s1", "has no ID field"),
    (r"@RG\tID:x\tSM", "field 'SM' is not TAG:VALUE"),
    (r"@RG\tID:x\tSAMPLE:y", "is not TAG:VALUE"),
    (r"@RG\tID:x\tID:y", "ID given twice"),
    (r"@RG\tID:", "ID needs a value"),
    (r"@RG\tID:x\t\tSM:y", "is not TAG:VALUE"),
])
def test_bwa_read_group_line(line, want):
    from gseek.errors import OptionError
    from gseek.output.sam import read_group_line

    if isinstance(want, dict):
        assert read_group_line(line) == want and next(iter(read_group_line(line))) == "ID"
        return
    with pytest.raises(OptionError, match=want):
        read_group_line(line)


@pytest.mark.parametrize("rg_id, fields, want", [
    ("x", [], {"ID": "x"}),
    ("x", ["SM:a:b"], {"ID": "x", "SM": "a:b"}),
    (None, [], None),
    (None, ["SM:a"], "give the read group's ID with --rg-id"),
    ("x", ["SM"], "expected TAG:VALUE"),
    ("x", ["ID:y"], "give the read group's ID with --rg-id"),
    ("x", ["SM:a", "SM:b"], "SM given twice"),
    ("x", ["SM:a\tb"], "printable characters"),
    ("", [], "ID needs a value"),
    ("\u00e9", [], "must be ASCII"),
])
def test_bowtie_read_group_options(rg_id, fields, want):
    from gseek.errors import OptionError
    from gseek.output.sam import read_group

    if not isinstance(want, str):
        assert read_group(rg_id, fields) == want
        return
    with pytest.raises(OptionError, match=want):
        read_group(rg_id, fields)


@pytest.mark.parametrize("fails", ["part2.bam", "cat"])
def test_a_failing_part_or_join_leaves_nothing_and_names_the_output(genome, mapped_sam, tmp_path, monkeypatch, fails):
    """A BAM sorted in parts: one part's sort stopping at once (the writer meets its closed pipe
    while the others run), or the ``samtools cat`` of the parts failing: one error naming the
    output, every child gone, nothing left beside the output."""
    from gseek.errors import GseekError
    from gseek.output import bam as bam_module
    from gseek.output.sam import SamWriter, sam_header

    contigs, _, _ = genome
    _, sam = mapped_sam
    header = sam_header([f"chr{i}" for i in range(len(contigs))], [len(c) for c in contigs], command="t",
                        backend="cpu")
    monkeypatch.setattr(bam_module, "SORT_PARTS_MIN_LENGTH", 0)
    failing = ("import json, sys\n"
               "steps = json.loads(sys.argv[1])\n"
               f"if {fails!r} in (steps[0][0], steps[0][-2].rsplit('/', 1)[-1]):\n"
               "    out = steps[0][steps[0].index('-o') + 1]\n"
               "    sys.stderr.write(f'[samtools] cannot write {out}\\n')\n"
               "    sys.exit(1)\n") + bam_module._CHILD
    monkeypatch.setattr(bam_module, "_CHILD", failing)
    text = b"".join(line for line in sam.read_bytes().splitlines(keepends=True) if not line.startswith(b"@"))
    started = []
    real = bam_module._start
    monkeypatch.setattr(bam_module, "_start", lambda *a, **k: started.append(real(*a, **k)) or started[-1])
    with pytest.raises(GseekError, match=rf"^{tmp_path / 'p.bam'}: BAM conversion failed") as info, \
            SamWriter(tmp_path / "p.bam", header) as out:
        for _ in range(200 if fails != "cat" else 1):  # more than the pipes hold: the dead part is met
            out.write_text(text, 1)
    assert str(info.value).endswith(f"cannot write {tmp_path / 'p.bam'}"), info.value
    assert len(started) == (5 if fails != "cat" else 6) and all(c.returncode is not None for c in started)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["x.bam", "x.cram", "u.bam", "p.bam"])
def test_an_error_while_writing_or_sorting_leaves_nothing(genome, tmp_path, monkeypatch, name):
    """A failure (an exception in the writer's block, a failed sort) removes the
    temporary output, the sort's scratch folder and any index; the error names
    the output, never a temporary name (``p.bam``: a BAM sorted in parts, a part's sort failing)."""
    from gseek.errors import GseekError
    from gseek.output import bam as bam_module
    from gseek.output.sam import SamWriter, sam_header

    if name == "p.bam":
        monkeypatch.setattr(bam_module, "SORT_PARTS_MIN_LENGTH", 0)

    contigs, _, where = genome
    header = sam_header([f"chr{i}" for i in range(len(contigs))], [len(c) for c in contigs], command="t",
                        backend="cpu")
    record = "r\t0\tchr0\t5\t60\t4M\t*\t0\t0\tACGT\tIIII\n"
    options = {"reference": where / "g.fa", "sort": name != "u.bam"}
    with pytest.raises(KeyboardInterrupt), SamWriter(tmp_path / name, header, **options) as sam:
        sam.write_text(record, 1)
        children = list(sam._htslib._children)
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []
    assert len(children) == (5 if name == "p.bam" else 1) and all(c.returncode is not None for c in children)
    if name == "u.bam":
        return

    # the samtools child fails as a full disk would make it, naming its temporary output
    failing_sort = ("import json, sys\n"
                    "sys.stdin.buffer.read()\n"
                    "args = json.loads(sys.argv[1])[0]\n"
                    "out = args[args.index('-o') + 1]\n"
                    "sys.stderr.write(f'[bam_sort] cannot write {out}\\n')\n"
                    "sys.exit(1)\n")
    monkeypatch.setattr(bam_module, "_CHILD", failing_sort)
    with pytest.raises(GseekError, match=rf"^{tmp_path / name}: {name[2:].upper()} conversion failed") as info, \
            SamWriter(tmp_path / name, header, **options) as sam:
        sam.write_text(record, 1)
    assert ".tmp-" not in str(info.value) and str(info.value).endswith(f"cannot write {tmp_path / name}")
    assert list(tmp_path.iterdir()) == []


def test_a_fifo_named_bam_is_streamed_unsorted(genome, mapped_sam, tmp_path):
    """A special file is written in place: a FIFO named ``.bam`` gets an unsorted
    BAM stream (sorting one is refused: it needs the whole file and an index beside it)."""
    import threading

    from gseek.errors import OutputError

    _, index, _ = genome
    reads, sam = mapped_sam
    fifo = tmp_path / "pipe.bam"
    os.mkfifo(fifo)
    got = {}
    reader = threading.Thread(target=lambda: got.update(data=fifo.read_bytes()))
    reader.start()
    map_reads(index, reads, fifo, mismatches=2, max_alignments=3)
    reader.join()
    (tmp_path / "copy.bam").write_bytes(got["data"])
    assert _records(tmp_path / "copy.bam") == _records(sam)
    with pytest.raises(OutputError, match="--sort needs a regular file, not a special file"):  # issue 36
        map_reads(index, reads, fifo, sort=True)


def test_a_cram_reference_must_hold_the_index_contigs(genome, mapped_sam, tmp_path):
    """A FASTA without one of the index's contigs, or with it at another length, is
    refused naming the FASTA before the index's reads are mapped; nothing is written."""
    from gseek.errors import OutputError

    contigs, index, _ = genome
    reads, _ = mapped_sam
    fasta = tmp_path / "ref.fa"
    for text, rule in [("".join(f">chr{i}\n{c}\n" for i, c in enumerate(contigs[:-1])), "holds no contig 'chr3'"),
                       ("".join(f">chr{i}\n{c[: -1 if i == 2 else None]}\n" for i, c in enumerate(contigs)),
                        f"contig 'chr2' has {len(contigs[2]) - 1:,} bases, {len(contigs[2]):,} in the index")]:
        fasta.write_text(text)
        (tmp_path / "ref.fa.fai").unlink(missing_ok=True)
        with pytest.raises(OutputError, match=f"^{fasta}: {rule}"):
            map_reads(index, reads, tmp_path / "x.cram", reference=fasta)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["ref.fa"]  # the .fai it made removed (issue 36)


def test_a_read_group_without_id_is_refused_by_the_header():
    """The API's ``read_group`` (a dict or name, value pairs) needs an ID, written first."""
    from gseek.errors import OptionError
    from gseek.output.sam import sam_header

    header = sam_header(["c"], [5], command="t", backend="cpu", read_group=[("SM", "s"), ("ID", "x")])
    assert list(header["RG"][0]) == ["ID", "SM"]
    with pytest.raises(OptionError, match="needs an ID"):
        sam_header(["c"], [5], command="t", backend="cpu", read_group={"SM": "s"})

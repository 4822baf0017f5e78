"""FASTA/FASTQ parsing and writing: formats, chunking, errors, and peers."""

from __future__ import annotations

import gzip
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gseek.errors import FastxError
from gseek.seqio import FastxReader, SequenceBatch, open_output, read_fastx, write_fasta, write_fastq


def _write(tmp_path, name, text, mode="w"):
    path = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(path, "wb") as fh:
            fh.write(text.encode() if isinstance(text, str) else text)
    elif isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, newline="")
    return str(path)


def _records(batch: SequenceBatch):
    return [(batch.name(i), batch.description(i), batch.sequence(i), batch.quality(i)) for i in range(len(batch))]


# ------------------------------------------------------------------ FASTA


def test_fasta_multiline_crlf_descriptions_and_blank_lines(tmp_path):
    text = ">chr1 first contig\r\nACGT\r\nAC\r\n\r\n>chr2\r\nGGGG\r\n>chr3  spaced   desc \r\n"
    batch = read_fastx(_write(tmp_path, "a.fa", text))
    assert batch.format == "fasta" and batch.quals is None
    assert _records(batch) == [
        ("chr1", "first contig", "ACGTAC", None),
        ("chr2", "", "GGGG", None),
        ("chr3", "spaced   desc ", "", None),
    ]
    assert batch.lines.tolist() == [1, 5, 7]
    assert batch.offsets.tolist() == [0, 6, 10, 10]


def test_fasta_without_final_newline(tmp_path):
    batch = read_fastx(_write(tmp_path, "a.fa", ">a\nAC\nGT"))
    assert _records(batch) == [("a", "", "ACGT", None)]


def test_lowercase_is_kept_as_soft_mask_runs(tmp_path):
    batch = read_fastx(_write(tmp_path, "a.fa", ">a\nACgt\nnnAC\n>b\nttAA\n>c\nAAcc\n>d\nggA\n"))
    assert batch.sequence(0) == "ACGTNNAC"
    # runs never span two records, even when adjacent records are both lowercase
    assert batch.soft_mask.tolist() == [[2, 6], [8, 10], [14, 16], [16, 18]]


def test_iupac_becomes_n_and_u_becomes_t(tmp_path):
    batch = read_fastx(_write(tmp_path, "a.fa", ">a\nRYSWKMBDHVNUu\n"))
    assert batch.sequence(0) == "N" * 11 + "TT"
    assert batch.codes.tolist() == [4] * 11 + [3, 3]


def test_protein_alphabet(tmp_path):
    batch = read_fastx(_write(tmp_path, "p.fa", ">p1\nMKV*\nlw\n"), alphabet="protein")
    assert batch.sequence(0) == "MKV*LW"
    with pytest.raises(FastxError, match=r"p2.fa:2: invalid protein character '1'"):
        read_fastx(_write(tmp_path, "p2.fa", ">p1\nMK1\n"), alphabet="protein")


def test_empty_records_and_spaces_in_sequence(tmp_path):
    batch = read_fastx(_write(tmp_path, "a.fa", ">a\n>b\nAC GT\t\n>c\n"))
    assert [batch.sequence(i) for i in range(3)] == ["", "ACGT", ""]
    assert batch.lengths.tolist() == [0, 4, 0]


# ------------------------------------------------------------------ FASTQ


def test_fastq_basic_gzip_and_crlf(tmp_path):
    text = "@r1 desc\r\nACGN\r\n+\r\nIIII\r\n@r2\r\nGG\r\n+r2\r\n#!\r\n"
    for name in ("r.fq", "r.fq.gz"):
        batch = read_fastx(_write(tmp_path, name, text))
        assert batch.format == "fastq"
        assert _records(batch) == [("r1", "desc", "ACGN", "IIII"), ("r2", "", "GG", "#!")]
        assert batch.lines.tolist() == [1, 5]


def test_fastq_multiline_and_empty_read(tmp_path):
    text = "@r1\nACG\nTA\n+\nII\nIII\n@r2\n\n+\n\n@r3\nA\n+\n@\n"
    batch = read_fastx(_write(tmp_path, "r.fq", text))
    assert _records(batch) == [("r1", "", "ACGTA", "IIIII"), ("r2", "", "", ""), ("r3", "", "A", "@")]


def test_gzip_detected_by_content_not_name(tmp_path):
    path = tmp_path / "reads.txt"
    path.write_bytes(gzip.compress(b"@r\nAC\n+\nII\n"))
    assert read_fastx(str(path)).sequence(0) == "AC"


def test_bgzip_multi_member(tmp_path):
    path = tmp_path / "r.fq.gz"
    path.write_bytes(gzip.compress(b"@r1\nAC\n+\nII\n") + gzip.compress(b"@r2\nGT\n+\nII\n"))
    batch = read_fastx(str(path))
    assert [batch.name(i) for i in range(len(batch))] == ["r1", "r2"]


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "text, message",
    [
        ("@r1\nACGT\n+\nIII\n@r2\nAC\n+\nII\n", r"r.fq:4: quality length 3 != sequence length 4"),
        ("@r1\nACGT\n+\nIIIII\n", r"r.fq:4: quality length 5 != sequence length 4"),
        ("@r1\nACGT\n", r"r.fq:3: truncated record: missing '\+' line"),
        ("@r1\nACGT\n+\n", r"r.fq:4: truncated record: quality length 0 != sequence length 4"),
        ("@r1\nACGT\n+\nII", r"r.fq:4: truncated record: quality length 2 != sequence length 4"),
        ("@r1\nAC\n+\nII\nr2\nAC\n+\nII\n", r"r.fq:5: expected '@' at the start of a record, found 'r'"),
        ("@r1\nAXGT\n+\nIIII\n", r"r.fq:2: invalid DNA character 'X' in sequence \(column 2\)"),
        ("@r1\nACGT\n+\nII I\n", r"r.fq:4: invalid quality character byte 0x20 \(column 3\)"),
        ("@ desc\nACGT\n+\nIIII\n", r"r.fq:1: header line has no record name"),
        ("@r1\nAC\x00T\n+\nIIII\n", r"r.fq:2: invalid DNA character NUL byte \(binary data\?\)"),
        ("hello\n", r"r.fq:1: not FASTA or FASTQ: record starts with 'h'"),
        (b"\n\n\x89PNG\r\n", r"r.fq:3: not FASTA or FASTQ: record starts with byte 0x89 \(binary data\?\)"),
    ],
)
def test_malformed_fastq_names_file_and_line(tmp_path, text, message):
    path = _write(tmp_path, "r.fq", text)
    with pytest.raises(FastxError, match=message) as info:
        read_fastx(path)
    assert isinstance(info.value, ValueError)
    assert "\n" not in str(info.value)


def test_error_line_numbers_survive_chunking(tmp_path):
    good = "".join(f"@r{i}\nACGT\n+\nIIII\n" for i in range(500))
    path = _write(tmp_path, "r.fq", good + "@bad\nACGT\n+\nIII\n")
    for chunk in (7, 64, 1000, 1 << 20):
        with pytest.raises(FastxError, match=r"r.fq:2004: truncated record: quality length 3"):
            for _ in FastxReader(path, chunk_bytes=chunk):
                pass


def test_empty_file(tmp_path):
    path = _write(tmp_path, "e.fq", "")
    assert list(FastxReader(path)) == []
    with pytest.raises(FastxError, match=r"e.fq: no FASTA/FASTQ records \(empty file\)"):
        read_fastx(path)


def test_missing_file(tmp_path):
    with pytest.raises(FastxError, match="nope.fa: cannot open"):
        read_fastx(str(tmp_path / "nope.fa"))


def test_corrupt_gzip(tmp_path):
    data = gzip.compress(b"@r1\nACGT\n+\nIIII\n" * 1000)
    path = tmp_path / "r.fq.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(FastxError, match="r.fq.gz: cannot read"):
        read_fastx(path)


# ------------------------------------------------------------------ chunking invariance

_record = st.tuples(
    st.text(alphabet="abcXYZ0123_.:", min_size=1, max_size=8),
    st.text(alphabet="ACGTNacgtn", min_size=0, max_size=40),
    st.booleans(),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(_record, min_size=1, max_size=12), chunk=st.integers(1, 200),
       max_records=st.integers(1, 5), fastq=st.booleans(), crlf=st.booleans(), width=st.integers(1, 9))
def test_any_chunking_gives_the_same_records(tmp_path, records, chunk, max_records, fastq, crlf, width):
    nl = "\r\n" if crlf else "\n"
    parts = []
    for name, seq, described in records:
        header = f"{name} d{len(seq)}" if described else name
        if fastq:
            parts.append(f"@{header}{nl}{seq}{nl}+{nl}{'I' * len(seq)}{nl}")
        else:
            lines = [seq[i : i + width] for i in range(0, len(seq), width)]
            parts.append(f">{header}{nl}" + "".join(line + nl for line in lines))
    path = _write(tmp_path, "h.fq" if fastq else "h.fa", "".join(parts))
    whole = read_fastx(path)
    batches = list(FastxReader(path, chunk_bytes=chunk, max_records=max_records))
    assert all(len(b) <= max_records for b in batches)
    joined = SequenceBatch.concat(batches)
    for field in ("codes", "offsets", "names", "name_offsets", "descriptions", "description_offsets",
                  "soft_mask", "lines"):
        assert np.array_equal(getattr(joined, field), getattr(whole, field)), field
    assert [b.first_record for b in batches] == list(np.cumsum([0] + [len(b) for b in batches[:-1]]))
    assert [whole.sequence(i) for i in range(len(whole))] == [s.upper().replace("N", "N") for _, s, _ in records]


def test_a_record_larger_than_the_chunk_is_read_whole(tmp_path):
    seq = "ACGT" * 10_000
    path = _write(tmp_path, "big.fa", ">big\n" + "\n".join(seq[i : i + 60] for i in range(0, len(seq), 60)) + "\n>s\nA\n")
    batches = list(FastxReader(path, chunk_bytes=100))
    assert [len(b) for b in batches] == [1, 1]
    assert batches[0].sequence(0) == seq


# ------------------------------------------------------------------ peers


def _random_fastq(rng, n):
    lines = []
    for i in range(n):
        length = int(rng.integers(1, 151))
        seq = "".join(rng.choice(list("ACGTN"), size=length, p=[0.24, 0.24, 0.24, 0.24, 0.04]))
        qual = "".join(chr(c) for c in rng.integers(33, 75, size=length))
        lines.append(f"@read{i} sample=1\n{seq}\n+\n{qual}\n")
    return "".join(lines)


def test_same_records_as_pysam_and_biopython(tmp_path):
    pysam = pytest.importorskip("pysam")
    from Bio import SeqIO

    path = _write(tmp_path, "peer.fq.gz", _random_fastq(np.random.default_rng(11), 3000))
    batch = read_fastx(path, chunk_bytes=4096)
    with pysam.FastxFile(path) as fh:
        theirs = [(r.name, r.comment or "", r.sequence, r.quality) for r in fh]
    assert _records(batch) == theirs
    with gzip.open(path, "rt") as fh:
        bio = [(r.id, str(r.seq), "".join(chr(q + 33) for q in r.letter_annotations["phred_quality"]))
               for r in SeqIO.parse(fh, "fastq")]
    assert [(n, s, q) for n, _, s, q in _records(batch)] == bio


def test_same_records_as_biopython_on_the_lambda_genome():
    from Bio import SeqIO

    from gseek.datasets import lambda_genome

    batch = read_fastx(lambda_genome())
    (record,) = SeqIO.parse(str(lambda_genome()), "fasta")
    assert batch.name(0) == record.id
    assert batch.sequence(0) == str(record.seq).upper()
    assert batch.total_length == 48502


# ------------------------------------------------------------------ writing


def test_write_and_read_back(tmp_path):
    fq = tmp_path / "out.fq.gz"
    assert write_fastq(fq, [("r1 x", "ACGN", "IIII"), ("r2", "", "")]) == 2
    batch = read_fastx(fq)
    assert _records(batch) == [("r1", "x", "ACGN", "IIII"), ("r2", "", "", "")]
    fa = tmp_path / "out.fa"
    write_fasta(fa, batch, width=3)
    assert fa.read_text() == ">r1 x\nACG\nN\n>r2\n\n"
    assert _records(read_fastx(fa)) == [("r1", "x", "ACGN", None), ("r2", "", "", None)]
    write_fastq(tmp_path / "again.fq", batch)
    assert _records(read_fastx(tmp_path / "again.fq")) == _records(batch)


def test_write_fastq_checks_lengths(tmp_path):
    with pytest.raises(ValueError, match="quality length 3 != sequence length 4"):
        write_fastq(tmp_path / "x.fq", [("r", "ACGT", "III")])
    assert os.listdir(tmp_path) == []


def test_open_output_leaves_nothing_on_error(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(RuntimeError):
        with open_output(target) as fh:
            fh.write(b"partial")
            raise RuntimeError("boom")
    assert os.listdir(tmp_path) == []


def test_open_output_leaves_nothing_when_closing_fails(tmp_path):
    """A failed close (disk full, gzip flush) must not put a truncated file under the final name."""
    target = tmp_path / "out.txt.gz"
    out = open_output(target)
    fh = out.__enter__()
    fh.write(b"data")

    def broken_close():
        raise OSError(28, "No space left on device")

    out._fh.close = broken_close
    with pytest.raises(OSError, match="No space left"):
        out.__exit__(None, None, None)
    assert os.listdir(tmp_path) == []

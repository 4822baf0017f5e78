"""FASTA/FASTQ parsing and writing: formats, chunking, errors, and peers."""

from __future__ import annotations

import gzip
import os
import random
import re
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gseek import seqio
from gseek.seqio import parser as _fastx
from gseek.errors import FastxError
from gseek.seqio import FastxReader, SequenceBatch, iter_fastx, open_output, read_fastx, write_fasta, write_fastq


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


def test_mask_runs_match_a_loop_over_records():
    """mask_runs against a record-by-record loop, on random masks with empty records among them."""
    from gseek.seqio.batch import mask_runs

    rng = np.random.default_rng(5)
    for _ in range(200):
        sizes = rng.integers(0, 6, size=rng.integers(1, 6))
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        mask = rng.random(int(offsets[-1])) < rng.random()
        want = []
        for a, b in zip(offsets[:-1], offsets[1:]):
            i = a
            while i < b:
                if mask[i]:
                    j = i
                    while j < b and mask[j]:
                        j += 1
                    want.append([int(i), int(j)])
                    i = j
                else:
                    i += 1
        for m in (mask, mask.astype(np.uint8)):
            got = mask_runs(m, offsets)
            assert got.dtype == np.int64 and got.reshape(-1, 2).tolist() == want


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
    batches = list(FastxReader(path, chunk_bytes=chunk, max_records=max_records, keep_raw=True))
    assert all(len(b) <= max_records for b in batches)
    assert b"".join(b.raw_record(i) for b in batches for i in range(len(b))) == "".join(parts).encode()
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


# ------------------------------------------------------------------ threads

_FIELDS = ("codes", "offsets", "quals", "names", "name_offsets", "descriptions", "description_offsets",
           "soft_mask", "lines", "raw", "raw_offsets")


def _collect(path, **options):
    """The batches a reader yields and the message of the FastxError it raises (or None)."""
    reader = FastxReader(path, **options)
    batches = []
    try:
        for batch in reader:
            batches.append(batch)
    except FastxError as exc:
        return batches, str(exc), reader
    return batches, None, reader


def _assert_same_as_one_thread(path, threads=(2, 3, 8), **options):
    """Every batch field by field, and the error, equal to threads=1's; returns the readers."""
    ref, ref_error, _ = _collect(path, **options)
    readers = []
    for t in threads:
        got, error, reader = _collect(path, threads=t, **options)
        assert error == ref_error, (t, options)
        assert len(got) == len(ref), (t, options)
        for i, (a, b) in enumerate(zip(ref, got)):
            assert (a.path, a.format, a.alphabet, a.first_record) == (b.path, b.format, b.alphabet, b.first_record)
            for name in _FIELDS:
                x, y = getattr(a, name), getattr(b, name)
                if x is None:
                    assert y is None, (t, i, name)
                else:
                    assert x.dtype == y.dtype and np.array_equal(x, y), (t, i, name, options)
        readers.append(reader)
    return ref, ref_error, readers


@pytest.fixture
def small_reads(monkeypatch):
    """Let threads run with any chunk size and set how few bytes a read takes
    (both readers), so that small inputs make many reads and many chunks."""
    monkeypatch.setattr(seqio.reader, "PARALLEL_MIN_CHUNK_BYTES", 1)

    def read_min(n):
        monkeypatch.setattr(_fastx, "READ_MIN", n)

    return read_min


@st.composite
def _fastx_text(draw):
    fastq = draw(st.booleans())
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    blank = draw(st.sampled_from(["", "", nl, nl + nl]))
    parts = []
    for i in range(draw(st.integers(0, 14))):
        name = draw(st.sampled_from(["r", "@r", ">r", "+r", "x_"])) + str(i)
        desc = draw(st.sampled_from(["", " d", " >x @y +z", "\tt"]))
        seq = draw(st.text(alphabet="ACGTNacgtn", max_size=30))
        width = draw(st.integers(1, 31))
        seq_lines = [seq[j : j + width] for j in range(0, len(seq), width)]
        if fastq:
            qual = draw(st.text(alphabet=draw(st.sampled_from(["I#", "@+", "ACGT", "@", "+"])),
                                min_size=len(seq), max_size=len(seq)))
            qwidth = draw(st.integers(1, 31))
            qual_lines = [qual[j : j + qwidth] for j in range(0, len(qual), qwidth)]
            plus = draw(st.sampled_from(["+", "+" + name]))
            parts.append(f"@{name}{desc}{nl}" + "".join(x + nl for x in seq_lines) + plus + nl
                         + "".join(x + nl for x in qual_lines))
        else:
            parts.append(f">{name}{desc}{nl}" + "".join(x + nl for x in seq_lines))
        parts.append(draw(st.sampled_from(["", "", blank])))
    text = "".join(parts)
    if text and draw(st.booleans()):
        text = text.rstrip("\r\n")
    if text and draw(st.integers(0, 3)) == 0:  # break it somewhere
        at = draw(st.integers(0, len(text) - 1))
        text = text[:at] + draw(st.sampled_from(["X", "", "\n", "@", "+", ">", " ", "\x00"])) + text[at + 1 :]
    return fastq, text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=_fastx_text(), chunk=st.integers(1, 5000), max_records=st.sampled_from([1, 2, 5, 1 << 20]),
       read_min=st.sampled_from([1, 3, 16, 100, 1 << 16]), threads=st.sampled_from([2, 3, 8]))
def test_threads_give_the_same_batches_and_errors(tmp_path, small_reads, case, chunk, max_records, read_min,
                                                  threads):
    fastq, text = case
    small_reads(read_min)
    path = _write(tmp_path, "h.fq" if fastq else "h.fa", text)
    _assert_same_as_one_thread(path, threads=(threads,), chunk_bytes=chunk, max_records=max_records)


def _random_file(rng, fastq, records, multiline=False, crlf=False, quals="!#5@+I"):
    nl = "\r\n" if crlf else "\n"
    parts = []
    for i in range(records):
        length = rng.choice([0, 1, 30, 100, 151, 700])
        seq = "".join(rng.choice("ACGTNacgt") for _ in range(length))
        if fastq:
            qual = "".join(rng.choice(quals) for _ in range(length))
            w = rng.randint(1, 80) if multiline else max(length, 1)
            parts.append(f"@read{i} x={i}{nl}" + "".join(seq[j : j + w] + nl for j in range(0, length, w))
                         + f"+{nl}" + "".join(qual[j : j + w] + nl for j in range(0, length, w)))
        else:
            w = rng.randint(1, 80)
            parts.append(f">chr{i} >desc{nl}" + "".join(seq[j : j + w] + nl for j in range(0, length, w)))
    return "".join(parts)


@pytest.mark.parametrize("fastq", [True, False])
def test_threads_on_larger_files_with_real_read_sizes(tmp_path, fastq):
    """Files of several 64 KiB reads, chunks the size of a read and larger (the
    regime where the next chunk is guessed from the end of a buffer)."""
    rng = random.Random(7 + fastq)
    for k, (multiline, crlf) in enumerate([(False, False), (True, False), (False, True), (True, True)]):
        path = _write(tmp_path, f"big{k}.{'fq' if fastq else 'fa'}", _random_file(rng, fastq, 1500, multiline, crlf))
        for chunk in (1 << 16, 70_000, 150_000):
            _, error, readers = _assert_same_as_one_thread(path, chunk_bytes=chunk)
            assert error is None
            assert all(r.pieces_used > 0 for r in readers)


def test_threads_protein(tmp_path):
    rng = random.Random(5)
    text = "".join(f">p{i} d\n" + "".join(rng.choice("ACDEFGHIKLMNPQRSTVWYXmkv*") for _ in range(rng.randint(0, 400)))
                   + "\n" for i in range(2000))
    path = _write(tmp_path, "p.fa", text)
    _, error, readers = _assert_same_as_one_thread(path, alphabet="protein", chunk_bytes=1 << 16)
    assert error is None and all(r.pieces_used > 0 for r in readers)


# quality lines that start with '@' or '+', or are all ACGT letters, look like
# headers, '+' lines and sequences to a parser that guesses where records start
_ADVERSARIAL = {
    "multiline quality starting with @ and +": "".join(
        f"@r{i}\nACGTACGTAC\nGT\n+\n@@@@\n+@@@@@\n@I\n" for i in range(40)
    ),
    "quality lines that read like a record": "".join(f"@r{i}\nACG\nTAC\n+\n@r\nAC\n+A\n" for i in range(40)),
    "quality lines that read like a record of 2 bases": "".join(
        f"@r{i}\nACGTAC\n+\n@r\nAC\n+A\n@r{i}\nAC\n+\nII\n" for i in range(40)
    ),
    "quality of ACGT letters": "".join(f"@r{i} d\nACGT\nACG\n+\nACGT\nACG\n" for i in range(40)),
    "4-line, quality of @": "".join(f"@r{i}\nACGTA\n+\n@@@@@\n" for i in range(60)),
    "CRLF, blank lines, empty reads": "".join(
        f"@r{i}\r\n{'ACGT' * (i % 3)}\r\n+\r\n{'IIII' * (i % 3)}\r\n" + "\r\n" * (i % 2) for i in range(50)
    ),
    "FASTA with '>' and '@' in descriptions, lowercase across lines, empty records": "".join(
        f">c{i} a>b >c @d\nACgt\nnnAC\n\n>e{i}\n>f{i} x\nacgt\n" for i in range(30)
    ),
    "FASTA without final newline": "".join(f">c{i}\nAC\nGT\n" for i in range(40)) + ">last\nAC",
    "FASTQ without final newline": "".join(f"@r{i}\nAC\n+\nII\n" for i in range(40))[:-1],
    "blank lines first": "\n\r\n\n" + "".join(f"@r{i}\nAC\n+\nII\n" for i in range(40)),
}


@pytest.mark.parametrize("name", sorted(_ADVERSARIAL))
def test_threads_on_adversarial_inputs(tmp_path, small_reads, name):
    text = _ADVERSARIAL[name]
    path = _write(tmp_path, "a.fa" if text.lstrip().startswith(">") else "a.fq", text)
    assert read_fastx(path)  # well-formed
    for read_min in (1, 5, 64, 1 << 16):
        small_reads(read_min)
        for chunk in (1, 7, 30, 100, 1000):
            for max_records in (1, 3, 1 << 20):
                _, error, readers = _assert_same_as_one_thread(path, chunk_bytes=chunk, max_records=max_records)
                assert error is None


def test_threads_recover_from_wrong_guesses(tmp_path, small_reads):
    """Multi-line qualities whose line break falls where a 4-line quality would
    end make the guess of the next chunk's start wrong: the chunks parsed from
    the wrong start are thrown away, and the batches are still the same."""
    text = "".join(f"@r{i}\nACGTACGTAC\n+\n" + ("IIIII\nIIII\nI\n" if i % 5 == 0 else "IIIIIIIIII\n")
                   for i in range(200))
    path = _write(tmp_path, "w.fq", text)
    small_reads(1 << 16)
    _, error, readers = _assert_same_as_one_thread(path, chunk_bytes=1000, max_records=1)
    assert error is None
    assert all(r.pieces_discarded > 0 for r in readers)
    assert all(r.pieces_used > 0 for r in readers)


_GOOD = "@r{i} s\nACGTACGTAC\n+\nIIIIIIIIII\n"


@pytest.mark.parametrize("where", ["first", "middle", "last"])
@pytest.mark.parametrize("bad, offset, rule", [
    ("@bad\nACGTACGTAC\n+\nIIIIIIIIIII\n", 4, "quality length 11 != sequence length 10"),
    ("@bad\nACGTXCGTAC\n+\nIIIIIIIIII\n", 2, "invalid DNA character 'X' in sequence (column 5)"),
    ("bad\nACGTACGTAC\n+\nIIIIIIIIII\n", 1, "expected '@' at the start of a record, found 'b'"),
    ("@bad\nACGTACGTAC\nIIIIIIIIII\n", 3, "invalid DNA character 'I' in sequence (column 1)"),
    ("@ bad\nACGTACGTAC\n+\nIIIIIIIIII\n", 1, "header line has no record name"),
])
def test_threads_report_the_same_error(tmp_path, where, bad, offset, rule):
    """A malformed record in the first, a middle or the last chunk: the same
    batches before it and the same file:line message as with one thread."""
    records = 20000  # 10 chunks
    at = {"first": 3, "middle": records // 2, "last": records - 2}[where]
    text = "".join(_GOOD.format(i=i) for i in range(at)) + bad + "".join(_GOOD.format(i=i) for i in range(at, records))
    path = _write(tmp_path, "e.fq", text)
    batches, error, _ = _assert_same_as_one_thread(path, chunk_bytes=1 << 16)
    assert error == f"{path}:{4 * at + offset}: {rule}"
    assert sum(len(b) for b in batches) <= at
    assert len(_collect(path, chunk_bytes=1 << 16)[0]) > 2 or where == "first"


def test_threads_truncated_last_record(tmp_path, small_reads):
    text = "".join(_GOOD.format(i=i) for i in range(300)) + "@cut\nACGTACGTAC\n+\nIIII"
    path = _write(tmp_path, "t.fq", text)
    for read_min in (64, 1 << 16):
        small_reads(read_min)
        _, error, _ = _assert_same_as_one_thread(path, chunk_bytes=500)
        assert error == f"{path}:1204: truncated record: quality length 4 != sequence length 10"


def test_threads_gzip_input(tmp_path):
    rng = random.Random(3)
    text = _random_file(rng, True, 3000)
    path = _write(tmp_path, "r.fq.gz", text)
    batches, error, readers = _assert_same_as_one_thread(path, chunk_bytes=1 << 16)
    assert error is None and len(batches) > 3 and all(r.pieces_used > 0 for r in readers)
    assert _records(SequenceBatch.concat(batches)) == _records(read_fastx(_write(tmp_path, "r.fq", text)))


def test_threads_corrupt_gzip(tmp_path):
    data = gzip.compress(("".join(_GOOD.format(i=i) for i in range(20000))).encode())
    path = tmp_path / "r.fq.gz"
    path.write_bytes(data[: len(data) // 2])
    _, error, _ = _assert_same_as_one_thread(str(path), chunk_bytes=1 << 16)
    assert error.startswith(f"{path}: cannot read")


def test_threads_parse_on_worker_threads(tmp_path, monkeypatch):
    """The threaded reader really parses on its pool (not in the caller's
    thread), uses chunks parsed from guessed starts, and stops its threads."""
    path = _write(tmp_path, "p.fq", "".join(_GOOD.format(i=i) for i in range(20000)))
    where = []
    parse_chunk = _fastx.parse_chunk

    def spy(*args):
        where.append(threading.current_thread().name)
        return parse_chunk(*args)

    monkeypatch.setattr(_fastx, "parse_chunk", spy)
    reader = FastxReader(path, threads=3, chunk_bytes=1 << 16)
    batches = list(reader)
    assert len(batches) == len(where) > 5
    assert all(name.startswith("gseek-fastx") for name in where)
    assert reader.pieces_used >= len(batches) - 2 and reader.pieces_discarded == 0
    assert not [t for t in threading.enumerate() if t.name.startswith("gseek-fastx")]

    where.clear()
    list(FastxReader(path, threads=3, chunk_bytes=(1 << 16) - 1))  # too small a chunk: one thread
    assert set(where) == {threading.current_thread().name}


def test_threads_stop_when_the_caller_stops(tmp_path):
    path = _write(tmp_path, "s.fq", "".join(_GOOD.format(i=i) for i in range(20000)))
    batches = iter_fastx(path, threads=4, chunk_bytes=1 << 16)
    first = next(batches)
    assert first.first_record == 0
    batches.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("gseek-fastx")]


def test_threads_through_read_fastx(tmp_path):
    path = _write(tmp_path, "r.fq", "".join(_GOOD.format(i=i) for i in range(20000)))
    one, many = read_fastx(path, chunk_bytes=1 << 16), read_fastx(path, threads=2, chunk_bytes=1 << 16)
    for name in _FIELDS:
        assert np.array_equal(getattr(one, name), getattr(many, name)), name


@pytest.mark.parametrize("threads", [0, -1, 1.5, True, "2"])
def test_threads_must_be_a_positive_integer(tmp_path, threads):
    with pytest.raises((ValueError, TypeError)):
        FastxReader(str(tmp_path / "x.fq"), threads=threads)


@pytest.mark.parametrize("text", ["", "\n\r\n\n", "hello\n", "\n\n\x89PNG\r\n"])
def test_threads_empty_and_not_fastx(tmp_path, small_reads, text):
    path = _write(tmp_path, "r.fq", text)
    small_reads(2)
    _assert_same_as_one_thread(path, chunk_bytes=3)


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


@pytest.mark.parametrize("threads", [1, 4])
@pytest.mark.parametrize("gz", [False, True])
def test_many_blank_lines_before_the_first_record(tmp_path, threads, gz):
    """More blank lines than one read (64 KiB) before the first record: the records are
    still found, with their line numbers, and an error after them names its line."""
    blank = "\n" * 40_000 + "\r\n" * 20_000
    records = "".join(f"@r{i}\nACGTN\n+\nIIIII\n" for i in range(300))
    first = 60_001
    for bad in (False, True):
        text = blank + records + ("@bad\nACGT\n+\nIII\n" if bad else "")
        path = tmp_path / (f"r{bad:d}.fq.gz" if gz else f"r{bad:d}.fq")
        path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
        for chunk in (100, 1 << 16, 1 << 20):
            reader = FastxReader(path, chunk_bytes=chunk, threads=threads)
            if bad:
                with pytest.raises(FastxError, match=rf"r1\.fq(\.gz)?:{first + 1200 + 3}: "):
                    list(reader)
                continue
            got = list(reader)
            assert [n for b in got for n in b.name_list()] == [f"r{i}" for i in range(300)], chunk
            assert np.concatenate([b.lines for b in got]).tolist() == [first + 4 * i for i in range(300)]


def test_only_blank_lines_is_an_empty_file(tmp_path):
    path = tmp_path / "blank.fq"
    path.write_bytes(b"\n" * 100_000)
    assert list(FastxReader(path)) == [] and list(FastxReader(path, threads=3)) == []


# ------------------------------------------------------------------ quality encodings, record text, slicing, trimming


def test_phred64_is_converted_to_phred33(tmp_path):
    path = _write(tmp_path, "p64.fq", "@a\nACGT\n+\n@Ih~\n@b\nAC\n+\nh\nh\n")
    batch = read_fastx(path, phred=64)
    assert [batch.quality(0), batch.quality(1)] == ["!*I_", "II"]
    assert read_fastx(path).quality(0) == "@Ih~"  # Phred+33 (the default): as it is


@pytest.mark.parametrize("text, line, rule", [
    ("@a\nACGT\n+\nhh?h\n", 4, "invalid quality character '?' (column 3) for Phred+64 ('@'..'~')"),
    ("@a\nACGT\n+\nhh\nh!\n", 5, "invalid quality character '!' (column 2) for Phred+64 ('@'..'~')"),
    ("@a\nACGT\n+\nhhhh\n@b\nAC\n+\nI5\n", 8, "invalid quality character '5' (column 2) for Phred+64 ('@'..'~')"),
])
def test_phred64_quality_below_at_is_an_error_at_its_line(tmp_path, text, line, rule):
    path = _write(tmp_path, "bad.fq", text)
    with pytest.raises(FastxError) as err:
        read_fastx(path, phred=64)
    assert str(err.value) == f"{path}:{line}: {rule}"
    _, error, _ = _assert_same_as_one_thread(path, threads=(2,), phred=64, chunk_bytes=1 << 16)
    assert error == str(err.value)


def test_phred33_refuses_bytes_outside_bang_to_tilde(tmp_path):
    path = _write(tmp_path, "bad.fq", "@a\nACGT\n+\nII\x7fI\n")
    with pytest.raises(FastxError, match=r"bad.fq:4: invalid quality character byte 0x7f \(column 3\)$"):
        read_fastx(path)


@pytest.mark.parametrize("phred", [0, 32, "64", None])
def test_phred_must_be_33_or_64(tmp_path, phred):
    with pytest.raises(ValueError, match="phred must be 33 or 64"):
        FastxReader(_write(tmp_path, "r.fq", "@a\nA\n+\nI\n"), phred=phred)


def test_phred64_and_record_text_with_threads(tmp_path, small_reads):
    rng = random.Random(11)
    path = _write(tmp_path, "t.fq", _random_file(rng, True, 400, multiline=True, crlf=True, quals="@Jh~"))
    batches, error, _ = _assert_same_as_one_thread(path, chunk_bytes=3000, phred=64, keep_raw=True)
    assert error is None and len(batches) > 3
    text = Path(path).read_bytes()  # an empty read gets its empty quality line back (written as 3 lines here)
    assert b"".join(b.raw for b in batches) == re.sub(rb"(@read\d+ x=\d+\r\n\+\r\n)(?=@|$)", rb"\1\r\n", text)


def test_record_text_leaves_out_blank_lines_and_ends_with_a_newline(tmp_path):
    path = _write(tmp_path, "b.fa", ">a d\nAC\n\nGT\n\r\n\n>b\r\nTT\r\n\r\n>c\nG")
    batch = read_fastx(path, keep_raw=True)
    assert [batch.raw_record(i) for i in range(3)] == [b">a d\nAC\n\nGT\n", b">b\r\nTT\r\n", b">c\nG\n"]
    with pytest.raises(ValueError, match="keep_raw"):
        read_fastx(path).raw_record(0)


def test_slicing_a_batch(tmp_path):
    path = _write(tmp_path, "s.fq", "@a\nACgt\n+\nIIII\n@b\nggA\n+\n#II\n@c\nTTTT\n+\n!!!!\n")
    batch = read_fastx(path, keep_raw=True)
    part = batch[1:3]
    assert _records(part) == _records(batch)[1:] and part.first_record == 1 and part.lines.tolist() == [5, 9]
    assert part.soft_mask.tolist() == [[0, 2]] and part.raw_record(1) == b"@c\nTTTT\n+\n!!!!\n"
    assert len(batch[3:]) == 0 and batch[:] is batch
    with pytest.raises(TypeError):
        batch[0]


def test_trimming_a_batch(tmp_path):
    path = _write(tmp_path, "t.fq", "@a\nACgtA\n+\nABCDE\n@b\nGG\n+\n#I\n@c\nacgTT\n+\n12345\n")
    batch = read_fastx(path, keep_raw=True)
    t = batch.trimmed(1, 2)
    assert [(t.sequence(i), t.quality(i)) for i in range(3)] == [("CG", "BC"), ("", ""), ("CG", "23")]
    assert t.soft_mask.tolist() == [[1, 2], [2, 4]]  # 'g' of a, 'cg' of c
    assert t.raw_record(0) == batch.raw_record(0) and t.name_list() == ["a", "b", "c"]
    assert batch.trimmed(0, 0) is batch
    assert [t.sequence(i) for t in [batch.trimmed(3)] for i in range(3)] == ["TA", "", "TT"]
    assert [t.sequence(i) for t in [batch.trimmed(0, 4)] for i in range(3)] == ["A", "", "A"]

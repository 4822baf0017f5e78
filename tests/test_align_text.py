"""Alignment rows as text (gseek.output.tabular): the bulk formatter equals the per-row reference byte for byte.

The reference is ``"\\n".join(results.lines()) + "\\n"`` (``Alignment.value``
per cell, the slow readable path kept in gseek.align), encoded as the writer's
stream encodes it.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import random
import sys

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gseek.align import PairAligner
from gseek.align.results import _SCORE_COLUMNS, _TSV_COLUMNS, OUTFMT6_DEFAULT, OUTFMT6_KEYWORDS, AlignmentResults
from gseek.output import _text
from gseek.output.cigar import cigar_strings
from gseek.output.tabular import AlignmentWriter, TsvFormatter, format_rows
from gseek.cli import main

HYPOTHESIS = dict(deadline=None, derandomize=True, database=None)
ALL_KEYWORDS = "6 " + " ".join(OUTFMT6_KEYWORDS)


def reference(results, encoding="utf-8", errors="strict") -> bytes:
    """What ``AlignmentWriter.write`` wrote before the bulk formatter."""
    lines = list(results.lines())
    return ("\n".join(lines) + "\n").encode(encoding, errors) if lines else b""


def _check(results, encoding="utf-8") -> bytes:
    expected = reference(results, encoding)
    assert format_rows(results, encoding) == expected
    formatter = TsvFormatter(encoding)
    assert formatter.format(results).tobytes() == expected
    assert formatter.format(results).tobytes() == expected  # the cached name tables give the same text
    return expected


# ------------------------------------------------------------------ real aligner results


def _seqs(seed: int, count: int = 14) -> dict[str, str]:
    """Random DNA, some related, some a few bases long (local mode leaves those empty)."""
    rng = random.Random(seed)
    out = {}
    for k in range(count):
        n = rng.choice([1, 2, 3, rng.randint(4, 60)])
        if k and rng.random() < 0.4:
            base = list(out[f"s{k - 1}"] + "".join(rng.choice("ACGT") for _ in range(n)))
            seq = "".join(rng.choice("ACGT") if rng.random() < 0.1 else c for c in base)
        else:
            seq = "".join(rng.choice("ACGTN") for _ in range(n))
        out[f"s{k}"] = seq
    out["short_a"], out["short_c"] = "A", "C"
    return out


OUTFMTS = [None, "6", ALL_KEYWORDS, "6 qstart qend sstart pident", "6 sseqid qstart nident", "6 cigar length"]
OPTIONS = [dict(), dict(traceback=True), dict(min_identity=0.6), dict(min_score=4, traceback=True)]
CASES = [(outfmt, options) for outfmt in OUTFMTS for options in OPTIONS] + \
    [(outfmt, dict(traceback=True, cigar_m=True)) for outfmt in (None, ALL_KEYWORDS)]


@pytest.mark.parametrize("mode", ["global", "local", "semiglobal"])
@pytest.mark.parametrize("outfmt, options", CASES)
def test_aligner_results(mode, outfmt, options):
    aligner = PairAligner(mode=mode, outfmt=outfmt, device="cpu", threads=1, batch_pairs=37, **options)
    seqs = _seqs(len(mode) + len(outfmt or ""))
    formatter = TsvFormatter()
    chunks = list(aligner.iter_all_vs_all(seqs))
    assert len(chunks) > 1
    for chunk in chunks:
        assert formatter.format(chunk).tobytes() == reference(chunk)
    whole = aligner.all_vs_all(seqs)
    _check(whole)
    if mode == "local" and whole.traceback and "min_score" not in options and "min_identity" not in options:
        assert (whole.alignment_length == 0).any()  # the empty alignments are covered


def test_empty_local_alignment_row():
    res = PairAligner(mode="local", traceback=True, device="cpu", outfmt=ALL_KEYWORDS).align_pairs(["AAA"], ["CCC"])
    assert int(res.score[0]) == 0 and int(res.alignment_length[0]) == 0
    text = _check(res).decode()
    # qstart and sstart stay 0-based for an empty alignment, identity 0, cigar "*"
    row = dict(zip(res.columns, text.rstrip("\n").split("\t")))
    assert (row["pident"], row["qstart"], row["sstart"], row["cigar"]) == ("0.000", "0", "0", "*")


def test_no_rows_is_no_bytes():
    res = PairAligner(device="cpu", min_score=10**6).all_vs_all(["ACGT", "TTTT"])
    assert len(res) == 0 and format_rows(res) == b"" and TsvFormatter().format(res).size == 0


# ------------------------------------------------------------------ synthetic results

#: (matches, length) whose identity sits at or next to a rounding tie of
#: ``.4f`` (x = odd / 32 are the only exact ties) or of ``.3f`` after ``100 * x``
#: (23 / 320: 100 * 0.071875 is 7.1875 in exact arithmetic, just below it in
#: doubles, so Python prints 7.187 where 2300 / 320 would print 7.188).
NEAR_TIES = [(1, 20000), (12345, 100000), (1, 8), (1, 32), (3, 32), (5, 32), (31, 32), (1, 3), (2, 3),
             (23, 320), (49, 320), (161, 320), (181, 320),
             (9999, 10000), (99995, 100000), (199999, 200000), (1, 1600), (1, 16000), (12345, 1000000),
             (5, 10000), (15, 100000), (1, 1), (0, 7), (0, 0), (7, 0), (2**52 - 1, 2**52), (1, 2**52 + 3)]


def _fixed_python(x: float, k: int) -> str:
    return f"{x:.{k}f}"


def dataclass_replace(res, **changes):
    return dataclasses.replace(res, **changes)


@pytest.mark.parametrize("matches, length", NEAR_TIES)
def test_identity_near_ties(matches, length):
    x = matches / length if length else 0.0
    res = _synthetic(["q"], ["t"], np.zeros(1, np.int64), np.zeros(1, np.int64), ("qseqid", "pident"),
                     np.array([matches], np.int64), np.array([length - matches], np.int64), np.zeros(1, np.int64))
    assert format_rows(res) == f"q\t{_fixed_python(100.0 * x, 3)}\n".encode() == reference(res)
    res = dataclass_replace(res, columns=("identity", "qname"))
    assert format_rows(res) == f"{_fixed_python(x, 4)}\tq\n".encode() == reference(res)


def test_ties_round_to_even():
    res = _synthetic(["q"] * 4, ["t"], np.arange(4), np.zeros(4, np.int64), ("identity",),
                     np.array([1, 3, 5, 7]), np.array([31, 29, 27, 25]), np.zeros(4, np.int64))
    assert format_rows(res) == b"0.0312\n0.0938\n0.1562\n0.2188\n" == reference(res)


@numba.njit
def _fixed_texts(xs, k, five_k, ten_k):
    out = np.empty(32 * xs.size, np.uint8)
    ends = np.empty(xs.size, np.int64)
    p = 0
    for i in range(xs.size):
        p = _text._fixed(out, p, xs[i], k, five_k, ten_k, True)
        ends[i] = p
    return out[:p], ends


def _texts(xs, k):
    out, ends = _fixed_texts(np.asarray(xs, np.float64), k, 5**k, 10**k)
    text = out.tobytes().decode()
    return [text[a:b] for a, b in zip([0, *ends[:-1]], ends)]


def test_fixed_point_ties_and_edges():
    ties16 = [j / 16 for j in range(1, 1600, 2)]  # .3f ties: y = odd / 16
    ties32 = [j / 32 for j in range(1, 32, 2)]  # .4f ties: x = odd / 32
    edges = [0.0, 1.0, 100.0, 5e-324, 2.0**-53, 0.99995, 0.999949999, 99.9995, 99.99949999999999, 0.00005,
             np.nextafter(0.00005, 0), np.nextafter(0.00005, 1), 1023.99999]
    for k in (3, 4):
        xs = ties16 + ties32 + edges
        assert _texts(xs, k) == [_fixed_python(x, k) for x in xs]


@settings(max_examples=400, **HYPOTHESIS)
@given(st.lists(st.floats(min_value=0.0, max_value=1000.0, allow_nan=False, allow_infinity=False), min_size=1,
                max_size=40))
def test_fixed_point_equals_python_on_doubles(xs):
    for k in (3, 4):
        assert _texts(xs, k) == [_fixed_python(x, k) for x in xs]


def _synthetic(qnames, tnames, query, target, columns, matches, mismatches, gap_cols, *, rng=None, dtype=np.int64,
               cigars=None, big=1000):
    """An AlignmentResults made directly; fields not given are random."""
    rng = rng or np.random.default_rng(0)
    n = len(query)

    def ints(low, high):
        return rng.integers(low, high, n, endpoint=True).astype(dtype)

    if cigars is None:
        counts = rng.integers(0, 4, n)
        ops = rng.choice([1, 2, 7, 8], counts.sum()).astype(np.uint32)
        runs = (rng.integers(1, 300, counts.sum()).astype(np.uint32) << 4) | ops
        cigars = cigar_strings(runs, np.concatenate([[0], np.cumsum(counts)]), bool(rng.integers(2)))
    return AlignmentResults(
        query_names=qnames, target_names=tnames, query=np.asarray(query, np.int64),
        target=np.asarray(target, np.int64), score=ints(-big, big), q_end=ints(0, big), t_end=ints(0, big),
        q_len=ints(0, big), t_len=ints(0, big), q_start=ints(0, big), t_start=ints(0, big),
        matches=np.asarray(matches).astype(dtype), mismatches=np.asarray(mismatches).astype(dtype),
        gap_cols=np.asarray(gap_cols).astype(dtype), gap_opens=ints(0, big), cigars=cigars,
        columns=tuple(columns))


NAMES = st.lists(st.text(min_size=0, max_size=12), min_size=1, max_size=8)
COLUMN_SETS = st.one_of(
    st.sampled_from([_TSV_COLUMNS, _SCORE_COLUMNS, OUTFMT6_DEFAULT, OUTFMT6_KEYWORDS]),
    st.lists(st.sampled_from(OUTFMT6_KEYWORDS), min_size=1, max_size=20),
    st.lists(st.sampled_from(_TSV_COLUMNS), min_size=1, max_size=20),
    st.lists(st.sampled_from(_TSV_COLUMNS + OUTFMT6_KEYWORDS), min_size=0, max_size=6),
)


@st.composite
def synthetic_results(draw):
    qnames, tnames = draw(NAMES), draw(NAMES)
    n = draw(st.integers(1, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    dtype, big = draw(st.sampled_from([(np.int32, 2**29), (np.int64, 2**52 // 3), (np.int64, 2**62),
                                       (np.int32, 300), (np.uint16, 2**14)]))
    kind = draw(st.sampled_from(["small", "ties", "big", "zero"]))
    if kind == "ties":
        pairs = [NEAR_TIES[i] for i in rng.integers(0, len(NEAR_TIES), n)]
        pairs = [(m, length) for m, length in pairs if m <= length < big] or [(0, 0)] * n
        pairs = (pairs * n)[:n]
        matches = np.array([m for m, _ in pairs])
        other = np.array([length - m for m, length in pairs])
        split = rng.integers(0, other + 1)
        mismatches, gap_cols = split, other - split
    else:
        top = {"small": 50, "big": big, "zero": 1}[kind]
        matches, mismatches, gap_cols = (rng.integers(0, top, n, endpoint=True) for _ in range(3))
        if kind == "zero":
            mismatches = gap_cols = np.zeros(n, np.int64)
            matches = np.where(rng.random(n) < 0.7, 0, matches)
        elif kind == "big" and big > 2**40:
            matches, mismatches, gap_cols = matches // 3, mismatches // 3, gap_cols // 3
    columns = draw(COLUMN_SETS)
    return _synthetic(qnames, tnames, rng.integers(0, len(qnames), n), rng.integers(0, len(tnames), n), columns,
                      matches, mismatches, gap_cols, rng=rng, dtype=dtype, big=min(big, 2**62))


@settings(max_examples=300, **HYPOTHESIS)
@given(synthetic_results())
def test_synthetic_results(res):
    _check(res)
    _check(res, "utf-8")
    assert TsvFormatter("utf-8", "surrogatepass").format(res).tobytes() == reference(res, "utf-8", "surrogatepass")


def test_large_and_negative_integers():
    rng = np.random.default_rng(3)
    n = 50
    res = _synthetic(["a", "b"], ["c"], rng.integers(0, 2, n), np.zeros(n, np.int64), OUTFMT6_KEYWORDS,
                     rng.integers(0, 2**50, n), rng.integers(0, 2**50, n), rng.integers(0, 2**50, n), rng=rng,
                     big=2**62)
    _check(res)
    extremes = np.array([np.iinfo(np.int64).max - 1, np.iinfo(np.int64).min + 1, -1, 0, 10**18], np.int64)
    res = dataclass_replace(res.take(np.arange(5)), score=extremes, q_start=extremes[::-1].copy())
    _check(res)


def test_outside_the_fast_domain_is_the_slow_path():
    """Counts that leave identity in [0, 1], huge ints, bad indices, None fields: same text (or error) as before."""
    rng = np.random.default_rng(5)
    n = 6
    res = _synthetic(["a", "b"], ["c"], rng.integers(0, 2, n), np.zeros(n, np.int64), OUTFMT6_KEYWORDS,
                     rng.integers(0, 9, n), rng.integers(0, 9, n), rng.integers(0, 9, n), rng=rng)
    for changes in (dict(gap_cols=np.array([-30, 0, 0, 1, 2, 3])),  # matches > length, negative length
                    dict(matches=np.array([2**53, 0, 1, 2, 3, 2**60])),  # not an exact double division
                    dict(q_start=np.array([np.iinfo(np.int64).max] * n)),  # qstart + 1 leaves int64
                    dict(score=np.array([np.iinfo(np.int64).min] * n)),
                    dict(score=np.array([2**64 - 1] * n, np.uint64)),
                    dict(query=np.array([-1, 0, 1, -2, 0, 0])),  # Python indexing from the end
                    dict(cigars=None),  # "*" in every row
                    dict(columns=("qseqid", "cigar", "qlen"))):
        bent = dataclass_replace(res, **changes)
        assert format_rows(bent) == reference(bent)
    for changes in (dict(matches=None), dict(columns=("qname", "colour")), dict(query=np.array([0, 0, 0, 0, 0, 9]))):
        bent = dataclass_replace(res, **changes)
        with pytest.raises(Exception) as slow:
            reference(bent)
        with pytest.raises(slow.type):
            format_rows(bent)


def test_name_tables_are_encoded_once_per_list():
    names = [f"n{i}" for i in range(100)]
    rng = np.random.default_rng(1)
    formatter = TsvFormatter()
    chunks = [_synthetic(names, names, rng.integers(0, 100, 20), rng.integers(0, 100, 20), _SCORE_COLUMNS,
                         np.zeros(20), np.zeros(20), np.zeros(20), rng=rng) for _ in range(3)]
    first = formatter.format(chunks[0]).tobytes()
    table = formatter.names(names)
    for chunk in chunks[1:]:
        assert formatter.format(chunk).tobytes() == reference(chunk)
    assert formatter.names(names) is table and len(formatter._tables) == 1 and first == reference(chunks[0])
    names.append("new")  # the same list, grown: encoded again
    assert formatter.names(names) is not table and len(formatter.names(names)) == 101
    equal = list(names)  # an equal list is another object: its own table
    assert formatter.names(equal) is not formatter.names(names)


def test_non_ascii_names_follow_the_encoding():
    res = _synthetic(["café", "名前", "plain"], ["ß\u00a0x", "\U0001f9ec", "t"], [0, 1, 2, 0], [0, 1, 2, 0],
                     OUTFMT6_DEFAULT, [1, 2, 3, 4], [0, 1, 0, 0], [1, 0, 0, 0])
    assert _check(res).decode().startswith("café\tß\u00a0x\t")
    for encoding in ("ascii", "latin-1"):
        with pytest.raises(UnicodeEncodeError) as slow:
            reference(res, encoding)
        with pytest.raises(UnicodeEncodeError) as fast:
            format_rows(res, encoding)
        assert str(fast.value) == str(slow.value)
    plain = res.take(np.array([2]))  # only encodable names in this chunk
    assert format_rows(plain, "ascii") == reference(plain, "ascii")
    replaced = TsvFormatter("ascii", "replace").format(res).tobytes()
    assert replaced == reference(res, "ascii", "replace")


# ------------------------------------------------------------------ the writer


def _aligned():
    aligner = PairAligner(mode="local", traceback=True, device="cpu", batch_pairs=17)
    seqs = _seqs(9)
    return aligner, list(aligner.iter_all_vs_all(seqs))


def test_writer_file_equals_the_slow_path(tmp_path):
    aligner, chunks = _aligned()
    for name in ("out.tsv", "out.tsv.gz"):
        out = tmp_path / name
        with AlignmentWriter(out, aligner.columns) as w:
            for chunk in chunks:
                w.write(chunk)
        assert w.rows == sum(len(c) for c in chunks)
        data = out.read_bytes()
        if name.endswith(".gz"):
            data = gzip.decompress(data)
        header = ("#" + "\t".join(aligner.columns) + "\n").encode()
        assert data == header + b"".join(reference(c) for c in chunks)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.tsv", "out.tsv.gz"]


def test_writer_stdout_binary_and_text_streams(monkeypatch):
    aligner, chunks = _aligned()
    expected = ("#" + "\t".join(aligner.columns) + "\n").encode() + b"".join(reference(c) for c in chunks)
    binary = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="\n")
    text = io.StringIO()
    other = io.TextIOWrapper(io.BytesIO(), encoding="utf-16", newline="\n")  # not a byte encoding: gets text
    for stream in (binary, text, other):
        monkeypatch.setattr(sys, "stdout", stream)
        with AlignmentWriter("-", aligner.columns) as w:
            for chunk in chunks:
                w.write(chunk)
        monkeypatch.undo()
        if stream is text:
            assert stream.getvalue().encode() == expected
        else:
            stream.flush()
            assert stream.buffer.getvalue().decode(stream.encoding).encode() == expected


def test_writer_non_ascii_names(tmp_path, monkeypatch):
    aligner = PairAligner(device="cpu")
    seqs = {"café": "ACGTACGT", "名": "ACGAACGT", "z": "ACGT"}
    res = aligner.all_vs_all(seqs)
    out = tmp_path / "o.tsv"
    with pytest.raises(UnicodeEncodeError):  # open_output's text layer is ascii, as before
        with AlignmentWriter(out, aligner.columns) as w:
            w.write(res)
    assert list(tmp_path.iterdir()) == []
    stream = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="\n")
    monkeypatch.setattr(sys, "stdout", stream)
    with AlignmentWriter(None, aligner.columns, header=False) as w:
        w.write(res)
    monkeypatch.undo()
    assert stream.buffer.getvalue() == reference(res)


OPTION_SETS = [[], ["--traceback"], ["--outfmt", "6"], ["--outfmt", ALL_KEYWORDS], ["--mode", "local", "--traceback",
               "--cigar-m"], ["--mode", "semiglobal", "--min-identity", "0.5"], ["--outfmt", "6 qseqid score"]]


@pytest.mark.parametrize("options", OPTION_SETS)
def test_cli_output_is_unchanged(tmp_path, capsys, monkeypatch, options):
    fasta = tmp_path / "s.fa"
    fasta.write_text("".join(f">{name} some description\n{seq}\n" for name, seq in _seqs(21).items()))

    def align(out):
        args = ["--quiet", "align", "-i", str(fasta), "--all-vs-all", *options]
        if out is not None:
            args += ["-o", str(out)]
        code = main(args)
        text, err = capsys.readouterr()
        assert code == 0, err
        return out.read_bytes() if out is not None else text

    fast_file, fast_stdout = align(tmp_path / "fast.tsv"), align(None)
    monkeypatch.setattr(TsvFormatter, "format", TsvFormatter.slow)  # every cell through Alignment.value
    slow_file, slow_stdout = align(tmp_path / "slow.tsv"), align(None)
    assert fast_file == slow_file and fast_stdout == slow_stdout
    assert fast_file.count(b"\n") > 20 and fast_file.decode() == fast_stdout

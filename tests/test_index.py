"""The FM-index (issue 3): construction against a naive one, count/locate
against brute-force search on every backend, the on-disk format, bad input."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
from host_cuda import build as host_cuda_build
import reference

from gseek.errors import FastxError, OptionError
from gseek.index import FORMAT_VERSION, PART_GROUPS, Index, IndexFormatError, build
from gseek.index import search as stages
from gseek.seqio import read_fastx, write_fasta

# --------------------------------------------------------------------------- texts


def _dna(rng: np.random.Generator, n: int) -> str:
    return "".join(rng.choice(list("ACGT"), size=n))


def _with_n_runs(rng: np.random.Generator, seq: str, runs: int) -> str:
    letters = list(seq)
    for _ in range(runs):
        start = int(rng.integers(0, len(letters)))
        length = int(rng.integers(1, 16))
        letters[start : start + length] = "N" * len(letters[start : start + length])
    return "".join(letters)


def _case_records(name: str) -> list[str]:
    rng = np.random.default_rng(sum(map(ord, name)))
    if name == "n_runs":  # N runs inside, at the start and at the end; an all-N contig; a 1-base contig
        records = [_with_n_runs(rng, _dna(rng, int(rng.integers(50, 700))), int(rng.integers(0, 5))) for _ in range(6)]
        records[0] = "NNN" + records[0] + "NN"
        return records + ["NNNN", "G"]
    if name == "many_short":  # many contig boundaries
        return [_with_n_runs(rng, _dna(rng, int(rng.integers(1, 11))), int(rng.random() < 0.1)) for _ in range(400)]
    if name == "one_long":  # one contig with a long planted repeat and one N run
        seq = _dna(rng, 5000)
        seq = seq[:3000] + seq[100:700] + seq[3600:]
        return [seq[:2000] + "N" * 7 + seq[2007:]]
    if name == "periodic":  # low complexity: long runs and tandem repeats
        return ["AC" * 250, "A" * 300, "ACGTTGCA" * 40 + "T"]
    raise ValueError(name)


CASES = {
    # id: (records, sa_sample, wgram, pos64)
    "n_runs": ("n_runs", 16, 4, False),
    "n_runs-s1-w0-pos64": ("n_runs", 1, 0, True),
    "many_short": ("many_short", 3, 2, False),
    "one_long-pos64": ("one_long", 5, 6, True),
    "one_long-s32-w1": ("one_long", 32, 1, False),
    "periodic": ("periodic", 7, 3, False),
}

_BUILT: dict[str, tuple[list[str], Index]] = {}


def _write(tmp_path_factory, records: list[str], name: str = "ref.fa") -> str:
    path = os.path.join(tmp_path_factory.mktemp("fasta"), name)
    write_fasta(path, [(f"contig{i}", seq) for i, seq in enumerate(records)])
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    def get(case: str) -> tuple[list[str], Index]:
        if case not in _BUILT:
            name, sa_sample, wgram, pos64 = CASES[case]
            records = _case_records(name)
            fasta = _write(tmp_path_factory, records)
            _BUILT[case] = records, Index.build(fasta, sa_sample=sa_sample, wgram=wgram, pos64=pos64, device="cpu")
        return _BUILT[case]

    return get


def _on(index: Index, backend) -> Index:
    """The same index arrays, searched on ``backend``."""
    return Index(index.arrays, index.header, backend)


def _decode_bwt(index: Index) -> str:
    """The BWT read back from the Occ blocks and the dollar rows."""
    arrays, n = index.arrays, int(index.C[4])
    header = 8 if index.pos64 else 4
    words = np.asarray(arrays["occ"])[:, header:].reshape(-1).astype(np.int64)
    codes = ((words[:, None] >> (30 - 2 * np.arange(16))) & 3).reshape(-1)[:n]
    letters = np.array(list("ACGT"))[codes]
    letters[np.asarray(arrays["dollar_rows"])[:-1].astype(np.int64)] = "$"
    return "".join(letters)


# --------------------------------------------------------------------------- construction


@pytest.mark.parametrize("case", list(CASES))
def test_text_sa_bwt_and_c_match_naive(built, case):
    records, index = built(case)
    text = reference.fm_text(records)
    sa = reference.suffix_array(text)
    codes = np.concatenate([np.frombuffer(r.encode(), np.uint8) for r in records])
    lut = np.full(256, 4, np.uint8)
    lut[np.frombuffer(b"ACGT", np.uint8)] = [0, 1, 2, 3]
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in records])])
    starts, lengths, _ = build.segments(lut[codes], offsets)
    ours, _ = build.separator_text(lut[codes], starts, lengths)
    assert "".join("ACGT$"[c] for c in ours) == text
    assert build.suffix_array(ours).tolist() == sa
    assert build.suffix_array(ours, force64=True).tolist() == sa
    assert _decode_bwt(index) == reference.bwt(text, sa)
    assert index.C.tolist() == reference.c_array(text)


@pytest.mark.parametrize("case", list(CASES))
def test_text_only_build_has_the_full_builds_text_parts_and_facts(built, case):
    """``parts="text"`` (no separator text is built: its layout and C are counted) gives the full
    build's contig, segment and packed-text arrays and the same C and statistics."""
    records, index = built(case)
    name, sa_sample, wgram, pos64 = CASES[case]
    text_only = Index.build(index.header["source"], sa_sample=sa_sample, pos64=pos64, device="cpu", parts="text")
    for part, array in text_only.arrays.items():
        assert np.array_equal(np.asarray(array), np.asarray(index.arrays[part])), part
    assert text_only.header["C"] == index.header["C"] == reference.c_array(reference.fm_text(records))
    assert text_only.header["stats"] == index.header["stats"]


@pytest.mark.parametrize("case", list(CASES))
def test_occ_and_sampled_sa_match_naive(built, backend, case):
    records, index = built(case)
    text = reference.fm_text(records)
    sa = reference.suffix_array(text)
    occ = reference.occ_table(reference.bwt(text, sa))
    on = _on(index, backend)
    fm = on.device_arrays()
    rows = np.arange(len(text) + 1)
    assert backend.to_host(stages.occ_at(backend, fm, rows)).tolist() == occ
    assert backend.to_host(stages.sa_at(backend, fm, rows[:-1])).tolist() == sa


@pytest.mark.parametrize("case", ["n_runs", "many_short", "periodic"])
def test_wgram_table_matches_naive(built, case):
    records, index = built(case)
    w = index.wgram
    text = reference.fm_text(records)
    sa = reference.suffix_array(text)
    table = np.asarray(index.arrays["wgram"]).astype(np.int64)
    assert table.shape == (4**w, 2)
    for code in range(4**w):
        kmer = "".join("ACGT"[(code >> (2 * (w - 1 - j))) & 3] for j in range(w))
        assert tuple(table[code]) == reference.sa_interval(text, sa, kmer), kmer


def test_lambda_genome_matches_naive(backend):
    datasets = pytest.importorskip("gseek.datasets")
    if not hasattr(datasets, "lambda_genome"):
        pytest.skip("gseek.datasets.lambda_genome() is not there yet (added by the datasets work)")
    batch = read_fastx(datasets.lambda_genome())
    records = [batch.sequence(i) for i in range(len(batch))]
    index = Index.build(batch, sa_sample=16, wgram=8, device=backend)
    text = reference.fm_text(records)
    sa = reference.suffix_array(text)
    assert _decode_bwt(index) == reference.bwt(text, sa)
    assert index.C.tolist() == reference.c_array(text)
    fm = index.device_arrays()
    rows = np.arange(len(text) + 1)
    assert backend.to_host(stages.occ_at(backend, fm, rows)).tolist() == reference.occ_table(reference.bwt(text, sa))
    assert backend.to_host(stages.sa_at(backend, fm, rows[:-1])).tolist() == sa
    rng = np.random.default_rng(11)
    genome = records[0]
    starts = rng.integers(0, len(genome) - 30, 200)
    patterns = [genome[s : s + int(rng.integers(5, 31))] for s in starts] + [_dna(rng, 14) for _ in range(100)]
    _check_search(index, records, patterns)


# --------------------------------------------------------------------------- search


def _patterns(rng: np.random.Generator, records: list[str], w: int) -> list[str]:
    pats = []
    nonempty = [r for r in records if r]
    for _ in range(80):  # substrings: present (or holding an N)
        seq = nonempty[int(rng.integers(0, len(nonempty)))]
        length = int(rng.integers(1, min(40, len(seq)) + 1))
        start = int(rng.integers(0, len(seq) - length + 1))
        pats.append(seq[start : start + length])
    pats += [_dna(rng, int(rng.integers(1, 21))) for _ in range(40)]  # mostly absent
    for i in range(min(30, len(records) - 1)):  # across a contig boundary
        a, b = records[i], records[i + 1]
        pats.append(a[len(a) - int(rng.integers(1, 6)) :] + b[: int(rng.integers(1, 6))])
    n_positions = [(r, p) for r, seq in enumerate(records) for p, ch in enumerate(seq) if ch == "N"]
    for k in rng.permutation(len(n_positions))[:30]:  # touching an N, the N replaced by a base
        r, p = n_positions[k]
        seq = records[r]
        lo, hi = max(0, p - int(rng.integers(0, 8))), p + int(rng.integers(1, 8))
        window = list(seq[lo:hi])
        window[p - lo] = "ACGT"[int(rng.integers(0, 4))]
        pats.append("".join(window))
    pats += ["", "N", "ACGTN", "A", "C", "G", "T", "ACGT"[: max(1, w)], "T" * (w + 3)]
    return pats


def _same(a, b) -> None:
    """Two locate results hold the same matches (every array equal)."""
    assert len(a) == len(b)
    for name in ("pattern", "contig", "position"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def _check_search(index: Index, records: list[str], patterns: list[str]) -> None:
    expected = [[hit for hit in reference.find_all(records, p)] for p in patterns]
    assert index.count(patterns).tolist() == [len(e) for e in expected]
    hits = index.locate(patterns)
    assert hits.size == sum(len(e) for e in expected)
    got = list(zip(hits.pattern.tolist(), hits.contig.tolist(), hits.position.tolist()))
    assert got == [(i, r, pos) for i, e in enumerate(expected) for r, pos in e]
    assert hits.pattern.dtype == np.int64 and hits.contig.dtype == np.int32 and hits.position.dtype == np.int64


@pytest.mark.parametrize("case", list(CASES))
def test_count_and_locate_match_brute_force(built, backend, case):
    records, index = built(case)
    rng = np.random.default_rng(len(case))
    _check_search(_on(index, backend), records, _patterns(rng, records, index.wgram))


def test_wgram_and_positions_do_not_change_results(built):
    records, narrow = built("n_runs")
    _, wide = built("n_runs-s1-w0-pos64")
    rng = np.random.default_rng(5)
    patterns = _patterns(rng, records, 4)
    a, b = narrow.locate(patterns), wide.locate(patterns)
    _same(a, b)
    assert np.array_equal(narrow.intervals(patterns)[0], wide.intervals(patterns)[0])


def test_pattern_forms_agree(built, tmp_path):
    records, index = built("n_runs")
    patterns = ["ACG", "", "gta", "TTN", "C"]
    expected = [len(reference.find_all(records, p.upper())) for p in patterns]
    assert index.count(patterns).tolist() == expected
    assert index.count([p.encode() for p in patterns]).tolist() == expected
    codes = np.array([{"A": 0, "C": 1, "G": 2, "T": 3, "N": 4}[c] for c in "".join(patterns).upper()], np.uint8)
    offsets = np.cumsum([0] + [len(p) for p in patterns])
    assert index.count((codes, offsets)).tolist() == expected
    path = tmp_path / "p.fa"
    write_fasta(path, [(f"p{i}", p.upper()) for i, p in enumerate(patterns)])
    assert index.count(read_fastx(path)).tolist() == expected
    assert index.count("ACG").tolist() == expected[:1]
    with pytest.raises(OptionError, match="pattern 1: invalid DNA letter 'X'"):
        index.count(["ACG", "AXG"])
    with pytest.raises(OptionError, match="offsets"):
        index.count((codes, offsets[:-1]))
    decreasing = offsets.copy()
    decreasing[2] = decreasing[1] - 1
    with pytest.raises(OptionError, match="never decrease"):
        index.count((codes, decreasing))


def test_facts(built):
    records, index = built("n_runs")
    assert list(index.contigs.names) == [f"contig{i}" for i in range(len(records))]
    assert index.contigs.lengths.tolist() == [len(r) for r in records]
    assert index.contigs.index("contig3") == 3
    assert set(index.nbytes) == {n for names in PART_GROUPS.values() for n in names}
    assert index.nbytes["occ"] == index.arrays["occ"].size * 4
    assert index.stats["ambiguous"] == sum(r.count("N") for r in records)
    assert "bytes/base" in index.summary()
    assert "sa_sample=16, wgram=4, 32-bit" in repr(index)


# --------------------------------------------------------------------------- on disk


@pytest.fixture
def saved(built, tmp_path):
    records, index = built("n_runs")
    return records, index, index.save(tmp_path / "ref.gseek")


def test_round_trip_gives_identical_arrays(saved):
    records, index, path = saved
    assert sorted(os.listdir(path.parent)) == ["ref.gseek"]  # no temporary left
    loaded = Index.load(path, device="cpu")
    assert loaded.nbytes == index.nbytes
    for name, array in index.arrays.items():
        other = loaded.arrays[name]
        assert isinstance(other, np.memmap), name
        assert other.dtype == array.dtype and np.array_equal(other, array), name
    for key in ("parameters", "C", "stats", "source"):
        assert loaded.header[key] == index.header[key]
    patterns = _patterns(np.random.default_rng(2), records, 4)
    _same(loaded.locate(patterns), index.locate(patterns))
    assert Index.load(str(path)[: -len(".gseek")], device="cpu").count("ACG").tolist() == index.count("ACG").tolist()


def test_load_selected_parts(saved):
    records, _, path = saved
    fm_only = Index.load(path, device="cpu", parts=["fm"])
    assert "sa_samples" not in fm_only.nbytes and "text" not in fm_only.nbytes
    assert fm_only.count(["ACG", "T"]).tolist() == [len(reference.find_all(records, p)) for p in ["ACG", "T"]]
    with pytest.raises(OptionError, match="locate needs index part"):
        fm_only.locate(["ACG"])
    with pytest.raises(OptionError, match="unknown index part"):
        Index.load(path, device="cpu", parts=["fm", "bwt"])
    with pytest.raises(OptionError, match="cannot save"):
        fm_only.save(path.parent / "again.gseek")
    with pytest.raises(OptionError, match="cannot save an index loaded without part.s. wgram"):
        Index.load(path, device="cpu", parts=["fm", "sa", "text"]).save(path.parent / "again.gseek")


def test_save_replaces_an_index_but_nothing_else(saved, tmp_path):
    _, index, path = saved
    index.save(path)
    assert Index.load(path, device="cpu", verify=True).count("A").tolist() == index.count("A").tolist()
    other = tmp_path / "data"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(OptionError, match="not a gseek index; not overwriting"):
        index.save(other)
    assert (other / "keep.txt").read_text() == "mine"


def test_interrupted_save_leaves_nothing(built, tmp_path, monkeypatch):
    _, index = built("n_runs")
    calls = []

    def failing_save(fh, array, allow_pickle=False):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        real_save(fh, array, allow_pickle=allow_pickle)

    real_save = np.save
    monkeypatch.setattr(np, "save", failing_save)
    with pytest.raises(KeyboardInterrupt):
        index.save(tmp_path / "ref.gseek")
    assert os.listdir(tmp_path) == []



def test_a_signal_as_numpy_starts_a_part_ends_the_save_cleanly(built, tmp_path, monkeypatch):
    """NumPy's ``tofile`` turns an exception raised by a signal's handler at its start (in its
    ``os.PathLike`` check) into ``TypeError: expected str, bytes or os.PathLike object, not
    BufferedWriter`` (CI, 2026-11-26: a traceback and exit 1 where SIGTERM should give 143).
    The save holds signals while NumPy writes a part: the command's exception comes after it."""
    from gseek.errors import Terminated, deliver_signal

    _, index = built("n_runs")
    calls = []

    def numpy_save(fh, array, allow_pickle=False):
        calls.append(1)
        if len(calls) == 2:
            try:  # what NumPy does with an exception raised inside it there
                deliver_signal(Terminated(15))  # what the command's SIGTERM handler does
            except BaseException:
                raise TypeError("expected str, bytes or os.PathLike object, not BufferedWriter") from None
        real_save(fh, array, allow_pickle=allow_pickle)

    real_save = np.save
    monkeypatch.setattr(np, "save", numpy_save)
    with pytest.raises(Terminated):
        index.save(tmp_path / "ref.gseek")
    assert len(calls) == 2 and os.listdir(tmp_path) == []


def _damage(path, name, how):
    file = path / f"{name}.npy"
    if how == "corrupt":
        data = bytearray(file.read_bytes())
        data[-3] ^= 0xFF
        file.write_bytes(bytes(data))
    elif how == "truncate":
        data = file.read_bytes()
        file.write_bytes(data[: len(data) // 2])
    elif how == "remove":
        file.unlink()


@pytest.mark.parametrize(
    "name, how, message",
    [
        ("occ", "corrupt", r"occ\.npy: corrupted part \(SHA-256 differs from the header\)"),
        ("sa_samples", "truncate", r"sa_samples\.npy: truncated or replaced part: \d+ bytes, the header says \d+"),
        ("wgram", "remove", r"wgram\.npy: missing part"),
        ("contig_names", "corrupt", r"contig_names\.npy: corrupted part"),
    ],
)
def test_damaged_parts_are_refused(saved, name, how, message):
    _, _, path = saved
    _damage(path, name, how)
    with pytest.raises(IndexFormatError, match=message) as info:
        Index.load(path, device="cpu")
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_corruption_is_only_seen_with_verify(saved):
    _, _, path = saved
    _damage(path, "occ", "corrupt")
    Index.load(path, device="cpu", verify=False)  # sizes still match: documented trade-off
    with pytest.raises(IndexFormatError, match="corrupted"):
        Index.load(path, device="cpu", verify=True)


def test_a_part_not_loaded_is_not_checked(saved):
    _, _, path = saved
    _damage(path, "sa_samples", "remove")
    assert Index.load(path, device="cpu", parts=["fm", "wgram"]).count("A")[0] > 0


def test_wrong_version_and_bad_header_are_refused(saved):
    _, _, path = saved
    head = path / "header.json"
    header = json.loads(head.read_text())
    header["format_version"] = FORMAT_VERSION + 1
    head.write_text(json.dumps(header))
    wrong = f"index format version {FORMAT_VERSION + 1}, but this gseek reads version {FORMAT_VERSION}"
    with pytest.raises(IndexFormatError, match=wrong):
        Index.load(path, device="cpu")
    head.write_text("{not json")
    with pytest.raises(IndexFormatError, match="unreadable header"):
        Index.load(path, device="cpu")
    head.unlink()
    with pytest.raises(IndexFormatError, match="not a gseek index"):
        Index.load(path, device="cpu")
    shutil.rmtree(path)
    with pytest.raises(IndexFormatError, match="no such index directory"):
        Index.load(path, device="cpu")


def _set(path, *keys, value=None, delta=None):
    """Edit one field of the header at ``path`` (``delta``: add to the number there)."""
    head = path / "header.json"
    header = json.loads(head.read_text())
    node = header
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = node[keys[-1]] + delta if delta is not None else value
    head.write_text(json.dumps(header))


@pytest.mark.parametrize("keys, edit, message", [
    (("C", 2), dict(delta=1), r"C \[.*\] does not match the BWT: occ\.npy counts"),
    (("C", 4), dict(delta=1), r"C \[.*\] is not the cumulative base counts of a text of"),
    (("C",), dict(value=[1, 2, 3]), r"C must be a list of 5 integers"),
    (("parameters", "pos64"), dict(value=True), r"parameters\.occ_interval is 192; 64-bit positions"),
    (("parameters", "pos64"), dict(value="yes"), r"parameters\.pos64 must be true or false"),
    (("parameters", "wgram"), dict(delta=1), r"part 'wgram' is <u4 \[.*\], but the parameters"),
    (("parameters", "wgram"), dict(value=16), r"parameters\.wgram must be an integer 0\.\.15"),
    (("parameters", "sa_sample"), dict(value=0), r"parameters\.sa_sample must be an integer >= 1"),
    (("parameters", "sa_sample"), dict(value=1), r"part 'sa_samples' is"),
    (("parameters",), dict(value=7), r"header has no parameters table"),
    (("stats", "text_length"), dict(delta=5), r"is not the cumulative base counts"),
    (("stats", "bases"), dict(delta=16), r"part 'text' is"),
    (("stats", "bases"), dict(delta=1), r"stats\.bases is \d+, but contig_offsets\.npy says"),
    (("stats", "ambiguous"), dict(delta=1), r"stats\.ambiguous is \d+, but amb_runs\.npy says"),
    (("stats", "contigs"), dict(value=True), r"stats\.contigs must be an integer >= 0"),
    (("parts", "occ", "file"), dict(value="../header.json"), r"bad entry for part 'occ' \(its file must be"),
    (("parts", "occ", "shape"), dict(value=[1, 16]), r"part 'occ' is <u4 \[1, 16\]"),
])
def test_every_header_field_is_checked_against_the_parts(saved, keys, edit, message):
    """A header edited by hand is refused, one line naming header.json, before any
    kernel could read out of bounds with it (issue 13 item 4)."""
    _, index, path = saved
    _set(path, *keys, **edit)
    with pytest.raises(IndexFormatError, match=message) as info:
        Index.load(path, device="cpu", verify=False)
    assert str(info.value).startswith(str(path / "header.json")) and "\n" not in str(info.value)


@pytest.mark.parametrize("pos64", [False, True])
@pytest.mark.parametrize("sa_sample, wgram", [(1, 0), (3, 2), (16, 5)])
def test_the_header_checks_accept_every_layout(built, tmp_path_factory, pos64, sa_sample, wgram):
    records, _ = built("n_runs")
    index = Index.build(_write(tmp_path_factory, records), sa_sample=sa_sample, wgram=wgram, pos64=pos64,
                        device="cpu")
    path = index.save(tmp_path_factory.mktemp("layout") / "x.gseek")
    assert Index.load(path, device="cpu").count("ACGT").tolist() == index.count("ACGT").tolist()


def test_stale_temporaries_of_dead_processes_only(tmp_path):
    from gseek.seqio.atomic import remove_stale_temporaries

    proc = __import__("subprocess").Popen(["true"])
    proc.wait()
    dead, alive = proc.pid, os.getppid()
    for name in (f".x.sam.tmp-{dead}", f".x.sam.sam.tmp-{dead}", f".x.sam.tmp-{alive}", f".y.sam.tmp-{dead}",
                 ".x.sam.tmp-notapid"):
        (tmp_path / name).write_text("half")
    removed = remove_stale_temporaries(tmp_path / "x.sam")
    assert sorted(p.name for p in removed) == [f".x.sam.sam.tmp-{dead}", f".x.sam.tmp-{dead}"]
    assert sorted(p.name for p in remove_stale_temporaries(tmp_path, every=True)) == [f".y.sam.tmp-{dead}"]
    assert sorted(os.listdir(tmp_path)) == [f".x.sam.tmp-{alive}", ".x.sam.tmp-notapid"]


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "content, message",
    [
        ("", r"no FASTA/FASTQ records \(empty file\)"),
        (">a\nACGT\n>b\nGG\n>a\nTT\n", r"ref\.fa:5: duplicate record name 'a' \(first at line 1\)"),
        (">a\nACGT\n>b\n>c\nAC\n", r"ref\.fa:3: record 'b' has no sequence"),
        (">a\nACXGT\n", r"ref\.fa:2: invalid DNA character 'X' in sequence \(column 3\)"),
        (">a\nNNNN\n>b\nRYN\n", r"ref\.fa: no A/C/G/T base in any record"),
    ],
)
def test_bad_fasta_is_refused(tmp_path, content, message):
    path = tmp_path / "ref.fa"
    path.write_text(content)
    with pytest.raises(FastxError, match=message):
        Index.build(path, wgram=2, device="cpu")


@pytest.mark.parametrize(
    "option, message", [({"sa_sample": 0}, "sa_sample"), ({"wgram": 16}, "wgram"), ({"wgram": -1}, "wgram")]
)
def test_bad_options_are_refused(tmp_path, option, message):
    path = tmp_path / "ref.fa"
    path.write_text(">a\nACGT\n")
    with pytest.raises(OptionError, match=message):
        Index.build(path, device="cpu", **option)


# --------------------------------------------------------------------------- the CUDA twin, on the host

@pytest.fixture(scope="module")
def host_cuda(tmp_path_factory):
    from gseek.kernels import fmindex

    return host_cuda_build(tmp_path_factory.mktemp("hostcuda"), [fmindex])


@pytest.mark.parametrize("case", ["n_runs", "n_runs-s1-w0-pos64", "one_long-pos64", "many_short"])
def test_cuda_source_matches_the_numba_twin_on_the_host(built, host_cuda, case):
    records, index = built(case)
    cpu = index.backend
    host = _on(index, host_cuda)
    patterns = _patterns(np.random.default_rng(9), records, index.wgram)
    assert np.array_equal(host.count(patterns), index.count(patterns))
    _same(host.locate(patterns), index.locate(patterns))
    rows = np.arange(int(index.C[4]) + 1)
    a, b = host.device_arrays(), index.device_arrays()
    assert np.array_equal(stages.occ_at(host_cuda, a, rows), stages.occ_at(cpu, b, rows))
    assert np.array_equal(stages.sa_at(host_cuda, a, rows[:-1]), stages.sa_at(cpu, b, rows[:-1]))
    lo, hi = np.array([0, 3, 5]), np.array([rows[-1], 3, 9])
    for x, y in zip(stages.extend_intervals(host_cuda, a, lo, hi), stages.extend_intervals(cpu, b, lo, hi)):
        assert np.array_equal(x, y)


@pytest.mark.gpu
def test_gpu_equals_cpu_on_a_larger_index(tmp_path_factory):
    """Identical count/locate across backends on an index of many Occ blocks."""
    from conftest import make_backend

    rng = np.random.default_rng(3)
    records = [_with_n_runs(rng, _dna(rng, 50_000), 20) for _ in range(4)]
    index = Index.build(_write(tmp_path_factory, records), sa_sample=16, wgram=10, device="cpu")
    patterns = [r[s : s + 25] for r in records for s in rng.integers(0, len(r) - 25, 2500)]
    patterns += [_dna(rng, 12) for _ in range(2000)]
    cpu, gpu = _on(index, make_backend("cpu-2")), _on(index, make_backend("gpu"))
    assert np.array_equal(cpu.count(patterns), gpu.count(patterns))
    _same(cpu.locate(patterns), gpu.locate(patterns))

"""Symmetric DUST (gseek.blast.dust) against BLAST+ 2.12's dustmasker and blastn's own DUST (fixtures and
commands: tests/data/blast/README.md), and against a slow readable reference: the paper's definitions read
off every stretch of a short sequence, as blastn's masker reads it (an N a random base, some bases twice)."""

from __future__ import annotations

import os
from itertools import product
from pathlib import Path

import numpy as np
import pytest

from gseek.alphabet import encode_dna
from gseek.blast import build_lookup, dust_intervals, dust_mask
from gseek.errors import OptionError

DATA = Path(__file__).resolve().parent / "data" / "blast"
#: Records of N alone or N at a record's end, which dustmasker masks and blastn (so gseek) does not
#: (docs/blast.md, "DUST", known differences).
DUSTMASKER_N_DIFFERENCES = {"all_N", "N8_start", "N8_end", "N8_only"}


def read_fasta(path: Path) -> tuple[list[str], list[str]]:
    names: list[str] = []
    seqs: list[str] = []
    for line in path.read_text().splitlines():
        if line.startswith(">"):
            names.append(line[1:].split()[0])
            seqs.append("")
        elif line.strip():
            seqs[-1] += line.strip()
    return names, seqs


def read_intervals(path: Path) -> dict[str, list[tuple[int, int]]]:
    """dustmasker -outfmt interval: '>name' then 'start - end' lines, 0-based inclusive."""
    out: dict[str, list[tuple[int, int]]] = {}
    for line in path.read_text().splitlines():
        if line.startswith(">"):
            name = line[1:].split()[0]
            out[name] = []
        elif line.strip() and not line.startswith("#"):
            start, end = line.split(" - ")
            out[name].append((int(start), int(end) + 1))  # to half-open
    return out


def read_blastn_intervals(path: Path) -> tuple[dict[str, list[tuple[int, int]]], set[str]]:
    """blastn_dust.py's output (dustmasker's form) and the records blastn did not search."""
    unsearched = {name for name, lines in _blocks(path) if lines == ["# not searched"]}
    return read_intervals(path), unsearched


def _blocks(path: Path):
    name, lines = None, []
    for line in path.read_text().splitlines() + [">"]:
        if line.startswith(">"):
            if name is not None:
                yield name, lines
            name, lines = line[1:].strip(), []
        else:
            lines.append(line)


def gseek_intervals(fasta: Path, **options) -> dict[str, list[tuple[int, int]]]:
    """Every record of ``fasta`` in one batch, intervals back in per-record coordinates."""
    names, seqs = read_fasta(fasta)
    codes = np.concatenate([encode_dna(s) for s in seqs])
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in seqs])]).astype(np.int64)
    found = dust_intervals(codes, offsets, **options)
    out: dict[str, list[tuple[int, int]]] = {name: [] for name in names}
    for start, end in found.tolist():
        q = int(np.searchsorted(offsets, start, side="right")) - 1
        assert end <= offsets[q + 1], "an interval crosses a record's bound"
        out[names[q]].append((start - int(offsets[q]), end - int(offsets[q])))
    return out


@pytest.mark.parametrize("fasta, fixture, options", [
    ("db.fa", "db_dust.txt", {}),  # lambda, first 20 kb
    ("db.fa", "db_dust_level10.txt", {"level": 10}),
    ("db.fa", "db_dust_15_40_3.txt", {"level": 15, "window": 40, "linker": 3}),
    ("dust.fa", "dust.txt", {}),
    ("dust.fa", "dust_level10.txt", {"level": 10}),
    ("dust.fa", "dust_window32.txt", {"window": 32}),
    ("dust.fa", "dust_linker5.txt", {"linker": 5}),
])
def test_intervals_equal_dustmasker(fasta, fixture, options):
    want = read_intervals(DATA / fixture)
    got = gseek_intervals(DATA / fasta, **options)
    assert {name: got[name] for name in want if name not in DUSTMASKER_N_DIFFERENCES} == \
        {name: want[name] for name in want if name not in DUSTMASKER_N_DIFFERENCES}


@pytest.mark.parametrize("fasta, fixture, options", [
    ("dust_mixed_n.fa", "dust_mixed_n_blastn.txt", {}),  # 200 records: runs of N, homopolymers, repeats
    ("dust_mixed_n.fa", "dust_mixed_n_10_32_3_blastn.txt", {"level": 10, "window": 32, "linker": 3}),
    ("dust_n.fa", "dust_n_blastn.txt", {}),
    ("dust.fa", "dust_blastn.txt", {}),
    ("dust.fa", "dust_level10_blastn.txt", {"level": 10}),
])
def test_intervals_equal_blastn(fasta, fixture, options):
    """blastn's query masks (-outfmt 11), record by record; a record blastn masks whole has none
    listed (it is not searched), nor one it does not search."""
    want, unsearched = read_blastn_intervals(DATA / fixture)
    names, seqs = read_fasta(DATA / fasta)
    length = dict(zip(names, map(len, seqs)))
    got = gseek_intervals(DATA / fasta, **options)
    for name in set(want) - unsearched:
        if not want[name] and got[name] == [(0, length[name])]:
            want[name] = got[name]  # masked whole: not searched, no masks listed
    assert {name: got[name] for name in want if name not in unsearched} == \
        {name: want[name] for name in want if name not in unsearched}
    assert len(unsearched) < len(want) / 10


def test_fixtures_hold_what_they_claim():
    want = read_intervals(DATA / "dust.txt")
    assert want["random_300"] == [] and want["short_AAAA"] == []
    assert want["start_polyA"][0][0] == 0 and want["end_TG"][-1][1] == 140  # record ends
    assert len(want["gap_1"]) == 2  # two repeats one base apart stay two with linker 1
    assert len(read_intervals(DATA / "dust_linker5.txt")["gap_1"]) == 1
    assert sum(len(v) for v in read_intervals(DATA / "db_dust_level10.txt").values()) > 50


def test_runs_of_n_as_blastn_where_dustmasker_differs():
    """dustmasker masks a record of N alone and N at a record's end (read, it seems, as one letter);
    blastn reads them as random bases and masks none; elsewhere the two agree."""
    dustmasker = read_intervals(DATA / "dust_n.txt") | read_intervals(DATA / "dust.txt")
    blastn = read_intervals(DATA / "dust_n_blastn.txt") | read_intervals(DATA / "dust_blastn.txt")
    got = gseek_intervals(DATA / "dust_n.fa") | gseek_intervals(DATA / "dust.fa")
    assert {name for name in dustmasker if dustmasker[name] != blastn[name]} == DUSTMASKER_N_DIFFERENCES
    assert all(dustmasker[name] and not blastn[name] and not got[name] for name in DUSTMASKER_N_DIFFERENCES)
    assert got["A6_N_A6"] == blastn["A6_N_A6"] != []  # one N (read as C here) does not break a repeat
    assert got["N12_mid"] == blastn["N12_mid"] == []  # a run of N is not masked as poly-A


def test_the_issue_36_query_keeps_its_bases_beside_the_run_of_n():
    """300 lambda bases + 50 N + the next 350 (tests/data/blast/n_run_queries.fa): nothing masked, as
    blastn; N read as A masked the run and the 2 A's before it (issue 36)."""
    names, seqs = read_fasta(DATA / "n_run_queries.fa")
    for seq in seqs:
        codes = encode_dna(seq)
        assert dust_intervals(codes, np.array([0, codes.size])).tolist() == []


# --- the slow reference: the paper's definitions, every stretch scored from scratch ----------

def score(seq: str) -> tuple[int, int]:
    """S(x) as (numerator, denominator): sum c_t (c_t - 1) / 2 over triplets, over (triplets - 1)."""
    triplets = [seq[i:i + 3] for i in range(len(seq) - 2)]
    counts = {t: triplets.count(t) for t in set(triplets)}
    return sum(c * (c - 1) // 2 for c in counts.values()), len(triplets) - 1


def perfect(seq: str, level: int, window: int) -> list[tuple[int, int]]:
    """Every perfect interval of at most ``window`` bases of ``seq`` (ACGT), sorted."""
    high = {}  # (s, e) -> score of every stretch scoring above level / 10
    for s in range(len(seq)):
        for e in range(s + 4, min(len(seq), s + window) + 1):
            r, l = score(seq[s:e])
            if 10 * r > level * l:
                high[s, e] = r / l
    return sorted((s, e) for (s, e), v in high.items()
                  if all(w <= v for (s2, e2), w in high.items() if s <= s2 and e2 <= e))


class LaggedFibonacci:
    """BLAST+'s ``CRandom`` from its fixed start: x[n] = x[n - 33] + x[n - 13] mod 2^32, ``GetRand`` drops
    the lowest bit."""

    def __init__(self):
        from gseek.blast.dust import _LFG_J, _LFG_K, _LFG_STATE
        self.state, self.j, self.k = [int(x) for x in _LFG_STATE], _LFG_J, _LFG_K

    def get(self) -> int:
        r = (self.state[self.k] + self.state[self.j]) % 2 ** 32
        self.state[self.k] = r
        self.j, self.k = self.j - 1, self.k - 1
        if self.k < 0:
            self.k = 32
        elif self.j < 0:
            self.j = 32
        return r >> 1


def readings(seq: str, window: int) -> list[tuple[int, str]]:
    """What blastn's masker reads: (start, bases) per reading, an N read as ``"ACGT"[draw & 3]`` each time
    it is read. A reading keeps the last ``window - 2`` triplets; once they are all one (a homopolymer)
    it goes on while they stay one and stops before the base that breaks it; the next reading starts
    where the kept triplets started. A reading that reaches the end is followed by one of the bases its
    kept triplets span, unless it kept them all."""
    draws = LaggedFibonacci()
    out, start = [], 0
    while len(seq) - 1 > start + 2:
        read = ""
        for b in seq[start:start + 2]:
            read += "ACGT"[draws.get() & 3] if b not in "ACGT" else b
        dropped, homopolymer = 0, False
        for b in seq[start + 2:]:
            read += "ACGT"[draws.get() & 3] if b not in "ACGT" else b
            triplets = len(read) - 2
            dropped = max(0, triplets - (window - 2))
            kept = {read[i:i + 3] for i in range(dropped, triplets)}
            if homopolymer and len(kept) > 1:
                read = read[:-1]
                break
            homopolymer = triplets - dropped == window - 2 and len(kept) == 1
        out.append((start, read))
        if not dropped:
            break
        start += dropped
    return out


def reference(seq: str, level: int, window: int, linker: int) -> list[tuple[int, int]]:
    """The perfect intervals of each reading, merged in reading order (one fewer than ``linker`` bases
    after the last joins it)."""
    merged: list[list[int]] = []
    for start, read in readings(seq, window):
        for s, e in perfect(read, level, window):
            s, e = s + start, e + start
            if merged and s - merged[-1][1] < linker:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
    return [(s, e) for s, e in merged]


@pytest.fixture(params=[1 << 16, 1, 5, 37])
def span(request, monkeypatch):
    """Starts a record's host pass reads at a time (any gives the one pass's intervals)."""
    from gseek.blast import dust

    monkeypatch.setattr(dust, "_HOST_SPAN", request.param)
    return request.param


@pytest.mark.parametrize("seed", range(6))
def test_equals_the_reference(seed, span):
    rng = np.random.default_rng(seed)
    motif = "".join("ACGT"[i] for i in rng.integers(0, 4, rng.integers(1, 4)))
    parts = ["".join("ACGTN"[i] for i in rng.choice(5, n, p=[0.24, 0.24, 0.24, 0.24, 0.04]))
             for n in rng.integers(5, 30, 3)]
    seq = parts[0] + motif * int(rng.integers(2, 12)) + parts[1] + motif * int(rng.integers(2, 8)) + parts[2]
    codes = encode_dna(seq)
    for level, window, linker in product((10, 20, 30), (16, 64), (0, 1, 4)):
        got = dust_intervals(codes, np.array([0, codes.size]), level, window, linker).tolist()
        assert [tuple(x) for x in got] == reference(seq, level, window, linker), (seq, level, window, linker)


@pytest.mark.parametrize("seed", range(6))
def test_runs_of_n_beside_homopolymers_equal_the_reference(seed, span):
    """Runs of N beside homopolymers longer than the window (the masker reads again from there, drawing
    its N's again) and at either end: every reading of the reference."""
    rng = np.random.default_rng(100 + seed)
    parts = []
    for _ in range(6):
        kind, n = int(rng.integers(0, 4)), int(rng.integers(1, 30))
        parts.append(["".join("ACGT"[i] for i in rng.integers(0, 4, n)), "N" * n, "ACGT"[n % 4] * (n + 10),
                      "".join("ACGTN"[i] for i in rng.integers(0, 5, n))][kind])
    seq = "".join(parts)
    codes = encode_dna(seq)
    for level, window, linker in product((10, 20), (16, 32), (1, 4)):
        got = dust_intervals(codes, np.array([0, codes.size]), level, window, linker).tolist()
        assert [tuple(x) for x in got] == reference(seq, level, window, linker), (seq, level, window, linker)


def test_mask_feeds_the_lookup_table():
    codes = encode_dna("GATCCGTAAGCT" + "CA" * 15 + "TGCATGGCTAGC")
    offsets = np.array([0, codes.size])
    mask = dust_mask(codes, offsets)
    assert mask.dtype == np.uint8 and mask.tolist() == [0] * 12 + [1] * 30 + [0] * 12
    table = build_lookup(codes, offsets, 4, mask)
    assert table.n_words == 2 * (12 - 4 + 1)  # only the flanks seed


def test_empty_and_short_records():
    codes = encode_dna("AAAAAAAAAA")
    assert dust_intervals(codes[:0], np.array([0])).shape == (0, 2)
    assert dust_intervals(codes, np.array([0, 3, 3, 6, 10])).shape == (0, 2)  # 3, 0, 3, 4 bases
    assert dust_intervals(codes, np.array([0, 10])).tolist() == [[0, 10]]


@pytest.mark.parametrize("options", [{"level": 0}, {"window": 3}, {"linker": -1}])
def test_bad_options_raise(options):
    codes = encode_dna("ACGTACGT")
    with pytest.raises(OptionError):
        dust_intervals(codes, np.array([0, 8]), **options)
    with pytest.raises(OptionError):
        dust_intervals(codes, np.array([0, 9]))


def test_records_on_threads_give_the_one_pass_intervals(monkeypatch):
    """Enough bases for several groups of records on threads (the first on the calling thread): the intervals
    of one pass."""
    from gseek.blast.dust import _intervals

    monkeypatch.setattr(os, "cpu_count", lambda: 4)  # up to 4 groups, whatever the machine

    rng = np.random.default_rng(9)
    parts, bounds = [], [0]
    for _ in range(60):
        seq = rng.integers(0, 4, int(rng.integers(1, 12000))).astype(np.uint8)
        for _ in range(3):  # low-complexity stretches, some at record ends
            a = int(rng.integers(0, seq.size))
            seq[a:a + 40] = np.resize(rng.integers(0, 4, int(rng.integers(1, 4))), seq[a:a + 40].size)
        parts.append(seq)
        bounds.append(bounds[-1] + seq.size)
    codes, offsets = np.concatenate(parts), np.array(bounds, np.int64)
    assert codes.size > 4 << 16
    whole = _intervals(codes, offsets, 20, 64, 1, 1 << 30)
    assert len(whole) > 60
    assert dust_intervals(codes, offsets).tolist() == whole.tolist()
    for span in (1, 3, 64, 129, 1000):  # a record read in spans of starts: the one pass's intervals
        assert _intervals(codes, offsets, 20, 64, 1, span).tolist() == whole.tolist()


@pytest.fixture(scope="module")
def host_cuda(tmp_path_factory):
    from gseek.kernels import blast as kblast
    from host_cuda import build

    return build(tmp_path_factory.mktemp("hostdust"), [kblast])


@pytest.mark.parametrize("device", ["cpu", "host-cuda", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("device_span", [1, 7, 256])
def test_the_backends_pass_gives_the_hosts_intervals(request, device, device_span, monkeypatch):
    """``dust_reach`` (the CUDA kernel on a GPU or compiled for the host, or its Numba twin on the
    CPU) over records cut into spans of starts, records holding an N left to the host: the host's one
    pass's intervals, for windows up to 127 (128 and more: the host's pass itself)."""
    from gseek.backend import get_backend
    from gseek.blast import dust

    monkeypatch.setattr(dust, "DEVICE_SPAN", device_span)
    backend = request.getfixturevalue("host_cuda") if device == "host-cuda" else get_backend(device)
    rng = np.random.default_rng(40 + device_span)
    parts, bounds = [], [0]
    for r in range(40):
        seq = rng.integers(0, 4, int(rng.integers(0, 3000) if r % 5 else rng.integers(0, 5))).astype(np.uint8)
        for _ in range(4):  # low-complexity stretches, some at record ends
            a = int(rng.integers(0, max(1, seq.size)))
            seq[a:a + 70] = np.resize(rng.integers(0, 4, int(rng.integers(1, 5))), seq[a:a + 70].size)
        if r % 7 == 3 and seq.size:
            seq[int(rng.integers(seq.size))] = 4
        parts.append(seq)
        bounds.append(bounds[-1] + seq.size)
    codes, offsets = np.concatenate(parts), np.array(bounds, np.int64)
    for level, window, linker in ((20, 64, 1), (10, 16, 4), (30, 127, 0), (20, 128, 1), (12, 33, 2)):
        want = dust_intervals(codes, offsets, level, window, linker)
        assert len(want) > 20
        got = dust_intervals(codes, offsets, level, window, linker, backend=backend)
        assert got.tolist() == want.tolist(), (level, window, linker)
    assert dust_mask(codes, offsets, backend=backend).tolist() == dust_mask(codes, offsets).tolist()

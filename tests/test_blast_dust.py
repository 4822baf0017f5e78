"""Symmetric DUST (gseek.blast.dust) against BLAST+ 2.12's dustmasker (fixtures and commands:
tests/data/blast/README.md), and against a slow readable reference: the paper's definitions
read off every stretch of a short sequence."""

from __future__ import annotations

from itertools import product
from pathlib import Path

import numpy as np
import pytest

from gseek.alphabet import encode_dna
from gseek.blast import build_lookup, dust_intervals, dust_mask
from gseek.errors import OptionError

DATA = Path(__file__).resolve().parent / "data" / "blast"
#: Interior runs of N that dustmasker leaves unmasked and gseek (every N read as A) masks
#: (docs/blast.md, "DUST", known differences).
N_RUN_DIFFERENCES = {"N7_mid", "N8_mid", "N12_mid", "A4_N4_A4"}


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
        elif line.strip():
            start, end = line.split(" - ")
            out[name].append((int(start), int(end) + 1))  # to half-open
    return out


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
    assert got == want


def test_fixtures_hold_what_they_claim():
    want = read_intervals(DATA / "dust.txt")
    assert want["random_300"] == [] and want["short_AAAA"] == []
    assert want["start_polyA"][0][0] == 0 and want["end_TG"][-1][1] == 140  # record ends
    assert len(want["gap_1"]) == 2  # two repeats one base apart stay two with linker 1
    assert len(read_intervals(DATA / "dust_linker5.txt")["gap_1"]) == 1
    assert sum(len(v) for v in read_intervals(DATA / "db_dust_level10.txt").values()) > 50


def test_runs_of_n_as_dustmasker_but_the_known_differences():
    want = read_intervals(DATA / "dust_n.txt")
    got = gseek_intervals(DATA / "dust_n.fa")
    differ = {name for name in want if got[name] != want[name]}
    assert differ == N_RUN_DIFFERENCES
    assert all(want[name] == [] and got[name] for name in differ)  # gseek masks more, never less
    assert want["A6_N_A6"] == got["A6_N_A6"] != []  # one N does not break a repeat


# --- the slow reference: the paper's definitions, every stretch scored from scratch ----------

def score(seq: str) -> tuple[int, int]:
    """S(x) as (numerator, denominator): sum c_t (c_t - 1) / 2 over triplets, over (triplets - 1)."""
    triplets = [seq[i:i + 3] for i in range(len(seq) - 2)]
    counts = {t: triplets.count(t) for t in set(triplets)}
    return sum(c * (c - 1) // 2 for c in counts.values()), len(triplets) - 1


def reference(seq: str, level: int, window: int, linker: int) -> list[tuple[int, int]]:
    seq = "".join(b if b in "ACGT" else "A" for b in seq)
    high = {}  # (s, e) -> score of every stretch scoring above level / 10
    for s in range(len(seq)):
        for e in range(s + 4, min(len(seq), s + window) + 1):
            r, l = score(seq[s:e])
            if 10 * r > level * l:
                high[s, e] = r / l
    perfect = [(s, e) for (s, e), v in high.items()
               if all(w <= v for (s2, e2), w in high.items() if s <= s2 and e2 <= e)]
    merged: list[list[int]] = []
    for s, e in sorted(perfect):
        if merged and s - merged[-1][1] < linker:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return [(s, e) for s, e in merged]


@pytest.mark.parametrize("seed", range(6))
def test_equals_the_reference(seed):
    rng = np.random.default_rng(seed)
    motif = "".join("ACGT"[i] for i in rng.integers(0, 4, rng.integers(1, 4)))
    parts = ["".join("ACGTN"[i] for i in rng.choice(5, n, p=[0.24, 0.24, 0.24, 0.24, 0.04]))
             for n in rng.integers(5, 30, 3)]
    seq = parts[0] + motif * int(rng.integers(2, 12)) + parts[1] + motif * int(rng.integers(2, 8)) + parts[2]
    codes = encode_dna(seq)
    for level, window, linker in product((10, 20, 30), (16, 64), (0, 1, 4)):
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


def test_records_on_threads_give_the_one_pass_intervals():
    """Enough bases for several groups of records on threads: the intervals of one pass."""
    from gseek.blast.dust import _intervals

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
    whole = _intervals(codes, offsets, 20, 64, 1)
    assert len(whole) > 60
    assert dust_intervals(codes, offsets).tolist() == whole.tolist()

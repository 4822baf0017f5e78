"""gseek.datasets: embedded lambda data, simulators with exact truth, recipes from .deb files.

Every read's truth is re-checked against the genome it came from (window cut
again, reverse-complemented for '-', mismatches counted with N as a mismatch).
The recipes are exercised on tiny fake Debian packages built here with
``dpkg-deb --build``, so nothing touches the network.
"""

from __future__ import annotations

import gzip
import hashlib
import lzma
import re
import shlex
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from Bio.Align import PairwiseAligner

from gseek.alphabet import COMPLEMENT, decode_dna
from gseek.datasets import (
    BLAST_QUERY_PRESETS,
    READ_TRUTH_HEADER,
    blast_queries,
    dp_families,
    kmismatch_reads,
    lambda_genome,
    lambda_reads,
    lambda_truth,
    mutate,
    read_truth,
    truth_path_for,
)
from gseek.datasets import recipes
from gseek.datasets.__main__ import main as datasets_main
from gseek.errors import OptionError
from gseek.seqio import read_fastx, write_fasta

DATA = Path(lambda_genome()).parent
NEEDS_DPKG = pytest.mark.skipif(
    shutil.which("dpkg-deb") is None, reason="needs Debian's dpkg-deb to build and unpack the fake packages"
)


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def edit_distance(a: str, b: str) -> int:
    aligner = PairwiseAligner(mode="global", match_score=0, mismatch_score=-1,
                              open_gap_score=-1, extend_gap_score=-1)
    return int(round(-aligner.score(a, b)))


def check_read_truth(genome, reads, truth) -> Counter:
    """Assert every truth row is exact against ``genome``; return a tally."""
    contigs = {genome.name(c): c for c in range(len(genome))}
    assert [t.read for t in truth] == reads.name_list()
    tally = Counter()
    for i, origin in enumerate(truth):
        read = reads.codes_of(i)
        if origin.contig is None:
            assert origin == (origin.read, None, None, None, None, ())
            tally["random"] += 1
            continue
        contig = genome.codes_of(contigs[origin.contig])
        # The window lies inside its contig.
        assert 0 <= origin.pos and origin.pos + read.size <= contig.size, origin
        window = contig[origin.pos : origin.pos + read.size]
        assert origin.strand in "+-"
        if origin.strand == "-":
            window = COMPLEMENT[window[::-1]]
        differs = (window != read) | (read == 4) | (window == 4)
        assert tuple(np.flatnonzero(differs).tolist()) == origin.positions, origin
        assert origin.mismatches == len(origin.positions)
        assert set(np.flatnonzero(read == 4).tolist()) <= set(origin.positions)  # N counts
        tally[origin.strand] += 1
        tally[f"m{origin.mismatches}"] += 1
        tally["N"] += int((read == 4).sum())
    return tally


@pytest.fixture(scope="module")
def lambda_batch():
    return read_fastx(lambda_genome())


@pytest.fixture(scope="module")
def multi_genome(tmp_path_factory):
    """Contigs of 150, 100, 5000 (with N runs) and 40 bp, and their batch."""
    rng = np.random.default_rng(11)
    c3 = rng.integers(0, 4, 5000).astype(np.uint8)
    c3[1000:1010] = 4
    c3[2500] = 4
    c3[4000:4200] = 4
    contigs = [("c1 first", rng.integers(0, 4, 150)), ("c2", rng.integers(0, 4, 100)),
               ("c3 with N", c3), ("c4 short", rng.integers(0, 4, 40))]
    path = tmp_path_factory.mktemp("genome") / "multi.fa"
    write_fasta(path, [(h, decode_dna(np.asarray(s, dtype=np.uint8))) for h, s in contigs])
    return path, read_fastx(path)


# --------------------------------------------------------------------- embedded data


def test_lambda_genome_is_nc_001416(lambda_batch):
    assert isinstance(lambda_genome(), Path) and lambda_genome().name == "lambda_virus.fa"
    assert len(lambda_batch) == 1
    assert lambda_batch.name(0) == "gi|9626243|ref|NC_001416.1|"
    assert lambda_batch.description(0) == "Enterobacteria phage lambda, complete genome"
    assert lambda_batch.lengths.tolist() == [48502]
    assert int((lambda_batch.codes == 4).sum()) == 0
    assert lambda_batch.sequence(0).startswith("GGGCGGCGACCTCGCGGGTTTTCGCTATTTATG")


def test_data_readme_checksums_match_the_files():
    readme = (DATA / "README.md").read_text()
    rows = re.findall(r"^\| `([^`]+)` \|.*\| `([0-9a-f]{64})` \|$", readme, flags=re.M)
    assert sorted(name for name, _ in rows) == sorted(
        p.name for p in DATA.iterdir() if p.name != "README.md" and not p.name.startswith(".")
    )
    for name, digest in rows:
        assert sha256(DATA / name) == digest, name


def test_embedded_data_is_small():
    assert sum(p.stat().st_size for p in DATA.iterdir()) < 1_000_000


def test_embedded_reads_truth_is_exact(lambda_batch):
    reads = read_fastx(lambda_reads())
    truth = read_truth(lambda_truth())
    assert len(reads) == len(truth) == 2000
    assert set(reads.lengths.tolist()) == {100}
    tally = check_read_truth(lambda_batch, reads, truth)
    assert tally["random"] == 40  # 2%
    assert tally["+"] > 900 and tally["-"] > 900
    assert all(tally[f"m{m}"] > 400 for m in range(4)) and tally["m4"] == 0
    assert 50 < tally["N"] < 400  # "a few N"
    qual = reads.quals
    assert qual.min() >= 33 + 2 and qual.max() <= 33 + 41
    assert np.array_equal(reads.codes == 4, qual == 33 + 2)  # N, and only N, is Q2


def test_embedded_reads_regenerate_from_the_readme_command(tmp_path):
    readme = (DATA / "README.md").read_text()
    command = re.search(r"^(python -m gseek\.datasets reads .*?)\n```", readme, flags=re.M | re.S).group(1)
    args = shlex.split(command.replace("\\\n", " "))[3:]
    args = [str(lambda_genome()) if a == "datasets/data/lambda_virus.fa" else a for a in args]
    args = [str(tmp_path / "lambda_reads.fq") if a == "datasets/data/lambda_reads.fq" else a for a in args]
    assert datasets_main(args) == 0
    assert (tmp_path / "lambda_reads.fq").read_bytes() == lambda_reads().read_bytes()
    assert (tmp_path / "lambda_reads.truth.tsv").read_bytes() == lambda_truth().read_bytes()


# --------------------------------------------------------------------- k-mismatch reads


def test_reads_truth_exact_on_many_contigs_with_n(multi_genome, tmp_path):
    path, genome = multi_genome
    sim = kmismatch_reads(path, 3000, (60, 100), 4, seed=5, n_rate=0.05, random_fraction=0.1)
    fq, tsv = sim.write(tmp_path / "r.fq")
    assert tsv == tmp_path / "r.truth.tsv"
    assert tsv.read_text().splitlines()[0].split("\t") == list(READ_TRUTH_HEADER)
    reads = read_fastx(fq)
    truth = read_truth(tsv)
    tally = check_read_truth(genome, reads, truth)
    assert tally["random"] == 300
    assert tally["N"] > 100
    assert set(reads.lengths.tolist()) == set(range(60, 101))
    used = Counter(t.contig for t in truth if t.contig)
    assert set(used) == {"c1", "c2", "c3"}  # c4 (40 bp) is shorter than every read
    # No window holds a reference N, so no read exceeds the planted maximum.
    assert max(t.mismatches for t in truth if t.contig) == 4
    # The in-memory truth is the same as the file.
    assert [sim.origin(i) for i in range(len(sim))] == truth


def test_windows_are_uniform_and_reach_contig_ends(multi_genome):
    _, genome = multi_genome
    sim = kmismatch_reads(genome, 200_000, 100, 0, seed=2, both_strands=False)
    starts = Counter((sim.contig_names[c], p) for c, p in zip(sim.contig.tolist(), sim.pos.tolist()))
    # c1: starts 0..50; c2: only 0; c3: every N-free 100 bp window.
    c3 = genome.codes_of(2)
    valid_c3 = {p for p in range(5000 - 99) if not (c3[p : p + 100] == 4).any()}
    expected = {("c1", p) for p in range(51)} | {("c2", 0)} | {("c3", p) for p in valid_c3}
    assert set(starts) == expected
    per_start = 200_000 / len(expected)
    assert all(per_start / 2 < k < per_start * 2 for k in starts.values())
    assert set(sim.strand.tolist()) == {1} and set(sim.mismatches.tolist()) == {0}


def test_exact_mismatch_count_range(lambda_batch):
    sim = kmismatch_reads(lambda_batch, 4000, 50, 5, seed=8, min_mismatches=2)
    assert sorted(set(sim.mismatches.tolist())) == [2, 3, 4, 5]
    assert int((sim.codes == 4).sum()) == 0  # n_rate 0: no N
    sizes = np.diff(sim.mismatch_offsets)
    assert np.array_equal(sizes, sim.mismatches)


def test_same_seed_same_bytes_other_seed_differs(lambda_batch, tmp_path):
    def files(seed, name):
        sim = kmismatch_reads(lambda_batch, 500, (90, 110), 3, seed, n_rate=0.01, random_fraction=0.05)
        fq, tsv = sim.write(tmp_path / f"{name}.fq")
        return fq.read_bytes(), tsv.read_bytes()

    a, b, c = files(3, "a"), files(3, "b"), files(4, "c")
    assert a == b
    assert a[0] != c[0] and a[1] != c[1]


@pytest.mark.slow
def test_one_million_reads_vectorised(lambda_batch):
    sim = kmismatch_reads(lambda_batch, 1_000_000, 100, 3, seed=1, n_rate=0.001, random_fraction=0.02)
    assert len(sim) == 1_000_000 and sim.codes.size == 100_000_000
    assert int((sim.contig < 0).sum()) == 20_000
    # Spot-check the truth of the last reads (the far end of the chunked gather).
    codes = lambda_batch.codes
    for i in range(len(sim) - 200, len(sim)):
        o = sim.origin(i)
        if o.contig is None:
            continue
        w = codes[o.pos : o.pos + 100]
        if o.strand == "-":
            w = COMPLEMENT[w[::-1]]
        r = sim.codes[sim.offsets[i] : sim.offsets[i + 1]]
        assert tuple(np.flatnonzero((w != r) | (r == 4)).tolist()) == o.positions


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(n=5, length=50, max_mismatches=51), "max_mismatches 51 > shortest read length 50"),
        (dict(n=5, length=60000, max_mismatches=1), "cannot place a 60000 bp window"),
        (dict(n=5, length=(80, 20), max_mismatches=1), "1 <= lo <= hi"),
        (dict(n=5, length=50, max_mismatches=1, min_mismatches=2), "min_mismatches <= max_mismatches"),
        (dict(n=5, length=50, max_mismatches=1, n_rate=1.5), "n_rate must be in [0, 1]"),
        (dict(n=5, length=50, max_mismatches=1, seed=-1), "seed must be a non-negative integer"),
    ],
)
def test_read_option_errors(lambda_batch, kwargs, message):
    kwargs = {"seed": 1, **kwargs}
    with pytest.raises(OptionError, match=re.escape(message)) as err:
        kmismatch_reads(lambda_batch, **kwargs)
    assert isinstance(err.value, ValueError)


def test_n_runs_limit_windows(tmp_path):
    path = tmp_path / "n.fa"
    write_fasta(path, [("a", "ACGT" * 10 + "N" + "ACGT" * 10), ("b", "N" * 500)])
    with pytest.raises(OptionError, match="longest N-free stretch of one contig is 40 bp"):
        kmismatch_reads(path, 3, 41, 0, seed=1)
    sim = kmismatch_reads(path, 50, 40, 0, seed=1)
    assert set(sim.pos.tolist()) == {0, 41} and set(sim.contig.tolist()) == {0}


def test_read_truth_rejects_other_files(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("query\tcontig\n")
    with pytest.raises(OptionError, match="bad.tsv:1: not a read truth TSV"):
        read_truth(bad)


def test_truth_path_for():
    assert truth_path_for("x/reads.fastq.gz") == Path("x/reads.truth.tsv")
    assert truth_path_for("q.fa") == Path("q.truth.tsv")
    assert truth_path_for("other.txt") == Path("other.txt.truth.tsv")


# --------------------------------------------------------------------- mutation, queries, families


def test_mutate_counts_every_edit():
    rng = np.random.Generator(np.random.PCG64(4))
    base = rng.integers(0, 4, 3000).astype(np.uint8)
    subs, edits = mutate(base, rng, 0.1, 0.0)
    assert subs.size == base.size and edits == int((subs != base).sum()) > 200
    indels, edits = mutate(base, rng, 0.0, 0.01)
    assert indels.size != base.size and edits >= abs(indels.size - base.size)
    assert 0 < edit_distance(decode_dna(base), decode_dna(indels)) <= edits
    same, edits = mutate(base, rng, 0.0, 0.0)
    assert edits == 0 and np.array_equal(same, base)


def test_blast_queries_truth(multi_genome, tmp_path):
    path, genome = multi_genome
    q = blast_queries(path, 40, (50, 90), seed=3, sub_rate=0.05, indel_rate=0.01, negatives=0.25)
    fa, tsv = q.write(tmp_path / "q.fa")
    rows = [line.split("\t") for line in tsv.read_text().splitlines()]
    assert rows[0] == ["query", "contig", "start", "end", "strand", "divergence"]
    rows = rows[1:]
    written = read_fastx(fa)
    assert written.name_list() == [r[0] for r in rows]
    assert sum(r[1] == "*" for r in rows) == 10
    names = {genome.name(c): c for c in range(len(genome))}
    diverged = 0
    for i, (name, contig, start, end, strand, divergence) in enumerate(rows):
        if contig == "*":
            assert (start, end, strand, divergence) == ("*", "*", "*", "*")
            continue
        source = genome.codes_of(names[contig])
        start, end = int(start), int(end)
        assert 0 <= start < end <= source.size and 50 <= end - start <= 90
        window = source[start:end]
        if strand == "-":
            window = COMPLEMENT[window[::-1]]
        distance = edit_distance(decode_dna(window), written.sequence(i))
        assert distance <= round(float(divergence) * (end - start))
        diverged += distance > 0
    assert diverged > 15


def test_blast_presets_and_determinism(lambda_batch):
    assert BLAST_QUERY_PRESETS == {"500bp": (100, 500), "10kb": (100, 10_000), "100kb": (10, 100_000)}
    a = blast_queries(lambda_batch, *BLAST_QUERY_PRESETS["10kb"], seed=9)
    assert len(a) == 100 and {len(s) for _, s in a.records} - set(range(9_800, 10_200)) == set()
    assert a.records == blast_queries(lambda_batch, 100, 10_000, seed=9).records
    assert a.records != blast_queries(lambda_batch, 100, 10_000, seed=10).records
    with pytest.raises(OptionError, match="cannot place a 100000 bp window: the longest contig is 48502 bp"):
        blast_queries(lambda_batch, *BLAST_QUERY_PRESETS["100kb"], seed=9)


#: sha256 (first 12 hex digits) of the records of a fixed-rate set, as the generator made it before the
#: ranged rates and log-uniform lengths were added.
FIXED_SET_DIGEST = "73f2a6df6fd2"


def test_blast_queries_log_lengths_and_rate_ranges(lambda_batch):
    fixed = blast_queries(lambda_batch, 30, (200, 4000), seed=5, sub_rate=0.05, indel_rate=0.005)
    # the new options draw after a fixed-rate set's draws, so such a set is what it was
    assert hashlib.sha256(repr(fixed.records).encode()).hexdigest()[:12] == FIXED_SET_DIGEST
    q = blast_queries(lambda_batch, 400, (200, 20_000), seed=5, sub_rate=(0.01, 0.15),
                      indel_rate=(0.001, 0.015), negatives=0.5, log_lengths=True)
    lengths = np.array([int(r[3]) - int(r[2]) for r in q.truth if r[1] != "*"])
    assert lengths.min() >= 200 and lengths.max() <= 20_000
    # log-uniform: the median near the geometric mean (2 kb), far below the arithmetic midpoint
    assert 1_300 < np.median(lengths) < 3_000
    divergence = np.array([float(r[5]) for r in q.truth if r[1] != "*"])
    assert sum(r[1] == "*" for r in q.truth) == 200
    assert divergence.min() < 0.03 and divergence.max() > 0.13 and divergence.max() < 0.25
    with pytest.raises(OptionError, match="both as numbers or both as"):
        blast_queries(lambda_batch, 4, 100, seed=1, sub_rate=(0.01, 0.1), indel_rate=0.01)
    with pytest.raises(OptionError, match=r"lo <= hi"):
        blast_queries(lambda_batch, 4, 100, seed=1, sub_rate=(0.1, 0.01), indel_rate=(0.0, 0.0))


def test_dp_families_divergence_in_range(tmp_path):
    fam = dp_families(6, 5, 300, seed=4, max_divergence=0.15)
    fa, tsv = fam.write(tmp_path / "fam.fa")
    rows = [line.split("\t") for line in tsv.read_text().splitlines()]
    assert rows[0] == ["member", "family", "divergence"] and len(rows) == 31
    ancestors = dict(fam.ancestors)
    batch = read_fastx(fa)
    divergences = []
    for i, (member, family, divergence) in enumerate(rows[1:]):
        assert batch.name(i) == member and member.startswith(family + "_m")
        d = float(divergence)
        assert 0.0 <= d <= 0.15
        assert fam.edits[i] == round(d * 300)
        assert edit_distance(ancestors[family], batch.sequence(i)) <= fam.edits[i]
        divergences.append(d)
    assert max(divergences) > 0.08 and np.mean(divergences) > 0.03  # spread over the range
    assert len(set(ancestors.values())) == 6
    clones = dp_families(2, 3, 100, seed=4, max_divergence=0.0)
    assert all(seq == dict(clones.ancestors)[name.split("_")[0]] for name, seq in clones.records)


# --------------------------------------------------------------------- command line


@pytest.mark.parametrize(
    "command, options",
    [
        ("reads", ["--output", "--truth", "--reads", "--length", "--mismatches", "--min-mismatches", "--seed",
                   "--n-rate", "--random-fraction", "--forward-only"]),
        ("blast-queries", ["--output", "--truth", "--preset", "--queries", "--length", "--seed", "--sub-rate",
                           "--indel-rate", "--negatives"]),
        ("dp-families", ["--output", "--truth", "--families", "--members", "--length", "--seed",
                         "--max-divergence"]),
        ("recipe", ["--cache", "--debs", "--output", "--gzip", "--target-bases", "--seed"]),
    ],
)
def test_cli_help_lists_options(capsys, command, options):
    assert datasets_main([command, "--help"]) == 0
    out = capsys.readouterr().out
    for option in options:
        assert option in out, option


def test_python_dash_m_help(tmp_path):
    done = subprocess.run([sys.executable, "-m", "gseek.datasets", "--help"], capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 0
    for command in ("reads", "blast-queries", "dp-families", "recipe"):
        assert command in done.stdout


def test_cli_simulators(tmp_path, capsys):
    assert datasets_main(["reads", str(lambda_genome()), "-o", str(tmp_path / "r.fq"), "-n", "20", "-l", "30-40",
                          "-k", "2", "--min-mismatches", "2", "--forward-only", "--seed", "1"]) == 0
    truth = read_truth(tmp_path / "r.truth.tsv")
    assert {t.strand for t in truth} == {"+"} and {t.mismatches for t in truth} == {2}
    assert set(read_fastx(tmp_path / "r.fq").lengths.tolist()) <= set(range(30, 41))

    assert datasets_main(["blast-queries", str(lambda_genome()), "-o", str(tmp_path / "q.fa"), "--preset", "500bp",
                          "-n", "7", "--negatives", "0", "--seed", "2"]) == 0
    assert read_fastx(tmp_path / "q.fa").lengths.size == 7
    assert "*" not in (tmp_path / "q.truth.tsv").read_text()

    assert datasets_main(["dp-families", "-o", str(tmp_path / "f.fa"), "--truth", str(tmp_path / "f.tsv"),
                          "--families", "2", "--members", "3", "-l", "200", "--seed", "1",
                          "--max-divergence", "0.05"]) == 0
    assert len(read_fastx(tmp_path / "f.fa")) == 6
    assert all(float(line.split("\t")[2]) <= 0.05 for line in (tmp_path / "f.tsv").read_text().splitlines()[1:])
    out = capsys.readouterr().out.split()
    assert out == [str(tmp_path / n) for n in ("r.fq", "r.truth.tsv", "q.fa", "q.truth.tsv", "f.fa", "f.tsv")]


def test_cli_errors_are_one_line(tmp_path, capsys):
    code = datasets_main(["reads", str(lambda_genome()), "-o", str(tmp_path / "r.fq"), "-n", "2", "-l", "60000",
                          "--seed", "1"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1
    assert err.startswith("python -m gseek.datasets: error: ") and "cannot place a 60000 bp window" in err
    assert datasets_main(["blast-queries", str(lambda_genome()), "-o", str(tmp_path / "q.fa"), "--seed", "1"]) == 2
    assert "give --preset, or both --queries and --length" in capsys.readouterr().err
    assert datasets_main(["reads", str(lambda_genome()), "-o", "x.fq", "-n", "2", "-l", "ten", "--seed", "1"]) == 2
    assert not (tmp_path / "r.fq").exists()


# --------------------------------------------------------------------- recipes (fake .deb files)


def _fasta_gz(path: Path, records) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as fh:
        for name, seq in records:
            fh.write(f">{name}\n{seq}\n")


def _fasta_xz(path: Path, records) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with lzma.open(path, "wt") as fh:
        for name, seq in records:
            fh.write(f">{name}\n{seq}\n")


def _build_deb(tmp: Path, package: str, version: str, files: dict[str, list], out: Path) -> Path:
    root = tmp / f"{package}-root"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(
        f"Package: {package}\nVersion: {version}\nArchitecture: all\n"
        "Maintainer: gseek tests <tests@example.org>\nDescription: fake example data for gseek tests\n"
    )
    for member, records in files.items():
        target = root / member
        if member.endswith(".xz"):
            _fasta_xz(target, records)
        elif member.endswith(".gz"):
            _fasta_gz(target, records)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("not a genome\n")
    deb = out / f"{package}_{version}_all.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(root), str(deb)],
                   check=True, capture_output=True)
    return deb


RAGOUT = "usr/share/doc/ragout/examples"
KLEB = "usr/share/doc/kleborate/examples/data"
BOWTIE = "usr/share/doc/bowtie/examples/genomes"


def _random_dna(seed: int, n: int) -> str:
    return decode_dna(np.random.default_rng(seed).integers(0, 4, n).astype(np.uint8))


@pytest.fixture(scope="module")
def fake_debs(tmp_path_factory):
    """Tiny ragout-, kleborate- and bowtie-examples packages with the recipes' file layout."""
    if shutil.which("dpkg-deb") is None:
        pytest.skip("needs Debian's dpkg-deb to build and unpack the fake packages")
    tmp = tmp_path_factory.mktemp("debs")
    out = tmp / "debs"
    out.mkdir()
    genomes = {
        "mg1655": [("K-12-MG1655", _random_dna(1, 300).lower()[:10] + _random_dna(1, 300)[10:])],
        "dh1": [("chr", _random_dna(2, 200)), ("plasmid", "ACGTRYKMNN" * 3)],
        "g27": [("chr", _random_dna(3, 150))],
        "kleb": [("CP1 Klebsiella one", _random_dna(4, 250)), ("CP2 plasmid", _random_dna(5, 80))],
        "e536": [("gi|110640213|ref|NC_008253.1| Escherichia coli 536", _random_dna(6, 220))],
    }
    _build_deb(tmp, "ragout-examples", "2.3-4", {
        f"{RAGOUT}/E.Coli/references/MG1655-K12.fasta.gz": genomes["mg1655"],
        f"{RAGOUT}/E.Coli/references/DH1.fasta.gz": genomes["dh1"],
        f"{RAGOUT}/H.Pylori/references/G27.fasta.gz": genomes["g27"],
        f"{RAGOUT}/E.Coli/mg1655_contigs.fasta.gz": [("not_a_reference", "ACGT")],
        f"{RAGOUT}/README": [],
    }, out)
    _build_deb(tmp, "kleborate-examples", "2.3.1-2", {
        f"{KLEB}/Klebs_X.fna.xz": genomes["kleb"],
        f"{KLEB}/notes.txt": [],
    }, out)
    _build_deb(tmp, "bowtie-examples", "1.3.1-1", {
        f"{BOWTIE}/NC_008253.fna.gz": genomes["e536"],
        f"{BOWTIE}/other.fna.gz": [("other", "ACGT")],
    }, out)
    return out, genomes


def _expected_bacteria(genomes):
    """bacteria75 of the fake packages: recipe order, files sorted, clashing names prefixed."""
    def norm(seq):
        return re.sub("[RYKM]", "N", seq.upper())

    order = [("DH1", "dh1"), ("MG1655-K12", "mg1655"), ("G27", "g27"), ("Klebs_X", "kleb"), ("NC_008253", "e536")]
    names, seqs = [], []
    for stem, key in order:
        for header, seq in genomes[key]:
            name = header.split()[0]
            names.append(f"{stem}|{name}" if name == "chr" else name)
            seqs.append(norm(seq))
    return names, seqs


@NEEDS_DPKG
def test_bacteria75_from_fake_debs(fake_debs, tmp_path):
    debs, genomes = fake_debs
    path = recipes.bacteria75(tmp_path / "cache", debs=debs)
    assert path == tmp_path / "cache" / "bacteria75.fa"
    batch = read_fastx(path)
    names, seqs = _expected_bacteria(genomes)
    assert batch.name_list() == names
    assert [batch.sequence(i) for i in range(len(batch))] == seqs
    assert batch.description(names.index("CP1")) == "Klebsiella one"
    lines = path.read_text().splitlines()
    assert set("".join(line for line in lines if not line.startswith(">"))) == set("ACGTN")  # upper, IUPAC -> N
    info = recipes.manifest(path)
    assert info["contigs"] == len(names) and info["bases"] == sum(map(len, seqs))
    assert info["size"] == path.stat().st_size and info["sha256"] == sha256(path)
    assert [(s["package"], s["member"].rsplit("/", 1)[1]) for s in info["sources"]] == [
        ("ragout-examples", "DH1.fasta.gz"), ("ragout-examples", "MG1655-K12.fasta.gz"),
        ("ragout-examples", "G27.fasta.gz"), ("kleborate-examples", "Klebs_X.fna.xz"),
        ("bowtie-examples", "NC_008253.fna.gz"),
    ]
    assert info["sources"][0]["version"] == "2.3-4"


@NEEDS_DPKG
def test_recipe_skips_when_up_to_date_and_rebuilds_when_not(fake_debs, tmp_path, monkeypatch):
    debs, _ = fake_debs
    cache = tmp_path / "cache"
    path = recipes.ecoli(cache, debs=debs)
    good = path.read_bytes()
    assert read_fastx(path).name_list() == ["K-12-MG1655"]
    stamp = path.stat().st_mtime_ns

    def no_fetch(*args, **kwargs):
        raise AssertionError("the recipe fetched packages although its output was up to date")

    with monkeypatch.context() as m:
        m.setattr(recipes, "genome_files", no_fetch)
        assert recipes.build("ecoli", cache, debs=debs) == path
    assert path.stat().st_mtime_ns == stamp
    with open(path, "ab") as fh:  # same manifest, different bytes: rebuilt
        fh.write(b">extra\nA\n")
    recipes.ecoli(cache, debs=debs)
    assert path.read_bytes() == good
    assert sorted(p.name for p in cache.iterdir()) == ["ecoli.fa", "ecoli.fa.json", "pkgs"]


@NEEDS_DPKG
def test_recipe_gzip_output(fake_debs, tmp_path):
    debs, genomes = fake_debs
    path = recipes.ecoli(tmp_path, debs=debs, compress=True)
    assert path.name == "ecoli.fa.gz" and path.read_bytes()[:2] == b"\x1f\x8b"
    assert read_fastx(path).sequence(0) == genomes["mg1655"][0][1].upper()
    out = recipes.build("bacteria75", tmp_path, debs=debs, out=tmp_path / "b.fa.gz")
    assert out == tmp_path / "b.fa.gz" and recipes.manifest(out)["sha256"] == sha256(out)


@NEEDS_DPKG
def test_pangenome_streams_mutated_copies(fake_debs, tmp_path):
    debs, genomes = fake_debs
    names, seqs = _expected_bacteria(genomes)
    total = sum(map(len, seqs))
    a = recipes.pangenome(tmp_path / "c", debs=debs, target_bases=5 * total, seed=1)
    info = recipes.manifest(a)
    copies = info["sources"][0]["copies"]
    assert copies == 6  # ceil(1.01 * 5)
    assert info["bases"] >= 5 * total and info["contigs"] == copies * len(names)
    batch = read_fastx(a)
    assert batch.name(0) == f"{names[0]}_copy01" and batch.name(copies - 1) == f"{names[0]}_copy{copies:02d}"
    first = [batch.sequence(i) for i in range(copies)]
    assert all(s != seqs[0] and 0.8 * len(seqs[0]) < len(s) < 1.2 * len(seqs[0]) for s in first)
    assert edit_distance(first[0], seqs[0]) < edit_distance(first[-1], seqs[0])  # 1% .. 5%
    b = recipes.pangenome(tmp_path / "d", debs=debs, target_bases=5 * total, seed=1)
    assert a.read_bytes() == b.read_bytes()
    c = recipes.pangenome(tmp_path / "e", debs=debs, target_bases=5 * total, seed=2)
    assert a.read_bytes() != c.read_bytes()


@NEEDS_DPKG
def test_recipe_cli(fake_debs, tmp_path, capsys):
    debs, genomes = fake_debs
    assert datasets_main(["recipe", "ecoli", "--cache", str(tmp_path), "--debs", str(debs)]) == 0
    assert capsys.readouterr().out == f"{tmp_path / 'ecoli.fa'}\t1 contigs\t300 bp\n"


@NEEDS_DPKG
def test_recipe_errors(fake_debs, tmp_path):
    debs, _ = fake_debs
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(recipes.RecipeError, match="no ragout-examples_\\*.deb") as err:
        recipes.ecoli(tmp_path / "c", debs=empty)
    assert isinstance(err.value, ValueError)
    # A file named like the package but holding another one.
    shutil.copy(debs / "bowtie-examples_1.3.1-1_all.deb", empty / "ragout-examples_9_all.deb")
    with pytest.raises(recipes.RecipeError, match="package is 'bowtie-examples', expected 'ragout-examples'"):
        recipes.ecoli(tmp_path / "c", debs=empty)
    with pytest.raises(recipes.RecipeError, match="unknown recipe 'human'"):
        recipes.build("human")


@NEEDS_DPKG
def test_duplicate_name_in_one_file_is_an_error(tmp_path):
    out = tmp_path / "debs"
    out.mkdir()
    _build_deb(tmp_path, "ragout-examples", "1", {
        f"{RAGOUT}/E.Coli/references/MG1655-K12.fasta.gz": [("x", "ACGT"), ("x", "GGCC")],
    }, out)
    with pytest.raises(recipes.RecipeError, match="contig name 'x' occurs twice in one file"):
        recipes.ecoli(tmp_path / "c", debs=out)


@NEEDS_DPKG
def test_extract_deb_is_cached_and_picks_newest(fake_debs, tmp_path):
    debs, _ = fake_debs
    deb = debs / "bowtie-examples_1.3.1-1_all.deb"
    root = recipes.extract_deb(deb, tmp_path)
    assert (root / BOWTIE / "NC_008253.fna.gz").is_file()
    assert root.name.startswith("bowtie-examples_1.3.1-1_")
    assert recipes.extract_deb(deb, tmp_path) == root
    newer = tmp_path / "newer"
    newer.mkdir()
    shutil.copy(deb, newer)
    _build_deb(tmp_path, "bowtie-examples", "1.10-1", {f"{BOWTIE}/NC_008253.fna.gz": [("n", "ACGT")]}, newer)
    assert recipes.fetch_deb("bowtie-examples", tmp_path, debs=newer).name == "bowtie-examples_1.10-1_all.deb"

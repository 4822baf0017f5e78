"""Paired-end mapping (``-1``/``-2``, ``--interleaved``): bowtie 1 fixture, truth, brute-force oracle, I/O rules."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from gseek.cli import main
from gseek.cli.report import bowtie_summary
from gseek.datasets.simulate import kmismatch_pairs
from gseek.errors import FastxError
from gseek.index import Index
from gseek.mapper.pairs import PairOptions
from gseek.pipeline import map_files, run_pipeline
from gseek.seqio import read_fastx, write_fasta, write_fastq
from gseek.seqio.pairs import iter_interleaved, iter_pairs

from reference_pairs import concordant

DATA = Path(__file__).parent / "data"
FIXTURE = DATA / "bowtie_pairs"
REF = DATA / "bowtie" / "ref.fa"
TR = str.maketrans("ACGTN", "TGCAN")


@pytest.fixture(scope="module")
def index():
    return Index.build(REF, wgram=8, device="cpu")


def _records(path: Path) -> list[list[str]]:
    return [line.rstrip("\n").split("\t") for line in open(path) if not line.startswith("@")]


def _concordant_rows(path: Path) -> set[tuple]:
    """Mate 1 records of concordant pairs as the fixture's rows."""
    return {(f[0], f[2], int(f[3]) - 1, "-" if int(f[1]) & 16 else "+", int(f[7]) - 1, "-" if int(f[1]) & 32 else "+")
            for f in _records(path) if int(f[1]) & 2 and int(f[1]) & 64}


def _revcomp_fastq(src: Path, dst: Path) -> Path:
    b = read_fastx(src)
    write_fastq(dst, [(b.name(i), b.sequence(i).translate(TR)[::-1], b.quality(i)[::-1]) for i in range(len(b))])
    return dst


def _mates(tmp_path: Path, which: str) -> Path:
    name = which.removesuffix("rc")
    path = FIXTURE / f"{name}.fq.gz"
    return _revcomp_fastq(path, tmp_path / f"{which}.fq") if which.endswith("rc") else path


RUNS = {  # fixture name: mate files, map_files options (tests/data/bowtie_pairs/make_fixture.sh)
    "v2_fr_I60_X350": ("r1", "r2", dict(mismatches=2, minins=60, maxins=350)),
    "v3_fr": ("r1", "r2", dict(mismatches=3)),
    "v1_rf_X400": ("r1rc", "r2rc", dict(mismatches=1, orientation="rf", maxins=400)),
    "v1_ff_X400": ("r1", "r2rc", dict(mismatches=1, orientation="ff", maxins=400)),
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_agrees_with_bowtie(index, tmp_path, name):
    """``--all``: the concordant pairs are exactly bowtie's (``-a``), and so are the summary lines."""
    m1, m2, options = RUNS[name]
    out = tmp_path / "out.sam"
    counts = map_files(index, _mates(tmp_path, m1), out, mate2=_mates(tmp_path, m2), report_all=True, workers=0,
                       **options)
    expected = {(r[0], r[1], int(r[2]), r[3], int(r[4]), r[5]) for r in
                (line.rstrip("\n").split("\t") for line in list(open(FIXTURE / f"{name}.tsv"))[2:])}
    assert len(expected) > 100
    assert _concordant_rows(out) == expected
    summary = (FIXTURE / f"{name}.summary.txt").read_text().splitlines()
    assert bowtie_summary(counts["reads"], counts["mapped"], counts["alignments"], paired=True) == summary


def test_same_records_on_every_backend(index, tmp_path, backend):
    """The records of pairs are the same bytes on every backend and launch geometry (``-m gpu`` runs the GPU ones)."""
    body = []
    for device in ("cpu", backend):
        out = tmp_path / "o.sam"
        map_files(index, FIXTURE / "r1.fq.gz", out, mate2=FIXTURE / "r2.fq.gz", mismatches=2, max_alignments=3,
                  maxins=400, device=device, workers=1, threads=2)
        body.append([x for x in out.read_text().splitlines() if not x.startswith("@")])
    assert body[0] == body[1] and len(body[0]) >= 1200


def test_pairs_in_a_bam_sorted_in_parts_are_the_one_sort_s(index, tmp_path, monkeypatch):
    """Paired-end records with a read group (mates placed at their mate: RNAME and POS without a
    placement of their own) in a BAM sorted in parts: the one sort's BAM once decompressed."""
    import gzip

    import pysam

    from gseek.output import bam
    from gseek.output.sam import read_group

    options = dict(mate2=FIXTURE / "r2.fq.gz", mismatches=2, max_alignments=3, maxins=400, workers=0,
                   read_group=read_group("g1", ["SM:s"]), command="gseek t")
    map_files(index, FIXTURE / "r1.fq.gz", tmp_path / "one.bam", **options)
    monkeypatch.setattr(bam, "SORT_PARTS_MIN_LENGTH", 0)
    map_files(index, FIXTURE / "r1.fq.gz", tmp_path / "parts.bam", **options)
    one = gzip.decompress((tmp_path / "one.bam").read_bytes())
    assert gzip.decompress((tmp_path / "parts.bam").read_bytes()) == one
    assert (tmp_path / "parts.bam").read_bytes() != (tmp_path / "one.bam").read_bytes()
    with pysam.AlignmentFile(str(tmp_path / "parts.bam")) as fh:
        records = list(fh)
    placed = [r for r in records if r.is_unmapped and r.reference_id >= 0]
    assert len(records) > 1000 and placed and all(r.get_tag("RG") == "g1" for r in records)


def test_every_truth_pair_is_found(index, tmp_path):
    """Every simulated pair within k and the fragment limits is reported, with --all and as the best pair."""
    k, lo, hi = 2, 60, 350
    truth = [line.rstrip("\n").split("\t") for line in open(FIXTURE / "r1.truth.tsv")][1:]
    wanted = {(t[0], t[1], int(t[2]), t[3], int(t[5]), t[6]) for t in truth
              if int(t[7]) >= 0 and int(t[4]) <= k and int(t[7]) <= k and lo <= int(t[8]) <= hi}
    assert len(wanted) > 200
    out = tmp_path / "all.sam"
    map_files(index, FIXTURE / "r1.fq.gz", out, mate2=FIXTURE / "r2.fq.gz", mismatches=k, minins=lo, maxins=hi,
              report_all=True, workers=0)
    assert wanted <= _concordant_rows(out)
    best = tmp_path / "best.sam"
    map_files(index, FIXTURE / "r1.fq.gz", best, mate2=FIXTURE / "r2.fq.gz", mismatches=k, minins=lo, maxins=hi,
              workers=0)
    records = _records(best)
    assert all(int(f[1]) & 256 == 0 for f in records)  # one pair (two records) per pair by default
    got = _concordant_rows(best)
    mm = {t[0]: int(t[4]) + int(t[7]) for t in truth}
    total = {}
    for f in records:
        if int(f[1]) & 2:
            total[f[0]] = total.get(f[0], 0) + int(next(t for t in f[11:] if t.startswith("NM:i:"))[5:])
    for w in wanted:  # the truth pair, or one at least as good
        assert w in got or total[w[0]] <= mm[w[0]]


def _small_reference(tmp_path: Path) -> tuple[Path, list[np.ndarray]]:
    """Two contigs with planted repeats (a forward and a reverse-complemented copy, 1 substitution each)."""
    rng = np.random.default_rng(11)
    a = rng.integers(0, 4, 1500).astype(np.uint8)
    b = rng.integers(0, 4, 1200).astype(np.uint8)
    copy = a[300:700].copy()
    copy[200] = (copy[200] + 1) % 4
    b[100:500] = copy
    rc = (3 - a[800:1000])[::-1].copy()
    rc[50] = (rc[50] + 2) % 4
    a[1100:1300] = rc
    letters = np.array(list("ACGT"))
    path = tmp_path / "small.fa"
    write_fasta(path, [("chrA", "".join(letters[a])), ("chrB", "".join(letters[b]))])
    return path, [a, b]


@pytest.mark.parametrize("mode", ["best", "k2", "all"])
def test_brute_force_oracle(tmp_path, mode):
    """Every record against the brute-force pairs: concordant sets, strata, MAPQ, mate fields, pair types."""
    from gseek.mapper import mapq_scale

    ref, contigs = _small_reference(tmp_path)
    sim = kmismatch_pairs(ref, 120, 30, (40, 320), 2, seed=3, random_fraction=0.15)
    sim.write(tmp_path / "r1.fq", tmp_path / "r2.fq")
    k, opts = 2, dict(minins=45, maxins=300, orientation="fr")
    extra = dict(best={}, k2=dict(max_alignments=2), all=dict(report_all=True))[mode]
    idx = Index.build(ref, wgram=6, device="cpu")
    out = tmp_path / "out.sam"
    map_files(idx, tmp_path / "r1.fq", out, mate2=tmp_path / "r2.fq", mismatches=k, workers=0, **opts, **extra)
    by_pair: dict[str, list[list[str]]] = {}
    for f in _records(out):
        by_pair.setdefault(f[0], []).append(f)
    names = ["chrA", "chrB"]
    r1, r2 = read_fastx(tmp_path / "r1.fq"), read_fastx(tmp_path / "r2.fq")
    seen_types = set()
    for i in range(len(r1)):
        recs = by_pair[f"p{i}"]
        pairs, a, b = concordant(contigs, r1.codes_of(i), r2.codes_of(i), k, **opts)
        tag = {f[0] + f[1] for f in recs}
        yt = {next(t for t in f[11:] if t.startswith("YT:Z:"))[5:] for f in recs}
        assert len(yt) == 1
        seen_types |= yt
        place = lambda f: (names.index(f[2]), int(f[3]) - 1, -1 if int(f[1]) & 16 else 1)  # noqa: E731
        if pairs:
            assert yt == {"CP"} and len(recs) % 2 == 0
            got = []
            for m1, m2 in zip(recs[::2], recs[1::2]):
                f1, f2 = int(m1[1]), int(m2[1])
                assert f1 & 0xC3 == 0x43 and f2 & 0xC3 == 0x83 and (f1 & 256) == (f2 & 256)
                assert (f1 & 32 > 0) == (f2 & 16 > 0) and (f2 & 32 > 0) == (f1 & 16 > 0)
                assert m1[6] == m2[6] == "=" and int(m1[7]) == int(m2[3]) and int(m2[7]) == int(m1[3])
                got.append((place(m1), place(m2)))
                frag = pairs[next(p for p in pairs if p[0][:3] == place(m1) and p[1][:3] == place(m2))]
                assert int(m1[8]) == -int(m2[8]) and abs(int(m1[8])) == frag
                assert int(m1[8]) > 0 if int(m1[3]) < int(m2[3]) else int(m1[8]) < 0
            totals = sorted(x[3] + y[3] for x, y in pairs)
            all_pairs = {(x[:3], y[:3]): x[3] + y[3] for x, y in pairs}
            assert len(set(got)) == len(got) and set(got) <= set(all_pairs)
            n = dict(best=1, k2=2, all=len(pairs))[mode]
            assert len(got) == min(n, len(pairs))
            assert sorted(all_pairs[g] for g in got) == totals[: len(got)]  # best strata first
            best_n = totals.count(totals[0])
            second = [t for t in totals if t > totals[0]]
            mapq = mapq_scale(np.array([totals[0]]), np.array([second[0] if second else -1]), np.array([best_n]),
                              np.array([second.count(second[0]) if second else 0]))[0]
            assert int(recs[0][4]) == int(recs[1][4]) == mapq
            continue
        # no concordant pair: the mates as single-end reads, pointing at each other
        assert yt <= {"DP", "UP"}
        mates = [[f for f in recs if int(f[1]) & 64], [f for f in recs if int(f[1]) & 128]]
        for m, (mine, other, own) in enumerate(((mates[0], mates[1], a), (mates[1], mates[0], b))):
            primary = [f for f in mine if not int(f[1]) & 256]
            assert len(primary) == 1
            p = primary[0]
            o = next(f for f in other if not int(f[1]) & 256)
            if not own:
                assert int(p[1]) & 4 and len(mine) == 1
            else:
                assert place(p) in {x[:3] for x in own}
                best = min(x[3] for x in own)
                assert int(next(t for t in p[11:] if t.startswith("NM:i:"))[5:]) == best
            o_mapped = not int(o[1]) & 4
            assert bool(int(p[1]) & 8) == (not o_mapped)
            if o_mapped:
                assert (p[6] == "=" and o[2] == p[2]) or p[6] == o[2]
                assert int(p[7]) == int(o[3]) and bool(int(p[1]) & 32) == bool(int(o[1]) & 16)
            if own and o_mapped:
                both_unique = sum(x[3] == min(y[3] for y in own) for x in own) == 1 and \
                    sum(x[3] == min(y[3] for y in (b if m == 0 else a)) for x in (b if m == 0 else a)) == 1
                assert yt == ({"DP"} if both_unique else {"UP"})
            else:
                assert yt == {"UP"}
        assert all(int(f[1]) & 2 == 0 for f in recs) and tag
    assert {"CP", "UP"} <= seen_types


def test_bowtie_concordance_rules_by_hand(index, tmp_path):
    """Mates whose windows coincide, contain one another or dovetail are not concordant (bowtie 1.3.1:
    the upstream mate starts and ends strictly first); the fragment limit is inclusive."""
    genome = read_fastx(REF).sequence(0)
    rc = lambda s: s.translate(TR)[::-1]  # noqa: E731
    cases = {"same": (1000, 1000, 50, False), "contained": (1000, 1010, 40, False), "contains": (1000, 990, 40, False),
             "dovetail": (1000, 980, 50, False), "overlap": (1000, 1030, 50, True), "at_max": (1000, 1200, 50, True),
             "past_max": (1000, 1201, 50, False)}
    m1, m2 = [], []
    for name, (a, b, length2, _) in cases.items():
        m1.append((name, genome[a : a + 50], "I" * 50))
        m2.append((name, rc(genome[b : b + length2]), "I" * length2))
        m1.append((name + "_swapped", rc(genome[b : b + length2]), "I" * length2))
        m2.append((name + "_swapped", genome[a : a + 50], "I" * 50))
    write_fastq(tmp_path / "a.fq", m1)
    write_fastq(tmp_path / "b.fq", m2)
    map_files(index, tmp_path / "a.fq", tmp_path / "o.sam", mate2=tmp_path / "b.fq", mismatches=0, workers=0)
    proper = {f[0] for f in _records(tmp_path / "o.sam") if int(f[1]) & 2}
    assert proper == {n + s for n, c in cases.items() if c[3] for s in ("", "_swapped")}


def test_same_bytes_for_any_batch_and_interleaved(index, tmp_path):
    """Mates are never split: any chunk size, thread count, worker count, and the interleaved file give one text."""
    sim = kmismatch_pairs(REF, 300, 60, (100, 300), 2, seed=9, random_fraction=0.1)
    sim.write(tmp_path / "a_1.fq", tmp_path / "a_2.fq", interleaved=tmp_path / "ab.fq")
    outs = []
    for i, (chunk, workers, threads) in enumerate([(None, 0, 1), (2000, 2, 2), (777, 1, 1)]):
        out = tmp_path / f"o{i}.sam"
        map_files(index, tmp_path / "a_1.fq", out, mate2=tmp_path / "a_2.fq", chunk_bytes=chunk, workers=workers,
                  threads=threads, max_alignments=3, device="cpu")
        outs.append(out.read_bytes())
    out = tmp_path / "inter.sam"
    map_files(index, tmp_path / "ab.fq", out, interleaved=True, chunk_bytes=1500, max_alignments=3, workers=1)
    outs.append(out.read_bytes())
    body = [b"".join(line for line in o.splitlines(True) if not line.startswith(b"@")) for o in outs]
    assert len(set(body)) == 1 and body[0].count(b"\n") >= 600


def test_pairs_batches_keep_mates_together(tmp_path):
    """Files parsed in chunks of different record counts still give equal mates per batch."""
    sim = kmismatch_pairs(REF, 50, 30, (60, 90), 0, seed=2)
    sim.write(tmp_path / "x_1.fq", tmp_path / "x_2.fq", interleaved=tmp_path / "x.fq", suffixes=True)
    gz = tmp_path / "x_2.fq.gz"
    gz.write_bytes(gzip.compress((tmp_path / "x_2.fq").read_bytes()))
    for batches in (list(iter_pairs(tmp_path / "x_1.fq", gz, chunk_bytes=700)),
                    list(iter_interleaved(tmp_path / "x.fq", chunk_bytes=900))):
        assert len(batches) > 2 and sum(len(b) for b in batches) == 50
        names = [n for b in batches for n in b.mate2.name_list()]
        assert names == [f"p{i}" for i in range(50)]  # /2 stripped, in order


def test_mate_file_errors_name_file_and_line(tmp_path):
    write_fastq(tmp_path / "a.fq", [("r1/1", "ACGT", "IIII"), ("r2/1", "ACGT", "IIII"), ("r3/1", "ACGT", "IIII")])
    write_fastq(tmp_path / "b.fq", [("r1/2", "ACGT", "IIII"), ("r2/2", "ACGT", "IIII")])
    with pytest.raises(FastxError, match=r"a\.fq:9: read 'r3/1' has no mate: .*b\.fq ends after 2 records"):
        list(iter_pairs(tmp_path / "a.fq", tmp_path / "b.fq"))
    write_fastq(tmp_path / "b.fq", [("r1/2", "ACGT", "IIII"), ("rX/2", "ACGT", "IIII"), ("r3/2", "ACGT", "IIII")])
    with pytest.raises(FastxError, match=r"b\.fq:5: mate name 'rX' differs from 'r2' of .*a\.fq:5$"):
        list(iter_pairs(tmp_path / "a.fq", tmp_path / "b.fq"))
    with pytest.raises(FastxError, match=r"a\.fq:5: mate name 'r2/1' differs from 'r1' of .*a\.fq:1$"):
        list(iter_interleaved(tmp_path / "a.fq"))  # mate 1 twice
    write_fastq(tmp_path / "i.fq", [("r1/1", "ACGT", "IIII"), ("r1/2", "ACGT", "IIII"), ("r2/1", "ACGT", "IIII")])
    with pytest.raises(FastxError, match=r"i\.fq:9: read 'r2/1' has no mate: an interleaved file"):
        list(iter_interleaved(tmp_path / "i.fq"))


def test_cli_pairs_one_line_error_and_summary(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Index.build(REF, wgram=8, device="cpu").save("ref")
    sim = kmismatch_pairs(REF, 40, 50, (100, 200), 1, seed=4)
    sim.write("p_1.fq", "p_2.fq", interleaved="p.fq")
    assert main(["--device", "cpu", "search", "-x", "ref", "-1", "p_1.fq", "-2", "p_2.fq", "-o", "a.sam"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[:4] == bowtie_summary(40, 40, 40, paired=True) and "40 pairs, 40 aligned concordantly" in err[4]
    assert main(["--device", "cpu", "search", "-x", "ref", "--interleaved", "p.fq", "-o", "b.sam", "--quiet"]) == 0
    body = lambda p: [x for x in Path(p).read_text().splitlines() if not x.startswith("@")]  # noqa: E731
    assert body("a.sam") == body("b.sam") and len(body("a.sam")) == 80
    Path("short.fq").write_text("".join(Path("p_2.fq").read_text().splitlines(True)[:-4]))
    capsys.readouterr()
    assert main(["--device", "cpu", "search", "-x", "ref", "-1", "p_1.fq", "-2", "short.fq", "-o", "c.sam"]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "p_1.fq:157: read 'p39/1' has no mate: short.fq ends after 39 records" in err
    assert not Path("c.sam").exists()


def test_pipeline_list_line_with_two_files(tmp_path):
    idx = Index.build(REF, wgram=8, device="cpu")
    sim = kmismatch_pairs(REF, 30, 50, (100, 200), 1, seed=6)
    sim.write(tmp_path / "s_1.fq", tmp_path / "s_2.fq")
    (tmp_path / "list.txt").write_text("s_1.fq s_2.fq\ns_1.fq\ts_2.fq\tnamed.sam\n")
    summary = run_pipeline(tmp_path / "list.txt", idx, tmp_path / "out", "map", device="cpu", progress=False,
                           quiet=True, maxins=300)
    assert [(r.status, r.records) for r in summary.files] == [("ok", 30), ("ok", 30)]
    map_files(idx, tmp_path / "s_1.fq", tmp_path / "direct.sam", mate2=tmp_path / "s_2.fq", maxins=300, workers=0)
    body = lambda p: [x for x in Path(p).read_text().splitlines() if not x.startswith("@")]  # noqa: E731
    assert body(tmp_path / "out" / "s_1.sam") == body(tmp_path / "out" / "named.sam") == body(tmp_path / "direct.sam")


def test_pair_options_are_checked():
    with pytest.raises(Exception, match="orientation must be one of fr, rf, ff"):
        PairOptions(orientation="fx")
    with pytest.raises(Exception, match="larger than maxins"):
        map_files("nowhere", "a.fq", "o.sam", mate2="b.fq", minins=5, maxins=4)


def test_no_unal_and_max_hits(index, tmp_path):
    """``--no-unal`` drops pairs with neither mate aligned (and only them); ``--all --max-hits``
    caps pairs, ZH holding them all."""
    both = dict(mate2=FIXTURE / "r2.fq.gz", mismatches=3, workers=0)
    map_files(index, FIXTURE / "r1.fq.gz", tmp_path / "all.sam", report_all=True, **both)
    exact = dict(both, mismatches=0)  # many pairs with neither mate aligned
    map_files(index, FIXTURE / "r1.fq.gz", tmp_path / "unal.sam", no_unal=True, **exact)
    map_files(index, FIXTURE / "r1.fq.gz", tmp_path / "plain.sam", **exact)
    map_files(index, FIXTURE / "r1.fq.gz", tmp_path / "cap.sam", report_all=True, max_hits=1, **both)
    plain = _records(tmp_path / "plain.sam")
    dropped = {f[0] for f in plain if int(f[1]) & 12 == 12}
    assert dropped and [f for f in plain if f[0] not in dropped] == _records(tmp_path / "unal.sam")
    pairs_all: dict[str, int] = {}
    for f in _records(tmp_path / "all.sam"):
        if int(f[1]) & 66 == 66:
            pairs_all[f[0]] = pairs_all.get(f[0], 0) + 1
    capped = {}
    for f in _records(tmp_path / "cap.sam"):
        if int(f[1]) & 2:
            assert not int(f[1]) & 256
            zh = [t for t in f[11:] if t.startswith("ZH:i:")]
            capped[f[0]] = int(zh[0][5:]) if zh else 1
    assert capped == pairs_all and max(capped.values()) > 1


def test_pairs_of_unequal_mate_sizes_stay_whole_batches(tmp_path):
    """Mate files whose chunks hold different record counts: batches stay about a chunk (no small rests)."""
    write_fastq(tmp_path / "a.fq", [(f"r{i}/1", "ACGT" * 10, "I" * 40) for i in range(3000)])
    write_fastq(tmp_path / "b.fq", [(f"r{i}/2 a longer description", "ACGT" * 25, "I" * 100) for i in range(3000)])
    sizes = [len(p) for p in iter_pairs(tmp_path / "a.fq", tmp_path / "b.fq", chunk_bytes=1 << 16)]
    assert sum(sizes) == 3000 and min(sizes[:-1]) > 200


def test_un_al_write_each_mate_as_bowtie_names_them(index, tmp_path):
    """``--un``/``--al``: the pairs not / aligned concordantly (bowtie's sets, the fixture), each mate
    as given, in ``X_1``/``X_2`` (``un.fq`` -> ``un_1.fq``, ``al.fq.gz`` -> ``al.fq_1.gz``, bowtie 1.3.1's names)."""
    name = "v2_fr_I60_X350"
    _, _, options = RUNS[name]
    map_files(index, FIXTURE / "r1.fq.gz", tmp_path / "o.sam", mate2=FIXTURE / "r2.fq.gz", workers=1,
              un=tmp_path / "un.fq", al=tmp_path / "al.fq.gz", **options)
    aligned = {line.split("\t")[0] for line in list(open(FIXTURE / f"{name}.tsv"))[2:]}
    for m in (1, 2):
        given = gzip.decompress((FIXTURE / f"r{m}.fq.gz").read_bytes()).splitlines(True)
        records = [b"".join(given[i : i + 4]) for i in range(0, len(given), 4)]
        al = [r for r in records if r[1:].split(b"/")[0].decode() in aligned]
        un = [r for r in records if r[1:].split(b"/")[0].decode() not in aligned]
        assert (tmp_path / f"un_{m}.fq").read_bytes() == b"".join(un)
        assert gzip.decompress((tmp_path / f"al.fq_{m}.gz").read_bytes()) == b"".join(al)
    assert len(al) == 269 and not (tmp_path / "un.fq").exists()

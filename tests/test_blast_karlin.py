"""Computed Karlin-Altschul parameters (``gseek.blast.karlin``) digit for digit as blastn 2.12 prints them, and the
reals of ``-outfmt 5`` / ``-outfmt 15`` written as blastn writes them.

``UNIFORM``: ``blastn -task blastn -reward R -penalty P -ungapped -subject tests/data/blastdb/db.fa -query EQ
-outfmt 5`` (``Statistics_kappa``, ``_lambda``, ``_entropy``), EQ a 240-base query of 60 each of A, C, G, T (the
composition blastn's numbers depend on in their last digit; ``PER_QUERY``: queries of tests/data/blastdb/queries.fa).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from blastdb_fixtures import DATA, needs_blast  # noqa: E402
from test_blast_plus import _blastn  # noqa: E402

from gseek.blast.karlin import ungapped_karlin
from gseek.blast.stats import nucleotide_params, query_params, ungapped_params

# (reward, penalty): kappa lambda entropy, as blastn 2.12 prints them (%.15g)
UNIFORM = {
    (1, -3): "0.710602795216363 1.37406312246009 1.30724660390929",
    (1, -2): "0.620991117264207 1.33270576282382 1.12409184650115",
    (2, -3): "0.408145662544724 0.633731443099174 0.91243839227971",
    (1, -1): "0.333333333333333 1.09861228866811 0.549306144334055",
    (4, -5): "0.306264061813595 0.301052385563351 0.753165556068632",
    (2, -5): "0.515163162123633 0.680505305275153 1.2420803627365",
    (3, -4): "0.340012696837803 0.409600189459214 0.810998059098274",
    (2, -4): "0.620991117264207 0.666352881411909 1.12409184650115",
    (4, -6): "1.16668564310118 0.316865721549587 0.912438392279711",
    (5, -4): "0.175787942140614 0.191529283391525 0.356723851063551",
    (3, -2): "0.130436569402395 0.27117894897554 0.222323542601807",
    (2, -7): "0.547902305000632 0.690146313712853 1.34312560281876",
    (1, -5): "0.746508856417757 1.38555897087501 1.37944765894469",
    (1, -4): "0.738150059575173 1.383325268739 1.36281962280298",
}
# 1/-2, blastn -task blastn -db v4 -query queries.fa -outfmt 5: (A, C, G, T of the query) -> what blastn printed
PER_QUERY = {
    (144, 128, 121, 107): "0.620991117264206 1.33270576282382 1.12409184650114",    # q_seq0
    (124, 128, 118, 130): "0.620991117264207 1.33270576282382 1.12409184650114",    # q_emb_CAA12345.1_
    (109, 129, 133, 129): "0.620991117264207 1.33270576282382 1.12409184650115",    # q_seq1
}


def _text(values) -> str:
    return " ".join(f"{v:.15g}" for v in values)


@pytest.mark.parametrize("pair", list(UNIFORM), ids=[f"{r}/{p}" for r, p in UNIFORM])
def test_ungapped_karlin_digits_are_blastns(pair):
    assert _text(ungapped_karlin(*pair)) == UNIFORM[pair]
    p = ungapped_params(*pair)
    assert _text((p.K, p.lambda_, p.H)) == UNIFORM[pair] and p.computed


def test_composition_digits_are_blastns():
    for counts, want in PER_QUERY.items():
        assert _text(ungapped_karlin(1, -2, counts)) == want
        p = query_params(nucleotide_params(1, -2, 5, 2), 1, -2, counts)     # past 1/-2's table: computed
        assert _text((p.K, p.lambda_, p.H)) == want
    tabulated = nucleotide_params(2, -3, 5, 2)
    assert query_params(tabulated, 2, -3, (144, 128, 121, 107)) is tabulated and not tabulated.computed


def test_ungapped_beta_is_blastns():
    """BLAST+'s ungapped β: -2 for 1/-1 and 2/-3 (the scores as given), else 0; α = λ/H."""
    assert [ungapped_params(r, p).beta for r, p in ((1, -1), (2, -3), (4, -6), (1, -2))] == [-2, -2, 0, 0]
    p = ungapped_params(1, -3)
    assert p.alpha == p.lambda_ / p.H


@needs_blast
@pytest.mark.parametrize("outfmt", ["5", "15"])
@pytest.mark.parametrize("extra", [
    ["-task", "blastn-short"], ["-task", "dc-megablast"], ["-task", "blastn", "-ungapped"],
    ["-task", "megablast", "-ungapped"], ["-task", "blastn", "-reward", "1", "-penalty", "-2"],
    ["-task", "blastn", "-reward", "1", "-penalty", "-2", "-soft_masking", "false"],
    ["-task", "blastn", "-reward", "1", "-penalty", "-2", "-strand", "minus"],
    ["-task", "blastn-short", "-query_loc", "51-420"],
    ["-task", "blastn", "-reward", "2", "-penalty", "-3", "-gapopen", "7", "-gapextend", "4"],
    ["-task", "megablast", "-reward", "1", "-penalty", "-1", "-gapopen", "4", "-gapextend", "2"],
    ["-task", "blastn", "-evalue", "0.000123456789"]], ids=lambda a: " ".join(a))
def test_statistics_equal_blastn(blastdb, extra, outfmt):
    """Each query's κ λ H where blastn computes them (blastn-short, -ungapped, gap costs past the tables; the
    query's letters on its searched strand and piece, hard-masked bases left out), the expect value with all its
    digits, -ungapped's JSON without gap costs: blastn's bytes."""
    queries = DATA / "queries.fa"
    if outfmt == "15":  # JSON lists DUST's intervals: not the query ending in a run of N (docs/blast.md, DUST)
        text = queries.read_text()
        queries = blastdb / "queries_no_n.fa"
        queries.write_text("".join(">" + r for r in text.split(">")[1:] if not r.startswith("q_plainword")))
    args = ["-db", str(blastdb / "v4"), "-query", str(queries), "-outfmt", outfmt, *extra]
    if "-evalue" not in extra:
        args += ["-evalue", "1e-5"]
    want = subprocess.run(["blastn", *args], capture_output=True, text=True, check=True).stdout
    code, out, err = _blastn(args + ["-device", "cpu"])
    assert code == 0, err
    assert out == want


@pytest.mark.parametrize("golden, args", [
    ("hard_mask_stats_lc.json", ["-task", "blastn", "-reward", "1", "-penalty", "-2", "-soft_masking", "false",
                                 "-lcase_masking", "-dust", "no", "-outfmt", "15"]),
    ("hard_mask_stats_dust.xml", ["-task", "megablast", "-ungapped", "-soft_masking", "false", "-outfmt", "5"])],
    ids=["lcase", "dust"])
def test_hard_masked_statistics_count_the_base_past_each_interval(golden, args):
    """Hard masking leaves out the bases of each masked interval, half-open: the base just past one is counted in
    the query's letters. The queries (``make_hard_mask_stats.py``) are those whose printed κ or H change with that
    base; blastn 2.12's reports (``make.sh``) stored (gseek counting it out printed other κ or H digits in both)."""
    code, out, err = _blastn(["-query", DATA / "hard_mask_stats.fa", "-subject", DATA / "db.fa", "-evalue", "1e-5",
                              *args, "-device", "cpu"])
    assert code == 0, err
    assert out == (DATA / golden).read_text()


@needs_blast
@pytest.mark.parametrize("task", ["blastn", "blastn-short"])
def test_ungapped_evalues_equal_blastn(blastdb, task):
    """-ungapped 2/-3 (the blastn task) takes BLAST+'s ungapped β = -2 in the length adjustment: every line's
    e-value is blastn's (with β = 0, 24 of 37 lines differed in their e-value). Lines of equal e-value may come
    in another order (compared as sets)."""
    args = ["-task", task, "-ungapped", "-db", str(blastdb / "v4"), "-query", str(DATA / "queries.fa"), "-outfmt",
            "6 std qlen"]
    want = subprocess.run(["blastn", *args], capture_output=True, text=True, check=True).stdout
    code, out, err = _blastn(args + ["-device", "cpu"])
    assert code == 0, err
    assert sorted(out.splitlines()) == sorted(want.splitlines())

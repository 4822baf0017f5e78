"""gseek.blast.stats against BLAST+ 2.12: its tables, length adjustment, search space, e-values
and bit scores, and their -outfmt 6 text (fixtures and commands: tests/data/blast/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gseek.blast import (bit_scores, effective_search_space, evalues, format_bitscore,
                         format_evalue, nucleotide_params, supported_gap_costs)
from gseek.errors import OptionError

DATA = Path(__file__).resolve().parent / "data" / "blast"
DB_LENGTH, DB_SEQUENCES = 20_000, 1
QUERY_LENGTHS = {"q1": 300, "q2": 418, "q3": 500, "q4": 348}
#: fixture name -> (reward, penalty, gap_open, gap_extend) of the blastn run.
RUNS = {"megablast": (1, -2, 0, 0), "blastn": (2, -3, 5, 2),
        "blastn_1_3": (1, -3, 2, 2), "blastn_2_6": (2, -6, 4, 4)}


def _footer(name: str) -> tuple[list[tuple[str, str, str]], list[int]]:
    """The gapped (Lambda, K, H) strings and the search space of each query, as printed."""
    gapped, spaces, after_gapped = [], [], False
    for line in (DATA / f"{name}.footer").read_text().splitlines():
        if line.startswith("Gapped"):
            after_gapped = True
        elif line.startswith("Effective search space used:"):
            spaces.append(int(line.split()[-1]))
        elif after_gapped and not line.startswith("Lambda"):
            gapped.append(tuple(line.split()))
            after_gapped = False
    return gapped, spaces


def _hsps(name: str) -> list[list[str]]:
    return [line.split("\t") for line in (DATA / f"{name}.tsv").read_text().splitlines()]


@pytest.mark.parametrize("name", RUNS)
def test_gapped_params_as_blastn_prints_them(name):
    params = nucleotide_params(*RUNS[name])
    gapped, _ = _footer(name)
    assert len(gapped) == len(QUERY_LENGTHS)
    for lam, K, H in gapped:        # blastn prints 3 significant digits
        assert (f"{params.lambda_:.3g}", f"{params.K:.3g}", f"{params.H:.3g}") == \
            (f"{float(lam):.3g}", f"{float(K):.3g}", f"{float(H):.3g}")


def test_table_rows_and_common_divisor():
    assert nucleotide_params(1, -2, 0, 0) == nucleotide_params(1, -2, 0, 0)
    p = nucleotide_params(1, -3, 2, 2)
    assert (p.lambda_, p.K, p.H, p.alpha, p.beta, p.even_scores) == (1.37, 0.70, 1.2, 1.1, 0, False)
    assert nucleotide_params(2, -3, 5, 2).even_scores   # e-values of odd scores round down
    q = nucleotide_params(2, -6, 4, 4)      # 1/-3 scaled by 2: lambda, alpha halved, K, H kept
    assert (q.lambda_, q.K, q.H, q.alpha, q.beta) == (0.685, 0.70, 1.2, 0.55, 0)
    assert nucleotide_params(1, -2, 0, 0).alpha == 1.5      # the linear (megablast) row


@pytest.mark.parametrize("name", RUNS)
def test_search_space_per_query_equals_blastn(name):
    params = nucleotide_params(*RUNS[name])
    _, spaces = _footer(name)
    ours = [effective_search_space(params, n, DB_LENGTH, DB_SEQUENCES) for n in QUERY_LENGTHS.values()]
    assert ours == spaces


@pytest.mark.parametrize("name", RUNS)
def test_evalue_and_bitscore_text_equal_blastn(name):
    params = nucleotide_params(*RUNS[name])
    rows = _hsps(name)
    assert rows
    for qseqid, _sseqid, score, evalue, bitscore, qlen, slen in rows:
        assert int(qlen) == QUERY_LENGTHS[qseqid] and int(slen) == DB_LENGTH
        space = effective_search_space(params, int(qlen), DB_LENGTH, DB_SEQUENCES)
        assert format_evalue(evalues(params, [int(score)], space)[0]) == evalue, (qseqid, score)
        assert format_bitscore(bit_scores(params, [int(score)])[0]) == bitscore, (qseqid, score)


def test_vectorised_over_hsps():
    params = nucleotide_params(2, -3, 5, 2)
    scores = [22, 23, 40]
    assert bit_scores(params, scores).shape == (3,)
    assert evalues(params, scores, [1e6, 1e6, 1e6]).tolist() == \
        [evalues(params, [s], 1e6)[0] for s in scores]


def test_unsupported_gap_costs_name_the_supported_ones():
    with pytest.raises(OptionError) as info:
        nucleotide_params(2, -3, 1, 1)
    message = str(info.value)
    for gap_open, gap_extend in supported_gap_costs(2, -3):
        assert f"{gap_open} and {gap_extend}" in message
    assert "4 and 4" in message and "6 and 2" in message and "at least 6 and 4" in message


def test_unsupported_reward_penalty_and_ungapped():
    with pytest.raises(OptionError, match="7/-11"):
        nucleotide_params(7, -11, 5, 2)
    with pytest.raises(OptionError):
        nucleotide_params(1, 2, 0, 0)


@pytest.mark.parametrize("reward, penalty, printed", [
    (1, -2, (1.33, 0.621, 1.12)), (2, -3, (0.634, 0.408, 0.912)), (1, -3, (1.37, 0.711, 1.31)),
    (2, -6, (0.687, 0.711, 1.31))])
def test_ungapped_params_equal_blastn_footer(reward, penalty, printed):
    """The ungapped Lambda K H that blastn prints first in its footers (tests/data/blast/*.footer)."""
    p = nucleotide_params(reward, penalty, 0, 0, gapped=False)
    digits = [len(f"{x}".split(".")[1]) for x in printed]
    assert (round(p.lambda_, digits[0]), round(p.K, digits[1]), round(p.H, digits[2])) == printed
    assert nucleotide_params(reward, penalty, 99, 99) == p  # gap costs past the table: ungapped values


@pytest.mark.parametrize("value, text", [
    (0.0, "0.0"), (1e-181, "0.0"), (1e-180, "1.00e-180"), (2.064e-161, "2.06e-161"),
    (1e-5, "1.00e-05"), (0.000899, "8.99e-04"), (0.0009, "0.001"), (0.0995, "0.100"),
    (0.1, "0.10"), (0.999, "1.00"), (1.0, "1.0"), (9.96, "10.0"), (10.0, "10"), (123456.7, "123457"),
])
def test_format_evalue_edges(value, text):
    assert format_evalue(value) == text


@pytest.mark.parametrize("value, text", [
    (0.0, "0.0"), (21.15, "21.1"), (99.9, "99.9"), (99.94, "99"), (100.99, "100"),
    (9999.0, "9999"), (10000.0, "10000"), (54924.3, "54924"), (99999.0, "99999"), (100000.0, "1.000e+05"),
    (110803.2, "1.108e+05"),
])
def test_format_bitscore_edges(value, text):
    """Edges of BLAST+'s bit-score text; 54924 and 1.108e+05 are blastn 2.12's for E. coli's 29.7 kb
    contig 42 of 156 and 60 kb of it against bacteria75 (megablast, the whole contig / slice)."""
    assert format_bitscore(value) == text

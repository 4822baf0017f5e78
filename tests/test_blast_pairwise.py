"""``gseek blastn -outfmt 0`` (blastn's default: the pairwise report) and ``-html``, held to blastn 2.12's bytes.

Golden files: ``tests/data/blastdb/pairwise/`` (``make.sh`` has the blastn commands); every line is compared but
the database's ``Posted date:`` (the day the database was made). The tests marked ``needs_blast`` run blastn
itself on more variants.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from blastdb_fixtures import DATA, needs_blast  # noqa: E402 - the blastdb fixture: conftest.py

from gseek.blast.pairwise import PairwiseLayout, score_texts, wrap_flat, wrap_title  # noqa: E402
from gseek.cli.blast_plus import blastn_main, makeblastdb_main  # noqa: E402

GOLDEN = DATA / "pairwise"
BLAST = Path(__file__).parent / "data" / "blast"


def _report(args, cwd=None) -> str:
    """``gseek blastn ARGS -device cpu`` in this process: what it wrote (status 0 asserted)."""
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        err = io.StringIO()
        here = os.getcwd()
        if cwd is not None:
            os.chdir(cwd)
        try:
            code = blastn_main([str(a) for a in args] + ["-out", out, "-device", "cpu"], stdout=io.StringIO(),
                               stderr=err)
        finally:
            os.chdir(here)
        assert code == 0, err.getvalue()
        return Path(out).read_text()


def _same(got: str, want: str) -> None:
    """Equal but the ``Posted date:`` line (the database's making); line by line, for a readable failure."""
    keep = lambda text: [x for x in text.splitlines() if not x.startswith("    Posted date:  ")]  # noqa: E731
    g, w = keep(got), keep(want)
    for i, (a, b) in enumerate(zip(g, w)):
        assert a == b, f"line {i + 1}"
    assert len(g) == len(w) and got.endswith("\n") == want.endswith("\n")


@pytest.fixture
def lambda_db(tmp_path):
    """The lambda genome as ``gseek makeblastdb`` makes it, titled as blastn's database of it is."""
    from gseek.datasets import lambda_genome

    assert makeblastdb_main(["-in", str(lambda_genome()), "-dbtype", "nucl", "-out", str(tmp_path / "lambda"),
                             "-title", "lambda.fa"], stdout=io.StringIO()) == 0
    return tmp_path / "lambda"


@pytest.mark.parametrize("db,golden,extra", [("v4", "v4.txt", []), ("v5ps", "ps.txt", []),
                                             ("v5ps", "ps.html", ["-html"])])
def test_database_report_equals_blastn(blastdb, db, golden, extra):
    """A BLAST+ database without and with -parse_seqids: hits on the plus strand and queries without
    (``***** No hits found *****``), the descriptions, deflines (wrapped titles, parsed ids), the footers; HTML with
    its anchors and Entrez links."""
    got = _report(["-db", blastdb / db, "-query", DATA / "queries.fa", "-evalue", "1e-5", *extra])
    _same(got, (GOLDEN / golden).read_text())  # (ps.*: blastn's database "ps", made as v5ps was)


def test_default_outfmt_is_pairwise(blastdb):
    """No -outfmt: the pairwise report, as blastn."""
    got = _report(["-db", blastdb / "v4", "-query", DATA / "queries.fa", "-evalue", "1e-5"])
    _same(got, (GOLDEN / "v4.txt").read_text())


def test_subject_reports_equal_blastn(tmp_path):
    """-subject (its database line, ``>`` and a space before each title, ``Posted date:  Unknown``), in HTML; and
    -subject_loc with -query_loc, a minus-strand HSP (whole coordinates and lengths, the pieces' statistics; a
    coordinate of more digits than the piece's last base)."""
    (tmp_path / "db.fa").write_bytes((DATA / "db.fa").read_bytes())
    (tmp_path / "queries.fa").write_bytes((DATA / "queries.fa").read_bytes())
    (tmp_path / "chimera.fa").write_bytes((GOLDEN / "chimera.fa").read_bytes())
    got = _report(["-query", "queries.fa", "-subject", "db.fa", "-evalue", "1e-5", "-html"], cwd=tmp_path)
    _same(got, (GOLDEN / "subject.html").read_text())
    got = _report(["-query", "chimera.fa", "-subject", "db.fa", "-subject_loc", "701-1100", "-query_loc", "31-480",
                   "-task", "blastn", "-evalue", "1e-5"], cwd=tmp_path)
    _same(got, (GOLDEN / "subject_loc.txt").read_text())


@pytest.mark.parametrize("golden,extra", [("titles.txt", []), ("titles.html", ["-html"]),
                                          ("titles_subject.html", ["-html", "-subject", "titles.fa"])])
def test_titles_equal_blastn(blastdb, golden, extra):
    """Query and subject titles with punctuation, quotes, ``&`` and ``<>``, runs of blanks and words longer than a
    line: wrapped as blastn wraps them (HTML: entities one column, a break at any punctuation), encoded in HTML."""
    (blastdb / "titles.fa").write_bytes((GOLDEN / "titles.fa").read_bytes())
    db = [] if "-subject" in extra else ["-db", "v4"]
    got = _report(["-query", "titles.fa", "-evalue", "1e-5", *db, *extra], cwd=blastdb)
    _same(got, (GOLDEN / golden).read_text())


@pytest.mark.parametrize("golden,extra", [("lambda_megablast.txt", []),
                                          ("lambda_blastn.html", ["-task", "blastn", "-evalue", "1e-5", "-html"])])
def test_lambda_report_equals_blastn(lambda_db, golden, extra):
    """Minus-strand HSPs, gaps in both rows, DUST-masked query bases in lowercase (HTML: in blastn's font tags,
    with its rule at a line's first column), two HSPs of one subject, queries without hits; both tasks."""
    got = _report(["-db", lambda_db, "-query", GOLDEN / "lambda_queries.fa", *extra])
    _same(got, (GOLDEN / golden).read_text())


@pytest.mark.parametrize("golden,extra", [
    ("both_limits.txt", ["-evalue", "1e-5", "-num_descriptions", "3", "-num_alignments", "1", "-line_length", "50"]),
    ("both_max2.txt", ["-max_target_seqs", "2"])])
def test_limits_equal_blastn(blastdb, golden, extra):
    """-num_descriptions, -num_alignments, -line_length and -max_target_seqs: the subjects listed and aligned, the
    blocks' width (an alias of two databases, queries made of pieces of several subjects)."""
    got = _report(["-db", blastdb / "both", "-query", GOLDEN / "chimera.fa", *extra], cwd=blastdb)
    _same(got, (GOLDEN / golden).read_text())


def test_hitlist_rules_and_warnings():
    from gseek.blast.plus_args import PlusArgError, parse_blastn

    run = parse_blastn(["-db", "d", "-num_descriptions", "7", "-num_alignments", "3", "-line_length", "40"])
    assert (run.num_descriptions, run.num_alignments, run.line_length, run.options.max_target_seqs) == (7, 3, 40, 7)
    run = parse_blastn(["-db", "d", "-max_target_seqs", "9"])
    assert (run.num_descriptions, run.num_alignments, run.options.max_target_seqs) == (9, 9, 9)
    run = parse_blastn(["-db", "d", "-outfmt", "6", "-num_alignments", "3", "-num_descriptions", "2"])
    assert run.options.max_target_seqs == 3 and run.warnings == (
        "The parameter -num_descriptions is ignored for output formats > 4 . Use -max_target_seqs to control output",
        "Examining 5 or more matches is recommended")
    with pytest.raises(PlusArgError, match='Argument "num_descriptions". Incompatible with argument:  `max_target'):
        parse_blastn(["-db", "d", "-max_target_seqs", "9", "-num_descriptions", "3"])


def test_text_rules():
    """BLAST+'s e-value and bit score texts, its title wrapping (a word longer than the line is cut)."""
    assert [score_texts(e, 30.0)[0] for e in (0.0, 1e-181, 3.3e-120, 4.4e-5, 0.0234, 0.5, 2.34, 123.4)] == \
        ["0.0", "0.0", "3e-120", "4e-05", "0.023", "0.50", "2.3", "123"]
    assert [score_texts(1.0, b)[1] for b in (8.25, 99.9, 99.95, 856.9, 123456.0)] == \
        [" 8.2", "99.9", " 99", "856", "1.235e+05"]
    assert wrap_flat("x" * 80 + " tail", 68) == ["x" * 68, "x" * 12 + " tail"]
    assert wrap_flat("a-b " * 30, 20)[0] == "a-b a-b a-b a-b a-b"
    assert wrap_title("w" * 59 + " " + "v" * 10 + " u") == "w" * 59 + " " + "v" * 10 + " \nu"
    with pytest.raises(Exception, match="line_length must be at least 1"):
        PairwiseLayout(line_length=0)


def test_search_outfmt_0(lambda_db, tmp_path):
    """``gseek search --task megablast --outfmt 0``: the same report from gseek's own spelling."""
    from click.testing import CliRunner

    from gseek.cli import cli

    out = tmp_path / "o.txt"
    res = CliRunner().invoke(cli, ["--device", "cpu", "search", "--task", "megablast", "-x", str(lambda_db), "-q",
                                   str(GOLDEN / "lambda_queries.fa"), "--outfmt", "0", "-o", str(out)])
    assert res.exit_code == 0, res.output
    _same(out.read_text(), (GOLDEN / "lambda_megablast.txt").read_text())


@needs_blast
@pytest.mark.parametrize("extra", [["-lcase_masking"], ["-dust", "no", "-html"], ["-strand", "minus"],
                                   ["-soft_masking", "false", "-task", "blastn", "-evalue", "1e-5"],
                                   ["-query_loc", "101-1500", "-html"], ["-line_length", "71", "-task", "blastn",
                                                                         "-evalue", "1e-3"]])
def test_more_variants_equal_blastn(tmp_path, extra):
    """blastn itself on a lambda database and the lambda queries, with options that change the report."""
    from gseek.datasets import lambda_genome

    (tmp_path / "lambda.fa").write_bytes(Path(lambda_genome()).read_bytes())
    subprocess.run(["makeblastdb", "-in", "lambda.fa", "-dbtype", "nucl", "-out", "lambda"], cwd=tmp_path, check=True,
                   capture_output=True)
    args = ["-db", "lambda", "-query", str(GOLDEN / "lambda_queries.fa"), *extra]
    want = subprocess.run(["blastn", *args], cwd=tmp_path, check=True, capture_output=True, text=True).stdout
    _same(_report(args, cwd=tmp_path), want)


@needs_blast
@pytest.mark.parametrize("task", ["megablast", "blastn"])
def test_qcovus_equals_blastn(tmp_path, task):
    """qcovus: a query's bases aligned to subject bases each counted once (pieces repeated, overlapping on the
    subject, on both strands, with gaps), beside qcovs."""
    from gseek.seqio import read_fastx

    db = read_fastx(DATA / "db.fa")
    a, b = db.sequence(0), db.sequence(1)
    rc = lambda x: x[::-1].translate(str.maketrans("ACGT", "TGCA"))  # noqa: E731
    (tmp_path / "q.fa").write_text(
        f">two_pieces\n{a[100:400]}{'ACGT' * 10}{a[300:700]}{'TTGCA' * 8}{a[2000:2200]}\n"
        f">two_subjects\n{a[500:900]}{b[100:300]}\n>minus_overlap\n{rc(a[1000:1400])}{a[1200:1300]}{rc(a[1250:1600])}\n"
        f">gapped\n{a[2400:2700]}{a[2500:2600]}AC{a[2600:2800]}{a[2650:2750]}\n")
    args = ["-task", task, "-query", str(tmp_path / "q.fa"), "-subject", str(DATA / "db.fa"), "-evalue", "1e-5",
            "-outfmt", "6 qseqid sseqid qstart qend sstart send qlen qcovs qcovus qcovhsp"]
    want = subprocess.run(["blastn", *args], check=True, capture_output=True, text=True).stdout
    assert _report(args) == want


@needs_blast
def test_subject_loc_tabular_equals_blastn():
    """-subject_loc: each subject's piece searched (the statistics the pieces'), sstart/send and slen the whole
    subject's."""
    args = ["-query", str(DATA / "queries.fa"), "-subject", str(DATA / "db.fa"), "-subject_loc", "151-420",
            "-evalue", "1e-5", "-outfmt", "6 std slen qlen"]
    want = subprocess.run(["blastn", *args], check=True, capture_output=True, text=True).stdout
    assert _report(args) == want


@needs_blast
@pytest.mark.parametrize("outfmt,extra", [
    ("5", ["-subject", DATA / "db.fa"]), ("5", ["-subject", DATA / "db.fa", "-subject_loc", "151-420"]),
    ("5", ["-db", "v4", "-query_loc", "51-420"]), ("15", ["-db", "v4", "-query_loc", "51-420"])])
def test_structured_reports_of_pieces_equal_blastn(blastdb, outfmt, extra):
    """-outfmt 5 and 15 with -query_loc (whole-query coordinates, JSON's masks too), -subject (blastn's names for
    the subjects, database size 0) and -subject_loc (whole-subject coordinates and lengths)."""
    args = ["-query", str(DATA / "queries.fa"), "-evalue", "1e-5", "-outfmt", outfmt, *map(str, extra)]
    want = subprocess.run(["blastn", *args], cwd=blastdb, check=True, capture_output=True, text=True).stdout
    assert _report(args, cwd=blastdb) == want


@needs_blast
@pytest.mark.parametrize("extra", [["-task", "blastn-short"], ["-task", "dc-megablast"],
                                   ["-task", "dc-megablast", "-window_size", "10", "-html"],
                                   ["-task", "dc-megablast", "-ungapped"]], ids=lambda a: " ".join(a))
def test_other_tasks_reports_equal_blastn(blastdb, extra):
    """blastn-short and dc-megablast: blastn's report, its epilog naming dc-megablast's two-hit window
    (``Window for multiple hits: 40``, or -window_size's)."""
    args = ["-db", "v4", "-query", str(DATA / "queries.fa"), "-evalue", "1e-5", *extra]
    want = subprocess.run(["blastn", *args], cwd=blastdb, check=True, capture_output=True, text=True).stdout
    _same(_report(args, cwd=blastdb), want)

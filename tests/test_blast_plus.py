"""``gseek blastn`` / ``gseek makeblastdb``: BLAST+ 2.12's command lines (``gseek.blast.plus_args``,
``gseek.cli.blast_plus``), checked against blastn's own output, error texts and exit codes.

The fixture database and blastn's lines are ``tests/data/blastdb/`` (``make.sh``); the tests that run
blastn or makeblastdb themselves skip without them.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from blastdb_fixtures import DATA, FIELDS, needs_blast  # noqa: E402 - the blastdb fixture: conftest.py

from gseek.blast.plus_args import BLASTN_FLAGS, BLASTN_REFUSED, PlusArgError, parse_blastn, parse_makeblastdb
from gseek.cli.blast_plus import blastn_main, makeblastdb_main


def _same_as_blastn(args):
    """blastn 2.12 and ``gseek blastn`` (on the CPU) print the same for ``args``."""
    want = subprocess.run(["blastn", *args], capture_output=True, text=True, check=True).stdout
    code, out, err = _blastn(args + ["-device", "cpu"])
    assert code == 0, err
    assert out == want


def _blastn(args):
    """``gseek blastn ARGS`` in this process: exit status, what it wrote (to ``-out``, else a file in its
    place: the search writes stdout's file descriptor itself), and its messages."""
    import tempfile

    args = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with tempfile.TemporaryDirectory() as tmp:
        given = "-out" in args
        if not given:
            args = ["-out", os.path.join(tmp, "out"), *args]
        code = blastn_main(args, stdout=out, stderr=err)
        text = out.getvalue()
        if not given and os.path.exists(os.path.join(tmp, "out")):
            text += Path(tmp, "out").read_text()
    return code, text, err.getvalue()


def _errors(text: str) -> list[str]:
    """The lines of an error report that say what is wrong (the USAGE block aside)."""
    return [line for line in text.splitlines() if line.startswith(("Error", "BLAST", "Please", "Command line"))]


# (arguments, blastn 2.12's exit status and error lines; tests/data/blastdb: blastn run with the same)
BAD = [
    (["-foo", "1"], 1, ['Error: Unknown argument: "foo"', 'Error:  (CArgException::eInvalidArg) Unknown argument: "foo"']),
    (["-query", "Q", "-db", "D", "-evalue", "abc"], 1,
     ["Error: Cannot convert string 'abc' to double (m_Pos = 0)",
      'Error: Argument "evalue". Argument cannot be converted:  `abc\'',
      'Error:  (CArgException::eConvert) Argument "evalue". Argument cannot be converted:  `abc\'']),
    (["-query", "Q", "-db", "D", "-max_hsps", "1.5"], 1,
     ["Error: Cannot convert string '1.5' to Int8 (m_Pos = 1)",
      'Error: Argument "max_hsps". Argument cannot be converted:  `1.5\'',
      'Error:  (CArgException::eConvert) Argument "max_hsps". Argument cannot be converted:  `1.5\'']),
    (["-query", "Q", "-db", "D", "-word_size", "3"], 1,
     ['Error: Argument "word_size". Illegal value, expected >=4:  `3\'',
      'Error:  (CArgException::eConstraint) Argument "word_size". Illegal value, expected >=4:  `3\'']),
    (["-query", "Q", "-db", "D", "-strand", "up"], 1,
     ["Error: Argument \"strand\". Illegal value, expected `both', `minus', `plus':  `up'",
      "Error:  (CArgException::eConstraint) Argument \"strand\". Illegal value, expected `both', `minus', `plus':  `up'"]),
    (["-query", "Q", "-db", "D", "-task", "bogus"], 1,
     ["Error: Argument \"task\". Illegal value, expected Permissible values: 'blastn' 'blastn-short' 'dc-megablast' "
      "'megablast' 'rmblastn' :  `bogus'",
      "Error:  (CArgException::eConstraint) Argument \"task\". Illegal value, expected Permissible values: 'blastn' "
      "'blastn-short' 'dc-megablast' 'megablast' 'rmblastn' :  `bogus'"]),
    (["-query", "Q", "-db", "D", "-perc_identity", "101"], 1,
     ['Error: Argument "perc_identity". Illegal value, expected 0..100:  `101\'',
      'Error:  (CArgException::eConstraint) Argument "perc_identity". Illegal value, expected 0..100:  `101\'']),
    (["-query", "Q", "-db", "D", "-soft_masking", "maybe"], 1,
     ["Error: String cannot be converted to bool (m_Pos = 0)",
      'Error: Argument "soft_masking". Argument cannot be converted:  `maybe\'',
      'Error:  (CArgException::eConvert) Argument "soft_masking". Argument cannot be converted:  `maybe\'']),
    (["-query", "Q", "-db", "D", "-evalue"], 1,
     ['Error: Argument "-evalue". Value is missing', 'Error:  (CArgException::eNoArg) Argument "-evalue". Value is missing']),
    (["-query", "Q", "-db", "D", "-lcase_masking", "1"], 1,
     ["Error: Too many positional arguments (1), the offending value: 1",
      "Error:  (CArgException::eSynopsis) Too many positional arguments (1), the offending value: 1"]),
    (["-query", "Q", "-db", "D", "-subject", "S"], 1,
     ['Error: Argument "subject". Incompatible with argument:  `db\'',
      'Error:  (CArgException::eConstraint) Argument "subject". Incompatible with argument:  `db\'']),
    (["-query", "Q"], 1, ["BLAST query/options error: Either a BLAST database or subject sequence(s) must be specified",
                          "Please refer to the BLAST+ user manual."]),
    (["-query", "Q", "-db", "D", "-evalue", "-1"], 1,
     ["BLAST query/options error: expect value or cutoff score must be greater than zero",
      "Please refer to the BLAST+ user manual."]),
    (["-query", "Q", "-db", "D", "-dust", "1 2"], 1,
     ["BLAST query/options error: Invalid number of arguments to filtering option", "Please refer to the BLAST+ user manual."]),
    # dc-megablast's templates (tests/test_blast_tasks.py runs the tasks)
    (["-query", "Q", "-db", "D", "-task", "dc-megablast", "-template_type", "coding"], 1,
     ['Error: Argument "template_length". Must be specified, as it is required by argument:  `template_type\'',
      'Error:  (CArgException::eConstraint) Argument "template_length". Must be specified, as it is required by '
      'argument:  `template_type\'']),
    (["-query", "Q", "-db", "D", "-template_type", "coding", "-template_length", "17"], 1,
     ["Error: Argument \"template_length\". Illegal value, expected Permissible values: '16' '18' '21' :  `17'",
      "Error:  (CArgException::eConstraint) Argument \"template_length\". Illegal value, expected Permissible values: "
      "'16' '18' '21' :  `17'"]),
    (["-query", "Q", "-db", "D", "-task", "dc-megablast", "-word_size", "13"], 1,
     ["BLAST query/options error: Invalid discontiguous template parameters: word size must be either 11 or 12",
      "Please refer to the BLAST+ user manual."]),
    (["-query", "Q", "-db", "D", "-task", "dc-megablast", "-window_size", "-1"], 1,
     ['Error: Argument "window_size". Illegal value, expected >=0:  `-1\'',
      'Error:  (CArgException::eConstraint) Argument "window_size". Illegal value, expected >=0:  `-1\'']),
    (["-query", "Q", "-db", "D", "-task", "blastn", "-template_type", "optimal", "-template_length", "16"], 1,
     ["BLAST query/options error: Invalid lookup table type for discontiguous Mega BLAST",
      "Please refer to the BLAST+ user manual."]),
]


@pytest.fixture
def in_folder(tmp_path, monkeypatch):
    """A folder holding a query file Q, a subject S and a database D (the table's names)."""
    shutil.copy(DATA / "queries.fa", tmp_path / "Q")
    shutil.copy(DATA / "db.fa", tmp_path / "S")
    for ext in ("nin", "nsq", "nhr"):
        shutil.copy(DATA / f"v4.{ext}", tmp_path / f"D.{ext}")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("args,code,lines", BAD, ids=[" ".join(a[-2:]) for a, _, _ in BAD])
def test_bad_arguments_as_blastn_says(args, code, lines, in_folder):
    got = _blastn(args)
    assert (got[0], _errors(got[2])) == (code, lines)


@needs_blast
@pytest.mark.parametrize("args,code,lines", BAD, ids=[" ".join(a[-2:]) for a, _, _ in BAD])
def test_bad_arguments_table_is_blastns(args, code, lines, in_folder):
    """The table above is what blastn 2.12 itself answers."""
    run = subprocess.run(["blastn", *args], capture_output=True, text=True, cwd=in_folder)
    assert (run.returncode, _errors(run.stderr)) == (code, lines)


def test_unsupported_flags_refused_by_name(in_folder):
    for name in BLASTN_REFUSED:
        with pytest.raises(PlusArgError, match=f'Argument "{name}". gseek blastn does not support it'):
            parse_blastn(["-query", "Q", "-db", "D", f"-{name}", "1"])
    for task in ("rmblastn",):
        code, _, err = _blastn(["-query", "Q", "-db", "D", "-task", task])
        assert code == 1 and f"gseek blastn does not support task '{task}' yet" in err
    for task, words in (("megablast", "a two-hit window with -task dc-megablast only"),
                        ("dc-megablast", "window_size must be 1 .. 10,000 (0, BLAST+'s one-hit")):
        code, _, err = _blastn(["-query", "Q", "-db", "D", "-task", task, "-window_size", "0"])
        assert code == 1 and words in err, err
    code, _, err = _blastn(["-query", str(DATA / "queries.fa"), "-db", "d", "-outfmt", "1"])
    assert code == 1 and "-outfmt 1 is not supported" in err


def test_every_flag_is_read(in_folder):
    """Each supported flag reaches the options (defaults: BLAST+'s; megablast)."""
    run = parse_blastn(["-query", "Q", "-db", "nt", "-out", "o", "-task", "blastn", "-evalue", "1e-3",
                        "-num_threads", "3", "-max_target_seqs", "7", "-max_hsps", "2", "-perc_identity", "90",
                        "-qcov_hsp_perc", "50", "-strand", "plus", "-dust", "no", "-soft_masking", "false",
                        "-lcase_masking", "-word_size", "9", "-reward", "1", "-penalty", "-3", "-gapopen", "2",
                        "-gapextend", "2", "-xdrop_ungap", "21", "-xdrop_gap", "31", "-xdrop_gap_final", "101",
                        "-ungapped", "-html", "-outfmt", "7 qseqid sseqid", "-device", "cpu", "-gpus", "0,1"])
    o = run.options
    assert (o.task, o.evalue, o.max_target_seqs, o.max_hsps, o.perc_identity, o.qcov_hsp_perc, o.strand, o.dust,
            o.soft_masking, o.lcase_masking, o.word_size, o.reward, o.penalty, o.gap_open, o.gap_extend,
            o.xdrop_ungap, o.xdrop_gap, o.xdrop_gap_final, o.ungapped) == \
        ("blastn", 1e-3, 7, 2, 90.0, 50.0, "plus", None, False, True, 9, 1, -3, 2, 2, 21.0, 31.0, 101.0, True)
    assert (run.query, run.db, run.out, run.threads, run.outfmt, run.html, run.device, run.gpus) == \
        ("Q", "nt", "o", min(3, os.cpu_count() or 1), "7 qseqid sseqid", True, "cpu", ("0", "1"))
    default = parse_blastn(["-db", "nt"])
    assert (default.options.task, default.options.evalue, default.query, default.out, default.outfmt) == \
        ("megablast", 10.0, "-", "-", "0")
    assert set(BLASTN_FLAGS) >= {"db", "query", "out", "task", "subject", "subject_loc", "query_loc", "version", "help"}


def test_blastn_on_a_blast_database_equals_blastn(blastdb, tmp_path):
    out = tmp_path / "o.tsv"
    for db in ("v4", "v5ps", "mv", "both"):
        code, _, err = _blastn(["-db", blastdb / db, "-query", DATA / "queries.fa", "-outfmt", FIELDS, "-out", out,
                                "-device", "cpu"])
        assert code == 0, err
        assert out.read_text() == (DATA / f"{db}.blastn.tsv").read_text(), db


def test_missing_database_and_query(tmp_path):
    code, _, err = _blastn(["-db", tmp_path / "nothere", "-query", DATA / "queries.fa", "-outfmt", "6"])
    assert code == 2 and err.startswith("BLAST Database error: No alias or index file found for nucleotide database [")
    code, _, err = _blastn(["-db", tmp_path / "nothere", "-query", tmp_path / "nofile.fa", "-outfmt", "6"])
    assert code == 1 and err == f'Command line argument error: Argument "query". File is not accessible:  `{tmp_path}/nofile.fa\'\n'


def test_unreadable_database_one_line(blastdb):
    """A truncated volume: one line naming the file, status 2 as blastn's database errors (blastn 2.12 itself
    searches a truncated .nsq without a word)."""
    (blastdb / "v4.nsq").write_bytes((blastdb / "v4.nsq").read_bytes()[:1000])
    code, out, err = _blastn(["-db", blastdb / "v4", "-query", DATA / "queries.fa", "-outfmt", "6", "-device", "cpu"])
    assert (code, out) == (2, "")
    assert err == f"BLAST Database error: {blastdb}/v4.nsq: truncated or replaced sequence file (1000 bytes; the index " \
                  "says 4237)\n"


def test_cli_wiring(blastdb, tmp_path):
    run = subprocess.run([sys.executable, "-m", "gseek", "blastn", "-db", str(blastdb / "v4"), "-query",
                          str(DATA / "queries.fa"), "-outfmt", FIELDS, "-device", "cpu"], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout == (DATA / "v4.blastn.tsv").read_text()
    run = subprocess.run([sys.executable, "-m", "gseek", "blastn", "-foo", "1"], capture_output=True, text=True)
    assert run.returncode == 1 and run.stderr.startswith("USAGE\n  blastn")
    run = subprocess.run([sys.executable, "-m", "gseek", "blastn", "-version"], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.startswith("blastn: 2.12.0+\n")
    run = subprocess.run([sys.executable, "-m", "gseek", "makeblastdb", "-in", str(DATA / "db.fa"), "-dbtype", "prot"],
                         capture_output=True, text=True)
    assert run.returncode == 1 and "nucleotide databases only" in run.stderr


def test_makeblastdb_then_blastn(tmp_path):
    """``gseek makeblastdb`` builds a gseek database that ``gseek blastn -db`` searches as blastn searches
    BLAST+'s (the fixture lines: a database made without -parse_seqids)."""
    assert makeblastdb_main(["-in", str(DATA / "db.fa"), "-dbtype", "nucl", "-out", str(tmp_path / "ref"),
                             "-title", "T", "-max_file_sz", "1GB", "-taxid", "9606"], stdout=io.StringIO()) == 0
    assert (tmp_path / "ref.gseek" / "header.json").is_file()
    code, out, err = _blastn(["-db", tmp_path / "ref", "-query", DATA / "queries.fa", "-outfmt", FIELDS, "-device",
                              "cpu"])
    assert code == 0 and out == (DATA / "v4.blastn.tsv").read_text()
    run = parse_makeblastdb(["-in", "x.fa", "-dbtype", "nucl", "-parse_seqids", "-max_file_sz", "4000"])
    assert (run.out, run.parse_seqids, run.max_file_sz, run.title) == ("x.fa", True, 4000, "x.fa")
    with pytest.raises(PlusArgError, match="nucleotide databases only"):
        parse_makeblastdb(["-in", "x.fa", "-dbtype", "prot"])


def test_makeblastdb_parse_seqids(tmp_path):
    """-parse_seqids: FASTA-style ids (gi|..|ref|..|, lcl|, gnl|, emb|) printed as blastn prints BLAST+'s
    database of them (v5ps.blastn.tsv); a bare accession (NC_000913.3) is a local id here, where BLAST+
    guesses its type (ref|NC_000913.3|): that row's sseqid and sacc differ, its saccver is the same."""
    assert makeblastdb_main(["-in", str(DATA / "db.fa"), "-dbtype", "nucl", "-out", str(tmp_path / "ps"),
                             "-parse_seqids"], stdout=io.StringIO()) == 0
    code, out, _ = _blastn(["-db", tmp_path / "ps", "-query", DATA / "queries.fa", "-outfmt", FIELDS, "-device", "cpu"])
    want = (DATA / "v5ps.blastn.tsv").read_text().splitlines()
    got = out.splitlines()
    assert code == 0 and len(got) == len(want)
    for g, w in zip(got, want):
        if "NC_000913" in w:
            assert g.split("\t")[:12] == w.split("\t")[:12]
        else:
            assert g == w


@needs_blast
@pytest.mark.parametrize("task", ["megablast", "blastn"])
@pytest.mark.parametrize("outfmt", [FIELDS, "6 std saccver stitle", "7 qseqid sseqid evalue bitscore", "10",
                                    "10 qseqid sseqid stitle evalue"])
def test_subject_equals_blastn(tmp_path, task, outfmt):
    """-subject FASTA: blastn's statistics (the subjects' total length and count, as a database) and names
    (the first word; no title: N/A)."""
    args = ["-task", task, "-query", str(DATA / "queries.fa"), "-subject", str(DATA / "db.fa"), "-outfmt", outfmt,
            "-evalue", "1e-5"]
    _same_as_blastn(args)


@needs_blast
@pytest.mark.parametrize("extra", [["-strand", "plus"], ["-max_hsps", "1", "-max_target_seqs", "2"],
                                   ["-perc_identity", "99", "-qcov_hsp_perc", "50"], ["-dust", "no"],
                                   ["-ungapped"], ["-word_size", "16"]])
def test_options_equal_blastn(blastdb, extra):
    args = ["-db", str(blastdb / "mv"), "-query", str(DATA / "queries.fa"), "-outfmt", FIELDS, "-evalue", "1e-5", *extra]
    _same_as_blastn(args)


@needs_blast
@pytest.mark.parametrize("task", ["megablast", "blastn"])
def test_qcovs_equals_blastn(tmp_path, task):
    """qcovs: the query bases all HSPs with the subject cover (a query made of two overlapping and one distant
    piece of a subject, and of two subjects). (qcovus, 82 here where qcovs is 92, is refused.)"""
    from gseek.seqio import read_fastx

    db = read_fastx(DATA / "db.fa")
    a, b = db.sequence(0), db.sequence(1)
    (tmp_path / "q.fa").write_text(f">two_pieces\n{a[100:400]}{'ACGT' * 10}{a[300:700]}{'TTGCA' * 8}{a[2000:2200]}\n"
                                   f">two_subjects\n{a[500:900]}{b[100:300]}\n")
    args = ["-task", task, "-query", str(tmp_path / "q.fa"), "-subject", str(DATA / "db.fa"), "-evalue", "1e-5",
            "-outfmt", "6 qseqid sseqid qstart qend qlen qcovs qcovhsp"]
    _same_as_blastn(args)


@needs_blast
@pytest.mark.parametrize("task", ["megablast", "blastn"])
def test_query_loc_equals_blastn(blastdb, task):
    """-query_loc: each query's piece searched (its length the statistics'), qstart/qend in the whole query."""
    args = ["-task", task, "-db", str(blastdb / "v4"), "-query", str(DATA / "queries.fa"), "-query_loc", "51-420",
            "-outfmt", "7 std qlen qcovhsp qseq", "-evalue", "1e-5"]
    _same_as_blastn(args)


def test_outfmt5_is_read_by_biopython(blastdb):
    """-outfmt 5 (BLAST XML): Biopython's NCBIXML reads it; its HSPs are the tabular lines' (v4.blastn.tsv)."""
    from Bio.Blast import NCBIXML

    code, out, err = _blastn(["-db", blastdb / "v4", "-query", DATA / "queries.fa", "-outfmt", "5", "-device", "cpu"])
    assert code == 0, err
    rows = []
    for record in NCBIXML.parse(io.StringIO(out)):
        for alignment in record.alignments:
            for hsp in alignment.hsps:
                rows.append((record.query.split()[0], alignment.hit_def.split()[0], hsp.identities, hsp.align_length,
                             hsp.query_start, hsp.query_end, hsp.sbjct_start, hsp.sbjct_end, hsp.score))
    want = [line.split("\t") for line in (DATA / "v4.blastn.tsv").read_text().splitlines()]
    assert [r[:2] for r in rows] == [(w[0], w[1]) for w in want]
    assert [r[3:8] for r in rows] == [(int(w[3]), int(w[6]), int(w[7]), int(w[8]), int(w[9])) for w in want]


def test_outfmt15_is_json(blastdb):
    """-outfmt 15 (single-file BLAST JSON): one report a query, its hits those of the tabular lines."""
    import json

    code, out, err = _blastn(["-db", blastdb / "v4", "-query", DATA / "queries.fa", "-outfmt", "15", "-device", "cpu"])
    assert code == 0, err
    reports = json.loads(out)["BlastOutput2"]
    assert len(reports) == len(read_queries())
    got = [(r["report"]["results"]["search"]["query_title"].split()[0], h["description"][0]["title"].split()[0],
            p["query_from"], p["hit_from"]) for r in reports for h in r["report"]["results"]["search"]["hits"]
           for p in h["hsps"]]
    want = [line.split("\t") for line in (DATA / "v4.blastn.tsv").read_text().splitlines()]
    assert got == [(w[0], w[1], int(w[6]), int(w[8])) for w in want]


def read_queries():
    from gseek.seqio import read_fastx

    return read_fastx(DATA / "queries.fa").name_list()


@needs_blast
@pytest.mark.parametrize("outfmt", ["5", "15"])
@pytest.mark.parametrize("task", ["megablast", "blastn"])
@pytest.mark.parametrize("extra", [[], ["-dust", "no"], ["-soft_masking", "false", "-strand", "minus"],
                                   ["-lcase_masking"]])
def test_outfmt5_equals_blastn(blastdb, task, extra, outfmt):
    """-outfmt 5 and 15: blastn's XML and JSON, byte for byte (databases with and without -parse_seqids, several
    volumes; JSON's query_masking: DUST's intervals and, with -lcase_masking, the lowercase runs)."""
    run = lambda *a: subprocess.run(a, check=True, capture_output=True, text=True, cwd=blastdb)  # noqa: E731
    run("makeblastdb", "-in", "db.fa", "-dbtype", "nucl", "-out", "ps", "-parse_seqids")
    queries = DATA / "queries.fa"
    if outfmt == "15":  # JSON lists DUST's intervals: not the query ending in a run of N (docs/blast.md, DUST)
        text = queries.read_text()
        queries = blastdb / "queries_no_n.fa"
        queries.write_text("".join(">" + r for r in text.split(">")[1:] if not r.startswith("q_plainword")))
    for db in ("v4", "ps", "mv"):
        args = ["-task", task, "-db", db, "-query", str(queries), "-outfmt", outfmt, "-evalue", "1e-5", *extra]
        want = run("blastn", *args).stdout
        cwd = os.getcwd()
        os.chdir(blastdb)
        try:
            code, out, err = _blastn(args + ["-device", "cpu"])
        finally:
            os.chdir(cwd)
        assert code == 0, err
        assert out == want, db


@needs_blast
def test_staxid_equals_blastn(blastdb, tmp_path):
    """staxid / staxids: a database's taxids (makeblastdb -taxid, with and without -parse_seqids), none (N/A, 0),
    -subject (N/A, N/A); gseek makeblastdb -taxid / -taxid_map the same."""
    run = lambda *a: subprocess.run(a, check=True, capture_output=True, text=True, cwd=blastdb)  # noqa: E731
    run("makeblastdb", "-in", "db.fa", "-dbtype", "nucl", "-out", "tx_ps", "-parse_seqids", "-taxid", "9606")
    run("makeblastdb", "-in", "db.fa", "-dbtype", "nucl", "-out", "tx_plain", "-taxid", "562")
    fields = ["-outfmt", "6 qseqid sseqid staxid staxids", "-evalue", "1e-5"]
    for db in ("tx_ps", "tx_plain", "v4"):
        want = run("blastn", "-db", db, "-query", str(DATA / "queries.fa"), *fields).stdout
        assert _blastn(["-db", blastdb / db, "-query", DATA / "queries.fa", *fields, "-device", "cpu"])[1] == want, db
    want = run("blastn", "-subject", "db.fa", "-query", str(DATA / "queries.fa"), *fields).stdout
    assert _blastn(["-subject", blastdb / "db.fa", "-query", DATA / "queries.fa", *fields, "-device", "cpu"])[1] == want
    assert makeblastdb_main(["-in", str(DATA / "db.fa"), "-dbtype", "nucl", "-out", str(tmp_path / "g"),
                             "-taxid", "562"], stdout=io.StringIO()) == 0
    want = run("blastn", "-db", "tx_plain", "-query", str(DATA / "queries.fa"), *fields).stdout
    assert _blastn(["-db", tmp_path / "g", "-query", DATA / "queries.fa", *fields, "-device", "cpu"])[1] == want
    (tmp_path / "map.txt").write_text("".join(f"{w} 562\n" for w in read_fastx_names()))
    for name, taxids in (("m", ["-taxid_map", str(tmp_path / "map.txt")]), ("t", ["-taxid", "562"])):
        assert makeblastdb_main(["-in", str(DATA / "db.fa"), "-dbtype", "nucl", "-out", str(tmp_path / name),
                                 "-parse_seqids", *taxids], stdout=io.StringIO()) == 0  # (BLAST+: -taxid_map needs it)
    got = _blastn(["-db", tmp_path / "m", "-query", DATA / "queries.fa", *fields, "-device", "cpu"])[1]
    assert got == _blastn(["-db", tmp_path / "t", "-query", DATA / "queries.fa", *fields, "-device", "cpu"])[1]
    assert {tuple(line.split("\t")[2:]) for line in got.splitlines()} == {("562", "562")}


def read_fastx_names():
    from gseek.seqio import read_fastx

    return read_fastx(DATA / "db.fa").name_list()


@needs_blast
@pytest.mark.parametrize("outfmt", ["5", "15"])
@pytest.mark.parametrize("extra", [["-task", "megablast"], ["-task", "blastn", "-subject_loc", "50-2500"],
                                   ["-task", "blastn-short", "-strand", "minus"], ["-task", "dc-megablast"]],
                         ids=lambda a: " ".join(a))
def test_subject_outfmt5_15_equal_blastn(tmp_path, extra, outfmt):
    """-subject with -outfmt 5 and 15: blastn's bytes (JSON: its bl2seq layout, the subjects listed as Subject_N,
    no accession nor database size); a query hitting two subjects, one without hits, one DUST masks end to end
    (blastn lists no mask for it)."""
    from gseek.seqio import read_fastx

    db = read_fastx(DATA / "db.fa")
    a, b = db.sequence(0), db.sequence(1)
    (tmp_path / "q.fa").write_text(f">two_subjects some words\n{a[500:900]}{b[100:300]}\n>masked\n{'ACGTTGCA' * 20}\n"
                                   f">partly\n{'ACGTTGCA' * 20}{a[2000:2300]}\n>none\n{'ACGTTGCAGGTA' * 9}\n")
    args = ["-query", str(tmp_path / "q.fa"), "-subject", str(DATA / "db.fa"), "-outfmt", outfmt, "-evalue", "1e-5",
            *extra]
    _same_as_blastn(args)


@needs_blast
def test_output_naming_an_input_is_refused(tmp_path):
    """-out naming the -query or -subject file: blastn 2.12 opens the output first and so empties the query
    ("Query is Empty!") or overwrites the subject, and exits 0; gseek blastn leaves both as they were and exits 1
    with a BLAST-style option error (BLAST+'s status for a bad option); gseek search says so with status 2
    (docs/exit-codes.md)."""
    query, subject = tmp_path / "q.fa", tmp_path / "s.fa"
    for path, source in ((query, "queries.fa"), (subject, "db.fa")):
        shutil.copy(DATA / source, path)
    run = subprocess.run(["blastn", "-query", str(query), "-subject", str(subject), "-out", str(query)],
                         capture_output=True, text=True)
    assert run.returncode == 0 and "Query is Empty" in run.stderr and query.stat().st_size == 0  # blastn's loss
    shutil.copy(DATA / "queries.fa", query)
    for out in (query, subject):
        code, _, err = _blastn(["-query", query, "-subject", subject, "-out", out, "-outfmt", "6", "-device", "cpu"])
        assert (code, err) == (1, f"BLAST query/options error: {out}: is also an input; give another output\n")
    assert query.read_bytes() == (DATA / "queries.fa").read_bytes()
    assert subject.read_bytes() == (DATA / "db.fa").read_bytes()
    run = subprocess.run([sys.executable, "-m", "gseek", "search", "--task", "megablast", "-x", str(DATA / "v4"),
                          "-q", str(query), "-o", str(query), "--device", "cpu"], capture_output=True, text=True)
    assert run.returncode == 2 and run.stderr.endswith(f"{query}: is also an input; give another output\n")


@needs_blast
@pytest.mark.parametrize("extra", [["-task", "blastn", "-xdrop_ungap", "10"], ["-task", "blastn", "-xdrop_gap", "15"],
                                   ["-task", "blastn", "-xdrop_gap_final", "50", "-num_threads", "2"],
                                   ["-task", "megablast", "-xdrop_gap_final", "10"],
                                   ["-task", "blastn", "-xdrop_gap_final", "10"],
                                   ["-task", "megablast", "-xdrop_ungap", "3", "-num_threads", "2"],
                                   ["-task", "megablast", "-xdrop_ungap", "1"],
                                   ["-task", "blastn", "-gapopen", "4", "-gapextend", "2"],
                                   ["-task", "blastn-short", "-gapopen", "2", "-gapextend", "2"],
                                   ["-task", "dc-megablast", "-xdrop_gap_final", "40"]], ids=lambda a: " ".join(a))
def test_xdrop_gap_costs_threads_equal_blastn(tmp_path, extra):
    """-xdrop_ungap, -xdrop_gap, -xdrop_gap_final, -gapopen/-gapextend, -num_threads on the lambda set
    (tests/data/blast: 20 kb of lambda, 48 divergent queries): every HSP's place, e-value and bit score are
    blastn's; the whole line too but for at most two queries where a gap lies elsewhere at equal score (docs/blast.md,
    q04 and q35). BLAST+'s rules: the trace-back's X-drop is never below the first pass's (megablast
    -xdrop_gap_final 10 changes nothing), the ungapped one is rounded up in raw units (megablast -xdrop_ungap 3).
    (megablast with gap costs other than 0/0: BLAST+'s affine greedy algorithm, not built.)"""
    lam = Path(__file__).parent / "data" / "blast"
    subprocess.run(["makeblastdb", "-in", str(lam / "db.fa"), "-dbtype", "nucl", "-out", str(tmp_path / "lam")],
                   check=True, capture_output=True)
    args = ["-db", str(tmp_path / "lam"), "-query", str(lam / "search_queries.fa"), "-outfmt", "6 std qlen slen",
            "-evalue", "1e-5", *extra]
    want = subprocess.run(["blastn", *args], capture_output=True, text=True, check=True).stdout.splitlines()
    code, out, err = _blastn(args + ["-device", "cpu"])
    got = out.splitlines()
    assert code == 0, err
    place = [0, 1, 6, 7, 8, 9, 10, 11, 12, 13]
    assert [[line.split("\t")[k] for k in place] for line in got] == [[line.split("\t")[k] for k in place] for line in want]
    assert sum(g != w for g, w in zip(got, want)) <= 2


@needs_blast
@pytest.mark.parametrize("outfmt", ["5", "15"])
def test_query_loc_missing_a_query_keeps_its_number(tmp_path, outfmt):
    """A query -query_loc misses is left out, but the others keep their numbers in the file (Query_N), as blastn
    numbers them; the XML's iterations are counted as written (blastn's too)."""
    text = (DATA / "queries.fa").read_text().split(">")[1:]
    (tmp_path / "q.fa").write_text(">short\nACGTACGTAC\n" + "".join(">" + r for r in text[:3]) + ">short2\nACGT\n"
                                   + ">" + text[3])
    args = ["-db", str(DATA / "v4"), "-query", str(tmp_path / "q.fa"), "-query_loc", "20-300", "-outfmt", outfmt,
            "-evalue", "1e-5"]
    _same_as_blastn(args)

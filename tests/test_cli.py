"""The command line: help, version, options, and one-line errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gseek import __version__
from gseek.cli import main

COMMANDS = ["index", "search", "align", "pipeline", "stats", "demo"]


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_version(capsys):
    code, out, _ = run(["--version"], capsys)
    assert code == 0 and out.strip() == f"gseek, version {__version__}"


def test_top_level_help_lists_every_command(capsys):
    code, out, _ = run(["--help"], capsys)
    assert code == 0
    for command in COMMANDS:
        assert f"  {command} " in out
    for option in ("--device", "--threads", "--quiet", "--debug"):
        assert option in out


@pytest.mark.parametrize(
    "command, options",
    [
        ("index", ["--sa-sample", "--wgram", "--output", "--device", "--threads"]),
        ("search", ["--index", "--query", "--task", "--mismatches", "--all", "--max-hits", "--norc", "--nofw",
                    "--no-unal", "--evalue", "--outfmt", "--output"]),
        ("align", ["--all-vs-all", "--query", "--target", "--pairs", "--mode", "--match", "--mismatch",
                   "--gap-open", "--gap-extend", "--matrix", "--min-score", "--min-identity", "--traceback"]),
        ("pipeline", ["--queries", "--index", "--task", "--outdir", "--gpus", "--resume"]),
        ("stats", ["--protein"]),
        ("demo", ["--outdir"]),
    ],
)
def test_each_command_documents_its_options(capsys, command, options):
    code, out, _ = run([command, "--help"], capsys)
    assert code == 0
    for option in options:
        assert option in out, option


@pytest.mark.parametrize("command, issue", [(["search", "-q", "r.fq"], "issue 5"),
                                            (["align", "-i", "x.fa"], "issue 4"), (["pipeline"], "issue 6")])
def test_planned_commands_say_so_in_one_line(capsys, command, issue):
    code, out, err = run(command, capsys)
    assert code == 1
    assert err.count("\n") == 1 and err.startswith("gseek: error: ") and issue in err


def test_bad_option_value_is_a_usage_error(capsys):
    code, _, err = run(["search", "--mismatches", "9"], capsys)
    assert code == 2 and "--mismatches" in err


def test_unknown_device_is_rejected(capsys):
    code, _, err = run(["--device", "tpu", "stats", "x.fa"], capsys)
    assert code == 2 and "tpu" in err


def test_stats_on_fasta_and_fastq(tmp_path, capsys):
    fa = tmp_path / "a.fa"
    fa.write_text(">a\nACGTNacgt\n>b\nAC\n")
    fq = tmp_path / "r.fq"
    fq.write_text("@r\nACGT\n+\nIIII\n")
    code, out, _ = run(["stats", str(fa), str(fq)], capsys)
    assert code == 0
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows[0][:3] == ["file", "format", "records"]
    assert rows[1][1:] == ["fasta", "2", "11", "2", "5.5", "9", "1", "4"]
    assert rows[2][1:] == ["fastq", "1", "4", "4", "4.0", "4", "0", "0"]


def test_malformed_fastq_gives_one_line_with_file_and_line(tmp_path, capsys):
    fq = tmp_path / "bad.fq"
    fq.write_text("@r1\nACGT\n+\nIIII\n@r2\nACGT\n+\nIII\n")
    code, out, err = run(["stats", str(fq)], capsys)
    assert code == 1
    assert err == f"gseek: error: {fq}:8: truncated record: quality length 3 != sequence length 4\n"


def test_debug_shows_the_traceback(tmp_path):
    fq = tmp_path / "bad.fq"
    fq.write_text("@r1\nACGT\n+\nIII\n")
    proc = subprocess.run([sys.executable, "-m", "gseek", "--debug", "stats", str(fq)], capture_output=True, text=True,
                          cwd=tmp_path)
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr and "FastxError" in proc.stderr


def test_missing_file_is_one_line(tmp_path, capsys):
    code, _, err = run(["stats", str(tmp_path / "none.fq")], capsys)
    assert code == 1 and err.strip() == f"gseek: error: {tmp_path / 'none.fq'}: cannot open: No such file or directory"


def test_options_after_the_command(tmp_path, capsys):
    fa = tmp_path / "a.fa"
    fa.write_text(">a\nAC\n")
    code, out, err = run(["stats", "--device", "cpu", "-p", "1", "--quiet", str(fa)], capsys)
    assert code == 0 and err == ""


def test_demo_writes_sam(tmp_path, capsys):
    pysam = pytest.importorskip("pysam")
    code, out, err = run(["--device", "cpu", "demo", "-o", str(tmp_path / "demo")], capsys)
    assert code == 0, err
    assert "backend           cpu" in out
    from gseek.datasets import lambda_truth

    rows = [line.split("\t") for line in lambda_truth().read_text().splitlines()[1:]]
    exact = sum(1 for row in rows if row[4] == "0")
    assert f"exact matches     {exact:,} reads occur exactly in lambda" in out
    sam = tmp_path / "demo" / "lambda_reads.sam"
    with pysam.AlignmentFile(str(sam)) as fh:
        header = fh.header.to_dict()
        records = list(fh)
    assert header["SQ"] == [{"SN": "gi|9626243|ref|NC_001416.1|", "LN": 48502}]
    assert header["PG"][0]["ID"] == "gseek"
    assert header["PG"][0]["CL"] == f"gseek --device cpu demo -o {tmp_path / 'demo'}"
    assert len(records) == 2000 and all(r.is_unmapped for r in records)
    pysam.quickcheck(str(sam))  # samtools quickcheck through pysam; raises on a bad file


def test_index_builds_a_loadable_index(tmp_path, capsys):
    from gseek.index import Index

    ref = tmp_path / "ref.fa"
    ref.write_text(">chr1 one\nACGTACGTNNACGTTTGA\n>chr2\nTTACGTA\n")
    code, out, err = run(["index", str(ref), "--sa-sample", "4", "--wgram", "3"], capsys)
    assert code == 0, err
    assert "contigs 2" in err and "bytes/base" in err and "ref.gseek written" in err
    idx = Index.load(tmp_path / "ref.gseek", device="cpu")
    assert list(idx.contigs.names) == ["chr1", "chr2"]
    assert idx.sa_sample == 4 and idx.wgram == 3
    assert idx.count(["ACGT", "TTTGA", "GTNN"]).tolist() == [4, 1, 0]


def test_index_output_prefix_and_no_wgram(tmp_path, capsys):
    from gseek.index import Index

    ref = tmp_path / "ref.fasta.gz"
    import gzip

    ref.write_bytes(gzip.compress(b">c\nACGTTGCA\n"))
    code, _, err = run(["--quiet", "index", str(ref), "-o", str(tmp_path / "out" / "x"), "--wgram", "0"], capsys)
    assert code == 0 and err == ""
    idx = Index.load(tmp_path / "out" / "x.gseek", device="cpu")
    assert idx.wgram == 0
    assert idx.count("TTGC").tolist() == [1]


def test_index_of_bad_fasta_is_one_line(tmp_path, capsys):
    ref = tmp_path / "bad.fa"
    ref.write_text(">a\nACGT\n>a\nACGT\n")
    code, _, err = run(["index", str(ref)], capsys)
    assert code == 1 and err.count("\n") == 1 and "bad.fa" in err and "duplicate" in err
    assert not (tmp_path / "bad.gseek").exists()

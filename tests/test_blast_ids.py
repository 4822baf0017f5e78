"""Subject names of BLAST+ databases whose deflines hold PDB, patent, Swiss-Prot or several ids, and sets of several
deflines (``makeblastdb -parse_seqids`` of FASTA deflines joined with Ctrl-A, as NCBI's non-redundant databases):
``gseek blastn`` prints them as blastn 2.12 does, in the tabular fields and in ``-outfmt 0`` (and ``-html``), 5 and
15; ``gseek makeblastdb`` of the same FASTA too. The FASTA is made here (the lambda set's subjects, new deflines)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from blastdb_fixtures import DATA, needs_blast  # noqa: E402
from test_blast_plus import _blastn  # noqa: E402

DEFLINES = [
    "pdb|1ABC|A Chain A, some protein",
    "pat|US|5123456|7 Sequence 7 from patent US 5123456",
    "gi|12345|ref|NM_000001.2| a refseq mrna\x01gi|999|gb|AAA11111.1| second defline\x01emb|CAB00001.3| third one",
    "gb|AY123456.1|AY123456 with a locus name",
    "gi|77|emb|X12345.2|ABCD_TEST emb with name",
    "sp|P12345.2|ABC_HUMAN swissprot style",
    "pdb|2XYZ|BB chain BB two-letter",
    "lcl|loc1 local\x01lcl|loc2 second local",
]
FIELDS = "6 qseqid sseqid sacc saccver sallseqid stitle salltitles"


@pytest.fixture
def ids_db(tmp_path):
    """ids.fa (the lambda set's 8 subjects under :data:`DEFLINES`), its queries q.fa, and makeblastdb's databases
    of it with (``ids``) and without (``plain``) -parse_seqids."""
    from gseek.seqio import read_fastx

    db = read_fastx(DATA / "db.fa")
    seqs = [db.sequence(i) for i in range(len(db))]
    (tmp_path / "ids.fa").write_text("".join(f">{h}\n{s[:1500]}\n" for h, s in zip(DEFLINES, seqs)))
    (tmp_path / "q.fa").write_text("".join(f">q{i}\n{s[200:500]}\n" for i, s in enumerate(seqs)))
    for name, extra in (("ids", ["-parse_seqids"]), ("plain", [])):
        subprocess.run(["makeblastdb", "-in", "ids.fa", "-dbtype", "nucl", "-out", name, *extra], check=True,
                       capture_output=True, cwd=tmp_path)
    return tmp_path


def _both(folder: Path, args: list[str], db: str = "ids", gseek_db: str | None = None) -> tuple[str, str]:
    want = subprocess.run(["blastn", "-db", db, *args], capture_output=True, text=True, check=True,
                          cwd=folder).stdout
    cwd = os.getcwd()
    os.chdir(folder)  # the database named as blastn was given it (the XML and JSON print the name)
    try:
        code, got, err = _blastn(["-db", gseek_db or db, *[str(a) for a in args], "-device", "cpu"])
    finally:
        os.chdir(cwd)
    assert code == 0, err
    return want, got


def _undated(text: str) -> list[str]:
    return [line for line in text.splitlines() if "Posted date" not in line]


@needs_blast
@pytest.mark.parametrize("outfmt", [FIELDS, "5", "15", "0", "0 html"])
def test_pdb_patent_and_multi_defline_names_equal_blastn(ids_db, outfmt):
    args = ["-query", ids_db / "q.fa", "-max_hsps", "1", "-outfmt", outfmt.split(" html")[0]]
    if outfmt.endswith("html"):
        args.append("-html")
    want, got = _both(ids_db, args)
    assert _undated(got) == _undated(want)


@needs_blast
def test_without_parse_seqids_equals_blastn(ids_db):
    """Without -parse_seqids a defline's Ctrl-A is a blank of the one title."""
    want, got = _both(ids_db, ["-query", ids_db / "q.fa", "-max_hsps", "1", "-outfmt", FIELDS], db="plain")
    assert got == want


@needs_blast
@pytest.mark.parametrize("parse", [True, False])
def test_gseek_makeblastdb_names_equal_blastn(ids_db, parse):
    """``gseek makeblastdb`` of the same FASTA: the names blastn prints for makeblastdb's database."""
    import io

    from gseek.cli.blast_plus import makeblastdb_main

    extra = ["-parse_seqids"] if parse else []
    assert makeblastdb_main(["-in", str(ids_db / "ids.fa"), "-dbtype", "nucl", "-out", str(ids_db / "g"), *extra],
                            stdout=io.StringIO()) == 0
    want, got = _both(ids_db, ["-query", ids_db / "q.fa", "-max_hsps", "1", "-outfmt", FIELDS],
                      db="ids" if parse else "plain", gseek_db="g")
    assert got == want

"""BLAST+ nucleotide databases read directly (``gseek.index.blastdb``): v4 and v5 volumes, -parse_seqids ids,
multi-volume databases and alias files, searched as blastn 2.12 searches them.

Fixtures (``tests/data/blastdb/``, made by ``make.sh`` with makeblastdb/blastn 2.12): ``v4`` (version 4, no
-parse_seqids), ``v5ps`` (version 5, -parse_seqids; the LMDB files left out, gseek does not read them),
``mv`` (version 4, two volumes by -max_file_sz, ``mv.nal``) and ``both.nal`` (DBLIST of ``v4`` and the
``mv`` alias). ``db.fa`` holds ambiguous bases (N runs, IUPAC letters), a 450-character defline and
ids of several kinds; ``*.blastn.tsv`` are blastn's lines. The tests that run makeblastdb/blastn
themselves skip without them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from blastdb_fixtures import DATA, FIELDS, needs_blast  # noqa: E402 - the blastdb fixture: conftest.py

from gseek.errors import IndexFormatError
from gseek.index import Index
from gseek.index.blastdb import SUBJECTS_FILE, find_blastdb, open_blastdb
from gseek.index.text import ReferenceText
from gseek.seqio import read_fastx

DBS = {"v4": "db.fa", "v5ps": "db.fa", "mv": "many.fa", "both": ("db.fa", "many.fa")}


def _fasta_codes(names):
    names = [names] if isinstance(names, str) else names
    batches = [read_fastx(DATA / n) for n in names]
    codes = np.concatenate([np.minimum(np.asarray(b.codes), 4) for b in batches])
    lengths = np.concatenate([np.diff(np.asarray(b.offsets)) for b in batches])
    return codes, lengths, [t for b in batches for t in b.name_list()]


@pytest.mark.parametrize("db", list(DBS))
def test_converted_text_is_the_fasta(blastdb, db):
    path = open_blastdb(find_blastdb(blastdb / db))
    ref = ReferenceText.from_index(Index.load(path, device="cpu", parts=["text"]))
    codes, lengths, names = _fasta_codes(DBS[db])
    assert np.array_equal(np.diff(ref.contig_offsets), lengths)
    assert np.array_equal(ref.bases(0, ref.n_bases), codes)  # ambiguity runs are N, the rest the bases
    assert ref.db_bases == int(lengths.sum()) and ref.db_sequences == len(lengths)
    first = [n.split()[0] for n in ref.contig_names]
    if db == "v5ps":  # ids as blastn prints sseqid
        assert first[:3] == ["gi|9626243|ref|NC_001416.1|", "ref|NC_000913.3|", "contig_7"]
        assert (path / SUBJECTS_FILE).is_file()
    else:
        assert first == names


def _search(db, out, outfmt=FIELDS, task="megablast", **options):
    from gseek.pipeline import blast_files

    blast_files(db, DATA / "queries.fa", out, task=task, outfmt=outfmt, device="cpu", workers=1, **options)
    return Path(out).read_text()


@pytest.mark.parametrize("db", list(DBS))
def test_search_equals_blastn(blastdb, tmp_path, db):
    got = _search(blastdb / db, tmp_path / "g.tsv")
    assert got == (DATA / f"{db}.blastn.tsv").read_text()


def test_converted_index_is_the_fasta_index(blastdb):
    """The conversion writes the parts ``gseek index --parts text`` writes of the FASTA, bit for bit."""
    built = Index.build(DATA / "db.fa", parts="text", device="cpu")
    conv = Index.load(open_blastdb(find_blastdb(blastdb / "v4")), device="cpu", parts=["text"])
    for part in ("text", "amb_runs", "contig_offsets", "seg_text_start", "seg_ref_start", "seg_contig"):
        assert np.array_equal(conv.arrays[part], built.arrays[part]), part
    # names: the FASTA index keeps each record's id, the database its whole defline (stitle prints it)
    assert [n.split()[0] for n in conv.contigs.names] == list(built.contigs.names)
    assert conv.header["C"] == built.header["C"] and conv.header["stats"] == built.header["stats"]


def test_search_equals_the_fasta_index(blastdb, tmp_path):
    """The database searched gives the lines of its FASTA's gseek index (ids and titles aside, which
    follow -parse_seqids)."""
    idx = Index.build(DATA / "db.fa", parts="text", device="cpu")
    fasta = _search(idx, tmp_path / "f.tsv", outfmt="6 qseqid pident length mismatch gapopen qstart qend sstart "
                                                    "send evalue bitscore slen")
    for db in ("v4", "v5ps"):
        got = _search(blastdb / db, tmp_path / f"{db}.tsv", outfmt="6 qseqid pident length mismatch gapopen qstart qend "
                                                                 "sstart send evalue bitscore slen")
        assert got == fasta


def test_cache_reused_then_renewed(blastdb):
    db = find_blastdb(blastdb / "v4")
    first = open_blastdb(db)
    stamp = (first / "header.json").stat().st_mtime_ns
    assert open_blastdb(find_blastdb(blastdb / "v4")) == first
    assert (first / "header.json").stat().st_mtime_ns == stamp  # not converted again
    os.utime(blastdb / "v4.nsq", ns=(1, 1))  # the database changed: converted again
    again = open_blastdb(find_blastdb(blastdb / "v4"))
    assert (again / "header.json").stat().st_mtime_ns != stamp


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_folder_caches_under_home(blastdb, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    os.chmod(blastdb, 0o555)
    try:
        path = open_blastdb(find_blastdb(blastdb / "v4"))
    finally:
        os.chmod(blastdb, 0o755)
    assert str(path).startswith(str(tmp_path / "cache" / "gseek" / "blastdb"))


def test_blastdb_env(blastdb, monkeypatch):
    monkeypatch.setenv("BLASTDB", str(blastdb))
    monkeypatch.chdir(blastdb.parent)
    assert find_blastdb("v4").volumes == [str(blastdb / "v4")]


def _error(blastdb, name) -> str:
    with pytest.raises(IndexFormatError) as err:
        open_blastdb(find_blastdb(blastdb / name))
    return str(err.value)


def test_bad_databases_one_line_naming_the_file(blastdb):
    nsq = (blastdb / "v4.nsq").read_bytes()
    (blastdb / "v4.nsq").write_bytes(nsq[:1000])
    assert _error(blastdb, "v4") == f"{blastdb}/v4.nsq: truncated or replaced sequence file (1000 bytes; the index says 4237)"
    (blastdb / "v4.nsq").write_bytes(nsq)
    nin = bytearray((blastdb / "v4.nin").read_bytes())
    (blastdb / "v4.nin").write_bytes(bytes(reversed(nin[:4])) + bytes(nin[4:]))
    assert _error(blastdb, "v4") == f"{blastdb}/v4.nin: written in the other byte order (little-endian); BLAST databases " \
                                 "are big-endian: rebuild it with makeblastdb"
    (blastdb / "v4.nin").write_bytes(b"\x00\x00\x00\x06" + bytes(nin[4:]))
    assert _error(blastdb, "v4") == f"{blastdb}/v4.nin: BLAST database format version 6; gseek reads versions 4 and 5"
    (blastdb / "v4.nin").write_bytes(bytes(nin[:4]) + b"\x00\x00\x00\x01" + bytes(nin[8:]))
    assert _error(blastdb, "v4") == f"{blastdb}/v4.nin: a protein BLAST database; gseek searches nucleotide databases"
    (blastdb / "v4.nin").write_bytes(bytes(nin[:70]))
    assert "v4.nin: truncated index file (70 bytes; ends inside the" in _error(blastdb, "v4")
    (blastdb / "v4.nin").write_bytes(bytes(nin))
    nhr = (blastdb / "v4.nhr").read_bytes()
    (blastdb / "v4.nhr").write_bytes(b"\x31" + nhr[1:])
    assert _error(blastdb, "v4") == f"{blastdb}/v4.nhr: record 1: not a Blast-def-line-set (no SEQUENCE at its start)"


def test_protein_and_alias_refusals(blastdb):
    (blastdb / "prot.pin").write_bytes(b"\x00\x00\x00\x04")
    with pytest.raises(IndexFormatError, match="prot.pin: a protein BLAST database"):
        find_blastdb(blastdb / "prot")
    (blastdb / "sub.nal").write_text("TITLE x\nDBLIST v4\nGILIST v4.gil\n")
    with pytest.raises(IndexFormatError, match=r"sub.nal: GILIST \(a subset of the databases listed\) is not supported"):
        find_blastdb(blastdb / "sub")
    (blastdb / "gone.nal").write_text("DBLIST v4 nowhere\n")
    with pytest.raises(IndexFormatError, match=r"nowhere.nin: no such BLAST database volume \(listed in .*gone.nal\)"):
        find_blastdb(blastdb / "gone")
    (blastdb / "loop.nal").write_text("DBLIST loop\n")
    with pytest.raises(IndexFormatError, match="loop.nal: alias files list each other in a loop"):
        find_blastdb(blastdb / "loop")


def test_cli_error_is_one_line(blastdb, tmp_path):
    (blastdb / "v4.nsq").write_bytes(b"\x00")
    run = subprocess.run([sys.executable, "-m", "gseek", "search", "--task", "megablast", "-x", str(blastdb / "v4"), "-q",
                          str(DATA / "queries.fa"), "-o", str(tmp_path / "o.tsv"), "--device", "cpu"],
                         capture_output=True, text=True)
    assert run.returncode != 0
    assert run.stderr.strip().splitlines()[-1].endswith("v4.nsq: truncated or replaced sequence file (1 bytes; the "
                                                        "index says 4237)")
    assert "Traceback" not in run.stderr and not (tmp_path / "o.tsv").exists()


@needs_blast
@pytest.mark.parametrize("version", ["4", "5"])
def test_makeblastdb_databases_equal_blastn(tmp_path, version):
    """Databases made here by makeblastdb (ambiguous bases, long deflines, -parse_seqids, several volumes,
    an alias of two databases) searched by gseek and by blastn: the same lines."""
    run = lambda *a: subprocess.run(a, check=True, capture_output=True, cwd=tmp_path)  # noqa: E731
    run("makeblastdb", "-in", str(DATA / "db.fa"), "-dbtype", "nucl", "-out", "ps", "-parse_seqids",
        "-blastdb_version", version)
    run("makeblastdb", "-in", str(DATA / "many.fa"), "-dbtype", "nucl", "-out", "vols", "-max_file_sz", "4000",
        "-blastdb_version", version)
    (tmp_path / "two.nal").write_text("TITLE two\nDBLIST ps vols\n")
    assert (tmp_path / "vols.01.nin").is_file()
    # (blastn 2.12 itself fails on a hand-written alias of two version-5 databases: "Error pre-fetching
    # sequence data"; makeblastdb's own alias of its volumes, vols.nal, works in both versions)
    for db in ("ps", "vols", "two") if version == "4" else ("ps", "vols"):
        for task in ("megablast", "blastn"):
            # (e <= 1e-5: blastn's chance hits near the cutoff differ: docs/blast.md, known differences)
            want = run("blastn", "-task", task, "-query", str(DATA / "queries.fa"), "-db", db, "-outfmt",
                       FIELDS, "-evalue", "1e-5").stdout.decode()
            assert _search(tmp_path / db, tmp_path / "g.tsv", task=task, evalue=1e-5) == want, (db, task)

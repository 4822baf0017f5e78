"""The one-pass reader of ``.nhr`` deflines (``scan_deflines``, ``volume_subject_ids``) against the
record-by-record reader (``parse_defline_set`` + ``subject_ids``): the same names for every record of
makeblastdb's databases (with and without -parse_seqids, every id kind makeblastdb writes, taxids),
the records it does not read handed to the slow reader, and the same one-line errors."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from blastdb_fixtures import DATA, needs_blast

from gseek.index.blastdb import read_volume
from gseek.index import blastdb_scan
from gseek.index.blastdb_defline import DeflineError, parse_defline_set, subject_ids
from gseek.index.blastdb_scan import R_FAST, scan_deflines, volume_subject_ids

IDS = ["gi|9626243|ref|NC_001416.1|", "ref|NM_000001.2|", "gb|AB000123.1|", "emb|CAA12345.1|", "dbj|BAA1.1|",
       "sp|P12345.2|NAME_HUMAN", "gnl|SRA|SRR123.1", "gnl|DB|42", "lcl|mylocal", "lcl|17", "pdb|1ABC|A",
       "pat|US|5432|7", "tpg|DAA00001.1|", "contig_7", "NC_000913.3", "x"]


def _slow(nhr: bytes, hdr) -> list:
    return [subject_ids(parse_defline_set(nhr[hdr[i]:hdr[i + 1]])) for i in range(len(hdr) - 1)]


def _both(base: str) -> tuple[list, list, int]:
    vol = read_volume(base)
    nhr = open(f"{base}.nhr", "rb").read()
    records = np.zeros((vol.n_seqs, blastdb_scan.RECORD_COLUMNS), np.int64)
    ids = np.zeros((vol.n_seqs, blastdb_scan.MAX_FAST_IDS, blastdb_scan.ID_COLUMNS), np.int64)
    scan_deflines(np.frombuffer(nhr, np.uint8), vol.hdr.astype(np.int64), records, ids, blastdb_scan.TEXTSEQ_TAGS)
    return volume_subject_ids(nhr, vol.hdr), _slow(nhr, vol.hdr.tolist()), int(records[:, R_FAST].sum())


@pytest.mark.parametrize("base", ["v4", "v5ps", "mv.00", "mv.01"])
def test_shipped_databases(base):
    fast, slow, read = _both(str(DATA / base))
    assert fast == slow and read == len(slow)


@needs_blast
@pytest.mark.parametrize("parse", [False, True])
def test_every_id_kind(tmp_path, parse):
    with open(tmp_path / "ids.fa", "w") as fh:
        for k, name in enumerate(IDS):
            fh.write(f">{name} title {k}{' x' * k}\nACGTTGCANNACGT\n")
        fh.write(">notitle\nACGT\n")
    run = ["makeblastdb", "-in", "ids.fa", "-dbtype", "nucl", "-out", "d", "-taxid", "9606"]
    subprocess.run(run + (["-parse_seqids"] if parse else []), check=True, capture_output=True, cwd=tmp_path)
    fast, slow, read = _both(str(tmp_path / "d"))
    assert fast == slow
    assert {s.taxid for s in fast} == {9606}
    # the pass reads every record
    assert read == len(slow)


SET = bytes.fromhex("30803080a0801a0378797a0000a1803080ab80020400" "92e283" + "00" * 10)  # gi|9626243 "xyz"


@pytest.mark.parametrize("record", [
    SET,
    bytes.fromhex("30803080a1803080ab80020400" "92e283" + "00" * 10),  # no title
    SET[:2] + SET[2:-2] * 2 + b"\0\0",  # two deflines (a non-redundant set)
    # a title in pieces
    bytes.fromhex("3080" "3080" "a080" "2480" "1a0178" "1a0179" "0000" "0000" "a1803080ab80020105" + "00" * 10),
])
def test_other_shapes_equal_the_slow_reader(record):
    hdr = np.array([0, len(record)])
    assert volume_subject_ids(record, hdr) == _slow(record, [0, len(record)])


@pytest.mark.parametrize("record", [SET[:-3], SET[:9], b"\x31\x00", bytes.fromhex("30803080a08002010700000000")])
def test_bad_records_name_the_record(record):
    data = SET + record
    hdr = np.array([0, len(SET), len(data)])
    with pytest.raises(DeflineError) as slow:
        parse_defline_set(record) and subject_ids(parse_defline_set(record))
    with pytest.raises(DeflineError, match=r"^record 2: ") as fast:
        volume_subject_ids(data, hdr)
    assert str(fast.value) == f"record 2: {slow.value}"


@needs_blast
def test_sets_of_several_deflines_are_read_by_the_pass(tmp_path):
    """makeblastdb -parse_seqids of deflines joined with Ctrl-A (a non-redundant set: 2, 3 and 4 deflines, one
    without a title, local ids) is read in the pass, the names the slow reader's; a set of 5 is left to it."""
    sets = ["gi|12|ref|NM_000001.2| first\x01gi|99|gb|AAA11111.1| second",
            "lcl|a one\x01lcl|b two\x01emb|CAB00001.3| three",
            "gb|AY1.1| w\x01gb|AY2.1|\x01gb|AY3.1| y\x01gb|AY4.1| z",
            "lcl|p1 a\x01lcl|p2 b\x01lcl|p3 c\x01lcl|p4 d\x01lcl|p5 e"]
    with open(tmp_path / "sets.fa", "w") as fh:
        for k, line in enumerate(sets):
            fh.write(f">{line}\n{'ACGT' * (k + 3)}\n")
    subprocess.run(["makeblastdb", "-in", "sets.fa", "-dbtype", "nucl", "-out", "d", "-parse_seqids"], check=True,
                   capture_output=True, cwd=tmp_path)
    fast, slow, read = _both(str(tmp_path / "d"))
    assert fast == slow and read == len(sets) - 1
    assert [len(s.all_titles) for s in fast] == [2, 3, 4, 5]

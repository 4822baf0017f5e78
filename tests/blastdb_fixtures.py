"""What the BLAST+ database and ``gseek blastn`` tests share: the committed fixtures (made by
``tests/data/blastdb/make.sh`` with makeblastdb 2.12), the field list both compare, and the mark of the tests
that run BLAST+ itself (their writable copy is conftest.py's ``blastdb`` fixture)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "blastdb"
FIELDS = "6 std sseqid sacc stitle salltitles"
needs_blast = pytest.mark.skipif(shutil.which("makeblastdb") is None or shutil.which("blastn") is None,
                                 reason="needs BLAST+ (makeblastdb, blastn) on PATH")


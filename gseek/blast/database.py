"""What ``-x``/``-db`` names: a gseek index, or a BLAST+ nucleotide database read directly (converted and
cached on first use, :mod:`gseek.index.blastdb`).

>>> import tempfile, os
>>> resolve_database(os.path.join(tempfile.mkdtemp(), "none"))
Traceback (most recent call last):
...
gseek.errors.IndexFormatError: .../none: no such gseek index or BLAST database (none.gseek/, none.nin or none.nal)
"""

from __future__ import annotations

import os
from pathlib import Path

from gseek.errors import IndexFormatError
from gseek.index.blastdb import find_blastdb, open_blastdb, read_subject_ids
from gseek.index.blastdb_defline import SubjectId
from gseek.index.format import HEADER_NAME, resolve

__all__ = ["resolve_database"]


def resolve_database(name: str | os.PathLike) -> tuple[Path, list[SubjectId] | None]:
    """The gseek index directory that ``name`` stands for, and the subject names blastn prints for it (None:
    each subject's defline, its first word the id). ``name`` is a gseek index (``X`` or ``X.gseek``) or a
    BLAST+ database (``X.nin``/``X.nal``, also under ``$BLASTDB``), converted once and cached beside it
    (or under ``~/.cache/gseek``)."""
    root = resolve(name)
    if (root / HEADER_NAME).is_file():
        return root, read_subject_ids(root)
    db = find_blastdb(name)
    if db is None:
        if root.is_dir():  # a folder that is no index: the index's own error names what is missing
            return root, None
        base = os.path.basename(os.fspath(name))
        raise IndexFormatError(os.fspath(name), f"no such gseek index or BLAST database ({base}.gseek/, "
                                                f"{base}.nin or {base}.nal)")
    path = open_blastdb(db)
    return path, read_subject_ids(path)

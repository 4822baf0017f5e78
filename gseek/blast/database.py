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

__all__ = ["resolve_database", "posted_date"]


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


def posted_date(header: dict, path: str | os.PathLike | None) -> str:
    """A database's date as blastn's report prints it (``Nov 28, 2026  1:19 PM``): a BLAST+ database's own (its
    first volume's ``.nin``), else when the gseek index at ``path`` was written; ``Unknown`` for one built in
    memory."""
    import time

    for source in (header.get("blastdb") or {}).get("sources", []):
        if str(source[0]).endswith(".nin"):
            try:
                return _nin_date(str(source[0]))
            except (OSError, ValueError):
                break
    try:
        stamp = os.path.getmtime(Path(path) / HEADER_NAME) if path is not None else None
    except OSError:
        stamp = None
    if stamp is None:
        return "Unknown"
    t = time.localtime(stamp)
    return time.strftime("%b %d, %Y ", t) + f"{(t.tm_hour % 12) or 12:2d}:{t.tm_min:02d} " + \
        ("AM" if t.tm_hour < 12 else "PM")


def _nin_date(path: str) -> str:
    """The date string of a ``.nin`` file (after its version, type, [v5: volume], title, [v5: LMDB name])."""
    import struct

    with open(path, "rb") as fh:
        data = fh.read(4096)
    version = struct.unpack(">i", data[:4])[0]
    pos = 8 + (4 if version == 5 else 0)
    for _ in range(2 if version == 5 else 1):  # the title, then v5's LMDB file name
        n = struct.unpack(">i", data[pos:pos + 4])[0]
        pos += 4 + n
    n = struct.unpack(">i", data[pos:pos + 4])[0]
    return data[pos + 4:pos + 4 + n].decode("latin-1").rstrip("\0")

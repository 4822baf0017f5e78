"""SAM/BAM output through pysam/htslib.

:class:`SamWriter` writes the header (``@HD``, one ``@SQ`` per contig, ``@PG``
with the exact command line) and records to a temporary name, and renames it
to the final name when closed without error. A name ending in ``.bam`` gives
BAM. Unmapped reads keep their original orientation (flag 4, ``*`` fields).
"""

from __future__ import annotations

import os
from pathlib import Path

import pysam

from . import __version__
from .seqio import SequenceBatch

__all__ = ["SamWriter", "sam_header"]


def sam_header(contig_names, contig_lengths, *, command: str, backend: str) -> dict:
    """Header dict for pysam: @HD, @SQ per contig, @PG naming gseek, its backend and command."""
    return {
        "HD": {"VN": "1.6", "SO": "unsorted"},
        "SQ": [{"SN": str(n), "LN": int(l)} for n, l in zip(contig_names, contig_lengths)],
        "PG": [{"ID": "gseek", "PN": "gseek", "VN": __version__, "CL": command, "DS": f"backend={backend}"}],
    }


class SamWriter:
    """Context manager writing SAM (or BAM for ``*.bam``) under a temporary name."""

    def __init__(self, path: str | os.PathLike, header: dict) -> None:
        self.path = Path(path)
        self.tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        mode = "wb" if self.path.suffix == ".bam" else "w"
        self._out = pysam.AlignmentFile(str(self.tmp), mode, header=header)
        self.records = 0

    def __enter__(self) -> SamWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._out.close()
        if exc_type is None:
            os.replace(self.tmp, self.path)
        else:
            self.tmp.unlink(missing_ok=True)

    def write_unmapped(self, batch: SequenceBatch) -> None:
        """Write every record of ``batch`` as an unmapped (flag 4) SAM record."""
        header = self._out.header
        for i in range(len(batch)):
            seg = pysam.AlignedSegment(header)
            seg.query_name = batch.name(i)
            seg.flag = 4
            seg.reference_id = -1
            seg.reference_start = -1
            seg.mapping_quality = 0
            seg.next_reference_id = -1
            seg.next_reference_start = -1
            seg.query_sequence = batch.sequence(i)
            if batch.quals is not None:
                seg.query_qualities = pysam.qualitystring_to_array(batch.quality(i))
            self._out.write(seg)
            self.records += 1

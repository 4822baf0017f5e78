"""SAM/BAM output: header, mapped and unmapped records, written atomically.

:class:`SamWriter` writes the header (``@HD``, one ``@SQ`` per contig, ``@PG``
with the exact command line) and records to a temporary name, and renames it
to the final name when closed without error. The name's suffix says the
format (:func:`sam_format`, any case): ``.sam``, ``.bam`` (the SAM text is
converted by htslib through pysam when the writer closes) or ``.sam.gz``
(BGZF-compressed SAM); any other suffix is refused. ``-`` writes SAM to
stdout and special files (``/dev/null``) are written in place. Records are formatted as text straight
from the struct-of-arrays results (:func:`format_mapping`, by the Numba
formatter in :mod:`gseek.output.sam_records`); ``docs/sam.md`` documents fields, tags and
MAPQ.

>>> import os, tempfile
>>> from gseek.seqio import read_fastx
>>> d = tempfile.mkdtemp()
>>> _ = open(os.path.join(d, "r.fq"), "w").write("@r1\\nACGTN\\n+\\nIIII#\\n")
>>> header = sam_header(["chr1"], [100], command="gseek demo", backend="cpu")
>>> with SamWriter(os.path.join(d, "out.sam"), header) as sam:
...     sam.write_unmapped(read_fastx(os.path.join(d, "r.fq")))
>>> print(open(os.path.join(d, "out.sam")).read().splitlines()[-1])
r1	4	*	0	0	*	*	0	0	ACGTN	IIII#
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pysam

from gseek import __version__, ragged
from gseek.alphabet import COMPLEMENT
from gseek.errors import FastxError, GseekError, OutputError
from gseek.seqio import SequenceBatch, open_output
from gseek.seqio.atomic import STDOUT, is_special, open_named, temporary_name

from . import sam_records
from .bgzf import BgzfWriter

if TYPE_CHECKING:  # pragma: no cover
    from gseek.index.text import ReferenceText
    from gseek.mapper import MappingResult

__all__ = ["SamWriter", "sam_header", "format_mapping", "format_unmapped", "sam_format", "check_read_names",
           "SAM_SUFFIXES", "QNAME_MAX"]

_LETTERS = np.frombuffer(b"ACGTN", dtype=np.uint8)

#: Output suffix (matched in any case) -> format written.
SAM_SUFFIXES = {".sam": "sam", ".bam": "bam", ".sam.gz": "sam.gz"}
#: The longest QNAME SAM allows (``[!-?A-~]{1,254}``).
QNAME_MAX = 254


def sam_format(path: str | os.PathLike) -> str:
    """The format an output's name asks for: ``"sam"``, ``"bam"`` or ``"sam.gz"``
    (BGZF-compressed SAM), by its suffix in any case; ``"sam"`` for ``-`` and a
    special file (``/dev/null``, a FIFO) without one of these suffixes.

    Any other name is refused (:class:`~gseek.errors.OutputError` naming it):
    ``.cram`` needs the reference sequence to be written, which is not built
    yet, and a name such as ``out.txt`` would hide the format.

    >>> sam_format("x.sam"), sam_format("x.BAM"), sam_format("x.Sam.gz"), sam_format("-")
    ('sam', 'bam', 'sam.gz', 'sam')
    >>> sam_format("x.cram")
    Traceback (most recent call last):
    ...
    gseek.errors.OutputError: x.cram: CRAM output needs a reference to encode against, not written yet; name ...
    """
    name = Path(path).name.lower()
    for suffix, fmt in SAM_SUFFIXES.items():
        if name.endswith(suffix):
            return fmt
    if os.fspath(path) == STDOUT or is_special(path):
        return "sam"
    accepted = "name the output .sam, .bam or .sam.gz"
    if name.endswith(".cram"):
        raise OutputError(path, f"CRAM output needs a reference to encode against, not written yet; {accepted}")
    raise OutputError(path, f"not a SAM output name; {accepted} (BGZF-compressed SAM), or give - for stdout")


#: Bytes SAM's QNAME may not hold (``[!-?A-~]``: printable ASCII but ``@``).
_QNAME_BAD = np.ones(256, dtype=bool)
_QNAME_BAD[0x21:0x7F] = False
_QNAME_BAD[0x40] = True


def check_read_names(batch: SequenceBatch) -> None:
    """Refuse a read whose name SAM's QNAME cannot hold (``[!-?A-~]{1,254}``: 1 to
    254 printable ASCII characters, no ``@``): :class:`~gseek.errors.FastxError`
    naming the file and the record's line. One pass over the name bytes.

    >>> import os, tempfile
    >>> from gseek.seqio import read_fastx
    >>> path = os.path.join(tempfile.mkdtemp(), "r.fq")
    >>> _ = open(path, "w").write("@ok\\nACGT\\n+\\nIIII\\n@" + "n" * 300 + "\\nACGT\\n+\\nIIII\\n")
    >>> check_read_names(read_fastx(path))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gseek.errors.FastxError: .../r.fq:5: read name of 300 characters; SAM's QNAME holds at most 254
    """
    names = np.asarray(batch.names)
    lengths = np.diff(batch.name_offsets)
    bad_byte = _QNAME_BAD[names]  # one pass over the name bytes
    bad_length = (lengths < 1) | (lengths > QNAME_MAX)
    if not bad_byte.any() and not bad_length.any():
        return
    first_byte = int(np.argmax(bad_byte)) if bad_byte.any() else None
    reads = [int(np.flatnonzero(bad_length)[0])] if bad_length.any() else []
    if first_byte is not None:
        reads.append(int(np.searchsorted(batch.name_offsets, first_byte, side="right")) - 1)
    i = min(reads)
    line = int(batch.lines[i])
    if lengths[i] > QNAME_MAX:
        raise FastxError(batch.path, line, f"read name of {int(lengths[i])} characters; SAM's QNAME holds at most "
                                           f"{QNAME_MAX}")
    if lengths[i] < 1:
        raise FastxError(batch.path, line, "read without a name; SAM's QNAME needs 1 to 254 characters")
    raw = names[batch.name_offsets[i] : batch.name_offsets[i + 1]].tobytes()
    shown = raw.decode("utf-8", "backslashreplace")
    raise FastxError(batch.path, line, f"read name {shown!r} holds a character SAM's QNAME does not allow "
                                       "(printable ASCII other than '@' only)")


def sam_header(contig_names, contig_lengths, *, command: str, backend: str) -> dict:
    """Header dict for pysam: @HD, @SQ per contig, @PG naming gseek, its backend and command."""
    return {
        "HD": {"VN": "1.6", "SO": "unsorted"},
        "SQ": [{"SN": str(n), "LN": int(l)} for n, l in zip(contig_names, contig_lengths)],
        "PG": [{"ID": "gseek", "PN": "gseek", "VN": __version__, "CL": command, "DS": f"backend={backend}"}],
    }


class SamWriter:
    """Context manager writing SAM, BAM or BGZF-compressed SAM (by the name's
    suffix, :func:`sam_format`; SAM to stdout for ``-``), atomically.

    The output is a :func:`~gseek.seqio.open_output`: a regular file is
    written under a temporary name and renamed when complete; ``-`` and
    special files (``/dev/null``, a FIFO) are written in place. BAM: the SAM
    text goes to a scratch file beside the output, converted by htslib when
    the writer closes. Errors name ``path``, never a temporary name.
    """

    def __init__(self, path: str | os.PathLike, header: dict) -> None:
        self.header = pysam.AlignmentHeader.from_dict(header)
        self.records = 0
        self.path = Path(path)
        self.format = sam_format(path)
        self.stdout = os.fspath(path) == STDOUT
        self.bam = self.format == "bam"
        self._target = open_output(path, "path" if self.bam else "wb", compress=False)
        self._bgzf = None
        if self.bam:
            self._dest = self._target.__enter__()
            self._sam = temporary_name(self.path.with_name(self.path.name + ".sam"))
            self._out = open_named(self._sam, self.path)
        else:
            self._out = self._target.__enter__()
            if self.format == "sam.gz":
                self._bgzf = self._out = BgzfWriter(self._out)
        try:
            self._write(_header_bytes(str(self.header)))
        except BaseException:
            self._close(*sys.exc_info())
            raise

    def __enter__(self) -> SamWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._close(exc_type, exc, tb)

    def _close(self, exc_type, exc, tb) -> None:
        if not self.bam:
            if self._bgzf is not None:
                try:
                    if exc_type is None:
                        self._bgzf.close()  # the last block and the end-of-file block
                except BaseException:
                    self._target.__exit__(*sys.exc_info())
                    raise
            self._target.__exit__(exc_type, exc, tb)
            return
        try:
            self._out.close()
            if exc_type is None:
                try:
                    pysam.view("-b", "-o", str(self._dest), str(self._sam), catch_stdout=False)
                except pysam.utils.SamtoolsError as err:
                    text = " ".join(str(err).split())
                    for scratch in (self._dest, self._sam):  # the user's name, never a temporary one
                        text = text.replace(str(scratch), str(self.path))
                    error = GseekError(f"{self.path}: BAM conversion failed: {text}")
                    self._target.__exit__(GseekError, error, None)
                    raise error from None
            self._target.__exit__(exc_type, exc, tb)
        finally:
            self._sam.unlink(missing_ok=True)

    def _write(self, data: str | bytes | np.ndarray) -> None:
        if isinstance(data, str):  # record text: one byte a character (names are latin-1, as read)
            data = data.encode("latin-1")
        self._out.write(memoryview(data))

    def write_text(self, text: str | bytes | np.ndarray, records: int) -> None:
        """Append SAM record lines (each ending in a newline) holding ``records`` records:
        a string, or bytes / a ``uint8`` array (written without a copy)."""
        self._write(text)
        self.records += records

    def write_unmapped(self, batch: SequenceBatch) -> None:
        """Write every record of ``batch`` as an unmapped (flag 4) SAM record
        (a read name SAM cannot hold is refused: :func:`check_read_names`)."""
        check_read_names(batch)
        text = format_unmapped(batch, np.arange(len(batch)))
        self.write_text(text, len(batch))


# --------------------------------------------------------------------------- records

def _header_bytes(text: str) -> bytes:
    """The header as bytes: names latin-1 (byte for byte as read, as in the records),
    the ``@PG`` lines UTF-8 (the command line may hold any character)."""
    return b"".join(line.encode("utf-8") if line.startswith("@PG") else line.encode("latin-1")
                    for line in text.splitlines(keepends=True))


def _joined(texts) -> tuple[np.ndarray, np.ndarray]:
    """Strings as latin-1 bytes + offsets (the ``SequenceBatch.names`` layout)."""
    return ragged.encode_strings(texts, "latin-1")


def _reads(batch: SequenceBatch) -> dict:
    """The read-side arguments of :func:`gseek.sam_records.format_records`."""
    return dict(names=batch.names, name_off=batch.name_offsets, codes=batch.codes, seq_off=batch.offsets,
                quals=batch.quals, letters=_LETTERS, complement=COMPLEMENT)


def _text(buffer: np.ndarray) -> str:
    return str(memoryview(buffer), "latin-1")


def format_unmapped(batch: SequenceBatch, reads: np.ndarray, tags: dict[int, str] | None = None) -> str:
    """Flag-4 records of ``reads`` (original orientation); ``tags[i]`` appended to read i's line.

    SEQ and QUAL are ``*`` for an empty read, QUAL also for FASTA input.
    """
    n = len(batch)
    extra, extra_off = _joined(f"\t{tags[i]}" if i in tags else "" for i in range(n)) if tags else (None, None)
    text, _ = sam_records.format_records(np.asarray(reads), **_reads(batch), hit_off=np.zeros(n + 1, np.int64),
                                     extra=extra, extra_off=extra_off)
    return _text(text)


def format_mapping(result: MappingResult, batch: SequenceBatch, reference: ReferenceText, *, no_unal: bool = False,
                   cigar_eq: bool = False, raw: bool = False, pool: sam_records.BufferPool | None = None,
                   threads: int | None = None) -> tuple[str | np.ndarray, int]:
    """SAM record lines of one mapped batch, reads in input order, and their number.

    Mapped reads: one primary record, then secondary ones (flag 256) for
    ``-k`` / ``--all``; reverse-strand SEQ reverse-complemented and QUAL
    reversed; NM, MD, X0, X1, (best mode) XA and (capped ``--all``) ZH.
    Unmapped reads: flag 4, ``YF:Z:TOO_LONG`` / ``YF:Z:TOO_SHORT`` for reads
    outside the length limits (not searched); none with ``no_unal``. The text
    is built by the Numba formatter (:mod:`gseek.output.sam_records`) with
    ``threads`` Numba threads (None: as set); it is the same for any thread count.
    MD and the ``=``/``X`` CIGAR read the packed ``reference``. ``raw``: the text as a
    ``uint8`` array (what :meth:`SamWriter.write_text` writes without a copy),
    from ``pool`` if given (:class:`gseek.sam_records.BufferPool`; ``pool.put``
    it once written).
    """
    from gseek.mapper import STATUS_SEARCHED, STATUS_TOO_LONG, STATUS_TOO_SHORT

    n = result.n_reads
    tags = {STATUS_TOO_LONG: b"\tYF:Z:TOO_LONG", STATUS_TOO_SHORT: b"\tYF:Z:TOO_SHORT"}  # reads not searched
    status = np.asarray(result.status)
    tag_length = np.zeros(max(tags) + 1, dtype=np.int64)
    tag_length[list(tags)] = [len(t) for t in tags.values()]
    extra_off = ragged.offsets(tag_length[status])
    extra = b"".join(tags[s] for s in status[status != STATUS_SEARCHED].tolist())
    cnames, cname_off = _joined(result.contig_names)
    text, records = sam_records.format_records(
        np.arange(n), **_reads(batch), hit_off=result.hit_offsets,
        extra=np.frombuffer(extra, dtype=np.uint8), extra_off=extra_off,
        no_unal=no_unal, contig=result.contig, pos=result.pos, strand=result.strand,
        mismatches=result.mismatches, secondary=result.secondary, best=result.best, n_best=result.n_best,
        n_second=result.n_second, n_found=result.n_found, mapq=result.mapq,
        capped=result.capped if result.capped.size else np.zeros(n, dtype=bool),
        alt_off=result.alt_offsets, alt_contig=result.alt_contig, alt_pos=result.alt_pos,
        alt_strand=result.alt_strand, alt_mismatches=result.alt_mismatches, cnames=cnames, cname_off=cname_off,
        contig_start=reference.contig_offsets, text=reference.text,
        amb_start=reference.amb_start, amb_end=reference.amb_end, cigar_eq=cigar_eq, threads=threads, pool=pool)
    return (text if raw else _text(text)), records

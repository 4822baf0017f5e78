"""SAM/BAM/CRAM output: header, mapped and unmapped records, read groups, written atomically.

:class:`SamWriter` writes the header (``@HD``, one ``@SQ`` per contig, an
optional ``@RG``, ``@PG`` with the exact command line) and records to a
temporary name, and renames it to the final name when closed without error.
The name's suffix says the format (:func:`sam_format`, any case): ``.sam``,
``.sam.gz`` (BGZF-compressed SAM), ``.bam`` and ``.cram`` (records streamed
into htslib through pysam, :mod:`gseek.output.bam`; coordinate-sorted and
indexed by default); any other suffix is refused. ``-`` writes SAM to stdout
and special files (``/dev/null``) are written in place. Records are
formatted as text straight from the struct-of-arrays results
(:func:`format_mapping`, by the Numba formatter in
:mod:`gseek.output.sam_records`); that text is what every format holds.
``docs/sam.md`` documents fields, tags and MAPQ.

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
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pysam

from gseek import __version__, ragged
from gseek.alphabet import COMPLEMENT
from gseek.errors import FastxError, OptionError, OutputError
from gseek.seqio import SequenceBatch, open_output
from gseek.seqio.atomic import STDOUT, descriptor_of, is_special, read_only_fs

from . import sam_records
from .bam import INDEX_SUFFIX, HtslibWriter, header_bytes
from .bgzf import BgzfWriter

if TYPE_CHECKING:  # pragma: no cover
    from gseek.index.text import ReferenceText
    from gseek.mapper import MappingResult

__all__ = ["SamWriter", "sam_header", "format_mapping", "format_unmapped", "sam_format", "check_sam_output",
           "check_read_names", "check_reference", "remove_made", "read_group", "read_group_line", "SAM_SUFFIXES",
           "SORTED_FORMATS",
           "QNAME_MAX"]

_LETTERS = np.frombuffer(b"ACGTN", dtype=np.uint8)

#: Output suffix (matched in any case) -> format written.
SAM_SUFFIXES = {".sam": "sam", ".bam": "bam", ".sam.gz": "sam.gz", ".cram": "cram"}
#: Formats written coordinate-sorted and indexed unless ``sort=False`` (``--no-sort``).
SORTED_FORMATS = tuple(INDEX_SUFFIX)
#: The longest QNAME SAM allows (``[!-?A-~]{1,254}``).
QNAME_MAX = 254


def sam_format(path: str | os.PathLike) -> str:
    """The format an output's name asks for: ``"sam"``, ``"bam"``, ``"cram"`` or
    ``"sam.gz"`` (BGZF-compressed SAM), by its suffix in any case; ``"sam"`` for
    ``-`` and a special file (``/dev/null``, a FIFO) without one of these suffixes.

    Any other name is refused (:class:`~gseek.errors.OutputError` naming it):
    a name such as ``out.txt`` would hide the format.

    >>> sam_format("x.sam"), sam_format("x.BAM"), sam_format("x.Sam.gz"), sam_format("x.cram"), sam_format("-")
    ('sam', 'bam', 'sam.gz', 'cram', 'sam')
    >>> sam_format("x.txt")
    Traceback (most recent call last):
    ...
    gseek.errors.OutputError: x.txt: not a SAM output name; name the output .sam, .bam, .cram or .sam.gz ...
    """
    name = Path(path).name.lower()
    for suffix, fmt in SAM_SUFFIXES.items():
        if name.endswith(suffix):
            return fmt
    if os.fspath(path) == STDOUT or is_special(path):
        return "sam"
    raise OutputError(path, "not a SAM output name; name the output .sam, .bam, .cram or .sam.gz (BGZF-compressed "
                            "SAM), or give - for stdout")


def check_sam_output(path: str | os.PathLike, *, sort: bool | None = None,
                     reference: str | os.PathLike | None = None) -> tuple[str, bool]:
    """The format of the output ``path`` (:func:`sam_format`) and whether it is
    sorted, checked before any work: returns ``(format, sort)``.

    ``sort`` None: sorted when the format is BAM or CRAM and the output a file;
    ``True`` is refused for any other output, as CRAM without ``reference``
    (:class:`~gseek.errors.OutputError` naming the output).

    >>> check_sam_output("x.bam"), check_sam_output("x.bam", sort=False), check_sam_output("-")
    (('bam', True), ('bam', False), ('sam', False))
    >>> check_sam_output("x.cram")
    Traceback (most recent call last):
    ...
    gseek.errors.OutputError: x.cram: CRAM output is encoded against the reference; give --reference FASTA
    """
    fmt = sam_format(path)
    if fmt == "cram" and reference is None:
        raise OutputError(path, "CRAM output is encoded against the reference; give --reference FASTA")
    special = os.fspath(path) == STDOUT or is_special(path)
    if sort and fmt not in SORTED_FORMATS:
        raise OutputError(path, "--sort applies to .bam and .cram output files (sorting needs the whole file, and "
                                "its index lies beside it)")
    if sort and special:
        what = "standard output" if descriptor_of(path) is not None else "a special file (a device, FIFO or socket)"
        raise OutputError(path, f"--sort needs a regular file, not {what}: sorting needs the whole file, and its "
                                "index lies beside it; give a file name, or --no-sort")
    return fmt, (fmt in SORTED_FORMATS and not special) if sort is None else bool(sort)


def check_reference(reference: str | os.PathLike, contig_names, contig_lengths) -> list[Path]:
    """Refuse a FASTA a CRAM cannot be encoded against: one that htslib cannot
    index, or that lacks a contig of the index or has it at another length
    (:class:`~gseek.errors.OutputError` naming the FASTA, one line: htslib's own
    messages are silenced). htslib needs ``FASTA.fai`` beside it: when missing it is
    written there (as samtools writes it for a CRAM), and its name returned, so that a
    run that fails can remove it (:func:`remove_made`: no debris beside the user's
    FASTA); a FASTA without one in a folder that cannot take one (read-only) is refused.

    >>> import os, tempfile
    >>> fasta = os.path.join(tempfile.mkdtemp(), "ref.fa")
    >>> _ = open(fasta, "w").write(">chr1 first\\nACGTACGT\\n")
    >>> [p.name for p in check_reference(fasta, ["chr1"], [8])]
    ['ref.fa.fai']
    >>> check_reference(fasta, ["chr1", "chr2"], [8, 5])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gseek.errors.OutputError: .../ref.fa: holds no contig 'chr2' of the index; give the FASTA the index was built from
    """
    beside = [Path(os.fspath(reference) + suffix) for suffix in (".fai", ".gzi")]
    before = {p for p in beside if p.exists()}
    if beside[0] not in before and not os.access(beside[0].parent, os.W_OK):
        why = "a read-only file system" if read_only_fs(beside[0].parent) else "a folder it cannot write to"
        raise OutputError(reference, f"has no FASTA index ({beside[0].name}) and htslib would write it beside the "
                                     f"FASTA, on {why}; index it where it can be written (samtools faidx) or "
                                     f"give a copy of the FASTA in a writable folder")
    made = []
    try:
        quiet = pysam.set_verbosity(0)  # htslib's own error lines: the one line below says it
        try:
            with pysam.FastaFile(os.fspath(reference)) as fasta:
                lengths = dict(zip(fasta.references, fasta.lengths))
        finally:
            pysam.set_verbosity(quiet)
            made = [p for p in beside if p not in before and p.exists()]
        for name, length in zip(contig_names, contig_lengths):
            if str(name) not in lengths:
                raise OutputError(reference, f"holds no contig {str(name)!r} of the index; give the FASTA the index "
                                             "was built from")
            if lengths[str(name)] != int(length):
                raise OutputError(reference, f"contig {str(name)!r} has {lengths[str(name)]:,} bases, "
                                             f"{int(length):,} in the index; give the FASTA the index was built from")
    except (OSError, ValueError) as exc:
        remove_made(made)
        if isinstance(exc, OutputError):
            raise
        raise OutputError(reference, f"cannot read it as the CRAM reference (an indexable FASTA, plain or bgzip): "
                                     f"{' '.join(str(exc).split())}") from None
    return made


def remove_made(paths: Iterable[Path]) -> None:
    """Remove the FASTA indexes :func:`check_reference` wrote for a run that failed."""
    for path in paths:
        try:
            os.unlink(path)
        except OSError:
            pass


# --------------------------------------------------------------------------- read groups

#: A header field's tag (SAM 1.6, section 1.3: ``[A-Za-z][A-Za-z0-9]``).
_FIELD_TAG = re.compile(r"[A-Za-z][A-Za-z0-9]")
#: What an @RG value may hold: printable characters and spaces (no tab, no newline).
_FIELD_VALUE = re.compile(r"[ -~\x80-\U0010ffff]+")


def read_group(rg_id: str | None, fields: Iterable[str] = ()) -> dict[str, str] | None:
    """The ``@RG`` line of ``--rg-id ID --rg TAG:VALUE ...`` (bowtie's options), as
    a header dict ``{"ID": ..., TAG: VALUE, ...}``; None without ``rg_id``.

    Raises :class:`~gseek.errors.OptionError` for a field without ``rg_id``,
    one that is not ``TAG:VALUE``, an ``ID`` field (give it as ``rg_id``), a
    tag given twice, or an empty or tab-holding value.

    >>> read_group("lane1", ["SM:sample 1", "PL:ILLUMINA"])
    {'ID': 'lane1', 'SM': 'sample 1', 'PL': 'ILLUMINA'}
    >>> read_group(None, ["SM:x"])
    Traceback (most recent call last):
    ...
    gseek.errors.OptionError: --rg SM:x: give the read group's ID with --rg-id
    """
    fields = list(fields)
    if rg_id is None:
        if fields:
            raise OptionError(f"--rg {fields[0]}: give the read group's ID with --rg-id")
        return None
    group = {"ID": _field_value("--rg-id", "ID", rg_id)}
    for field in fields:
        tag, colon, value = field.partition(":")
        if not colon or not _FIELD_TAG.fullmatch(tag):
            raise OptionError(f"--rg {field}: expected TAG:VALUE with a two-character tag, e.g. SM:sample1")
        if tag == "ID":
            raise OptionError(f"--rg {field}: give the read group's ID with --rg-id")
        if tag in group:
            raise OptionError(f"--rg {field}: {tag} given twice")
        group[tag] = _field_value(f"--rg {field}", tag, value)
    return group


def read_group_line(line: str) -> dict[str, str]:
    """The ``@RG`` line of bwa's ``-R``: ``@RG\\tID:x\\tSM:y``, the tabs written as
    ``\\t`` (two characters, as bwa takes them) or as tabs; as a header dict.

    Raises :class:`~gseek.errors.OptionError` for a line that does not start
    with ``@RG``, has no ``ID``, or a field that is not ``TAG:VALUE``.

    >>> read_group_line(r"@RG\\tID:lane1\\tSM:s1\\tPL:ILLUMINA")
    {'ID': 'lane1', 'SM': 's1', 'PL': 'ILLUMINA'}
    >>> read_group_line(r"@RG\\tSM:s1")
    Traceback (most recent call last):
    ...
    gseek.errors.OptionError: -R '@RG\\\\tSM:s1': the @RG line has no ID field
    """
    shown = f"-R {line!r}"
    parts = line.replace("\\t", "\t").split("\t")
    if parts[0] != "@RG" or len(parts) < 2:
        raise OptionError(f"{shown}: expected an @RG line such as '@RG\\tID:lane1\\tSM:sample1'")
    group: dict[str, str] = {}
    for field in parts[1:]:
        tag, colon, value = field.partition(":")
        if not colon or not _FIELD_TAG.fullmatch(tag):
            raise OptionError(f"{shown}: field {field!r} is not TAG:VALUE with a two-character tag")
        if tag in group:
            raise OptionError(f"{shown}: {tag} given twice")
        group[tag] = _field_value(shown, tag, value)
    if "ID" not in group:
        raise OptionError(f"{shown}: the @RG line has no ID field")
    return {"ID": group.pop("ID"), **group}


def _field_value(shown: str, tag: str, value: str) -> str:
    if not _FIELD_VALUE.fullmatch(value):
        raise OptionError(f"{shown}: {tag} needs a value of printable characters (no tab, not empty)")
    if tag == "ID" and not value.isascii():  # it is every record's RG:Z: tag too
        raise OptionError(f"{shown}: the read group ID must be ASCII (it tags every record, RG:Z:)")
    return value


# --------------------------------------------------------------------------- QNAME

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


def sam_header(contig_names, contig_lengths, *, command: str, backend: str,
               read_group: Mapping[str, str] | Iterable[tuple[str, str]] | None = None) -> dict:
    """Header dict for pysam: @HD, @SQ per contig, @RG when ``read_group`` is given
    (:func:`read_group`: ``ID`` first), @PG naming gseek, its version, backend and
    ``command`` (the user's command line)."""
    header = {
        "HD": {"VN": "1.6", "SO": "unsorted"},
        "SQ": [{"SN": str(n), "LN": int(l)} for n, l in zip(contig_names, contig_lengths)],
    }
    if read_group:
        group = dict(read_group)
        if not group.get("ID"):
            raise OptionError(f"read_group {group}: the @RG line needs an ID (gseek.output.sam.read_group)")
        header["RG"] = [{"ID": group.pop("ID"), **group}]
    header["PG"] = [{"ID": "gseek", "PN": "gseek", "VN": __version__, "CL": command, "DS": f"backend={backend}"}]
    return header


class SamWriter:
    """Context manager writing SAM, BGZF-compressed SAM, BAM or CRAM (by the name's
    suffix, :func:`sam_format`; SAM to stdout for ``-``), atomically.

    The output is a :func:`~gseek.seqio.open_output`: a regular file is
    written under a temporary name and renamed when complete; ``-`` and
    special files (``/dev/null``, a FIFO) are written in place. BAM and CRAM:
    the record text is streamed into htslib (:class:`~gseek.output.bam.HtslibWriter`),
    coordinate-sorted and indexed unless ``sort`` is False
    (:func:`check_sam_output`); ``reference``: the FASTA a CRAM is encoded
    against; ``threads``: htslib's threads; ``compression_level``: zlib's level of a BAM, CRAM or
    ``.sam.gz`` (None: samtools' default, 6). A header with one ``@RG`` line
    (:func:`sam_header`'s ``read_group``) tags every record ``RG:Z:ID``
    (appended to each line as it is written). Errors name ``path``, never a
    temporary name.
    """

    def __init__(self, path: str | os.PathLike, header: dict, *, sort: bool | None = None,
                 compression_level: int | None = None, reference: str | os.PathLike | None = None,
                 threads: int | None = None) -> None:
        self.header = pysam.AlignmentHeader.from_dict(header)
        self.records = 0
        self.path = Path(path)
        self.format, self.sorted = check_sam_output(path, sort=sort, reference=reference)
        self.stdout = os.fspath(path) == STDOUT
        groups = header.get("RG") or []
        #: Appended to every record line: ``\tRG:Z:ID`` of the header's one read group.
        self.line_suffix = np.frombuffer(f"\tRG:Z:{groups[0]['ID']}".encode("ascii"), np.uint8) \
            if len(groups) == 1 else None
        self._bgzf = self._htslib = None
        if self.format in SORTED_FORMATS:
            self._htslib = HtslibWriter(path, self.header, self.format, sort=self.sorted, reference=reference,
                                        threads=threads, level=compression_level)
            return
        self._target = open_output(path, "wb", compress=False)
        self._out = self._target.__enter__()
        if self.format == "sam.gz":
            self._bgzf = self._out = BgzfWriter(self._out) if compression_level is None else \
                BgzfWriter(self._out, int(compression_level))
        try:
            self._write(header_bytes(str(self.header)))
        except BaseException:
            self._close(*sys.exc_info())
            raise

    def __enter__(self) -> SamWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._close(exc_type, exc, tb)

    def _close(self, exc_type, exc, tb) -> None:
        if self._htslib is not None:
            self._htslib.__exit__(exc_type, exc, tb)
            return
        if self._bgzf is not None:
            try:
                if exc_type is None:
                    self._bgzf.close()  # the last block and the end-of-file block
            except BaseException:
                self._target.__exit__(*sys.exc_info())
                raise
        self._target.__exit__(exc_type, exc, tb)

    def _write(self, data: str | bytes | np.ndarray) -> None:
        if isinstance(data, str):  # record text: one byte a character (names are latin-1, as read)
            data = data.encode("latin-1")
        if self._htslib is not None:
            self._htslib.write(data)
        else:
            self._out.write(memoryview(data))

    def write_text(self, text: str | bytes | np.ndarray, records: int) -> None:
        """Append SAM record lines (each ending in a newline) holding ``records`` records:
        a string, or bytes / a ``uint8`` array (written without a copy unless
        the lines take a read group tag)."""
        if self.line_suffix is not None:
            text = _append_to_lines(text, self.line_suffix)
        self._write(text)
        self.records += records

    def write_unmapped(self, batch: SequenceBatch) -> None:
        """Write every record of ``batch`` as an unmapped (flag 4) SAM record
        (a read name SAM cannot hold is refused: :func:`check_read_names`)."""
        check_read_names(batch)
        text = format_unmapped(batch, np.arange(len(batch)))
        self.write_text(text, len(batch))


def _append_to_lines(text: str | bytes | np.ndarray, suffix: np.ndarray) -> np.ndarray:
    """``text`` with ``suffix`` before every newline (one vectorised pass).

    >>> bytes(_append_to_lines(b"a\\nbc\\n", np.frombuffer(b"!?", np.uint8)))
    b'a!?\\nbc!?\\n'
    """
    data = np.frombuffer(text.encode("latin-1") if isinstance(text, str) else memoryview(text).cast("B"), np.uint8)
    ends = np.flatnonzero(data == 10)
    return np.insert(data, np.repeat(ends, suffix.size), np.tile(suffix, ends.size))


# --------------------------------------------------------------------------- records

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

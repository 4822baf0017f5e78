"""BAM and CRAM through htslib (pysam): :class:`HtslibWriter`.

SAM record text (what :mod:`gseek.output.sam_records` formats, the one source
of the records' bytes) is parsed by htslib line by line
(``pysam.AlignedSegment.fromstring``) and written to a BAM or CRAM file by
``pysam.AlignmentFile``: no SAM file is written on the way. With ``sort``,
the records go to an unsorted scratch BAM (zlib level 1) in a folder beside
the output, ``.NAME.sort.tmp-PID``, which ``samtools sort`` (in process,
through pysam) turns into the coordinate-sorted output, then ``samtools
index`` writes its ``.bai`` / ``.crai``; the folder is removed whatever
happens. The output itself is written through
:class:`~gseek.seqio.atomic.open_output`: a temporary name renamed when
complete, a special file (a FIFO) in place. Errors name the output, never a
temporary name.

>>> import os, tempfile, pysam
>>> d = tempfile.mkdtemp()
>>> header = pysam.AlignmentHeader.from_dict({"HD": {"VN": "1.6", "SO": "unsorted"}, "SQ": [{"SN": "c", "LN": 50}]})
>>> with HtslibWriter(os.path.join(d, "x.bam"), header, "bam", sort=True) as bam:
...     _ = bam.write(b"b\\t0\\tc\\t20\\t60\\t4M\\t*\\t0\\t0\\tACGT\\tIIII\\na\\t0\\tc\\t3\\t60\\t4M\\t*\\t0\\t0\\tACGT\\tIIII\\n")
>>> sorted(os.listdir(d))
['x.bam', 'x.bam.bai']
>>> [r.query_name for r in pysam.AlignmentFile(os.path.join(d, "x.bam")).fetch("c", 10, 30)]
['b']
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pysam

from gseek.errors import GseekError
from gseek.seqio.atomic import is_special, named_error, open_output, temporary_name

__all__ = ["INDEX_SUFFIX", "SCRATCH_SUFFIX", "HtslibWriter"]

#: The index samtools writes beside a sorted output, by format.
INDEX_SUFFIX = {"bam": ".bai", "cram": ".crai"}
#: Indexes a former output of the name may have beside it (removed when an unsorted one replaces it).
_OLD_INDEXES = {"bam": (".bai", ".csi"), "cram": (".crai",)}
#: pysam's write mode by format.
_MODE = {"bam": "wb", "cram": "wc"}
#: The scratch folder of a sort is ``.NAME<SCRATCH_SUFFIX>.tmp-PID`` beside the output.
SCRATCH_SUFFIX = ".sort"


class HtslibWriter:
    """Write SAM record text to ``path`` as BAM or CRAM (``fmt``), through htslib.

    Arguments:
        path: the output (a regular file, written under a temporary name and
            renamed when complete; a special file such as a FIFO, in place).
        header: the ``pysam.AlignmentHeader`` written first.
        fmt: ``"bam"`` or ``"cram"``.
        sort: coordinate-sort the records (``samtools sort``) and write the
            index beside the output (``NAME.bai`` / ``NAME.crai``).
        reference: the FASTA a CRAM is encoded against (required for CRAM).
        threads: htslib threads compressing, sorting and indexing (None: all cores).

    Records come through :meth:`write` (whole lines, each ending in a newline).
    Use as a context manager: an exception removes every temporary and
    leaves nothing under the final name. When an unsorted output replaces a
    file of that name, an index the former one had beside it is removed (it
    would describe another file).
    """

    def __init__(self, path: str | os.PathLike, header: pysam.AlignmentHeader, fmt: str, *, sort: bool = False,
                 reference: str | os.PathLike | None = None, threads: int | None = None) -> None:
        if fmt not in _MODE:
            raise ValueError(f"fmt must be 'bam' or 'cram', not {fmt!r}")
        if fmt == "cram" and reference is None:
            raise GseekError(f"{path}: CRAM output needs --reference FASTA (the sequence it is encoded against)")
        self.path = Path(path)
        self.format = fmt
        self.sort = bool(sort)
        self.reference = None if reference is None else os.fspath(reference)
        self.threads = max(1, int(threads or os.cpu_count() or 1))
        self.header = header
        self.records = 0
        self._scratch: Path | None = None
        self._file = None
        self._target = open_output(self.path, "path")
        self._dest = Path(self._target.__enter__())
        try:
            if self.sort:
                if is_special(self.path):
                    raise GseekError(f"{self.path}: a sorted output must be a file (sorting needs all of it, and "
                                     "its index lies beside it)")
                self._scratch = temporary_name(self.path.with_name(self.path.name + SCRATCH_SUFFIX))
                try:
                    self._scratch.mkdir()
                except OSError as exc:
                    raise named_error(exc, self.path) from exc
                # read once by the sort: the fastest compression
                target, mode, options = self._scratch / "unsorted.bam", "wb", [b"level=1"]
            else:
                target, mode, options = self._dest, _MODE[fmt], None
            self._file = self._htslib(lambda: pysam.AlignmentFile(
                os.fspath(target), mode, header=header, threads=self.threads, format_options=options,
                reference_filename=self.reference if mode == "wc" else None))
        except BaseException:
            self._close(*sys.exc_info())
            raise

    def __enter__(self) -> HtslibWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._close(exc_type, exc, tb)

    def write(self, text: bytes | bytearray | memoryview | str) -> int:
        """Write SAM record lines (each ending in a newline); returns the records written."""
        if not isinstance(text, str):
            text = str(memoryview(text).cast("B"), "latin-1")
        lines = text.split("\n")
        if lines[-1]:
            raise ValueError("SAM text must end in a newline")
        parse, header, write = pysam.AlignedSegment.fromstring, self.header, self._file.write
        for n, line in enumerate(lines[:-1]):
            try:
                record = parse(line, header)
            except ValueError as exc:
                shown = line if len(line) <= 60 else line[:57] + "..."
                raise self._failed(f"record {self.records + n + 1} ({shown!r}): {exc}") from None
            try:
                write(record)
            except OSError as exc:
                raise named_error(exc, self.path) from exc
        self.records += len(lines) - 1
        return len(lines) - 1

    # ------------------------------------------------------------------ closing

    def _close(self, exc_type, exc, tb) -> None:
        complete = exc_type is None
        index_tmp = None if self._scratch is None else self._scratch / ("index" + INDEX_SUFFIX[self.format])
        try:
            if self._file is not None:
                file, self._file = self._file, None
                try:
                    self._htslib(file.close)  # the last blocks and the end-of-file block
                except BaseException:
                    complete = False
                    raise
            if complete and self.sort:
                try:
                    self._sort_and_index(index_tmp)
                except BaseException:
                    complete = False
                    raise
        finally:
            try:
                if complete:
                    self._target.__exit__(None, None, None)  # renamed into place
                else:
                    self._target.__exit__(exc_type or GseekError, exc, tb)  # removed
                if complete and index_tmp is not None:
                    final = self.path.with_name(self.path.name + INDEX_SUFFIX[self.format])
                    try:
                        os.replace(index_tmp, final)
                    except OSError as err:
                        raise named_error(err, final) from err
                elif complete and not is_special(self.path):
                    for suffix in _OLD_INDEXES[self.format]:  # an index of a former file of this name
                        self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
            finally:
                if self._scratch is not None:
                    shutil.rmtree(self._scratch, ignore_errors=True)

    def _sort_and_index(self, index_tmp: Path) -> None:
        """``samtools sort`` of the scratch BAM into the output's temporary name, then ``samtools index``."""
        unsorted = self._scratch / "unsorted.bam"
        more = str(self.threads - 1)  # samtools' -@: threads besides the calling one
        args = ["-@", more, "-T", os.fspath(self._scratch / "sort"), "--no-PG", "-O", self.format,
                "-o", os.fspath(self._dest)]
        if self.format == "cram":
            args += ["--reference", self.reference]
        self._samtools(pysam.sort, *args, os.fspath(unsorted))
        unsorted.unlink()
        self._samtools(pysam.index, "-@", more, "-o", os.fspath(index_tmp), os.fspath(self._dest))

    # ------------------------------------------------------------------ errors naming the output

    def _failed(self, why: str) -> GseekError:
        return GseekError(f"{self.path}: {self.format.upper()} conversion failed: {self._shown(why)}")

    def _shown(self, text: str) -> str:
        """``text`` on one line, the output's name in place of any temporary one."""
        text = " ".join(str(text).split())
        names = [self._dest] + ([] if self._scratch is None else [self._scratch])
        for scratch in names:
            text = text.replace(os.fspath(scratch), os.fspath(self.path))
        return text

    def _htslib(self, call):
        """``call()``, an htslib error (OSError, ValueError) as one naming the output."""
        try:
            return call()
        except OSError as exc:
            if exc.errno is not None:
                raise named_error(exc, self.path) from exc
            raise self._failed(str(exc)) from None
        except ValueError as exc:
            raise self._failed(str(exc)) from None

    def _samtools(self, command, *args: str) -> None:
        try:
            command(*args, catch_stdout=False)
        except pysam.utils.SamtoolsError as exc:
            raise self._failed(str(exc)) from None

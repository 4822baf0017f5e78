"""Read mapping as pipeline stages: :class:`MapTask`, and :func:`map_files` / :func:`map_reads` on top.

:class:`MapTask` is read mapping: ``read`` streams FASTA/FASTQ batches
(:class:`~gseek.seqio.FastxReader`), ``prelim`` is :meth:`Mapper.search
<gseek.mapper.Mapper.search>` on one device (one :class:`~gseek.mapper.Mapper`
per device, each with its own copy of the index arrays on that device),
``finalize`` selects what to report (:meth:`Mapper.select
<gseek.mapper.Mapper.select>`) and formats SAM text on a CPU thread
(:func:`gseek.output.sam.format_mapping`), and ``open_output`` is a
:class:`~gseek.output.sam.SamWriter` (temporary name, renamed when complete). The
output of a file is the same bytes for any batch size, queue bounds, worker
and device count: mapping and formatting are per read.

:func:`map_files` runs the engine over one query (a pipeline of one): the
front door of ``gseek search --task map``, and, with ``workers=0``, of
:func:`map_reads`.

>>> import os, tempfile
>>> from gseek.datasets import lambda_genome, lambda_reads
>>> from gseek.index import Index
>>> idx = Index.build(lambda_genome(), wgram=8, device="cpu")
>>> out = os.path.join(tempfile.mkdtemp(), "r.sam")
>>> counts = map_files(idx, lambda_reads(), out, mismatches=2, workers=1)
>>> counts["reads"] == counts["mapped"] + counts["unmapped"], sorted(counts)
(True, ['alignments', 'device', 'mapped', 'reads', 'records', 'too_long', 'too_short', 'unmapped'])
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numba
import numpy as np

from gseek import ragged
from gseek.backend import Backend, get_backend, numba_guard
from gseek.errors import FastxError, GseekWarning, OptionError
from gseek.index import Index
from gseek.index.format import resolve as resolve_index
from gseek.mapper import STATUS_TOO_LONG, STATUS_TOO_SHORT, Mapper, MappingResult, Placements
from gseek.output.sam import SamWriter, check_read_names, format_mapping, sam_format, sam_header
from gseek.output.sam_records import BufferPool
from gseek.seqio import FastxReader, SequenceBatch, looks_phred64, open_output
from gseek.seqio.atomic import check_output, descriptor_of, is_special, write_all

from ..engine import DEFAULT_JOB_BYTES, Chunk, Dispatcher, Job, QueryFile, QueueBounds
from ._base import GPU_JOB_BYTES, LazySink, TaskSpec, batch_nbytes, parse_threads

__all__ = ["MapTask", "map_files", "map_reads", "check_read_options", "READ_DEFAULTS"]

#: The read options of :class:`MapTask` / :func:`map_files` and their defaults
#: (bowtie's ``--phred64``, ``--trim5``, ``--trim3``, ``--skip``, ``--upto``).
READ_DEFAULTS: dict[str, Any] = dict(phred64=False, trim5=0, trim3=0, skip=0, upto=None)


def check_read_options(**options: Any) -> dict[str, Any]:
    """The read options that differ from :data:`READ_DEFAULTS`, checked.

    >>> check_read_options(phred64=False, trim5=3, skip=0, upto=10)
    {'trim5': 3, 'upto': 10}
    >>> check_read_options(upto=0)
    Traceback (most recent call last):
    ...
    gseek.errors.OptionError: upto must be a whole number >= 1 (or None), not 0
    """
    unknown = sorted(set(options) - set(READ_DEFAULTS))
    if unknown:
        raise OptionError(f"unknown read option(s): {', '.join(unknown)}")
    for name in ("trim5", "trim3", "skip"):
        value = options.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise OptionError(f"{name} must be a whole number >= 0, not {value!r}")
    upto = options.get("upto")
    if upto is not None and (isinstance(upto, bool) or not isinstance(upto, (int, np.integer)) or upto < 1):
        raise OptionError(f"upto must be a whole number >= 1 (or None), not {upto!r}")
    if not isinstance(options.get("phred64", False), (bool, np.bool_)):
        raise OptionError(f"phred64 must be True or False, not {options['phred64']!r}")
    return {k: (bool(v) if k == "phred64" else None if v is None else int(v)) for k, v in options.items()
            if v != READ_DEFAULTS[k]}


class _Partial:
    """What prelim hands to finalize: the mapper used, the job's batches, and
    the placements found (of each batch, or of all of them joined: ``joined``)."""

    __slots__ = ("mapper", "batches", "joined", "placements")

    def __init__(self, mapper: Mapper, batches: list[SequenceBatch], joined: SequenceBatch | None,
                 placements: list[Placements]) -> None:
        self.mapper, self.batches, self.joined, self.placements = mapper, batches, joined, placements

    def results(self) -> list[MappingResult]:
        """The batches' results (:meth:`Mapper.select <gseek.mapper.Mapper.select>`, host only)."""
        if self.joined is None:
            return [self.mapper.select(b, p) for b, p in zip(self.batches, self.placements)]
        whole = self.mapper.select(self.joined, self.placements[0])
        results, lo = [], 0
        for b in self.batches:
            results.append(_slice(whole, lo, lo + len(b)))
            lo += len(b)
        return results


class _SamSink(LazySink):
    """One output: a :class:`~gseek.output.sam.SamWriter` opened at the first batch
    (on the writer thread), and the ``--un``/``--al`` read files beside it. The
    index's background check is waited for before the first byte on stdout
    (which cannot be taken back) and before a file is renamed into place; the
    read files are renamed before the SAM. A query whose records were all
    skipped (``skip``) writes a header alone; one without records is an error."""

    def __init__(self, query: QueryFile, header: dict, pool: Any = None, check: Any = None,
                 reads_out: Sequence[str] = (), seen: Any = None) -> None:
        super().__init__(query)
        self.header, self.pool, self.check = header, pool, check
        self.reads_out = list(reads_out)  # un, al: None or a path
        self.read_writers: list[Any] = []
        self.seen = seen

    @property
    def empty_error(self) -> bool:  # type: ignore[override]
        return self.seen is None or not self.seen(self.query)

    def open(self) -> SamWriter:
        if self.check is not None and os.fspath(self.query.output) == "-":
            self.check.result()
        writer = SamWriter(self.query.output, self.header)
        try:
            for path in self.reads_out:
                if path is not None:
                    target = open_output(path)
                    self.read_writers.append((target, target.__enter__()))
        except BaseException:
            self.writer = writer
            self.abort()  # the SAM and the read files opened so far
            raise
        return writer

    def put(self, data: tuple[Any, ...]) -> int:
        text, records, reads, *selected = data
        self.writer.write_text(text, records)
        if self.pool is not None and isinstance(text, np.ndarray):
            self.pool.put(text)  # written: the buffer can hold the next batch
        chosen = [c for c, path in zip(selected, self.reads_out) if path is not None]
        for (_, handle), text_of_reads in zip(self.read_writers, chosen):
            write_all(handle, text_of_reads)
        return reads

    def before_commit(self) -> None:
        if self.check is not None:
            self.check.result()  # a corrupted index part: fatal, nothing is renamed into place

    def commit(self) -> None:
        if self.reads_out and self.writer is None and not self.empty_error:
            self.writer = self.open()  # every output of a query whose reads were all skipped
        if self.read_writers:
            self.before_commit()
            while self.read_writers:  # an error: abort() ends the others and the SAM
                self.read_writers.pop(0)[0].__exit__(None, None, None)
        super().commit()

    def abort(self) -> None:
        writers, self.read_writers = self.read_writers, []
        try:
            super().abort()
        finally:
            for target, _ in writers:
                try:
                    target.__exit__(RuntimeError, None, None)
                except Exception:  # noqa: BLE001 - the first error is the one to report
                    pass


class MapTask:
    """Complete k-mismatch read mapping as pipeline stages (SAM/BAM out).

    Arguments:
        index: an :class:`~gseek.index.Index` or the path of a saved one
            (a path makes the task's :attr:`spec` picklable).
        mismatches: ``k`` (as :class:`~gseek.mapper.Mapper`).
        devices: one backend (or device name: ``"gpu:1"``, ``"cpu"``) per
            prelim worker; each gets its own :class:`~gseek.mapper.Mapper`
            and its own copy of the index arrays on that device. Default:
            ``device``, as :func:`map_reads` chooses it.
        device, threads: as :func:`map_reads`.
        command: SAM ``@PG CL``.
        no_unal, cigar_eq, phred64, trim5, trim3, skip, upto, un, al: as
            :func:`map_files`.
        **mapper_options: the other :class:`~gseek.mapper.Mapper` options.

    The SAM header names the first device's backend (``@PG DS``). The read
    options (``phred64``, ``trim5``, ``trim3``, ``skip``, ``upto``) apply
    to each query (a query's files read as one stream); ``un``/``al`` name
    one file each, for a task that maps one query (:func:`map_files`).
    """

    name = "map"
    output_suffix = ".sam"

    def __init__(
        self,
        index: Index | str | os.PathLike,
        mismatches: int = 2,
        *,
        devices: Sequence[str | Backend] | None = None,
        device: str | Backend | None = None,
        threads: int | None = None,
        command: str = "gseek",
        no_unal: bool = False,
        cigar_eq: bool = False,
        phred64: bool = False,
        trim5: int = 0,
        trim3: int = 0,
        skip: int = 0,
        upto: int | None = None,
        un: str | os.PathLike | None = None,
        al: str | os.PathLike | None = None,
        **mapper_options: Any,
    ) -> None:
        if devices is not None and not devices:
            raise OptionError("devices: give at least one device")
        reads = check_read_options(phred64=phred64, trim5=trim5, trim3=trim3, skip=skip, upto=upto)
        outs = {k: os.fspath(v) for k, v in dict(un=un, al=al).items() if v is not None}
        backends = None if devices is None else [get_backend(d, threads) for d in devices]
        #: The SHA-256 check of an index loaded here runs beside the work and
        #: is waited for before an output is renamed into place.
        self.index_check = None
        source = index.path if isinstance(index, Index) else index
        #: What rebuilds this task on another process (None for an index that was never saved).
        self.spec = None if source is None else TaskSpec.of(
            "map", source, dict(mismatches=int(mismatches), command=command, no_unal=no_unal, cigar_eq=cigar_eq,
                                **reads, **outs, **mapper_options), devices, threads)
        if not isinstance(index, Index):
            first = backends[0] if backends else (device or "auto")
            index = Index.load(index, device=first, threads=threads, verify=False)  # every part present
            self.index_check = index.check_in_background()
            device = None
        self.index = index
        if backends is None:
            backends = [index.backend if device is None else get_backend(device, threads)]
        self.mappers = [Mapper(index, mismatches, device=b, **mapper_options) for b in backends]
        gpu = any(m.backend.name == "gpu" for m in self.mappers)
        #: Input per job when the caller sets none: a GPU launch pays off on bigger batches.
        self.job_bytes = GPU_JOB_BYTES if gpu else DEFAULT_JOB_BYTES
        #: Threads that parse one query file (``FastxReader(threads=)``).
        self.parse_threads = parse_threads(threads)
        #: SAM text buffers, back from the writer once written (no fresh pages a batch).
        self.pool = BufferPool(keep=16)
        self.no_unal = bool(no_unal)
        self.cigar_eq = bool(cigar_eq)
        self.command = command
        #: The read options given (those left at their defaults are left out: same fingerprint as before them).
        self.read_options = dict(READ_DEFAULTS, **reads)
        self.un, self.al = outs.get("un"), outs.get("al")
        #: Queries read so far -> whether they held a record (skipped or not), for the empty-file rule.
        self._had_records: dict[QueryFile, bool] = {}
        self.options = dict(mismatches=int(mismatches), no_unal=self.no_unal, cigar_eq=self.cigar_eq,
                            **{k: v for k, v in sorted(mapper_options.items())}, **reads)
        self.header = sam_header(index.contigs.names, index.contigs.lengths, command=command,
                                 backend=self.mappers[0].backend.describe())

    def __repr__(self) -> str:
        return f"MapTask({self.mappers[0]!r}, devices={len(self.mappers)})"

    # ------------------------------------------------------------------ identity (for --resume)

    def fingerprint(self) -> str:
        """Hash of everything that changes the records: task, options, index.

        Not the command line (``@PG CL``) nor the device (results are
        identical on every backend).
        """
        index_id = json.dumps(self.index.header, sort_keys=True, default=str)
        text = json.dumps(dict(task=self.name, options=self.options, index=index_id), sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    # ------------------------------------------------------------------ stages

    @staticmethod
    def check_output_name(path: str | os.PathLike) -> None:
        """Refuse an output name whose suffix is no SAM format gseek writes (:func:`~gseek.output.sam.sam_format`)."""
        sam_format(path)

    def read(self, query: QueryFile, chunk_bytes: int) -> Iterator[SequenceBatch]:
        """Batches of the query's files, in order, with the read options
        applied: ``skip`` and ``upto`` count the reads of the query's files as
        one stream, ``trim5``/``trim3`` trim what is left. A read name SAM
        cannot hold fails the file here, before its batch is mapped or any of
        its SAM written (:func:`~gseek.output.sam.check_read_names`). The first
        batch of each FASTQ file read as Phred+33 whose qualities look
        Phred+64 (:func:`~gseek.seqio.looks_phred64`) gives a
        :class:`~gseek.errors.GseekWarning`."""
        o = self.read_options
        skip, left = o["skip"], o["upto"]
        keep_raw = self.un is not None or self.al is not None
        self._had_records[query] = False
        for path in query.paths:
            # with upto, one thread parses, each batch stopping at the last read wanted (no error past it is seen)
            source = FastxReader(path, chunk_bytes=chunk_bytes, threads=self.parse_threads if left is None else None,
                                 phred=64 if o["phred64"] else 33, keep_raw=keep_raw)
            reader = iter(source)
            try:
                for i, batch in enumerate(_batches(source, reader, lambda: skip + left if left is not None else None)):
                    self._had_records[query] = True
                    if i == 0 and not o["phred64"] and looks_phred64(batch):
                        warnings.warn(GseekWarning(
                            f"{path}: qualities look Phred+64 (none below '@', some above 'J' in the first "
                            f"{len(batch):,} reads); give --phred64 (phred64=True) if they are"), stacklevel=2)
                    if skip:
                        n = min(skip, len(batch))
                        skip -= n
                        batch = batch[n:]
                        if not len(batch):
                            continue
                    if left is not None:
                        batch = batch[:left]
                        left -= len(batch)
                    batch = batch.trimmed(o["trim5"], o["trim3"])
                    check_read_names(batch)
                    yield batch
                    if left == 0:
                        return  # -u/--upto: the rest is not read
            finally:
                reader.close()  # type: ignore[attr-defined]

    def prelims(self) -> list[Any]:
        """One prelim callable per device."""
        return [functools.partial(self._prelim, m) for m in self.mappers]

    def _prelim(self, mapper: Mapper, job: Job) -> _Partial:
        batches = job.payloads
        with numba_guard(mapper.backend.name == "cpu"):
            if len(batches) > 1 and len({(b.format, b.alphabet) for b in batches}) == 1:
                joined = SequenceBatch.concat(batches)  # one launch for the small batches of a job
                return _Partial(mapper, batches, joined, [mapper.search(joined)])
            return _Partial(mapper, batches, None, [mapper.search(b) for b in batches])

    def finalize(self, partial: _Partial) -> list[Chunk]:
        """SAM text of every batch of a job, with its counts."""
        chunks = []
        threads = getattr(partial.mapper.backend, "threads", None)
        with numba_guard(True):
            if threads is not None:  # Numba's thread count is per calling thread
                numba.set_num_threads(threads)
            results = partial.results()
        for batch, result in zip(partial.batches, results):
            with numba_guard(True):
                text, records = format_mapping(result, batch, partial.mapper.reference, no_unal=self.no_unal,
                                               cigar_eq=self.cigar_eq, raw=True, pool=self.pool, threads=threads)
            aligned = result.best >= 0
            mapped = int(aligned.sum())
            counts = dict(records=len(batch), hits=len(result), mapped=mapped,
                          too_long=int((result.status == STATUS_TOO_LONG).sum()),
                          too_short=int((result.status == STATUS_TOO_SHORT).sum()), sam_records=records)
            data: tuple[Any, ...] = (text, records, len(batch))
            if self.un is not None or self.al is not None:  # the reads as given, not trimmed
                data += tuple(ragged.gather(batch.raw, batch.raw_offsets, np.flatnonzero(chosen))[0]
                              for chosen in (~aligned, aligned))
            chunks.append(Chunk(data, counts))
        return chunks

    def open_output(self, query: QueryFile) -> _SamSink:
        return _SamSink(query, self.header, self.pool, self.index_check,
                        reads_out=(self.un, self.al) if self.un is not None or self.al is not None else (),
                        seen=self._had_records.get)

    def dispatcher(self, **options: Any) -> Dispatcher:
        """A :class:`~gseek.pipeline.engine.Dispatcher` running this task's stages
        (``job_bytes`` default: :attr:`job_bytes`)."""
        if options.get("job_bytes") is None:
            options["job_bytes"] = self.job_bytes
        # GPU kernels load while the first batch is read; the CPU twins need no warm-up
        # (and a parallel Numba call beside the others would need the lock)
        options.setdefault("setup", [m.warm_up if m.backend.name == "gpu" else None for m in self.mappers])
        return Dispatcher(self.read, self.prelims(), self.finalize, self.open_output, size=batch_nbytes,
                          combine=True, file_errors=(FastxError, OSError), **options)


def _batches(source: FastxReader, reader: Iterator[SequenceBatch], wanted: Any) -> Iterator[SequenceBatch]:
    """The batches of ``reader``, each parsed with at most ``wanted()`` records
    (None: ``source``'s own cap) -- the reads still to skip and map."""
    cap = source.max_records
    while True:
        n = wanted()
        source.max_records = cap if n is None else max(1, min(cap, n))
        batch = next(reader, None)
        if batch is None:
            return
        yield batch


def _slice(r: MappingResult, lo: int, hi: int) -> MappingResult:
    """Reads ``lo:hi`` of a result, as if they had been mapped alone."""
    h0, h1 = int(r.hit_offsets[lo]), int(r.hit_offsets[hi])
    a0, a1 = int(r.alt_offsets[lo]), int(r.alt_offsets[hi])
    return MappingResult(
        names=r.names[lo:hi], contig_names=r.contig_names, read=r.read[h0:h1] - lo, contig=r.contig[h0:h1],
        pos=r.pos[h0:h1], strand=r.strand[h0:h1], mismatches=r.mismatches[h0:h1], secondary=r.secondary[h0:h1],
        hit_offsets=r.hit_offsets[lo : hi + 1] - h0, best=r.best[lo:hi], second=r.second[lo:hi],
        n_best=r.n_best[lo:hi], n_second=r.n_second[lo:hi], n_found=r.n_found[lo:hi], mapq=r.mapq[lo:hi],
        status=r.status[lo:hi], alt_offsets=r.alt_offsets[lo : hi + 1] - a0, alt_contig=r.alt_contig[a0:a1],
        alt_pos=r.alt_pos[a0:a1], alt_strand=r.alt_strand[a0:a1], alt_mismatches=r.alt_mismatches[a0:a1],
        capped=r.capped[lo:hi] if r.capped.size else np.zeros(hi - lo, dtype=bool),
    )


def map_files(
    index: Index | str | os.PathLike,
    reads: str | os.PathLike | list[str | os.PathLike],
    output: str | os.PathLike,
    *,
    mismatches: int = 2,
    command: str = "gseek",
    threads: int | None = None,
    no_unal: bool = False,
    cigar_eq: bool = False,
    phred64: bool = False,
    trim5: int = 0,
    trim3: int = 0,
    skip: int = 0,
    upto: int | None = None,
    un: str | os.PathLike | None = None,
    al: str | os.PathLike | None = None,
    device: str | Backend | None = None,
    devices: Sequence[str | Backend] | None = None,
    chunk_bytes: int | None = None,
    workers: int = 2,
    bounds: QueueBounds | None = None,
    **mapper_options: Any,
) -> dict[str, int]:
    """Map FASTA/FASTQ file(s) to SAM/BAM through the pipeline engine, with ``workers`` finalize threads.

    :func:`map_reads` is this with ``workers=0``: same arguments, output and
    counts. Several read files go to one output, in order. Bad input raises
    (as ``map_reads``) instead of being recorded. ``workers`` finalize
    threads format SAM while the device maps the next batch (0: no threads).
    The output is checked before anything is loaded
    (:func:`~gseek.seqio.atomic.check_output`: not a read file, not inside
    the index, a folder that takes it; :func:`~gseek.output.sam.sam_format`).

    Arguments:
        index: an :class:`~gseek.index.Index`, or the path of a saved one
            (loaded here; its SHA-256 check runs beside the mapping and is
            waited for before the output is renamed into place).
        reads: a FASTA/FASTQ file (gzip ok, ``-`` for stdin) or a list of them.
        output: the SAM file, BAM for ``*.bam``, ``-`` for stdout; written
            under a temporary name and renamed when complete.
        mismatches: ``k``, as :class:`~gseek.mapper.Mapper`.
        command: SAM ``@PG CL``.
        threads: CPU threads of a backend built here (and of its SAM
            formatting), and of parsing.
        no_unal: write no record for unmapped reads.
        cigar_eq: ``=``/``X`` CIGAR operations instead of ``M``.
        phred64: FASTQ qualities are Phred+64 (``'@'``..``'~'``), converted
            to Phred+33 as read; a quality below ``'@'`` is an error at its
            line. Without it, qualities are Phred+33 (``'!'``..``'~'``) and a
            file whose first batch looks Phred+64 gives a
            :class:`~gseek.errors.GseekWarning`.
        trim5, trim3: bases (and qualities) trimmed from the 5' / 3' end of
            each read before mapping; SAM holds the trimmed read (bowtie's
            ``--trim5``/``--trim3``).
        skip: the first ``skip`` reads (of all ``reads`` files, in order)
            are neither mapped nor written (bowtie's ``--skip``).
        upto: map at most this many reads after the skipped ones; the rest
            of the input is not read (bowtie's ``--upto``).
        un, al: write the reads that failed to align / aligned (at least one
            placement reported) to this file, each record as the input gives
            it (FASTA or FASTQ text, untrimmed, original qualities); gzip for
            ``*.gz``; written under a temporary name, renamed when complete.
        device: backend of the mapper (default: the index's; for a path: ``auto``).
        devices: one backend or device name per prelim worker, each with its
            own :class:`~gseek.mapper.Mapper` and index copy (overrides ``device``).
        chunk_bytes: read input per job (default 16 MiB, 64 MiB on a GPU).
        workers: finalize threads (0: every stage in the caller's thread).
        bounds: the engine's :class:`~gseek.pipeline.engine.QueueBounds`.
        **mapper_options: the other :class:`~gseek.mapper.Mapper` options
            (``max_alignments``, ``report_all``, ``max_hits``, ``norc``,
            ``nofw``, ``xa_limit``, ``min_piece``).

    Returns counts: ``reads`` (mapped or tried: after ``skip``/``upto``),
    ``mapped``, ``unmapped`` (with ``too_long`` and ``too_short``: reads not
    searched), ``records`` (SAM records written), ``alignments`` (SAM records
    of placements), and ``device``, the backend that mapped
    (:meth:`~gseek.Backend.describe`).

    >>> import os, tempfile
    >>> from gseek.datasets import lambda_genome, lambda_reads
    >>> idx = Index.build(lambda_genome(), wgram=8, device="cpu")
    >>> counts = map_files(idx, lambda_reads(), os.path.join(tempfile.mkdtemp(), "lambda.sam"), mismatches=2, workers=1)
    >>> {k: v for k, v in counts.items() if k != "device"}
    {'reads': 2000, 'mapped': 1459, 'unmapped': 541, 'too_long': 0, 'too_short': 0, 'records': 2000, 'alignments': 1459}
    >>> counts["device"].startswith("cpu (numba")
    True
    """
    files = [reads] if isinstance(reads, (str, os.PathLike)) else list(reads)
    if not files:
        raise OptionError("no read file given")
    index_dir = index.path if isinstance(index, Index) else resolve_index(index)
    within = [] if index_dir is None else [index_dir]
    check_output(output, files, within=within)
    sam_format(output)
    named = {"output": output, "un": un, "al": al}
    for name, path in named.items():
        if path is not None and name != "output":
            check_output(path, files, within=within)
    _distinct_outputs({k: v for k, v in named.items() if v is not None})
    task = MapTask(index, mismatches, devices=devices, device=device, threads=threads, command=command,
                   no_unal=no_unal, cigar_eq=cigar_eq, phred64=phred64, trim5=trim5, trim3=trim3, skip=skip,
                   upto=upto, un=un, al=al, **mapper_options)
    query = QueryFile(tuple(os.fspath(f) for f in files), os.fspath(output))
    dispatcher = task.dispatcher(workers=workers, job_bytes=chunk_bytes or task.job_bytes, bounds=bounds)
    result, = dispatcher.run([query])
    if result.error is not None:
        raise result.error
    c = result.counts
    return dict(reads=c.get("records", 0), mapped=c.get("mapped", 0),
                unmapped=c.get("records", 0) - c.get("mapped", 0), too_long=c.get("too_long", 0),
                too_short=c.get("too_short", 0), records=c.get("sam_records", 0), alignments=c.get("hits", 0),
                device=task.mappers[0].backend.describe())


def _distinct_outputs(outputs: dict[str, str | os.PathLike]) -> None:
    """Refuse two outputs of one run under one name (the same file, or both standard output)."""
    seen: dict[Any, str] = {}
    for name, path in outputs.items():
        p = os.fspath(path)
        if p == "-" or descriptor_of(p) == 1:
            key: Any = "-"
        elif is_special(p):
            continue  # /dev/null and the like take any number of writers
        else:
            key = os.path.realpath(p)
        if key in seen:
            raise OptionError(f"{p}: both the {seen[key]} and the {name} output")
        seen[key] = name


def map_reads(index: Index | str | os.PathLike, reads: str | os.PathLike | list[str | os.PathLike],
              output: str | os.PathLike, **options: Any) -> dict[str, int]:
    """Map FASTA/FASTQ file(s) (gzip ok, ``-`` for stdin) and write SAM, or BAM for ``*.bam``, ``-`` for stdout.

    :func:`map_files` with every stage in the caller's thread (``workers=0``):
    the same stages, output and counts as ``gseek search``. Several read files
    go to one output, in order, written under a temporary name and renamed
    when complete. Returns counts: ``reads``, ``mapped``, ``unmapped`` (with
    ``too_long`` and ``too_short``: reads not searched), ``records``,
    ``alignments``, ``device``.

    Arguments:
        index: an :class:`~gseek.index.Index` or the path of a saved one.
        reads: a FASTA/FASTQ file or a list of them.
        output: the SAM (or ``*.bam``) file, ``-`` for stdout.
        **options: those of :func:`map_files` but ``workers`` (``mismatches``,
            ``command`` for SAM ``@PG CL``, ``no_unal``, ``cigar_eq``,
            ``phred64``, ``trim5``, ``trim3``, ``skip``, ``upto``, ``un``,
            ``al``, ``chunk_bytes``, ``threads``, ``device``, ``devices``,
            ``bounds``)
            and the :class:`~gseek.mapper.Mapper` options.

    >>> import os, tempfile
    >>> from gseek import read_fastx, write_fastq
    >>> from gseek.datasets import lambda_genome
    >>> genome = read_fastx(lambda_genome()).sequence(0)
    >>> d = tempfile.mkdtemp()
    >>> _ = write_fastq(os.path.join(d, "reads.fq"), [("r1", genome[1000:1030], "I" * 30), ("r2", "ACGT", "IIII")])
    >>> idx = Index.build(lambda_genome(), wgram=8, device="cpu")
    >>> map_reads(idx, os.path.join(d, "reads.fq"), os.path.join(d, "out.sam"), mismatches=1)  # doctest: +ELLIPSIS
    {'reads': 2, 'mapped': 1, 'unmapped': 1, 'too_long': 0, 'too_short': 1, 'records': 2, 'alignments': 1, 'device': 'cpu (numba, ...)'}
    >>> for line in open(os.path.join(d, "out.sam")):
    ...     if not line.startswith("@"):
    ...         print(line.split("\\t")[:6])
    ['r1', '0', 'gi|9626243|ref|NC_001416.1|', '1001', '60', '30M']
    ['r2', '4', '*', '0', '0', '*']
    """
    return map_files(index, reads, output, workers=0, **options)

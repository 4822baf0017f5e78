"""Read mapping as pipeline stages: :class:`MapTask` (:func:`gseek.pipeline.map_files` / ``map_reads`` on top).

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

:func:`~gseek.pipeline.front.map_files` runs the engine over one query (a pipeline of one): the
front door of ``gseek search --task map``, and, with ``workers=0``, of
:func:`~gseek.pipeline.front.map_reads`.

>>> import os, tempfile
>>> from gseek.pipeline import map_files
>>> from gseek.datasets import lambda_genome, lambda_reads
>>> from gseek.index import Index
>>> idx = Index.build(lambda_genome(), wgram=8, device="cpu")
>>> out = os.path.join(tempfile.mkdtemp(), "r.sam")
>>> counts = map_files(idx, lambda_reads(), out, mismatches=2, workers=1)
>>> counts["reads"] == counts["mapped"] + counts["unmapped"], sorted(counts)
(True, ['alignments', 'device', 'mapped', 'reads', 'records', 'too_long', 'too_short', 'unmapped'])
"""

from __future__ import annotations

import errno
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
from gseek.mapper import STATUS_TOO_LONG, STATUS_TOO_SHORT, Mapper, MappingResult, Placements
from gseek.mapper.pairs import select_pairs
from gseek.options import MapOptions, PairOptions, ReadOptions, SamOptions
from gseek.output.sam import (SamWriter, check_read_names, check_reference, check_sam_output, format_mapping,
                              sam_header)
from gseek.output.sam_pairs import format_pairs
from gseek.output.sam_records import BufferPool
from gseek.seqio import FastxReader, SequenceBatch, looks_phred64, open_output
from gseek.seqio.pairs import PairedBatch, iter_interleaved, iter_pairs
from gseek.seqio.atomic import is_special, write_all

from ..engine import DEFAULT_JOB_BYTES, Chunk, Dispatcher, Job, QueryFile
from ._base import GPU_JOB_BYTES, LazySink, TaskSpec, batch_nbytes, parse_threads

__all__ = ["MapTask", "map_values", "VALUE_KEYWORDS"]

#: Each options value of a mapping run and the loose keywords that make it (:func:`map_values`).
VALUE_KEYWORDS: dict[str, type] = {
    **{name: MapOptions for name in MapOptions.field_names()},
    **{name: ReadOptions for name in ReadOptions.field_names()},
    **{name: SamOptions for name in SamOptions.field_names()},
    **{name: PairOptions for name in PairOptions.field_names()},
}


def map_values(options: MapOptions | None = None, read_options: ReadOptions | None = None,
               sam_options: SamOptions | None = None, pair_options: PairOptions | None = None,
               **keywords: Any) -> tuple[MapOptions, ReadOptions, SamOptions, PairOptions]:
    """A mapping run's options as values: each value given whole, or made (and checked) once here
    from the loose keywords of its fields; a name of no value, or a value given both ways, raises.

    >>> opts, reads, sam, pairs = map_values(mismatches=3, trim5=2, no_unal=True)
    >>> opts, reads, sam, pairs
    (MapOptions(mismatches=3), ReadOptions(trim5=2), SamOptions(no_unal=True), PairOptions())
    >>> map_values(options=opts, mismatches=1)
    Traceback (most recent call last):
    ...
    gseek.errors.OptionError: mismatches: give the MapOptions value or its fields as keywords, not both
    """
    unknown = sorted(set(keywords) - set(VALUE_KEYWORDS))
    if unknown:
        raise OptionError(f"unknown mapping option(s): {', '.join(unknown)}")
    given = {MapOptions: options, ReadOptions: read_options, SamOptions: sam_options, PairOptions: pair_options}
    loose: dict[type, dict[str, Any]] = {cls: {} for cls in given}
    for name, value in keywords.items():
        loose[VALUE_KEYWORDS[name]][name] = value
    out = []
    for cls, value in given.items():
        if value is not None and loose[cls]:
            raise OptionError(f"{', '.join(loose[cls])}: give the {cls.__name__} value or its fields as keywords, "
                              f"not both")
        if value is not None and not isinstance(value, cls):
            raise OptionError(f"expected a {cls.__name__}, not {type(value).__name__}")
        out.append(value if value is not None else cls(**loose[cls]))
    return tuple(out)  # type: ignore[return-value]


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
                 reads_out: Sequence[str] = (), seen: Any = None,
                 writer_options: dict[str, Any] | None = None) -> None:
        super().__init__(query)
        self.header, self.pool, self.check = header, pool, check
        self.writer_options = writer_options or {}
        self.reads_out = list(reads_out)  # un, al: None or a path
        self.read_writers: list[Any] = []
        self.seen = seen

    @property
    def empty_error(self) -> bool:  # type: ignore[override]
        return self.seen is None or not self.seen(self.query)

    def open(self) -> SamWriter:
        if self.check is not None and is_special(self.query.output):  # written in place: nothing to take back
            self.check.result()
        writer = SamWriter(self.query.output, self.header, **self.writer_options)
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
        options: what to report, a :class:`~gseek.options.MapOptions` (or
            ``k``, an int); ``read_options``, ``sam_options``, ``pair_options``:
            the other values (:mod:`gseek.options`); their fields may come as
            keywords instead (:func:`map_values`).
        devices: one backend (or device name: ``"gpu:1"``, ``"cpu"``) per
            prelim worker; each gets its own :class:`~gseek.mapper.Mapper`
            and its own copy of the index arrays on that device. Default:
            ``device``, as :func:`map_reads` chooses it.
        device, threads: as :func:`map_reads`.
        command: SAM ``@PG CL``.
        un, al: as :func:`map_files`.
        interleaved: every one-file query holds mate 1 and mate 2 of each pair
            one after the other (paired-end reads); a query of two mate files
            (``QueryFile(paired=True)``) is paired too.

    The SAM header names the first device's backend (``@PG DS``). The read
    options (``phred64``, ``trim5``, ``trim3``, ``skip``, ``upto``) apply
    to each query (a query's files read as one stream); ``un``/``al`` name
    one file each, for a task that maps one query (:func:`map_files`).
    """

    name = "map"
    output_suffix = ".sam"
    #: Errors that fail one query file (bad records, an unreadable file).
    file_errors = (FastxError, OSError)
    #: Bytes of one payload (job sizing; a batch or a batch of pairs).
    payload_bytes = staticmethod(batch_nbytes)

    def __init__(
        self,
        index: Index | str | os.PathLike,
        options: MapOptions | int | None = None,
        *,
        read_options: ReadOptions | None = None,
        sam_options: SamOptions | None = None,
        pair_options: PairOptions | None = None,
        interleaved: bool = False,
        un: str | os.PathLike | None = None,
        al: str | os.PathLike | None = None,
        devices: Sequence[str | Backend] | None = None,
        device: str | Backend | None = None,
        threads: int | None = None,
        command: str = "gseek",
        **keywords: Any,
    ) -> None:
        if devices is not None and not devices:
            raise OptionError("devices: give at least one device")
        if isinstance(options, int) and not isinstance(options, bool):  # MapTask(index, k)
            options, keywords = None, {"mismatches": options, **keywords}
        opts, reads, sam, pairs = map_values(options, read_options, sam_options, pair_options, **keywords)
        outs = {k: os.fspath(v) for k, v in dict(un=un, al=al).items() if v is not None}
        paired: dict[str, Any] = {"interleaved": True} if interleaved else {}
        paired.update(pairs.changed())
        if sam.reference is not None and not os.path.isfile(sam.reference):  # before the index is loaded
            raise OSError(errno.ENOENT, "the CRAM reference FASTA is missing", sam.reference)
        backends = None if devices is None else [get_backend(d, threads) for d in devices]
        #: The SHA-256 check of an index loaded here runs beside the work and
        #: is waited for before an output is renamed into place.
        self.index_check = None
        source = index.path if isinstance(index, Index) else index
        #: What rebuilds this task on another process (None for an index that was never saved).
        self.spec = None if source is None else TaskSpec.of(
            "map", source, dict(options=opts, read_options=reads, sam_options=sam, pair_options=pairs,
                                command=command, **outs, **({"interleaved": True} if interleaved else {})),
            devices, threads)
        if not isinstance(index, Index):
            first = backends[0] if backends else (device or "auto")
            index = Index.load(index, device=first, threads=threads, verify=False)  # every part present
            self.index_check = index.check_in_background()
            device = None
        self.index = index
        #: The options, whole (:mod:`gseek.options`).
        self.map_options, self.read_options, self.sam_options = opts, reads, sam
        #: FASTA indexes written beside the CRAM reference for this task (removed if its run fails).
        self.made_indexes = [] if sam.reference is None else \
            check_reference(sam.reference, index.contigs.names, index.contigs.lengths)
        if backends is None:
            backends = [index.backend if device is None else get_backend(device, threads)]
        self.mappers = [Mapper(index, opts, device=b) for b in backends]
        gpu = any(m.backend.name == "gpu" for m in self.mappers)
        #: Input per job when the caller sets none: a GPU launch pays off on bigger batches.
        self.job_bytes = GPU_JOB_BYTES if gpu else DEFAULT_JOB_BYTES
        #: Threads that parse one query file (``FastxReader(threads=)``).
        self.parse_threads = parse_threads(threads)
        #: SAM text buffers, back from the writer once written (no fresh pages a batch).
        self.pool = BufferPool(keep=16)
        self.command = command
        self.un, self.al = outs.get("un"), outs.get("al")
        #: Queries read so far -> whether they held a record (skipped or not), for the empty-file rule.
        self._had_records: dict[QueryFile, bool] = {}
        #: What changes the records, for the fingerprint: options left at their defaults are left out
        #: (the fingerprint of a run stays as it was before those options existed).
        self.options = dict(mismatches=opts.mismatches, no_unal=sam.no_unal, cigar_eq=sam.cigar_eq,
                            **dict(sorted(opts.mapper_kwargs().items())), **reads.changed())
        if sam.read_group is not None:
            self.options["read_group"] = [list(f) for f in sam.read_group]
        if sam.sort is not None:
            self.options["sort"] = sam.sort
        if sam.compression_level is not None:  # the output's bytes change (not its records)
            self.options["compression_level"] = sam.compression_level
        self.options.update(paired)
        #: Paired-end reads: how mates pair; one-file queries are interleaved pairs.
        self.pairs, self.interleaved = pairs, bool(interleaved)
        #: How each output is written (:class:`~gseek.output.sam.SamWriter` options).
        self.writer_options = {"sort": sam.sort, "compression_level": sam.compression_level,
                               "reference": sam.reference, "threads": threads}
        self.header = sam_header(index.contigs.names, index.contigs.lengths, command=command,
                                 backend=self.mappers[0].backend.describe(), read_group=sam.read_group)

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
    def check_output_name(path: str | os.PathLike, *, sam_options: SamOptions | None = None,
                          **options: Any) -> None:
        """Refuse an output name whose suffix is no SAM format gseek writes, CRAM
        without a reference, ``sort`` for a text output
        (:func:`~gseek.output.sam.check_sam_output`); other task options are ignored."""
        sam = sam_options or SamOptions(**{k: v for k, v in options.items() if k in ("sort", "reference")})
        check_sam_output(path, sort=sam.sort, reference=sam.reference)

    def read(self, query: QueryFile, chunk_bytes: int) -> Iterator[SequenceBatch]:
        """Batches of the query's files, in order, with the read options
        applied: ``skip`` and ``upto`` count the reads of the query's files as
        one stream, ``trim5``/``trim3`` trim what is left. A read name SAM
        cannot hold fails the file here, before its batch is mapped or any of
        its SAM written (:func:`~gseek.output.sam.check_read_names`). The first
        batch of each FASTQ file read as Phred+33 whose qualities look
        Phred+64 (:func:`~gseek.seqio.looks_phred64`) gives a
        :class:`~gseek.errors.GseekWarning`."""
        if query.paired or self.interleaved:
            yield from self._read_pairs(query, chunk_bytes)
            return
        o = self.read_options
        window = _ReadWindow(o)
        keep_raw = self.un is not None or self.al is not None
        self._had_records[query] = False
        for path in query.paths:
            # with upto, one thread parses, each batch stopping at the last read wanted (no error past it is seen)
            source = FastxReader(path, chunk_bytes=chunk_bytes,
                                 threads=self.parse_threads if o.upto is None else None,
                                 phred=64 if o.phred64 else 33, keep_raw=keep_raw)
            reader = iter(source)
            try:
                for i, batch in enumerate(_batches(source, reader, window.wanted)):
                    self._had_records[query] = True
                    if i == 0:
                        _warn_phred64(o, batch, path)
                    batch = window.take(batch)
                    if batch is None:
                        continue
                    check_read_names(batch)
                    yield batch
                    if window.done:
                        return  # -u/--upto: the rest is not read
            finally:
                reader.close()  # type: ignore[attr-defined]

    def _read_pairs(self, query: QueryFile, chunk_bytes: int) -> Iterator[PairedBatch]:
        """:class:`~gseek.seqio.pairs.PairedBatch` es of a paired query (two mate files, or
        interleaved files), the read options applied to pairs (``skip``/``upto`` count pairs)."""
        o = self.read_options
        window = _ReadWindow(o)
        self._had_records[query] = False
        options = dict(chunk_bytes=max(1, chunk_bytes // 2), phred=64 if o.phred64 else 33,
                       keep_raw=self.un is not None or self.al is not None,
                       threads=self.parse_threads if o.upto is None else None)  # upto: as single reads
        sources = ([iter_pairs(query.paths[0], query.paths[1], **options)] if query.paired
                   else [iter_interleaved(path, **options) for path in query.paths])
        for source in sources:
            try:
                for i, pairs in enumerate(source):
                    self._had_records[query] = True
                    if i == 0:
                        _warn_phred64(o, pairs.mate1, pairs.mate1.path)
                    pairs = window.take(pairs)
                    if pairs is None:
                        continue
                    check_read_names(pairs.mate1)
                    check_read_names(pairs.mate2)
                    yield pairs
                    if window.done:
                        return
            finally:
                source.close()  # type: ignore[attr-defined]

    def prelims(self) -> list[Any]:
        """One prelim callable per device."""
        return [functools.partial(self._prelim, m) for m in self.mappers]

    @property
    def backends(self) -> list[Backend]:
        """The backend of each prelim stage."""
        return [m.backend for m in self.mappers]

    def _prelim(self, mapper: Mapper, job: Job) -> _Partial:
        batches = job.payloads
        with numba_guard(mapper.backend.name == "cpu"):
            if any(isinstance(b, PairedBatch) for b in batches):  # both mates of a batch in one search
                return _Partial(mapper, batches, None, [mapper.search(b.joined()) if isinstance(b, PairedBatch)
                                                        else mapper.search(b) for b in batches])
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
            results = partial.results() if partial.joined is not None else [
                None if isinstance(b, PairedBatch) else partial.mapper.select(b, p)
                for b, p in zip(partial.batches, partial.placements)]
        placed = partial.placements if partial.joined is None else [None] * len(partial.batches)
        for batch, result, placements in zip(partial.batches, results, placed):
            if isinstance(batch, PairedBatch):
                chunks.append(self._finalize_pairs(partial.mapper, batch, placements, threads))
                continue
            with numba_guard(True):
                sam = self.sam_options
                text, records = format_mapping(result, batch, partial.mapper.reference, no_unal=sam.no_unal,
                                               cigar_eq=sam.cigar_eq, raw=True, pool=self.pool, threads=threads)
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

    def _finalize_pairs(self, mapper: Mapper, pairs: PairedBatch, placements: Placements,
                        threads: int | None) -> Chunk:
        """SAM text of a batch of pairs (:func:`~gseek.mapper.pairs.select_pairs`,
        :func:`~gseek.output.sam_pairs.format_pairs`), with its counts."""
        with numba_guard(True):
            if threads is not None:
                numba.set_num_threads(threads)
            result = select_pairs(pairs, placements, mapper.reference.contig_offsets, mapper.reference.contig_names,
                                  self.pairs, k=mapper.k, report_all=mapper.report_all, max_hits=mapper.max_hits,
                                  max_alignments=mapper.max_alignments, xa_limit=mapper.xa_limit,
                                  no_unal=self.sam_options.no_unal)
            text, records = format_pairs(result, pairs, mapper.reference, cigar_eq=self.sam_options.cigar_eq, raw=True,
                                         threads=threads)
        status = result.single.status
        counts = dict(records=len(pairs), hits=int(result.reported.sum()), mapped=int((result.reported > 0).sum()),
                      too_long=int((status == STATUS_TOO_LONG).sum()),
                      too_short=int((status == STATUS_TOO_SHORT).sum()), sam_records=records,
                      mates_aligned=int((result.single.best >= 0).sum()))
        data: tuple[Any, ...] = (text, records, len(pairs))
        if self.un is not None or self.al is not None:  # the mates as given: un_1, un_2, al_1, al_2
            aligned = result.reported > 0
            data += tuple(ragged.gather(mates.raw, mates.raw_offsets, np.flatnonzero(chosen))[0]
                          for chosen in (~aligned, aligned) for mates in (pairs.mate1, pairs.mate2))
        return Chunk(data, counts)

    def open_output(self, query: QueryFile) -> _SamSink:
        reads_out: tuple[str | None, ...] = ()
        if self.un is not None or self.al is not None:
            reads_out = (self.un, self.al)
            if query.paired or self.interleaved:  # bowtie's names: x_1.fq, x_2.fq (x.fq_1.gz for x.fq.gz)
                reads_out = tuple(None if p is None else mate_file_name(p, m) for p in reads_out for m in (1, 2))
        return _SamSink(query, self.header, self.pool, self.index_check, reads_out=reads_out,
                        seen=self._had_records.get, writer_options=self.writer_options)

    def dispatcher(self, **options: Any) -> Dispatcher:
        """A :class:`~gseek.pipeline.engine.Dispatcher` running this task's stages
        (``job_bytes`` default: :attr:`job_bytes`)."""
        if options.get("job_bytes") is None:
            options["job_bytes"] = self.job_bytes
        # GPU kernels load while the first batch is read; the CPU twins need no warm-up
        # (and a parallel Numba call beside the others would need the lock)
        options.setdefault("setup", [m.warm_up if m.backend.name == "gpu" else None for m in self.mappers])
        return Dispatcher(self.read, self.prelims(), self.finalize, self.open_output, size=self.payload_bytes,
                          combine=True, file_errors=self.file_errors, **options)


def mate_file_name(path: str | os.PathLike, mate: int) -> str:
    """The ``--un``/``--al`` file of one mate of paired-end reads, named as bowtie 1 names
    it: ``_1``/``_2`` before the last suffix.

    >>> mate_file_name("out/un.fq", 1), mate_file_name("al.fq.gz", 2), mate_file_name("un", 1)
    ('out/un_1.fq', 'al.fq_2.gz', 'un_1')
    """
    root, ext = os.path.splitext(os.fspath(path))
    return f"{root}_{mate}{ext}"


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


class _ReadWindow:
    """bowtie's ``--skip``/``--upto`` over one query's reads (or pairs) as one stream, then
    ``--trim5``/``--trim3``: :meth:`take` gives what is left of a batch (None: nothing)."""

    def __init__(self, options: ReadOptions) -> None:
        self.skip, self.left = options.skip, options.upto
        self.trim5, self.trim3 = options.trim5, options.trim3

    def wanted(self) -> int | None:
        """Reads still wanted, skipped ones included (None: all)."""
        return None if self.left is None else self.skip + self.left

    @property
    def done(self) -> bool:
        return self.left == 0

    def take(self, batch: Any) -> Any:
        if self.skip:
            n = min(self.skip, len(batch))
            self.skip -= n
            batch = batch[n:]
            if not len(batch):
                return None
        if self.left is not None:
            batch = batch[:self.left]
            self.left -= len(batch)
        return batch.trimmed(self.trim5, self.trim3)


def _warn_phred64(options: ReadOptions, batch: SequenceBatch, path: Any) -> None:
    """The warning for a FASTQ read as Phred+33 whose first batch looks Phred+64."""
    if not options.phred64 and looks_phred64(batch):
        warnings.warn(GseekWarning(
            f"{path}: qualities look Phred+64 (none below '@', some above 'J' in the first "
            f"{len(batch):,} reads); give --phred64 (phred64=True) if they are"), stacklevel=3)


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

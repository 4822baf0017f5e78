"""Search tasks for the pipeline: the stages a :class:`~gseek.pipeline.engine.Dispatcher` runs.

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
:func:`gseek.mapper.map_reads`.

>>> import os, tempfile
>>> from gseek.datasets import lambda_genome, lambda_reads
>>> from gseek.index import Index
>>> idx = Index.build(lambda_genome(), wgram=8, device="cpu")
>>> out = os.path.join(tempfile.mkdtemp(), "r.sam")
>>> counts = map_files(idx, lambda_reads(), out, mismatches=2, workers=1)
>>> counts["reads"] == counts["mapped"] + counts["unmapped"], sorted(counts)
(True, ['mapped', 'reads', 'records', 'too_long', 'too_short', 'unmapped'])
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from gseek.backend import Backend, get_backend, numba_guard
from gseek.errors import FastxError, OptionError
from gseek.index import Index
from gseek.mapper import STATUS_TOO_LONG, STATUS_TOO_SHORT, Mapper, MappingResult, Placements
from gseek.seqio import FastxReader, SequenceBatch

from .engine import DEFAULT_JOB_BYTES, Chunk, Dispatcher, Job, Progress, QueryFile, QueueBounds

__all__ = ["AlignTask", "MapTask", "align_files", "map_files", "batch_nbytes", "warm_host"]

#: Input per job on a GPU (``DEFAULT_JOB_BYTES`` on the CPU): fewer, larger launches
#: (search of 1M reads on the H200: 0.16 s in 16 MiB batches, 0.08 s in 64 MiB ones).
GPU_JOB_BYTES = 64 << 20
#: At most this many threads parse one query file.
MAX_PARSE_THREADS = 8

#: Parallel Numba calls from several threads go through this (gseek.backend.numba_guard).
_numba_guard = numba_guard


def warm_host() -> threading.Thread:
    """Start loading the host-side Numba code (parser, select, SAM formatter) on a
    thread and return it (join it when done).

    The first Numba function a process loads from the cache pays for LLVM's
    set-up (~0.35 s on the H200 host); done here it overlaps the CUDA context
    and the index load instead of delaying the first batch.
    """

    def run() -> None:
        try:
            with _numba_guard(True):
                warm()
        except Exception:  # noqa: BLE001 - only a head start; the real call reports any problem
            pass

    def warm() -> None:
        import tempfile

        from gseek import _select
        from gseek.output.sam import format_unmapped

        with tempfile.TemporaryDirectory(prefix="gseek-warm-") as tmp:
            path = os.path.join(tmp, "w.fq")
            with open(path, "w") as fh:
                fh.write("@w\nACGT\n+\nIIII\n")
            for batch in FastxReader(path):
                _select.group(np.zeros(1, np.int64), 1)
                _select.name_hashes(batch.names, batch.name_offsets)
                format_unmapped(batch, np.arange(1))

    thread = threading.Thread(target=run, name="gseek-warm-host", daemon=True)
    thread.start()
    return thread


def batch_nbytes(batch: SequenceBatch) -> int:
    """Bytes held by a batch's arrays (the in-flight memory it costs)."""
    arrays = (batch.codes, batch.offsets, batch.quals, batch.names, batch.name_offsets, batch.descriptions,
              batch.description_offsets, batch.lines)
    return int(sum(a.nbytes for a in arrays if a is not None))


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


class _SamSink:
    """One output: a :class:`~gseek.output.sam.SamWriter` opened on the writer thread at
    the first batch, so a query file without records (empty, missing) writes
    nothing (not even the header on stdout) before its error."""

    def __init__(self, path: str, header: dict, query: QueryFile, pool: Any = None, check: Any = None) -> None:
        self.query = query
        self.pool = pool
        self.check = check
        self.path, self.header = path, header
        self.writer: Any = None
        self.reads = 0

    def write(self, data: tuple[str, int, int]) -> None:
        text, records, reads = data
        if self.writer is None:
            from gseek.output.sam import SamWriter

            if self.check is not None and os.fspath(self.path) == "-":
                self.check.result()  # stdout cannot be taken back: the index is checked before the first byte
            self.writer = SamWriter(self.path, self.header)
        self.writer.write_text(text, records)
        self.reads += reads
        if self.pool is not None and isinstance(text, np.ndarray):
            self.pool.put(text)  # written: the buffer can hold the next batch

    def commit(self) -> None:
        if self.check is not None:
            self.check.result()  # a corrupted index part: fatal, nothing is renamed into place
        if self.reads == 0:  # as map_reads: a query file without records is an error
            error = FastxError(", ".join(self.query.paths), None, "no FASTA/FASTQ records (empty file)")
            self.abort()
            raise error
        writer, self.writer = self.writer, None
        writer.__exit__(None, None, None)

    def abort(self) -> None:
        if self.writer is not None:
            writer, self.writer = self.writer, None
            writer.__exit__(RuntimeError, None, None)


class MapTask:
    """Complete k-mismatch read mapping as pipeline stages (SAM/BAM out).

    Arguments:
        index: an :class:`~gseek.index.Index` or the path of a saved one.
        mismatches: ``k`` (as :class:`~gseek.mapper.Mapper`).
        devices: one backend (or device name: ``"gpu:1"``, ``"cpu"``) per
            prelim worker; each gets its own :class:`~gseek.mapper.Mapper`
            and its own copy of the index arrays on that device. Default:
            ``device``, as :func:`~gseek.mapper.map_reads` chooses it.
        device, threads: as :func:`~gseek.mapper.map_reads`.
        command: SAM ``@PG CL``.
        no_unal, cigar_eq: as :func:`~gseek.mapper.map_reads`.
        **mapper_options: the other :class:`~gseek.mapper.Mapper` options.

    The SAM header names the first device's backend (``@PG DS``).
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
        **mapper_options: Any,
    ) -> None:
        if devices is not None and not devices:
            raise OptionError("devices: give at least one device")
        backends = None if devices is None else [get_backend(d, threads) for d in devices]
        #: The SHA-256 check of an index loaded here runs beside the work and
        #: is waited for before an output is renamed into place.
        self.index_check = None
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
        self.parse_threads = max(1, min(MAX_PARSE_THREADS, threads or os.cpu_count() or 1))
        from gseek.output.sam_records import BufferPool

        #: SAM text buffers, back from the writer once written (no fresh pages a batch).
        self.pool = BufferPool(keep=16)
        self.no_unal = bool(no_unal)
        self.cigar_eq = bool(cigar_eq)
        self.command = command
        self.options = dict(mismatches=int(mismatches), no_unal=self.no_unal, cigar_eq=self.cigar_eq,
                            **{k: v for k, v in sorted(mapper_options.items())})
        from gseek.output.sam import sam_header

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

    def read(self, query: QueryFile, chunk_bytes: int) -> Iterator[SequenceBatch]:
        """Batches of the query's files, in order."""
        for path in query.paths:
            yield from FastxReader(path, chunk_bytes=chunk_bytes, threads=self.parse_threads)

    def prelims(self) -> list[Any]:
        """One prelim callable per device."""
        return [functools.partial(self._prelim, m) for m in self.mappers]

    def _prelim(self, mapper: Mapper, job: Job) -> _Partial:
        batches = job.payloads
        with _numba_guard(mapper.backend.name == "cpu"):
            if len(batches) > 1 and len({(b.format, b.alphabet) for b in batches}) == 1:
                joined = _join(batches)  # one launch for the small batches of a job
                return _Partial(mapper, batches, joined, [mapper.search(joined)])
            return _Partial(mapper, batches, None, [mapper.search(b) for b in batches])

    def finalize(self, partial: _Partial) -> list[Chunk]:
        """SAM text of every batch of a job, with its counts."""
        from gseek.output.sam import format_mapping

        chunks = []
        threads = getattr(partial.mapper.backend, "threads", None)
        with _numba_guard(True):
            if threads is not None:  # Numba's thread count is per calling thread
                import numba

                numba.set_num_threads(threads)
            results = partial.results()
        for batch, result in zip(partial.batches, results):
            with _numba_guard(True):
                text, records = format_mapping(result, batch, partial.mapper, no_unal=self.no_unal,
                                               cigar_eq=self.cigar_eq, raw=True, pool=self.pool)
            mapped = int((result.best >= 0).sum())
            counts = dict(records=len(batch), hits=len(result), mapped=mapped,
                          too_long=int((result.status == STATUS_TOO_LONG).sum()),
                          too_short=int((result.status == STATUS_TOO_SHORT).sum()), sam_records=records)
            chunks.append(Chunk((text, records, len(batch)), counts))
        return chunks

    def open_output(self, query: QueryFile) -> _SamSink:
        return _SamSink(query.output, self.header, query, self.pool, self.index_check)

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


def _join(batches: list[SequenceBatch]) -> SequenceBatch:
    """Batches of one or several files as one batch (for one device launch)."""
    return SequenceBatch.concat(batches)


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
    device: str | Backend | None = None,
    devices: Sequence[str | Backend] | None = None,
    chunk_bytes: int | None = None,
    workers: int = 2,
    bounds: QueueBounds | None = None,
    **mapper_options: Any,
) -> dict[str, int]:
    """:func:`gseek.mapper.map_reads` through the pipeline engine: same arguments, output and counts.

    Several read files go to one output, in order. Bad input raises (as
    ``map_reads``) instead of being recorded. ``workers`` finalize threads
    format SAM while the device maps the next batch (0: no threads).
    """
    files = [reads] if isinstance(reads, (str, os.PathLike)) else list(reads)
    if not files:
        raise OptionError("no read file given")
    task = MapTask(index, mismatches, devices=devices, device=device, threads=threads, command=command,
                   no_unal=no_unal, cigar_eq=cigar_eq, **mapper_options)
    query = QueryFile(tuple(os.fspath(f) for f in files), os.fspath(output))
    dispatcher = task.dispatcher(workers=workers, job_bytes=chunk_bytes or task.job_bytes, bounds=bounds)
    result, = dispatcher.run([query])
    if result.error is not None:
        raise result.error
    c = result.counts
    return dict(reads=c["records"], mapped=c["mapped"], unmapped=c["records"] - c["mapped"],
                too_long=c["too_long"], too_short=c["too_short"], records=c["sam_records"])


# --------------------------------------------------------------------------- batched DP


#: DP cells a job aims for (query residues x target residues): about 0.8 s of
#: score-only DP on an H200, 10 s on two CPU cores. A job's input bytes are
#: these over the target residues, within ``ALIGN_JOB_BYTES``.
GPU_JOB_CELLS = 1 << 40
CPU_JOB_CELLS = 1 << 32
ALIGN_JOB_BYTES = (16 << 10, GPU_JOB_BYTES)
#: Prelim workers per GPU for the DP, each with its own CUDA stream: one's
#: kernels run while the other prepares or collects a batch on the host.
ALIGN_STREAMS_PER_GPU = 2


class _TsvSink:
    """One output of :class:`AlignTask`: an :class:`~gseek.output.tabular.AlignmentWriter`
    (temporary name, renamed when complete) taking rows formatted by finalize.
    Opened at the first batch, so a query file without records writes nothing
    (not even the header on stdout) before its error."""

    def __init__(self, path: str, columns: Sequence[str], query: QueryFile) -> None:
        from gseek.output.tabular import AlignmentWriter

        self.query = query
        self.writer: Any = AlignmentWriter(path, columns)
        self.opened = False
        self.records = 0

    def write(self, data: tuple[Any, int, int, tuple[str, str]]) -> None:
        text, rows, records, encoding = data
        if not self.opened:
            self.writer.__enter__()
            self.opened = True
        if encoding != self.writer.encoding:  # finalize formats in the task's encoding: the sink's
            raise RuntimeError(f"rows formatted as {encoding}, the output takes {self.writer.encoding}")
        self.writer.write_encoded(text, rows)
        self.records += records

    def commit(self) -> None:
        if self.records == 0:  # as `gseek align`: a query file without records is an error
            error = FastxError(", ".join(self.query.paths), None, "no FASTA/FASTQ records (empty file)")
            self.abort()
            raise error
        writer, self.writer = self.writer, None
        writer.__exit__(None, None, None)

    def abort(self) -> None:
        if self.writer is not None:
            writer, self.writer = self.writer, None
            if self.opened:
                writer.__exit__(RuntimeError, None, None)


def _writable_names(batch: SequenceBatch, encoding: tuple[str, str], where: str | None = None) -> None:
    """Refuse a record name the output's encoding cannot hold (OptionError naming it);
    names of ASCII bytes only, the usual case, cost one pass over the bytes."""
    names = np.asarray(batch.names)
    if not names.size or int(names.max()) < 0x80:
        return
    for name in batch.name_list():
        try:
            name.encode(*encoding)
        except UnicodeError:
            text = f"sequence name {name!r} cannot be written in the output's encoding ({encoding[0]})"
            raise OptionError(f"{where}: {text}" if where else text) from None


class AlignTask:
    """Batched DP of every query against every target, as pipeline stages (TSV out).

    The database search form of ``gseek align -q QUERIES -t TARGETS``: ``read``
    streams the query file in batches, ``prelim`` aligns each batch with every
    target on one device (:meth:`PairAligner.iter_query_vs_database
    <gseek.align.PairAligner.iter_query_vs_database>`, the targets encoded
    once; one aligner per CPU device, :data:`ALIGN_STREAMS_PER_GPU` per GPU,
    each on its own CUDA stream and prelim worker), ``finalize`` formats the rows
    (:class:`~gseek.output.tabular.TsvFormatter`) and the writer appends them to an
    :class:`~gseek.output.tabular.AlignmentWriter`. Each output is byte for byte what
    ``gseek align -q FILE -t TARGETS`` writes with the same options: rows are
    per pair, in query-major order, whatever the batch size, worker and device
    count.

    Arguments:
        targets: FASTA/FASTQ of the targets (the database).
        devices, device, threads: as :class:`MapTask`.
        command: unused (TSV has no header line for it); accepted for the runner.
        encoding: ``(encoding, errors)`` of the outputs' text (files: ascii,
            strict; stdout: :func:`gseek.output.tabular.stream_encoding`).
        **align_options: :class:`~gseek.align.PairAligner` options (``mode``,
            ``match``, ``matrix``, ``traceback``, ``min_score``, ``outfmt``, ...).
    """

    name = "align"
    output_suffix = ".tsv"
    #: Errors that fail one query file: bad records, and residues or lengths the DP refuses.
    file_errors = (FastxError, OSError, OptionError, UnicodeError)

    def __init__(
        self,
        targets: str | os.PathLike,
        *,
        devices: Sequence[str | Backend] | None = None,
        device: str | Backend | None = None,
        threads: int | None = None,
        command: str = "gseek",
        encoding: tuple[str, str] = ("ascii", "strict"),
        **align_options: Any,
    ) -> None:
        from gseek.align import PairAligner, default_traceback_memory, encode_set
        from gseek.dp import check_range
        from gseek.seqio import read_fastx

        if devices is not None and not devices:
            raise OptionError("devices: give at least one device")
        backends = [get_backend(d, threads) for d in devices] if devices is not None else \
            [get_backend(device or "auto", threads)]
        self.aligners = []
        for b in backends:
            if b.name != "gpu":
                self.aligners.append(PairAligner(device=b, **align_options))
                continue
            # the workers of one GPU share its memory: each gets its part of the trace-back budget
            options = dict(align_options)
            budget = options.get("traceback_memory") or default_traceback_memory(b)
            options["traceback_memory"] = max(1, int(budget) // ALIGN_STREAMS_PER_GPU)
            self.aligners += [PairAligner(device=b.with_stream(), **options) for _ in range(ALIGN_STREAMS_PER_GPU)]
        first = self.aligners[0]
        self.alphabet = "protein" if first.scoring.matrix else "dna"
        self.target_path = os.fspath(targets)
        batch = read_fastx(self.target_path, alphabet=self.alphabet)
        self.targets = encode_set(batch, first.scoring, "t")
        self.encoding = (str(encoding[0]), str(encoding[1]))
        # what would fail every query file fails here, once, before any work
        _writable_names(batch, self.encoding, self.target_path)
        check_range(np.ones(1, np.int32), self.targets.lengths.max(initial=0)[None], first.scoring)
        self.columns = first.columns
        self.options = {k: v for k, v in sorted(align_options.items())}
        residues = max(1, int(self.targets.codes.size))
        gpu = any(a.backend.name == "gpu" for a in self.aligners)
        low, high = ALIGN_JOB_BYTES
        #: Query input per job when the caller sets none: a job's DP cells near ``*_JOB_CELLS``.
        self.job_bytes = int(min(high, max(low, (GPU_JOB_CELLS if gpu else CPU_JOB_CELLS) // residues)))
        self.parse_threads = max(1, min(2, threads or os.cpu_count() or 1))
        self._formatters = threading.local()

    def __repr__(self) -> str:
        return f"AlignTask({self.aligners[0]!r}, targets={len(self.targets)}, workers={len(self.aligners)})"

    def fingerprint(self) -> str:
        """Hash of everything that changes the rows: task, options, the targets' names and residues."""
        h = hashlib.sha256()
        h.update(json.dumps(dict(task=self.name, options=self.options, alphabet=self.alphabet), sort_keys=True,
                            default=str).encode())
        h.update("\0".join(self.targets.names).encode("utf-8", "surrogatepass"))
        h.update(np.ascontiguousarray(self.targets.offsets).tobytes())
        h.update(np.ascontiguousarray(self.targets.codes).tobytes())
        return h.hexdigest()[:32]

    # ------------------------------------------------------------------ stages

    def read(self, query: QueryFile, chunk_bytes: int) -> Iterator[SequenceBatch]:
        """Batches of the query's files, in order."""
        for path in query.paths:
            yield from FastxReader(path, alphabet=self.alphabet, chunk_bytes=chunk_bytes,
                                   threads=self.parse_threads)

    def prelims(self) -> list[Any]:
        """One prelim callable per aligner (per CPU device; two per GPU)."""
        return [functools.partial(self._prelim, a) for a in self.aligners]

    def _prelim(self, aligner: Any, job: Job) -> list[Any]:
        from gseek.align import encode_set

        out = []
        with _numba_guard(aligner.backend.name == "cpu"):  # CPU kernels (align.py guards its host passes)
            for batch in job.payloads:
                _writable_names(batch, self.encoding)  # fail here, not in finalize
                queries = encode_set(batch, aligner.scoring, "q")
                out.append((len(batch), list(aligner.iter_query_vs_database(queries, self.targets))))
        return out

    def finalize(self, partial: list[Any]) -> list[Chunk]:
        """TSV rows of every batch of a job (bytes in :attr:`encoding`), with counts."""
        from gseek.output.tabular import TsvFormatter

        fmt = getattr(self._formatters, "fmt", None)
        if fmt is None:
            fmt = self._formatters.fmt = TsvFormatter(*self.encoding)
        chunks = []
        for records, parts in partial:
            rows = sum(len(p) for p in parts)
            with _numba_guard(True):
                texts = [fmt.format(p) for p in parts if len(p)]
            text = np.concatenate(texts) if len(texts) > 1 else (texts[0] if texts else None)
            chunks.append(Chunk((text, rows, records, (fmt.encoding, fmt.errors)), dict(records=records, hits=rows)))
        return chunks

    def open_output(self, query: QueryFile) -> _TsvSink:
        return _TsvSink(query.output, self.columns, query)

    def dispatcher(self, **options: Any) -> Dispatcher:
        """A :class:`~gseek.pipeline.engine.Dispatcher` running this task's stages."""
        if options.get("job_bytes") is None:
            options["job_bytes"] = self.job_bytes
        return Dispatcher(self.read, self.prelims(), self.finalize, self.open_output, size=batch_nbytes,
                          combine=True, file_errors=self.file_errors, **options)


class _PairCount(Progress):
    def __init__(self, report: Any, targets: int) -> None:
        self.report, self.targets = report, targets

    def update(self, query: QueryFile, counts: dict[str, int]) -> None:
        self.report(int(counts.get("records", 0)) * self.targets)


def align_files(
    targets: str | os.PathLike,
    queries: str | os.PathLike | list[str | os.PathLike],
    output: str | os.PathLike | None,
    *,
    device: str | Backend | None = None,
    threads: int | None = None,
    workers: int = 2,
    job_bytes: int | None = None,
    bounds: QueueBounds | None = None,
    progress: Any = None,
    **align_options: Any,
) -> dict[str, Any]:
    """``gseek align -q QUERIES -t TARGETS`` through the pipeline engine (one query, a pipeline of one).

    Several query files go to one output, in order; ``output`` None or ``-``
    is stdout. ``progress(pairs)`` is called as rows are written. Bad input
    raises. Returns the query ``records``, the ``rows`` written and the
    ``device`` line.
    """
    import sys

    from gseek.output.tabular import stream_encoding

    out = "-" if output is None or os.fspath(output) == "-" else os.fspath(output)
    encoding = stream_encoding(sys.stdout) if out == "-" else ("ascii", "strict")
    files = [queries] if isinstance(queries, (str, os.PathLike)) else list(queries)
    if not files:
        raise OptionError("no query file given")
    task = AlignTask(targets, device=device, threads=threads, encoding=encoding, **align_options)
    query = QueryFile(tuple(os.fspath(f) for f in files), out)
    options: dict[str, Any] = dict(workers=workers, bounds=bounds, job_bytes=job_bytes)
    if progress is not None:
        options["progress"] = _PairCount(progress, len(task.targets))
    result, = task.dispatcher(**options).run([query])
    if result.error is not None:
        raise result.error
    return dict(records=result.records, rows=result.hits, device=task.aligners[0].backend.describe())

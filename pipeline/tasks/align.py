"""Batched DP as pipeline stages: :class:`AlignTask` (each query file against a target set) and
:class:`PairsTask` (named pairs, or all pairs of one set), with :func:`align_files` and
:func:`align_pairs_files` on top: the engine behind ``gseek align`` and ``gseek pipeline --task align``.
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

from gseek.align import AlignOptions, PairAligner, default_traceback_memory, encode_set, read_pair_list, triangle
from gseek.backend import Backend, get_backend, numba_guard
from gseek.dp import check_range
from gseek.errors import FastxError, OptionError
from gseek.output.tabular import AlignmentWriter, TsvFormatter
from gseek.seqio import FastxReader, SequenceBatch, read_fastx

from ..engine import Chunk, Dispatcher, Job, QueryFile
from ._base import GPU_JOB_BYTES, LazySink, TaskSpec, batch_nbytes, parse_threads

__all__ = ["AlignTask", "PairsTask", "align_value", "RUN_KEYWORDS"]


#: DP cells a job aims for (query residues x target residues): about 0.8 s of
#: score-only DP on an H200, 10 s on two CPU cores. A job's input bytes are
#: these over the target residues, within ``ALIGN_JOB_BYTES``.
GPU_JOB_CELLS = 1 << 40
CPU_JOB_CELLS = 1 << 32
ALIGN_JOB_BYTES = (16 << 10, GPU_JOB_BYTES)
#: Prelim workers per GPU for the DP, each with its own CUDA stream: one's
#: kernels run while the other prepares or collects a batch on the host.
ALIGN_STREAMS_PER_GPU = 2


class _TsvSink(LazySink):
    """One output of a DP task: an :class:`~gseek.output.tabular.AlignmentWriter`
    (temporary name, renamed when complete) taking rows formatted by finalize,
    opened at the first batch."""

    def __init__(self, query: QueryFile, columns: Sequence[str], empty_error: bool = True) -> None:
        super().__init__(query)
        self.columns = columns
        self.empty_error = empty_error

    def open(self) -> AlignmentWriter:
        return AlignmentWriter(self.query.output, self.columns).__enter__()

    def put(self, data: tuple[Any, int, int, tuple[str, str]]) -> int:
        text, rows, records, encoding = data
        if encoding != self.writer.encoding:  # finalize formats in the task's encoding: the sink's
            raise RuntimeError(f"rows formatted as {encoding}, the output takes {self.writer.encoding}")
        self.writer.write_encoded(text, rows)
        return records


#: :class:`~gseek.align.PairAligner`'s keywords that tune a run rather than what it computes.
RUN_KEYWORDS = ("batch_pairs", "traceback_memory")


def align_value(options: AlignOptions | None, keywords: dict[str, Any]) -> tuple[AlignOptions, dict[str, Any]]:
    """The DP job's :class:`~gseek.align.options.AlignOptions` (``options`` whole, or made and checked once
    here from the loose ``keywords`` of its fields) and the run's tuning (``batch_pairs``,
    ``traceback_memory``) apart; a field given both ways, or an unknown name, raises.

    >>> align_value(None, {"mode": "local", "batch_pairs": 64})
    (AlignOptions(mode='local'), {'batch_pairs': 64})
    """
    run = {k: v for k, v in keywords.items() if k in RUN_KEYWORDS}
    fields = {k: v for k, v in keywords.items() if k not in RUN_KEYWORDS}
    if options is None:
        return AlignOptions.from_dict(fields), run
    if not isinstance(options, AlignOptions):
        raise OptionError(f"expected an AlignOptions, not {type(options).__name__}")
    if fields:
        raise OptionError(f"{', '.join(fields)}: give the AlignOptions value or its fields as keywords, not both")
    return options, run


def _aligners(devices: Sequence[str | Backend] | None, device: str | Backend | None, threads: int | None,
              options: AlignOptions, run: dict[str, Any]) -> list[PairAligner]:
    """One aligner per CPU device, :data:`ALIGN_STREAMS_PER_GPU` per GPU (each on
    its own CUDA stream, with its part of the GPU's trace-back budget)."""
    if devices is not None and not devices:
        raise OptionError("devices: give at least one device")
    backends = [get_backend(d, threads) for d in devices] if devices is not None else \
        [get_backend(device or "auto", threads)]
    aligners = []
    for b in backends:
        if b.name != "gpu":
            aligners.append(PairAligner(options=options, device=b, **run))
            continue
        tuned = dict(run)
        budget = tuned.get("traceback_memory") or default_traceback_memory(b)
        tuned["traceback_memory"] = max(1, int(budget) // ALIGN_STREAMS_PER_GPU)
        aligners += [PairAligner(options=options, device=b.with_stream(), **tuned) for _ in range(ALIGN_STREAMS_PER_GPU)]
    return aligners


class _DPStages:
    """The stages DP tasks share: one prelim per aligner, rows formatted by
    finalize in the outputs' encoding, a TSV sink, the dispatcher."""

    name = ""
    output_suffix = ".tsv"
    #: Errors that fail one query file: bad records, and residues or lengths the DP refuses.
    file_errors = (FastxError, OSError, OptionError, UnicodeError)
    #: A query file without records fails (``align -q``); a run without pairs writes the header only.
    empty_error = True
    aligners: list[PairAligner]
    encoding: tuple[str, str]
    job_bytes: int
    _formatters: threading.local

    def prelims(self) -> list[Any]:
        """One prelim callable per aligner (per CPU device; two per GPU)."""
        return [functools.partial(self._prelim, a) for a in self.aligners]

    @property
    def backends(self) -> list[Backend]:
        """The backend of each prelim stage."""
        return [a.backend for a in self.aligners]

    def _prelim(self, aligner: PairAligner, job: Job) -> list[Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def payload_bytes(payload: Any) -> int:
        return batch_nbytes(payload)

    def finalize(self, partial: list[Any]) -> list[Chunk]:
        """TSV rows of every batch of a job (bytes in :attr:`encoding`), with counts."""
        fmt = getattr(self._formatters, "fmt", None)
        if fmt is None:
            fmt = self._formatters.fmt = TsvFormatter(*self.encoding)
        chunks = []
        for records, parts in partial:
            rows = sum(len(p) for p in parts)
            with numba_guard(True):
                texts = [fmt.format(p) for p in parts if len(p)]
            text = np.concatenate(texts) if len(texts) > 1 else (texts[0] if texts else None)
            chunks.append(Chunk((text, rows, records, (fmt.encoding, fmt.errors)), dict(records=records, hits=rows)))
        return chunks

    def open_output(self, query: QueryFile) -> _TsvSink:
        return _TsvSink(query, self.columns, empty_error=self.empty_error)

    @staticmethod
    def check_output_name(path: str | os.PathLike, **options: Any) -> None:
        """Any name is a TSV output (``.gz``: gzip-compressed); the task's ``options`` change nothing."""

    def dispatcher(self, **options: Any) -> Dispatcher:
        """A :class:`~gseek.pipeline.engine.Dispatcher` running this task's stages."""
        if options.get("job_bytes") is None:
            options["job_bytes"] = self.job_bytes
        return Dispatcher(self.read, self.prelims(), self.finalize, self.open_output, size=self.payload_bytes,
                          combine=True, file_errors=self.file_errors, **options)




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


class AlignTask(_DPStages):
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
        options: the DP's :class:`~gseek.align.options.AlignOptions`, whole; or
        **align_options: its fields as keywords (``mode``, ``match``, ``matrix``, ``traceback``,
            ``min_score``, ``outfmt``, ...; :func:`align_value`), and ``batch_pairs``,
            ``traceback_memory``.
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
        options: AlignOptions | None = None,
        **align_options: Any,
    ) -> None:
        value, run = align_value(options, align_options)
        self.spec = TaskSpec.of(self.name, targets, dict(command=command, encoding=tuple(encoding), options=value,
                                                        **run), devices, threads)
        self.aligners = _aligners(devices, device, threads, value, run)
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
        #: What changes the rows, for the fingerprint (options at their defaults left out).
        self.options = dict(sorted({**value.changed(), **run}.items()))
        self.progress_factor = len(self.targets)  # pairs per query record
        residues = max(1, int(self.targets.codes.size))
        gpu = any(a.backend.name == "gpu" for a in self.aligners)
        low, high = ALIGN_JOB_BYTES
        #: Query input per job when the caller sets none: a job's DP cells near ``*_JOB_CELLS``.
        self.job_bytes = int(min(high, max(low, (GPU_JOB_CELLS if gpu else CPU_JOB_CELLS) // residues)))
        self.parse_threads = parse_threads(threads, 2)
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
        out = []
        with numba_guard(aligner.backend.name == "cpu"):  # CPU kernels (align.py guards its host passes)
            for batch in job.payloads:
                _writable_names(batch, self.encoding)  # fail here, not in finalize
                queries = encode_set(batch, aligner.scoring, "q")
                out.append((len(batch), list(aligner.iter_query_vs_database(queries, self.targets))))
        return out


class PairsTask(_DPStages):
    """Named pairs or all pairs ``i < j`` of one set, through the pipeline engine (TSV out).

    ``gseek align --all-vs-all -i SEQS`` (``pairs`` None) and ``gseek align -q
    QUERIES -t TARGETS --pairs TSV``: the sequences are read once here;
    ``read`` yields the pair list in chunks of the aligner's ``batch_pairs``
    (the pair triangle in row-major order, or the list's order), ``prelim``
    aligns a chunk on one device, ``finalize`` formats its rows, and the sink
    writes them in order. The rows are byte for byte those of
    :meth:`PairAligner.iter_all_vs_all <gseek.align.PairAligner.iter_all_vs_all>`
    / ``iter_pair_list``, for any worker and device count. A run with no
    pair writes the header alone.

    Arguments:
        sequences: FASTA/FASTQ: the set (all-vs-all) or the targets (pairs).
        queries: the queries of a pair list.
        pairs: ``query<TAB>target`` names, one pair a line.
        devices, device, threads, command, encoding, **align_options: as :class:`AlignTask`.
    """

    name = "pairs"
    empty_error = False

    def __init__(
        self,
        sequences: str | os.PathLike,
        *,
        queries: str | os.PathLike | None = None,
        pairs: str | os.PathLike | None = None,
        devices: Sequence[str | Backend] | None = None,
        device: str | Backend | None = None,
        threads: int | None = None,
        command: str = "gseek",
        encoding: tuple[str, str] = ("ascii", "strict"),
        options: AlignOptions | None = None,
        **align_options: Any,
    ) -> None:
        if (queries is None) != (pairs is None):
            raise OptionError("a pair list needs both queries and pairs")
        value, run = align_value(options, align_options)
        self.spec = TaskSpec.of(self.name, sequences, dict(queries=queries, pairs=pairs, command=command,
                                                          encoding=tuple(encoding), options=value, **run),
                                devices, threads)
        self.aligners = _aligners(devices, device, threads, value, run)
        #: What changes the rows, for the fingerprint (options at their defaults left out).
        self.options = dict(sorted({**value.changed(), **run}.items()))
        first = self.aligners[0]
        alphabet = "protein" if first.scoring.matrix else "dna"
        self.encoding = (str(encoding[0]), str(encoding[1]))
        target_batch = read_fastx(sequences, alphabet=alphabet)
        _writable_names(target_batch, self.encoding, os.fspath(sequences))
        self.targets = encode_set(target_batch, first.scoring, "t" if pairs is not None else "s")
        if pairs is None:
            self.queries = self.targets
            n = len(self.targets)
            self.total = n * (n - 1) // 2
            self.pair_list = None
        else:
            query_batch = read_fastx(queries, alphabet=alphabet)
            _writable_names(query_batch, self.encoding, os.fspath(queries))
            self.queries = encode_set(query_batch, first.scoring, "q")
            self.pair_list = read_pair_list(pairs, self.queries.names, self.targets.names)
            self.total = int(self.pair_list[0].size)
        self.columns = first.columns
        self.chunk_pairs = first.batch_pairs
        self.job_bytes = 1  # one chunk of pairs a job
        self.progress_factor = 1  # records are pairs
        self._formatters = threading.local()

    def fingerprint(self) -> str:
        """Hash of everything that changes the rows: task, options, the sequences and the pairs."""
        h = hashlib.sha256(json.dumps(dict(task=self.name, options=self.options), sort_keys=True,
                                      default=str).encode())
        for s in (self.queries, self.targets):
            h.update("\0".join(s.names).encode("utf-8", "surrogatepass"))
            h.update(np.ascontiguousarray(s.offsets).tobytes())
            h.update(np.ascontiguousarray(s.codes).tobytes())
        for a in self.pair_list or ():
            h.update(np.ascontiguousarray(a).tobytes())
        return h.hexdigest()[:32]

    def __repr__(self) -> str:
        return f"PairsTask({self.aligners[0]!r}, pairs={self.total}, workers={len(self.aligners)})"

    def read(self, query: QueryFile, chunk_bytes: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The pairs ``(query index, target index)`` in chunks (one, empty, when there is none)."""
        if self.total == 0:
            yield np.zeros(0, np.int64), np.zeros(0, np.int64)
        for start in range(0, self.total, self.chunk_pairs):
            stop = min(self.total, start + self.chunk_pairs)
            if self.pair_list is None:
                yield triangle(np.arange(start, stop, dtype=np.int64), len(self.targets))
            else:
                yield self.pair_list[0][start:stop], self.pair_list[1][start:stop]

    @staticmethod
    def payload_bytes(payload: tuple[np.ndarray, np.ndarray]) -> int:
        return int(payload[0].nbytes + payload[1].nbytes)

    def _prelim(self, aligner: PairAligner, job: Job) -> list[Any]:
        out = []
        with numba_guard(aligner.backend.name == "cpu"):
            for qi, ti in job.payloads:
                out.append((int(qi.size), list(aligner.iter_pairs(self.queries, self.targets, qi, ti))))
        return out

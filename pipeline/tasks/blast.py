"""The BLAST-style search as pipeline stages: :class:`BlastTask`, and :func:`blast_files` on top.

``read`` streams FASTA query batches, ``prelim`` is :meth:`BlastSearcher.search
<gseek.blast.searcher.BlastSearcher.search>` on one device (one searcher per
CPU device, :data:`BLAST_STREAMS_PER_GPU` per GPU, fewer with many GPUs
(:func:`searchers_per_gpu`), each on its own CUDA stream), ``finalize``
formats ``-outfmt 6``/``7`` text on a CPU thread, and the output is written
under a temporary name, renamed when complete. A query's
HSPs do not depend on the other queries of its batch, so the output is the same
bytes for any batch size, worker and device count.

>>> import os, tempfile
>>> from gseek.pipeline import blast_files
>>> from gseek.datasets import lambda_genome
>>> from gseek.index import Index
>>> d = tempfile.mkdtemp()
>>> idx = Index.build(lambda_genome(), wgram=4, device="cpu")
>>> from gseek.seqio import read_fastx
>>> genome = read_fastx(lambda_genome()).sequence(0)
>>> _ = open(os.path.join(d, "q.fa"), "w").write(">q1 a slice\\n" + genome[5000:5600] + "\\n")
>>> counts = blast_files(idx, os.path.join(d, "q.fa"), os.path.join(d, "q.tsv"), task="megablast", device="cpu")
>>> counts["queries"], counts["hsps"]
(1, 1)
>>> print(open(os.path.join(d, "q.tsv")).read(), end="")
q1	gi|9626243|ref|NC_001416.1|	100.000	600	0	0	1	600	5001	5600	0.0	1109
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
import stat
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from gseek.backend import Backend, get_backend, numba_guard
from gseek.blast.database import resolve_database
from gseek.blast.options import BlastOptions
from gseek.blast.pairwise import PairwiseLayout, ReportFrame, pairwise_epilog, pairwise_prolog, pairwise_queries
from gseek.blast.report import parse_outfmt, reads_runs, sam_header, write_tabular
from gseek.blast.searcher import BlastSearcher
from gseek.blast.shards import split_hits
from gseek.errors import FastxError, OptionError, OutputError
from gseek.index import Index
from gseek.index.text import ReferenceText
from gseek.seqio import FastxReader, SequenceBatch
from gseek.seqio.atomic import is_special, open_output

from ..engine import Chunk, Dispatcher, Job, QueryFile
from ._base import LazySink, TaskSpec, batch_nbytes, parse_threads

__all__ = ["BlastTask", "blast_value"]

#: Output names BLAST refuses: binary formats its text output is not (:meth:`BlastTask.check_output_name`).
BINARY_SUFFIXES = (".bam", ".cram")
#: Query bases per job: the database is scanned once per job (its queries share one lookup table).
BLAST_JOB_BYTES = 8 << 20
#: A query file of less than a job a part is cut into one job a part (:attr:`BlastTask.job_parts`: a CPU
#: searcher, or a GPU), but no smaller than this.
BLAST_MIN_JOB_BYTES = 1 << 20
#: Searchers per GPU, each on its own CUDA stream: one's kernels run while another does its
#: host work (the lookup table, the gapped rounds' bookkeeping, the statistics), and their
#: launches' tails (the longest alignment of each) overlap. Workload 1 of issue 17 on an H200
#: (benchmarks/RESULTS.md, 2026-11-26): 9.4-9.5 s with 2, 8.7-8.8 s with 4; E. coli's contigs
#: the same.
BLAST_STREAMS_PER_GPU = 4
#: Searchers of a process with several GPUs and the queries split (each GPU its own searchers of the whole
#: database), at least :data:`BLAST_MIN_STREAMS_PER_GPU` a GPU: their host passes share one interpreter,
#: and each job is a whole search of the database (its rounds wait on their longest alignment), so more
#: searchers make more, smaller jobs that each take nearly as long. 32 files of workload 1 on the 1.06 Gbp
#: pan-genome, 4 H200s, the task built once (benchmarks/RESULTS.md, 2026-11-28): 5.32 s with 16 searchers,
#: 4.42-4.47 s with 8; 2 GPUs x 4 searchers scaled 1.89x over one GPU.
BLAST_SEARCHERS_PER_PROCESS = 8
#: The fewest searchers a GPU (one's kernels run while the other does its host work).
BLAST_MIN_STREAMS_PER_GPU = 2


def searchers_per_gpu(gpus: int, split: str = "queries") -> int:
    """Searchers (CUDA streams) on each of ``gpus`` GPUs of one process: :data:`BLAST_STREAMS_PER_GPU`,
    fewer where the queries are split over more GPUs than :data:`BLAST_SEARCHERS_PER_PROCESS` searchers
    allow (never under :data:`BLAST_MIN_STREAMS_PER_GPU`); a database split keeps them all (every GPU on
    every job). The output is the same bytes for any count (a query's hits are its own).

    >>> [searchers_per_gpu(n) for n in (1, 2, 3, 4, 8)], searchers_per_gpu(4, "database")
    ([4, 4, 2, 2, 2], 4)
    """
    if split == "database" or gpus <= 1:
        return BLAST_STREAMS_PER_GPU
    return max(BLAST_MIN_STREAMS_PER_GPU, min(BLAST_STREAMS_PER_GPU, BLAST_SEARCHERS_PER_PROCESS // gpus))


class _TextIO:
    """A minimal text sink for :func:`~gseek.blast.report.write_tabular` that collects strings."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> None:
        self.parts.append(text)


class _BlastSink(LazySink):
    """One output: the formatted text of each batch, then (``-outfmt 7``) BLAST+'s closing line."""

    def __init__(self, query: QueryFile, outfmt: str, sam_header: str = "", check: Any = None,
                 xml: Any = None, around: tuple[str, str] = ("", ""), numbers: tuple[int, ...] | None = None) -> None:
        super().__init__(query)
        self.kind = parse_outfmt(outfmt)[0]
        self.queries = 0
        self.sam_header = sam_header
        #: The index's SHA-256 check running beside the search (None: none), waited for before the output
        #: is renamed into place, or before its first byte where it is written in place (stdout, a pipe).
        self.check = check
        #: ``-outfmt 5``: the XML header of the first query's (title, length) (``xml_header`` bound to the search).
        self.xml_header = xml
        #: ``-outfmt 0``: the report's prolog and epilog.
        self.around = around
        #: ``-outfmt 5``/``15``: each query's number in its file (``-query_loc`` leaves some out); None: in order.
        self.numbers = numbers

    def open(self) -> Any:
        if self.check is not None and is_special(self.query.output):  # written in place: nothing to take back
            self.check.result()
        self._ctx = open_output(self.query.output, "wb")
        closing = _Closing(self._ctx, self._ctx.__enter__())
        if self.kind == "sam":
            closing.fh.write(self.sam_header.encode("utf-8", "surrogateescape"))
        return closing

    def put(self, data: tuple) -> int:
        text, queries = data[0], data[1]
        if self.kind == "0" and self.around[0]:  # the pairwise report: its prolog before the first query
            self.writer.fh.write(self.around[0].encode("utf-8", "surrogateescape"))
            self.around = ("", self.around[1])
        if self.kind in ("5", "15"):  # BLAST XML / JSON: a header, then the queries numbered in order
            from gseek.blast.json_report import JSON_HEADER, REPORT_MARK, report_separator
            from gseek.blast.xml_report import ITER_MARK, NAMED, NAMED_END, QUERY_MARK, query_name

            if self.queries == 0:
                head = JSON_HEADER if self.kind == "15" else self.xml_header(*data[2]) if self.xml_header else ""
                head = head.replace(QUERY_MARK, str(self.numbers[0] if self.numbers else 1))  # the first query's
                self.writer.fh.write(head.encode("utf-8", "surrogateescape"))
            if self.kind == "15":  # each report's opening: a comma before all but the output's first
                parts = text.split(REPORT_MARK.encode())
                text = parts[0] + b"".join(report_separator(self.queries == 0 and k == 0).encode() + part
                                           for k, part in enumerate(parts[1:]))
            parts = text.split(ITER_MARK.encode())  # (XML: the iteration's number)
            text = parts[0] + b"".join(str(self.queries + 1 + k).encode() + part for k, part in enumerate(parts[1:]))
            parts = text.split(QUERY_MARK.encode())  # the query's number in its file (and in its messages' names)
            numbers = [self.numbers[self.queries + k] if self.numbers else self.queries + 1 + k
                       for k in range(len(parts) - 1)]
            named = re.compile(re.escape(NAMED.encode()) + b"(.*?)" + re.escape(NAMED_END.encode()), re.S)
            text = parts[0] + b"".join(
                str(number).encode() + named.sub(lambda m, n=number: query_name(n, m.group(1).decode(
                    "utf-8", "surrogateescape")).encode("utf-8", "surrogateescape"), part)
                for number, part in zip(numbers, parts[1:]))
        if text:
            self.writer.fh.write(text)
        self.queries += queries
        return queries

    def before_commit(self) -> None:
        if self.check is not None:
            self.check.result()  # a corrupted index part: fatal, nothing is renamed into place
        if self.kind == "7" and self.records:
            if self.writer is None:
                self.writer = self.open()
            self.writer.fh.write(f"# BLAST processed {self.queries} queries\n".encode())
        if self.kind in ("5", "15") and self.queries:
            from gseek.blast.json_report import JSON_FOOTER
            from gseek.blast.xml_report import XML_FOOTER

            self.writer.fh.write((XML_FOOTER if self.kind == "5" else JSON_FOOTER).encode())
        if self.kind == "0" and self.queries:
            self.writer.fh.write(self.around[1].encode("utf-8", "surrogateescape"))


class _Closing:
    """The entered output file and the context that renames it (``__exit__``)."""

    def __init__(self, ctx: Any, fh: Any) -> None:
        self.ctx, self.fh = ctx, fh

    def __exit__(self, *exc: Any) -> None:
        self.ctx.__exit__(*exc)


def _joinable(batches: list[SequenceBatch]) -> bool:
    """Whether query batches can be searched as one (:meth:`SequenceBatch.concat` keeps what a search reads)."""
    first = batches[0]
    return all(b.alphabet == first.alphabet and (b.quals is None) == (first.quals is None)
               and (b.raw is None) == (first.raw is None) for b in batches)


def _text_bytes(path: str | os.PathLike) -> int | None:
    """The size of a regular, uncompressed query file (what jobs are sized from), else None (a pipe, a
    missing file, a compressed file: its size says little of its text's)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or str(path).endswith((".gz", ".bgz", ".bz2")):
        return None
    return st.st_size


def _stream(backend: Backend) -> Backend:
    """A GPU backend on a stream of its own; a CPU backend as it is."""
    return backend.with_stream() if backend.name == "gpu" else backend


class BlastTask:
    """The BLAST-style search as pipeline stages (``-outfmt 6``/``7`` text out).

    Arguments:
        index: an :class:`~gseek.index.Index` or the path of a saved one (only its text is loaded).
        task: ``megablast`` or ``blastn``.
        outfmt: ``6`` or ``7``, with BLAST+'s field keywords.
        devices, device, threads: as :class:`~gseek.pipeline.tasks.MapTask`.
        command: unused (BLAST output has no header of commands); accepted as every task does.
        database: the name shown in ``-outfmt 7``'s ``# Database:`` line (default: the index path).
        split: with several ``devices``, ``queries`` (one searcher of the whole database per device,
            each taking whole jobs) or ``database`` (the database in one shard per device, every job
            searched on all of them, the hits merged: :class:`~gseek.blast.shards.ShardedSearcher`);
            the output is the same bytes either way (``docs/blast.md``, "Database split").
        shard: ``(i, n)``: search shard ``i`` of ``n`` of the database only, with the whole
            database's statistics and subject numbers (a Dask worker's part of a database split
            across a cluster, :func:`~gseek.pipeline.cluster_jobs.shard_dispatcher`).
        volume_size: search the database in volumes of about this many bases, one volume's text on a
            device at a time (``--db-volume-size``; :class:`~gseek.blast.shards.ShardedSearcher`); the
            output is the same bytes. None: the database resident where it fits in a share of each
            GPU's free memory, else in the volumes that fit
            (:func:`~gseek.blast.shards.auto_volume_bases`; :attr:`volume_size` says which).
        subjects: the subjects' names as blastn prints them (``gseek.index.blastdb_defline.SubjectId``; default:
            those a converted BLAST database or ``gseek makeblastdb`` keeps, else each contig's name).
        query_offset: added to ``qstart``/``qend`` in the text (queries cut from there on: ``-query_loc``).
        layout: ``-outfmt 0``: what the pairwise report shows (:class:`~gseek.blast.pairwise.PairwiseLayout`:
            blastn's ``-num_descriptions``, ``-num_alignments``, ``-line_length``, ``-html``).
        frame: what the text names beyond the hits (:class:`~gseek.blast.pairwise.ReportFrame`: the database's
            title and date for ``-outfmt 0``, ``-subject``'s deflines, the whole queries and subjects of
            ``-query_loc`` and ``-subject_loc``).
        options: the search's :class:`~gseek.blast.options.BlastOptions` (its task is the search's);
            or ``task`` and ``**overrides``, the fields that differ from the task's preset, made into
            the value here (:func:`blast_value`).
    """

    name = "blast"
    output_suffix = ".tsv"
    #: Errors that fail one query file (bad records, an unreadable file).
    file_errors = (FastxError, OSError)
    #: Bytes of one query batch (job sizing).
    payload_bytes = staticmethod(batch_nbytes)
    #: Small query files are not combined into one job (each job is one search of the database:
    #: several jobs keep several searchers busy).
    combine = False

    def __init__(self, index: Index | str | os.PathLike, task: str = "megablast", *, options: BlastOptions | None = None,
                 outfmt: str = "6", devices: Sequence[str | Backend] | None = None,
                 device: str | Backend | None = None, threads: int | None = None, command: str = "gseek",
                 database: str | None = None, split: str = "queries", shard: tuple[int, int] | None = None,
                 volume_size: int | None = None, subjects: list | None = None, query_offset: int = 0,
                 layout: PairwiseLayout | None = None, frame: ReportFrame | None = None, **overrides: Any) -> None:
        #: The search's options, whole (made here, once, from ``task`` and ``overrides`` when not given).
        self.blast_options = blast_value(task, options, overrides)
        task, options = self.blast_options.task, self.blast_options.overrides()  # what the searchers take
        if devices is not None and not devices:
            raise OptionError("devices: give at least one device")
        if split not in ("queries", "database"):
            raise OptionError(f"split must be 'queries' or 'database', not {split!r}")
        if shard is not None and split == "database":
            raise OptionError("shard: one shard of a database is searched whole (no --split database)")
        parse_outfmt(outfmt)
        self.command = command
        self.outfmt = str(outfmt)
        #: Subject names as blastn prints them, for a BLAST database with parsed ids (None: the deflines).
        self.subjects = subjects
        #: Added to qstart/qend in the text: the queries are pieces starting there (blastn's -query_loc).
        self.query_offset = int(query_offset)
        #: The pairwise report's layout (-outfmt 0) and what the text names beyond the hits.
        self.layout = layout or PairwiseLayout()
        self.frame = frame or ReportFrame()
        given = index
        if not isinstance(index, Index) and index is not None:  # a gseek index or a BLAST+ database
            index, found = resolve_database(index)
            self.subjects = subjects if subjects is not None else found
        source = index.path if isinstance(index, Index) else index
        #: The index's folder (None: built in memory).
        self.index_path = source
        if volume_size is not None and int(volume_size) < 1:
            raise OptionError(f"database volume size must be at least 1 base, not {volume_size}")
        # what changes the text travels too: a worker formats it (a job a task on a cluster)
        shown = {k: v for k, v in dict(database=database, query_offset=self.query_offset or None,
                                       subjects=None if subjects is None else tuple(subjects), layout=layout,
                                       frame=frame).items()
                 if v is not None}
        self.spec = None if source is None else TaskSpec.of(
            "blast", source, dict(options=self.blast_options, outfmt=self.outfmt, **shown,
                                  **({} if shard is None else {"shard": tuple(shard)}),
                                  **({} if volume_size is None else {"volume_size": int(volume_size)})),
            devices, threads)
        #: The SHA-256 check of a loaded index's parts, on a thread beside the search (as the map task's).
        self.index_check = None
        if isinstance(index, Index):
            ref, header = ReferenceText.from_index(index), index.header
        else:
            loaded = Index.load(index, device="cpu", parts=["text"], threads=threads, verify=False)
            self.index_check = loaded.check_in_background()
            ref, header = ReferenceText.from_index(loaded), loaded.header
        self.header = header
        self.shard = None if shard is None else (int(shard[0]), int(shard[1]))
        if self.shard is not None:  # one copy of the shard's text for every searcher
            ref = ref.shard(*self.shard)
        backends = [get_backend(d, threads) for d in devices] if devices is not None else \
            [get_backend(device or "auto", threads)]
        # GPU work on per_gpu streams of each device (a CPU searcher uses every core)
        per_gpu = searchers_per_gpu(sum(b.name == "gpu" for b in backends), split)
        copies = per_gpu if all(b.name == "gpu" for b in backends) else 1
        if volume_size is None:  # a database too large for the GPUs' free memory: volumes that fit
            from gseek.blast.shards import auto_volume_bases

            stride = self.blast_options.stride
            volume_size = auto_volume_bases(ref.n_bases, stride, backends, copies)  # copies: searchers a device
        #: Bases per database volume (None: resident), given or chosen from free GPU memory.
        self.volume_size = volume_size
        if (split == "database" and len(backends) > 1) or volume_size is not None:
            from gseek.blast.shards import ShardedSearcher

            if split == "database" or len(backends) == 1:  # every device on every job
                groups = [backends]
            else:  # each device its own searcher of the whole database, in volumes
                groups = [[b] for b in backends]
            self.searchers = [ShardedSearcher(ref, task=task, devices=[_stream(b) for b in group], threads=threads,
                                              volume_bases=volume_size, **options)
                              for group in groups for _ in range(copies)]
        else:
            self.searchers = [BlastSearcher(ref, task=task, device=_stream(b), threads=threads, **options)
                              for b in backends for _ in range(per_gpu if b.name == "gpu" else 1)]
        per_gpu = copies if hasattr(self.searchers[0], "shards") else per_gpu  # as built above
        for s in self.searchers:  # their launches share their device's memory
            for one in getattr(s, "shards", [s]):
                one.device_searchers = per_gpu if one.backend.name == "gpu" else 1
        self.options = dict(task=task, outfmt=self.outfmt, **{k: v for k, v in sorted(options.items())})
        if self.shard is not None:  # another search (the unsplit one's fingerprint stays as it was)
            self.options["shard"] = list(self.shard)
        if database is None:  # the name as given (a BLAST database's, not its converted copy's)
            database = os.fspath(source or "") if isinstance(given, Index) or given is None else os.fspath(given)
        self.database = database
        self.job_bytes = BLAST_JOB_BYTES
        #: The jobs an input of less than a job each is cut into (:meth:`job_size`, :meth:`plan`; :func:`job_parts`).
        self.job_parts = job_parts(self.searchers)
        self.parse_threads = parse_threads(threads)
        #: On a GPU, the first search's device set-up begun on a thread (:func:`warm_devices`; None: none).
        self.warming = warm_devices(self.searchers)

    def __repr__(self) -> str:
        return f"BlastTask({self.searchers[0]!r}, searchers={len(self.searchers)})"

    @property
    def backends(self) -> list[Backend]:
        """The backend of each searcher (of each shard of a sharded one)."""
        return [one.backend for s in self.searchers for one in getattr(s, "shards", [s])]

    def fingerprint(self) -> str:
        """Hash of everything that changes the output: task, options, the index."""
        text = json.dumps(dict(task=self.name, options=self.options, database=self.database,
                               index=json.dumps(self.header, sort_keys=True, default=str)), sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    @staticmethod
    def check_output_name(path: str | os.PathLike, **options: Any) -> None:
        """BLAST output is text, tabular or SAM (``.gz``: gzip): a ``.bam`` or ``.cram`` name, which
        would hold that text, is refused (:class:`~gseek.errors.OutputError`); the options change nothing."""
        if os.fspath(path).lower().endswith(BINARY_SUFFIXES):
            raise OutputError(path, "BLAST output is text (tabular, or SAM with --outfmt sam), not BAM or CRAM; "
                                    "name it .tsv or .sam (samtools view -b makes a BAM of the SAM)")

    def read(self, query: QueryFile, chunk_bytes: int) -> Iterator[SequenceBatch]:
        sam = parse_outfmt(self.outfmt)[0] == "sam"
        if sam:
            from gseek.output.sam import check_read_names
        for path in query.paths:
            for batch in FastxReader(path, chunk_bytes=self.job_size(path, chunk_bytes), threads=self.parse_threads):
                if sam:  # a query name SAM's QNAME cannot hold: refused as the mapper refuses a read's
                    check_read_names(batch)
                yield batch

    def job_size(self, path: str | os.PathLike, chunk_bytes: int) -> int:
        """Query bytes a job for ``path``: ``chunk_bytes``, or less for a regular, uncompressed file of
        less than a job a part (:attr:`job_parts`), so that every part (a GPU, a CPU searcher) gets one (at
        least :data:`BLAST_MIN_JOB_BYTES`). Jobs change nothing in the output (the hits of a query are its own);
        a pipe keeps ``chunk_bytes``.

        >>> t = object.__new__(BlastTask); t.job_parts = 2
        >>> t.job_size("/dev/null", 8 << 20) == 8 << 20  # not a regular file
        True
        """
        size = _text_bytes(path)
        if size is None or self.job_parts < 2:
            return chunk_bytes
        return max(min(BLAST_MIN_JOB_BYTES, chunk_bytes), min(chunk_bytes, -(-size // self.job_parts)))

    def prelims(self) -> list[Any]:
        return [functools.partial(self._prelim, s) for s in self.searchers]

    def _prelim(self, searcher: BlastSearcher, job: Job) -> list[tuple[SequenceBatch, Any]]:
        batches = list(job.payloads)
        with numba_guard(searcher.backend.name == "cpu"):
            if len(batches) == 1 or not _joinable(batches):
                out = [(b, searcher.search(b)) for b in batches]
            else:  # several small files in one job: one search of them all (one lookup table, one scan of the
                # database), its HSPs then shared out (a query's HSPs are its own, whatever it is searched with)
                out = list(zip(batches, split_hits(searcher.search(SequenceBatch.concat(batches)),
                                                   [len(b) for b in batches])))
        if not reads_runs(self.outfmt):  # the runs' device memory back now, not after the job's wait for a finalize
            for _, hits in out:
                hits.release()
        return out

    def plan(self, queries: list[QueryFile]) -> int | None:
        """The job size for ``queries`` (the engine's ``plan``): their regular, uncompressed files'
        bytes shared out among the :attr:`job_parts`, within :data:`BLAST_MIN_JOB_BYTES` and
        :attr:`job_bytes`, so that many small files make about a job a part, as one file does
        (:meth:`job_size`); None (the default size) when a file's size says nothing of its text."""
        total = 0
        for query in queries:
            for path in query.paths:
                size = _text_bytes(path)
                if size is None:
                    return None
                total += size
        share = -(-total // max(1, self.job_parts))
        return max(BLAST_MIN_JOB_BYTES, min(self.job_bytes, share))

    def finalize(self, partial: list[tuple[SequenceBatch, Any]]) -> list[Chunk]:
        chunks = []
        for batch, hits in partial:
            with hits:  # the runs let go once this batch's text is made
                chunks.append(self._text(batch, hits))
        return chunks

    def _text(self, batch: SequenceBatch, hits: Any) -> Chunk:
        """One batch's output text, as the writer takes it, and its counts."""
        kind = self.outfmt.split()[0]
        titles = [f"{batch.name(i)} {batch.description(i)}".rstrip() for i in range(len(batch))] \
            if kind in ("0", "5", "7", "15") else None
        counts = dict(records=len(batch), hits=len(hits), mapped=int(len(set(hits.arrays["query"].tolist()))))
        if kind in ("0", "5", "15"):  # (loaded for these formats only: -outfmt 6 needs neither)
            from gseek.blast.json_report import json_reports, query_masking, query_statistics
            from gseek.blast.xml_report import xml_iterations

            one = getattr(self.searchers[0], "shards", [self.searchers[0]])[0]
        if kind == "0":  # the pairwise report
            o = one.options
            fields = dataclasses.asdict(o)
            masked = query_masking(batch, fields)
            text = pairwise_queries(hits, titles, o.karlin, o.reward, o.penalty, one.ref.db_bases,
                                    one.ref.db_sequences, masked=masked,
                                    statistics=query_statistics(batch, fields, o.karlin, masked),
                                    subjects=self.subjects, layout=self.layout, frame=self.frame,
                                    ungapped=o.ungapped, query_offset=self.query_offset,
                                    first_record=batch.first_record)
            return Chunk((text.encode("utf-8", "surrogateescape"), len(batch)), counts)
        if kind in ("5", "15"):  # BLAST XML / JSON: numbered by the writer
            opts = dataclasses.asdict(one.options)
            masked = query_masking(batch, opts) if kind == "15" else None  # (DUST once)
            stats = query_statistics(batch, opts, one.options.karlin, masked)
            if kind == "5":
                text = xml_iterations(hits, titles, one.options.karlin, one.ref.db_bases, one.ref.db_sequences,
                                      self.subjects, self.frame, self.query_offset, stats)
            else:
                text = json_reports(hits, batch, titles, one.options.karlin, one.ref.db_bases,
                                    one.ref.db_sequences, self.database, opts, self.subjects, self.frame,
                                    self.query_offset, stats, masked)
            first = (titles[0], int(len(batch.sequence(0)))) if len(batch) else ("", 0)
            return Chunk((text.encode("utf-8", "surrogateescape"), len(batch), first), counts)
        out = _TextIO()
        write_tabular(hits, out, self.outfmt, database=self.database, last=False, header=False,
                      subjects=self.subjects, query_titles=titles, query_offset=self.query_offset,
                      subject_offset=self.frame.subject_offset, subject_lengths=self.frame.subject_lengths)
        return Chunk(("".join(out.parts).encode("utf-8", "surrogateescape"), len(batch)), counts)

    def open_output(self, query: QueryFile) -> _BlastSink:
        ref = self.searchers[0].ref
        header = sam_header(ref.contig_names, np.diff(ref.contig_offsets), self.command) \
            if parse_outfmt(self.outfmt)[0] == "sam" else ""
        xml = None
        if parse_outfmt(self.outfmt)[0] == "5":
            from gseek.blast.xml_report import xml_header

            options = dataclasses.asdict(self.searchers[0].options)
            shown = "" if self.frame.source == "subject" else self.database  # (blastn: none for -subject)
            xml = functools.partial(xml_header, options["task"], shown, options=options)
        around = ("", "")
        if parse_outfmt(self.outfmt)[0] == "0":
            around = self.report_around()
        return _BlastSink(query, self.outfmt, header, self.index_check, xml, around, self.frame.query_numbers)

    def report_around(self) -> tuple[str, str]:
        """The pairwise report's prolog and epilog: the database's title (the frame's, a BLAST database's or
        ``gseek makeblastdb``'s, else the name given), size and posted date, the scoring."""
        from gseek.blast.database import posted_date

        one = getattr(self.searchers[0], "shards", [self.searchers[0]])[0]
        title = self.frame.database_title or (self.header.get("blastdb") or {}).get("title") or self.database
        date = self.frame.date if self.frame.database_title else posted_date(self.header, self.index_path)
        html = self.layout.html
        return (pairwise_prolog(one.options.task, title, one.ref.db_sequences, one.ref.db_bases, html),
                pairwise_epilog(title, date, one.ref.db_sequences, one.ref.db_bases, one.options, html))

    def dispatcher(self, **options: Any) -> Dispatcher:
        combine = self.combine
        if options.get("job_bytes") is None:  # sized from the query files: small files gathered into jobs
            options["job_bytes"], options["plan"], combine = self.job_bytes, self.plan, True
        return Dispatcher(self.read, self.prelims(), self.finalize, self.open_output, size=self.payload_bytes,
                          combine=combine, file_errors=self.file_errors, **options)


def job_parts(searchers: Sequence[Any]) -> int:
    """The jobs a small query input is cut into for ``searchers``: one a GPU (or set of GPUs one searcher spans:
    a database split) where the searches' gapped rounds run on the device (the blastn task, affine gaps),
    else one a searcher (megablast: its rounds on the host; a CPU searcher).

    A job is a whole search of the database. H200 (``benchmarks/RESULTS.md``, start41): the blastn task's 156
    contigs as one job or four took as long in steady state (0.61 / 0.62 s), but four first searches at once
    load every kernel four times (whole command 1.90 -> 1.50 s as one, call 1); megablast's four jobs overlap their
    host passes (1 Gbp: 1.46 s steady, 2.16 s as one job). An input of several jobs keeps them all.

    >>> class S:  # a searcher: its backend and whether its gapped rounds are greedy (on the host)
    ...     def __init__(self, name, device_id=0, greedy=False):
    ...         self.backend = type("B", (), dict(name=name, device_id=device_id))()
    ...         self.options = type("O", (), dict(linear_gaps=greedy))()
    >>> job_parts([S("gpu"), S("gpu"), S("gpu", 1), S("gpu", 1)]), job_parts([S("gpu", greedy=True)] * 4)
    (2, 4)
    """
    parts: set[tuple] = set()
    for k, searcher in enumerate(searchers):
        ones = getattr(searcher, "shards", [searcher])
        if all(one.backend.name == "gpu" and not one.options.linear_gaps for one in ones):
            parts.add(tuple(sorted({one.backend.device_id for one in ones})))
        else:
            parts.add(("searcher", k))
    return max(1, len(parts))


def warm_devices(searchers: Sequence[Any]) -> threading.Thread | None:
    """Begin on a thread what each GPU's first search waits for before its scan (the thread; None: no GPU searcher).

    The database's text uploaded to each GPU (``ReferenceText.on``: once a device; a search waits for it as for
    another searcher's upload), beside the reading of the queries and the first search's query side: 20-25 ms
    of the first search on the H200 (``benchmarks/RESULTS.md``, start41). Nothing that loads CuPy kernels: two
    threads meeting a kernel's first use at once each load it (measured: the first search slower). Only a head
    start: a failure is the search's to meet. A database in shards or volumes is left to its searchers (a
    volume's text is on a device only while it is searched).
    """
    firsts: dict[int, Any] = {}
    for searcher in searchers:
        if isinstance(searcher, BlastSearcher) and searcher.backend.name == "gpu":
            firsts.setdefault(searcher.backend.device_id, searcher)
    if not firsts:
        return None

    def run() -> None:
        for one in firsts.values():
            try:
                one.ref.on(one.backend)
            except Exception:  # noqa: BLE001, S112 - only a head start: the search meets any problem itself
                continue

    thread = threading.Thread(target=run, name="gseek-warm-devices", daemon=True)
    thread.start()
    return thread


def blast_value(task: str = "megablast", options: BlastOptions | None = None,
                overrides: dict[str, Any] | None = None) -> BlastOptions:
    """The search's :class:`~gseek.blast.options.BlastOptions`: ``options`` whole, or made (and checked)
    once from ``task`` and the loose ``overrides``; both at once raises.

    >>> blast_value("blastn", overrides={"evalue": 1e-5})
    BlastOptions(task='blastn', evalue=1e-05)
    """
    if options is None:
        return BlastOptions.for_task(task, **(overrides or {}))
    if not isinstance(options, BlastOptions):
        raise OptionError(f"expected a BlastOptions, not {type(options).__name__}")
    if overrides:
        raise OptionError(f"{', '.join(overrides)}: give the BlastOptions value or its fields as keywords, not both")
    if task not in ("megablast", options.task):
        raise OptionError(f"task {task!r} and the options' task {options.task!r} disagree")
    return options

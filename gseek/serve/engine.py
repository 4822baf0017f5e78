"""The engine of ``gseek serve``: databases loaded once, searchers kept warm, requests made into work.

An :class:`Engine` holds the configured databases of one process (each
:class:`~gseek.index.Index` loaded once, its :class:`~gseek.index.text.ReferenceText`
shared by every searcher of it; with several devices its parts put on each),
one :class:`~gseek.blast.searcher.BlastSearcher` or mapper per database,
options and device thread (kept, the most recently used first) and the
device threads (:mod:`gseek.serve.slots`) on which every search runs; it
answers a group of requests (:meth:`Engine.answer`: one search, its HSPs
shared out, each request's bytes). It is the service's own with
``--workers 0``, else each worker process's
(:mod:`gseek.serve.processes`). A :class:`Front` is what the HTTP side
needs besides: the limits, a private folder and host threads that parse
queries. A request is checked whole (:func:`parse_request`) before any
work; its queries are parsed under the names the client gave its files, so
an error reads as the local command's (``q.fa:3: ...``).
:class:`~gseek.serve.batcher.Batcher` gathers concurrent requests into
groups.
"""

from __future__ import annotations

import collections
import concurrent.futures
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gseek.errors import FastxError, GseekError, OptionError, one_line

from .limits import Limits
from .options import BLAST_TASKS, TASKS, blast_options, map_options, output_format

__all__ = ["Database", "Engine", "Front", "Limits", "RequestError", "SearchRequest", "database_spec", "database_specs",
           "parse_request", "request_error"]

#: Searchers kept per device worker (one per database and options; the least recently used goes first).
SEARCHERS_KEPT = 32
#: The ``@PG CL`` of a batched mapping run, replaced by each request's ``command`` in its output.
COMMAND_MARK = "gseek-serve-command-of-the-request"
#: Longest ``command`` a request may give (SAM ``@PG CL``).
MAX_COMMAND = 4096
#: The fields of a JSON record (BLAST+'s keywords; the alignment's rows for the pairwise view).
JSON_FIELDS = ("qaccver", "saccver", "pident", "length", "mismatch", "gapopen", "qstart", "qend", "sstart", "send",
               "evalue", "bitscore", "score", "qlen", "slen", "sstrand", "qseq", "sseq")
_TEXT_FIELDS = {"qaccver", "saccver", "sstrand", "qseq", "sseq"}


class RequestError(GseekError):
    """A request refused: ``status`` (HTTP), ``kind`` (``usage``: its options, as the CLI's usage
    errors; ``input``: its queries or names; ``limit``; ``auth``; ``busy``; ``timeout``) and the
    one-line message."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message

    def as_json(self) -> dict[str, Any]:
        return {"error": self.message, "kind": self.kind, "status": self.status}


@dataclass
class Database:
    """One configured database: its name (the only way a request names it), the path given to
    ``gseek serve`` (BLAST's ``# Database:`` line, as the local command prints the ``-x`` given),
    the tasks it answers (``map`` needs the FM-index), its sequences and bases, and where this
    process searches it: the loaded index and its text (None in the front of worker processes,
    :mod:`gseek.serve.processes`), and its index on each further device (``indexes``, by device
    name: a mapping task's FM arrays stay there)."""

    name: str
    path: str
    tasks: tuple[str, ...]
    sequences: int
    bases: int
    index: Any = None
    ref: Any = None
    indexes: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "sequences": self.sequences, "bases": self.bases, "tasks": list(self.tasks)}


def database_spec(spec: str) -> tuple[str, str]:
    """``NAME=PATH`` or ``PATH`` (named after its folder, ``.gseek`` left out) as (name, path).

    >>> database_spec("lambda=/data/lambda.gseek"), database_spec("/data/nt.gseek")
    (('lambda', '/data/lambda.gseek'), ('nt', '/data/nt.gseek'))
    """
    name, sep, path = spec.partition("=")
    if not sep:
        path = spec
        name = Path(spec.rstrip("/")).name.removesuffix(".gseek")
    if not name or not path or not all(c.isalnum() or c in "._-" for c in name):
        raise OptionError(f"-x {spec!r}: expected NAME=PATH or PATH, NAME of letters, digits, '.', '_', '-'")
    return name, path


def database_specs(specs: list[str]) -> list[tuple[str, str]]:
    """Every ``-x`` as (name, path) (:func:`database_spec`): at least one, no name twice."""
    out: dict[str, str] = {}
    for spec in specs:
        name, path = database_spec(spec)
        if name in out:
            raise OptionError(f"-x {spec}: a second database named {name!r}")
        out[name] = path
    if not out:
        raise OptionError("give at least one database (-x NAME=PATH)")
    return list(out.items())


@dataclass
class SearchRequest:
    """One checked request: the database, task, options (a :class:`~gseek.blast.options.BlastOptions`
    or a :class:`~gseek.serve.options.MapRequestOptions`), output format, the ``@PG CL`` command and the
    query files as (name the client gave, bytes)."""

    database: Database
    task: str
    options: Any
    outfmt: str
    command: str
    files: list[tuple[str, bytes]]
    queries: int = 0
    bases: int = 0
    #: The parsed query batches (:meth:`Engine.read_queries`), where the device worker needs them.
    parsed: list[Any] | None = None

    def summary(self) -> dict[str, Any]:
        return {"database": self.database.name, "task": self.task, "queries": self.queries, "bases": self.bases}


def request_error(exc: BaseException) -> RequestError:
    """A failed request's error as the JSON refusal the client gets: bad options 400 ``usage``
    (the CLI's usage errors), bad queries 400 ``input`` (the CLI's ``gseek: error:`` line),
    out of memory 503, anything else 500."""
    if isinstance(exc, RequestError):
        return exc
    if isinstance(exc, OptionError):
        return RequestError(400, "usage", str(exc))
    if isinstance(exc, (FastxError, GseekError, ValueError)):
        return RequestError(400, "input", one_line(exc))
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":  # CuPy's
        return RequestError(503, "resources", f"out of memory for this request: {one_line(exc)}")
    return RequestError(500, "internal", f"internal error: {one_line(exc)}")


def _files(queries: Any) -> list[tuple[str, bytes]]:
    if isinstance(queries, str):
        return [("<queries>", queries.encode("utf-8", "surrogateescape"))]
    if not isinstance(queries, list) or not queries:
        raise RequestError(400, "usage", "queries: give FASTA/FASTQ text, or a list of {\"name\", \"text\"}")
    out = []
    for k, item in enumerate(queries):
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise RequestError(400, "usage", f"queries[{k}]: expected {{\"name\": ..., \"text\": ...}}")
        name = item.get("name", f"<queries {k + 1}>")
        if not isinstance(name, str) or not name or len(name) > 1024 or any(c in name for c in "\0\n\r"):
            raise RequestError(400, "usage", f"queries[{k}]: name must be a one-line string")
        out.append((name, item["text"].encode("utf-8", "surrogateescape")))
    return out


def parse_request(body: Any, databases: dict[str, Database]) -> SearchRequest:
    """``body`` (a request's JSON) checked whole: :class:`RequestError` (400, or 404 for a database
    this service does not have) naming the first thing wrong."""
    if not isinstance(body, dict):
        raise RequestError(400, "usage", "request body: expected a JSON object")
    known = {"database", "task", "queries", "options", "format", "command"}
    unknown = sorted(set(body) - known)
    if unknown:
        raise RequestError(400, "usage", f"unknown field(s): {', '.join(unknown)}; a request has {', '.join(sorted(known))}")
    name = body.get("database")
    if not isinstance(name, str) or name not in databases:
        raise RequestError(404, "input", f"no database {name!r} here; this server has: {', '.join(databases)}")
    db = databases[name]
    task = body.get("task", "megablast")
    if task not in TASKS:
        raise RequestError(400, "usage", f"task {task!r}: expected one of {', '.join(TASKS)}")
    if task not in db.tasks:
        raise RequestError(400, "usage", f"database {name} answers {', '.join(db.tasks)} (no FM-index: no map)")
    command = body.get("command", "gseek serve")
    if not isinstance(command, str) or len(command) > MAX_COMMAND:
        raise RequestError(400, "usage", f"command: a string of at most {MAX_COMMAND} characters")
    command = " ".join(command.split())
    try:
        options = blast_options(task, body.get("options")) if task in BLAST_TASKS else map_options(body.get("options"))
        outfmt = output_format(task, body.get("format"))
        if outfmt == "mapping":
            check_mapping_options(options)
    except OptionError as exc:
        raise RequestError(400, "usage", str(exc)) from None
    return SearchRequest(db, task, options, outfmt, command, _files(body.get("queries")))


def check_mapping_options(options: Any) -> None:
    """A ``mapping`` request is :meth:`Mapper.map <gseek.mapper.Mapper.map>`'s: the mapping options
    and ``phred64`` only (trimming, ``skip``/``upto`` and the SAM options are ``map_files``')."""
    extra = [name for name in (*options.read_options.changed(), *options.sam_options.changed()) if name != "phred64"]
    if extra:
        raise OptionError(f"format mapping (Mapper.map) takes the mapping options and phred64 only, not "
                          f"{', '.join(extra)}")


def read_queries(req: SearchRequest, limits: Limits, workdir: str) -> list[Any]:
    """The request's query files parsed (in ``workdir``, a host thread): one batch per file (empty ones left
    out); errors name the client's file; the request's limits checked."""
    from gseek.seqio import FastxReader, SequenceBatch

    phred = 64 if req.task == "map" and req.options.read_options.phred64 else 33
    batches, names = [], []
    folder = tempfile.mkdtemp(dir=workdir)
    try:
        for k, (name, data) in enumerate(req.files):
            path = os.path.join(folder, str(k))
            with open(path, "wb") as fh:
                fh.write(data)
            try:
                found = list(FastxReader(path, chunk_bytes=max(1 << 16, len(data) + 1), phred=phred))
            except FastxError as exc:
                raise FastxError(name, exc.line, exc.rule) from None
            if found:
                batches.append(SequenceBatch.concat(found))
                names.append(name)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if req.outfmt in ("hits", "mapping") and len(batches) > 1:  # one result of every file: one batch
        fastq = [b.quals is not None for b in batches]
        if len(set(fastq)) > 1:  # (concatenated they would lose the qualities, or fail)
            other = names[fastq.index(not fastq[0])]
            raise FastxError(other, None, f"{'FASTQ' if fastq[0] else 'FASTA'} expected, as {names[0]}: "
                             "one kind of file a request")
        batches = [SequenceBatch.concat(batches)]
    req.queries = sum(len(b) for b in batches)
    req.bases = sum(int(b.codes.size) for b in batches)
    if not req.queries:  # as the local command (the pipeline's sink): an error, nothing written
        raise FastxError(", ".join(name for name, _ in req.files), None, "no FASTA/FASTQ records (empty file)")
    lim = limits
    if req.queries > lim.max_queries:
        raise RequestError(413, "limit", f"{req.queries:,} queries: over this server's limit of {lim.max_queries:,}")
    if req.bases > lim.max_bases:
        raise RequestError(413, "limit", f"{req.bases:,} bases: over this server's limit of {lim.max_bases:,}")
    if req.task != "map":
        for b in batches:
            if b.alphabet != "dna":
                raise OptionError(f"{b.path}: BLAST-style search needs nucleotide queries")
    return batches


class Front:
    """What the HTTP side needs of the service besides its device workers: the limits, a private
    folder (uploads, mapping outputs), the host threads that parse queries (:meth:`read_queries`).
    :class:`Engine` (the searches in this process) and
    :class:`~gseek.serve.processes.WorkerPool` (in worker processes) are fronts."""

    #: The device workers (:class:`~gseek.serve.slots.DeviceSlot` or
    #: :class:`~gseek.serve.processes.WorkerProcess`).
    slots: list[Any]
    databases: dict[str, Database]

    def __init__(self, limits: Limits | None, workdir: str | None = None, host_threads: int = 2) -> None:
        self.limits = limits or Limits()
        self.workdir = tempfile.mkdtemp(prefix="gseek-serve-", dir=workdir)  # private (0700)
        self.host = concurrent.futures.ThreadPoolExecutor(host_threads, thread_name_prefix="gseek-serve-host")

    def answer(self, target: tuple[Database, Any], reqs: list[SearchRequest], slot: Any) -> list[Any]:
        """The answers of the requests ``reqs`` of one database and options (``target``), a group of
        the batcher, on the device worker ``slot``: per request its bytes or its exception."""
        raise NotImplementedError

    def stage_seconds(self) -> dict[str, float]:
        """Seconds per stage of every BLAST search so far (the searchers' ``timings``)."""
        raise NotImplementedError

    def read_queries(self, req: SearchRequest) -> list[Any]:
        """The request's query files parsed (a host thread): one batch per file (empty ones left
        out); errors name the client's file; the request's limits checked."""
        return read_queries(req, self.limits, self.workdir)

    def close(self, wait: bool = True) -> None:
        """Stop the host threads (``wait``: for the work in flight) and remove the private folder."""
        self.host.shutdown(wait=wait, cancel_futures=True)
        shutil.rmtree(self.workdir, ignore_errors=True)


class Engine(Front):
    """Databases, warm searchers and the device threads of one process (the service's, or a worker
    process's).

    Arguments:
        databases: ``NAME=PATH`` or ``PATH`` specs (:func:`database_spec`).
        device, threads: the backend (``auto``, ``cpu``, ``gpu``, ``gpu:N``).
        limits: :class:`Limits`.
        devices: several devices instead of ``device`` (``--gpus 0,1`` with ``--workers 0``:
            ``["gpu:0", "gpu:1"]``), each holding every database (the index read once, its parts
            put on each device), a device thread each, searches sent to the least busy.
        workdir: the folder its private folder is made in (default: the system's).
        verify: check each part's SHA-256 as it loads (``Index.load``'s; a worker process other than
            the first leaves it to that one).
    """

    def __init__(self, databases: list[str], device: Any = "auto", threads: int | None = None,
                 limits: Limits | None = None, devices: list[Any] | None = None, workdir: str | None = None,
                 verify: bool = True) -> None:
        from .slots import make_slots

        specs = database_specs(databases)
        #: The device threads (:class:`~gseek.serve.slots.DeviceSlot`), one a device.
        self.slots = make_slots(devices or [device], threads)
        self.backend = self.slots[0].backend
        self.threads = threads
        self.databases = {name: self._load(name, path, verify) for name, path in specs}
        self._searchers: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()
        super().__init__(limits, workdir, max(2, 2 * len(self.slots)))

    def _load(self, name: str, path: str, verify: bool) -> Database:
        import numpy as np

        from gseek.index import Index
        from gseek.index.text import ReferenceText

        index = Index.load(path, device=self.backend, threads=self.threads, verify=verify)
        tasks = TASKS if all(p in index.arrays for p in ("occ", "sa_samples")) else BLAST_TASKS
        ref = ReferenceText.from_index(index)
        lengths = np.diff(np.asarray(ref.contig_offsets, np.int64))
        db = Database(name, path, tasks, int(lengths.size), int(lengths.sum()), index, ref)
        db.indexes[self.backend.spec] = index
        if "map" in tasks:  # the FM-index on each other device: the parts read (and checked) once
            for slot in self.slots:
                if slot.device not in db.indexes:
                    db.indexes[slot.device] = Index(index.arrays, index.header, slot.backend, path=index.path)
        return db

    def close(self, wait: bool = True) -> None:
        """Stop the threads (``wait``: for the work in flight to finish) and remove the private folder."""
        from .slots import close_slots

        close_slots(self.slots, wait)
        super().close(wait)

    # ------------------------------------------------------------------ BLAST

    def searcher(self, db: Database, options: Any, slot: Any = None) -> Any:
        """The warm :class:`~gseek.blast.searcher.BlastSearcher` of ``db`` with ``options`` on the
        device worker ``slot`` (default: the first)."""
        from gseek.blast.searcher import BlastSearcher

        slot = slot or self.slots[0]
        return self._warm(("blast", db.name, options, slot.number),
                          lambda: BlastSearcher(db.ref, device=slot.backend, options=options))

    def _warm(self, key: tuple, make: Callable[[], Any]) -> Any:
        """The searcher or mapper kept under ``key`` (made by ``make`` on first use); the least recently
        used are let go past :data:`SEARCHERS_KEPT` a worker (each holds device memory)."""
        with self._lock:
            found = self._searchers.get(key)
            if found is not None:
                self._searchers.move_to_end(key)
                return found
        made = make()
        with self._lock:
            found = self._searchers.setdefault(key, made)
            self._searchers.move_to_end(key)
            while len(self._searchers) > SEARCHERS_KEPT * len(self.slots):
                self._searchers.popitem(last=False)
        return found

    def stage_seconds(self) -> dict[str, float]:
        """Seconds per stage of every BLAST search so far, summed over the searchers (the searcher's
        ``timings``: with ``GSEEK_BLAST_TIMING`` set, the device synchronised at each stage's end)."""
        out: dict[str, float] = {}
        with self._lock:
            searchers = [s for k, s in self._searchers.items() if k[0] == "blast"]
        for searcher in searchers:
            for stage, seconds in dict(searcher.timings).items():  # (a worker may be adding a stage)
                out[stage] = round(out.get(stage, 0.0) + seconds, 4)
        return out

    def answer(self, target: tuple[Database, Any], reqs: list[SearchRequest], slot: Any = None) -> list[Any]:
        """The requests ``reqs`` of one database and options (``target``) answered on the device
        thread ``slot``: mapping requests in one pipeline run (:meth:`map_group`), BLAST requests'
        batches in one search (:meth:`search_group`) and each request's output made from its own
        HSPs (:meth:`blast_text`). Each item: the request's bytes or its exception."""
        if reqs and reqs[0].task == "map":
            return self.map_group(target, reqs, slot)
        found = iter(self.search_group(target, [b for req in reqs for b in req.parsed], slot))
        out: list[Any] = []
        for req in reqs:
            parts = [next(found) for _ in req.parsed]
            error = next((p for p in parts if isinstance(p, BaseException)), None)
            try:
                out.append(error if error is not None else self.blast_text(req, parts, req.parsed))
            except Exception as exc:  # noqa: BLE001 - that request's error, reported to it
                out.append(exc)
        return out

    def search_group(self, target: tuple[Database, Any], batches: list[Any], slot: Any = None) -> list[Any]:
        """One search of ``batches`` laid end to end (the device thread ``slot``'s warm searcher of
        ``target``, ``(database, options)``), its HSPs shared out to each batch (a query's HSPs are
        its own, whatever it is searched with); where the joined search fails, each batch is
        searched alone, so a failure is its own batch's only. Each item:
        :class:`~gseek.blast.searcher.BlastHits` or the exception of that batch."""
        from gseek.backend import numba_guard
        from gseek.blast.shards import split_hits
        from gseek.seqio import SequenceBatch

        searcher = self.searcher(*target, slot)
        with numba_guard(searcher.backend.name == "cpu"):
            if len(batches) > 1:
                try:
                    return list(split_hits(searcher.search(SequenceBatch.concat(batches)), [len(b) for b in batches]))
                except Exception:  # noqa: BLE001 - each alone below: the failure is one batch's
                    pass
            out: list[Any] = []
            for b in batches:
                try:
                    out.append(searcher.search(b))
                except Exception as exc:  # noqa: BLE001 - that request's error, reported to it
                    out.append(exc)
            return out

    def blast_text(self, req: SearchRequest, parts: list[Any], batches: list[Any] | None = None) -> bytes:
        """The request's output (a host thread): the bytes ``gseek search --task T -x PATH`` writes
        for its queries, or JSON records (``format: json``)."""
        import numpy as np

        from gseek.blast.report import parse_outfmt, sam_header, write_tabular

        if req.outfmt == "json":
            return json_records(req, parts)
        if req.outfmt == "hits":
            from .wire import hits_to_bytes

            return hits_to_bytes(parts[0])
        out = _Text()
        kind = parse_outfmt(req.outfmt)[0]
        if kind == "sam":
            ref = req.database.ref
            out.write(sam_header(ref.contig_names, np.diff(ref.contig_offsets), req.command))
        for i, hits in enumerate(parts):
            batch = None if batches is None else batches[i]
            titles = None if batch is None or kind != "7" else \
                [f"{batch.name(j)} {batch.description(j)}".rstrip() for j in range(len(batch))]
            write_tabular(hits, out, req.outfmt, database=req.database.path, last=False, header=False,
                          query_titles=titles)
        if kind == "7" and req.queries:
            out.write(f"# BLAST processed {req.queries} queries\n")
        return "".join(out.parts).encode("utf-8", "surrogateescape")

    # ------------------------------------------------------------------ mapping

    def mapper(self, db: Database, options: Any, slot: Any = None) -> Any:
        """The warm :class:`~gseek.mapper.Mapper` of ``db`` with ``options`` (``MapOptions``) on ``slot``."""
        from gseek.mapper import Mapper

        slot = slot or self.slots[0]
        return self._warm(("map", db.name, options, slot.number),
                          lambda: Mapper(db.indexes.get(slot.device, db.index), options=options))

    def map_results(self, target: tuple[Database, Any], reqs: list[SearchRequest], slot: Any = None) -> list[Any]:
        """The ``mapping`` requests ``reqs``: each request's reads (one batch, parsed on a host thread:
        ``req.parsed``) through the slot's :meth:`Mapper.map <gseek.mapper.Mapper.map>`, as the local
        API maps them; each item the result's bytes (:func:`~gseek.serve.wire.mapping_to_bytes`) or
        that request's exception."""
        from .wire import mapping_to_bytes

        db, options = target
        out: list[Any] = []
        for req in reqs:
            try:
                result = self.mapper(db, options.options, slot).map(req.parsed[0])
                out.append(mapping_to_bytes(result, req.files[0][0]))
            except Exception as exc:  # noqa: BLE001 - that request's error, reported to it
                out.append(exc)
        return out

    def map_group(self, target: tuple[Database, Any], reqs: list[SearchRequest], slot: Any = None) -> list[Any]:
        """The mapping requests ``reqs`` of one database and options (``target``) in one pipeline run
        (a device worker, ``slot``): one :class:`~gseek.pipeline.MapTask`, a query per request, the reads
        of several requests joined into one search per job (the task's ``combine``), each request's
        output its own: the bytes ``map_files`` writes for it alone, its ``@PG CL`` its command.
        Where the joined run fails, each request runs alone (a failure is its own only). Each item:
        SAM bytes or that request's exception (errors name the client's files); ``mapping``
        requests go to :meth:`map_results`."""
        from gseek.pipeline import MapTask, QueryFile

        if any(req.outfmt == "mapping" for req in reqs):
            done = iter(self.map_results(target, [r for r in reqs if r.outfmt == "mapping"], slot))
            sam = iter(self.map_group(target, [r for r in reqs if r.outfmt != "mapping"], slot))
            return [next(done) if req.outfmt == "mapping" else next(sam) for req in reqs]
        if not reqs:
            return []
        db, options = target
        index = db.indexes.get((slot or self.slots[0]).device, db.index)
        folder = tempfile.mkdtemp(dir=self.workdir)
        try:
            queries = []
            for r, req in enumerate(reqs):
                paths = []
                for k, (_, data) in enumerate(req.files):
                    paths.append(os.path.join(folder, f"{r}.{k}.fq"))
                    with open(paths[-1], "wb") as fh:
                        fh.write(data)
                queries.append(QueryFile(tuple(paths), os.path.join(folder, f"{r}.sam")))

            def run(which: list[int]) -> list[Any]:
                task = MapTask(index, options.options, read_options=options.read_options,
                               sam_options=options.sam_options, threads=self.threads, command=COMMAND_MARK)
                return task.dispatcher(workers=0).run([queries[r] for r in which])

            try:
                results = run(list(range(len(reqs))))
            except Exception:  # noqa: BLE001 - each alone below: the failure is one request's
                if len(reqs) == 1:
                    raise
                results = []
                for r in range(len(reqs)):
                    try:
                        results += run([r])
                    except Exception as exc:  # noqa: BLE001 - that request's error, reported to it
                        results.append(exc)
            out: list[Any] = []
            for req, query, result in zip(reqs, queries, results):
                error = result if isinstance(result, BaseException) else result.error
                if isinstance(error, FastxError):
                    names = dict(zip(query.paths, (name for name, _ in req.files)))
                    error = FastxError(names.get(error.path, error.path), error.line, error.rule)
                if error is not None:
                    out.append(error)
                    continue
                data = Path(query.output).read_bytes()
                out.append(data.replace(COMMAND_MARK.encode(), req.command.encode("utf-8", "surrogateescape"), 1))
            return out
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def warm(self) -> None:
        """One small search of each database on each device worker (kernels compiled or loaded, the
        text on each device, each worker's searcher made)."""
        from gseek.blast.options import BlastOptions

        for db in self.databases.values():
            codes = db.ref.bases(0, min(200, int(db.ref.contig_offsets[1])))
            seq = "".join("ACGTN"[int(c)] for c in codes)
            if len(seq) >= 50:
                for slot in self.slots:
                    self.searcher(db, BlastOptions.for_task("megablast"), slot).search([("warm", seq)])


class _Text:
    """A text sink for :func:`~gseek.blast.report.write_tabular` collecting its strings."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> None:
        self.parts.append(text)


def _value(field: str, text: str) -> Any:
    if field in _TEXT_FIELDS:
        return text
    number = float(text)
    return int(number) if number.is_integer() and field not in ("pident", "evalue", "bitscore") else number


def json_records(req: SearchRequest, parts: list[Any]) -> bytes:
    """A request's HSPs as JSON: per query its name, length and hits, each hit BLAST+'s fields
    (:data:`JSON_FIELDS`, the values of the tabular text)."""
    import numpy as np

    from gseek.blast.report import tabular_lines

    queries = []
    for hits in parts:
        lines = tabular_lines(hits, list(JSON_FIELDS)) if len(hits) else []
        rows = [dict(zip(JSON_FIELDS, (_value(f, t) for f, t in zip(JSON_FIELDS, line.split("\t")))))
                for line in lines]
        bounds = np.searchsorted(hits.arrays["query"], np.arange(len(hits.query_names) + 1), side="left")
        for q, name in enumerate(hits.query_names):
            queries.append({"name": name, "length": int(hits.query_lengths[q]),
                            "hits": rows[int(bounds[q]):int(bounds[q + 1])]})
    return json.dumps({"database": req.database.name, "task": req.task, "queries": queries},
                      separators=(",", ":")).encode()

"""The engine of ``gseek serve``: databases loaded once, searchers kept warm, requests answered.

An :class:`Engine` holds the configured databases of one process (each
:class:`~gseek.index.Index` loaded once, its
:class:`~gseek.index.text.ReferenceText` shared by every searcher of it;
with several devices its parts put on each), one
:class:`~gseek.blast.searcher.BlastSearcher` or mapper per database, options
and device thread (kept, the most recently used first; the BLAST stage
seconds of one let go kept) and the device threads
(:mod:`gseek.serve.slots`) on which every search runs; it answers a group of
requests (:meth:`Engine.answer`: one search, its HSPs shared out, each
request's bytes). It is the service's own with ``--workers 0``, else each
worker process's (:mod:`gseek.serve.processes`). A :class:`Front` is what
the HTTP side needs besides: the limits, a private folder and host threads
that parse queries. What a request is — checked whole before any work, its
queries read — is :mod:`gseek.serve.request`'s (its names are here too, as
importers know them). :class:`~gseek.serve.batcher.Batcher` gathers
concurrent requests into groups.
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
from pathlib import Path
from typing import Any

from gseek.errors import FastxError

from .limits import Limits
from .options import BLAST_TASKS, TASKS
from .request import (Database, RequestError, SearchRequest, database_spec, database_specs, parse_request,
                      read_queries, request_error)

__all__ = ["Database", "Engine", "Front", "Limits", "RequestError", "SearchRequest", "add_seconds", "database_spec",
           "database_specs", "parse_request", "request_error"]

#: Searchers kept per device worker (one per database and options; the least recently used goes first).
SEARCHERS_KEPT = 32
#: The ``@PG CL`` of a batched mapping run, replaced by each request's ``command`` in its output.
COMMAND_MARK = "gseek-serve-command-of-the-request"
#: The fields of a JSON record (BLAST+'s keywords; the alignment's rows for the pairwise view).
JSON_FIELDS = ("qaccver", "saccver", "pident", "length", "mismatch", "gapopen", "qstart", "qend", "sstart", "send",
               "evalue", "bitscore", "score", "qlen", "slen", "sstrand", "qseq", "sseq")
_TEXT_FIELDS = {"qaccver", "saccver", "sstrand", "qseq", "sseq"}


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
        #: The BLAST stage seconds of the searchers let go (:meth:`_warm`), kept in :meth:`stage_seconds`.
        self._stages_let_go: dict[str, float] = {}
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
        used are let go past :data:`SEARCHERS_KEPT` a worker (each holds device memory), a BLAST
        searcher's stage seconds kept (:meth:`stage_seconds` only grows)."""
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
                (kind, *_), gone = self._searchers.popitem(last=False)
                if kind == "blast":
                    self._stages_let_go = add_seconds(self._stages_let_go, dict(gone.timings))
        return found

    def stage_seconds(self) -> dict[str, float]:
        """Seconds per stage of every BLAST search so far, summed over the searchers, those let go
        included (the searcher's ``timings``: with ``GSEEK_BLAST_TIMING`` set, the device synchronised
        at each stage's end)."""
        with self._lock:
            out = dict(self._stages_let_go)
            searchers = [s for k, s in self._searchers.items() if k[0] == "blast"]
        for searcher in searchers:
            out = add_seconds(out, dict(searcher.timings))  # (a copy: a worker may be adding a stage)
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


def add_seconds(totals: dict[str, float], more: dict[str, float]) -> dict[str, float]:
    """Seconds by stage of ``totals`` and ``more`` together (a new dict).

    >>> add_seconds({"ungapped": 1.5}, {"ungapped": 0.25, "gapped": 2.0})
    {'ungapped': 1.75, 'gapped': 2.0}
    """
    out = dict(totals)
    for stage, seconds in more.items():
        out[stage] = round(out.get(stage, 0.0) + seconds, 4)
    return out


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

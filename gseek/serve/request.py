"""A request of ``gseek serve``: the databases it may name, its JSON checked whole, its queries read, its refusal.

A :class:`Database` is one configured database (``-x NAME=PATH``: a request
names it by NAME only, nothing in a request names a path). A request's JSON is
checked whole (:func:`parse_request`) before any work, into a
:class:`SearchRequest`; its queries are parsed (:func:`read_queries`, a host
thread) under the names the client gave its files, so an error reads as the
local command's (``q.fa:3: ...``); a failure becomes the JSON refusal its
client gets (:class:`RequestError`, :func:`request_error`).
:mod:`~gseek.serve.engine` answers the requests.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gseek.errors import FastxError, GseekError, OptionError, one_line

from .limits import Limits
from .options import BLAST_TASKS, TASKS, blast_options, map_options, output_format

__all__ = ["Database", "RequestError", "SearchRequest", "check_mapping_options", "database_spec", "database_specs",
           "parse_request", "read_queries", "request_error"]

#: Longest ``command`` a request may give (SAM ``@PG CL``).
MAX_COMMAND = 4096


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
    #: The parsed query batches (:func:`read_queries`), where the device worker needs them.
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

"""A client of ``gseek serve`` on the standard library alone (``urllib``): it starts fast.

:class:`Client` is the Python API; :func:`search_on_server` is ``gseek search --server URL``
(or ``GSEEK_SERVER``): it reads the query files here, sends them, and writes the bytes the local
command writes (``@PG CL`` is the command given here), with its exit codes and one-line errors.

>>> Client("http://127.0.0.1:8000/").url
'http://127.0.0.1:8000'
>>> Client("ftp://x")
Traceback (most recent call last):
...
gseek.serve.client.ServerError: --server ftp://x: expected http://HOST:PORT or https://HOST:PORT
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

from gseek.errors import FastxError, GseekError

__all__ = ["Client", "ServerError", "search_on_server"]

#: Seconds a request may wait for its answer (the server has its own limit).
TIMEOUT = 3600.0


class ServerError(GseekError):
    """The service refused a request or could not be reached: ``status`` (0: no answer), ``kind``
    (``usage``: the request's options, a usage error of the command), the one-line message."""

    def __init__(self, message: str, status: int = 0, kind: str = "connection") -> None:
        super().__init__(message)
        self.status, self.kind = status, kind


class Client:
    """A ``gseek serve`` service at ``url``; ``token``: its bearer token (default: ``GSEEK_TOKEN``).

    >>> client = Client("http://127.0.0.1:8000")  # doctest: +SKIP
    >>> client.search("lambda", ">q\\nACGT...\\n", task="megablast", evalue=1e-5).to_pandas()  # doctest: +SKIP
    """

    def __init__(self, url: str, token: str | None = None, timeout: float = TIMEOUT) -> None:
        url = url.strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ServerError(f"--server {url}: expected http://HOST:PORT or https://HOST:PORT")
        self.url, self.timeout = url, timeout
        self.token = token if token is not None else os.environ.get("GSEEK_TOKEN") or None

    def __repr__(self) -> str:
        return f"Client({self.url!r})"

    def _call(self, path: str, body: dict | None = None, method: str | None = None) -> tuple[bytes, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method or ("POST" if data else "GET"),
                                     headers={"Content-Type": "application/json", "Accept": "*/*"})
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.read(), resp.headers
        except urllib.error.HTTPError as exc:
            text = exc.read()
            try:
                error = json.loads(text)
                raise ServerError(error["error"], exc.code, error.get("kind", "")) from None
            except (ValueError, KeyError, TypeError):
                raise ServerError(f"{self.url}: HTTP {exc.code} {exc.reason}", exc.code, "http") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise ServerError(f"cannot reach the gseek server at {self.url}: {reason}") from None

    def health(self) -> dict[str, Any]:
        return json.loads(self._call("/healthz")[0])

    def databases(self) -> list[dict[str, Any]]:
        """The service's databases: name, sequences, bases, tasks."""
        return json.loads(self._call("/api/v1/databases")[0])["databases"]

    def search_bytes(self, database: str, queries: str | Sequence[tuple[str, str]], task: str = "megablast",
                     options: dict[str, Any] | None = None, format: str = "6", command: str | None = None
                     ) -> tuple[bytes, Any]:
        """The output bytes of a search (and the response's headers): ``queries`` FASTA/FASTQ text
        or ``(file name, text)`` pairs; ``format`` ``6``/``7`` (with field keywords), ``sam``, ``json``
        (``hits`` and ``mapping``: what :meth:`search` and :meth:`map` read)."""
        body: dict[str, Any] = {"database": database, "task": task, "options": options or {}, "format": format,
                                "queries": queries if isinstance(queries, str) else
                                [{"name": n, "text": t} for n, t in queries]}
        if command is not None:
            body["command"] = command
        return self._call("/api/v1/search", body)

    def search(self, database: str, queries: str | Sequence[tuple[str, str]], task: str = "megablast",
               **options: Any) -> Any:
        """What the local API returns for ``queries``: for a BLAST task their HSPs as a
        :class:`~gseek.blast.hits.BlastHits` (what :meth:`BlastSearcher.search
        <gseek.blast.searcher.BlastSearcher.search>` returns, with ``to_pandas()`` / ``to_arrow()``;
        one for every file of ``queries``; ``options``: :class:`~gseek.blast.options.BlastOptions`
        fields); for ``task="map"`` :meth:`map`'s :class:`~gseek.mapper.MappingResult`. NumPy and
        the BLAST or mapping package are imported here, on the first call (the command line's
        client never is)."""
        if task == "map":
            return self.map(database, queries, **options)
        from .wire import hits_from_bytes

        data, _ = self.search_bytes(database, queries, task, options, "hits")
        return hits_from_bytes(data)

    def map(self, database: str, reads: str | Sequence[tuple[str, str]], **options: Any) -> Any:
        """``reads`` (FASTA/FASTQ text, or ``(file name, text)`` pairs: one batch of them all) mapped
        by the service as the local :meth:`Mapper.map <gseek.mapper.Mapper.map>` maps them: a
        :class:`~gseek.mapper.MappingResult` (its views, ``MD``, ``to_pandas()`` / ``to_arrow()``
        the local one's); ``options``: :class:`~gseek.options.MapOptions` fields (``mismatches``,
        ``max_alignments``, ...) and ``phred64`` (FASTQ qualities read as Phred+64).

        >>> Client("http://127.0.0.1:8000").map("lambda", open("reads.fq").read(), mismatches=2)  # doctest: +SKIP
        MappingResult(reads=2000, mapped=1459, hits=1459)
        """
        from .wire import mapping_from_bytes

        data, _ = self.search_bytes(database, reads, "map", options, "mapping")
        return mapping_from_bytes(data)

    def records(self, database: str, queries: str | Sequence[tuple[str, str]], task: str = "megablast",
                **options: Any) -> list[dict[str, Any]]:
        """The HSPs of ``queries`` as JSON records (``format: json``: per query its name, length and
        hits, each hit BLAST+'s fields), on the standard library alone."""
        data, _ = self.search_bytes(database, queries, task, options, "json")
        return json.loads(data)["queries"]


def _read_query(path: str) -> str:
    """A query file's text as the local reader takes it (``-``: stdin; gzip undone), or its error."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as fh:
                data = fh.read()
    except OSError as exc:
        raise FastxError(path, None, f"cannot open: {exc.strerror or exc}") from None
    if data[:2] == b"\x1f\x8b":
        import gzip
        import zlib

        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise FastxError(path, None, f"cannot read: {exc}") from None
    return data.decode("utf-8", "surrogateescape")


def _write(output: str | None, data: bytes) -> None:
    """``data`` to stdout (``-``, None) or to ``output`` under a temporary name renamed when complete
    (``.NAME.tmp-PID``, as :func:`gseek.seqio.atomic.open_output` names it)."""
    if output in (None, "-"):
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    folder, name = os.path.split(output)
    temporary = os.path.join(folder, f".{name}.tmp-{os.getpid()}")
    try:
        with open(temporary, "wb") as fh:
            fh.write(data)
        os.replace(temporary, output)
    except OSError as exc:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise OSError(exc.errno, exc.strerror, output) from None


#: ``gseek search``'s BLAST option names that differ from the request's (BlastOptions fields).
_RENAMED = {"gapopen": "gap_open", "gapextend": "gap_extend"}


def blast_request_options(given: dict[str, Any]) -> dict[str, Any]:
    """``gseek search``'s given BLAST options (click's values) as a request's options.

    >>> blast_request_options({"evalue": 1e-5, "gapopen": 2, "dust": "no", "outfmt": "7", "strand": None})
    {'evalue': 1e-05, 'gap_open': 2, 'dust': None}
    """
    out: dict[str, Any] = {}
    for name, value in given.items():
        if value is None or name == "outfmt":
            continue
        if name == "db_volume_size":
            raise ServerError("--db-volume-size: the server holds its databases whole (not with --server)", 400,
                              "usage")
        if name == "dust":
            value = None if value == "no" else list(value) if isinstance(value, tuple) else value
            if value == "yes":
                continue  # the preset's DUST
        out[_RENAMED.get(name, name)] = value
    return out


def search_on_server(url: str, database: str | None, queries: Sequence[str], task: str, map_options: dict[str, Any],
                     blast_options: dict[str, Any], output: str | None, command: str,
                     say: Callable[[str], None] = lambda line: None) -> None:
    """``gseek search --server URL``: the same bytes on stdout or in ``output`` as the local
    command; :class:`ServerError` (kind ``usage``: a usage error) or :class:`~gseek.errors.FastxError`."""
    started = time.perf_counter()
    if not database:
        raise ServerError(f"--task {task} needs -x NAME (a database of the server)", 400, "usage")
    if not queries:
        raise ServerError(f"--task {task} needs -q FILE", 400, "usage")
    client = Client(url)
    if task == "map":
        fmt, options = "sam", dict(map_options)
        if output not in (None, "-") and not output.endswith(".sam"):
            raise ServerError(f"-o {output}: with --server, --task map writes SAM (FILE.sam or stdout)", 400, "usage")
    else:
        fmt, options = blast_options.get("outfmt") or "6", blast_request_options(blast_options)
    files = [(path, _read_query(path)) for path in queries]
    data, headers = client.search_bytes(database, files, task, options, fmt, command)
    _write(output, data)
    say(f"[gseek] {task}: {headers.get('X-Gseek-Queries', '?')} queries, {len(data):,} bytes from {client.url} in "
        f"{time.perf_counter() - started:.2f} s")

"""The HTTP side of ``gseek serve``: a Starlette application over a front (:class:`~gseek.serve.engine.Engine`,
or :class:`~gseek.serve.processes.WorkerPool` with worker processes).

Routes (``docs/serve.md``; the schema at ``/openapi.json``): ``GET /healthz``,
``GET /api/v1/databases``, ``POST /api/v1/search`` (the result's bytes),
``POST /api/v1/jobs``, ``GET``/``DELETE /api/v1/jobs/{id}``,
``GET /api/v1/jobs/{id}/result``, and the web page at ``/`` with its assets.
Every refusal is a JSON object ``{"error": one line, "kind": ..., "status": N}``.
With a token, every ``/api/`` route wants ``Authorization: Bearer TOKEN``
(compared in constant time); the page and ``/healthz`` are open.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import secrets
import sys
import time
import traceback
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from gseek.errors import GseekError, one_line

from .batcher import Batcher
from .engine import Front, RequestError, SearchRequest, parse_request, request_error
from .openapi import OPENAPI

__all__ = ["create_app"]

STATIC = Path(__file__).resolve().parent / "static"
#: The page's files, by URL (nothing else under ``/static`` is served).
ASSETS = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}
_MEDIA = {"json": "application/json", "sam": "text/plain; charset=utf-8", "hits": "application/x-npz",
          "mapping": "application/x-npz"}


def _error(exc: RequestError, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(exc.as_json(), status_code=exc.status, headers=headers)


def _response(data: bytes, media: str, headers: dict[str, str] | None, chunk: int) -> Response:
    """``data`` as one response, or streamed in pieces of ``chunk`` bytes (chunked transfer
    encoding: the client reads the first piece while the rest are sent) where it is larger."""
    if len(data) <= chunk:
        return Response(data, media_type=media, headers=headers)
    view = memoryview(data)

    async def pieces() -> AsyncIterator[bytes]:
        for start in range(0, len(view), chunk):
            yield view[start:start + chunk]

    return StreamingResponse(pieces(), media_type=media, headers=headers)


class Service:
    """What the routes share: the engine, the batcher, the limits, the token, the jobs and the log."""

    def __init__(self, engine: Front, token: str | None, log: Callable[[str], None]) -> None:
        self.engine, self.limits, self.token, self.log = engine, engine.limits, token, log
        lim = self.limits
        #: BLAST and mapping requests, each kind gathered per database and options, on the same slots.
        self.batcher = Batcher(engine.answer, engine.slots, lim.window, lim.batch_queries, lim.batch_bases)
        self.active = 0
        #: Requests cancelled because their client went away.
        self.cancelled = 0
        self.jobs: dict[str, Job] = {}
        self.started = time.time()

    def authorized(self, request: Request) -> None:
        if self.token is None:
            return
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), self.token.encode()):
            raise RequestError(401, "auth", "missing or wrong bearer token (Authorization: Bearer TOKEN)")

    async def body(self, request: Request) -> Any:
        """The request's JSON body, within the body limit (413), whole (400 when it ends early), in
        time (408: a slow client holds no connection beyond the request's time limit)."""
        try:
            return await asyncio.wait_for(self._body(request), self.limits.timeout)
        except asyncio.TimeoutError:
            raise RequestError(408, "timeout", f"request body not received within {self.limits.timeout:g} s"
                               ) from None

    async def _body(self, request: Request) -> Any:
        limit = self.limits.max_body
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            raise RequestError(413, "limit", f"request body of {int(length):,} bytes: over this server's limit of "
                                             f"{limit:,}")
        parts, size = [], 0
        try:
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise RequestError(413, "limit", f"request body over this server's limit of {limit:,} bytes")
                parts.append(chunk)
        except ClientDisconnect:
            raise RequestError(400, "input", "request body ended early (client gone)") from None
        if length.isdigit() and size != int(length):
            raise RequestError(400, "input", f"request body of {size:,} bytes, not the {int(length):,} announced")
        try:
            return json.loads(b"".join(parts))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise RequestError(400, "usage", f"request body is not JSON: {one_line(exc)}") from None

    def admit(self) -> None:
        if self.active >= self.limits.queue:
            raise RequestError(429, "busy", f"busy: {self.active} requests in progress (limit {self.limits.queue}); "
                                            "try again later")

    async def run(self, req: SearchRequest) -> tuple[bytes, str]:
        """The result of ``req``: its bytes and media type (a host thread parses its queries, a device
        worker searches and writes the bytes, batched with other requests)."""
        loop = asyncio.get_running_loop()
        engine = self.engine
        with self.batcher.coming():  # groups wait for it
            req.parsed = await loop.run_in_executor(engine.host, engine.read_queries, req)
        kind = "map" if req.task == "map" else "blast"
        fasta = kind == "map" or tuple(sorted({b.quals is None for b in req.parsed}))  # FASTA, FASTQ apart
        data = await self.batcher.search((req.database.name, req.options, fasta), (req.database, req.options), req,
                                         (req.queries, req.bases), kind)
        if len(data) > self.limits.max_result:
            raise RequestError(413, "limit", f"result of {len(data):,} bytes: over this server's limit of "
                                             f"{self.limits.max_result:,}; send fewer queries")
        return data, _MEDIA.get(req.outfmt, "text/plain; charset=utf-8")

    async def unless_gone(self, request: Request, work: Any) -> Any:
        """``work``'s result, or ``work`` cancelled when the client goes away first (a batch not yet
        sent leaves the request out; a search under way finishes, its result dropped)."""
        task = asyncio.ensure_future(work)

        async def gone() -> None:
            while (await request.receive())["type"] != "http.disconnect":
                pass

        watch = asyncio.ensure_future(gone())
        try:
            await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watch.cancel()
            if not task.done():
                task.cancel()
                self.cancelled += 1
        if not task.done() or task.cancelled():
            raise RequestError(499, "input", "client gone: request cancelled")
        return task.result()

    async def timed(self, req: SearchRequest) -> tuple[bytes, str]:
        try:
            return await asyncio.wait_for(self.run(req), self.limits.timeout)
        except asyncio.TimeoutError:
            raise RequestError(504, "timeout", f"no result within this server's limit of {self.limits.timeout:g} s"
                               ) from None


class Job:
    """A search run in the background: its status, result (kept :attr:`Limits.job_ttl` seconds
    after it ends) or error."""

    def __init__(self, req: SearchRequest) -> None:
        self.id = secrets.token_urlsafe(16)
        self.req = req
        self.status = "running"
        self.created = time.time()
        self.finished: float | None = None
        self.result: bytes | None = None
        self.media = ""
        self.error: dict[str, Any] | None = None
        self.task: asyncio.Task | None = None

    def describe(self) -> dict[str, Any]:
        out = {"id": self.id, "status": self.status, "created": self.created, "finished": self.finished,
               **self.req.summary()}
        if self.result is not None:
            out.update(bytes=len(self.result), result=f"/api/v1/jobs/{self.id}/result")
        if self.error is not None:
            out["error"] = self.error
        return out


def _expire_jobs(service: Service) -> None:
    now = time.time()
    for job_id, job in list(service.jobs.items()):
        if job.finished is not None and now - job.finished > service.limits.job_ttl:
            del service.jobs[job_id]


def create_app(engine: Front, token: str | None = None, log: Callable[[str], None] | None = None) -> Starlette:
    """The application over ``engine``: ``token`` (None: no authentication), ``log`` (one line per
    request; default: stderr)."""
    service = Service(engine, token, log or (lambda line: print(line, file=sys.stderr, flush=True)))

    def note(request: Request, **info: Any) -> None:
        request.state.info = {**getattr(request.state, "info", {}), **info}

    async def api(request: Request, handler: Callable) -> Response:
        try:
            service.authorized(request)
            return await handler(request)
        except RequestError as exc:
            return _error(exc, {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None)
        except Exception as exc:  # noqa: BLE001 - a bug: still a JSON refusal, the traceback in the log
            traceback.print_exc(file=sys.stderr)
            return _error(request_error(exc))

    async def healthz(request: Request) -> Response:
        batcher = service.batcher
        workers = []
        for slot in engine.slots:
            ran = batcher.ran[slot.number]
            workers.append({"device": slot.device, "pid": getattr(slot, "pid", None), "up": slot.up,
                            "restarts": getattr(slot, "restarts", 0), "busy": batcher.busy[slot.number],
                            "batches": ran["blast"], "map_batches": ran["map"],
                            "seconds": round(batcher.seconds[slot.number], 3)})
        return JSONResponse({"status": "ok", "databases": list(engine.databases), "active": service.active,
                             "requests": batcher.requests["blast"], "batches": batcher.groups["blast"],
                             "map_requests": batcher.requests["map"], "map_batches": batcher.groups["map"],
                             "cancelled": service.cancelled, "workers": workers,
                             "blast_stages": engine.stage_seconds(),
                             "uptime": round(time.time() - service.started, 3)})

    async def databases(request: Request) -> Response:
        async def handler(request: Request) -> Response:
            return JSONResponse({"databases": [db.describe() for db in engine.databases.values()]})
        return await api(request, handler)

    async def search(request: Request) -> Response:
        async def handler(request: Request) -> Response:
            req = parse_request(await service.body(request), engine.databases)
            note(request, **req.summary())
            service.admit()
            service.active += 1
            try:
                data, media = await service.unless_gone(request, service.timed(req))
            except Exception as exc:  # noqa: BLE001 - every failure is this request's JSON refusal
                if not isinstance(exc, (RequestError, GseekError, ValueError)):
                    traceback.print_exc(file=sys.stderr)
                raise request_error(exc) from None
            finally:
                service.active -= 1
                note(request, **req.summary())
            headers = {"X-Gseek-Queries": str(req.queries), "X-Gseek-Bases": str(req.bases)}
            return _response(data, media, headers, service.limits.stream_chunk)
        return await api(request, handler)

    async def job_run(job: Job) -> None:
        try:
            job.result, job.media = await service.timed(job.req)
            job.status = "done"
        except asyncio.CancelledError:
            job.status = "cancelled"
        except Exception as exc:  # noqa: BLE001 - the job's error, as a search's
            job.status, job.error = "failed", request_error(exc).as_json()
        finally:
            job.finished = time.time()
            service.active -= 1

    async def jobs_post(request: Request) -> Response:
        async def handler(request: Request) -> Response:
            _expire_jobs(service)
            req = parse_request(await service.body(request), engine.databases)
            note(request, **req.summary())
            service.admit()
            if len(service.jobs) >= service.limits.jobs:
                raise RequestError(429, "busy", f"{len(service.jobs)} jobs kept (limit {service.limits.jobs}); "
                                                "delete finished ones or wait for them to expire")
            kept = sum(len(j.result) for j in service.jobs.values() if j.result is not None)
            if kept >= service.limits.job_bytes:
                raise RequestError(429, "busy", f"{kept:,} bytes of job results kept (limit "
                                                f"{service.limits.job_bytes:,}); delete finished jobs or wait for "
                                                "them to expire")
            job = Job(req)
            service.jobs[job.id] = job
            service.active += 1
            job.task = asyncio.get_running_loop().create_task(job_run(job))
            return JSONResponse(job.describe(), status_code=202, headers={"Location": f"/api/v1/jobs/{job.id}"})
        return await api(request, handler)

    def find_job(request: Request) -> Job:
        _expire_jobs(service)
        job = service.jobs.get(request.path_params["job_id"])
        if job is None:
            raise RequestError(404, "input", "no such job (finished jobs are kept "
                                             f"{service.limits.job_ttl:g} s)")
        return job

    async def job_get(request: Request) -> Response:
        async def handler(request: Request) -> Response:
            return JSONResponse(find_job(request).describe())
        return await api(request, handler)

    async def job_result(request: Request) -> Response:
        async def handler(request: Request) -> Response:
            job = find_job(request)
            if job.result is None:
                raise RequestError(409, "input", f"job {job.id} is {job.status}: no result")
            return _response(job.result, job.media, None, service.limits.stream_chunk)
        return await api(request, handler)

    async def job_delete(request: Request) -> Response:
        async def handler(request: Request) -> Response:
            job = find_job(request)
            if job.task is not None and not job.task.done():
                job.task.cancel()
            del service.jobs[job.id]
            return JSONResponse({"id": job.id, "status": "deleted" if job.finished else "cancelled"})
        return await api(request, handler)

    async def openapi(request: Request) -> Response:
        return JSONResponse(OPENAPI)

    async def page(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8")

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS:
            return _error(RequestError(404, "input", "no such file"))
        return FileResponse(STATIC / name, media_type=ASSETS[name])

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        for slot in engine.slots:  # a worker process up again, or gone: the waiting groups go (or fail)
            slot.on_change = lambda: loop.call_soon_threadsafe(service.batcher.wake)
        yield
        for job in service.jobs.values():  # the service is ending: its jobs with it
            if job.task is not None and not job.task.done():
                job.task.cancel()
        service.jobs.clear()

    routes = [
        Route("/", page), Route("/static/{name}", asset), Route("/healthz", healthz),
        Route("/openapi.json", openapi),
        Route("/api/v1/databases", databases), Route("/api/v1/search", search, methods=["POST"]),
        Route("/api/v1/jobs", jobs_post, methods=["POST"]),
        Route("/api/v1/jobs/{job_id}", job_get, methods=["GET"]),
        Route("/api/v1/jobs/{job_id}", job_delete, methods=["DELETE"]),
        Route("/api/v1/jobs/{job_id}/result", job_result, methods=["GET"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.service = service
    return RequestLog(app, service.log)


class RequestLog:
    """ASGI middleware: one line per HTTP request (client, method, path, database, task, queries,
    bases, status, seconds) through ``log``."""

    def __init__(self, app: Any, log: Callable[[str], None]) -> None:
        self.app, self.log = app, log
        self.state = getattr(app, "state", None)

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [0]

        async def sending(message: dict) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            info = scope.get("state", {}).get("info", {})
            client = scope.get("client") or ("-", 0)
            what = " ".join(f"{k}={info[k]}" for k in ("database", "task", "queries", "bases") if k in info)
            self.log(f"gseek serve: {client[0]} {scope['method']} {scope['path']} {what + ' ' if what else ''}"
                     f"{status[0] or '-'} {time.perf_counter() - started:.3f} s")

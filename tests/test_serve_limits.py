"""``gseek serve``'s guards: the bearer token, the limits (413, 429, 504 as JSON), and a fuzz loop of
malformed bodies, truncated uploads and slow clients after which the service answers as before; a joined
search that fails is done again request by request; a searcher let go past the bound of those kept keeps its
stage seconds."""

from __future__ import annotations

import asyncio
import json
import random
import socket
import time
from types import SimpleNamespace
from urllib.parse import urlparse

import pytest

from serve_helpers import Service, call, local_search, make_queries, search_body  # noqa: E402

from gseek.datasets import lambda_genome  # noqa: E402

TOKEN = "s3cret-token-0123456789abcdef"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    from gseek.index import Index

    d = tmp_path_factory.mktemp("limits")
    Index.build(lambda_genome(), wgram=8, device="cpu").save(d / "lambda.gseek")
    make_queries(d / "q.fa", 3, seed=7)  # 4 records, 1,800 bases
    make_queries(d / "six.fa", 5, seed=8, length=60)  # 6 records
    make_queries(d / "long.fa", 4, seed=9, length=800)  # 3,500 bases
    token = d / "token"
    token.write_text(TOKEN + "\n")
    token.chmod(0o600)
    return d


@pytest.fixture(scope="module")
def service(data):
    svc = Service(data / "lambda.gseek", "--token-file", str(data / "token"), "--max-body", "20000", "--max-queries",
                  "5", "--max-bases", "3000", "--max-result", "2000", "--queue", "1", "--jobs", "2", "--job-bytes", "1",
                  cwd=data)
    yield svc
    assert svc.stop() == 0, svc.err.decode()


def search(service, body, token=TOKEN):
    status, text, headers = call(service.url + "/api/v1/search", body, token=token)
    return status, text, headers


def test_the_token(data, service):
    body = search_body(data / "q.fa")
    for token in (None, "wrong", TOKEN[:-1], TOKEN + "x"):
        status, text, headers = search(service, body, token)
        assert status == 401 and headers["www-authenticate"] == "Bearer"
        assert json.loads(text)["kind"] == "auth"
    assert call(service.url + "/api/v1/databases")[0] == 401
    assert call(service.url + "/api/v1/databases", token=TOKEN)[0] == 200
    assert call(service.url + "/healthz")[0] == 200 and call(service.url + "/")[0] == 200
    code, local, _ = local_search(data / "lambda.gseek", data / "q.fa", "--task", "megablast", cwd=data)
    status, text, _ = search(service, body)
    assert status == 200 and text == local


@pytest.mark.parametrize("what, body, words", [
    ("body", {"database": "lambda", "queries": ">a\n" + "A" * 30000 + "\n"}, "request body of"),
    ("queries", "six.fa", "6 queries: over this server's limit of 5"),
    ("bases", "long.fa", "3,500 bases: over this server's limit of 3,000"),
    ("result", ("q.fa", "7 std qseq sseq"), "over this server's limit of 2,000"),
])
def test_limits_are_413(data, service, what, body, words):
    if isinstance(body, str):
        body = search_body(data / body)
    elif isinstance(body, tuple):
        body = search_body(data / body[0], fmt=body[1])
    status, text, _ = search(service, body)
    error = json.loads(text)
    assert status == 413 and error == {"error": error["error"], "kind": "limit", "status": 413}
    assert words in error["error"]


def test_a_full_queue_is_429(data, service):
    body = search_body(data / "q.fa", "blastn")
    for _ in range(10):  # bounded: the job must still be running when the search arrives
        status, text, _ = call(service.url + "/api/v1/jobs", body, token=TOKEN)
        assert status == 202
        job = json.loads(text)["id"]
        status, text, _ = search(service, body)
        for _ in range(600):  # bounded: 60 s
            if json.loads(call(service.url + f"/api/v1/jobs/{job}", token=TOKEN)[1])["status"] != "running":
                break
            time.sleep(0.1)
        call(service.url + f"/api/v1/jobs/{job}", method="DELETE", token=TOKEN)
        if status == 429:
            assert json.loads(text)["kind"] == "busy"
            return
        assert status == 200
    pytest.fail("the queue of 1 never refused a second request")


def test_kept_job_results_are_bounded(data, service):
    body = search_body(data / "q.fa")
    status, text, _ = call(service.url + "/api/v1/jobs", body, token=TOKEN)
    job = json.loads(text)["id"]
    for _ in range(600):  # bounded: 60 s
        if json.loads(call(service.url + f"/api/v1/jobs/{job}", token=TOKEN)[1])["status"] != "running":
            break
        time.sleep(0.1)
    status, text, _ = call(service.url + "/api/v1/jobs", body, token=TOKEN)
    assert status == 429 and "bytes of job results kept (limit 1)" in json.loads(text)["error"]
    assert call(service.url + f"/api/v1/jobs/{job}", method="DELETE", token=TOKEN)[0] == 200
    status, text, _ = call(service.url + "/api/v1/jobs", body, token=TOKEN)
    assert status == 202
    call(service.url + f"/api/v1/jobs/{json.loads(text)['id']}", method="DELETE", token=TOKEN)


def _raw(url: str, data: bytes, pause: float = 0.0) -> bytes:
    """Send ``data`` on a fresh connection (after ``pause`` s), close the sending side, read what comes back."""
    u = urlparse(url)
    with socket.create_connection((u.hostname, u.port), timeout=30) as s:
        if pause:
            s.sendall(data[:10])
            time.sleep(pause)
            data = data[10:]
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            out += chunk
        return out


def test_fuzz_then_the_service_answers_as_before(data, service):
    rng = random.Random(39)
    good = search_body(data / "q.fa")
    text = json.dumps(good).encode()
    bodies = [b"", b"{", b"[]", b"null", b"42", b'"x"', b"\xff\xfe\x00", b'{"database": "lambda"}',
              b'{"database": "lambda", "queries": 5}', b'{"database": "lambda", "queries": [5]}',
              b'{"database": "lambda", "queries": [{"text": 5}]}', b'{"database": ["lambda"], "queries": ">a\\nA\\n"}',
              b'{"database": "lambda", "queries": ">a\\nACGT\\n", "options": []}',
              b'{"database": "lambda", "queries": ">a\\nACGT\\n", "options": {"evalue": "x"}}',
              b'{"database": "lambda", "queries": ">a\\nACGT\\n", "options": {"evalue": [1, 2]}}',
              b'{"database": "lambda", "queries": ">a\\nACGT\\n", "options": {"evalue": NaN}}',
              b'{"database": "lambda", "queries": ">a\\nACGT\\n", "options": {"word_size": 1e400}}',
              b'{"database": "lambda", "queries": ">a\\nACGT\\n", "options": {"max_target_seqs": 1.5}}',
              b'{"database": "lambda", "queries": ">a\\nACGT\\n", "options": {"dust": [1]}}',
              b'{"database": "lambda", "queries": ">a\\nACGT\\n", "options": {"strand": 3}}',
              b'{"database": "lambda", "task": "map", "queries": ">a\\nACGT\\n", "options": {"trim5": -1}}',
              b'{"database": "lambda", "queries": ">a\\nACGT\\n", "format": {"x": 1}}',
              b'{"database": "lambda", "queries": ">a\\nACGT\\n", "command": 7}',
              b'{"database": "lambda", "queries": "\\u0000\\u0001>"}', b"[" * 5000 + b"]" * 5000]
    bodies += [text[:rng.randrange(1, len(text))] for _ in range(10)]  # truncated JSON
    bodies += [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))) for _ in range(10)]  # noise
    for body in bodies:
        status, answer, _ = call(service.url + "/api/v1/search", body, token=TOKEN)
        assert 400 <= status < 500, (body[:80], status, answer[:200])
        error = json.loads(answer)
        assert error["status"] == status and "\n" not in error["error"]
    head = (f"POST /api/v1/search HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(text)}\r\n\r\n").encode()
    for cut in (len(head) // 2, len(head), len(head) + 10, len(head) + len(text) - 1):  # truncated uploads
        _raw(service.url, (head + text)[:cut])
    _raw(service.url, head + text[:50], pause=1.0)  # a slow client that gives up
    _raw(service.url, b"GARBAGE / HTTP/9\r\n\r\n")  # not HTTP
    assert call(service.url + "/healthz")[0] == 200
    code, local, _ = local_search(data / "lambda.gseek", data / "q.fa", "--task", "megablast", cwd=data)
    status, answer, _ = search(service, good)
    assert status == 200 and answer == local


def test_a_failing_batch_fails_alone(data, monkeypatch):
    """A joined search that fails (a device out of memory on one request's queries) is done again
    request by request (Engine.answer, the path every group takes): the failure is its own request's
    (503), the others get their bytes."""
    from gseek.blast.searcher import BlastSearcher
    from gseek.serve.app import request_error
    from gseek.serve.engine import Engine, parse_request

    search_alone = BlastSearcher.search

    def failing(self, batch, *args, **kwargs):
        if any(name.startswith("poison") for name in batch.name_list()):
            raise MemoryError("out of device memory")
        return search_alone(self, batch, *args, **kwargs)

    genome = (data / "q.fa").read_text()
    engine = Engine([f"lambda={data / 'lambda.gseek'}"], device="cpu", threads=1)
    try:
        reqs = [parse_request({"database": "lambda", "queries": text}, engine.databases)
                for text in (genome, genome.replace(">", ">poison", 1))]
        for req in reqs:
            req.parsed = engine.read_queries(req)
        alone = engine.answer((engine.databases["lambda"], reqs[0].options), reqs[:1])
        monkeypatch.setattr(BlastSearcher, "search", failing)
        got = engine.answer((engine.databases["lambda"], reqs[0].options), reqs)
    finally:
        engine.close()
    assert got[0] == alone[0] and got[0].count(b"\n") >= 3
    assert isinstance(got[1], MemoryError)
    assert request_error(got[1]).status == 503 and request_error(got[1]).kind == "resources"


def test_a_searcher_let_go_keeps_its_stage_seconds(data, monkeypatch):
    """Past SEARCHERS_KEPT a device thread (here 1) the least recently used searcher is let go: its BLAST stage
    seconds stay in Engine.stage_seconds (/healthz's blast_stages), which only grows."""
    from gseek.blast.options import BlastOptions
    from gseek.seqio import read_fastx
    from gseek.serve import engine as engine_module

    monkeypatch.setattr(engine_module, "SEARCHERS_KEPT", 1)
    queries = read_fastx(data / "q.fa")
    engine = engine_module.Engine([f"lambda={data / 'lambda.gseek'}"], device="cpu", threads=1)
    try:
        db = engine.databases["lambda"]
        first = engine.searcher(db, BlastOptions.for_task("megablast"))
        first.search(queries)
        seconds = engine.stage_seconds()
        assert seconds == engine_module.add_seconds({}, first.timings) and sum(seconds.values()) > 0, seconds
        second = engine.searcher(db, BlastOptions.for_task("blastn"))  # the first let go
        second.search(queries)
        assert engine.searcher(db, BlastOptions.for_task("megablast")) is not first  # (let go: made again)
        after = engine.stage_seconds()
    finally:
        engine.close()
    both = engine_module.add_seconds(first.timings, second.timings)
    assert after.keys() == both.keys() and all(after[k] == pytest.approx(both[k], abs=1e-3) for k in both), \
        (after, both)


@pytest.mark.parametrize("stage, slow_part, status", [("timed", "run", 504), ("body", "_body", 408)])
def test_a_slow_request_or_body_times_out(stage, slow_part, status):
    """A search past its time is 504; a body that does not arrive in time 408 (both JSON, kind timeout)."""
    from gseek.serve.app import Service as AppService
    from gseek.serve.engine import RequestError

    async def slow(_):
        await asyncio.sleep(10)

    fake = SimpleNamespace(**{slow_part: slow}, limits=SimpleNamespace(timeout=0.01))
    with pytest.raises(RequestError) as info:
        asyncio.run(getattr(AppService, stage)(fake, None))
    assert info.value.status == status and info.value.as_json()["kind"] == "timeout"


def test_a_slow_upload_holds_up_no_one(data, service):
    body = json.dumps(search_body(data / "q.fa")).encode()
    head = (f"POST /api/v1/search HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    u = urlparse(service.url)
    code, local, _ = local_search(data / "lambda.gseek", data / "q.fa", "--task", "megablast", cwd=data)
    with socket.create_connection((u.hostname, u.port), timeout=30) as slow:
        slow.sendall(head + body[:100])  # the rest never comes while the other request runs
        time.sleep(0.2)
        status, answer, _ = search(service, search_body(data / "q.fa"))
        assert status == 200 and answer == local

"""``gseek serve`` (docs/serve.md): a service started by the test on a free loopback port (a child
process, ended by SIGTERM), answering with the local ``gseek search`` bytes; 16 concurrent
clients batched and each answered with its own bytes; a failing request alone failing. The module's
service searches in a worker process (``--workers 1``: jobs, cancellation, mapping through it); the
drain and streaming tests' services in their own process (the default)."""

from __future__ import annotations

import concurrent.futures
import json
import os
import random
import re
import signal
import subprocess
import sys

import pytest

from serve_helpers import Service, call, lambda_index, local_search, make_queries, search_body, without_pg  # noqa: E402

from gseek.datasets import lambda_reads  # noqa: E402


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("serve")
    lambda_index(d)
    for k in range(4):
        make_queries(d / f"q{k}.fa", 3 + 2 * k, seed=k)
    make_queries(d / "bad.fa", 2, seed=9, bad_line=True)
    (d / "reads.fq").write_text("".join(open(lambda_reads()).readlines()[:800]))
    return d


@pytest.fixture(scope="module")
def service(data):
    svc = Service(data / "lambda.gseek", "--workers", "1", cwd=data)  # the searches in a worker process
    yield svc
    assert call(svc.url + "/api/v1/databases")[0] == 200  # this worker's service answered one (pytest -n)
    assert svc.stop() == 0, svc.err.decode()
    log = svc.err.decode().splitlines()  # one line per request
    assert "gseek serve: 127.0.0.1 GET /api/v1/databases 200 " in "\n".join(log)
    # every search this worker's tests made (pytest -n shares the module's tests out): one line each, so formed
    searches = [line for line in log if " POST /api/v1/search" in line]
    form = (r"gseek serve: 127\.0\.0\.1 POST /api/v1/search( database=lambda task=\S+ queries=\d+ bases=\d+)? "
            r"\d{3} \d+\.\d{3} s")  # (a request refused before it is read: no fields)
    assert all(re.fullmatch(form, line) for line in searches), searches[:5]


def test_listening_line_and_databases(service):
    assert service.line.startswith("gseek serve: listening on http://127.0.0.1:")
    assert service.line.endswith("(databases: lambda)")
    status, body, _ = call(service.url + "/api/v1/databases")
    assert status == 200
    assert json.loads(body)["databases"] == [{"name": "lambda", "sequences": 1, "bases": 48502,
                                              "tasks": ["megablast", "blastn", "blastn-short", "dc-megablast",
                                                        "map"]}]
    status, body, _ = call(service.url + "/healthz")
    assert status == 200 and json.loads(body)["status"] == "ok"
    status, body, _ = call(service.url + "/openapi.json")
    assert status == 200 and "/api/v1/search" in json.loads(body)["paths"]


@pytest.mark.parametrize("task, fmt", [("megablast", "6"), ("megablast", "7"), ("blastn", "6 std qlen slen btop"),
                                       ("megablast", "sam")])
def test_search_is_the_local_bytes(data, service, task, fmt):
    code, local, _ = local_search(data / "lambda.gseek", data / "q1.fa", "--task", task, "--outfmt", fmt, cwd=data)
    assert code == 0 and local
    status, body, headers = call(service.url + "/api/v1/search", search_body(data / "q1.fa", task, fmt))
    assert status == 200, body
    assert without_pg(body) == without_pg(local)


def _divergent_queries(path, seed: int = 41) -> None:
    """Two lambda slices with 20% of their bases changed (dc-megablast's ground), a 24 bp primer
    (blastn-short's) and a random query."""
    from gseek.datasets import lambda_genome
    from gseek.seqio import read_fastx

    genome = read_fastx(lambda_genome()).sequence(0)
    rng = random.Random(seed)
    with open(path, "w") as fh:
        for i in range(2):
            a = rng.randrange(0, len(genome) - 900)
            s = [rng.choice("ACGT") if rng.random() < 0.2 else c for c in genome[a:a + 900]]
            fh.write(f">div{i} from {a}\n{''.join(s)}\n")
        fh.write(f">primer\n{genome[20000:20024]}\n>none\n{''.join(rng.choice('ACGT') for _ in range(200))}\n")


@pytest.mark.parametrize("task, options", [
    ("dc-megablast", {}),
    ("dc-megablast", {"template_type": "coding_and_optimal", "template_length": 21, "word_size": 12}),
    ("blastn-short", {"evalue": 1.0}),
])
def test_the_other_tasks_are_the_local_bytes(data, service, task, options):
    _divergent_queries(data / "div.fa")
    flags = [a for k, v in options.items() for a in (f"--{k.replace('_', '-')}", str(v))]
    code, local, err = local_search(data / "lambda.gseek", data / "div.fa", "--task", task, *flags,
                                    "--outfmt", "6 std qlen", cwd=data)
    assert code == 0 and local.count(b"\n") >= 2, err
    status, body, _ = call(service.url + "/api/v1/search", search_body(data / "div.fa", task, "6 std qlen", options))
    assert status == 200, body
    assert body == local


def test_map_is_the_local_bytes(data, service):
    code, local, _ = local_search(data / "lambda.gseek", data / "reads.fq", "-v", "1", "-k", "2", cwd=data)
    assert code == 0
    body = search_body(data / "reads.fq", "map", "sam", {"mismatches": 1, "max_alignments": 2})
    status, got, _ = call(service.url + "/api/v1/search", body)
    assert status == 200, got
    assert without_pg(got) == without_pg(local) and got.count(b"\n") == local.count(b"\n")


def test_bad_queries_get_the_command_line_message(data, service):
    code, _, err = local_search(data / "lambda.gseek", data / "bad.fa", "--task", "megablast", cwd=data)
    assert code == 1
    status, body, _ = call(service.url + "/api/v1/search", search_body(data / "bad.fa"))
    assert status == 400
    error = json.loads(body)
    assert error["kind"] == "input"
    assert err.decode().strip() == f"gseek: error: {error['error']}"


@pytest.mark.parametrize("body, status, words", [
    ({"database": "nt", "queries": ">a\nACGT\n"}, 404, "no database 'nt'"),
    ({"database": "lambda", "task": "tblastx", "queries": ">a\nACGT\n"}, 400, "task 'tblastx'"),
    ({"database": "lambda", "queries": ">a\nACGT\n", "options": {"word_size": 2}}, 400, "word size must be at least"),
    ({"database": "lambda", "queries": ">a\nACGT\n", "options": {"nope": 1}}, 400, "unknown BlastOptions option"),
    ({"database": "lambda", "queries": ">a\nACGT\n", "format": "5"}, 400, "format '5': the service writes"),
    ({"database": "lambda", "task": "dc-megablast", "queries": ">a\nACGT\n", "options": {"template_length": 17}}, 400,
     "template_length must be 16, 18 or 21"),
    ({"database": "lambda", "queries": ">a\nACGT\n", "options": {"template_type": "coding"}}, 400,
     "apply to task dc-megablast only"),
    ({"database": "lambda", "task": "map", "queries": ">a\nACGT\n", "options": {"mismatches": 9}}, 400, "mismatch"),
    ({"database": "lambda", "queries": ">a\nACGT\n", "path": "/etc/passwd"}, 400, "unknown field"),
    ({"database": "../lambda", "queries": ">a\nACGT\n"}, 404, "no database"),
])
def test_refusals_are_json_one_liners(service, body, status, words):
    got, text, _ = call(service.url + "/api/v1/search", body)
    error = json.loads(text)
    assert got == status and error["status"] == status and words in error["error"], error
    assert "\n" not in error["error"]


def test_sixteen_concurrent_clients_get_their_own_bytes(data, service):
    # 4 kinds of request (queries, task, format), 4 clients each, and one client with a bad file among them
    kinds = [("q0.fa", "megablast", "6"), ("q1.fa", "megablast", "7"), ("q2.fa", "megablast", "6 std qlen"),
             ("q3.fa", "blastn", "6")]
    expected = {}
    for name, task, fmt in kinds:
        code, out, _ = local_search(data / "lambda.gseek", data / name, "--task", task, "--outfmt", fmt, cwd=data)
        assert code == 0
        expected[name] = out
    _, before, _ = call(service.url + "/healthz")
    jobs = [kinds[k % 4] for k in range(16)] + [("bad.fa", "megablast", "6")]
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
        answers = list(pool.map(lambda j: call(service.url + "/api/v1/search", search_body(data / j[0], j[1], j[2])),
                                jobs))
    for (name, _, _), (status, body, _) in zip(jobs, answers):
        if name == "bad.fa":
            assert status == 400 and b"bad.fa:" in body
        else:
            assert status == 200 and body == expected[name], name
    _, after, _ = call(service.url + "/healthz")
    before, after = json.loads(before), json.loads(after)
    requests, batches = after["requests"] - before["requests"], after["batches"] - before["batches"]
    assert requests == 16  # the bad file never reached the search
    assert batches < requests  # gathered: one search answered several requests


def test_sixteen_concurrent_mapping_clients_get_their_own_bytes(data, service):
    """Mapping requests of one database and options are gathered into one pipeline run (Engine.map_group):
    each of 16 clients gets the bytes the local command writes for its reads alone (its own @PG CL),
    a client with a bad file among them its own error."""
    lines = open(lambda_reads()).readlines()
    expected = {}
    for k in range(4):
        (data / f"m{k}.fq").write_text("".join(lines[400 * k:400 * k + 40 * (k + 1)]))
        code, out, _ = local_search(data / "lambda.gseek", data / f"m{k}.fq", "-v", "1", cwd=data)
        assert code == 0
        expected[f"m{k}.fq"] = out
    (data / "mbad.fq").write_text(lines[0] + lines[1] + "+\n" + lines[3][:-5] + "\n")
    _, before, _ = call(service.url + "/healthz")
    jobs = [f"m{k % 4}.fq" for k in range(16)] + ["mbad.fq"]
    bodies = [search_body(data / name, "map", "sam", {"mismatches": 1}, command=f"gseek client {i}")
              for i, name in enumerate(jobs)]
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
        answers = list(pool.map(lambda body: call(service.url + "/api/v1/search", body), bodies))
    for i, (name, (status, body, _)) in enumerate(zip(jobs, answers)):
        if name == "mbad.fq":
            assert status == 400 and b"mbad.fq:" in body, body
            continue
        assert status == 200 and without_pg(body) == without_pg(expected[name]), name
        pg = [line for line in body.split(b"\n") if line.startswith(b"@PG")]
        assert len(pg) == 1 and f"\tCL:gseek client {i}\t".encode() in pg[0] + b"\t", pg
    _, after, _ = call(service.url + "/healthz")
    before, after = json.loads(before), json.loads(after)
    requests, batches = after["map_requests"] - before["map_requests"], after["map_batches"] - before["map_batches"]
    assert requests == 16 and batches < requests  # gathered: one run answered several requests


def test_jobs(data, service):
    status, body, headers = call(service.url + "/api/v1/jobs", search_body(data / "q0.fa"))
    assert status == 202
    job = json.loads(body)
    assert headers["location"] == f"/api/v1/jobs/{job['id']}"
    for _ in range(600):  # bounded: at most 60 s
        status, body, _ = call(service.url + f"/api/v1/jobs/{job['id']}")
        if json.loads(body)["status"] != "running":
            break
        import time

        time.sleep(0.1)
    assert json.loads(body)["status"] == "done"
    status, result, _ = call(service.url + f"/api/v1/jobs/{job['id']}/result")
    code, local, _ = local_search(data / "lambda.gseek", data / "q0.fa", "--task", "megablast", cwd=data)
    assert status == 200 and result == local
    assert call(service.url + f"/api/v1/jobs/{job['id']}", method="DELETE")[0] == 200
    assert call(service.url + f"/api/v1/jobs/{job['id']}")[0] == 404
    assert call(service.url + "/api/v1/jobs/nope", method="DELETE")[0] == 404


def test_other_hosts_need_a_token(data, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "gseek", "serve", "-x", str(data / "lambda.gseek"), "--host",
                           "0.0.0.0"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "--host 0.0.0.0: other machines could connect; give --token-file FILE" in proc.stderr
    token = tmp_path / "token"
    token.write_text("t" * 32 + "\n")
    token.chmod(0o644)
    proc = subprocess.run([sys.executable, "-m", "gseek", "serve", "-x", str(data / "lambda.gseek"), "--token-file",
                           str(token)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "readable by others" in proc.stderr


def test_gpus_and_device_cpu_exclude_each_other(data):
    proc = subprocess.run([sys.executable, "-m", "gseek", "--device", "cpu", "serve", "-x", str(data / "lambda.gseek"),
                           "--gpus", "0,1"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.splitlines()[-1] == "Error: --gpus and --device cpu exclude each other"


def test_drain_on_sigterm(data):
    svc = Service(data / "lambda.gseek", "--drain", "60", cwd=data)
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            body = search_body(data / "q3.fa", "blastn")
            pending = pool.submit(call, svc.url + "/api/v1/search", body)
            import time

            for _ in range(200):  # bounded: the request is in flight once the service counts it
                status, health, _ = call(svc.url + "/healthz")
                if json.loads(health)["active"]:
                    break
                time.sleep(0.01)
            svc.proc.send_signal(signal.SIGTERM)
            status, out, _ = pending.result(timeout=120)
        assert status == 200 and out.startswith(b"s3q0\t")
        assert svc.stop() == 0
    finally:
        svc.kill()


def test_a_request_whose_client_goes_is_cancelled(data, service):
    import socket
    import time
    from urllib.parse import urlparse

    make_queries(data / "slow.fa", 100, seed=11, length=1000)
    health = lambda: json.loads(call(service.url + "/healthz")[1])  # noqa: E731
    before = health()["cancelled"]
    # the device busy for as long as the test needs: the one worker process stopped (SIGSTOP) once it has a search
    # (a slow search alone could end before the second request's client goes: it did in CI, the search faster)
    worker = health()["workers"][0]["pid"]
    os.kill(worker, signal.SIGSTOP)
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            slow = pool.submit(call, service.url + "/api/v1/search", search_body(data / "slow.fa", "blastn"))
            for _ in range(500):  # bounded: 5 s
                if health()["workers"][0]["busy"]:
                    break
                time.sleep(0.01)
            assert health()["workers"][0]["busy"], "the slow search never reached the worker"
            body = json.dumps(search_body(data / "q0.fa", "blastn")).encode()
            u = urlparse(service.url)
            with socket.create_connection((u.hostname, u.port), timeout=30) as s:  # sent, then gone
                s.sendall(b"POST /api/v1/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                time.sleep(0.2)
            for _ in range(300):  # bounded: 30 s
                if health()["cancelled"] > before:
                    break
                time.sleep(0.1)
            assert health()["cancelled"] == before + 1
            os.kill(worker, signal.SIGCONT)
            status, out, _ = slow.result(timeout=120)
    finally:
        os.kill(worker, signal.SIGCONT)
    assert status == 200 and out.startswith(b"s11q0\t")


def test_no_cors(service):
    status, _, headers = call(service.url + "/api/v1/databases", headers={"Origin": "http://evil.example"})
    assert status == 200 and not any(k.lower().startswith("access-control-") for k in headers)
    status, _, headers = call(service.url + "/api/v1/search", method="OPTIONS",
                              headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
    assert status == 405 and not any(k.lower().startswith("access-control-") for k in headers)


def _chunked(url: str, body: dict) -> tuple[dict, list[bytes]]:
    """One POST over a raw socket: the response's headers (lower case) and its body's chunks as sent
    (chunked transfer encoding), or the whole body as one item."""
    import socket
    from urllib.parse import urlparse

    u = urlparse(url)
    data = json.dumps(body).encode()
    with socket.create_connection((u.hostname, u.port), timeout=120) as s:
        s.sendall(f"POST {u.path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
                  f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        raw = b""
        for _ in range(100_000):  # bounded: until the service closes the connection
            got = s.recv(1 << 16)
            if not got:
                break
            raw += got
    head, _, rest = raw.partition(b"\r\n\r\n")
    headers = dict(line.decode().lower().split(": ", 1) for line in head.split(b"\r\n")[1:])
    if headers.get("transfer-encoding") != "chunked":
        return headers, [rest]
    chunks = []
    while True:
        size, _, rest = rest.partition(b"\r\n")
        n = int(size, 16)
        if n == 0:
            return headers, chunks
        chunks.append(rest[:n])
        rest = rest[n + 2:]


def test_a_large_result_is_streamed_in_pieces(data):
    """A result over --stream-chunk arrives in several chunks (chunked transfer encoding) whose bytes
    are the local command's; a smaller one in one piece."""
    make_queries(data / "large.fa", 40, seed=21, length=1000)
    fmt = "6 std qseq sseq btop"
    code, local, _ = local_search(data / "lambda.gseek", data / "large.fa", "--task", "megablast", "--outfmt", fmt,
                                  cwd=data)
    assert code == 0 and len(local) > 40_000
    svc = Service(data / "lambda.gseek", "--stream-chunk", "16384", cwd=data)
    try:
        headers, chunks = _chunked(svc.url + "/api/v1/search", search_body(data / "large.fa", "megablast", fmt))
        assert headers["transfer-encoding"] == "chunked" and "content-length" not in headers
        assert len(chunks) == -(-len(local) // 16384) >= 3 and b"".join(chunks) == local
        headers, chunks = _chunked(svc.url + "/api/v1/search", search_body(data / "q0.fa"))
        assert "transfer-encoding" not in headers and int(headers["content-length"]) == len(chunks[0])
        assert svc.stop() == 0
    finally:
        svc.kill()

"""``gseek serve``'s device workers (gseek.serve.slots): on the CPU ``--workers 2`` (two worker processes,
gseek.serve.processes, the logic of ``--gpus`` without a GPU) and ``--workers 0`` (the searches in the
service's own process, one device thread); under ``-m gpu``, ``--gpus`` over every GPU there is (two at
most) with two worker processes a GPU. Concurrent clients of every kind get the bytes of the local
command (or the local API's result), whichever worker and device answered them; every worker answers
some."""

from __future__ import annotations

import concurrent.futures
import json

import pytest

from serve_helpers import Service, call, lambda_index, local_search, make_queries, search_body, without_pg  # noqa: E402

from gseek.datasets import lambda_reads  # noqa: E402


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("workers")
    lambda_index(d)
    for k in range(3):
        make_queries(d / f"q{k}.fa", 4 + 3 * k, seed=20 + k)
    (d / "reads.fq").write_text("".join(open(lambda_reads()).readlines()[:400]))
    return d


#: Kinds of request: (queries, task, format), each answered with the local command's bytes.
KINDS = [("q0.fa", "megablast", "6"), ("q1.fa", "megablast", "7"), ("q2.fa", "blastn", "6 std qlen"),
         ("reads.fq", "map", "sam")]


def _expected(data):
    out = {}
    for name, task, fmt in KINDS:
        args = ["-v", "2"] if task == "map" else ["--task", task, "--outfmt", fmt]
        code, text, _ = local_search(data / "lambda.gseek", data / name, *args, cwd=data)
        assert code == 0 and text
        out[name] = without_pg(text)
    return out


def _concurrent(svc, data, expected, n=24):
    _, before, _ = call(svc.url + "/healthz")
    jobs = [KINDS[k % len(KINDS)] for k in range(n)]
    options = {"map": {"mismatches": 2}}
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
        answers = list(pool.map(lambda j: call(svc.url + "/api/v1/search",
                                               search_body(data / j[0], j[1], j[2], options.get(j[1]))), jobs))
    for (name, _, _), (status, body, _) in zip(jobs, answers):
        assert status == 200, body[:300]
        assert without_pg(body) == expected[name], name
    _, after, _ = call(svc.url + "/healthz")
    before, after = json.loads(before), json.loads(after)
    return [a["batches"] + a["map_batches"] - b["batches"] - b["map_batches"]
            for a, b in zip(after["workers"], before["workers"])], after["workers"]


def _mapping_is_the_local_apis(svc, data, device):
    from gseek import Mapper
    from gseek.seqio import read_fastx
    from gseek.serve.client import Client

    pytest.importorskip("pandas")
    local = Mapper(data / "lambda.gseek", device=device, mismatches=1).map(read_fastx(data / "reads.fq"))
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda _: Client(svc.url).map("lambda", (data / "reads.fq").read_text(), mismatches=1),
                            range(4)))
    for result in got:
        assert result.to_pandas(unmapped=True).equals(local.to_pandas(unmapped=True))


@pytest.mark.parametrize("workers", [2, 0])
def test_workers_on_the_cpu_answer_with_the_local_bytes(data, workers):
    expected = _expected(data)
    svc = Service(data / "lambda.gseek", "--workers", str(workers), cwd=data)
    try:
        ran, found = _concurrent(svc, data, expected)
        assert [w["device"] for w in found] == ["cpu"] * max(1, workers)
        assert all((w["pid"] is None) == (workers == 0) for w in found)
        assert all(n > 0 for n in ran), ran  # both workers searched
        _mapping_is_the_local_apis(svc, data, "cpu")
    finally:
        assert svc.stop() == 0, svc.err.decode()


@pytest.mark.gpu
def test_gpus_answer_with_the_local_bytes(data):
    """``--gpus`` over the GPUs there are (two at most), two worker processes a GPU: each GPU holds the
    database and searched, and every answer is the local (CPU) command's bytes."""
    cupy = pytest.importorskip("cupy")
    count = min(2, cupy.cuda.runtime.getDeviceCount())
    expected = _expected(data)
    svc = Service(data / "lambda.gseek", "--gpus", ",".join(map(str, range(count))), "--workers", "2", device="gpu",
                  threads=4, cwd=data)
    try:
        ran, workers = _concurrent(svc, data, expected, n=48)
        assert [w["device"] for w in workers] == [f"gpu:{g}" for g in range(count) for _ in range(2)]
        for g in range(count):  # every GPU answered some
            assert sum(n for n, w in zip(ran, workers) if w["device"] == f"gpu:{g}") > 0, (ran, workers)
        _mapping_is_the_local_apis(svc, data, "cpu")
    finally:
        assert svc.stop() == 0, svc.err.decode()

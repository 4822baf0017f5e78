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

from serve_helpers import Service, ask, call, local_outputs, request_folder, without_pg  # noqa: E402


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return request_folder(tmp_path_factory.mktemp("workers"), [4, 7, 10], seed=20)


#: Kinds of request: (queries, task, format), each answered with the local command's bytes.
KINDS = [("q0.fa", "megablast", "6"), ("q1.fa", "megablast", "7"), ("q2.fa", "blastn", "6 std qlen"),
         ("reads.fq", "map", "sam")]


def _concurrent(svc, data, expected, n=24):
    _, before, _ = call(svc.url + "/healthz")
    jobs = [KINDS[k % len(KINDS)] for k in range(n)]
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
        answers = list(pool.map(lambda job: ask(svc.url, data, job), jobs))
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


@pytest.mark.parametrize("workers", [2, None])
def test_workers_on_the_cpu_answer_with_the_local_bytes(data, workers):
    """Two worker processes, and the CPU's default: the searches in the service's process."""
    expected = local_outputs(data, KINDS)
    svc = Service(data / "lambda.gseek", *(() if workers is None else ("--workers", str(workers))), cwd=data)
    workers = workers or 0
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
    """``--gpus`` over the GPUs there are (two at most), two worker processes a GPU (the default): each GPU
    holds the database and searched, and every answer is the local (CPU) command's bytes."""
    cupy = pytest.importorskip("cupy")
    count = min(2, cupy.cuda.runtime.getDeviceCount())
    expected = local_outputs(data, KINDS)
    svc = Service(data / "lambda.gseek", "--gpus", ",".join(map(str, range(count))), device="gpu", threads=4,
                  cwd=data)
    try:
        ran, workers = _concurrent(svc, data, expected, n=48)
        assert [w["device"] for w in workers] == [f"gpu:{g}" for g in range(count) for _ in range(2)]
        assert all(w["pid"] is not None for w in workers)  # worker processes
        for g in range(count):  # every GPU answered some
            assert sum(n for n, w in zip(ran, workers) if w["device"] == f"gpu:{g}") > 0, (ran, workers)
        _mapping_is_the_local_apis(svc, data, "cpu")
    finally:
        assert svc.stop() == 0, svc.err.decode()


def test_the_default_is_two_worker_processes_a_gpu_and_none_on_the_cpu(monkeypatch):
    from gseek import backend
    from gseek.serve.server import GPU_WORKERS, default_workers

    assert GPU_WORKERS == 2
    assert default_workers("cpu") == 0 and default_workers("CPU") == 0
    assert default_workers("gpu") == 2 and default_workers("gpu:1") == 2
    assert default_workers("cpu", ["gpu:0", "gpu:1"]) == 2  # --gpus
    assert default_workers(backend.get_backend("cpu", threads=1)) == 0
    for found, expected in ((True, 2), (False, 0)):
        monkeypatch.setattr(backend, "gpu_available", lambda found=found: found)
        assert default_workers("auto") == expected


def test_a_backend_object_goes_to_the_worker_processes_as_its_spec(data):
    """``serve(device=backend)`` with a :class:`~gseek.backend.Backend` object (``get_backend`` takes one; with
    a GPU's, the default is now two worker processes): each worker process builds it again from its ``spec``
    (``gpu:N``, ``cpu``), instead of failing to start on the object's text."""
    from gseek.backend import get_backend
    from gseek.serve.server import front

    pool = front([str(data / "lambda.gseek")], [get_backend("cpu", threads=1)], workers=1, threads=1, warm=False)
    try:
        assert [slot.device for slot in pool.slots] == ["cpu"] and all(slot.up for slot in pool.slots)
    finally:
        pool.close()

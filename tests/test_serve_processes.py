"""``gseek serve`` with its searches in worker processes (gseek.serve.processes, ``--workers N``): 16 concurrent
clients through two worker processes get the local command's bytes (megablast, blastn, map); a worker
process killed during a search fails that search's requests only (503), one killed while idle fails none,
and the service answers the next requests while it starts the worker again; one alive but hung (SIGSTOP) is
killed past --timeout and a grace and started again, the other worker answering meanwhile; /healthz's blast_stages
keeps a restarted worker's seconds; SIGTERM to the service's
whole process group (as a service manager stops it) drains the request in flight and exits 0, leaving no
process behind; a database a worker cannot load (missing, a corrupted part) is the one-line error of the
service's own process; ``--gpus`` with a device of its own is refused."""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import time
from pathlib import Path

import pytest

from serve_helpers import (Service, ask, call, local_outputs, local_search, make_queries,  # noqa: E402
                           request_folder, without_pg)

#: Kinds of request: (queries, task, format), each answered with the local command's bytes.
KINDS = [("q0.fa", "megablast", "6"), ("q1.fa", "blastn", "6 std qlen"), ("q2.fa", "megablast", "7"),
         ("reads.fq", "map", "sam")]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = request_folder(tmp_path_factory.mktemp("processes"), [3, 5, 7], seed=60)
    make_queries(d / "slow.fa", 1000, seed=66, length=1000)  # a blastn search of seconds on the CPU
    make_queries(d / "slower.fa", 4000, seed=67, length=1000)  # (killed during it: never run to its end)
    return d


@pytest.fixture(scope="module")
def expected(data):
    return local_outputs(data, KINDS)


def _ask(svc, data, job):
    return ask(svc.url, data, job)


def _health(svc) -> dict:
    status, body, _ = call(svc.url + "/healthz")
    assert status == 200
    return json.loads(body)


def _descendants(pid: int) -> set[int]:
    """Every process under ``pid`` (Linux ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.add(child)
            todo.append(child)
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait(predicate, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():  # bounded: until the deadline
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_sixteen_clients_through_two_worker_processes_get_the_local_bytes(data, expected):
    svc = Service(data / "lambda.gseek", "--workers", "2", cwd=data)
    try:
        workers = _health(svc)["workers"]
        pids = {w["pid"] for w in workers}
        assert len(pids) == 2 and svc.proc.pid not in pids and pids <= _descendants(svc.proc.pid)
        jobs = [KINDS[k % len(KINDS)] for k in range(16)]
        with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
            answers = list(pool.map(lambda job: _ask(svc, data, job), jobs))
        for (name, _, _), (status, body, _) in zip(jobs, answers):
            assert status == 200, body[:300]
            assert without_pg(body) == expected[name], name
        health = _health(svc)
        assert health["requests"] == 12 and health["map_requests"] == 4
        assert health["batches"] + health["map_batches"] < 16  # gathered
        assert all(w["batches"] + w["map_batches"] > 0 for w in health["workers"]), health["workers"]
    finally:
        assert svc.stop() == 0, svc.err.decode()


def test_a_killed_worker_process_fails_only_its_requests(data, expected):
    svc = Service(data / "lambda.gseek", "--workers", "2", cwd=data)
    try:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            slow = pool.submit(_ask, svc, data, ("slower.fa", "blastn", "6"))
            _wait(lambda: any(w["busy"] for w in _health(svc)["workers"]), 60, "the slow search never started")
            busy, idle = sorted(_health(svc)["workers"], key=lambda w: -w["busy"])
            meanwhile = [pool.submit(_ask, svc, data, KINDS[k]) for k in range(len(KINDS))]  # on the other worker
            for job, answer in zip(KINDS, meanwhile):
                status, body, _ = answer.result(timeout=120)
                assert status == 200 and without_pg(body) == expected[job[0]], job
            os.kill(busy["pid"], signal.SIGKILL)  # during its search
            status, body, _ = slow.result(timeout=120)
        error = json.loads(body)
        assert status == 503 and error["kind"] == "resources" and "ended (signal 9)" in error["error"], body
        os.kill(idle["pid"], signal.SIGKILL)  # while idle: the next requests go to the other worker once it is up
        for job in KINDS:
            status, body, _ = _ask(svc, data, job)
            assert status == 200 and without_pg(body) == expected[job[0]], (job, body[:300])
        _wait(lambda: all(w["up"] for w in _health(svc)["workers"]), 120, "a worker was not started again")
        workers = _health(svc)["workers"]
        assert [w["restarts"] for w in workers] == [1, 1] and not {w["pid"] for w in workers} & {busy["pid"],
                                                                                                  idle["pid"]}
    finally:
        assert svc.stop() == 0, svc.err.decode()
    log = svc.err.decode()
    assert f"pid {busy['pid']}) ended (signal 9) during a search of 1 request(s); starting it again" in log
    assert f"pid {idle['pid']}) ended (signal 9) while idle (no request lost); starting it again" in log


def test_a_hung_worker_process_is_killed_and_started_again(data, expected):
    """A worker process alive but not answering (stopped by SIGSTOP during a search, as one stuck in a kernel
    or a deadlock) is killed once its group has been out --timeout and a grace (hung_after: 2 x 4 s here):
    its request has had its 504, the other worker answers meanwhile and is left alone, the hung one is started
    again and answers the next requests."""
    from gseek.serve.processes import hung_after

    svc = Service(data / "lambda.gseek", "--workers", "2", "--timeout", "4", cwd=data)
    try:
        with concurrent.futures.ThreadPoolExecutor(len(KINDS)) as pool:
            slow = pool.submit(_ask, svc, data, ("slower.fa", "blastn", "6"))
            _wait(lambda: any(w["busy"] for w in _health(svc)["workers"]), 60, "the slow search never started")
            workers = _health(svc)["workers"]
            hung, other = sorted(workers, key=lambda w: -w["busy"])
            restarted = [int(w is hung) for w in workers]  # the hung one's count once started again
            os.kill(hung["pid"], signal.SIGSTOP)  # alive, never answering
            stopped = time.monotonic()
            meanwhile = [pool.submit(_ask, svc, data, job) for job in KINDS]  # on the other worker
            for job, answer in zip(KINDS, meanwhile):
                status, body, _ = answer.result(timeout=120)
                assert status == 200 and without_pg(body) == expected[job[0]], (job, body[:300])
            status, body, _ = slow.result(timeout=120)
        assert status == 504 and json.loads(body)["kind"] == "timeout", body
        _wait(lambda: [(w["restarts"], w["up"]) for w in _health(svc)["workers"]] == [(n, True) for n in restarted],
              120, "the hung worker was not started again")
        assert time.monotonic() - stopped < hung_after(4) + 60  # (killed by the bound, not by some other way)
        assert not _alive(hung["pid"]) and other["pid"] in {w["pid"] for w in _health(svc)["workers"]}
        for job in KINDS:
            status, body, _ = _ask(svc, data, job)
            assert status == 200 and without_pg(body) == expected[job[0]], (job, body[:300])
    finally:
        assert svc.stop() == 0, svc.err.decode()
    assert (f"pid {hung['pid']}) ended (signal 9) hung: no answer to a search of 1 request(s) within 8 s, killed; "
            "starting it again") in svc.err.decode()


def test_a_restarted_worker_keeps_its_blast_stage_seconds(data):
    """/healthz's blast_stages (the stages' seconds, summed over the workers) keeps what a worker process
    reported before it ended: a long blastn search, the worker killed, a short search by its new process."""
    svc = Service(data / "lambda.gseek", "--workers", "1", cwd=data)
    try:
        status, body, _ = _ask(svc, data, ("slow.fa", "blastn", "6"))
        assert status == 200, body[:300]
        before = _health(svc)["blast_stages"]
        assert sum(before.values()) > 0, before
        os.kill(_health(svc)["workers"][0]["pid"], signal.SIGKILL)  # idle: the next request waits for its restart
        status, body, _ = _ask(svc, data, ("q0.fa", "megablast", "6"))
        assert status == 200, body[:300]
        health = _health(svc)
        assert health["workers"][0]["restarts"] == 1
        after = health["blast_stages"]
        assert all(after.get(stage, 0.0) >= seconds for stage, seconds in before.items()), (before, after)
    finally:
        assert svc.stop() == 0, svc.err.decode()


def test_sigterm_to_the_process_group_drains_and_leaves_no_process(data):
    code, local, _ = local_search(data / "lambda.gseek", data / "slow.fa", "--task", "blastn", cwd=data)
    assert code == 0
    svc = Service(data / "lambda.gseek", "--workers", "2", "--drain", "60", cwd=data, new_session=True)
    try:
        under = _descendants(svc.proc.pid)
        assert {w["pid"] for w in _health(svc)["workers"]} <= under
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pending = pool.submit(_ask, svc, data, ("slow.fa", "blastn", "6"))
            _wait(lambda: any(w["busy"] for w in _health(svc)["workers"]), 60, "the search never started")
            os.killpg(svc.proc.pid, signal.SIGTERM)  # the front and its workers, as systemd or a Ctrl-C does
            status, body, _ = pending.result(timeout=120)
        assert status == 200 and body == local
        assert svc.stop(timeout=90) == 0, svc.err.decode()
        _wait(lambda: not any(_alive(pid) for pid in under), 10, f"left behind: {[p for p in under if _alive(p)]}")
    finally:
        svc.kill()


@pytest.mark.parametrize("fault", ["missing", "corrupted"])
def test_a_database_a_worker_cannot_load_is_the_command_lines_one_line_error(data, tmp_path, fault):
    """A database a worker process cannot load (no such index; a part whose bytes differ from its
    SHA-256: checked by the first worker, the others trusting it) stops the service before it listens,
    with the error the service's own process gives (``--workers 0``): one line, exit 1."""
    import shutil
    import subprocess
    import sys

    index = tmp_path / "bad.gseek"
    if fault == "corrupted":
        shutil.copytree(data / "lambda.gseek", index)
        with open(index / "text.npy", "r+b") as fh:  # one byte of the text changed, its size kept
            fh.seek(-10, 2)
            byte = fh.read(1)[0]
            fh.seek(-10, 2)
            fh.write(bytes([byte ^ 0xFF]))
    got = {}
    for workers in ("2", "0"):
        proc = subprocess.run([sys.executable, "-m", "gseek", "--device", "cpu", "serve", "-x", f"bad={index}",
                               "--port", "0", "--workers", workers], capture_output=True, text=True, timeout=120)
        got[workers] = (proc.returncode, proc.stdout, proc.stderr)
    assert got["2"] == got["0"]
    reason = "no such index directory" if fault == "missing" else "corrupted part (SHA-256 differs from the header)"
    code, out, err = got["2"]
    assert code == 1 and out == "" and err == f"gseek: error: {index}{'/text.npy' * (fault != 'missing')}: {reason}\n"


def test_gpus_and_a_device_of_its_own_are_refused_before_any_work():
    """``serve(devices=[...])`` names the GPUs: a ``device`` besides them (``gpu:1``, ``cpu``) would be ignored,
    so it is refused in one line, before anything is loaded."""
    from gseek.errors import OptionError
    from gseek.serve.server import serve

    for device in ("gpu:1", "cpu"):
        with pytest.raises(OptionError, match=f"^--gpus and --device {device} exclude each other$"):
            serve(["lambda=/no/such/index"], devices=["gpu:0"], device=device, warm=False)

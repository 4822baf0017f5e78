"""Worker processes of ``gseek serve`` (gseek.serve.processes) starting and starting again: one found ended by a
group, with more groups already queued on its thread (the batcher sends a group over its size bounds to the
least busy slot, busy or not): every queued group goes on to another slot (SlotDown), and the worker is started
again once, not once per queued group (each restart loads and warms every database, and kills the one before);
one alive but hung over a group is killed past its bound, the group failed with 504, and started again;
SIGTERM to the service while its workers load (they ignore it: the front drains, then ends them) leaves none
of them behind, also when it lands as the front starts a worker's thread, or in another thread than the main one."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
import types

import pytest

from gseek.errors import GseekError
from gseek.serve.engine import RequestError
from gseek.serve.processes import WorkerProcess
from serve_helpers import START_S, lambda_index
from test_serve_processes import _alive, _descendants, _wait
from gseek.serve.slots import SlotDown


def _holding(conn) -> None:
    """A worker process that holds its end of the pipe and never reads it nor answers (for 10 minutes)."""
    time.sleep(600)


def _fake_worker(log: list[str], hung: bool = False) -> WorkerProcess:
    """A WorkerProcess over a process that never answers: one that ends at once (its pipe's other end closed),
    or (``hung``) one alive that holds it (its bound: WorkerProcess.hung_s, 3600 s); start() counted."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    process = context.Process(target=_holding, args=(theirs,)) if hung else context.Process(target=int)
    process.start()
    theirs.close()
    slot = WorkerProcess(0, "cpu", ((), None, False, "."), log.append, 3600.0 if hung else None)
    slot.process, slot._conn, slot._taken, slot.up = process, ours, context.RawValue("q", 0), True
    slot.starts = 0

    def start(verify: bool = False) -> None:
        slot.starts += 1
        slot.up = True

    slot.start = start
    return slot


def _ended_worker(log: list[str]) -> WorkerProcess:
    """A WorkerProcess whose process has ended while idle; start() counted."""
    slot = _fake_worker(log)
    slot.process.join()
    return slot


def test_groups_queued_behind_a_lost_one_go_on_and_the_worker_restarts_once():
    log: list[str] = []
    slot = _ended_worker(log)
    target = (types.SimpleNamespace(name="db"), None)
    try:
        # the three queued before any runs (a loaded machine could run the first, and its restart, before the
        # others are submitted: the fake start gives no pipe, a real one does)
        hold = threading.Event()
        slot.executor.submit(hold.wait, 60)
        calls = [slot.executor.submit(slot.call, target, []) for _ in range(3)]
        hold.set()
        for call in calls:
            with pytest.raises(SlotDown):
                call.result(timeout=60)
        slot.executor.submit(lambda: None).result(timeout=60)  # the restarts queued meanwhile have run
        assert slot.starts == 1 and slot.restarts == 1, log
        assert sum("ended" in line for line in log) == 1, log
    finally:
        slot.closing = True
        slot.executor.shutdown(wait=True)


def test_a_worker_hung_over_a_group_is_killed_its_group_504_and_started_again():
    """A worker process alive but never answering (one that sleeps, holding its pipe unread) is left alone before its
    group's bound (WorkerProcess.hung_s) and killed after it: the group fails with 504 (the time limit's refusal,
    not the 503 of a worker that ended by itself, nor a SlotDown sending it on), the worker is started again."""
    log: list[str] = []
    slot = _fake_worker(log, hung=True)
    process = slot.process
    try:
        call = slot.executor.submit(slot.call, (types.SimpleNamespace(name="db"), None), [])
        _wait(lambda: slot._deadline is not None, 30, "the group never went out")
        assert not slot.kill_if_hung(time.monotonic()) and process.is_alive()  # within its bound
        assert slot.kill_if_hung(time.monotonic() + 3600.0)
        with pytest.raises(RequestError) as info:
            call.result(timeout=60)
        assert (info.value.status, info.value.as_json()["kind"]) == (504, "timeout"), info.value
        slot.executor.submit(lambda: None).result(timeout=60)  # its restart has run
        assert slot.starts == 1 and slot.restarts == 1 and process.exitcode == -signal.SIGKILL, log
        assert log[0] == (f"gseek serve: worker process 0 (cpu, pid {process.pid}) ended (signal 9) hung: no answer "
                          "to a search of 0 request(s) within 3600 s, killed; starting it again"), log
    finally:
        slot.closing = True
        slot.executor.shutdown(wait=True)
        if process.is_alive():
            process.kill()
        process.join(30)


#: The ``sitecustomize`` of the processes of the service started below: a worker process (``spawn``: its command line
#: ends ``--multiprocessing-fork``) held loading for minutes (a large database). In the front, with HOLD set:
#: ``thread start``: the start of a worker's thread (before its executor knows the thread) and that thread's start of
#: its process (before it knows the process) held until the file SENT exists (the test has signalled); ``a thread``:
#: that thread, its process started, waits for SENT and signals itself (as the kernel may hand a signal sent to the
#: process to any of its threads: this one, with SIGTERM blocked while it starts the process, takes it as it
#: unblocks it; the signal's Python handler runs in the main thread, waiting for the start meanwhile).
HOOK = """import os, sys, time
if '--multiprocessing-fork' in sys.argv:
    time.sleep(600)
if os.environ.get('HOLD'):
    import signal, threading
    from multiprocessing.process import BaseProcess

    def holding(start, then=lambda: None):
        def held(self):
            start(self)
            if self.name.startswith('gseek-serve-worker'):
                deadline = time.monotonic() + 600
                while not os.path.exists(os.environ['SENT']) and time.monotonic() < deadline:
                    time.sleep(0.05)
                then()
        return held

    if os.environ['HOLD'] == 'thread start':
        threading.Thread.start = holding(threading.Thread.start)
        BaseProcess.start = holding(BaseProcess.start)
    else:
        BaseProcess.start = holding(BaseProcess.start,
                                    lambda: signal.pthread_kill(threading.get_ident(), signal.SIGTERM))
"""


@pytest.mark.parametrize("held", ["loading", "thread start", "a thread"])
def test_sigterm_while_the_workers_load_leaves_no_process(tmp_path, held):
    """The service told to stop (SIGTERM to it alone, as ``kill PID`` does) while its worker process starts
    (here held for minutes by a ``sitecustomize`` of the test's: a large database loading) ends it too; also when
    the signal lands as the front starts the thread that starts the worker (``thread start``: the thread then known
    to the front all the same, which waits for it to end the worker), and when a thread other than the main one
    takes the signal (``a thread``: the main thread, waiting for the workers, runs its handler all the same)."""
    lambda_index(tmp_path)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK)
    sent = tmp_path / "signal-sent"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")]),
           **({"HOLD": held, "SENT": str(sent)} if held != "loading" else {})}
    proc = subprocess.Popen([sys.executable, "-m", "gseek", "--device", "cpu", "serve", "-x",
                             f"lambda={tmp_path / 'lambda.gseek'}", "--port", "0", "--workers", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    err: list[bytes] = []  # (read as it comes: a pipe nobody reads blocks its writer)
    reader = threading.Thread(target=lambda: err.extend(iter(lambda: os.read(proc.stderr.fileno(), 65536), b"")),
                              daemon=True)
    reader.start()
    under: set[int] = set()
    try:
        def loading() -> bool:
            under.update(_descendants(proc.pid))
            found = any("--multiprocessing-fork" in _cmdline(pid) for pid in under)
            assert found or proc.poll() is None, f"the service ended ({proc.returncode}): {b''.join(err)!r}"
            return found

        _wait(loading, START_S, "no worker process started")  # (the service's start bound: imports, under load)
        if held != "a thread":
            proc.send_signal(signal.SIGTERM)
        sent.touch()
        proc.wait(timeout=60)
        _wait(lambda: not any(_alive(pid) for pid in under), 20,
              f"left behind: {[p for p in under if _alive(p)]}; the service said {b''.join(err)!r}")
    finally:
        proc.kill()
        proc.wait(timeout=60)
        for pid in under:  # (the test's own children's children, by their ids)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        reader.join(30)  # (at the end of the service's stderr: every process holding it ended)


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_a_restart_cut_short_by_the_service_ending_logs_no_failure():
    """The service ends while a worker process is being started again: no 'cannot be started again' line (the
    start ended because the service is ending, not because the worker cannot start)."""
    log: list[str] = []
    slot = _ended_worker(log)

    def start(verify: bool = False) -> None:  # (as WorkerProcess.start ends when told to stop meanwhile)
        slot.ask_to_stop()
        raise GseekError("not ready within 3600 s")

    slot.start = start
    try:
        with pytest.raises(SlotDown):
            slot.executor.submit(slot.call, (types.SimpleNamespace(name="db"), None), []).result(timeout=60)
        slot.executor.submit(lambda: None).result(timeout=60)
        assert not any("cannot be started again" in line for line in log), log
    finally:
        slot.executor.shutdown(wait=True)

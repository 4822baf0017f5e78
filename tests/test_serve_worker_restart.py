"""A worker process of ``gseek serve`` (gseek.serve.processes.WorkerProcess) found ended by one group, with
more groups already queued on its thread (the batcher sends a group over its size bounds to the least busy
slot, busy or not): every queued group goes on to another slot (SlotDown), and the worker is started again
once, not once per queued group (each restart loads and warms every database, and kills the one before)."""

from __future__ import annotations

import multiprocessing
import types

import pytest

from gseek.serve.processes import WorkerProcess
from gseek.serve.slots import SlotDown


def _ended_worker(log: list[str]) -> WorkerProcess:
    """A WorkerProcess whose process has ended while idle (its pipe's other end closed); start() counted."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    process = context.Process(target=int)
    process.start()
    theirs.close()
    process.join()
    slot = WorkerProcess(0, "cpu", ((), None, False, "."), log.append)
    slot.process, slot._conn, slot._taken, slot.up = process, ours, context.RawValue("q", 0), True
    slot.starts = 0

    def start(verify: bool = False) -> None:
        slot.starts += 1
        slot.up = True

    slot.start = start
    return slot


def test_groups_queued_behind_a_lost_one_go_on_and_the_worker_restarts_once():
    log: list[str] = []
    slot = _ended_worker(log)
    target = (types.SimpleNamespace(name="db"), None)
    try:
        calls = [slot.executor.submit(slot.call, target, []) for _ in range(3)]
        for call in calls:
            with pytest.raises(SlotDown):
                call.result(timeout=60)
        slot.executor.submit(lambda: None).result(timeout=60)  # the restarts queued meanwhile have run
        assert slot.starts == 1 and slot.restarts == 1, log
        assert sum("ended" in line for line in log) == 1, log
    finally:
        slot.closing = True
        slot.executor.shutdown(wait=True)

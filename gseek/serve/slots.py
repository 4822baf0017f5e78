"""The device workers of ``gseek serve`` and how a group picks one.

A *device worker* (a slot of the batcher) runs one search at a time. With
``--workers 0`` they are threads of the service's own process
(:class:`DeviceSlot`, the default: one a device, each with its device's backend; the
databases loaded once in that process, their parts put on each device); with
``--workers N`` (N ≥ 1; the default is 0) they are worker processes
(:class:`~gseek.serve.processes.WorkerProcess`, N a device), each searching,
sharing its HSPs out and writing each request's bytes in its own interpreter.
Either kind has a ``number`` (0, 1, ... over all devices), a ``device`` (slots of one
device share it), an ``executor`` (the one thread the batcher hands the slot's
groups to), ``up`` (it can take a group: a worker process restarting is not)
and ``gone`` (it will not come back). The batcher sends a group to a free
slot, of the device with the fewest busy slots (:func:`least_busy`). A
query's HSPs do not depend on the slot, the device or what it is searched
with: every slot answers with the same bytes.

>>> slots = make_slots(["cpu"], threads=1)
>>> [(s.number, s.device, s.backend.name, s.up) for s in slots]
[(0, 'cpu', 'cpu', True)]
>>> fake = [DeviceSlot(n, d, None, None) for n, d in enumerate(["gpu:0", "gpu:0", "gpu:1"])]
>>> [least_busy(fake, busy).number for busy in ([1, 0, 1], [1, 1, 0], [1, 1, 1])]  # ([1, 1, 1]: gpu:1 less busy)
[1, 2, 2]
>>> fake[1].up = False
>>> least_busy(fake, [1, 0, 1]).number
0
>>> close_slots(slots)
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DeviceSlot", "SlotDown", "close_slots", "least_busy", "make_slots"]


class SlotDown(RuntimeError):
    """A slot found down as a group reached it (a worker process that ended while idle): the group
    goes to another slot, nothing failed."""


@dataclass(eq=False)
class DeviceSlot:
    """A device thread of the service's own process: ``number``, ``device`` (its device's name),
    ``backend`` and the thread it runs on (``executor``; made when None); ``up`` and ``gone`` as
    every slot's (a thread is always up)."""

    number: int
    device: str
    backend: Any
    executor: concurrent.futures.ThreadPoolExecutor | None = None
    up: bool = True
    gone: bool = False

    def __post_init__(self) -> None:
        if self.executor is None:
            self.executor = concurrent.futures.ThreadPoolExecutor(
                1, thread_name_prefix=f"gseek-serve-device{self.number}")

    def __repr__(self) -> str:
        return f"DeviceSlot({self.number}, {self.device})"


def make_slots(devices: Sequence[Any], threads: int | None = None) -> list[DeviceSlot]:
    """One device thread a device of ``devices`` (names or backends: ``cpu``, ``gpu:N``)."""
    from gseek.backend import get_backend

    slots: list[DeviceSlot] = []
    for spec in devices:
        backend = get_backend(spec, threads)
        slots.append(DeviceSlot(len(slots), backend.spec, backend))
    return slots


def least_busy(slots: Sequence[Any], busy: Sequence[int]) -> Any | None:
    """The slot a group goes to: of the slots up, the least busy (``busy``: groups in flight per
    slot), ties broken by the fewest groups in flight on its device, then by its number; None
    when none is up."""
    per_device: dict[str, int] = {}
    for slot in slots:
        per_device[slot.device] = per_device.get(slot.device, 0) + busy[slot.number]
    up = [s for s in slots if s.up]
    return min(up, key=lambda s: (busy[s.number], per_device[s.device], s.number)) if up else None


def close_slots(slots: Sequence[Any], wait: bool = True) -> None:
    """Stop every slot's thread (``wait``: for the work in flight)."""
    for slot in slots:
        slot.executor.shutdown(wait=wait, cancel_futures=True)

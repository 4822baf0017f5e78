"""The device workers of ``gseek serve``: one thread each, with its own backend (on a GPU, its own CUDA stream).

A service has ``workers`` slots per device (``--gpus 0,1``: per GPU; else the
one device of ``--device``). Each slot is one thread that runs one search at a
time on its backend; slots of one GPU share that GPU's copy of each database
(:meth:`~gseek.index.text.ReferenceText.on` uploads once per device) and each
has its own stream where there are several (:meth:`~gseek.backend.GpuBackend.with_stream`), so that
one slot's host work (its Numba passes, its lookup table, its HSPs split back)
may run beside another's kernels. The batcher sends a group to a free slot, of
the device with the fewest busy slots (:func:`least_busy`). A query's HSPs do
not depend on the slot, the device or what it is searched with: every slot
answers with the same bytes. One slot a device is the default: two on one
H200 answered 242 requests/s where main's one device thread answered 285
(``benchmarks/RESULTS.md``, 2026-11-28: a search's host work is mostly held by
the interpreter, so two searches at once each took longer and each gathered
fewer requests).

>>> slots = make_slots(["cpu"], workers=2, threads=1)
>>> [(s.number, s.device, s.backend.name) for s in slots]
[(0, 'cpu', 'cpu'), (1, 'cpu', 'cpu')]
>>> least_busy(slots, [1, 0]).number, least_busy(slots, [1, 1]).number
(1, 0)
>>> close_slots(slots)
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DeviceSlot", "close_slots", "least_busy", "make_slots"]

@dataclass(eq=False)
class DeviceSlot:
    """One device worker: ``number`` (0, 1, ... over all devices), ``device`` (its device's name:
    slots of one device share ``device``), ``backend`` (on a GPU, its own stream), ``base`` (the
    device's backend without the stream: what the index and the mapper's FM arrays are loaded on)
    and the thread it runs on (``executor``)."""

    number: int
    device: str
    backend: Any
    base: Any
    executor: concurrent.futures.ThreadPoolExecutor

    def __repr__(self) -> str:
        return f"DeviceSlot({self.number}, {self.device})"


def make_slots(devices: Sequence[Any], workers: int | None = None, threads: int | None = None) -> list[DeviceSlot]:
    """``workers`` slots (default one) per device of ``devices`` (names or backends: ``cpu``, ``gpu:N``)."""
    from gseek.backend import get_backend
    from gseek.errors import OptionError

    if workers is not None and workers < 1:
        raise OptionError(f"--workers {workers}: at least 1")
    slots: list[DeviceSlot] = []
    for spec in devices:
        base = get_backend(spec, threads)
        streams = base.name == "gpu" and (workers or 1) > 1  # one worker: the device's default stream
        for _ in range(workers or 1):
            backend = base.with_stream() if streams else base
            number = len(slots)
            pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"gseek-serve-device{number}")
            slots.append(DeviceSlot(number, base.spec, backend, base, pool))
    return slots


def least_busy(slots: Sequence[DeviceSlot], busy: Sequence[int]) -> DeviceSlot:
    """The slot a group goes to: the least busy (``busy``: groups in flight per slot), ties broken by
    the fewest groups in flight on its device, then by its number."""
    per_device: dict[str, int] = {}
    for slot in slots:
        per_device[slot.device] = per_device.get(slot.device, 0) + busy[slot.number]
    return min(slots, key=lambda s: (busy[s.number], per_device[s.device], s.number))


def close_slots(slots: Sequence[DeviceSlot], wait: bool = True) -> None:
    """Stop every slot's thread (``wait``: for the work in flight)."""
    for slot in slots:
        slot.executor.shutdown(wait=wait, cancel_futures=True)

"""Concurrent requests for one database and options gathered into one search (one lookup table, one scan;
for mapping, one pipeline run whose jobs join the requests' reads).

A request's parsed query batch waits in its *group* (one per database and
options, and per kind of batch: FASTA or FASTQ) for at most ``window``
seconds, while more join it; the group then goes to a free device worker
(a *slot*, :mod:`gseek.serve.slots`: of the device with the fewest busy
slots) as one search, whose HSPs are shared out back to each request
(:meth:`Engine.search_group <gseek.serve.engine.Engine.search_group>`). A group
goes at once (without its window) when a slot is free and no other request
is on its way (:meth:`Batcher.coming`: admitted, its queries still being
parsed): there is no one to wait for. While
every slot is busy a group whose window is over keeps gathering until one is
free (so the longer the queue, the larger the search); a group that reaches
``max_queries`` or ``max_bases`` goes at once, to the least busy slot. A
request that gives up (its time limit, its client gone) before its group goes
is left out of it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .slots import DeviceSlot, least_busy

__all__ = ["Batcher"]


class _Group:
    def __init__(self, key: Any, target: Any) -> None:
        self.key, self.target = key, target
        self.items: list[tuple[Any, asyncio.Future]] = []
        self.queries = self.bases = 0
        self.ready = False  # its window is over: it goes when the device is free
        self.sent = False


class Batcher:
    """Gathers batches into groups and runs each group with ``run(target, batches[, slot])`` on a slot.

    Arguments:
        run: the group's search (:meth:`~gseek.serve.engine.Engine.search_group`): a result or an
            exception per batch, in order.
        slots: the device workers (:class:`~gseek.serve.slots.DeviceSlot`; ``run`` gets the slot as
            its third argument), or one executor (the one device thread; ``run`` gets two).
        window: seconds a group waits for more batches.
        max_queries, max_bases: a group's bounds (a single larger batch goes alone).

    :attr:`requests` and :attr:`groups` count the batches and the searches so far.
    """

    def __init__(self, run: Callable[..., list[Any]], slots: Sequence[DeviceSlot] | concurrent.futures.Executor,
                 window: float = 0.005, max_queries: int = 10_000, max_bases: int = 8 << 20) -> None:
        self.run = run
        self._with_slot = not isinstance(slots, concurrent.futures.Executor)
        self.slots = list(slots) if self._with_slot else [DeviceSlot(0, "device", None, None, slots)]
        self.window, self.max_queries, self.max_bases = window, max_queries, max_bases
        self._pending: dict[Any, _Group] = {}
        #: Groups in flight per slot.
        self.busy = [0] * len(self.slots)
        #: Groups each slot has run, and the seconds it spent on them.
        self.ran = [0] * len(self.slots)
        self.seconds = [0.0] * len(self.slots)
        self.requests = 0
        self.groups = 0
        #: Requests on their way here (:meth:`coming`).
        self.incoming = 0

    @contextlib.contextmanager
    def coming(self) -> Iterator[None]:
        """A request that will reach :meth:`search` (or fail) within the block: while any is
        on its way, a group waits its window for it."""
        self.incoming += 1
        try:
            yield
        finally:
            self.incoming -= 1

    async def search(self, key: Any, target: Any, batch: Any, size: tuple[int, int] | None = None) -> Any:
        """The result of ``batch``, run with the other batches of ``key`` that arrive meanwhile
        (``size``: its queries and bases; default: those of a query batch)."""
        loop = asyncio.get_running_loop()
        queries, bases = size if size is not None else (len(batch), int(batch.codes.size))
        key = (key, getattr(batch, "quals", None) is None)
        group = self._pending.get(key)
        if group is not None and (group.queries + queries > self.max_queries or group.bases + bases > self.max_bases):
            self._flush(group)
            group = None
        if group is None:
            group = self._pending[key] = _Group(key, target)
            if self._free() and self.incoming == 0:  # no one to wait for: it goes now (after the batches
                loop.call_soon(self._expire, group)  # queued with it, a request's files)
            else:
                loop.call_later(self.window, self._expire, group)
        future: asyncio.Future = loop.create_future()
        group.items.append((batch, future))
        group.queries += queries
        group.bases += bases
        self.requests += 1
        if group.queries >= self.max_queries or group.bases >= self.max_bases:
            self._flush(group)
        return await future

    def _free(self) -> bool:
        return 0 in self.busy

    def _expire(self, group: _Group) -> None:
        if group.sent:
            return
        group.ready = True
        if self._free():
            self._flush(group)

    def _flush(self, group: _Group) -> None:
        if group.sent:
            return
        group.sent = True
        if self._pending.get(group.key) is group:
            del self._pending[group.key]
        items = [(b, f) for b, f in group.items if not f.done()]  # not those that gave up
        if not items:
            return
        slot = least_busy(self.slots, self.busy)
        self.busy[slot.number] += 1
        self.ran[slot.number] += 1
        self.groups += 1
        loop = asyncio.get_running_loop()
        args = (group.target, [b for b, _ in items]) + ((slot,) if self._with_slot else ())
        done = loop.run_in_executor(slot.executor, self._timed, slot, args)
        done.add_done_callback(functools.partial(self._done, slot, [f for _, f in items]))

    def _timed(self, slot: DeviceSlot, args: tuple) -> list[Any]:
        started = time.perf_counter()
        try:
            return self.run(*args)
        finally:
            self.seconds[slot.number] += time.perf_counter() - started

    def _done(self, slot: DeviceSlot, futures: list[asyncio.Future], done: asyncio.Future) -> None:
        self.busy[slot.number] -= 1
        if done.cancelled():
            results: list[Any] = [asyncio.CancelledError()] * len(futures)
        elif done.exception() is not None:
            results = [done.exception()] * len(futures)
        else:
            results = done.result()
        for future, result in zip(futures, results):
            if future.done():
                continue
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)
        for group in [g for g in self._pending.values() if g.ready or self.incoming == 0]:  # waited for a slot:
            if not self._free():                                                             # the rest keep
                break                                                                        # gathering
            self._flush(group)

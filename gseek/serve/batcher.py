"""Concurrent requests for one database and options gathered into one search (one lookup table, one scan;
for mapping, one pipeline run whose jobs join the requests' reads).

A request waits in its *group* (one per kind — BLAST or mapping —, database
and options, and for BLAST per kind of query file: FASTA or FASTQ) for at
most ``window`` seconds, while more join it; the group then goes to a free
device worker (a *slot*, :mod:`gseek.serve.slots`: of the device with the
fewest busy slots) as one search, whose HSPs are shared out back to each
request (:meth:`Engine.answer <gseek.serve.engine.Engine.answer>`). One
batcher serves both kinds, so BLAST and mapping groups count the same busy
slots. A group goes at once (without its window) when a slot is free and no
other request is on its way (:meth:`Batcher.coming`: admitted, its queries
still being parsed): there is no one to wait for. While every slot is busy
(or down: a worker process restarting) a group whose window is over keeps
gathering until one is free (so the longer the queue, the larger the
search); a group that reaches ``max_queries`` or ``max_bases`` goes at once,
to the least busy slot up. A request that gives up (its time limit, its
client gone) before its group goes is left out of it. When every slot is
gone for good a group fails at once (503).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .engine import RequestError
from .slots import SlotDown, least_busy

__all__ = ["Batcher"]


class _Group:
    def __init__(self, key: Any, target: Any) -> None:
        self.key, self.target = key, target
        self.items: list[tuple[Any, asyncio.Future]] = []
        self.queries = self.bases = 0
        self.ready = False  # its window is over: it goes when the device is free
        self.sent = False


class Batcher:
    """Gathers requests into groups and runs each group with ``run(target, items, slot)`` on a slot.

    Arguments:
        run: the group's answers (:meth:`~gseek.serve.engine.Front.answer`): a result or an
            exception per item, in order.
        slots: the device workers (:mod:`gseek.serve.slots`).
        window: seconds a group waits for more requests.
        max_queries, max_bases: a group's bounds (a single larger request goes alone).

    :attr:`requests` and :attr:`groups` count the requests and the searches so far, by kind
    (``blast``, ``map``); :attr:`ran` the groups each slot ran, by kind.
    """

    def __init__(self, run: Callable[..., list[Any]], slots: Sequence[Any], window: float = 0.005,
                 max_queries: int = 10_000, max_bases: int = 8 << 20) -> None:
        self.run = run
        self.slots = list(slots)
        self.window, self.max_queries, self.max_bases = window, max_queries, max_bases
        self._pending: dict[Any, _Group] = {}
        #: Groups in flight per slot.
        self.busy = [0] * len(self.slots)
        #: Groups each slot has run, by kind, and the seconds it spent on them.
        self.ran: list[collections.Counter] = [collections.Counter() for _ in self.slots]
        self.seconds = [0.0] * len(self.slots)
        self.requests: collections.Counter = collections.Counter()
        self.groups: collections.Counter = collections.Counter()
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

    async def search(self, key: Any, target: Any, item: Any, size: tuple[int, int], kind: str = "blast") -> Any:
        """The result of ``item`` (a request), run with the other items of ``key`` that arrive
        meanwhile (``size``: its queries and bases; ``kind``: what it is counted as)."""
        loop = asyncio.get_running_loop()
        queries, bases = size
        key = (kind, key)
        group = self._pending.get(key)
        if group is not None and (group.queries + queries > self.max_queries or group.bases + bases > self.max_bases):
            self._flush(group)
            group = self._pending.get(key)  # (still here while no slot is up)
        if group is None:
            group = self._pending[key] = _Group(key, target)
            if self._gone() or (self._free() and self.incoming == 0):  # no one to wait for: it goes now
                loop.call_soon(self._expire, group)                       # (after the items queued with it)
            else:
                loop.call_later(self.window, self._expire, group)
        future: asyncio.Future = loop.create_future()
        group.items.append((item, future))
        group.queries += queries
        group.bases += bases
        self.requests[kind] += 1
        if group.queries >= self.max_queries or group.bases >= self.max_bases:
            self._flush(group)
        return await future

    def _free(self) -> bool:
        return any(s.up and self.busy[s.number] == 0 for s in self.slots)

    def _gone(self) -> bool:
        return all(s.gone for s in self.slots)

    def _expire(self, group: _Group) -> None:
        if group.sent:
            return
        group.ready = True
        if self._free() or self._gone():
            self._flush(group)

    def _flush(self, group: _Group) -> None:
        if group.sent:
            return
        slot = least_busy(self.slots, self.busy)
        if slot is None and not self._gone():
            return  # every slot down for now: it keeps gathering until one is up (:meth:`wake`)
        group.sent = True
        if self._pending.get(group.key) is group:
            del self._pending[group.key]
        items = [(b, f) for b, f in group.items if not f.done()]  # not those that gave up
        if not items:
            return
        if slot is None:
            for _, future in items:
                future.set_exception(RequestError(503, "resources", "no device worker left to search with "
                                                                    "(see the service's log)"))
            return
        self.busy[slot.number] += 1
        self.ran[slot.number][group.key[0]] += 1
        self.groups[group.key[0]] += 1
        loop = asyncio.get_running_loop()
        done = loop.run_in_executor(slot.executor, self._timed, slot, group.target, [b for b, _ in items])
        done.add_done_callback(functools.partial(self._done, slot, group, items))

    def _timed(self, slot: Any, target: Any, items: list[Any]) -> list[Any]:
        started = time.perf_counter()
        try:
            return self.run(target, items, slot)
        finally:
            self.seconds[slot.number] += time.perf_counter() - started

    def _done(self, slot: Any, group: _Group, items: list[tuple[Any, asyncio.Future]], done: asyncio.Future) -> None:
        self.busy[slot.number] -= 1
        futures = [f for _, f in items]
        if not done.cancelled() and isinstance(done.exception(), SlotDown):  # not run: it goes on to another
            self.ran[slot.number][group.key[0]] -= 1
            self.groups[group.key[0]] -= 1
            again = self._pending.get(group.key)
            if again is None:
                again = self._pending[group.key] = _Group(group.key, group.target)
                again.ready = True
            again.items[:0] = items
            again.queries += group.queries
            again.bases += group.bases
            self.wake()
            return
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
        self.wake()

    def wake(self) -> None:
        """Send the groups that waited for a slot (their window over, or no one on the way) while one
        is free (on the event loop: after a group, or when a slot comes up or is gone)."""
        for group in [g for g in self._pending.values() if g.ready or self.incoming == 0]:
            if not self._free() and not self._gone():
                break  # the rest keep gathering
            self._flush(group)

"""Concurrent requests for one database and options gathered into one search (one lookup table, one scan;
for mapping, one pipeline run whose jobs join the requests' reads).

A request's parsed query batch waits in its *group* (one per database and
options, and per kind of batch: FASTA or FASTQ) for at most ``window``
seconds, while more join it; the group then goes to the device thread as one
search, whose HSPs are shared out back to each request
(:meth:`Engine.search_group <gseek.serve.engine.Engine.search_group>`). A group
goes at once (without its window) when the device is free and no other request
is on its way (:meth:`Batcher.coming`: admitted, its queries still being
parsed): there is no one to wait for. While
the device is busy a group whose window is over keeps gathering until the
device is free; a group that reaches ``max_queries`` or ``max_bases`` goes at
once. A request that gives up (its time limit, its client gone) before its
group goes is left out of it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Batcher"]


class _Group:
    def __init__(self, key: Any, searcher: Any) -> None:
        self.key, self.searcher = key, searcher
        self.items: list[tuple[Any, asyncio.Future]] = []
        self.queries = self.bases = 0
        self.ready = False  # its window is over: it goes when the device is free
        self.sent = False


class Batcher:
    """Gathers batches into groups and runs each group with ``run(searcher, batches)`` on ``executor``.

    Arguments:
        run: the group's search (:meth:`~gseek.serve.engine.Engine.search_group`): a result or an
            exception per batch, in order.
        executor: the device thread.
        window: seconds a group waits for more batches.
        max_queries, max_bases: a group's bounds (a single larger batch goes alone).

    :attr:`requests` and :attr:`groups` count the batches and the searches so far.
    """

    def __init__(self, run: Callable[[Any, list[Any]], list[Any]], executor: concurrent.futures.Executor,
                 window: float = 0.005, max_queries: int = 10_000, max_bases: int = 8 << 20) -> None:
        self.run, self.executor = run, executor
        self.window, self.max_queries, self.max_bases = window, max_queries, max_bases
        self._pending: dict[Any, _Group] = {}
        self._running = 0
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

    async def search(self, key: Any, searcher: Any, batch: Any, size: tuple[int, int] | None = None) -> Any:
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
            group = self._pending[key] = _Group(key, searcher)
            if self._running == 0 and self.incoming == 0:  # no one to wait for: it goes now (after the
                loop.call_soon(self._expire, group)          # batches queued with it, a request's files)
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

    def _expire(self, group: _Group) -> None:
        if group.sent:
            return
        group.ready = True
        if self._running == 0:
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
        self._running += 1
        self.groups += 1
        loop = asyncio.get_running_loop()
        done = loop.run_in_executor(self.executor, self.run, group.searcher, [b for b, _ in items])
        done.add_done_callback(functools.partial(self._done, [f for _, f in items]))

    def _done(self, futures: list[asyncio.Future], done: asyncio.Future) -> None:
        self._running -= 1
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
        for group in [g for g in self._pending.values() if g.ready or self.incoming == 0]:  # waited for the
            self._flush(group)                                                               # device

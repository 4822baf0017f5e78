"""``gseek serve``'s batcher (gseek.serve.batcher) on its own: a lone request goes at once (no one to
wait for), a request on its way is waited for within the window, batches queued together and those
that arrive while the device is busy go as one search each."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time

from gseek.serve.batcher import Batcher

#: A window far longer than any test: a group that waited for it would time the test out.
LONG = 30.0


class Device:
    """The device thread's work: records each group's batches; ``hold`` keeps a search running."""

    def __init__(self) -> None:
        self.groups: list[list[str]] = []
        self.hold = threading.Event()
        self.hold.set()

    def run(self, searcher, batches):
        self.hold.wait(10)
        self.groups.append(list(batches))
        return [f"hits of {b}" for b in batches]


def _batcher(window: float) -> tuple[Batcher, Device, concurrent.futures.ThreadPoolExecutor]:
    device = Device()
    pool = concurrent.futures.ThreadPoolExecutor(1)
    return Batcher(device.run, pool, window=window), device, pool


def _search(batcher: Batcher, name: str):
    return batcher.search("key", None, name, (1, 100))


def test_a_lone_request_does_not_wait_the_window():
    batcher, device, pool = _batcher(LONG)

    async def main():
        t = time.perf_counter()
        got = await asyncio.wait_for(_search(batcher, "a"), 5)
        return got, time.perf_counter() - t

    got, seconds = asyncio.run(main())
    pool.shutdown()
    assert got == "hits of a" and device.groups == [["a"]] and seconds < 2


def test_batches_queued_together_go_as_one_search():
    batcher, device, pool = _batcher(LONG)

    async def main():
        return await asyncio.wait_for(asyncio.gather(*[_search(batcher, n) for n in "abc"]), 5)

    assert asyncio.run(main()) == ["hits of a", "hits of b", "hits of c"]
    pool.shutdown()
    assert device.groups == [["a", "b", "c"]]


def test_a_request_on_its_way_is_waited_for_within_the_window():
    batcher, device, pool = _batcher(0.5)

    async def main():
        async def later():
            with batcher.coming():
                await asyncio.sleep(0.1)  # its queries being parsed
            return await _search(batcher, "b")

        coming = asyncio.ensure_future(later())
        await asyncio.sleep(0)  # b is on its way before a arrives
        return await asyncio.wait_for(asyncio.gather(_search(batcher, "a"), coming), 5)

    assert asyncio.run(main()) == ["hits of a", "hits of b"]
    pool.shutdown()
    assert device.groups == [["a", "b"]]


def test_arrivals_while_the_device_is_busy_go_together_when_it_is_free():
    batcher, device, pool = _batcher(LONG)
    device.hold.clear()

    async def main():
        first = asyncio.ensure_future(_search(batcher, "a"))
        await asyncio.sleep(0.05)  # a is on the device
        rest = [asyncio.ensure_future(_search(batcher, n)) for n in "bc"]
        await asyncio.sleep(0.05)
        device.hold.set()
        return await asyncio.wait_for(asyncio.gather(first, *rest), 5)

    assert asyncio.run(main()) == ["hits of a", "hits of b", "hits of c"]
    pool.shutdown()
    assert device.groups == [["a"], ["b", "c"]]

"""``gseek serve``'s batcher (gseek.serve.batcher) on its own, over device slots (gseek.serve.slots.DeviceSlot)
whose work is recorded: a lone request goes at once (no one to wait for), a request on its way is waited
for within the window, requests queued together and those that arrive while the device is busy go as one
search each; BLAST and mapping groups count the same busy slots; a group that finds its slot down goes to
another; with every slot gone a request is refused at once."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from gseek.serve.batcher import Batcher
from gseek.serve.engine import RequestError
from gseek.serve.slots import DeviceSlot, SlotDown, close_slots

#: A window far longer than any test: a group that waited for it would time the test out.
LONG = 30.0


class Device:
    """The device thread's work: records each group's requests; ``hold`` keeps a search running."""

    def __init__(self) -> None:
        self.groups: list[list[str]] = []
        self.hold = threading.Event()
        self.hold.set()

    def run(self, target, items, slot):
        self.hold.wait(10)
        self.groups.append(list(items))
        return [f"hits of {b}" for b in items]


def _batcher(window: float) -> tuple[Batcher, Device, list[DeviceSlot]]:
    device = Device()
    slots = [DeviceSlot(0, "cpu", None)]
    return Batcher(device.run, slots, window=window), device, slots


def _search(batcher: Batcher, name: str, kind: str = "blast"):
    return batcher.search("key", None, name, (1, 100), kind)


def test_a_lone_request_does_not_wait_the_window():
    batcher, device, slots = _batcher(LONG)

    async def main():
        t = time.perf_counter()
        got = await asyncio.wait_for(_search(batcher, "a"), 5)
        return got, time.perf_counter() - t

    got, seconds = asyncio.run(main())
    close_slots(slots)
    assert got == "hits of a" and device.groups == [["a"]] and seconds < 2


def test_batches_queued_together_go_as_one_search():
    batcher, device, slots = _batcher(LONG)

    async def main():
        return await asyncio.wait_for(asyncio.gather(*[_search(batcher, n) for n in "abc"]), 5)

    assert asyncio.run(main()) == ["hits of a", "hits of b", "hits of c"]
    close_slots(slots)
    assert device.groups == [["a", "b", "c"]]


def test_a_request_on_its_way_is_waited_for_within_the_window():
    batcher, device, slots = _batcher(0.5)

    async def main():
        async def later():
            with batcher.coming():
                await asyncio.sleep(0.1)  # its queries being parsed
            return await _search(batcher, "b")

        coming = asyncio.ensure_future(later())
        await asyncio.sleep(0)  # b is on its way before a arrives
        return await asyncio.wait_for(asyncio.gather(_search(batcher, "a"), coming), 5)

    assert asyncio.run(main()) == ["hits of a", "hits of b"]
    close_slots(slots)
    assert device.groups == [["a", "b"]]


def test_arrivals_while_the_device_is_busy_go_together_when_it_is_free():
    batcher, device, slots = _batcher(LONG)
    device.hold.clear()

    async def main():
        first = asyncio.ensure_future(_search(batcher, "a"))
        await asyncio.sleep(0.05)  # a is on the device
        rest = [asyncio.ensure_future(_search(batcher, n)) for n in "bc"]
        await asyncio.sleep(0.05)
        device.hold.set()
        return await asyncio.wait_for(asyncio.gather(first, *rest), 5)

    assert asyncio.run(main()) == ["hits of a", "hits of b", "hits of c"]
    close_slots(slots)
    assert device.groups == [["a"], ["b", "c"]]


class Slots:
    """Device slots over fake devices: ``hold[n]`` keeps slot n's search running; ``groups`` records
    (slot, requests) of each search; a slot in ``down`` finds itself down as a group reaches it."""

    def __init__(self, devices: list[str]) -> None:
        self.slots = [DeviceSlot(n, d, None) for n, d in enumerate(devices)]
        self.hold = [threading.Event() for _ in devices]
        for h in self.hold:
            h.set()
        self.groups: list[tuple[int, list[str]]] = []
        self.down: set[int] = set()

    def run(self, target, items, slot):
        if slot.number in self.down:
            slot.up = False
            raise SlotDown(f"slot {slot.number}")
        self.hold[slot.number].wait(10)
        self.groups.append((slot.number, list(items)))
        return [f"hits of {b} on {slot.number}" for b in items]

    def close(self):
        close_slots(self.slots)


def test_a_group_goes_to_a_free_slot_while_another_is_busy():
    slots = Slots(["gpu:0", "gpu:0"])
    batcher = Batcher(slots.run, slots.slots, window=LONG)
    slots.hold[0].clear()

    async def main():
        first = asyncio.ensure_future(_search(batcher, "a"))
        await asyncio.sleep(0.05)  # a is on slot 0, held there
        second = await asyncio.wait_for(_search(batcher, "b"), 5)  # slot 1 is free: b goes at once
        slots.hold[0].set()
        return await asyncio.wait_for(first, 5), second

    assert asyncio.run(main()) == ("hits of a on 0", "hits of b on 1")
    slots.close()
    assert slots.groups == [(1, ["b"]), (0, ["a"])] and [r["blast"] for r in batcher.ran] == [1, 1]


def test_groups_spread_over_devices_first_and_wait_when_every_slot_is_busy():
    slots = Slots(["gpu:0", "gpu:0", "gpu:1", "gpu:1"])
    batcher = Batcher(slots.run, slots.slots, window=LONG)
    for h in slots.hold:
        h.clear()

    async def main():
        busy = []
        for name in "abcd":  # one group each, each sent at once to a free slot: gpu:0, gpu:1, gpu:0, gpu:1
            busy.append(asyncio.ensure_future(_search(batcher, name)))
            await asyncio.sleep(0.05)
        waiting = [asyncio.ensure_future(_search(batcher, n)) for n in "efg"]  # every slot busy: they gather
        await asyncio.sleep(0.05)
        slots.hold[2].set()  # slot 2 (gpu:1) frees: e, f, g go there as one search
        got = await asyncio.wait_for(asyncio.gather(*waiting), 5)
        for h in slots.hold:
            h.set()
        return [await asyncio.wait_for(f, 5) for f in busy], got

    done, got = asyncio.run(main())
    slots.close()
    assert done == ["hits of a on 0", "hits of b on 2", "hits of c on 1", "hits of d on 3"]
    assert got == ["hits of e on 2", "hits of f on 2", "hits of g on 2"]
    assert (2, ["e", "f", "g"]) in slots.groups and len(slots.groups) == 5


def test_blast_and_mapping_groups_share_the_busy_slots():
    """A mapping group arriving while a BLAST group holds the only slot waits for it (one count of busy
    slots for both kinds), then goes."""
    slots = Slots(["cpu"])
    batcher = Batcher(slots.run, slots.slots, window=LONG)
    slots.hold[0].clear()

    async def main():
        first = asyncio.ensure_future(_search(batcher, "a", "blast"))
        await asyncio.sleep(0.05)  # a is on slot 0, held there
        mapped = asyncio.ensure_future(_search(batcher, "m", "map"))
        await asyncio.sleep(0.1)
        sent_while_busy = dict(batcher.groups)
        slots.hold[0].set()
        return sent_while_busy, await asyncio.wait_for(asyncio.gather(first, mapped), 5)

    sent_while_busy, got = asyncio.run(main())
    slots.close()
    assert sent_while_busy == {"blast": 1} and got == ["hits of a on 0", "hits of m on 0"]
    assert slots.groups == [(0, ["a"]), (0, ["m"])]
    assert batcher.groups == {"blast": 1, "map": 1} and batcher.requests == {"blast": 1, "map": 1}


def test_a_group_that_finds_its_slot_down_goes_to_another():
    slots = Slots(["cpu", "cpu"])
    slots.down.add(0)
    batcher = Batcher(slots.run, slots.slots, window=LONG)

    async def main():
        return await asyncio.wait_for(asyncio.gather(*[_search(batcher, n) for n in "ab"]), 5)

    assert asyncio.run(main()) == ["hits of a on 1", "hits of b on 1"]
    slots.close()
    assert slots.groups == [(1, ["a", "b"])] and [r["blast"] for r in batcher.ran] == [0, 1]


def test_with_every_slot_gone_a_request_is_refused_at_once():
    slots = Slots(["cpu"])
    slots.slots[0].up, slots.slots[0].gone = False, True
    batcher = Batcher(slots.run, slots.slots, window=LONG)

    async def main():
        return await asyncio.wait_for(_search(batcher, "a"), 5)

    with pytest.raises(RequestError) as info:
        asyncio.run(main())
    slots.close()
    assert info.value.status == 503 and slots.groups == []

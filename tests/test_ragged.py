"""gseek.ragged: gather's two ways (an index of every element; slices of long items) give the same arrays."""

import numpy as np
import pytest

from gseek import ragged


def _slow_gather(data, offs, idx):
    parts = [data[offs[i]:offs[i + 1]] for i in idx]
    return (np.concatenate(parts) if parts else data[:0]), ragged.offsets([len(p) for p in parts])


@pytest.mark.parametrize("mean", [0, 1, 5, 40, 300])
@pytest.mark.parametrize("slices_from", [1, 32, 10 ** 9])
def test_gather_equals_item_by_item(monkeypatch, mean, slices_from):
    monkeypatch.setattr(ragged, "_SLICES_FROM", slices_from)
    rng = np.random.default_rng(mean + slices_from)
    sizes = rng.integers(0, 2 * mean + 1, 200)
    offs = ragged.offsets(sizes)
    data = rng.integers(0, 1 << 30, int(offs[-1])).astype(np.uint32)
    for idx in (rng.integers(0, 200, 300), np.arange(200)[::-1], np.zeros(0, np.int64), np.array([7])):
        got, got_off = ragged.gather(data, offs, idx)
        want, want_off = _slow_gather(data, offs, idx)
        assert got.dtype == data.dtype and np.array_equal(got, want) and np.array_equal(got_off, want_off)

"""Paired-end reads: :class:`PairedBatch` (mate 1 and mate 2 side by side) read
from two files (:func:`iter_pairs`) or one interleaved file (:func:`iter_interleaved`).

Mates are never split across batches: every batch holds the same number of
records of each mate, in file order, whatever the chunk sizes of the two
files. The mates' names must agree once a trailing ``/1`` (mate 1) and
``/2`` (mate 2) are stripped, as bowtie strips them; the batches carry the
stripped names (SAM's QNAME of both mates). A name that differs, or one file
ending before the other, is a :class:`~gseek.errors.FastxError` naming the
file and line.

>>> import os, tempfile
>>> d = tempfile.mkdtemp()
>>> one, two = os.path.join(d, "r1.fq"), os.path.join(d, "r2.fq")
>>> _ = open(one, "w").write("@a/1\\nACGT\\n+\\nIIII\\n@b/1\\nGGGG\\n+\\nIIII\\n")
>>> _ = open(two, "w").write("@a/2\\nTTTT\\n+\\nIIII\\n@b/2\\nCCCC\\n+\\nIIII\\n")
>>> [(len(p), p.mate1.name_list(), p.mate2.sequence(0)) for p in iter_pairs(one, two, max_records=1)]
[(1, ['a'], 'TTTT'), (1, ['b'], 'CCCC')]
>>> _ = open(two, "w").write("@a/2\\nTTTT\\n+\\nIIII\\n@c/2\\nCCCC\\n+\\nIIII\\n")
>>> list(iter_pairs(one, two))
Traceback (most recent call last):
...
gseek.errors.FastxError: .../r2.fq:5: mate name 'c' differs from 'b' of .../r1.fq:5
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from gseek import ragged
from gseek.errors import FastxError

from .batch import SequenceBatch
from .reader import FastxReader

__all__ = ["PairedBatch", "iter_pairs", "iter_interleaved", "strip_mate_suffix", "take_records"]


@dataclass(frozen=True)
class PairedBatch:
    """Mate 1 and mate 2 of the same pairs, record ``i`` of each a pair (names stripped of ``/1``, ``/2``)."""

    mate1: SequenceBatch
    mate2: SequenceBatch

    def __post_init__(self) -> None:
        if len(self.mate1) != len(self.mate2):
            raise ValueError(f"mates of unequal counts: {len(self.mate1)} and {len(self.mate2)}")

    def __len__(self) -> int:
        return len(self.mate1)

    def __getitem__(self, records: slice) -> PairedBatch:
        return PairedBatch(self.mate1[records], self.mate2[records])

    def trimmed(self, trim5: int = 0, trim3: int = 0) -> PairedBatch:
        return PairedBatch(self.mate1.trimmed(trim5, trim3), self.mate2.trimmed(trim5, trim3))

    @property
    def nbytes(self) -> int:
        return int(sum(a.nbytes for b in (self.mate1, self.mate2)
                       for a in (b.codes, b.offsets, b.quals, b.names, b.name_offsets) if a is not None))

    def joined(self) -> SequenceBatch:
        """Every mate 1, then every mate 2, as one batch (``n`` pairs: reads ``i`` and ``n + i``)."""
        return SequenceBatch.concat([self.mate1, self.mate2])


def strip_mate_suffix(batch: SequenceBatch, mate: int) -> SequenceBatch:
    """``batch`` with a trailing ``/1`` (``mate=1``) or ``/2`` (``mate=2``) cut from every name."""
    names, off = batch.names, batch.name_offsets
    ends = off[1:]
    size = ends - off[:-1]
    tail = np.zeros(size.size, dtype=bool)
    long = np.flatnonzero(size >= 2)
    if long.size:
        tail[long] = (names[ends[long] - 2] == ord("/")) & (names[ends[long] - 1] == ord(str(mate)))
    if not tail.any():
        return batch
    new_names, new_off = ragged.gather(names, np.column_stack([off[:-1], ends - 2 * tail]).ravel(),
                                       np.arange(0, 2 * size.size, 2))
    return replace(batch, names=new_names, name_offsets=new_off, _cache={})


def _check_names(m1: SequenceBatch, m2: SequenceBatch) -> None:
    """Refuse mates whose (stripped) names differ: the first such pair, at mate 2's line."""
    o1, o2 = m1.name_offsets, m2.name_offsets
    s1, s2 = np.diff(o1), np.diff(o2)
    bad = np.flatnonzero(s1 != s2)
    last = int(bad[0]) if bad.size else len(m1)
    if last:
        a, b = m1.names[: o1[last]], m2.names[: o2[last]]
        differ = np.flatnonzero(a != b)
        if differ.size:
            last = min(last, int(np.searchsorted(o1, differ[0], side="right")) - 1)
    if last < len(m1):
        raise FastxError(m2.path, int(m2.lines[last]),
                         f"mate name {m2.name(last)!r} differs from {m1.name(last)!r} of {m1.where(last)}")


def _paired(m1: SequenceBatch, m2: SequenceBatch) -> PairedBatch:
    m1, m2 = strip_mate_suffix(m1, 1), strip_mate_suffix(m2, 2)
    _check_names(m1, m2)
    return PairedBatch(m1, m2)


def _ended(longer: SequenceBatch, other_path: str, count: int) -> FastxError:
    return FastxError(longer.path, int(longer.lines[0]),
                      f"read {longer.name(0)!r} has no mate: {other_path} ends after {count:,} records")


def iter_pairs(path1: str | os.PathLike, path2: str | os.PathLike, **options) -> Iterator[PairedBatch]:
    """:class:`PairedBatch` es of mate files ``path1`` and ``path2`` read side by side
    (``options``: those of :class:`~gseek.seqio.FastxReader`, for both)."""
    p1, p2 = os.fspath(path1), os.fspath(path2)
    r1, r2 = FastxReader(p1, **options), FastxReader(p2, **options)
    it1, it2 = iter(r1), iter(r2)
    a: SequenceBatch | None = None
    b: SequenceBatch | None = None
    done = 0
    try:
        while True:
            if a is None:
                a = next(it1, None)
            if b is None:
                b = next(it2, None)
            if a is None and b is None:
                return
            if a is None or b is None:
                raise _ended(a if a is not None else b, p2 if b is None else p1, done)  # type: ignore[arg-type]
            # the side holding the rest of its last batch is topped up with its next one, so
            # that batches stay whole (not a small batch of the rest every other time)
            if len(a) < len(b):
                more = next(it1, None)
                a = a if more is None else SequenceBatch.concat([a, more])
            elif len(b) < len(a):
                more = next(it2, None)
                b = b if more is None else SequenceBatch.concat([b, more])
            n = min(len(a), len(b))
            done += n
            yield _paired(a[:n], b[:n])
            a = a[n:] if n < len(a) else None
            b = b[n:] if n < len(b) else None
    finally:
        for it in (it1, it2):
            it.close()  # type: ignore[attr-defined]


def take_records(batch: SequenceBatch, idx: np.ndarray) -> SequenceBatch:
    """Records ``idx`` of ``batch`` (any order) as a batch of their own (soft-mask runs left out)."""
    idx = np.asarray(idx, dtype=np.int64)
    codes, offsets = ragged.gather(batch.codes, batch.offsets, idx)
    quals = None if batch.quals is None else ragged.gather(batch.quals, batch.offsets, idx)[0]
    names, name_offsets = ragged.gather(batch.names, batch.name_offsets, idx)
    desc, desc_off = ragged.gather(batch.descriptions, batch.description_offsets, idx)
    raw = raw_off = None
    if batch.raw is not None and batch.raw_offsets is not None:
        raw, raw_off = ragged.gather(batch.raw, batch.raw_offsets, idx)
    return replace(batch, codes=codes, offsets=offsets, quals=quals, names=names, name_offsets=name_offsets,
                   descriptions=desc, description_offsets=desc_off, soft_mask=np.zeros((0, 2), np.int64),
                   lines=batch.lines[idx], first_record=batch.first_record + (int(idx[0]) if idx.size else 0),
                   raw=raw, raw_offsets=raw_off, _cache={})


def iter_interleaved(path: str | os.PathLike, **options) -> Iterator[PairedBatch]:
    """:class:`PairedBatch` es of one file holding mate 1 and mate 2 of each pair one after the other."""
    reader = iter(FastxReader(path, **options))
    carry: SequenceBatch | None = None
    try:
        for batch in reader:
            if carry is not None:
                batch = SequenceBatch.concat([carry, batch])
                carry = None
            if len(batch) % 2:
                carry = batch[len(batch) - 1 :]
                batch = batch[: len(batch) - 1]
            if len(batch):
                even = np.arange(0, len(batch), 2)
                yield _paired(take_records(batch, even), take_records(batch, even + 1))
        if carry is not None:
            raise FastxError(carry.path, int(carry.lines[0]),
                             f"read {carry.name(0)!r} has no mate: an interleaved file holds an even number of records")
    finally:
        reader.close()  # type: ignore[attr-defined]

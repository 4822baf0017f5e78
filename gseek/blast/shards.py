"""A BLAST database split into shards: :func:`merge_hits` and :class:`ShardedSearcher`.

Every query sequence's work against one contig is independent of the other
contigs (seeds, gapped rounds and purge are per query strand and contig), and
the statistics need only the whole database's length and sequence count. So
each shard (a contiguous range of whole contigs,
:meth:`ReferenceText.shard <gseek.index.text.ReferenceText.shard>`) is searched
alone with the whole database's statistics and subject numbers, and BLAST+'s
report order and limits applied once more to the union of the shards' HSPs
give the HSPs of the unsplit search, byte for byte in every output format
(``docs/blast.md``, "Database split"; ``tests/test_blast_shards.py``).

>>> from gseek.index import Index
>>> from gseek.datasets import lambda_genome
>>> from gseek.seqio import read_fastx
>>> from gseek.blast.searcher import BlastSearcher
>>> genome = read_fastx(lambda_genome()).sequence(0)
>>> index = Index.build(lambda_genome(), wgram=4, device="cpu")
>>> whole = BlastSearcher(index, device="cpu").search([("q1", genome[1000:1500])])
>>> split = ShardedSearcher(index, devices=["cpu", "cpu"]).search([("q1", genome[1000:1500])])
>>> split.row(0) == whole.row(0)
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from gseek.backend import Backend, get_backend, numba_guard
from gseek.dp.runs import LazyRuns
from gseek.errors import OptionError

from .hits import RUN_KEYS, BlastHits, HitArrays, runs_of
from .purge import _report_order
from .searcher import BlastSearcher

__all__ = ["ShardedSearcher", "merge_hits", "split_hits"]


def merge_hits(parts: Sequence[BlastHits], max_target_seqs: int, max_hsps: int | None = None) -> BlastHits:
    """The HSPs of one query batch searched shard by shard, as the unsplit search reports them.

    ``parts``: each shard's :class:`~gseek.blast.searcher.BlastHits` of the same queries (global
    subject numbers, the whole database's statistics), any order; ``max_target_seqs`` and
    ``max_hsps`` (None or 0: all) as searched. The HSPs are concatenated and BLAST+'s report order
    and limits applied again: a query's first ``max_target_seqs`` subjects over the database are
    among the first ``max_target_seqs`` of the shards that hold them, and a subject is in one shard.
    """
    if not parts:
        raise ValueError("merge_hits: no hits to merge")
    parts = sorted(parts, key=_first_subject)  # shard order: equal keys keep the database order
    head = parts[0]
    for p in parts[1:]:
        if p.query_names != head.query_names or p.subject_names != head.subject_names:
            raise ValueError("merge_hits: the parts are not of the same queries and database")
    keys = [k for k in head.arrays if k not in RUN_KEYS]
    joined = {k: np.concatenate([p.arrays[k] for p in parts]) for k in keys}
    order = _report_order(joined["query"], joined["subject"], joined["evalue"], joined["score"], joined["q_start"],
                          joined["s_start"], max_target_seqs, max_hsps or 0)
    arrays = {k: v[order] for k, v in joined.items()}
    for v in arrays.values():
        v.setflags(write=False)
    runs = [runs_of(p.arrays) for p in parts]  # (gathered if read; none where a part's were released)
    arrays = HitArrays(arrays, None if any(r is None for r in runs) else LazyRuns.concat(runs).take(order))
    return BlastHits(arrays, head.query_names, head.query_lengths, head.subject_names, head.subject_lengths,
                     head._query_codes, head._query_offsets, tuple(t for p in parts for t in p.texts))


def _first_subject(hits: BlastHits) -> int:
    return min(t.first_contig for t in hits.texts)


#: Share of a GPU's free memory (at the start) that the database's text and scan may take while a
#: volume is searched: the rest is for the query side and the gapped extensions' launches
#: (up to ``_EXTEND_SHARE`` of the free memory each, ``gseek.blast.searcher``) of the searchers sharing the device.
DEVICE_DB_SHARE = 0.25


def device_bytes_per_base(stride: int) -> float:
    """Device bytes one database base needs while searched: its packed text and N mask (~0.3 bytes)
    and, at worst, an 8-byte scan hit at every stride position (``docs/blast.md``, "Database volumes")."""
    return 0.3 + 8.0 / max(1, int(stride))


def auto_volume_bases(n_bases: int, stride: int, backends: Sequence[Backend], searchers_per_device: int = 1
                      ) -> int | None:
    """The default ``--db-volume-size``: None (the database resident) where it fits in
    :data:`DEVICE_DB_SHARE` of each device's free memory (shared by ``searchers_per_device``)
    or no backend has a budgeted memory (:meth:`~gseek.backend.Backend.free_memory`: the CPU's
    is not); else the bases of the largest volume that fits.

    >>> class Gpu:  # a stand-in with 10 GB free
    ...     def free_memory(self): return 10 * 10**9
    >>> auto_volume_bases(10**9, 17, [Gpu()]) is None, auto_volume_bases(10**10, 17, [Gpu()])
    (True, 3244274809)
    """
    free = [f for f in (b.free_memory() for b in backends) if f is not None]  # a GPU's, not the host's
    if not free:
        return None
    per_base = device_bytes_per_base(stride)
    budget = DEVICE_DB_SHARE * min(free) / max(1, int(searchers_per_device))
    if n_bases * per_base <= budget:
        return None
    return max(1, int(budget / per_base))


def split_hits(hits: BlastHits, sizes: list[int]) -> list[BlastHits]:
    """The HSPs of one search of batches laid end to end (``sizes``: their queries), as each batch's own
    search gives them (what :func:`merge_hits` is along the database, this is along the queries): the
    HSPs come query by query in input order, so each batch's are one run of them."""
    query, runs = hits.arrays["query"], runs_of(hits.arrays)
    codes_off = np.asarray(hits._query_offsets, np.int64)
    out, a = [], 0
    for size in sizes:
        b = a + int(size)
        lo, hi = (int(x) for x in np.searchsorted(query, [a, b], side="left"))
        arrays = {k: hits.arrays[k][lo:hi] for k in hits.arrays if k not in ("query", *RUN_KEYS)}
        arrays["query"] = (query[lo:hi] - a).astype(query.dtype)
        for v in arrays.values():
            v.setflags(write=False)
        arrays = HitArrays(arrays, None if runs is None else runs.take(np.arange(lo, hi)))
        out.append(dataclasses.replace(
            hits, arrays=arrays, query_names=hits.query_names[a:b], query_lengths=hits.query_lengths[a:b],
            _query_codes=hits._query_codes[codes_off[a]:codes_off[b]],
            _query_offsets=codes_off[a:b + 1] - codes_off[a]))
        a = b
    return out


class ShardedSearcher:
    """One BLAST-style search with the database split across devices: shard ``i`` of
    ``len(devices)`` on ``devices[i]``, searched in a thread each, the hits merged
    (:func:`merge_hits`): the same HSPs as :class:`~gseek.blast.searcher.BlastSearcher` on one.

    Arguments:
        index: an :class:`~gseek.index.Index`, its path, or a :class:`~gseek.index.text.ReferenceText`.
        task: ``megablast`` or ``blastn``.
        devices: one backend per shard (``gpu:0``, ``gpu:1``, ...; ``cpu`` may repeat, for tests).
        volume_bases: with it, the database is cut into *volumes* of about this many bases (whole
            contigs: a contig longer than that is a volume of its own), at least one per device,
            each device searching its run of volumes one after the other with one volume's text
            on its device at a time (BLAST+'s database volumes; a database larger than a GPU's
            memory). None: one shard per device, resident.
        threads, **options: as :class:`~gseek.blast.searcher.BlastSearcher`.

    Shards without a contig (more devices than contigs) are not searched.
    """

    def __init__(self, index: Any, task: str = "megablast", devices: Sequence[str | Backend] = ("auto",),
                 threads: int | None = None, volume_bases: int | None = None, **options: Any) -> None:
        if not devices:
            raise OptionError("devices: give at least one device")
        if volume_bases is not None and int(volume_bases) < 1:
            raise OptionError(f"volume size must be at least 1 base, not {volume_bases}")
        first = BlastSearcher(index, task=task, device="cpu", threads=threads, **options)  # options checked once
        ref = first.ref
        backends = [get_backend(d, threads) for d in devices]
        self.options = first.options
        n = len(backends)
        if volume_bases is not None:  # a whole number of volumes per device (no more than the contigs)
            volumes = min(-(-ref.n_bases // int(volume_bases)), len(ref.contig_names))
            n *= max(1, -(-volumes // n))
        #: Whether a shard's text leaves its device once searched (volumes).
        self.streamed = volume_bases is not None
        self.shards = [BlastSearcher(ref.shard(i, n), task=task, device=backends[i * len(backends) // n], **options)
                       for i in range(n)]
        self.searchers = [s for s in self.shards if s.ref.contig_names]
        self.ref = ref
        self.backend = backends[0]

    def __repr__(self) -> str:
        return f"ShardedSearcher({self.options!r}, devices={[s.backend.spec for s in self.shards]!r})"

    @property
    def timings(self) -> dict[str, float]:
        """Seconds per stage, summed over the shards."""
        out: dict[str, float] = {}
        for s in self.searchers:
            for k, v in s.timings.items():
                out[k] = out.get(k, 0.0) + v
        return out

    @property
    def counts(self) -> dict[str, int]:
        """Seeds, gapped extensions and the like summed over the shards (queries counted once)."""
        out = {"queries": self.searchers[0].counts["queries"], "seeds": 0, "gapped": 0}
        for s in self.searchers:
            for k, v in s.counts.items():
                if k != "queries":
                    out[k] = out.get(k, 0) + v
        return out

    def search(self, queries: Any) -> BlastHits:
        """HSPs of ``queries`` against the whole database, in BLAST+'s report order."""
        # the query side once (strands, DUST, lookup table): every shard searches with the same options
        queries = self.searchers[0].prepare(queries)
        # one thread per device, each through its shards in order; threads of this call only: a
        # searcher kept by a pipeline task leaves no thread behind
        runs: dict[int, list[BlastSearcher]] = {}
        for s in self.searchers:
            runs.setdefault(id(s.backend), []).append(s)

        def run(shards: list[BlastSearcher]) -> list[BlastHits]:
            out = []
            for s in shards:
                out.append(_search(s, queries))
                if self.streamed:
                    s.ref.release()
            return out

        # the CPU's shards (if any; else the first device's) run in this thread: a caller holding the
        # Numba guard (the pipeline's prelim stage) would deadlock a CPU shard's thread waiting for it
        groups = list(runs.values())
        here = next((i for i, g in enumerate(groups) if g[0].backend.name == "cpu"), 0)
        with ThreadPoolExecutor(max_workers=max(1, len(groups) - 1), thread_name_prefix="gseek-shard") as pool:
            futures = {i: pool.submit(run, g) for i, g in enumerate(groups) if i != here}
            done = {here: run(groups[here])}
            done.update((i, f.result()) for i, f in futures.items())
        parts = [h for i in range(len(groups)) for h in done[i]]
        return merge_hits(parts, self.options.max_target_seqs, self.options.max_hsps)

    def close(self) -> None:
        """Nothing to release (the threads live for one search); kept for callers that close."""


def _search(searcher: BlastSearcher, queries: Any) -> BlastHits:
    with numba_guard(searcher.backend.name == "cpu"):
        return searcher.search(queries)

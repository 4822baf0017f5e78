"""Seeds of the BLAST-style search on the device: scan -> lookup -> mini-extension -> ungapped X-drop.

Each stage is one code path for both backends (the ``blast`` kernel family,
CUDA or its Numba twin) with identical results; ``kernels/blast.py`` describes
the kernels and ``docs/blast.md`` the rules. The queries are the *sequences*
of one batch (each strand of each query that is searched), concatenated.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from gseek import ragged
from gseek.backend import Backend, on_device
from gseek.errors import OptionError
from gseek.index.text import ReferenceText
from gseek.kernels import blast as kblast
from gseek.kernels import blast_compact as kcompact

from .compact_table import CompactTable
from .device_rounds import DEVICE_MIN, lexsort_packed
from .lookup import LookupTable, Template

__all__ = ["DiscWords", "QuerySet", "Seeds", "chunk_sizes", "find_seeds", "scan_hits", "seed_candidates", "select_seeds", "ungapped_extend",
           "unpack_ranges"]

#: Stride positions of the text scanned at once (:func:`seed_candidates`, :func:`find_seeds`): a
#: scan window's hits, 24 bytes each with their counts, are at most this many.
SCAN_CHUNK = 1 << 24
#: Largest number of (query, text) pairs expanded in one lookup launch (a single hit with more is a
#: chunk of its own: at most the query positions of one word). With its seeds' ungapped extensions,
#: a chunk holds ~100 bytes a pair: this bounds the seed stage's memory whatever the number of hits
#: (issue 36: ``--word-size 4`` gave 7.7 GB for a 200 kb query against lambda when every seed was
#: held at once).
PAIR_CHUNK = 1 << 22
#: A GPU's (:data:`SCAN_CHUNK`, :data:`PAIR_CHUNK`) when its free memory holds :data:`GPU_ROOM` times
#: their pairs at 100 bytes a pair (:func:`chunk_sizes`): fewer chunks, fewer waits of the device on the
#: host between them (each chunk reads sizes back to allocate; issue 40: the blastn task on 156 x 30 kb
#: against 75 Mbp made 44 chunks of the default sizes, 7 of these).
GPU_CHUNKS = (1 << 25, 1 << 25)
GPU_ROOM = 8


@dataclass(frozen=True)
class QuerySet:
    """The sequences of one batch on a backend: ``codes`` (0..4), ``offsets`` (n + 1) and
    ``valid`` (1 where a listed table word starts), with the table's ``first``/``positions``/``pv``:
    a direct table's 4^w + 1 offsets in ``first`` and ``rank`` None, or a compact table's (the CPU's,
    :class:`~gseek.blast.compact_table.CompactTable`) ``rank`` and its present words' ``bounds`` in ``first``."""

    codes: Any
    offsets: Any
    valid: Any
    first: Any
    positions: Any
    pv: Any
    n_seq: int
    rank: Any = None


def device_queries(backend: Backend, codes: np.ndarray, offsets: np.ndarray, valid: np.ndarray,
                   table: LookupTable | CompactTable) -> QuerySet:
    """Upload one batch's sequences and its lookup table (offsets as int32 when they fit; a compact
    table on the CPU only, a GPU takes its direct table)."""
    if codes.size >= (1 << 31) - 1:
        raise OptionError(f"a query batch holds {codes.size} bases; at most 2^31 - 2 are searched at once")
    def up(array: Any, dtype: Any) -> Any:  # host arrays uploaded, the backend's own as they are
        return backend.asarray(np.ascontiguousarray(array, dtype) if isinstance(array, np.ndarray) else array, dtype)

    if isinstance(table, CompactTable):
        if backend.name == "cpu":
            return QuerySet(up(codes, np.uint8), up(offsets, np.int64), up(valid, np.uint8), table.bounds,
                            table.positions, table.pv, int(len(offsets) - 1), table.rank)
        table = table.dense()
    return QuerySet(up(codes, np.uint8), up(offsets, np.int64), up(valid, np.uint8), up(table.first, np.int32),
                    up(table.positions, np.int32), up(table.pv, np.uint32), int(len(offsets) - 1))


@dataclass(frozen=True)
class Seeds:
    """Seed runs (arrays on the backend's device): ``q`` (query position, concatenated), ``s``
    (text position), ``length`` (equal bases, at least the word size), sorted by (q, s)."""

    q: np.ndarray
    s: np.ndarray
    length: np.ndarray

    def __len__(self) -> int:
        return int(self.q.size)


@dataclass(frozen=True)
class DiscWords:
    """Discontiguous table words (dc-megablast): the table's ``template``; ``other``, the second
    template of ``coding_and_optimal`` (searched with its own table; its hits count as first hits
    of the two-hit rule too); BLAST+'s two-hit ``window`` (0: every hit is a seed). Their seeds are
    the word hits themselves (no mini-extension: ``kernels/blast.py``'s ``two_hit``), each an empty
    run from the word's first pair, and the ungapped extension scores the word's bases."""

    template: Template
    other: Template | None = None
    window: int = 0


def _word(lut_w: int, disc: DiscWords | None) -> tuple[np.int32, np.int32, np.int64]:
    """The kernels' word arguments: ``lut_w``, the bases a word spans, the template's mask (0: none)."""
    if disc is None:
        return np.int32(lut_w), np.int32(lut_w), np.int64(0)
    return np.int32(lut_w), np.int32(disc.template.span), np.int64(disc.template.mask)


def _text(backend: Backend, ref: ReferenceText) -> tuple[Any, Any, np.int32, np.int64]:
    dev = ref.on(backend)
    return dev.text, dev.nmask, np.int32(1 if ref.has_amb else 0), np.int64(ref.n_words)


def _stride_positions(ref: ReferenceText, lut_w: int, stride: int) -> tuple[int, int]:
    """The first stride position of ``ref`` and their number."""
    phase = -ref.origin % stride
    return phase, (ref.n_bases - phase - lut_w) // stride + 1 if ref.n_bases >= phase + lut_w else 0


@on_device
def scan_hits(backend: Backend, ref: ReferenceText, queries: QuerySet, lut_w: int, stride: int,
              window: tuple[int, int] | None = None, disc: DiscWords | None = None) -> Any:
    """Stride positions of the text whose table word is present (PV bit set), sorted (device array);
    with ``window`` ``(j0, j1)``, of stride positions ``j0 .. j1 - 1`` only; ``disc``: words of a
    discontiguous template.

    The stride positions are those of the whole database (multiples of ``stride`` there): a shard
    (``ref.origin > 0``) scans from ``-origin mod stride``, so that it finds the seeds the whole
    search finds in its contigs (with masked query words, a run's seed can depend on where the
    stride positions fall in it)."""
    xp = backend.xp
    text, nmask, has_n, n_words = _text(backend, ref)
    word = _word(lut_w, disc)
    span = int(word[1])
    phase, n_pos = _stride_positions(ref, span, stride)
    n_bases = ref.n_bases
    if window is not None:  # the scan of positions phase + j * stride, j in [j0, j1)
        j0, j1 = max(0, window[0]), min(n_pos, window[1])
        phase, n_pos = phase + j0 * stride, max(0, j1 - j0)
        n_bases = phase + (n_pos - 1) * stride + span if n_pos else 0
    # a GPU's window of at most GPU_CHUNKS' positions: room for a hit at every one (one launch, no second
    # when most positions hit, as the blastn task's do); else a guess, the scan run again when short
    capacity = n_pos if backend.name == "gpu" and n_pos <= GPU_CHUNKS[0] else max(1024, n_pos // 64)
    while True:
        hits = xp.empty(capacity, dtype=np.int64)
        n_hits = xp.zeros(1, dtype=np.int64)
        backend.launch(kblast, "scan_pv", n_pos, text, nmask, has_n, n_words, np.int64(n_bases),
                       *word, np.int32(stride), np.int64(phase), queries.pv, hits, n_hits, np.int64(capacity))
        count = int(backend.to_host(n_hits)[0])
        if count <= capacity:
            return xp.sort(hits[:count])
        capacity = count


def _seed_chunks(backend: Backend, ref: ReferenceText, queries: QuerySet, lut_w: int, stride: int, word: int,
                 scan_chunk: int, pair_chunk: int, disc: DiscWords | None = None) -> Iterator[tuple[Seeds, int]]:
    """The seeds in chunks (each seed once, in no order) and each chunk's number of pairs: the text
    scanned ``scan_chunk`` stride positions at a time, each window's hits expanded into (query,
    text) pairs ``pair_chunk`` at a time (a single hit may exceed it) and extended exactly (``disc``:
    the word hits that pass the two-hit rule, as empty runs)."""
    xp = backend.xp
    text, nmask, has_n, n_words = _text(backend, ref)
    dev = ref.on(backend)
    n_contigs = np.int64(len(ref.contig_names))
    words = _word(lut_w, disc)
    _, n_pos = _stride_positions(ref, int(words[1]), stride)
    for j0 in range(0, n_pos, max(1, scan_chunk)):
        hits = scan_hits(backend, ref, queries, lut_w, stride, (j0, j0 + max(1, scan_chunk)), disc)
        n = int(hits.size)
        counts = xp.empty(n, dtype=np.int64)
        if queries.rank is None:
            backend.launch(kblast, "lookup_count", n, hits, np.int64(n), text, n_words, *words,
                           queries.first, counts)
        else:  # a compact table (the CPU)
            backend.launch(kcompact, "lookup_count_compact", n, hits, np.int64(n), text, n_words, *words,
                           queries.pv, queries.rank, queries.first, counts)
        # the pair counts' prefix sum stays on the device (tens of millions of hits): the host reads
        # only the chunk bounds
        cum = xp.cumsum(counts)
        a = 0
        while a < n:  # hit chunks of at most pair_chunk pairs (a single hit may exceed it)
            base = int(cum[a - 1]) if a else 0
            limit = xp.asarray(np.array([base + pair_chunk], np.int64))
            b = max(a + 1, int(xp.searchsorted(cum, limit, side="right")[0]))
            b = min(b, n)
            m = int(cum[b - 1]) - base
            if m:
                q_pos, s_pos = xp.empty(m, dtype=np.int32), xp.empty(m, dtype=np.int64)
                sub = hits[a:b]
                starts = cum[a:b] - counts[a:b] - base  # each hit's first pair
                if queries.rank is None:
                    backend.launch(kblast, "lookup_fill", b - a, sub, np.int64(b - a), text, n_words, *words,
                                   queries.first, queries.positions, starts, q_pos, s_pos)
                else:
                    backend.launch(kcompact, "lookup_fill_compact", b - a, sub, np.int64(b - a), text, n_words,
                                   *words, queries.pv, queries.rank, queries.first, queries.positions, starts, q_pos,
                                   s_pos)
                keep = xp.empty(m, dtype=np.uint8)
                if disc is not None:
                    other = np.int64(disc.other.mask if disc.other is not None else 0)
                    backend.launch(kblast, "two_hit", m, text, nmask, has_n, n_words, dev.contig_offsets, n_contigs,
                                   queries.codes, queries.offsets, np.int64(queries.n_seq), queries.valid, q_pos,
                                   s_pos, np.int64(m), words[1], words[2], other, np.int32(disc.window), keep)
                    idx = xp.nonzero(keep)[0]
                    yield Seeds(q_pos[idx].astype(np.int64), s_pos[idx], xp.zeros(int(idx.size), np.int32)), m
                    a = b
                    continue
                run_q, run_s = xp.empty(m, dtype=np.int64), xp.empty(m, dtype=np.int64)
                run_len = xp.empty(m, dtype=np.int32)
                backend.launch(kblast, "mini_extend", m, text, nmask, has_n, dev.contig_offsets, n_contigs,
                               queries.codes, queries.offsets, np.int64(queries.n_seq), queries.valid, q_pos, s_pos,
                               np.int64(m), np.int32(lut_w), np.int32(stride), np.int32(word), keep, run_q, run_s,
                               run_len)
                del q_pos, s_pos
                idx = xp.nonzero(keep)[0]
                yield Seeds(run_q[idx], run_s[idx], run_len[idx]), m
            a = b


@on_device
def find_seeds(backend: Backend, ref: ReferenceText, queries: QuerySet, lut_w: int, stride: int,
               word: int, disc: DiscWords | None = None) -> Seeds:
    """Every seed run once: table-word hits expanded to (query, text) pairs, extended exactly (or,
    ``disc``, kept by the two-hit rule); all at once, sorted by (q, s) (the search takes them in
    chunks: :func:`seed_candidates`)."""
    xp = backend.xp
    parts = [s for s, _ in _seed_chunks(backend, ref, queries, lut_w, stride, word, SCAN_CHUNK, PAIR_CHUNK, disc)]
    if parts:
        q = xp.concatenate([p.q for p in parts])
        s = xp.concatenate([p.s for p in parts])
        length = xp.concatenate([p.length for p in parts])
    else:
        q, s, length = xp.zeros(0, np.int64), xp.zeros(0, np.int64), xp.zeros(0, np.int32)
    order = xp.lexsort(xp.stack([s, q]))
    return Seeds(q[order], s[order], length[order])


@dataclass
class SeedStats:
    """What :func:`seed_candidates` did: ``seeds`` found, ``most_pairs`` (the most (query, text)
    pairs one chunk held), ``most_seeds`` (the most seeds one chunk held), ``chunks``."""

    seeds: int = 0
    most_pairs: int = 0
    most_seeds: int = 0
    chunks: int = 0


@on_device
def seed_candidates(backend: Backend, ref: ReferenceText, queries: QuerySet, lut_w: int, stride: int, word: int,
                    reward: int, penalty: int, n_score: int, xdrop: int, triggers: np.ndarray | None,
                    pair_chunk: int | None = None, scan_chunk: int | None = None,
                    discs: tuple[tuple[QuerySet, DiscWords], ...] = ()) -> tuple[Candidates, SeedStats]:
    """The seeds worth extending further (:func:`select_seeds`'s, the same for any chunk sizes),
    found, extended without gaps and filtered by ``triggers`` chunk by chunk (:func:`_seed_chunks`;
    None: :func:`chunk_sizes`'s), so that only the chunk's seeds and the
    candidates so far are held: memory independent of the number of hits. A candidate's ungapped
    score is a function of its extent, so filtering each chunk before picking the first seed of
    each extent (:func:`select_seeds`) picks the same seeds. ``discs``: discontiguous words, each
    template's queries (its table) and words, in place of ``queries``' own contiguous ones."""
    stats = SeedStats()
    kept: list[dict[str, Any]] = []
    device_triggers = _device_triggers(backend, triggers)
    default_scan, default_pair = chunk_sizes(backend)
    sizes = (scan_chunk or default_scan, pair_chunk or default_pair)
    passes = [(qs, d) for qs, d in discs] or [(queries, None)]
    chunks = (c for qs, d in passes for c in _seed_chunks(backend, ref, qs, lut_w, stride, word, *sizes, d))
    for seeds, pairs in chunks:
        stats.chunks += 1
        stats.seeds += len(seeds)
        stats.most_pairs = max(stats.most_pairs, pairs)
        stats.most_seeds = max(stats.most_seeds, len(seeds))
        ung = ungapped_extend(backend, ref, queries, seeds, reward, penalty, n_score, xdrop)
        kept.append(_passing(backend, ref, queries, seeds, ung, device_triggers))
    return _first_of_extents(backend, kept), stats


def chunk_sizes(backend: Backend) -> tuple[int, int]:
    """The seed stage's (scan, pair) chunk sizes on ``backend``: :data:`GPU_CHUNKS` on a GPU whose free
    memory holds :data:`GPU_ROOM` times their pairs at 100 bytes a pair, else (:data:`SCAN_CHUNK`,
    :data:`PAIR_CHUNK`). The seeds are the same for any sizes (:func:`seed_candidates`)."""
    free = backend.free_memory() if backend.name == "gpu" else None
    if free is not None and free >= GPU_ROOM * 100 * GPU_CHUNKS[1]:
        return GPU_CHUNKS
    return SCAN_CHUNK, PAIR_CHUNK


@on_device
def ungapped_extend(backend: Backend, ref: ReferenceText, queries: QuerySet, seeds: Seeds, reward: int,
                    penalty: int, n_score: int, xdrop: int) -> dict[str, Any]:
    """BLAST's ungapped X-drop extension of every seed run: ``score``, ``q_start``, ``q_end``
    (concatenated query coordinates; the text extent is on the same diagonal)."""
    xp = backend.xp
    n = len(seeds)
    text, nmask, has_n, _ = _text(backend, ref)
    dev = ref.on(backend)
    score, q_start, q_end = (xp.empty(n, dtype=t) for t in (np.int32, np.int64, np.int64))
    if n:
        backend.launch(kblast, "ungapped_extend", n, text, nmask, has_n, dev.contig_offsets,
                       np.int64(len(ref.contig_names)), queries.codes, queries.offsets, np.int64(queries.n_seq),
                       seeds.q, seeds.s, seeds.length,
                       np.int64(n), np.int32(reward), np.int32(penalty), np.int32(n_score), np.int32(xdrop), score,
                       q_start, q_end)
    return {"score": score, "q_start": q_start, "q_end": q_end}


#: Whether :func:`_passing` looks up every seed's sequence before the filter (a GPU: one compaction, one
#: wait) or those of the seeds that pass the least trigger only (a backend not named: most seeds fail it).
_SEQUENCES_AT_ONCE = {"gpu": True}


class Candidates:
    """The seeds worth extending (:func:`seed_candidates`), in rank order: host columns ``q``, ``s``,
    ``length``, ``score``, ``q_start``, ``q_end``, ``seq``, ``contig`` (``cand[name]``). Columns given
    on a GPU stay there (``device``: the score-only rounds read them there; None for host columns) and
    come to the host when one is first read, all at once; :meth:`rows` brings some rows only."""

    def __init__(self, backend: Backend, columns: dict[str, Any]) -> None:
        self._backend = backend
        self.device = None if isinstance(columns["q"], np.ndarray) else columns
        self._host = None if self.device is not None else _host_columns(backend, columns)
        self.size = int(columns["q"].size)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, name: str) -> np.ndarray:
        if self._host is None:
            self._host = _host_columns(self._backend, self.device)
        return self._host[name]

    def rows(self, idx: np.ndarray) -> dict[str, np.ndarray]:
        """The host columns of rows ``idx`` (on a GPU, those rows' alone downloaded)."""
        if self._host is not None:
            return {k: v[idx] for k, v in self._host.items()}
        with self._backend.active():
            at = self._backend.asarray(np.asarray(idx, np.int64))
            return _host_columns(self._backend, {k: v[at] for k, v in self.device.items()})


def _device_triggers(backend: Backend, triggers: np.ndarray | None) -> tuple[Any, int] | None:
    """``triggers`` on the device, uploaded once for every chunk of :func:`_passing`, and their least value."""
    if triggers is None:
        return None
    triggers = np.asarray(triggers, np.int64)
    return backend.asarray(triggers), int(np.min(triggers)) if triggers.size else 0


def _passing(backend: Backend, ref: ReferenceText, queries: QuerySet, seeds: Seeds, ung: dict[str, Any],
             triggers: tuple[Any, int] | None) -> dict[str, Any]:
    """The seeds with an ungapped score of at least their sequence's trigger (``triggers``: the
    triggers on the device and the least of them, :func:`_device_triggers`; None: all), with their
    extension, sequence and contig (device arrays), whichever way :data:`_SEQUENCES_AT_ONCE` gives."""
    xp = backend.xp
    cols = {"q": seeds.q, "s": seeds.s, "length": seeds.length, "score": ung["score"], "q_start": ung["q_start"],
            "q_end": ung["q_end"]}

    def seq_of(q: Any) -> Any:
        return xp.searchsorted(queries.offsets, q, side="right") - 1

    if triggers is None or not int(triggers[0].size):
        cols["seq"] = seq_of(cols["q"])
    else:
        trig, least = triggers
        at_once = _SEQUENCES_AT_ONCE.get(backend.name, False)
        if at_once:
            seq = seq_of(cols["q"])
            idx = xp.flatnonzero(cols["score"] >= trig[seq])
        else:
            low = xp.flatnonzero(cols["score"] >= least)
            seq = seq_of(cols["q"][low])
            keep = xp.flatnonzero(cols["score"][low] >= trig[seq])
            idx = low[keep]
            seq = seq[keep]
        cols = {k: v[idx] for k, v in cols.items()}
        cols["seq"] = seq[idx] if at_once else seq
    cols["contig"] = xp.searchsorted(ref.on(backend).contig_offsets, cols["s"], side="right") - 1
    return cols


#: :class:`Candidates`' columns.
_NAMES = ("q", "s", "length", "score", "q_start", "q_end", "seq", "contig")


def _extent_firsts(xp: Any, c: dict[str, Any]) -> Any:
    """Of seeds (columns ``c``, any order), the first in (q, s) order of each distinct ungapped extent
    of a query sequence's diagonal, in rank order (ungapped score, best first, then query and text
    position): their indices. The sorts are :func:`lexsort_packed`'s (on a diagonal, ``s`` follows
    ``q``: no key); the first of each extent where the packed words, less ``q``'s bits, change."""
    n = int(c["q"].size)
    if not n:
        return xp.zeros(0, np.int64)
    diag = c["s"] - c["q"]
    order, words, bits = lexsort_packed(xp, [c["q"], c["q_end"], c["q_start"], diag, c["seq"]])
    first = xp.ones(n, dtype=bool)
    if words:
        group = words[0] >> bits[0]  # the extent's keys in the first word (q is its least significant)
        first[1:] = group[1:] != group[:-1]
        for w in words[1:]:
            first[1:] |= w[1:] != w[:-1]
    else:  # (ranges beyond 63 bits: the keys compared)
        a = xp.stack([c["seq"][order], diag[order], c["q_start"][order], c["q_end"][order]])
        first[1:] = (a[:, 1:] != a[:, :-1]).any(axis=0)
    idx = order[first]
    rank = lexsort_packed(xp, [c["s"][idx], c["q"][idx], -c["score"][idx].astype(np.int64)])[0]
    return idx[rank]


def _first_of_extents(backend: Backend, parts: list[dict[str, Any]]) -> Candidates:
    """:func:`_extent_firsts` of ``parts``' seeds, as :class:`Candidates` (on a GPU, left there; fewer than
    :data:`~gseek.blast.device_rounds.DEVICE_MIN`, as the device's rounds take, selected on the host)."""
    xp = backend.xp
    if parts:
        c = {k: xp.concatenate([p[k] for p in parts]) for k in _NAMES}
    else:
        c = {k: xp.zeros(0, np.int32 if k in ("length", "score") else np.int64) for k in _NAMES}
    if xp is not np and int(c["q"].size) < DEVICE_MIN:  # a few seeds (megablast's): on the host, one download
        block = backend.to_host(xp.stack([c[k].astype(np.int64, copy=False) for k in _NAMES]))
        c, xp = {k: block[j].astype(c[k].dtype, copy=False) for j, k in enumerate(_NAMES)}, np
    idx = _extent_firsts(xp, c)
    return Candidates(backend, {k: c[k][idx] for k in _NAMES})


def _host_columns(backend: Backend, rows: dict[str, Any]) -> dict[str, np.ndarray]:
    """:data:`_NAMES`' columns on the host, each in its type there (``seq`` int64, ``contig`` int32); from a
    GPU, two downloads to page-locked memory: every column but ``s`` as int32 (a batch holds < 2^31 bases), ``s``."""
    xp = backend.xp
    types = {k: rows[k].dtype for k in _NAMES} | {"seq": np.int64, "contig": np.int32}
    if isinstance(rows["q"], np.ndarray):
        return {k: rows[k].astype(types[k]) for k in _NAMES}
    narrow = [k for k in _NAMES if k != "s"]
    with backend.active():
        block = backend.to_host(xp.stack([rows[k].astype(np.int32, copy=False) for k in narrow]), pinned=True)
        s = backend.to_host(rows["s"], pinned=True)
    out = {k: block[j] for j, k in enumerate(narrow)} | {"s": s}
    return {k: out[k].astype(types[k]) for k in _NAMES}  # (copies: the pinned buffers go back to their pool)


@on_device
def select_seeds(backend: Backend, ref: ReferenceText, queries: QuerySet, seeds: Seeds, ung: dict[str, Any],
                 triggers: np.ndarray | None) -> Candidates:
    """The seeds worth extending further, on the host: the first seed (in (q, s) order) of each
    distinct ungapped extent of a query sequence's diagonal, with an ungapped score of at least
    its sequence's ``triggers`` entry (None: any score). Returns :class:`Candidates`: host arrays
    ``q``, ``s``, ``length``, ``score``, ``q_start``, ``q_end``, ``seq``, ``contig`` by name, in rank
    order (ungapped score, best first, then query and text position)."""
    return _first_of_extents(backend, [_passing(backend, ref, queries, seeds, ung, _device_triggers(backend, triggers))])


@on_device
def unpack_ranges(backend: Backend, ref: ReferenceText, start: np.ndarray, length: np.ndarray) -> tuple[Any, np.ndarray]:
    """Base codes (0..4) of text ranges ``[start, start + length)``, concatenated on the device,
    and their offsets (host)."""
    off = ragged.offsets(np.asarray(length, np.int64))
    out = backend.xp.empty(max(int(off[-1]), 1), dtype=np.uint8)
    text, nmask, has_n, _ = _text(backend, ref)
    if len(length):
        backend.launch(kblast, "unpack_ranges", int(off[-1]), text, nmask, has_n,
                       backend.asarray(np.asarray(start, np.int64)), backend.asarray(off), np.int64(len(length)), out)
    return out, off

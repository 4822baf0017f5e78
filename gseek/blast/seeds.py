"""Seeds of the BLAST-style search on the device: scan -> lookup -> mini-extension -> ungapped X-drop.

Each stage is one code path for both backends (the ``blast`` kernel family,
CUDA or its Numba twin) with identical results; ``kernels/blast.py`` describes
the kernels and ``docs/blast.md`` the rules. The queries are the *sequences*
of one batch (each strand of each query that is searched), concatenated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gseek import ragged
from gseek.backend import Backend, on_device
from gseek.errors import OptionError
from gseek.index.text import ReferenceText
from gseek.kernels import blast as kblast

from .lookup import LookupTable

__all__ = ["QuerySet", "Seeds", "find_seeds", "scan_hits", "select_seeds", "ungapped_extend", "unpack_ranges"]

#: Largest number of (query, text) pairs expanded in one lookup launch.
PAIR_CHUNK = 1 << 24


@dataclass(frozen=True)
class QuerySet:
    """The sequences of one batch on a backend: ``codes`` (0..4), ``offsets`` (n + 1) and
    ``valid`` (1 where a listed table word starts), with the table's ``first``/``positions``/``pv``."""

    codes: Any
    offsets: Any
    valid: Any
    first: Any
    positions: Any
    pv: Any
    n_seq: int


def device_queries(backend: Backend, codes: np.ndarray, offsets: np.ndarray, valid: np.ndarray,
                   table: LookupTable) -> QuerySet:
    """Upload one batch's sequences and its lookup table (offsets as int32 when they fit)."""
    if codes.size >= (1 << 31) - 1:
        raise OptionError(f"a query batch holds {codes.size} bases; at most 2^31 - 2 are searched at once")
    first, positions = table.first.astype(np.int32, copy=False), table.positions.astype(np.int32, copy=False)
    up = backend.asarray
    return QuerySet(up(np.ascontiguousarray(codes, np.uint8)), up(np.asarray(offsets, np.int64)),
                    up(np.ascontiguousarray(valid, np.uint8)), up(first), up(positions), up(table.pv),
                    int(len(offsets) - 1))


@dataclass(frozen=True)
class Seeds:
    """Seed runs (arrays on the backend's device): ``q`` (query position, concatenated), ``s``
    (text position), ``length`` (equal bases, at least the word size), sorted by (q, s)."""

    q: np.ndarray
    s: np.ndarray
    length: np.ndarray

    def __len__(self) -> int:
        return int(self.q.size)


def _text(backend: Backend, ref: ReferenceText) -> tuple[Any, Any, np.int32, np.int64]:
    dev = ref.on(backend)
    return dev.text, dev.nmask, np.int32(1 if ref.has_amb else 0), np.int64(ref.n_words)


@on_device
def scan_hits(backend: Backend, ref: ReferenceText, queries: QuerySet, lut_w: int, stride: int) -> Any:
    """Stride positions of the text whose table word is present (PV bit set), sorted (device array).

    The stride positions are those of the whole database (multiples of ``stride`` there): a shard
    (``ref.origin > 0``) scans from ``-origin mod stride``, so that it finds the seeds the whole
    search finds in its contigs (with masked query words, a run's seed can depend on where the
    stride positions fall in it)."""
    xp = backend.xp
    text, nmask, has_n, n_words = _text(backend, ref)
    phase = -ref.origin % stride
    n_pos = (ref.n_bases - phase - lut_w) // stride + 1 if ref.n_bases >= phase + lut_w else 0
    capacity = max(1024, n_pos // 64)
    while True:
        hits = xp.empty(capacity, dtype=np.int64)
        n_hits = xp.zeros(1, dtype=np.int64)
        backend.launch(kblast, "scan_pv", n_pos, text, nmask, has_n, n_words, np.int64(ref.n_bases),
                       np.int32(lut_w), np.int32(stride), np.int64(phase), queries.pv, hits, n_hits, np.int64(capacity))
        count = int(backend.to_host(n_hits)[0])
        if count <= capacity:
            return xp.sort(hits[:count])
        capacity = count


@on_device
def find_seeds(backend: Backend, ref: ReferenceText, queries: QuerySet, lut_w: int, stride: int,
               word: int) -> Seeds:
    """Every seed run once: table-word hits expanded to (query, text) pairs, extended exactly."""
    xp = backend.xp
    hits = scan_hits(backend, ref, queries, lut_w, stride)
    text, nmask, has_n, n_words = _text(backend, ref)
    dev = ref.on(backend)
    n_contigs = np.int64(len(ref.contig_names))
    n = int(hits.size)
    counts = xp.empty(n, dtype=np.int64)
    backend.launch(kblast, "lookup_count", n, hits, np.int64(n), text, n_words, np.int32(lut_w),
                   queries.first, counts)
    # the pair counts' prefix sum stays on the device (tens of millions of hits): the host reads
    # only the chunk bounds
    cum = xp.cumsum(counts)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    a = 0
    while a < n:  # hit chunks of at most PAIR_CHUNK pairs (a single hit may exceed it)
        base = int(cum[a - 1]) if a else 0
        limit = xp.asarray(np.array([base + PAIR_CHUNK], np.int64))
        b = max(a + 1, int(xp.searchsorted(cum, limit, side="right")[0]))
        b = min(b, n)
        m = int(cum[b - 1]) - base
        if m:
            q_pos, s_pos = xp.empty(m, dtype=np.int32), xp.empty(m, dtype=np.int64)
            sub = hits[a:b]
            starts = cum[a:b] - counts[a:b] - base  # each hit's first pair
            backend.launch(kblast, "lookup_fill", b - a, sub, np.int64(b - a), text, n_words, np.int32(lut_w),
                           queries.first, queries.positions, starts, q_pos, s_pos)
            keep = xp.empty(m, dtype=np.uint8)
            run_q, run_s = xp.empty(m, dtype=np.int64), xp.empty(m, dtype=np.int64)
            run_len = xp.empty(m, dtype=np.int32)
            backend.launch(kblast, "mini_extend", m, text, nmask, has_n, dev.contig_offsets, n_contigs,
                           queries.codes, queries.offsets, np.int64(queries.n_seq), queries.valid, q_pos, s_pos,
                           np.int64(m), np.int32(lut_w), np.int32(stride), np.int32(word), keep, run_q, run_s,
                           run_len)
            idx = xp.nonzero(keep)[0]
            parts.append((run_q[idx], run_s[idx], run_len[idx]))
        a = b
    if parts:
        q = xp.concatenate([p[0] for p in parts])
        s = xp.concatenate([p[1] for p in parts])
        length = xp.concatenate([p[2] for p in parts])
    else:
        q, s, length = xp.zeros(0, np.int64), xp.zeros(0, np.int64), xp.zeros(0, np.int32)
    order = xp.lexsort(xp.stack([s, q]))
    return Seeds(q[order], s[order], length[order])


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


@on_device
def select_seeds(backend: Backend, ref: ReferenceText, queries: QuerySet, seeds: Seeds, ung: dict[str, Any],
                 triggers: np.ndarray | None) -> dict[str, np.ndarray]:
    """The seeds worth extending further, on the host: the first seed (in seed order) of each
    distinct ungapped extent of a query sequence's diagonal, with an ungapped score of at least
    its sequence's ``triggers`` entry (None: any score). Returns host arrays ``q``, ``s``,
    ``length``, ``score``, ``q_start``, ``q_end``, ``seq``, ``contig`` in rank order (ungapped
    score, best first, then query and text position)."""
    xp = backend.xp
    n = len(seeds)
    dev = ref.on(backend)
    seq = xp.searchsorted(queries.offsets, seeds.q, side="right") - 1
    contig = xp.searchsorted(dev.contig_offsets, seeds.s, side="right") - 1
    keep = xp.zeros(n, dtype=bool)
    if n:
        diag = seeds.s - seeds.q
        order = xp.lexsort(xp.stack([xp.arange(n, dtype=np.int64), ung["q_end"], ung["q_start"], diag,
                                     seq.astype(np.int64)]))
        a = xp.stack([seq[order].astype(np.int64), diag[order], ung["q_start"][order], ung["q_end"][order]])
        first = xp.ones(n, dtype=bool)
        first[1:] = (a[:, 1:] != a[:, :-1]).any(axis=0)
        keep[order[first]] = True
        if triggers is not None:
            keep &= ung["score"] >= backend.asarray(np.asarray(triggers, np.int64))[seq]
    idx = xp.nonzero(keep)[0]
    # rank order: ungapped score (best first), then query position, then text position
    idx = idx[xp.lexsort(xp.stack([seeds.s[idx], seeds.q[idx], -ung["score"][idx].astype(np.int64)]))]
    host = backend.to_host
    return {"q": host(seeds.q[idx]), "s": host(seeds.s[idx]), "length": host(seeds.length[idx]),
            "score": host(ung["score"][idx]), "q_start": host(ung["q_start"][idx]),
            "q_end": host(ung["q_end"][idx]), "seq": host(seq[idx]).astype(np.int64),
            "contig": host(contig[idx]).astype(np.int32)}


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

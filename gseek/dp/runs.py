"""CIGAR runs left where the extensions made them, gathered once for the rows that need them: :class:`LazyRuns`.

A megablast search traces back every HSP that may be reported (~183k a search of 1,000 queries against
1 Gbp), but its ``-outfmt 6`` columns come from the re-scoring's counts: most outputs print no alignment,
and the purge and the report's limits drop some rows. The runs therefore stay in the arrays the
extension launches wrote them in (a GPU's memory, or the host's), in pieces; a :class:`LazyRuns` says
for each alignment which piece and which item of it holds its runs. Taking rows (:meth:`LazyRuns.take`)
and joining (:meth:`LazyRuns.concat`) move those two indices only; :meth:`LazyRuns.gather` brings the
runs of the rows it holds to the host, once, in one ragged array (``runs[offsets[i]:offsets[i + 1]]``,
BAM ``len << 4 | op`` as ``uint32``) -- the same arrays that gathering eagerly at every step gives.

>>> import numpy as np
>>> a = LazyRuns.of(np.array([17, 33, 49, 65], np.uint32), np.array([0, 1, 3, 4]))  # items [17], [33, 49], [65]
>>> b = LazyRuns.of(np.array([81, 97], np.uint32), np.array([0, 2]))                # item [81, 97]
>>> runs, offsets = LazyRuns.concat([a, b]).take(np.array([3, 1, 0])).gather()
>>> runs.tolist(), offsets.tolist()
([81, 97, 33, 49, 17], [0, 2, 4, 5])
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from gseek import ragged
from gseek.backend import Backend, numba_guard
from gseek.kernels.ragged import gather as gather_on_host

__all__ = ["LazyRuns", "gather_runs"]


def gather_runs(data: Any, offs: Any, idx: Any) -> tuple[Any, Any]:
    """Items ``idx`` of a ragged array (CIGAR runs): on the host in one parallel pass that holds no GIL
    (the searchers of a GPU run side by side on threads), else :func:`gseek.ragged.gather`."""
    if isinstance(data, np.ndarray):
        with numba_guard():  # a parallel pass: under Numba's workqueue layer, one thread at a time
            return gather_on_host(data, offs, idx)
    return ragged.gather(data, offs, idx)


class _Piece:
    """One launch's runs: ``data`` on ``backend``'s device (None: a host array), item ``i`` at
    ``data[offsets[i]:offsets[i + 1]]`` (``offsets`` on the host); read to the host once (:meth:`host`:
    the alignments of one piece may be gathered in several parts, e.g. a service's requests).

    Read on any thread, also while the searcher's next search runs on ``backend``'s stream: the piece
    holds ``data`` until it is read, the copy is queued on that stream after the kernels that wrote it
    and waited for, CuPy's current stream is per thread, and memory let go returns to the pool of the
    stream it came from (``docs/blast.md``: reading the runs on another thread)."""

    __slots__ = ("backend", "data", "offsets", "_host", "_lock")

    def __init__(self, backend: Backend | None, data: Any, offsets: np.ndarray) -> None:
        self.backend, self.data, self.offsets = backend, data, np.asarray(offsets, np.int64)
        self._host: np.ndarray | None = None
        self._lock = threading.Lock()

    def host(self) -> np.ndarray:
        with self._lock:
            if self._host is None:
                end = int(self.offsets[-1])
                if self.backend is None:
                    self._host = np.ascontiguousarray(self.data[:end], np.uint32)
                else:
                    with self.backend.active():
                        self._host = np.ascontiguousarray(self.backend.to_host(self.data[:end]), np.uint32)
                self.data = None  # (a device's memory let go)
            return self._host


class LazyRuns:
    """The CIGAR runs of alignments, left in their pieces until :meth:`gather`.

    ``pieces``: one launch's runs each (``_Piece``: on a device or the host); alignment ``j``'s runs are
    item ``item[j]`` of piece ``piece[j]``. Read-only: :meth:`take` and :meth:`concat` make new ones
    that share the pieces.
    """

    __slots__ = ("pieces", "piece", "item")

    def __init__(self, pieces: Sequence[_Piece], piece: np.ndarray, item: np.ndarray) -> None:
        self.pieces = tuple(pieces)
        self.piece = np.asarray(piece, np.int32)
        self.item = np.asarray(item, np.int64)

    @classmethod
    def of(cls, data: Any, offsets: Any, backend: Backend | None = None) -> LazyRuns:
        """Every item of one ragged array, in order (``data`` on ``backend``'s device; None: the host)."""
        offsets = np.asarray(offsets, np.int64)
        n = offsets.size - 1
        return cls((_Piece(backend, data, offsets),), np.zeros(n, np.int32), np.arange(n, dtype=np.int64))

    @classmethod
    def empty(cls) -> LazyRuns:
        return cls.of(np.zeros(0, np.uint32), np.zeros(1, np.int64))

    def __len__(self) -> int:
        return int(self.item.size)

    def __repr__(self) -> str:
        return f"LazyRuns({len(self)} alignments in {len(self.pieces)} pieces)"

    def take(self, idx: Any) -> LazyRuns:
        """Alignments ``idx`` (indices or a boolean mask), in that order."""
        return LazyRuns(self.pieces, self.piece[idx], self.item[idx])

    @classmethod
    def concat(cls, parts: Sequence[LazyRuns]) -> LazyRuns:
        """The alignments of ``parts``, laid end to end."""
        if not parts:
            return cls.empty()
        if len(parts) == 1:
            return parts[0]
        pieces: list[_Piece] = []
        piece, item = [], []
        for p in parts:
            piece.append(p.piece + len(pieces))
            item.append(p.item)
            pieces.extend(p.pieces)
        return cls(pieces, np.concatenate(piece), np.concatenate(item))

    def gather(self) -> tuple[np.ndarray, np.ndarray]:
        """The runs of every alignment on the host: ``(runs, offsets)``, alignment ``j``'s at
        ``runs[offsets[j]:offsets[j + 1]]``. Only the pieces some alignment uses are read (downloaded
        from a device), each once."""
        if not len(self):
            return np.zeros(0, np.uint32), np.zeros(1, np.int64)
        used = np.flatnonzero(np.bincount(self.piece, minlength=len(self.pieces))).tolist()
        if len(used) == 1:
            p = self.pieces[used[0]]
            data, offs, idx = p.host(), p.offsets, self.item
            if idx.size == offs.size - 1 and np.array_equal(idx, np.arange(idx.size)):
                return data, offs  # the piece, as it is (read-only where it is kept: BlastHits)
        else:  # the used pieces end to end; each item's offsets shifted by its piece's start there
            datas = [self.pieces[k].host() for k in used]
            shift = ragged.offsets(np.array([d.size for d in datas], np.int64))
            data = np.concatenate(datas)
            offs = np.concatenate([self.pieces[k].offsets[:-1] + s for k, s in zip(used, shift[:-1].tolist())]
                                  + [shift[-1:]])
            first = np.zeros(len(self.pieces), np.int64)
            first[used] = ragged.offsets(np.array([self.pieces[k].offsets.size - 1 for k in used], np.int64))[:-1]
            idx = first[self.piece] + self.item
        return gather_runs(data, offs, idx)

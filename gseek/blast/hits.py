"""The results of a BLAST-style search and its prepared queries: :class:`BlastHits`, :class:`PreparedQueries`.

:class:`BlastHits` is struct-of-arrays (one entry an HSP) and knows its text form
(:meth:`BlastHits.row`, ``blastn -outfmt 6``, through :mod:`gseek.blast.report`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gseek.dp.runs import LazyRuns
from gseek.index.text import ReferenceText
from gseek.seqio.batch import SequenceBatch

from . import tables
from .options import BlastOptions

__all__ = ["BlastHits", "HitArrays", "PreparedQueries"]


#: The two arrays of the HSPs' CIGAR runs (:class:`HitArrays` gathers them on first use).
RUN_KEYS = ("cigar", "cigar_offsets")


class HitArrays(Mapping):
    """:class:`BlastHits`' arrays: a read-only mapping of the arrays given and ``cigar`` /
    ``cigar_offsets``, the rows' CIGAR runs, gathered from ``runs`` (a :class:`~gseek.dp.runs.LazyRuns`:
    left where the extensions made them, a GPU's memory or the host's) the first time either is read,
    once, whichever thread reads first; an output that prints no alignment (``-outfmt 6``'s columns)
    never gathers them. The keys in order: those given, then ``cigar``, ``cigar_offsets``.

    >>> import numpy as np
    >>> from gseek.dp.runs import LazyRuns
    >>> a = HitArrays({"score": np.array([7, 9])}, LazyRuns.of(np.array([17, 33, 49], np.uint32), np.array([0, 1, 3])))
    >>> list(a), a.gathered, a["cigar_offsets"].tolist(), a.gathered
    (['score', 'cigar', 'cigar_offsets'], False, [0, 1, 3], True)
    """

    def __init__(self, arrays: dict[str, np.ndarray], runs: LazyRuns | None) -> None:
        self._arrays = dict(arrays)
        self._runs: LazyRuns | None = runs
        self._released = runs is None  # (hits made from released ones: none to gather)
        self._lock = threading.Lock()

    @property
    def gathered(self) -> bool:
        return self._runs is None and not self._released

    @property
    def released(self) -> bool:
        """Whether the runs were let go (:meth:`release`): ``cigar`` and ``cigar_offsets`` are no longer keys."""
        return self._released

    @property
    def runs(self) -> LazyRuns | None:
        """The rows' runs as a :class:`~gseek.dp.runs.LazyRuns` (not gathered by this); None once released."""
        runs = self._runs
        if runs is not None or self._released:
            return runs
        return LazyRuns.of(self._arrays["cigar"], self._arrays["cigar_offsets"])

    def release(self) -> None:
        """Lets go of the rows' CIGAR runs, gathered or not: an output that has what it needs from them
        (or needs none, ``-outfmt 6``'s columns) gives a GPU search's device memory back at once, rather
        than when the hits are dropped. The pieces of runs are shared by the hits made from one search
        (:func:`~gseek.blast.shards.split_hits`, :func:`~gseek.blast.shards.merge_hits`, :meth:`LazyRuns.take`):
        their memory goes back once none of those holds them. The other arrays stay."""
        with self._lock:
            self._runs = None
            for key in RUN_KEYS:
                self._arrays.pop(key, None)
            self._released = True

    def __getitem__(self, key: str) -> np.ndarray:
        if key in RUN_KEYS and (self._runs is not None or self._released):
            with self._lock:
                if self._released:
                    raise KeyError(f"{key!r}: these hits' CIGAR runs were released (BlastHits.release())")
                if self._runs is not None:
                    data, offsets = self._runs.gather()
                    data.setflags(write=False)
                    offsets.setflags(write=False)
                    self._arrays["cigar"], self._arrays["cigar_offsets"] = data, offsets
                    self._runs = None  # (the pieces let go: a GPU's memory freed)
                return self._arrays[key]
        return self._arrays[key]

    def __iter__(self) -> Iterator[str]:
        yield from (k for k in self._arrays if k not in RUN_KEYS)
        if not self._released:
            yield from RUN_KEYS

    def __len__(self) -> int:
        return len([k for k in self._arrays if k not in RUN_KEYS]) + (0 if self._released else len(RUN_KEYS))

    def __contains__(self, key: object) -> bool:
        return (key in RUN_KEYS and not self._released) or (key not in RUN_KEYS and key in self._arrays)

    def __reduce__(self):  # pickled (another process) as a plain dict, the runs gathered (unless released)
        return dict, (dict(self.items()),)


def runs_of(arrays: Mapping[str, np.ndarray]) -> LazyRuns | None:
    """The CIGAR runs of hits' ``arrays`` as a :class:`~gseek.dp.runs.LazyRuns`, gathered or not; None when
    released (:meth:`BlastHits.release`; a plain mapping: pickled after that, without them)."""
    if isinstance(arrays, HitArrays):
        return arrays.runs
    if not all(k in arrays for k in RUN_KEYS):
        return None
    return LazyRuns.of(arrays["cigar"], arrays["cigar_offsets"])


@dataclass(frozen=True, eq=False)
class PreparedQueries:
    """A query batch made ready for :meth:`~gseek.blast.searcher.BlastSearcher.search` (:meth:`~gseek.blast.searcher.BlastSearcher.prepare`):
    the options it was made with, the batch, its sequences (both strands, query-major:
    ``seq_codes``, offsets ``seq_off``, ``seq_query``, ``seq_strand``), the lookup table and
    the valid-word flags (a GPU searcher's large batch: a :class:`~gseek.blast.device_table.QueryMask`
    and None, built on the searching device)."""

    options: BlastOptions
    batch: SequenceBatch
    seq_codes: np.ndarray
    seq_off: np.ndarray
    seq_query: np.ndarray
    seq_strand: np.ndarray
    table: Any
    valid: np.ndarray
    #: dc-megablast's ``coding_and_optimal``: the second template's table
    more_tables: tuple = ()


@dataclass(frozen=True, eq=False)
class BlastHits:
    """HSPs of one search, struct-of-arrays, in BLAST+'s report order.

    Per HSP: ``query`` (record number), ``subject`` (contig number), ``strand`` (+1/-1),
    ``q_start``/``q_end`` (0-based half-open on the query's plus strand), ``s_start``/``s_end``
    (0-based half-open on the subject's forward strand), ``score`` (raw), ``bitscore``,
    ``evalue``, ``length`` (alignment columns), ``nident``, ``mismatch``, ``gapopen``, ``gaps``
    (gap columns), and the alignment as BAM CIGAR runs (``=``/``X``/``I``/``D``) of the
    searched strand of the query against the forward subject, ``cigar[cigar_offsets[h]:...]``
    (a search's: gathered on first use, :class:`HitArrays`).
    """

    arrays: Mapping[str, np.ndarray]
    query_names: list[str]
    query_lengths: np.ndarray
    subject_names: tuple[str, ...]
    subject_lengths: np.ndarray
    _query_codes: np.ndarray = field(repr=False)
    _query_offsets: np.ndarray = field(repr=False)
    _ref: ReferenceText | tuple[ReferenceText, ...] = field(repr=False)

    @property
    def texts(self) -> tuple[ReferenceText, ...]:
        """The database text(s) the subjects are read from: one, or each shard's after a merge
        (:func:`gseek.blast.shards.merge_hits`)."""
        return self._ref if isinstance(self._ref, tuple) else (self._ref,)

    def __len__(self) -> int:
        return int(self.arrays["score"].size)

    def __getattr__(self, name: str) -> np.ndarray:
        try:
            return self.__dict__["arrays"][name]
        except KeyError as exc:
            raise AttributeError(exc.args[0] if exc.args else name) from None

    def release(self) -> None:
        """Lets go of the HSPs' CIGAR runs (``cigar``, ``cigar_offsets``; ``btop``, ``qseq``, ``sseq``,
        ``qcovus`` and the SAM, pairwise, XML and JSON text read them). A GPU search leaves them in the
        device's memory until they are first read (then on the host) or the hits are dropped; hits kept
        for their columns can give that memory back now. Reading the runs afterwards raises ``KeyError``
        (``AttributeError`` as ``hits.cigar``); the other columns stay. Also on leaving ``with hits:``
        (``docs/python-api.md``). Hits read back from a service hold a plain mapping: nothing to let go.

        >>> import numpy as np
        >>> from gseek.dp.runs import LazyRuns
        >>> hits = BlastHits(HitArrays({"score": np.array([7])}, LazyRuns.of(np.array([17], np.uint32), np.array([0, 1]))),
        ...                  ["q"], np.array([1]), ("s",), np.array([1]), np.zeros(1, np.uint8), np.array([0, 1]), ())
        >>> with hits:
        ...     hits.cigar.tolist()
        [17]
        >>> len(hits), "cigar" in hits.arrays
        (1, False)
        """
        release = getattr(self.arrays, "release", None)
        if release is not None:
            release()

    def __enter__(self) -> BlastHits:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def __iter__(self) -> Iterator[tuple]:
        return tables.hsp_records(self)  # an Hsp namedtuple an HSP, -outfmt 6 std columns (gseek.blast.tables)

    def to_pandas(self, fields: str | Iterable[str] | None = None) -> Any:
        return tables.to_pandas(self, fields)  # a DataFrame of the -outfmt 6 columns (gseek.blast.tables)

    def to_arrow(self, fields: str | Iterable[str] | None = None) -> Any:
        return tables.to_arrow(self, fields)  # a pyarrow Table of the same (gseek.blast.tables)

    def row(self, h: int, fields: Iterable[str] | None = None) -> str:
        """HSP ``h`` as a ``blastn -outfmt 6`` line (default fields: ``std``)."""
        from .report import tabular_row

        return tabular_row(self, h, fields)

    def query_codes(self, q: int) -> np.ndarray:
        """Base codes of query ``q`` (plus strand)."""
        return self._query_codes[self._query_offsets[q]:self._query_offsets[q + 1]]

    def subject_codes(self, start: int, end: int, subject: int) -> np.ndarray:
        """Base codes of subject ``subject`` ``[start, end)`` (forward strand)."""
        for ref in self.texts:
            local = subject - ref.first_contig
            if 0 <= local < len(ref.contig_names):
                base = int(ref.contig_offsets[local])
                return ref.bases(base + start, base + end)
        raise IndexError(f"subject {subject} is in none of the texts of these hits")

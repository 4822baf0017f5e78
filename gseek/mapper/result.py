"""What mapping returns: :class:`MappingResult` (reported hits, struct-of-arrays) and
:class:`Placements` (everything the device search found), read statuses, read names."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from gseek import tables

from .hits import Hit, MappedRead
from .tables import SAM_TYPES, sam_columns

if TYPE_CHECKING:  # pragma: no cover
    from gseek.index.text import ReferenceText
    from gseek.seqio import SequenceBatch

__all__ = ["MappingResult", "Placements", "ReadNames", "STATUS_SEARCHED", "STATUS_TOO_LONG", "STATUS_TOO_SHORT"]

#: Read status: mapped or not by search (0), longer than MAX_READ_LENGTH (1),
#: shorter than MIN_READ_LENGTH (2); the last two are not searched.
STATUS_SEARCHED, STATUS_TOO_LONG, STATUS_TOO_SHORT = 0, 1, 2


class ReadNames(Sequence[str]):
    """Read names, decoded one at a time from a batch's name bytes and offsets.

    A mapped batch keeps its names this way instead of building one Python
    string per read (the SAM formatter reads the bytes directly).

    >>> names = ReadNames(np.frombuffer(b"r1read2", np.uint8), np.array([0, 2, 7]))
    >>> len(names), names[1], list(names[1:])
    (2, 'read2', ['read2'])
    """

    __slots__ = ("_bytes", "_offsets")

    def __init__(self, name_bytes: np.ndarray, offsets: np.ndarray) -> None:
        self._bytes = name_bytes
        self._offsets = offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                raise ValueError("ReadNames slices must be contiguous")
            return ReadNames(self._bytes, self._offsets[start : max(start, stop) + 1])
        i = int(i) + len(self) if int(i) < 0 else int(i)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._bytes[self._offsets[i] : self._offsets[i + 1]].tobytes().decode("latin-1")


@dataclass(frozen=True, eq=False)
class MappingResult:
    """Placements of one batch of reads, struct-of-arrays (0-based coordinates).

    Reported hits, grouped by read in input order, primary first: ``read``
    (int64), ``contig`` (int32), ``pos`` (0-based leftmost base, int64),
    ``strand`` (+1 / -1, int8), ``mismatches`` (int16) and ``secondary``
    (bool); ``hit_offsets[i]:hit_offsets[i+1]`` are read ``i``'s hits.

    Per read: ``best`` and ``second`` (mismatches of the best and second-best
    strata, -1 when absent), ``n_best`` / ``n_second`` (placements in them:
    SAM X0 / X1), ``n_found`` (all placements within ``k``), ``mapq`` and
    ``status`` (:data:`STATUS_TOO_LONG` / :data:`STATUS_TOO_SHORT` for reads
    not searched).

    ``alt_*``: alternative placements for the XA tag of the primary record
    (best-stratum mode only), grouped by read through ``alt_offsets``.

    Arguments (the fields; results are made by :meth:`Mapper.map
    <gseek.mapper.Mapper.map>` / :meth:`Mapper.select <gseek.mapper.Mapper.select>`):
        names: the read names; ``contig_names``: the index's contigs.
        read ... alt_mismatches: the arrays above.
        capped: per read, True when ``report_all`` with ``max_hits`` cut its
            hits (SAM ``ZH:i``); empty when not reporting all.
        batch, reference: the reads mapped and the reference text (set by
            :meth:`Mapper.select <gseek.mapper.Mapper.select>`; what the
            per-hit views read for lengths, ``MD`` and ``ctg_len``).

    Per read, mappy-style: ``for read in result`` gives a
    :class:`~gseek.mapper.hits.MappedRead` per read, in input order
    (``result.n_reads`` of them; ``len(result)`` counts hits), and
    ``read.hits`` its :class:`~gseek.mapper.hits.Hit` views (``ctg``,
    ``r_st``, ``r_en``, ``strand``, ``mapq``, ``NM``, ``cigar_str``, ``MD``,
    ``is_primary``; ``str(hit)`` a PAF line). The views read these arrays;
    nothing is copied.

    >>> import os, tempfile
    >>> from gseek import Index, Mapper
    >>> fasta = os.path.join(tempfile.mkdtemp(), "ref.fa")
    >>> _ = open(fasta, "w").write(">chr1\\nGATTACAGATTACATTTTCCCCGGGGAAAACGTACGTTGCA\\n")
    >>> result = Mapper(Index.build(fasta, wgram=4, device="cpu"), mismatches=1).map(
    ...     ["ACATTTTCCCCGGTGA", "TGCAACGTACGTTTTC", "GGGGGGGGGGGGGGGGGGGG"])
    >>> result, result.n_reads, len(result)
    (MappingResult(reads=3, mapped=2, hits=2), 3, 2)
    >>> result.read.tolist(), result.pos.tolist(), result.strand.tolist(), result.mismatches.tolist()
    ([0, 1], [11, 25], [1, -1], [1, 0])
    >>> result.hit_offsets.tolist(), result.best.tolist(), result.n_best.tolist(), result.mapq.tolist()
    ([0, 1, 2, 2], [1, 0, -1], [1, 1, 0], [60, 60, 0])
    >>> result.hit_text(1)
    'read1\\tchr1\\t25\\t-\\t0'
    >>> [(read.name, [(h.ctg, h.r_st, h.r_en, h.strand, h.NM, h.MD) for h in read.hits]) for read in result]
    [('read0', [('chr1', 11, 27, 1, 1, '13G2')]), ('read1', [('chr1', 25, 41, -1, 0, '16')]), ('read2', [])]
    >>> print(result.read_view(0).hits[0])
    read0	16	0	16	+	chr1	41	11	27	15	16	60	tp:A:P	NM:i:1	cg:Z:16M
    """

    names: Sequence[str]
    contig_names: tuple[str, ...]
    read: np.ndarray
    contig: np.ndarray
    pos: np.ndarray
    strand: np.ndarray
    mismatches: np.ndarray
    secondary: np.ndarray
    hit_offsets: np.ndarray
    best: np.ndarray
    second: np.ndarray
    n_best: np.ndarray
    n_second: np.ndarray
    n_found: np.ndarray
    mapq: np.ndarray
    status: np.ndarray
    alt_offsets: np.ndarray
    alt_contig: np.ndarray
    alt_pos: np.ndarray
    alt_strand: np.ndarray
    alt_mismatches: np.ndarray
    capped: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    batch: SequenceBatch | None = field(default=None, repr=False)
    reference: ReferenceText | None = field(default=None, repr=False)
    #: SAM's ``YF:Z`` value of a read not searched, by status.
    NOT_SEARCHED: ClassVar[dict[int, str]] = {STATUS_TOO_LONG: "TOO_LONG", STATUS_TOO_SHORT: "TOO_SHORT"}

    def __len__(self) -> int:
        """Number of reported hits."""
        return int(self.read.size)

    @property
    def n_reads(self) -> int:
        return int(self.best.size)

    def __iter__(self) -> Iterator[MappedRead]:
        """A :class:`~gseek.mapper.hits.MappedRead` view per read, in input order."""
        return (MappedRead(self, i) for i in range(self.n_reads))

    def read_view(self, i: int) -> MappedRead:
        """Read ``i`` (0-based, in input order) as a :class:`~gseek.mapper.hits.MappedRead` view."""
        i = int(i) + self.n_reads if int(i) < 0 else int(i)
        if not 0 <= i < self.n_reads:
            raise IndexError(i)
        return MappedRead(self, i)

    def hit_view(self, j: int) -> Hit:
        """Hit ``j`` (a row of the hit arrays) as a :class:`~gseek.mapper.hits.Hit` view."""
        j = int(j) + len(self) if int(j) < 0 else int(j)
        if not 0 <= j < len(self):
            raise IndexError(j)
        return Hit(self, j)

    def __repr__(self) -> str:
        mapped = int((self.best >= 0).sum())
        return f"MappingResult(reads={self.n_reads}, mapped={mapped}, hits={len(self)})"

    def hit_text(self, j: int) -> str:
        """Hit ``j`` as ``name  contig  pos  strand  mismatches`` (0-based pos, tab-separated)."""
        return (f"{self.names[self.read[j]]}\t{self.contig_names[self.contig[j]]}\t{int(self.pos[j])}\t"
                f"{'+' if self.strand[j] > 0 else '-'}\t{int(self.mismatches[j])}")

    def to_pandas(self, unmapped: bool = False) -> Any:
        """The SAM records of the hits as a :class:`pandas.DataFrame`, a row a hit, the
        SAM field and tag names as columns (``QNAME FLAG RNAME POS MAPQ CIGAR RNEXT PNEXT
        TLEN SEQ QUAL NM MD X0 X1 XA ZH``: :mod:`gseek.mapper.tables`; a tag a record
        lacks is missing: None, or NA in the nullable ``Int64`` of ``ZH``); ``unmapped``:
        every record ``gseek search`` writes, unmapped reads too (and ``YF``). Needs
        pandas (the ``tables`` extra)."""
        return tables.to_pandas(sam_columns(self, unmapped), "MappingResult.to_pandas()", SAM_TYPES)

    def to_arrow(self, unmapped: bool = False) -> Any:
        """:meth:`to_pandas`'s table as a :class:`pyarrow.Table` (needs pyarrow)."""
        return tables.to_arrow(sam_columns(self, unmapped), "MappingResult.to_arrow()", SAM_TYPES)

    def placements(self) -> set[tuple[int, int, int, int, int]]:
        """Reported hits as a set of ``(read, contig, pos, strand, mismatches)``."""
        return set(zip(self.read.tolist(), self.contig.tolist(), self.pos.tolist(), self.strand.tolist(),
                       self.mismatches.tolist()))


@dataclass(frozen=True, eq=False)
class Placements:
    """What :meth:`Mapper.search` found for one batch (host arrays, unordered).

    ``status`` per read (as :class:`MappingResult`); one row per placement:
    ``read`` (index in the batch), ``strand`` (+1 / -1), ``contig``, ``pos``
    (0-based), ``mismatches``.
    """

    status: np.ndarray
    read: np.ndarray
    strand: np.ndarray
    contig: np.ndarray
    pos: np.ndarray
    mismatches: np.ndarray

    def __len__(self) -> int:
        return int(self.read.size)

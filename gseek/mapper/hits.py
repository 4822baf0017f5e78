"""Per-read and per-hit views of a :class:`~gseek.mapper.MappingResult` (mappy's ``Alignment``).

``for read in result`` gives a :class:`MappedRead` per read of the batch, in
input order; ``read.hits`` are its reported hits as :class:`Hit` objects,
primary first. Both are *views*: they hold the result and an index, and read
its arrays when asked; nothing of the batch is copied. A hit's ``MD`` (and
``NM``, the verified mismatch count it must agree with) is computed from the
reference when asked, by :func:`md_string`, one hit at a time: the same
rule as the SAM formatter (an N on either side is a mismatch, the reference
letter is written), so the values equal the SAM ``NM:i`` / ``MD:Z`` tags.

``str(hit)`` is a PAF line (minimap2's format, the columns of mappy's
``Alignment.__str__`` with the read's name and length in front)::

    qname qlen q_st q_en strand ctg ctg_len r_st r_en mlen blen mapq tp:A:P|S NM:i:.. cg:Z:..

0-based half-open coordinates, as PAF and mappy; ``mlen`` is the matching
bases (read length minus NM), ``blen`` the read length.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gseek.alphabet import COMPLEMENT

if TYPE_CHECKING:  # pragma: no cover
    from .result import MappingResult

__all__ = ["Hit", "MappedRead", "md_string"]

_LETTERS = "ACGTN"


def md_string(read: np.ndarray, ref: np.ndarray) -> tuple[str, int]:
    """SAM ``MD:Z`` value and NM of an ungapped alignment: ``read`` and ``ref`` base
    codes (0..3, 4 = N) side by side, the read as on the forward reference
    strand. A position is a mismatch where the bases differ or either is N;
    MD gives the matched run lengths and the reference letter at each mismatch.

    >>> md_string(np.array([0, 1, 2, 3, 4]), np.array([0, 1, 1, 3, 4]))
    ('2C1N0', 2)
    """
    read = np.asarray(read)
    ref = np.asarray(ref)
    bad = np.flatnonzero((read != ref) | (read == 4) | (ref == 4))
    parts, last = [], 0
    for t in bad.tolist():
        parts.append(f"{t - last}{_LETTERS[int(ref[t])]}")
        last = t + 1
    parts.append(str(read.size - last))
    return "".join(parts), int(bad.size)


def _held(result: MappingResult, name: str):
    """``result.batch`` / ``result.reference``, which a result made by
    :meth:`Mapper.select <gseek.mapper.Mapper.select>` holds (ValueError if not)."""
    value = getattr(result, name)
    if value is None:
        raise ValueError(f"this MappingResult holds no {name} (it was not made by Mapper.map or Mapper.select): "
                         f"read lengths, MD and contig lengths need it")
    return value


class MappedRead:
    """One read of a :class:`~gseek.mapper.MappingResult` (a view: ``result`` and
    the read's index ``i``).

    ``name``, ``hits`` (its reported :class:`Hit` list, primary first; empty
    when unmapped), ``mapq``, ``is_mapped``, ``status``, ``n_best`` / ``n_second``
    (SAM X0 / X1), ``best`` (fewest mismatches, -1 when unmapped).
    """

    __slots__ = ("_result", "index")

    def __init__(self, result: MappingResult, i: int) -> None:
        self._result = result
        self.index = int(i)

    @property
    def name(self) -> str:
        return self._result.names[self.index]

    @property
    def hits(self) -> list[Hit]:
        r = self._result
        return [Hit(r, j) for j in range(int(r.hit_offsets[self.index]), int(r.hit_offsets[self.index + 1]))]

    @property
    def mapq(self) -> int:
        return int(self._result.mapq[self.index])

    @property
    def is_mapped(self) -> bool:
        return bool(self._result.best[self.index] >= 0)

    @property
    def status(self) -> int:
        return int(self._result.status[self.index])

    @property
    def best(self) -> int:
        return int(self._result.best[self.index])

    @property
    def n_best(self) -> int:
        return int(self._result.n_best[self.index])

    @property
    def n_second(self) -> int:
        return int(self._result.n_second[self.index])

    def __repr__(self) -> str:
        offsets = self._result.hit_offsets
        n = int(offsets[self.index + 1] - offsets[self.index])
        return f"MappedRead(name={self.name!r}, hits={n}, mapq={self.mapq})"

    def __str__(self) -> str:
        """The read's hits as PAF lines (empty when unmapped)."""
        return "\n".join(str(h) for h in self.hits)


class Hit:
    """One reported hit of a :class:`~gseek.mapper.MappingResult` (a view: ``result``
    and the hit's row ``j``), with mappy's ``Alignment`` names.

    ``ctg`` (contig name), ``ctg_len``, ``r_st`` / ``r_en`` (0-based, half-open
    on the contig), ``q_st`` / ``q_en`` (0 and the read length: k-mismatch hits
    cover the whole read), ``strand`` (+1 / -1), ``mapq`` (the read's; 0 for a
    secondary hit of a worse stratum, as SAM), ``NM`` (mismatches, N included),
    ``is_primary``, ``cigar_str`` (``{len}M``), ``cigar`` (``[[len, 0]]``, BAM
    op codes), ``cigar_eq_str`` (``=``/``X`` runs, as ``--cigar-eq``), ``MD``
    (computed from the reference when asked, as ``cigar_eq_str``), ``mlen`` /
    ``blen`` (matching bases / read length), ``read_name``; ``str(hit)`` a PAF
    line (:mod:`gseek.mapper.hits`); ``hit._asdict()`` these values by name.
    """

    __slots__ = ("_result", "_j")

    #: What :meth:`_asdict` holds (a namedtuple's habit: ``pandas.DataFrame(h._asdict() for h in hits)``).
    _fields = ("read_name", "ctg", "ctg_len", "r_st", "r_en", "q_st", "q_en", "strand", "mapq", "NM", "mlen", "blen",
               "is_primary", "cigar_str", "MD")

    def __init__(self, result: MappingResult, j: int) -> None:
        self._result = result
        self._j = int(j)

    def _asdict(self) -> dict:
        """The hit's values by name (:attr:`_fields`), as a namedtuple's ``_asdict``."""
        return {name: getattr(self, name) for name in self._fields}

    def _batch(self):
        return _held(self._result, "batch")

    def _reference(self):
        return _held(self._result, "reference")

    @property
    def read_index(self) -> int:
        return int(self._result.read[self._j])

    @property
    def read_name(self) -> str:
        return self._result.names[self.read_index]

    @property
    def ctg(self) -> str:
        return self._result.contig_names[int(self._result.contig[self._j])]

    @property
    def ctg_len(self) -> int:
        reference = self._reference()
        c = int(self._result.contig[self._j])
        return int(reference.contig_offsets[c + 1] - reference.contig_offsets[c])

    @property
    def q_st(self) -> int:
        return 0

    @property
    def q_en(self) -> int:
        return self.blen

    @property
    def r_st(self) -> int:
        return int(self._result.pos[self._j])

    @property
    def r_en(self) -> int:
        return self.r_st + self.blen

    @property
    def strand(self) -> int:
        return int(self._result.strand[self._j])

    @property
    def NM(self) -> int:  # noqa: N802 - mappy's and SAM's name
        return int(self._result.mismatches[self._j])

    @property
    def is_primary(self) -> bool:
        return not bool(self._result.secondary[self._j])

    @property
    def mapq(self) -> int:
        r, i = self._result, self.read_index
        return int(r.mapq[i]) if self.is_primary or r.mismatches[self._j] == r.best[i] else 0

    @property
    def blen(self) -> int:
        offsets = self._batch().offsets
        i = self.read_index
        return int(offsets[i + 1] - offsets[i])

    @property
    def mlen(self) -> int:
        return self.blen - self.NM

    @property
    def cigar_str(self) -> str:
        return f"{self.blen}M"

    @property
    def cigar(self) -> list[list[int]]:
        return [[self.blen, 0]]

    @property
    def cigar_eq_str(self) -> str:
        """The CIGAR with ``=``/``X`` runs (``gseek search --cigar-eq``), e.g. ``13=1X2=``."""
        read, ref = self.aligned_bases()
        bad = (read != ref) | (read == 4) | (ref == 4)
        edges = np.flatnonzero(np.diff(bad.astype(np.int8))) + 1
        starts = np.concatenate([[0], edges])
        ends = np.concatenate([edges, [bad.size]])
        return "".join(f"{e - b}{'X' if bad[b] else '='}" for b, e in zip(starts.tolist(), ends.tolist()))

    @property
    def MD(self) -> str:  # noqa: N802 - mappy's and SAM's name
        return md_string(*self.aligned_bases())[0]

    def aligned_bases(self) -> tuple[np.ndarray, np.ndarray]:
        """(read, reference) base codes side by side, the read as on the forward strand."""
        batch, reference = self._batch(), self._reference()
        i = self.read_index
        read = batch.codes[int(batch.offsets[i]) : int(batch.offsets[i + 1])]
        if self.strand < 0:
            read = COMPLEMENT[read[::-1]]
        start = int(reference.contig_offsets[int(self._result.contig[self._j])]) + self.r_st
        return read, reference.bases(start, start + read.size)

    def __repr__(self) -> str:
        return (f"Hit(ctg={self.ctg!r}, r_st={self.r_st}, r_en={self.r_en}, strand={self.strand:+d}, "
                f"mapq={self.mapq}, NM={self.NM}, is_primary={self.is_primary})")

    def __str__(self) -> str:
        """A PAF line: read name and length, then mappy's ``Alignment.__str__`` columns
        (``tp:A:P``/``S``, ``NM:i``, ``cg:Z``; no ``ts:A``, there are no transcripts)."""
        blen = self.blen
        return "\t".join(map(str, (
            self.read_name, blen, 0, blen, "+" if self.strand > 0 else "-", self.ctg, self.ctg_len, self.r_st,
            self.r_st + blen, blen - self.NM, blen, self.mapq, "tp:A:P" if self.is_primary else "tp:A:S",
            f"NM:i:{self.NM}", f"cg:Z:{blen}M")))

"""A batch of FASTA/FASTQ records as struct-of-arrays (:class:`SequenceBatch`), and soft-mask runs."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from gseek import ragged
from gseek.alphabet import decode_dna

__all__ = ["SequenceBatch", "Alphabet", "mask_runs"]

Alphabet = Literal["dna", "protein"]


@dataclass(frozen=True, eq=False)
class SequenceBatch:
    """Records of one chunk of a FASTA/FASTQ file, as struct-of-arrays.

    Record ``i`` has residues ``codes[offsets[i]:offsets[i+1]]`` (DNA: 0..3 =
    ACGT, 4 = N/ambiguous; protein: uppercase ASCII), Phred+33 qualities at
    the same offsets (FASTQ only), name bytes ``names[name_offsets[i]:...]``
    and description bytes likewise. ``soft_mask`` holds half-open runs
    ``[start, end)`` of lowercase residues in ``codes`` coordinates.
    ``first_record`` is the index of record 0 in its file, ``lines`` the
    1-based line of each header, for error messages. ``raw`` and
    ``raw_offsets``, when the reader keeps them (``keep_raw=True``), hold each
    record's text as the file gives it (:meth:`raw_record`).

    Arguments (the fields; batches are made by :class:`~gseek.seqio.FastxReader`,
    :func:`~gseek.seqio.read_fastx` or :meth:`from_codes`):
        path: the file the records come from (for messages).
        format: ``"fasta"`` or ``"fastq"``.
        alphabet: ``"dna"`` or ``"protein"``.
        codes, offsets, quals, names, name_offsets, descriptions,
            description_offsets, soft_mask, lines, first_record, raw,
            raw_offsets: as above (numpy arrays; ``quals`` None for FASTA,
            ``raw`` and ``raw_offsets`` None unless kept).

    >>> import os, tempfile
    >>> from gseek import read_fastx
    >>> path = os.path.join(tempfile.mkdtemp(), "reads.fq")
    >>> _ = open(path, "w").write("@r1 first\\nACgtN\\n+\\nIIII#\\n@r2\\nGGCA\\n+\\n!!II\\n")
    >>> batch = read_fastx(path)
    >>> len(batch), batch.codes.tolist(), batch.offsets.tolist()
    (2, [0, 1, 2, 3, 4, 2, 2, 1, 0], [0, 5, 9])
    >>> batch.name(0), batch.description(0), batch.sequence(0), batch.quality(0), batch.soft_mask.tolist()
    ('r1', 'first', 'ACGTN', 'IIII#', [[2, 4]])
    >>> batch.where(1)
    '.../reads.fq:5'
    >>> SequenceBatch.from_codes(np.array([0, 1, 2, 3], np.uint8), np.array([0, 3, 4]), ["a", "b"], "<mem>")
    SequenceBatch('<mem>', fasta, records=2, residues=4, first_record=0)
    """

    path: str
    format: Literal["fasta", "fastq"]
    alphabet: Alphabet
    codes: np.ndarray
    offsets: np.ndarray
    quals: np.ndarray | None
    names: np.ndarray
    name_offsets: np.ndarray
    descriptions: np.ndarray
    description_offsets: np.ndarray
    soft_mask: np.ndarray
    lines: np.ndarray
    first_record: int = 0
    raw: np.ndarray | None = None
    raw_offsets: np.ndarray | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __repr__(self) -> str:
        return (
            f"SequenceBatch({self.path!r}, {self.format}, records={len(self)}, "
            f"residues={self.codes.size}, first_record={self.first_record})"
        )

    @property
    def lengths(self) -> np.ndarray:
        """Length of every record (int64)."""
        if "lengths" not in self._cache:
            self._cache["lengths"] = np.diff(self.offsets)
        return self._cache["lengths"]

    @property
    def total_length(self) -> int:
        return int(self.codes.size)

    def name(self, i: int) -> str:
        return self.names[self.name_offsets[i] : self.name_offsets[i + 1]].tobytes().decode("latin-1")

    def description(self, i: int) -> str:
        lo, hi = self.description_offsets[i], self.description_offsets[i + 1]
        return self.descriptions[lo:hi].tobytes().decode("latin-1")

    def name_list(self) -> list[str]:
        """All record names as Python strings (one decode, then split)."""
        return ragged.decode_strings(self.names, self.name_offsets, "latin-1")

    def codes_of(self, i: int) -> np.ndarray:
        return self.codes[self.offsets[i] : self.offsets[i + 1]]

    def sequence(self, i: int) -> str:
        """Record ``i`` as text (DNA: ``ACGTN``; lowercase is not restored)."""
        codes = self.codes_of(i)
        if self.alphabet == "dna":
            return decode_dna(codes)
        return codes.tobytes().decode("ascii")

    def quality(self, i: int) -> str | None:
        if self.quals is None:
            return None
        return self.quals[self.offsets[i] : self.offsets[i + 1]].tobytes().decode("ascii")

    def raw_record(self, i: int) -> bytes:
        """Record ``i``'s text as read (``keep_raw=True``), its lines ending in newlines."""
        if self.raw is None or self.raw_offsets is None:
            raise ValueError("the record text was not kept (FastxReader(keep_raw=True))")
        return self.raw[self.raw_offsets[i] : self.raw_offsets[i + 1]].tobytes()

    def __getitem__(self, records: slice) -> SequenceBatch:
        """Records ``lo:hi`` as a batch of their own (``first_record`` and ``lines`` follow them).

        >>> batch = SequenceBatch.from_codes(np.array([0, 1, 2, 3], np.uint8), np.array([0, 1, 3, 4]),
        ...                                  ["a", "b", "c"], "<mem>")
        >>> part = batch[1:3]
        >>> part.name_list(), part.sequence(0), part.first_record, part.lines.tolist()
        (['b', 'c'], 'CG', 1, [3, 5])
        """
        if not isinstance(records, slice) or records.step not in (None, 1):
            raise TypeError("a batch is sliced by a range of records (batch[lo:hi])")
        lo, hi, _ = records.indices(len(self))
        hi = max(lo, hi)
        if lo == 0 and hi == len(self):
            return self
        c0, c1 = int(self.offsets[lo]), int(self.offsets[hi])
        n0, n1 = int(self.name_offsets[lo]), int(self.name_offsets[hi])
        d0, d1 = int(self.description_offsets[lo]), int(self.description_offsets[hi])
        mask = self.soft_mask
        keep = (mask[:, 0] >= c0) & (mask[:, 1] <= c1)
        raw = raw_offsets = None
        if self.raw is not None and self.raw_offsets is not None:
            r0, r1 = int(self.raw_offsets[lo]), int(self.raw_offsets[hi])
            raw, raw_offsets = self.raw[r0:r1], self.raw_offsets[lo : hi + 1] - r0
        return replace(
            self, codes=self.codes[c0:c1], offsets=self.offsets[lo : hi + 1] - c0,
            quals=None if self.quals is None else self.quals[c0:c1],
            names=self.names[n0:n1], name_offsets=self.name_offsets[lo : hi + 1] - n0,
            descriptions=self.descriptions[d0:d1], description_offsets=self.description_offsets[lo : hi + 1] - d0,
            soft_mask=mask[keep] - c0, lines=self.lines[lo:hi], first_record=self.first_record + lo,
            raw=raw, raw_offsets=raw_offsets, _cache={},
        )

    def trimmed(self, trim5: int = 0, trim3: int = 0) -> SequenceBatch:
        """Every record without its first ``trim5`` and last ``trim3`` residues
        (and qualities, and soft-mask runs), as bowtie's ``--trim5``/``--trim3``;
        a record shorter than ``trim5 + trim3`` becomes empty. Names, lines and
        the record text (:attr:`raw`) are kept.

        >>> batch = SequenceBatch.from_codes(np.array([0, 1, 2, 3, 0, 1], np.uint8), np.array([0, 5, 6]),
        ...                                  ["a", "b"], "<mem>")
        >>> t = batch.trimmed(1, 2)
        >>> t.sequence(0), t.sequence(1), t.offsets.tolist()
        ('CG', '', [0, 2, 2])
        """
        if trim5 < 0 or trim3 < 0:
            raise ValueError(f"trim5 and trim3 must be >= 0, not {trim5}, {trim3}")
        if trim5 == trim3 == 0:
            return self
        lengths = self.lengths
        cut5 = np.minimum(lengths, trim5)
        keep = np.maximum(lengths - cut5 - trim3, 0)
        starts = self.offsets[:-1] + cut5
        offsets = ragged.offsets(keep)
        where = np.repeat(starts - offsets[:-1], keep) + np.arange(int(offsets[-1]))
        mask = self.soft_mask
        if mask.size:  # clip each run to its record's kept part, in the new coordinates
            record = np.searchsorted(self.offsets, mask[:, 0], side="right") - 1
            shift = offsets[record] - starts[record]
            lo = np.maximum(mask[:, 0], starts[record]) + shift
            hi = np.minimum(mask[:, 1], starts[record] + keep[record]) + shift
            mask = np.stack([lo, hi], axis=1)[hi > lo].astype(np.int64).reshape(-1, 2)
        return replace(self, codes=self.codes[where], offsets=offsets,
                       quals=None if self.quals is None else self.quals[where], soft_mask=mask, _cache={})

    def where(self, i: int) -> str:
        """``path:line`` of record ``i``'s header, for error messages."""
        return f"{self.path}:{int(self.lines[i])}"

    @classmethod
    def from_codes(cls, codes: np.ndarray, offsets: np.ndarray, names: list[str], path: str,
                   alphabet: Alphabet = "dna") -> SequenceBatch:
        """A FASTA-like batch of records ``codes[offsets[i]:offsets[i+1]]`` named ``names``
        (no descriptions or qualities; record i's header is line 2i + 1)."""
        name_bytes, name_offsets = ragged.encode_strings(names)
        return cls(
            path=path, format="fasta", alphabet=alphabet, codes=codes, offsets=offsets, quals=None,
            names=name_bytes, name_offsets=name_offsets, descriptions=np.zeros(0, np.uint8),
            description_offsets=np.zeros(len(names) + 1, np.int64), soft_mask=np.zeros((0, 2), np.int64),
            lines=np.arange(1, 2 * len(names), 2, dtype=np.int64), first_record=0,
        )

    @classmethod
    def concat(cls, batches: list[SequenceBatch]) -> SequenceBatch:
        """Join consecutive batches of one file into one batch."""
        if not batches:
            raise ValueError("concat() needs at least one batch")
        if len(batches) == 1:
            return batches[0]
        first = batches[0]

        masks, base = [], 0
        for b in batches:
            masks.append(b.soft_mask + base)
            base += b.codes.size
        kept = all(b.raw is not None for b in batches)
        raw = ragged.concat([(b.raw, b.raw_offsets) for b in batches]) if kept else None
        return cls(
            path=first.path,
            format=first.format,
            alphabet=first.alphabet,
            codes=np.concatenate([b.codes for b in batches]),
            offsets=ragged.concat_offsets([b.offsets for b in batches]),
            quals=None if first.quals is None else np.concatenate([b.quals for b in batches]),
            names=np.concatenate([b.names for b in batches]),
            name_offsets=ragged.concat_offsets([b.name_offsets for b in batches]),
            descriptions=np.concatenate([b.descriptions for b in batches]),
            description_offsets=ragged.concat_offsets([b.description_offsets for b in batches]),
            soft_mask=np.concatenate(masks).reshape(-1, 2),
            lines=np.concatenate([b.lines for b in batches]),
            first_record=first.first_record,
            raw=None if raw is None else raw[0],
            raw_offsets=None if raw is None else raw[1],
        )


def mask_runs(mask: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Half-open ``[start, end)`` runs of true/non-zero entries of ``mask``, as an
    ``(k, 2)`` int64 array, split at the record ``offsets`` so that a run never
    spans two records.

    >>> mask_runs(np.array([0, 1, 1, 1, 0, 1], dtype=np.uint8), np.array([0, 2, 6])).tolist()
    [[1, 2], [2, 4], [5, 6]]
    """
    # two byte-wide temporaries at a time (a genome's mask is a byte a base): a run starts where an
    # entry is on and the one before is off or in another record, and ends likewise
    on = mask if mask.dtype == np.bool_ else mask.astype(bool)
    offsets = np.asarray(offsets, np.int64)
    n = on.size
    edge = on.copy()
    edge[1:] &= ~on[:-1]
    first = offsets[:-1][offsets[:-1] < n]  # record starts
    edge[first] = on[first]
    starts = np.flatnonzero(edge)
    edge[:] = on
    edge[:-1] &= ~on[1:]
    last = offsets[1:][offsets[1:] > 0] - 1  # record ends
    edge[last] = on[last]
    ends = np.flatnonzero(edge) + 1
    return np.stack([starts, ends], axis=1).astype(np.int64)



"""A batch of FASTA/FASTQ records as struct-of-arrays (:class:`SequenceBatch`), and soft-mask runs."""

from __future__ import annotations

from dataclasses import dataclass, field
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
    1-based line of each header, for error messages.

    Arguments (the fields; batches are made by :class:`~gseek.seqio.FastxReader`,
    :func:`~gseek.seqio.read_fastx` or :meth:`from_codes`):
        path: the file the records come from (for messages).
        format: ``"fasta"`` or ``"fastq"``.
        alphabet: ``"dna"`` or ``"protein"``.
        codes, offsets, quals, names, name_offsets, descriptions,
            description_offsets, soft_mask, lines, first_record: as above
            (numpy arrays; ``quals`` None for FASTA).

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
        )


def mask_runs(mask: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Half-open ``[start, end)`` runs of true/non-zero entries of ``mask``, as an
    ``(k, 2)`` int64 array, split at the record ``offsets`` so that a run never
    spans two records.

    >>> mask_runs(np.array([0, 1, 1, 1, 0, 1], dtype=np.uint8), np.array([0, 2, 6])).tolist()
    [[1, 2], [2, 4], [5, 6]]
    """
    on = mask.astype(bool)
    boundary = np.zeros(on.size + 1, dtype=bool)
    boundary[offsets] = True
    before = np.concatenate([[False], on[:-1]]) & ~boundary[:-1]
    after = np.concatenate([on[1:], [False]]) & ~boundary[1:]
    starts = np.flatnonzero(on & ~before)
    ends = np.flatnonzero(on & ~after) + 1
    return np.stack([starts, ends], axis=1).astype(np.int64)



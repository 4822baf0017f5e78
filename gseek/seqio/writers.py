"""FASTA and FASTQ writers (atomic: temporary name, renamed when complete)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from .atomic import open_output
from .batch import SequenceBatch

__all__ = ["write_fasta", "write_fastq"]


def _wrap(seq: str, width: int) -> Iterator[str]:
    if width <= 0 or not seq:
        yield seq
        return
    for i in range(0, len(seq), width):
        yield seq[i : i + width]


def write_fasta(
    path: str | os.PathLike,
    records: Iterable[tuple[str, str]] | SequenceBatch,
    *,
    width: int = 70,
) -> int:
    """Write ``(header, sequence)`` pairs (or a batch) as FASTA; return the count.

    Arguments:
        path: output file (``-``: standard output).
        records: ``(header, sequence)`` pairs, or a
            :class:`~gseek.seqio.SequenceBatch` (name and description as
            the header; lowercase is not restored).
        width: residues per sequence line; 0 or less: one line per sequence.

    ``header`` is written after ``>`` as is (name, then optional description).
    Written under a temporary name and renamed when complete. Returns the
    number of records written.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "ref.fa")
    >>> write_fasta(path, [("chr1 the first", "ACGTACGTAC"), ("chr2", "GATTACA")], width=4)
    2
    >>> print(open(path).read(), end="")
    >chr1 the first
    ACGT
    ACGT
    AC
    >chr2
    GATT
    ACA
    """
    if isinstance(records, SequenceBatch):
        records = _batch_fasta_records(records)
    n = 0
    with open_output(path, "w") as fh:
        for header, seq in records:
            fh.write(f">{header}\n")
            for part in _wrap(seq, width):
                fh.write(part)
                fh.write("\n")
            n += 1
    return n


def write_fastq(
    path: str | os.PathLike,
    records: Iterable[tuple[str, str, str]] | SequenceBatch,
) -> int:
    """Write ``(header, sequence, quality)`` triples (or a batch) as 4-line FASTQ; return the count.

    Arguments:
        path: output file (``-``: standard output).
        records: ``(header, sequence, quality)`` triples (Phred+33 text of
            the sequence's length), or a FASTQ
            :class:`~gseek.seqio.SequenceBatch`.

    Written under a temporary name and renamed when complete. Returns the
    number of records written. Raises ``ValueError`` for a quality of
    another length than its sequence, or a batch without qualities.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "reads.fq")
    >>> write_fastq(path, [("r1 first", "ACGTN", "IIII#"), ("r2", "GGCA", "!!II")])
    2
    >>> print(open(path).read(), end="")
    @r1 first
    ACGTN
    +
    IIII#
    @r2
    GGCA
    +
    !!II
    >>> write_fastq(path, [("r3", "ACGT", "II")])
    Traceback (most recent call last):
    ...
    ValueError: record 'r3': quality length 2 != sequence length 4
    """
    if isinstance(records, SequenceBatch):
        if records.quals is None:
            raise ValueError("write_fastq needs a batch with qualities")
        batch = records
        records = (
            (_header(batch, i), batch.sequence(i), batch.quality(i)) for i in range(len(batch))
        )
    n = 0
    with open_output(path, "w") as fh:
        for header, seq, qual in records:
            if len(seq) != len(qual):
                raise ValueError(f"record {header!r}: quality length {len(qual)} != sequence length {len(seq)}")
            fh.write(f"@{header}\n{seq}\n+\n{qual}\n")
            n += 1
    return n


def _header(batch: SequenceBatch, i: int) -> str:
    desc = batch.description(i)
    return f"{batch.name(i)} {desc}" if desc else batch.name(i)


def _batch_fasta_records(batch: SequenceBatch) -> Iterator[tuple[str, str]]:
    for i in range(len(batch)):
        yield _header(batch, i), batch.sequence(i)

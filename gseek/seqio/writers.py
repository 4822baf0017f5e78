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

    ``header`` is written after ``>`` as is (name, then optional description).
    Written under a temporary name and renamed when complete.
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
    """Write ``(header, sequence, quality)`` triples (or a batch) as 4-line FASTQ."""
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

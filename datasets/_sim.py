"""What the seeded simulators share (:mod:`gseek.datasets.simulate`, :mod:`gseek.datasets.simulate_seqs`):
the truth files' columns, the random generator, genome loading, window sampling, the TSV writer."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from numpy.random import PCG64, Generator

from gseek.alphabet import DNA_N
from gseek.errors import OptionError
from gseek.seqio import SequenceBatch, open_output, read_fastx

#: Columns of a read truth TSV (the first line of the file).
READ_TRUTH_HEADER = ("read", "contig", "pos", "strand", "mismatches", "positions")
#: Columns of a BLAST query truth TSV.
QUERY_TRUTH_HEADER = ("query", "contig", "start", "end", "strand", "divergence")
#: Columns of a DP family truth TSV.
FAMILY_TRUTH_HEADER = ("member", "family", "divergence")

#: Query sets of the BLASTN benchmark: name -> (number of queries, length).
BLAST_QUERY_PRESETS: dict[str, tuple[int, int]] = {
    "500bp": (100, 500),
    "10kb": (100, 10_000),
    "100kb": (10, 100_000),
}

#: Truth field of a record that has no origin (a uniformly random read/query).
UNPLACED = "*"
#: Truth ``positions`` field of a placed read without mismatches.
NO_POSITIONS = "."

# Bases gathered per step when building reads (bounds temporary memory).
_CHUNK_BASES = 1 << 22
# Indels planted by mutate() are 1.._MAX_INDEL bases long.
_MAX_INDEL = 3


def _rng(seed: int) -> Generator:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise OptionError(f"seed must be a non-negative integer, got {seed!r}")
    return Generator(PCG64(int(seed)))


def _load_genome(genome: SequenceBatch | str | os.PathLike) -> SequenceBatch:
    batch = genome if isinstance(genome, SequenceBatch) else read_fastx(genome)
    if batch.alphabet != "dna":
        raise OptionError(f"{batch.path}: simulation needs a DNA genome, got {batch.alphabet}")
    if batch.total_length == 0:
        raise OptionError(f"{batch.path}: the genome has no bases")
    return batch


def _length_range(length: int | tuple[int, int], what: str = "length") -> tuple[int, int]:
    if isinstance(length, (int, np.integer)) and not isinstance(length, bool):
        lo = hi = int(length)
    else:
        try:
            lo, hi = (int(x) for x in length)  # type: ignore[union-attr]
        except (TypeError, ValueError):
            raise OptionError(f"{what} must be an int or a (lo, hi) pair, got {length!r}") from None
    if lo < 1 or hi < lo:
        raise OptionError(f"{what} must satisfy 1 <= lo <= hi, got {lo}..{hi}")
    return lo, hi


def _rate_range(value: tuple[float, float], name: str) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in value)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise OptionError(f"{name} must be a number or a (lo, hi) pair, got {value!r}") from None
    lo, hi = _check_fraction(lo, name), _check_fraction(hi, name)
    if hi < lo:
        raise OptionError(f"{name} must satisfy lo <= hi, got {lo}..{hi}")
    return lo, hi


def _check_fraction(value: float, name: str) -> float:
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise OptionError(f"{name} must be in [0, 1], got {value}")
    return value


def _segments(genome: SequenceBatch, avoid_n: bool) -> tuple[np.ndarray, np.ndarray]:
    """Global start and size of every stretch a window may lie in: each contig,
    split at reference N when ``avoid_n``."""
    offsets = genome.offsets
    if not avoid_n:
        return offsets[:-1].copy(), np.diff(offsets)
    npos = np.flatnonzero(genome.codes == DNA_N)
    bounds = np.unique(np.concatenate([offsets, npos, npos + 1]))
    starts, sizes = bounds[:-1], np.diff(bounds)
    clean = ~np.isin(starts, npos)
    return starts[clean], sizes[clean]


def _sample_windows(
    genome: SequenceBatch, lengths: np.ndarray, rng: Generator, *, avoid_n: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Uniform window starts inside one contig: (global start, contig index) per window.

    For each window length ``L`` (in ascending order) the valid starts are
    counted per stretch (:func:`_segments`), and each window of that length
    draws one of them uniformly. Exact, with no rejection loop, however
    fragmented the genome.
    """
    gstart = np.zeros(lengths.size, dtype=np.int64)
    if lengths.size == 0:
        return gstart, np.zeros(0, dtype=np.int64)
    seg_start, seg_size = _segments(genome, avoid_n)
    longest = int(seg_size.max()) if seg_size.size else 0
    need = int(lengths.max())
    if need > longest:
        kind = "N-free stretch of one contig" if avoid_n else "contig"
        raise OptionError(f"{genome.path}: cannot place a {need} bp window: the longest {kind} is {longest} bp")
    for L in np.unique(lengths).tolist():
        which = np.flatnonzero(lengths == L)
        fits = seg_size >= L
        count = seg_size[fits] - L + 1
        cum = np.cumsum(count)
        u = rng.integers(0, int(cum[-1]), size=which.size)
        seg = np.searchsorted(cum, u, side="right")
        gstart[which] = seg_start[fits][seg] + u - (cum[seg] - count[seg])
    contig = np.searchsorted(genome.offsets, gstart, side="right") - 1
    return gstart, contig


def _distinct_positions(lengths: np.ndarray, k: int, rng: Generator) -> np.ndarray:
    """``k`` distinct uniform positions in ``[0, lengths[i])`` per row, in draw order.

    Sequential sampling: draw ``u`` in ``[0, L - j)`` and step it past the
    ``j`` positions already taken (in ascending order); any prefix of the
    columns is then a uniform subset of that size.
    """
    n = lengths.size
    out = np.zeros((n, k), dtype=np.int64)
    for j in range(k):
        u = rng.integers(0, lengths - j) if n else np.zeros(0, dtype=np.int64)
        taken = np.sort(out[:, :j], axis=1)
        for t in range(j):
            u = u + (u >= taken[:, t])
        out[:, j] = u
    return out


def _quality_codes(within: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Phred scores: Q38 at the 5' end falling quadratically to Q28 at the 3' end."""
    d = np.maximum(lengths - 1, 1) ** 2
    return 38 - (10 * within * within + d // 2) // d


def _quality_profiles(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`_quality_codes` of every length in ``lo..hi`` as one flat table, with
    the start of each length; ``None`` when the table would be large."""
    lengths = np.arange(lo, hi + 1, dtype=np.int64)
    if int(lengths.sum()) > 1 << 24:
        return None
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    within = np.arange(int(lengths.sum())) - np.repeat(starts, lengths)
    return _quality_codes(within, np.repeat(lengths, lengths)).astype(np.int8), starts



def truth_path_for(path: str | os.PathLike) -> Path:
    """The truth TSV that goes with a FASTA/FASTQ file: ``x.fq`` -> ``x.truth.tsv``.

    >>> truth_path_for("data/lambda_reads.fq.gz").as_posix()
    'data/lambda_reads.truth.tsv'
    """
    path = Path(path)
    name = path.name
    if name.endswith(".gz"):
        name = name[:-3]
    for suffix in (".fastq", ".fq", ".fasta", ".fa", ".fna"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return path.with_name(name + ".truth.tsv")


def _write_tsv(path: str | os.PathLike, header: tuple[str, ...], lines: Iterator[str]) -> Path:
    path = Path(path)
    with open_output(path, "w") as fh:
        fh.write("\t".join(header) + "\n")
        for line in lines:
            fh.write(line)
    return path

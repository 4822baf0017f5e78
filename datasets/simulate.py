"""Seeded simulators with exact truth: k-mismatch reads, BLAST queries, DP families.

Every generator takes a ``seed`` and draws from ``numpy.random.Generator(PCG64(seed))``,
so the same arguments give the same records and the same truth, byte for byte
(for a given numpy version). The work is vectorised over all reads: a million
100 bp reads take seconds.

The truth is the *planted* origin of each record. For reads, other placements
with at most k mismatches may exist (repeats, low complexity); a mapper test
that claims completeness must compare against a brute-force oracle, not only
against this table.

>>> from gseek.datasets import lambda_genome
>>> reads = kmismatch_reads(lambda_genome(), 4, 50, 2, seed=7, random_fraction=0.25)
>>> len(reads), reads.lengths.tolist()
(4, [50, 50, 50, 50])
>>> int((reads.contig < 0).sum())         # one uniformly random read
1
>>> bool(((reads.mismatches <= 2) & (reads.mismatches >= -1)).all())
True
>>> reads.origin(0)._fields
('read', 'contig', 'pos', 'strand', 'mismatches', 'positions')
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
from numpy.random import PCG64, Generator

from gseek import ragged
from gseek.alphabet import COMPLEMENT, DNA_N, decode_dna
from gseek.errors import OptionError
from gseek.seqio import SequenceBatch, open_output, read_fastx, write_fasta, write_fastq

__all__ = [
    "READ_TRUTH_HEADER",
    "QUERY_TRUTH_HEADER",
    "FAMILY_TRUTH_HEADER",
    "BLAST_QUERY_PRESETS",
    "ReadOrigin",
    "SimulatedReads",
    "SimulatedQueries",
    "SimulatedFamilies",
    "kmismatch_reads",
    "kmismatch_pairs",
    "SimulatedPairs",
    "PAIR_TRUTH_HEADER",
    "blast_queries",
    "dp_families",
    "mutate",
    "read_truth",
    "truth_path_for",
]

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


class ReadOrigin(NamedTuple):
    """Truth of one read: where it was cut and which bases differ.

    ``contig``, ``pos``, ``strand`` and ``mismatches`` are ``None`` for a
    uniformly random (unplaced) read. ``pos`` is the 0-based leftmost
    reference base of the window on the forward strand; ``positions`` are
    0-based offsets in the read as written (after reverse complement).
    """

    read: str
    contig: str | None
    pos: int | None
    strand: str | None
    mismatches: int | None
    positions: tuple[int, ...]


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


@dataclass(frozen=True, eq=False)
class SimulatedReads:
    """Simulated reads and their planted truth, as struct-of-arrays.

    Read ``i`` is ``codes[offsets[i]:offsets[i+1]]`` (0..3 = ACGT, 4 = N) with
    Phred+33 ``quals`` at the same offsets. Truth per read: ``contig`` (index
    into ``contig_names``, -1 for a random read), ``pos`` (0-based leftmost
    reference base, -1), ``strand`` (+1, -1, 0 for random), ``mismatches``
    (-1 for random) and the mismatch positions (read coordinates, ascending)
    ``mismatch_positions[mismatch_offsets[i]:mismatch_offsets[i+1]]``.
    An N in the read is one of its mismatches.
    """

    codes: np.ndarray
    offsets: np.ndarray
    quals: np.ndarray
    contig_names: tuple[str, ...]
    contig: np.ndarray
    pos: np.ndarray
    strand: np.ndarray
    mismatches: np.ndarray
    mismatch_offsets: np.ndarray
    mismatch_positions: np.ndarray

    def __len__(self) -> int:
        return self.offsets.size - 1

    def __repr__(self) -> str:
        return (f"SimulatedReads(reads={len(self)}, bases={self.codes.size}, "
                f"random={int((self.contig < 0).sum())})")

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def name(self, i: int) -> str:
        """Name of read ``i``: ``r`` and its 1-based number, zero-padded."""
        return f"r{i + 1:0{len(str(len(self)))}d}"

    def sequence(self, i: int) -> str:
        return decode_dna(self.codes[self.offsets[i] : self.offsets[i + 1]])

    def quality(self, i: int) -> str:
        return self.quals[self.offsets[i] : self.offsets[i + 1]].tobytes().decode("ascii")

    def origin(self, i: int) -> ReadOrigin:
        """Truth of read ``i`` as a :class:`ReadOrigin`."""
        c = int(self.contig[i])
        if c < 0:
            return ReadOrigin(self.name(i), None, None, None, None, ())
        lo, hi = self.mismatch_offsets[i], self.mismatch_offsets[i + 1]
        return ReadOrigin(
            self.name(i),
            self.contig_names[c],
            int(self.pos[i]),
            "+" if self.strand[i] > 0 else "-",
            int(self.mismatches[i]),
            tuple(int(p) for p in self.mismatch_positions[lo:hi]),
        )

    def records(self) -> Iterator[tuple[str, str, str]]:
        """``(name, sequence, quality)`` triples, for :func:`gseek.seqio.write_fastq`."""
        seq = decode_dna(self.codes)
        qual = self.quals.tobytes().decode("ascii")
        o = self.offsets.tolist()
        for i in range(len(self)):
            yield self.name(i), seq[o[i] : o[i + 1]], qual[o[i] : o[i + 1]]

    def truth_lines(self) -> Iterator[str]:
        """Lines of the truth TSV (without the header), newline-terminated."""
        contig, pos, strand = self.contig.tolist(), self.pos.tolist(), self.strand.tolist()
        mism, mo, mp = self.mismatches.tolist(), self.mismatch_offsets.tolist(), self.mismatch_positions.tolist()
        for i in range(len(self)):
            if contig[i] < 0:
                yield f"{self.name(i)}\t*\t*\t*\t*\t*\n"
                continue
            where = ",".join(map(str, mp[mo[i] : mo[i + 1]])) or NO_POSITIONS
            yield (f"{self.name(i)}\t{self.contig_names[contig[i]]}\t{pos[i]}\t"
                   f"{'+' if strand[i] > 0 else '-'}\t{mism[i]}\t{where}\n")

    def write(self, fastq: str | os.PathLike, truth: str | os.PathLike | None = None) -> tuple[Path, Path]:
        """Write the reads as FASTQ and the truth TSV (default: :func:`truth_path_for`).

        Both files are written under a temporary name and renamed when whole.
        """
        truth = truth_path_for(fastq) if truth is None else Path(truth)
        write_fastq(fastq, self.records())
        _write_tsv(truth, READ_TRUTH_HEADER, self.truth_lines())
        return Path(fastq), truth


def kmismatch_reads(
    genome_batch_or_path: SequenceBatch | str | os.PathLike,
    n: int,
    length: int | tuple[int, int],
    max_mismatches: int,
    seed: int,
    *,
    both_strands: bool = True,
    n_rate: float = 0.0,
    random_fraction: float = 0.0,
    min_mismatches: int = 0,
) -> SimulatedReads:
    """Simulate reads with exactly planted mismatches, for k-mismatch mapping.

    Arguments:
        genome_batch_or_path: the reference, a DNA :class:`~gseek.SequenceBatch`
            or a FASTA path.
        n: number of reads.
        length: read length, or an inclusive ``(lo, hi)`` range drawn per read.
        max_mismatches, min_mismatches: each placed read gets ``m`` mismatches,
            ``m`` uniform in ``min_mismatches..max_mismatches``, at distinct
            positions; a substituted base always differs from the reference.
        seed: seed of the PCG64 generator.
        both_strands: draw the strand uniformly (else every read is ``+``);
            a ``-`` read is the reverse complement of its window.
        n_rate: expected fraction of read bases that are N. The Ns are taken
            from the read's ``m`` mismatches (an N counts as a mismatch), so a
            read never exceeds ``max_mismatches`` and a read with ``m = 0``
            has no N.
        random_fraction: this fraction of the reads (rounded) are uniformly
            random ACGT, with truth ``*`` (unplaced).

    Each window lies inside one contig, uniformly over the valid starts, and
    holds no reference N (so the planted count is the true Hamming distance
    to the origin). Other placements within ``max_mismatches`` may exist.

    >>> from gseek.datasets import lambda_genome
    >>> reads = kmismatch_reads(lambda_genome(), 1000, (80, 120), 3, seed=1, min_mismatches=1)
    >>> int(reads.lengths.min()) >= 80 and int(reads.lengths.max()) <= 120
    True
    >>> sorted(set(reads.mismatches.tolist()))
    [1, 2, 3]
    """
    genome = _load_genome(genome_batch_or_path)
    lo, hi = _length_range(length)
    n = int(n)
    if n < 0:
        raise OptionError(f"n must be >= 0, got {n}")
    if not 0 <= min_mismatches <= max_mismatches:
        raise OptionError(f"need 0 <= min_mismatches <= max_mismatches, got {min_mismatches} and {max_mismatches}")
    if max_mismatches > lo:
        raise OptionError(f"max_mismatches {max_mismatches} > shortest read length {lo}")
    n_rate = _check_fraction(n_rate, "n_rate")
    random_fraction = _check_fraction(random_fraction, "random_fraction")
    rng = _rng(seed)

    # Every random draw is made for the whole set, in a fixed order.
    lengths = rng.integers(lo, hi + 1, size=n) if hi > lo else np.full(n, lo, dtype=np.int64)
    is_random = np.zeros(n, dtype=bool)
    is_random[rng.choice(n, size=int(round(n * random_fraction)), replace=False)] = True
    placed = np.flatnonzero(~is_random)
    plen = lengths[placed]
    gstart, contig = _sample_windows(genome, plen, rng, avoid_n=True)
    minus = rng.random(placed.size) < 0.5 if both_strands else np.zeros(placed.size, dtype=bool)
    m = rng.integers(min_mismatches, max_mismatches + 1, size=placed.size)
    where = _distinct_positions(plen, max_mismatches, rng)
    n_count = np.minimum(rng.binomial(plen, n_rate), m) if n_rate > 0 else np.zeros(placed.size, dtype=np.int64)
    shift = rng.integers(1, 4, size=where.shape)
    random_bases = rng.integers(0, 4, size=int(lengths[is_random].sum()), dtype=np.uint8)
    noise = rng.integers(-2, 3, size=int(lengths.sum()), dtype=np.int8)

    offsets = ragged.offsets(lengths)
    codes = np.empty(int(offsets[-1]), dtype=np.uint8)
    quals = np.empty_like(codes)

    # Per read: the first source base and the direction to walk (-1 = minus strand).
    read_minus = np.zeros(n, dtype=bool)
    read_minus[placed] = minus
    first = np.zeros(n, dtype=np.int64)
    first[placed] = gstart + np.where(minus, plen - 1, 0)
    rand_idx = np.flatnonzero(is_random)
    if rand_idx.size:
        first[rand_idx] = np.concatenate([[0], np.cumsum(lengths[rand_idx])[:-1]])
    walk = np.where(read_minus, -1, 1)
    orient = np.concatenate([np.arange(5, dtype=np.uint8), COMPLEMENT])  # [minus * 5 + code]

    # Qualities: the length's profile (see _quality_codes) + noise in -2..2, N = Q2.
    profiles = _quality_profiles(lo, hi)
    step = max(1, _CHUNK_BASES // hi)
    for a in range(0, n, step):
        b = min(n, a + step)
        L = lengths[a:b]
        lo_b, hi_b = offsets[a], offsets[b]
        within = np.arange(hi_b - lo_b) - np.repeat(offsets[a:b] - lo_b, L)
        src = np.repeat(first[a:b], L) + within * np.repeat(walk[a:b], L)
        if is_random[a:b].any():
            rrand = np.repeat(is_random[a:b], L)
            chunk = np.empty(within.size, dtype=np.uint8)
            chunk[rrand] = random_bases[src[rrand]]
            chunk[~rrand] = genome.codes[src[~rrand]]
        else:
            chunk = genome.codes[src]
        codes[lo_b:hi_b] = orient[np.repeat(read_minus[a:b].astype(np.uint8) * 5, L) + chunk]
        if profiles is None:
            q = _quality_codes(within, np.repeat(L, L))
        else:
            q = profiles[0][np.repeat(profiles[1][L - lo], L) + within]
        quals[lo_b:hi_b] = np.clip(q + noise[lo_b:hi_b], 2, 41) + 33

    # Plant the mismatches: the first n_count of the m drawn positions become N (Q2).
    cols = np.arange(max_mismatches)
    used = cols[None, :] < m[:, None]
    make_n = cols[None, :] < n_count[:, None]
    dest = offsets[placed][:, None] + where
    old = codes[dest]
    new = np.where(make_n, DNA_N, (old + shift) % 4).astype(np.uint8)
    codes[dest[used]] = new[used]
    quals[dest[make_n & used]] = 2 + 33

    counts = np.zeros(n, dtype=np.int64)
    counts[placed] = m
    mismatch_offsets = ragged.offsets(counts)
    sorted_where = np.sort(np.where(used, where, np.iinfo(np.int64).max), axis=1)
    mismatch_positions = sorted_where[used].astype(np.int32)  # the m used ones sort first

    full = lambda fill, dtype: np.full(n, fill, dtype=dtype)  # noqa: E731
    t_contig, t_pos, t_strand, t_mism = full(-1, np.int32), full(-1, np.int64), full(0, np.int8), full(-1, np.int32)
    t_contig[placed] = contig
    t_pos[placed] = gstart - genome.offsets[contig]
    t_strand[placed] = np.where(minus, -1, 1)
    t_mism[placed] = m
    return SimulatedReads(
        codes=codes,
        offsets=offsets,
        quals=quals,
        contig_names=tuple(genome.name_list()),
        contig=t_contig,
        pos=t_pos,
        strand=t_strand,
        mismatches=t_mism,
        mismatch_offsets=mismatch_offsets,
        mismatch_positions=mismatch_positions,
    )


def read_truth(path: str | os.PathLike) -> list[ReadOrigin]:
    """Read a read truth TSV (as written by :meth:`SimulatedReads.write`).

    >>> from gseek.datasets import lambda_truth
    >>> truth = read_truth(lambda_truth())
    >>> len(truth), truth[0].read
    (2000, 'r0001')
    """
    out = []
    with open(path, encoding="ascii") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        if tuple(header) != READ_TRUTH_HEADER:
            raise OptionError(f"{path}:1: not a read truth TSV: header {header!r}, expected {list(READ_TRUTH_HEADER)}")
        for line_no, line in enumerate(fh, start=2):
            f = line.rstrip("\n").split("\t")
            if len(f) != 6:
                raise OptionError(f"{path}:{line_no}: expected 6 tab-separated fields, found {len(f)}")
            if f[1] == UNPLACED:
                out.append(ReadOrigin(f[0], None, None, None, None, ()))
                continue
            positions = () if f[5] == NO_POSITIONS else tuple(int(p) for p in f[5].split(","))
            out.append(ReadOrigin(f[0], f[1], int(f[2]), f[3], int(f[4]), positions))
    return out


# --------------------------------------------------------------------- mutation


def mutate(
    codes: np.ndarray, rng: Generator, sub_rate: float, indel_rate: float, *, max_indel: int = _MAX_INDEL
) -> tuple[np.ndarray, int]:
    """Plant substitutions and small indels; return ``(new codes, edits)``.

    Each base is substituted (to a different base) with probability
    ``sub_rate``; ``Binomial(len, indel_rate)`` indel events of 1..``max_indel``
    bases, half insertions of random bases and half deletions, at uniform
    positions. ``edits`` counts substituted, inserted and deleted bases (an
    optimal alignment may need fewer).

    >>> from gseek.alphabet import encode_dna, decode_dna
    >>> rng = Generator(PCG64(3))
    >>> new, edits = mutate(encode_dna("ACGT" * 25), rng, 0.05, 0.01)
    >>> edits > 0 and decode_dna(new) != "ACGT" * 25
    True
    """
    codes = np.asarray(codes, dtype=np.uint8)
    size = codes.size
    sub = rng.random(size) < sub_rate
    shift = rng.integers(1, 4, size=int(sub.sum()), dtype=np.uint8)
    new = codes.copy()
    old = new[sub]
    new[sub] = np.where(old == DNA_N, shift, (old + shift) % 4)
    events = int(rng.binomial(size, indel_rate)) if size else 0
    at = rng.integers(0, size + 1, size=events)
    span = rng.integers(1, max_indel + 1, size=events)
    insertion = rng.random(events) < 0.5
    cover = np.zeros(size + 1, dtype=np.int64)
    np.add.at(cover, np.minimum(at[~insertion], size), 1)
    np.add.at(cover, np.minimum(at[~insertion] + span[~insertion], size), -1)
    keep = np.cumsum(cover[:size]) == 0
    ins_at = np.repeat(at[insertion], span[insertion])
    ins_bases = rng.integers(0, 4, size=ins_at.size, dtype=np.uint8)
    out = np.insert(new, ins_at, ins_bases)
    out_keep = np.insert(keep, ins_at, True)
    edits = int((sub & keep).sum()) + int(ins_at.size) + int(size - keep.sum())
    return out[out_keep], edits


# --------------------------------------------------------------------- BLAST queries


@dataclass(frozen=True, eq=False)
class SimulatedQueries:
    """BLAST queries (``records``: ``(name, sequence)``) and one truth row per query.

    ``truth`` rows follow :data:`QUERY_TRUTH_HEADER`: contig name, 0-based
    half-open ``start``/``end`` of the source slice on the forward strand,
    strand and divergence (planted edits / slice length), or ``*`` for a
    random negative query.
    """

    records: list[tuple[str, str]]
    truth: list[tuple[str, str, str, str, str, str]]

    def __len__(self) -> int:
        return len(self.records)

    def write(self, fasta: str | os.PathLike, truth: str | os.PathLike | None = None) -> tuple[Path, Path]:
        """Write the queries as FASTA and the truth TSV (default: :func:`truth_path_for`)."""
        truth = truth_path_for(fasta) if truth is None else Path(truth)
        write_fasta(fasta, self.records)
        _write_tsv(truth, QUERY_TRUTH_HEADER, ("\t".join(row) + "\n" for row in self.truth))
        return Path(fasta), truth


def blast_queries(
    db: SequenceBatch | str | os.PathLike,
    n: int,
    length: int | tuple[int, int],
    seed: int,
    *,
    sub_rate: float | tuple[float, float] = 0.05,
    indel_rate: float | tuple[float, float] = 0.005,
    negatives: float = 0.1,
    log_lengths: bool = False,
) -> SimulatedQueries:
    """Simulate BLASTN queries: mutated slices of database sequences plus random negatives.

    Arguments:
        db: the database, a DNA batch or a FASTA path.
        n: number of queries (positives and negatives together).
        length: query source length, or an inclusive ``(lo, hi)`` range.
        seed: seed of the PCG64 generator.
        sub_rate, indel_rate: per-base rates handed to :func:`mutate`; a
            ``(lo, hi)`` pair (both given as pairs) draws one point ``u`` uniform
            in [0, 1) per query and uses ``lo + u (hi - lo)`` of each, so a
            query's indel rate keeps its ratio to its substitution rate.
        negatives: fraction of the ``n`` queries (rounded) that are uniformly
            random sequences, expected to have no significant hit.
        log_lengths: lengths log-uniform over the range (the at-scale workload
            of many short and a few very long queries) instead of uniform.

    A slice lies inside one contig, on either strand (``-`` = reverse
    complement), uniformly over the valid starts. :data:`BLAST_QUERY_PRESETS`
    holds the benchmark sets (100 x 500 bp, 100 x 10 kb, 10 x 100 kb).

    >>> from gseek.datasets import lambda_genome
    >>> q = blast_queries(lambda_genome(), *BLAST_QUERY_PRESETS["500bp"], seed=2)
    >>> len(q), q.truth[0][0], sum(row[1] == "*" for row in q.truth)
    (100, 'q001', 10)
    """
    genome = _load_genome(db)
    lo, hi = _length_range(length)
    n = int(n)
    if n < 0:
        raise OptionError(f"n must be >= 0, got {n}")
    ranged = not isinstance(sub_rate, (int, float, np.number))
    if ranged != (not isinstance(indel_rate, (int, float, np.number))):
        raise OptionError("give sub_rate and indel_rate both as numbers or both as (lo, hi) pairs")
    if ranged:
        sub_lo, sub_hi = _rate_range(sub_rate, "sub_rate")
        indel_lo, indel_hi = _rate_range(indel_rate, "indel_rate")
    else:
        sub_rate = _check_fraction(sub_rate, "sub_rate")
        indel_rate = _check_fraction(indel_rate, "indel_rate")
    negatives = _check_fraction(negatives, "negatives")
    rng = _rng(seed)
    if hi == lo:
        lengths = np.full(n, lo, dtype=np.int64)
    elif log_lengths:
        lengths = np.minimum(np.exp(rng.uniform(np.log(lo), np.log(hi + 1), size=n)).astype(np.int64), hi)
    else:
        lengths = rng.integers(lo, hi + 1, size=n)
    is_negative = np.zeros(n, dtype=bool)
    is_negative[rng.choice(n, size=int(round(n * negatives)), replace=False)] = True
    if ranged:  # drawn after the draws of a fixed-rate set, which therefore stays as it was
        u = rng.random(n)
        sub_rates, indel_rates = sub_lo + u * (sub_hi - sub_lo), indel_lo + u * (indel_hi - indel_lo)
    else:
        sub_rates, indel_rates = np.full(n, sub_rate), np.full(n, indel_rate)
    placed = np.flatnonzero(~is_negative)
    gstart, contig = _sample_windows(genome, lengths[placed], rng, avoid_n=False)
    minus = rng.random(placed.size) < 0.5
    names = genome.name_list()
    width = len(str(n))
    records, truth = [], []
    k = 0
    for i in range(n):
        name = f"q{i + 1:0{width}d}"
        L = int(lengths[i])
        if is_negative[i]:
            records.append((name, decode_dna(rng.integers(0, 4, size=L, dtype=np.uint8))))
            truth.append((name, "*", "*", "*", "*", "*"))
            continue
        g, c = int(gstart[k]), int(contig[k])
        window = genome.codes[g : g + L]
        if minus[k]:
            window = COMPLEMENT[window[::-1]]
        seq, edits = mutate(window, rng, float(sub_rates[i]), float(indel_rates[i]))
        start = g - int(genome.offsets[c])
        records.append((name, decode_dna(seq)))
        truth.append((name, names[c], str(start), str(start + L), "-" if minus[k] else "+", f"{edits / L:.4f}"))
        k += 1
    return SimulatedQueries(records, truth)


# --------------------------------------------------------------------- DP families


@dataclass(frozen=True, eq=False)
class SimulatedFamilies:
    """Sequence families for batched DP: ``records`` (member name, sequence),
    the ``ancestors`` they descend from, and truth rows (member, family,
    divergence) following :data:`FAMILY_TRUTH_HEADER`. ``edits[i]`` is the
    number of planted edits of member ``i``."""

    records: list[tuple[str, str]]
    ancestors: list[tuple[str, str]]
    truth: list[tuple[str, str, str]]
    edits: list[int]

    def __len__(self) -> int:
        return len(self.records)

    def write(self, fasta: str | os.PathLike, truth: str | os.PathLike | None = None) -> tuple[Path, Path]:
        """Write the members as FASTA and the truth TSV (default: :func:`truth_path_for`)."""
        truth = truth_path_for(fasta) if truth is None else Path(truth)
        write_fasta(fasta, self.records)
        _write_tsv(truth, FAMILY_TRUTH_HEADER, ("\t".join(row) + "\n" for row in self.truth))
        return Path(fasta), truth


def dp_families(
    n_families: int,
    members: int,
    length: int = 1500,
    *,
    seed: int,
    max_divergence: float = 0.15,
) -> SimulatedFamilies:
    """Simulate 16S-like families: members mutated from a random ancestor.

    Arguments:
        n_families: number of families, each with its own random ancestor of
            ``length`` bases.
        members: members per family, each drawn independently from the
            ancestor (a star tree).
        length: ancestor length (16S rRNA genes are about 1.5 kb).
        seed: seed of the PCG64 generator.
        max_divergence: a member's target divergence is uniform in
            ``[0, max_divergence]``, planted as 90% substitutions and 10%
            indel bases (:func:`mutate`); the realised divergence
            (edits / ancestor length) never exceeds ``max_divergence``.

    >>> fam = dp_families(2, 3, 200, seed=5)
    >>> [row[:2] for row in fam.truth[:4]]
    [('fam1_m1', 'fam1'), ('fam1_m2', 'fam1'), ('fam1_m3', 'fam1'), ('fam2_m1', 'fam2')]
    >>> all(0.0 <= float(row[2]) <= 0.15 for row in fam.truth)
    True
    """
    n_families, members, length = int(n_families), int(members), int(length)
    if n_families < 0 or members < 0 or length < 1:
        raise OptionError(f"need n_families >= 0, members >= 0, length >= 1; got {n_families}, {members}, {length}")
    max_divergence = float(max_divergence)
    if not 0.0 <= max_divergence < 1.0:
        raise OptionError(f"max_divergence must be in [0, 1), got {max_divergence}")
    rng = _rng(seed)
    fw, mw = len(str(n_families)), len(str(members))
    records, ancestors, truth, edits = [], [], [], []
    mean_indel = (1 + _MAX_INDEL) / 2
    for f in range(n_families):
        family = f"fam{f + 1:0{fw}d}"
        ancestor = rng.integers(0, 4, size=length, dtype=np.uint8)
        ancestors.append((family, decode_dna(ancestor)))
        for j in range(members):
            name = f"{family}_m{j + 1:0{mw}d}"
            while True:
                target = rng.uniform(0.0, max_divergence)
                seq, e = mutate(ancestor, rng, 0.9 * target, 0.1 * target / mean_indel)
                if e <= math.floor(max_divergence * length):
                    break
            records.append((name, decode_dna(seq)))
            truth.append((name, family, f"{e / length:.4f}"))
            edits.append(e)
    return SimulatedFamilies(records, ancestors, truth, edits)


#: Columns of a pair truth TSV: per mate its 0-based leftmost base, strand and
#: planted mismatches (a random mate: -1, 0, -1), and the fragment length.
PAIR_TRUTH_HEADER = ("pair", "contig", "pos1", "strand1", "mismatches1", "pos2", "strand2", "mismatches2",
                     "fragment")


@dataclass(frozen=True, eq=False)
class SimulatedPairs:
    """Simulated paired-end reads (``mate1[i]``, ``mate2[i]`` as text) and their truth rows
    (:data:`PAIR_TRUTH_HEADER`, one tuple per pair)."""

    mate1: list[str]
    mate2: list[str]
    truth: list[tuple]

    def write(self, path1: str | os.PathLike, path2: str | os.PathLike, *, interleaved: str | os.PathLike | None = None,
              suffixes: bool = True) -> Path:
        """FASTQ of mate 1 and mate 2 (names ``pN/1``, ``pN/2`` with ``suffixes``;
        quality ``I``), optionally one interleaved file too; the truth TSV
        beside ``path1`` (:func:`truth_path_for`), returned."""
        tags = ("/1", "/2") if suffixes else ("", "")
        recs = [[(f"p{i}{tags[m]}", seq, "I" * len(seq)) for i, seq in enumerate(mates)]
                for m, mates in enumerate((self.mate1, self.mate2))]
        write_fastq(path1, recs[0])
        write_fastq(path2, recs[1])
        if interleaved is not None:
            write_fastq(interleaved, [r for pair in zip(*recs) for r in pair])
        return _write_tsv(truth_path_for(path1), PAIR_TRUTH_HEADER,
                          ("\t".join(map(str, row)) + "\n" for row in self.truth))


def kmismatch_pairs(
    genome_batch_or_path: SequenceBatch | str | os.PathLike,
    n: int,
    length: int,
    fragment: tuple[int, int],
    max_mismatches: int,
    seed: int,
    *,
    random_fraction: float = 0.0,
) -> SimulatedPairs:
    """Simulate ``--fr`` paired-end reads with planted mismatches, for paired k-mismatch mapping.

    Each pair is a fragment of a length uniform in ``fragment`` (inclusive,
    at least ``length``), from either strand of a contig (drawn by length;
    windows holding an N are drawn again): mate 1 is the fragment's first
    ``length`` bases, mate 2 the reverse complement of its last ``length``.
    Each mate gets ``0..max_mismatches`` substitutions (uniform, distinct
    positions, always a different base). With ``random_fraction``, that
    fraction of pairs has a random mate 2 (truth ``-1``).

    >>> from gseek.datasets import lambda_genome
    >>> sim = kmismatch_pairs(lambda_genome(), 3, 30, (60, 90), 1, seed=1)
    >>> len(sim.mate1), len(sim.mate2[0]), sim.truth[0][0]
    (3, 30, 'p0')
    """
    genome = _load_genome(genome_batch_or_path)
    rng = _rng(seed)
    lo, hi = fragment
    if not 1 <= length <= lo <= hi:
        raise OptionError(f"need 1 <= length <= fragment lengths, not length {length}, fragment {fragment}")
    sizes = genome.lengths
    weights = np.maximum(sizes - hi, 0).astype(np.float64)
    if weights.sum() == 0:
        raise OptionError(f"{genome.path}: no contig is longer than the longest fragment ({hi})")
    weights /= weights.sum()
    letters = np.frombuffer(b"ACGTN", dtype=np.uint8)
    mate1, mate2, truth = [], [], []

    def mutate_mate(codes: np.ndarray) -> tuple[np.ndarray, int]:
        m = int(rng.integers(0, max_mismatches + 1))
        codes = codes.copy()
        for p in rng.choice(codes.size, size=m, replace=False):
            codes[p] = (codes[p] + int(rng.integers(1, 4))) % 4
        return codes, m

    for i in range(n):
        while True:
            c = int(rng.choice(sizes.size, p=weights))
            frag = int(rng.integers(lo, hi + 1))
            start = int(rng.integers(0, int(sizes[c]) - frag + 1))
            window = genome.codes_of(c)[start : start + frag]
            if not (window == DNA_N).any():
                break
        left, right = window[:length], COMPLEMENT[window[frag - length :]][::-1]
        if rng.random() < 0.5:  # fragment from the + strand: mate 1 forward at the left end
            (a, m1), (b, m2) = mutate_mate(left), mutate_mate(right)
            row = (f"p{i}", genome.name(c), start, "+", m1, start + frag - length, "-", m2, frag)
        else:  # from the - strand: mate 1 is the reverse complement of the right end
            (a, m1), (b, m2) = mutate_mate(right), mutate_mate(left)
            row = (f"p{i}", genome.name(c), start + frag - length, "-", m1, start, "+", m2, frag)
        if rng.random() < random_fraction:
            b = rng.integers(0, 4, size=length).astype(np.uint8)
            row = (*row[:5], -1, 0, -1, -1)
        mate1.append(letters[a].tobytes().decode())
        mate2.append(letters[b].tobytes().decode())
        truth.append(row)
    return SimulatedPairs(mate1, mate2, truth)

"""Seeded simulators with exact truth: k-mismatch reads and pairs here; BLAST queries and DP families
(:mod:`gseek.datasets.simulate_seqs`, names here too).

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

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from gseek import ragged
from gseek.alphabet import COMPLEMENT, DNA_N, decode_dna
from gseek.errors import OptionError
from gseek.seqio import SequenceBatch, write_fastq

from ._sim import (  # noqa: F401 - the truth headers and _MAX_INDEL are this module's names too
    _CHUNK_BASES, _MAX_INDEL, BLAST_QUERY_PRESETS, FAMILY_TRUTH_HEADER, NO_POSITIONS, QUERY_TRUTH_HEADER,
    READ_TRUTH_HEADER, UNPLACED, _check_fraction, _distinct_positions, _length_range, _load_genome, _quality_codes,
    _quality_profiles, _rng, _sample_windows, _write_tsv, truth_path_for)
from .simulate_seqs import SimulatedFamilies, SimulatedQueries, blast_queries, dp_families, mutate

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

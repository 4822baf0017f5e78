"""Seeded simulators with exact truth of whole sequences: BLAST queries (:func:`blast_queries`: pieces of a
genome mutated to a divergence, and random ones) and DP families (:func:`dp_families`), over :func:`mutate`;
the reads are :mod:`gseek.datasets.simulate`'s."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.random import Generator

from gseek.alphabet import COMPLEMENT, DNA_N, decode_dna
from gseek.errors import OptionError
from gseek.seqio import SequenceBatch, write_fasta

from numpy.random import PCG64  # noqa: F401 - the doctests' names

from ._sim import BLAST_QUERY_PRESETS, FAMILY_TRUTH_HEADER, QUERY_TRUTH_HEADER, _MAX_INDEL, _check_fraction, _length_range, _load_genome, _rate_range, _rng, _sample_windows, _write_tsv, truth_path_for

__all__ = ["mutate", "SimulatedQueries", "blast_queries", "SimulatedFamilies", "dp_families"]


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


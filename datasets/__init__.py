"""Test and benchmark data: embedded lambda data, seeded simulators with exact truth, recipes.

* Embedded (shipped in the wheel, ``datasets/data``): the lambda phage genome
  (NC_001416.1, 48,502 bp, from Debian's bowtie2-examples) and 2,000 simulated
  100 bp reads with their truth. ``data/README.md`` gives the provenance and the
  command that made each file.
* Simulators (:mod:`gseek.datasets.simulate`): k-mismatch reads, BLASTN queries
  and DP sequence families, seeded, with the planted truth as TSV.
* Recipes (:mod:`gseek.datasets.recipes`): real benchmark genomes assembled from
  Debian example packages (``ecoli``, ``bacteria75``, ``pangenome``).

Command line: ``python -m gseek.datasets reads|blast-queries|dp-families|recipe``.

>>> from gseek.seqio import read_fastx
>>> genome = read_fastx(lambda_genome())
>>> genome.name(0), int(genome.lengths[0])
('gi|9626243|ref|NC_001416.1|', 48502)
>>> len(read_fastx(lambda_reads())), lambda_truth().name
(2000, 'lambda_reads.truth.tsv')
"""

from __future__ import annotations

import atexit
import contextlib
from importlib.resources import as_file, files
from pathlib import Path

from .simulate import (
    BLAST_QUERY_PRESETS,
    FAMILY_TRUTH_HEADER,
    QUERY_TRUTH_HEADER,
    READ_TRUTH_HEADER,
    ReadOrigin,
    SimulatedFamilies,
    SimulatedQueries,
    SimulatedReads,
    blast_queries,
    dp_families,
    kmismatch_reads,
    mutate,
    read_truth,
    truth_path_for,
)

__all__ = [
    "lambda_genome",
    "lambda_reads",
    "lambda_truth",
    "data_path",
    "kmismatch_reads",
    "blast_queries",
    "dp_families",
    "mutate",
    "read_truth",
    "truth_path_for",
    "ReadOrigin",
    "SimulatedReads",
    "SimulatedQueries",
    "SimulatedFamilies",
    "BLAST_QUERY_PRESETS",
    "READ_TRUTH_HEADER",
    "QUERY_TRUTH_HEADER",
    "FAMILY_TRUTH_HEADER",
]

_files = contextlib.ExitStack()
atexit.register(_files.close)


def data_path(name: str) -> Path:
    """Path of an embedded data file (``datasets/data/<name>``) on the file system.

    >>> data_path("lambda_virus.fa").name
    'lambda_virus.fa'
    """
    resource = files(__name__) / "data" / name
    if not resource.is_file():
        raise FileNotFoundError(f"no embedded data file {name!r} in gseek.datasets")
    if isinstance(resource, Path):
        return resource
    # Installed inside a zip: extract once, kept until the interpreter exits.
    return _files.enter_context(as_file(resource))


def lambda_genome() -> Path:
    """The lambda phage genome, NC_001416.1 (48,502 bp, one record), as FASTA."""
    return data_path("lambda_virus.fa")


def lambda_reads() -> Path:
    """2,000 simulated 100 bp lambda reads (0-3 mismatches, both strands, some N, 2% random), FASTQ."""
    return data_path("lambda_reads.fq")


def lambda_truth() -> Path:
    """Truth TSV of :func:`lambda_reads` (see :data:`READ_TRUTH_HEADER`)."""
    return data_path("lambda_reads.truth.tsv")

"""``gseek index``: the FM-index and w-gram table of a reference."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from .app import STATE, cli, common, say


@cli.command()
@click.argument("reference", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "prefix", metavar="PREFIX",
              help="Write the index to PREFIX.gseek/ [REFERENCE without .fa/.fasta/.fna/.gz].")
@click.option("--sa-sample", type=click.IntRange(min=1), default=16, show_default=True,
              help="Keep the SA at text positions that are multiples of N (locate walks < N steps).")
@click.option("--wgram", type=click.IntRange(0, 15), default=None,
              help="w of the w-gram table that jumps the first w steps of backward search (0: none) "
                   "[the largest w with 4^w <= the reference's bases, at most 12: 7 for a 48.5 kb phage].")
@click.option("--parts", type=click.Choice(["all", "text"]), default="all", show_default=True,
              help="text: only the packed text and contig table, for the BLAST-style search (seconds; "
                   "no suffix array, read mapping refuses it).")
@common
def index(reference, prefix, sa_sample, wgram, parts) -> None:
    """Build the FM-index (BWT with interleaved Occ, sampled SA) and w-gram table of REFERENCE.

    The build runs on the CPU (the index is identical either way); --device
    applies to the searches that load it."""
    from ..index import Index
    from ..seqio.atomic import check_output

    started = time.perf_counter()
    out = _index_path(reference, prefix)
    check_output(out, [reference], folder=True)  # before the build: not the FASTA, nor holding it
    idx = Index.build(reference, sa_sample=sa_sample, wgram=wgram, threads=STATE.threads,
                      progress=not STATE.quiet and sys.stderr.isatty(), device="cpu", parts=parts)
    idx.save(out)
    say(idx.summary())
    say(f"[gseek] index {out} written in {time.perf_counter() - started:.2f} s")


def _index_path(reference: str, prefix: str | None) -> Path:
    """PREFIX.gseek, PREFIX defaulting to REFERENCE without its FASTA suffixes."""
    if prefix is None:
        prefix = str(reference)
        for suffix in (".gz", ".fa", ".fasta", ".fna", ".fas"):
            prefix = prefix.removesuffix(suffix)
    return Path(prefix if prefix.endswith(".gseek") else prefix + ".gseek")


"""``python -m gseek.datasets``: simulate reads, BLAST queries, DP families; build recipes.

Thin click commands over :mod:`gseek.datasets.simulate` and
:mod:`gseek.datasets.recipes`. Errors print one line and exit 1 (the
traceback only with ``--debug``).
"""

from __future__ import annotations

import sys

import click

from gseek.errors import GseekError

from . import recipes, simulate

PROG = "python -m gseek.datasets"


def _length(text: str) -> int | tuple[int, int]:
    """``100`` or an inclusive range ``50-150``."""
    try:
        if "-" in text:
            lo, hi = text.split("-", 1)
            return int(lo), int(hi)
        return int(text)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a length (100) or a range (50-150)") from None


class _Length(click.ParamType):
    name = "LEN|LO-HI"

    def convert(self, value, param, ctx):
        return value if isinstance(value, (int, tuple)) else _length(value)


LENGTH = _Length()
FRACTION = click.FloatRange(0.0, 1.0)


def _wrote(*paths) -> None:
    for path in paths:
        click.echo(str(path))


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
def cli(debug) -> None:
    """Test and benchmark data for gseek: seeded simulators with exact truth, and recipes
    that build real genomes from Debian example packages."""


@cli.command()
@click.argument("genome", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", required=True, help="FASTQ to write (.gz compresses).")
@click.option("--truth", default=None, help="Truth TSV [default: OUTPUT with .truth.tsv].")
@click.option("-n", "--reads", "n", type=click.IntRange(min=0), required=True, help="Number of reads.")
@click.option("-l", "--length", type=LENGTH, default="100", show_default=True, help="Read length or range LO-HI.")
@click.option("-k", "--mismatches", type=click.IntRange(min=0), default=3, show_default=True,
              help="Most mismatches planted per read.")
@click.option("--min-mismatches", type=click.IntRange(min=0), default=0, show_default=True,
              help="Fewest mismatches planted per read.")
@click.option("--seed", type=click.IntRange(min=0), required=True, help="Seed of the PCG64 generator.")
@click.option("--n-rate", type=FRACTION, default=0.0, show_default=True,
              help="Expected fraction of bases that are N (taken from the planted mismatches).")
@click.option("--random-fraction", type=FRACTION, default=0.0, show_default=True,
              help="Fraction of uniformly random (unplaced) reads.")
@click.option("--forward-only", is_flag=True, help="Every read from the + strand.")
def reads(genome, output, truth, n, length, mismatches, min_mismatches, seed, n_rate, random_fraction,
          forward_only) -> None:
    """Simulate k-mismatch reads from GENOME (FASTA); write FASTQ and the truth TSV."""
    simulated = simulate.kmismatch_reads(
        genome, n, length, mismatches, seed, both_strands=not forward_only, n_rate=n_rate,
        random_fraction=random_fraction, min_mismatches=min_mismatches,
    )
    _wrote(*simulated.write(output, truth))


@cli.command("blast-queries")
@click.argument("db", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", required=True, help="FASTA to write (.gz compresses).")
@click.option("--truth", default=None, help="Truth TSV [default: OUTPUT with .truth.tsv].")
@click.option("--preset", type=click.Choice(sorted(simulate.BLAST_QUERY_PRESETS)), default=None,
              help="Benchmark set: 500bp (100 x 500 bp), 10kb (100 x 10 kb), 100kb (10 x 100 kb).")
@click.option("-n", "--queries", "n", type=click.IntRange(min=0), default=None, help="Number of queries.")
@click.option("-l", "--length", type=LENGTH, default=None, help="Query length or range LO-HI.")
@click.option("--seed", type=click.IntRange(min=0), required=True, help="Seed of the PCG64 generator.")
@click.option("--sub-rate", type=FRACTION, default=0.05, show_default=True, help="Substitutions per base.")
@click.option("--indel-rate", type=FRACTION, default=0.005, show_default=True, help="Indel events per base.")
@click.option("--negatives", type=FRACTION, default=0.1, show_default=True,
              help="Fraction of queries that are random negatives.")
def blast_queries(db, output, truth, preset, n, length, seed, sub_rate, indel_rate, negatives) -> None:
    """Simulate BLASTN queries from DB (FASTA): mutated slices and random negatives."""
    if preset is not None:
        p_n, p_length = simulate.BLAST_QUERY_PRESETS[preset]
        n = p_n if n is None else n
        length = p_length if length is None else length
    if n is None or length is None:
        raise click.UsageError("give --preset, or both --queries and --length")
    simulated = simulate.blast_queries(db, n, length, seed, sub_rate=sub_rate, indel_rate=indel_rate,
                                       negatives=negatives)
    _wrote(*simulated.write(output, truth))


@cli.command("dp-families")
@click.option("-o", "--output", required=True, help="FASTA to write (.gz compresses).")
@click.option("--truth", default=None, help="Truth TSV [default: OUTPUT with .truth.tsv].")
@click.option("--families", type=click.IntRange(min=0), required=True, help="Number of families.")
@click.option("--members", type=click.IntRange(min=0), required=True, help="Members per family.")
@click.option("-l", "--length", type=click.IntRange(min=1), default=1500, show_default=True,
              help="Ancestor length.")
@click.option("--seed", type=click.IntRange(min=0), required=True, help="Seed of the PCG64 generator.")
@click.option("--max-divergence", type=click.FloatRange(0.0, 1.0, max_open=True), default=0.15,
              show_default=True, help="Largest divergence of a member from its ancestor.")
def dp_families(output, truth, families, members, length, seed, max_divergence) -> None:
    """Simulate 16S-like sequence families for batched DP; write FASTA and the truth TSV."""
    simulated = simulate.dp_families(families, members, length, seed=seed, max_divergence=max_divergence)
    _wrote(*simulated.write(output, truth))


@cli.command()
@click.argument("name", type=click.Choice(sorted(recipes.RECIPES)))
@click.option("--cache", default=None, help="Cache folder [default: $GSEEK_DATA_DIR or ~/.cache/gseek/datasets].")
@click.option("--debs", type=click.Path(exists=True, file_okay=False), default=None,
              help="Folder of already-downloaded .deb files (no download).")
@click.option("-o", "--output", default=None, help="Output FASTA [default: CACHE/NAME.fa].")
@click.option("--gzip", "compress", is_flag=True, help="Write NAME.fa.gz (when --output is not given).")
@click.option("--target-bases", type=click.IntRange(min=1), default=recipes.PANGENOME_BASES, show_default=True,
              help="pangenome: at least this many bases.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="pangenome: mutation seed.")
def recipe(name, cache, debs, output, compress, target_bases, seed) -> None:
    """Build the benchmark genome NAME from Debian example packages; print its path and size."""
    options = {"debs": debs, "out": output, "compress": compress}
    if name == "pangenome":
        options.update(target_bases=target_bases, seed=seed)
    path = recipes.build(name, cache, **options)
    info = recipes.manifest(path)
    click.echo(f"{path}\t{info['contigs']} contigs\t{info['bases']} bp")


def main(argv: list[str] | None = None) -> int:
    """Run the command line; print errors as one line; return the exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        cli.main(args=args, prog_name=PROG, standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.Abort:
        click.echo(f"{PROG}: interrupted", err=True)
        return 130
    except (GseekError, OSError, ValueError) as exc:
        if "--debug" in args:
            raise
        click.echo(f"{PROG}: error: {' '.join(str(exc).split())}", err=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

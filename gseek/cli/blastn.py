"""``gseek blastn`` and ``gseek makeblastdb``: BLAST+ 2.12's own command lines, read by
:mod:`gseek.cli.blast_plus` (imported when one of them runs: the other commands' start does not load
the BLAST package)."""

from __future__ import annotations

import click

from .app import cli


@cli.command(context_settings={"ignore_unknown_options": True}, add_help_option=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def blastn(ctx, args) -> None:
    """BLAST+ 2.12's blastn command line (-db -query -out -outfmt ..., -help), run by gseek (docs/blast.md)."""
    from .blast_plus import blastn_main

    ctx.exit(blastn_main(list(args)))


@cli.command(context_settings={"ignore_unknown_options": True}, add_help_option=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def makeblastdb(ctx, args) -> None:
    """BLAST+ 2.12's makeblastdb command line (-in -dbtype nucl -out ...): a gseek database (docs/blast.md)."""
    from .blast_plus import makeblastdb_main

    ctx.exit(makeblastdb_main(list(args)))

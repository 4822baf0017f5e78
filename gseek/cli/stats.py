"""``gseek stats``: a summary of FASTA/FASTQ files."""

from __future__ import annotations

import click

from .app import cli, common


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--protein", is_flag=True, help="Read protein sequences instead of DNA.")
@common
def stats(files, protein) -> None:
    """Summarise FASTA/FASTQ FILES (records, residues, lengths, N, soft-masked); runs on the CPU."""
    from ..seqio import FastxReader

    click.echo("file\tformat\trecords\tresidues\tmin_len\tmean_len\tmax_len\tN\tsoft_masked")
    for path in files:
        reader = FastxReader(path, alphabet="protein" if protein else "dna")
        records = residues = n_count = masked = 0
        lo, hi = None, 0
        for batch in reader:
            lengths = batch.lengths
            records += len(batch)
            residues += batch.total_length
            if len(batch):
                lo = int(lengths.min()) if lo is None else min(lo, int(lengths.min()))
                hi = max(hi, int(lengths.max()))
            if not protein:
                n_count += int((batch.codes == 4).sum())
            masked += int((batch.soft_mask[:, 1] - batch.soft_mask[:, 0]).sum())
        mean = residues / records if records else 0.0
        click.echo(f"{path}\t{reader.format or '-'}\t{records}\t{residues}\t{lo or 0}\t{mean:.1f}\t{hi}"
                   f"\t{n_count}\t{masked}")


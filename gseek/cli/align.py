"""``gseek align``: batched NW/SW/semiglobal alignment."""

from __future__ import annotations

import click

from .app import STATE, backend, cli, common, remove_stale_temporaries, say
from .options import align_value, cluster_client_for, cluster_threads, with_align_options, with_cluster_options
from .report import CountBar

@cli.command()
@click.option("-i", "--input", "seqs", metavar="FASTA", help="Sequences for --all-vs-all.")
@click.option("--all-vs-all", is_flag=True, help="Align every pair i < j of --input.")
@click.option("-q", "--query", metavar="FASTA", help="Query sequences.")
@click.option("-t", "--target", metavar="FASTA", help="Target sequences (all queries vs all targets).")
@click.option("--pairs", metavar="TSV", help="Only these 'query<TAB>target' name pairs.")
@with_align_options
@click.option("-o", "--output", metavar="TSV", help="Output table [stdout].")
@with_cluster_options
@common
def align(seqs, all_vs_all, query, target, pairs, align_options, output, cluster) -> None:
    """Batched NW/SW/semiglobal alignment with optional (lazy) trace-back."""
    if all_vs_all:
        if not seqs or query or target or pairs:
            raise click.UsageError("--all-vs-all takes -i FASTA (and no -q/-t/--pairs)")
    elif not (query and target) or seqs:
        raise click.UsageError("give -q FASTA -t FASTA (optionally --pairs TSV), or -i FASTA --all-vs-all")
    if pairs == "-":
        raise click.UsageError("--pairs takes the pair list's file name, not - (standard input); "
                               "bash: --pairs <(command)")
    value = align_value(align_options)
    remove_stale_temporaries(output)
    bar = CountBar("gseek align", " pairs")
    options = dict(device=backend() if cluster is None else STATE.device, threads=cluster_threads(cluster),
                   progress=bar.update, options=value)
    with cluster_client_for(cluster) as client, bar:
        if client is not None:
            options["client"] = client
        if all_vs_all:  # every pair i < j of one set
            from ..pipeline import align_pairs_files

            done = align_pairs_files(seqs, output, total=bar.set_total, **options)
        elif pairs:  # the pairs a list names
            from ..pipeline import align_pairs_files

            done = align_pairs_files(target, output, queries=query, pairs=pairs, total=bar.set_total, **options)
        else:  # every query against every target: the query file streams (a pipeline of one file)
            from ..pipeline import align_files

            done = align_files(target, query, output, **options)
    say(f"[gseek] align: {done['rows']:,} alignments on {done['device']}")


"""``gseek pipeline``: many query files through the threaded pipeline (or a Dask cluster)."""

from __future__ import annotations

import os

import click

from .app import STATE, backend, cli, command_line, common, given, gpu_list, say
from .options import (ALIGN_OPTIONS, BLAST_OPTIONS, MAP_OPTIONS, PAIR_OPTIONS, SAM_OPTIONS, blast_value,
                      align_value, cluster_client_for, cluster_threads, with_align_options, with_blast_options,
                      with_cluster_options, with_map_options, with_pair_options, with_sam_options)


@cli.command()
@click.option("--queries", "query_list", metavar="LIST", required=True,
              help="Text file: one query file per line, optional second column = output name.")
@click.option("--task", type=click.Choice(["map", "align", "megablast", "blastn", "blastn-short",
                                            "dc-megablast"]), default="map", show_default=True,
              help="map: k-mismatch read mapping (SAM); align: DP of every query against every target (TSV).")
@click.option("-x", "--index", "index_prefix", metavar="INDEX", help="map: index prefix built by `gseek index`.")
@click.option("-t", "--target", metavar="FASTA", help="align: the target sequences (every query against each).")
@click.option("--outdir", metavar="DIR", required=True, help="Output folder (with summary.tsv).")
@click.option("--gpus", metavar="0,1,...", callback=gpu_list,
              help="GPUs to use (map: one prelim worker each; align: two, on their own CUDA streams).")
@click.option("--split", type=click.Choice(["queries", "database"]), default="queries", show_default=True,
              help="megablast/blastn with --gpus or on a cluster: each GPU (worker) takes whole query jobs (queries), "
                   "or holds one shard of the database and searches every job (database); the same output either "
                   "way.")
@click.option("--resume", is_flag=True, help="Skip files whose outputs are complete.")
@with_map_options
@with_pair_options
@click.option("--interleaved", is_flag=True,
              help="map: each one-file query holds paired-end reads, mate 1 and mate 2 of each pair in turn "
                   "(a line 'R1 R2 [OUTPUT]' is a pair of mate files either way).")
@with_sam_options
@with_align_options
@with_blast_options(outfmt=False)
@click.option("--workers", type=click.IntRange(min=0), default=2, show_default=True,
              help="Finalize threads (SAM/TSV formatting) beside the device workers; 0: everything in one thread.")
@click.option("--job-mb", type=click.FloatRange(min=0, min_open=True), default=None,
              help="MiB of query input per job (big files are split, small ones combined) "
                   "[map: 64 on a GPU, 16 on the CPU; align: about 2^40 DP cells on a GPU, 2^32 on the CPU].")
@with_cluster_options
@common
def pipeline(query_list, task, index_prefix, target, outdir, gpus, split, resume, map_options, read_options,
             pair_options, interleaved, sam_options, align_options, blast_options, workers, job_mb, cluster) -> None:
    """Run a search over many query files with the threaded query/job/prelim/result pipeline."""
    if split == "database" and task in ("map", "align"):
        raise click.UsageError("--split database: for --task megablast|blastn|blastn-short|dc-megablast (with --gpus, "
                               "or on a cluster)")
    if gpus is not None and STATE.device == "cpu":
        raise click.UsageError("--gpus and --device cpu exclude each other")
    if gpus is not None and cluster is not None:
        raise click.UsageError("--gpus: on a cluster each worker uses its own GPU (`dask cuda worker`); "
                               "give no --gpus with --scheduler or --local-cluster")
    if task == "map":
        if index_prefix is None or target is not None:
            raise click.UsageError("--task map takes -x/--index INDEX (and no -t)")
        foreign = given(ALIGN_OPTIONS) + given(BLAST_OPTIONS[:-1])
        reference, options = index_prefix, dict(options=map_options, read_options=read_options,
                                                sam_options=sam_options, pair_options=pair_options)
        if interleaved:
            options["interleaved"] = True
    elif task in ("megablast", "blastn", "blastn-short", "dc-megablast"):
        if index_prefix is None or target is not None:
            raise click.UsageError(f"--task {task} takes -x/--index INDEX (and no -t)")
        foreign = [o for o in given(ALIGN_OPTIONS) if o != "--outfmt"] + given(
            MAP_OPTIONS + SAM_OPTIONS + PAIR_OPTIONS + ("interleaved",))
        blast, volume_size = blast_value(task, blast_options)
        reference = index_prefix
        options = dict(options=blast, outfmt=align_options["outfmt"] or "6", database=os.fspath(index_prefix))
        if volume_size is not None:
            options["volume_size"] = volume_size
        if split == "database":
            options["split"] = split
    else:
        if target is None or index_prefix is not None:
            raise click.UsageError("--task align takes -t/--target FASTA, the targets (and no -x)")
        foreign = given(MAP_OPTIONS + SAM_OPTIONS + PAIR_OPTIONS + ("interleaved",)) + given(BLAST_OPTIONS[:-1])
        reference, options = target, None
    if foreign:
        raise click.UsageError(f"{', '.join(foreign)}: not an option of --task {task}")
    if task == "align":
        options = dict(options=align_value(align_options))
    from ..pipeline import run_pipeline
    from ..pipeline.tasks import warm_host

    # Numba's set-up overlaps the device's and the index's (on a cluster, the workers map)
    warm = warm_host() if task == "map" and cluster is None else None
    try:
        with cluster_client_for(cluster) as client:
            device = STATE.device if client is not None else backend() if gpus is None else "auto"
            summary = run_pipeline(query_list, reference, outdir, task, gpus=gpus, device=device,
                                   threads=cluster_threads(cluster), resume=resume,
                                   progress=False if STATE.quiet else None, quiet=STATE.quiet, workers=workers,
                                   job_bytes=None if job_mb is None else max(1, int(job_mb * 2**20)),
                                   command=command_line(), client=client, **options)
    finally:
        if warm is not None:
            warm.join()
    say(f"[gseek] pipeline: {summary.count('ok')} ok, {summary.count('failed')} failed, "
         f"{summary.count('skipped')} skipped in {summary.seconds:.2f} s; {summary.path}")
    if summary.exit_status:
        raise click.exceptions.Exit(summary.exit_status)


"""``gseek search``: read mapping (``--task map``) and the BLAST-style search (``--task megablast|blastn``),
one function each."""

from __future__ import annotations

import os
import time

import click

from .app import STATE, backend, cli, command_line, common, given, gpu_list, remove_stale_temporaries, say
from .options import (BLAST_OPTIONS, MAP_OPTIONS, PAIR_OPTIONS, SAM_OPTIONS, blast_value, usage_errors, with_blast_options,
                      with_map_options, with_pair_options, with_sam_options)
from .report import CountBar, bowtie_summary


#: ``--device auto`` maps reads on the CPU when all of them come from regular files of less text than
#: this (gzip counted at 4x its size): a GPU's start-up (context, index upload, kernels) costs more than
#: such a job. On the H100 host (16 cores) 1M reads (~250 MB) took 2.14 s on the GPU and 2.39 s on its
#: CPU, 1,000 reads 1.7-1.8 s against 0.92 s (benchmarks/RESULTS.md); 16 MiB is ~64k reads of 100 bp.
AUTO_CPU_BELOW = 16 << 20


def _small_input(paths) -> int | None:
    """Bytes of text in ``paths`` when every one is a regular file and they hold less than
    :data:`AUTO_CPU_BELOW`; None otherwise (stdin, a pipe or FIFO, or more)."""
    import stat

    total = 0
    for path in paths:
        try:
            info = os.stat(path) if path and path != "-" else None
            if info is None or not stat.S_ISREG(info.st_mode):
                return None
            with open(path, "rb") as handle:
                total += info.st_size * (4 if handle.read(2) == b"\x1f\x8b" else 1)
        except OSError:
            return None  # the reader reports it, with the file's name
    return total if total < AUTO_CPU_BELOW else None


@cli.command()
@click.option("-x", "--index", "index_prefix", metavar="INDEX", help="Index prefix built by `gseek index`.")
@click.option("-q", "-U", "--query", "queries", metavar="FILE", multiple=True,
              help="Reads (FASTA/FASTQ, gzip ok, - for stdin) or BLAST queries; repeatable.")
@click.option("-1", "mate1", metavar="FILE", help="map: paired-end reads, mate 1 (FASTA/FASTQ, gzip ok); with -2.")
@click.option("-2", "mate2", metavar="FILE", help="map: paired-end reads, mate 2; with -1.")
@click.option("--interleaved", metavar="FILE", help="map: paired-end reads, mate 1 and mate 2 of each pair in turn.")
@click.option("--task", type=click.Choice(["map", "megablast", "blastn", "blastn-short",
                                            "dc-megablast"]), default="map", show_default=True,
              help="map: complete k-mismatch read mapping; megablast/blastn/blastn-short/dc-megablast: BLAST+'s "
                   "seed-and-extend tasks.")
@with_map_options
@with_pair_options
@with_blast_options
@with_sam_options
@click.option("-o", "--output", metavar="FILE",
              help="Output: map: FILE.sam, FILE.sam.gz (BGZF-compressed SAM), FILE.bam or FILE.cram (sorted and "
                   "indexed unless --no-sort) [SAM on stdout]; megablast/blastn: BLAST tabular text (.gz: gzip).")
@click.option("--gpus", metavar="0,1,...", callback=gpu_list,
              help="Search on these GPUs at once: each takes whole jobs (chunks of the input) in turn; the same "
                   "output as one device [the --device one].")
@click.option("--un", metavar="FILE", help="map: write the reads that failed to align to FILE, as given (gzip: .gz; "
                                            "pairs: FILE_1, FILE_2 as bowtie names them).")
@click.option("--al", metavar="FILE", help="map: write the reads that aligned to FILE, as given (gzip: .gz; pairs: "
                                            "aligned concordantly, FILE_1, FILE_2).")
@click.option("--server", metavar="URL", envvar="GSEEK_SERVER",
              help="Search on a `gseek serve` service (-x NAME: its database); the same output [$GSEEK_SERVER].")
@common
def search(index_prefix, queries, mate1, mate2, interleaved, task, map_options, read_options, pair_options,
           blast_options, sam_options, output, gpus, un, al, server) -> None:
    """Map reads (--task map, SOAP3-style complete k-mismatch; paired-end with
    -1/-2 or --interleaved) or search queries (--task megablast|blastn,
    G-BLASTN-style) against an index."""
    if server:
        request = {**map_options.changed(), **read_options.changed(),
                   **{k: v for k, v in sam_options.changed().items() if k in ("no_unal", "cigar_eq")}}
        search_on_server(server, index_prefix, queries, task, request, blast_options, output,
                         mate1 or mate2 or interleaved or gpus or un or al)
        return
    paired = mate1 is not None or mate2 is not None or interleaved is not None
    if gpus is not None and STATE.device == "cpu":
        raise click.UsageError("--gpus and --device cpu exclude each other")
    devices = None if gpus is None else [f"gpu:{g}" for g in gpus]
    on_gpu = _start_gpus(task, gpus)
    if task != "map":
        if un or al:
            raise click.UsageError(f"--un/--al: options of --task map, not of --task {task}")
        if paired or given(PAIR_OPTIONS):
            raise click.UsageError(f"paired-end reads (-1/-2, --interleaved, -I/-X/--fr/--rf/--ff): --task map only, "
                                   f"not --task {task}")
        blast_search(index_prefix, queries, task, blast_options, output, devices, warm=on_gpu)
    else:
        map_search(index_prefix, queries, mate1, mate2, interleaved, map_options, read_options, pair_options,
                   sam_options, output, devices, un, al)


def _start_gpus(task: str, gpus: list[int] | None) -> bool:
    """Begin the CUDA driver's set-up of the GPUs this search will run on, on a thread, beside the
    command's imports (:func:`gseek.gpu_start.start_driver`): those of ``--gpus``, else device 0 for
    ``--device gpu``, and for ``--device auto`` when the BLAST search may find one (CuPy installed and
    the driver's library here: :func:`~gseek.gpu_start.driver_found`); ``--device auto`` mapping may
    choose the CPU for a small input and starts nothing. True when it began some (the search will run
    on a GPU: the caller warms the host code beside it)."""
    if gpus is None and STATE.device != "gpu":
        if STATE.device != "auto" or task == "map":
            return False
        import importlib.util

        from ..gpu_start import driver_found

        if importlib.util.find_spec("cupy") is None or not driver_found():
            return False
    from ..gpu_start import start_driver

    start_driver(gpus if gpus is not None else [0])
    return True


def map_search(index_prefix, queries, mate1, mate2, interleaved, map_options, read_options, pair_options,
               sam_options, output, devices, un, al) -> None:
    """``gseek search --task map``: reads (or pairs) to SAM/BAM/CRAM, bowtie's summary on stderr."""
    paired = mate1 is not None or mate2 is not None or interleaved is not None
    foreign = given(BLAST_OPTIONS)
    if foreign:
        raise click.UsageError(f"{', '.join(foreign)}: these apply to --task megablast|blastn; --task map writes SAM/BAM")
    if not index_prefix:
        raise click.UsageError("--task map needs -x INDEX")
    if paired:
        if queries:
            raise click.UsageError("give -q FILE (unpaired reads) or -1/-2 / --interleaved (pairs), not both")
        if interleaved is not None and (mate1 is not None or mate2 is not None):
            raise click.UsageError("give -1 FILE -2 FILE or --interleaved FILE, not both")
        if interleaved is None and (mate1 is None or mate2 is None):
            raise click.UsageError("paired-end reads need both -1 FILE and -2 FILE")
        queries = (interleaved,) if interleaved is not None else (mate1,)
        pairs = dict(pair_options=pair_options, mate2=mate2, interleaved=interleaved is not None)
    else:
        foreign = given(PAIR_OPTIONS)
        if foreign:
            raise click.UsageError(f"{', '.join(foreign)}: options of paired-end reads (-1/-2 or --interleaved)")
        pairs = {}
    if not queries:
        raise click.UsageError("--task map needs -q FILE (or -1 FILE -2 FILE, or --interleaved FILE)")
    from ..pipeline import map_files
    from ..pipeline.tasks import warm_host

    for path in (output, un, al):
        remove_stale_temporaries(path)
    started = time.perf_counter()
    small = _small_input([*queries, mate2] if mate2 else queries) if STATE.device == "auto" and devices is None \
        else None
    device = None if devices is not None else backend("cpu" if small is not None else None)
    with CountBar("gseek search", " pairs" if paired else " reads") as bar:
        warm = warm_host()  # Numba's set-up overlaps the device's and the index's
        try:
            counts = map_files(index_prefix, list(queries), output or "-", device=device, devices=devices,
                               threads=STATE.threads, command=command_line(), un=un, al=al,
                               progress=bar.update if bar.shown else None, options=map_options,
                               read_options=read_options, sam_options=sam_options, **pairs)
        finally:
            warm.join()
    for line in bowtie_summary(counts["reads"], counts["mapped"], counts["alignments"],
                               paired=counts.get("paired", False)):
        say(line)
    why = "" if STATE.device != "auto" else \
        f" (auto: {small / (1 << 20):.1f} MiB of reads: the CPU answers before a GPU would have started)" \
        if small is not None else " (auto: a GPU was found)" if counts["device"].startswith("gpu") \
        else " (auto: no GPU found)"
    what = (f"{counts['reads']:,} pairs, {counts['mapped']:,} aligned concordantly, {counts['unmapped']:,} not "
            f"({counts['mates_aligned']:,} mates aligned; {counts['too_long']:,} mates too long, "
            f"{counts['too_short']:,} too short)" if counts.get("paired") else
            f"{counts['reads']:,} reads, {counts['mapped']:,} mapped, {counts['unmapped']:,} unmapped "
            f"({counts['too_long']:,} too long, {counts['too_short']:,} too short)")
    say(f"[gseek] {what}, {counts['records']:,} records in {time.perf_counter() - started:.2f} s on "
         f"{counts['device']}{why}")


def search_on_server(server, index_prefix, queries, task, map_request, blast_options, output, local_only) -> None:
    """``gseek search --server URL``: the request made here, the search there (``gseek.serve.client``)."""
    from ..serve.client import ServerError
    from ..serve.client import search_on_server as ask

    foreign = given(SAM_OPTIONS + PAIR_OPTIONS + (BLAST_OPTIONS if task == "map" else MAP_OPTIONS))
    if foreign or local_only:
        raise click.UsageError(f"{', '.join(foreign) or '-1/-2, --interleaved, --gpus, --un, --al'}: not with --server "
                               f"(--task {task})")
    try:
        ask(server, index_prefix, queries, task, map_request, blast_options, output, command_line(), say=say)
    except ServerError as exc:
        if exc.kind == "usage":
            raise click.UsageError(str(exc)) from None
        raise


def blast_search(index_prefix, queries, task, blast_options, output, devices=None, warm=False) -> None:
    """``gseek search --task megablast|blastn`` (``warm``: a GPU search, whose reader's Numba code is loaded
    on a thread beside the device's set-up; a CPU search's start has nothing to overlap it with)."""
    foreign = given(MAP_OPTIONS + SAM_OPTIONS)
    if foreign:
        raise click.UsageError(f"{', '.join(foreign)}: options of --task map, not of --task {task}")
    if not index_prefix:
        raise click.UsageError(f"--task {task} needs -x INDEX (a `gseek index` directory)")
    if not queries:
        raise click.UsageError(f"--task {task} needs -q FILE (FASTA queries)")
    from ..pipeline import blast_files
    from ..pipeline.tasks import warm_host

    warm = warm_host("blast") if warm else None
    try:
        options, volume_size = blast_value(task, blast_options)
        outfmt = blast_options["outfmt"] or "6"
        with usage_errors():
            from ..blast.report import parse_outfmt

            parse_outfmt(outfmt)
        remove_stale_temporaries(output)
        started = time.perf_counter()
        counts = blast_files(index_prefix, list(queries), output or "-", options=options, outfmt=outfmt,
                             device=backend() if devices is None else None, devices=devices, threads=STATE.threads,
                             database=os.fspath(index_prefix), command=command_line(),
                             **({} if volume_size is None else {"volume_size": volume_size}))
    finally:
        if warm is not None:
            warm.join()
    why = "" if STATE.device != "auto" else " (auto: a GPU was found)" if counts["device"].startswith("gpu") \
        else " (auto: no GPU found)"
    say(f"[gseek] {task}: {counts['queries']:,} queries, {counts['with_hits']:,} with hits, {counts['hsps']:,} HSPs "
         f"in {time.perf_counter() - started:.2f} s on {counts['device']}{why}")


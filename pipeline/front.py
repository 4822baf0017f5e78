"""The front doors of the jobs, one function each, through one runner: :func:`map_files` and
:func:`map_reads` (read mapping, ``gseek search --task map``), :func:`blast_files` (the BLAST-style
search, ``gseek search --task megablast|blastn``), :func:`align_files` and :func:`align_pairs_files`
(the DP, ``gseek align``).

Each checks its outputs before anything is loaded, takes the job's options as one value
(:mod:`gseek.options`, :class:`~gseek.blast.options.BlastOptions`,
:class:`~gseek.align.options.AlignOptions`) or as the loose keywords of its fields (made into the
value once, at the door), builds the task (:mod:`gseek.pipeline.tasks`) and runs it over one query
(a pipeline of one) with :func:`run_one`: the same ``workers``, ``bounds``, ``progress`` and
``client`` (a Dask cluster) arguments for every job.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gseek.backend import Backend
from gseek.blast.database import resolve_database
from gseek.blast.options import BlastOptions
from gseek.errors import OptionError
from gseek.index import Index
from gseek.index.format import resolve as resolve_index
from gseek.seqio.atomic import check_output, descriptor_of, is_special

from .engine import FileResult, Progress, QueryFile, QueueBounds

if TYPE_CHECKING:
    from gseek.options import MapOptions, PairOptions, ReadOptions, SamOptions

# Each front door imports its own task (and the SAM writers, the DP, the cluster only where used): a BLAST
# search loads no mapper (docs/startup.md, "What a BLAST command imports").

__all__ = ["map_files", "map_reads", "blast_files", "align_files", "align_pairs_files", "run_one"]


class _Count(Progress):
    """``report(records * factor)`` as each chunk is written (the engine's writer-side hook): reads
    (pairs), queries, or pairs aligned (:attr:`AlignTask.progress_factor` a query record)."""

    def __init__(self, report: Any, factor: int = 1) -> None:
        self.report, self.factor = report, factor

    def update(self, query: QueryFile, counts: dict[str, int]) -> None:
        self.report(int(counts.get("records", 0)) * self.factor)


#: The options of a task that name files: absolute on a cluster (the same path on every node).
_PATH_OPTIONS = ("queries", "pairs")


def _cluster_task(spec: Any) -> Any:
    """``spec`` with the files it names as absolute paths."""
    options = dict(spec.options)
    for key in _PATH_OPTIONS:
        if options.get(key) is not None:
            options[key] = os.path.abspath(options[key])
    sam = options.get("sam_options")
    if sam is not None and sam.reference is not None:
        options["sam_options"] = sam.replace(reference=os.path.abspath(sam.reference))
    return dataclasses.replace(spec, source=os.path.abspath(spec.source), options=tuple(sorted(options.items())))


def run_one(task: Any, query: QueryFile, *, workers: int = 2, bounds: QueueBounds | None = None,
            job_bytes: int | None = None, progress: Any = None, client: Any = None, device: Any = None,
            threads: int | None = None) -> FileResult:
    """Run ``task`` over one query (a pipeline of one), here or with its jobs on ``client``'s
    cluster (the task built here reads the jobs and writes the output; each worker builds its own
    from the task's spec: ``device`` and ``threads`` are the workers'); raise its error.
    ``progress(n)`` as chunks are written (reads, queries or pairs)."""
    options: dict[str, Any] = dict(workers=workers, bounds=bounds, job_bytes=job_bytes)
    if progress is not None:
        options["progress"] = _Count(progress, getattr(task, "progress_factor", 1))
    if client is None:
        dispatcher = task.dispatcher(**options)
    else:
        from .cluster import cluster_spec
        from .cluster_jobs import remote_dispatcher

        if task.spec is None:
            raise OptionError("a cluster run needs a saved index: give its path (Index.save)")
        options["workers"] = max(1, workers)  # the client's finalize only passes the workers' chunks on
        dispatcher = remote_dispatcher(client, task, cluster_spec(_cluster_task(task.spec), device=device,
                                                                  threads=threads), **options)
    result, = dispatcher.run([query])
    if result.error is not None:
        raise result.error
    return result


def _device_line(task: Any, client: Any) -> str:
    """Where the job ran: the backends (each once), or the cluster."""
    if client is not None:
        from .cluster import describe_cluster

        return describe_cluster(client)
    backends = [m.backend for m in getattr(task, "mappers", [])] or \
        [a.backend for a in getattr(task, "aligners", [])] or [s.backend for s in task.searchers]
    return ", ".join(dict.fromkeys(b.describe() for b in backends))


# --------------------------------------------------------------------- read mapping


def map_files(
    index: Index | str | os.PathLike,
    reads: str | os.PathLike | list[str | os.PathLike],
    output: str | os.PathLike,
    *,
    options: MapOptions | None = None,
    read_options: ReadOptions | None = None,
    sam_options: SamOptions | None = None,
    pair_options: PairOptions | None = None,
    mate2: str | os.PathLike | None = None,
    interleaved: bool = False,
    un: str | os.PathLike | None = None,
    al: str | os.PathLike | None = None,
    command: str = "gseek",
    device: str | Backend | None = None,
    devices: Sequence[str | Backend] | None = None,
    threads: int | None = None,
    chunk_bytes: int | None = None,
    workers: int = 2,
    bounds: QueueBounds | None = None,
    progress: Any = None,
    client: Any = None,
    **keywords: Any,
) -> dict[str, int]:
    """Map FASTA/FASTQ file(s) to SAM/BAM through the pipeline engine, with ``workers`` finalize threads.

    :func:`map_reads` is this with ``workers=0``: same arguments, output and
    counts. Several read files go to one output, in order. Bad input raises
    (as ``map_reads``) instead of being recorded. ``workers`` finalize
    threads format SAM while the device maps the next batch (0: no threads).
    The output is checked before anything is loaded
    (:func:`~gseek.seqio.atomic.check_output`: not a read file, not inside
    the index, a folder that takes it; :func:`~gseek.output.sam.sam_format`).

    The options come as values (:mod:`gseek.options`): ``options`` (a
    :class:`~gseek.options.MapOptions`: what to report), ``read_options``
    (:class:`~gseek.options.ReadOptions`), ``sam_options``
    (:class:`~gseek.options.SamOptions`) and ``pair_options``
    (:class:`~gseek.options.PairOptions`), or as the loose keywords of their
    fields (below), made into the values once here (:func:`map_values`).

    Arguments:
        index: an :class:`~gseek.index.Index`, or the path of a saved one
            (loaded here; its SHA-256 check runs beside the mapping and is
            waited for before the output is renamed into place).
        reads: a FASTA/FASTQ file (gzip ok, ``-`` for stdin) or a list of them.
        output: the SAM file (``*.sam``), BGZF-compressed SAM (``*.sam.gz``),
            BAM (``*.bam``), CRAM (``*.cram``), ``-`` for SAM on stdout; written
            under a temporary name and renamed when complete.
        mismatches: ``k``, as :class:`~gseek.mapper.Mapper`.
        command: SAM ``@PG CL``.
        threads: CPU threads of a backend built here (and of its SAM
            formatting), and of parsing.
        no_unal: write no record for unmapped reads.
        cigar_eq: ``=``/``X`` CIGAR operations instead of ``M``.
        phred64: FASTQ qualities are Phred+64 (``'@'``..``'~'``), converted
            to Phred+33 as read; a quality below ``'@'`` is an error at its
            line. Without it, qualities are Phred+33 (``'!'``..``'~'``) and a
            file whose first batch looks Phred+64 gives a
            :class:`~gseek.errors.GseekWarning`.
        trim5, trim3: bases (and qualities) trimmed from the 5' / 3' end of
            each read before mapping; SAM holds the trimmed read (bowtie's
            ``--trim5``/``--trim3``).
        skip: the first ``skip`` reads (of all ``reads`` files, in order)
            are neither mapped nor written (bowtie's ``--skip``).
        upto: map at most this many reads after the skipped ones; the rest
            of the input is not read (bowtie's ``--upto``).
        un, al: write the reads that failed to align / aligned (at least one
            placement reported) to this file, each record as the input gives
            it (FASTA or FASTQ text, untrimmed, original qualities); gzip for
            ``*.gz``; written under a temporary name, renamed when complete.
        read_group: the ``@RG`` line's fields (:func:`~gseek.output.sam.read_group`,
            ``ID`` first); every record gets ``RG:Z:ID``.
        sort: coordinate-sort and index a BAM or CRAM output (None: yes for
            such a file; :func:`~gseek.output.sam.check_sam_output`).
        compression_level: zlib level (0-9) of a BAM, CRAM or ``.sam.gz`` output, as samtools'
            ``-l`` (None: samtools' default, 6).
        reference: the FASTA a CRAM output is encoded against (required for ``*.cram``).
        mate2: paired-end reads: ``reads`` is the mate 1 file, this the mate 2
            file (bowtie's ``-1``/``-2``), read side by side; records per pair
            (``docs/sam.md``, paired-end reads).
        interleaved: paired-end reads: each file of ``reads`` holds mate 1 and
            mate 2 of each pair one after the other.
        minins, maxins, orientation: how mates pair (bowtie's ``-I``, ``-X``,
            ``--fr``/``--rf``/``--ff``; :class:`~gseek.mapper.pairs.PairOptions`).
        device: backend of the mapper (default: the index's; for a path: ``auto``).
        devices: one backend or device name per prelim worker, each with its
            own :class:`~gseek.mapper.Mapper` and index copy (overrides ``device``).
        chunk_bytes: read input per job (default 16 MiB, 64 MiB on a GPU).
        workers: finalize threads (0: every stage in the caller's thread).
        bounds: the engine's :class:`~gseek.pipeline.engine.QueueBounds`.
        progress: ``progress(reads)``, called (in the caller's thread) as each
            chunk's records are written with the number of reads (pairs, for
            paired-end reads) in it: what ``gseek search``'s progress bar shows.
        client: a ``distributed.Client``: each job (a batch of reads) is mapped
            and formatted on a worker, which loads the index once; the records
            are written here in the same order (``docs/cluster.md``); ``device``
            and ``threads`` are then the workers'.
        **keywords: the other :class:`~gseek.options.MapOptions` fields
            (``max_alignments``, ``report_all``, ``max_hits``, ``norc``,
            ``nofw``, ``xa_limit``, ``min_piece``).

    Returns counts: ``reads`` (mapped or tried: after ``skip``/``upto``),
    ``mapped``, ``unmapped`` (with ``too_long`` and ``too_short``: reads not
    searched), ``records`` (SAM records written), ``alignments`` (SAM records
    of placements), and ``device``, the backend that mapped
    (:meth:`~gseek.Backend.describe`).
    Paired-end reads: ``reads``, ``mapped``, ``unmapped`` and
    ``alignments`` count pairs (mapped: with a concordant pair reported;
    alignments: concordant pairs reported), ``too_long``/``too_short`` mates,
    and ``paired`` (True) and ``mates_aligned`` (mates with a placement) are added.

    >>> import os, tempfile
    >>> from gseek.datasets import lambda_genome, lambda_reads
    >>> idx = Index.build(lambda_genome(), wgram=8, device="cpu")
    >>> counts = map_files(idx, lambda_reads(), os.path.join(tempfile.mkdtemp(), "lambda.sam"), mismatches=2, workers=1)
    >>> {k: v for k, v in counts.items() if k != "device"}
    {'reads': 2000, 'mapped': 1459, 'unmapped': 541, 'too_long': 0, 'too_short': 0, 'records': 2000, 'alignments': 1459}
    >>> counts["device"].startswith("cpu (numba")
    True
    """
    from gseek.output.sam import check_sam_output, remove_made

    from .tasks.map import MapTask, map_values, mate_file_name

    files = [reads] if isinstance(reads, (str, os.PathLike)) else list(reads)
    if not files:
        raise OptionError("no read file given")
    opts, read, sam, pairs = map_values(options, read_options, sam_options, pair_options, **keywords)  # checked
    if mate2 is not None:
        if len(files) != 1 or interleaved:
            raise OptionError("paired-end reads: give one mate 1 file with mate2, and not interleaved")
        files.append(mate2)
    index_dir = index.path if isinstance(index, Index) else resolve_index(index)
    within = [] if index_dir is None else [index_dir]
    check_output(output, [*files, sam.reference], within=within)
    check_sam_output(output, sort=sam.sort, reference=sam.reference)
    named: dict[str, Any] = {"output": output, "un": un, "al": al}
    if mate2 is not None or interleaved:  # paired-end reads: one file of each mate (bowtie's names)
        named = {"output": output, **{f"{k}_{m}": None if v is None else mate_file_name(v, m)
                                      for k, v in (("un", un), ("al", al)) for m in (1, 2)}}
    for name, path in named.items():
        if path is not None and name != "output":
            check_output(path, files, within=within)
    _distinct_outputs({k: v for k, v in named.items() if v is not None})
    here = dict(device="cpu", threads=1, devices=None) if client is not None else \
        dict(device=device, threads=threads, devices=devices)
    task = MapTask(index, opts, read_options=read, sam_options=sam, pair_options=pairs, interleaved=interleaved,
                   un=un, al=al, command=command, **here)
    query = QueryFile(tuple(os.fspath(f) for f in files), os.fspath(output), paired=mate2 is not None)
    try:
        result = run_one(task, query, workers=workers, bounds=bounds, job_bytes=chunk_bytes or task.job_bytes,
                         progress=progress, client=client, device=device, threads=threads)
    except BaseException:
        remove_made(task.made_indexes)  # a failed CRAM run leaves nothing beside the user's FASTA
        raise
    c = result.counts
    counts = dict(reads=c.get("records", 0), mapped=c.get("mapped", 0),
                  unmapped=c.get("records", 0) - c.get("mapped", 0), too_long=c.get("too_long", 0),
                  too_short=c.get("too_short", 0), records=c.get("sam_records", 0), alignments=c.get("hits", 0),
                  device=_device_line(task, client))
    if mate2 is not None or interleaved:  # reads, mapped, unmapped, alignments count pairs (concordant)
        counts["paired"] = True
        counts["mates_aligned"] = c.get("mates_aligned", 0)
    return counts


def _distinct_outputs(outputs: dict[str, str | os.PathLike]) -> None:
    """Refuse two outputs of one run under one name (the same file, or both standard output)."""
    seen: dict[Any, str] = {}
    for name, path in outputs.items():
        p = os.fspath(path)
        if descriptor_of(p) == 1:
            key: Any = "-"
        elif is_special(p):
            continue  # /dev/null and the like take any number of writers
        else:
            key = os.path.realpath(p)
        if key in seen:
            raise OptionError(f"{p}: both the {seen[key]} and the {name} output")
        seen[key] = name


def map_reads(index: Index | str | os.PathLike, reads: str | os.PathLike | list[str | os.PathLike],
              output: str | os.PathLike, **options: Any) -> dict[str, int]:
    """Map FASTA/FASTQ file(s) (gzip ok, ``-`` for stdin) and write SAM, or BAM for ``*.bam``, ``-`` for stdout.

    :func:`map_files` with every stage in the caller's thread (``workers=0``):
    the same stages, output and counts as ``gseek search``. Several read files
    go to one output, in order, written under a temporary name and renamed
    when complete. Returns counts: ``reads``, ``mapped``, ``unmapped`` (with
    ``too_long`` and ``too_short``: reads not searched), ``records``,
    ``alignments``, ``device``.

    Arguments:
        index: an :class:`~gseek.index.Index` or the path of a saved one.
        reads: a FASTA/FASTQ file or a list of them.
        output: the SAM file (or ``*.sam.gz``, ``*.bam``, ``*.cram``), ``-`` for stdout.
        **options: those of :func:`map_files` but ``workers`` (the options
            values ``options``, ``read_options``, ``sam_options``,
            ``pair_options`` or their fields as keywords; ``command`` for SAM
            ``@PG CL``, ``un``, ``al``, ``mate2``, ``interleaved``,
            ``chunk_bytes``, ``threads``, ``device``, ``devices``, ``bounds``).

    >>> import os, tempfile
    >>> from gseek import read_fastx, write_fastq
    >>> from gseek.datasets import lambda_genome
    >>> genome = read_fastx(lambda_genome()).sequence(0)
    >>> d = tempfile.mkdtemp()
    >>> _ = write_fastq(os.path.join(d, "reads.fq"), [("r1", genome[1000:1030], "I" * 30), ("r2", "ACGT", "IIII")])
    >>> idx = Index.build(lambda_genome(), wgram=8, device="cpu")
    >>> map_reads(idx, os.path.join(d, "reads.fq"), os.path.join(d, "out.sam"), mismatches=1)  # doctest: +ELLIPSIS
    {'reads': 2, 'mapped': 1, 'unmapped': 1, 'too_long': 0, 'too_short': 1, 'records': 2, 'alignments': 1, 'device': 'cpu (numba, ...)'}
    >>> for line in open(os.path.join(d, "out.sam")):
    ...     if not line.startswith("@"):
    ...         print(line.split("\\t")[:6])
    ['r1', '0', 'gi|9626243|ref|NC_001416.1|', '1001', '60', '30M']
    ['r2', '4', '*', '0', '0', '*']
    """
    return map_files(index, reads, output, workers=0, **options)
# --------------------------------------------------------------------- the BLAST-style search


def blast_files(index: Index | str | os.PathLike, queries: str | os.PathLike | list[str | os.PathLike],
                output: str | os.PathLike, *, task: str = "megablast", options: BlastOptions | None = None,
                outfmt: str = "6",
                device: str | Backend | None = None, devices: Sequence[str | Backend] | None = None,
                threads: int | None = None, workers: int = 2,
                chunk_bytes: int | None = None, bounds: QueueBounds | None = None, database: str | None = None,
                command: str = "gseek", subjects: list | None = None, query_offset: int = 0,
                progress: Any = None, client: Any = None, **overrides: Any) -> dict[str, Any]:
    """Search FASTA query file(s) against an index and write BLAST tabular output (``gseek search
    --task megablast|blastn``; ``devices``: several at once, each taking whole jobs, as
    :class:`BlastTask`). The options come whole as ``options`` (a
    :class:`~gseek.blast.options.BlastOptions`) or as ``task`` and the loose ``overrides`` of its
    fields (and ``volume_size``, ``split``, as :class:`BlastTask`); ``progress(queries)`` and ``client``
    (its jobs searched on a Dask cluster's workers, the text written here in order) as :func:`map_files`. Returns counts ``queries``,
    ``hsps``, ``with_hits`` and ``device``."""
    from .tasks.blast import BlastTask

    files = [queries] if isinstance(queries, (str, os.PathLike)) else list(queries)
    if not files:
        raise OptionError("no query file given")
    index_dir = index.path if isinstance(index, Index) else resolve_database(index)[0]
    check_output(output, files, within=[] if index_dir is None else [index_dir])
    BlastTask.check_output_name(output)
    here = dict(device="cpu", threads=1, devices=None) if client is not None else \
        dict(device=device, threads=threads, devices=devices)
    blast = BlastTask(index, task, options=options, outfmt=outfmt, database=database, command=command,
                      subjects=subjects, query_offset=query_offset, **here, **overrides)
    query = QueryFile(tuple(os.fspath(f) for f in files), os.fspath(output))
    result = run_one(blast, query, workers=workers, bounds=bounds, job_bytes=chunk_bytes, progress=progress,
                     client=client, device=device, threads=threads)
    c = result.counts
    if os.environ.get("GSEEK_BLAST_TIMING"):  # where the time went (docs/blast.md)
        import sys

        for s in blast.searchers:
            print("[gseek] blast stages: " + ", ".join(f"{k} {v:.3f} s" for k, v in s.timings.items())
                  + "; " + ", ".join(f"{k} {v:,}" for k, v in s.counts.items()), file=sys.stderr)
    return dict(queries=c["records"], hsps=c["hits"], with_hits=c["mapped"],
                device=_device_line(blast, client))


# --------------------------------------------------------------------- the DP


def align_files(
    targets: str | os.PathLike,
    queries: str | os.PathLike | list[str | os.PathLike],
    output: str | os.PathLike | None,
    *,
    device: str | Backend | None = None,
    threads: int | None = None,
    workers: int = 2,
    job_bytes: int | None = None,
    bounds: QueueBounds | None = None,
    progress: Any = None,
    client: Any = None,
    **align_options: Any,
) -> dict[str, Any]:
    """Align every query of file(s) against every target, to TSV: ``gseek align -q QUERIES -t TARGETS``.

    Runs through the pipeline engine (one query, a pipeline of one).
    Several query files go to one output, in order; ``output`` None or ``-``
    is stdout. ``progress(pairs)`` is called as rows are written. Bad input
    raises. Returns the query ``records``, the ``rows`` written and the
    ``device`` line.

    Arguments:
        targets: FASTA/FASTQ of the targets (the database), read once.
        queries: a query FASTA/FASTQ file (gzip ok) or a list of them.
        output: the TSV file (written under a temporary name, renamed when
            complete); None or ``-``: stdout.
        device, threads: the backend (default ``auto``) and CPU threads.
        workers: finalize threads (0: every stage in the caller's thread).
        job_bytes: query input per job (default: about 2^32 DP cells a job
            on the CPU, 2^40 on a GPU).
        bounds: the engine's :class:`~gseek.pipeline.engine.QueueBounds`.
        progress: ``progress(pairs)``, called as rows are written.
        client: a ``distributed.Client``: each job (a batch of queries) is
            aligned on a worker, which reads the targets once; the rows are
            written here in the same order (``docs/cluster.md``). ``device``
            (other than ``auto``) and ``threads`` are then the workers'.
        **align_options: ``options`` (an :class:`~gseek.align.options.AlignOptions`) or its fields
            (``mode``, ``scoring``, ``traceback``, ``min_score``, ``outfmt``, ...), as :class:`AlignTask`.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> targets, queries = os.path.join(d, "targets.fa"), os.path.join(d, "queries.fa")
    >>> _ = open(targets, "w").write(">t1\\nACGTACGTAC\\n>t2\\nGATTACAGAT\\n")
    >>> _ = open(queries, "w").write(">q1\\nACGTTCGTAC\\n>q2\\nGATTACA\\n")
    >>> out = os.path.join(d, "hits.tsv")
    >>> align_files(targets, queries, out, mode="local", outfmt="6 qseqid sseqid score cigar", device="cpu",
    ...             threads=1)
    {'records': 2, 'rows': 4, 'device': 'cpu (numba, 1 threads)'}
    >>> print(open(out).read(), end="")
    q1  t1  15  4=1X5=
    q1  t2  6   3=
    q2  t1  6   3=
    q2  t2  14  7=
    """
    from .tasks.align import AlignTask

    out, encoding = _output_encoding(output)
    files = [queries] if isinstance(queries, (str, os.PathLike)) else list(queries)
    if not files:
        raise OptionError("no query file given")
    check_output(out, [*files, targets])
    here = dict(device="cpu", threads=1) if client is not None else dict(device=device, threads=threads)
    task = AlignTask(targets, encoding=encoding, **here, **align_options)
    result = run_one(task, QueryFile(tuple(os.fspath(f) for f in files), out), workers=workers, bounds=bounds,
                     job_bytes=job_bytes, progress=progress, client=client, device=device, threads=threads)
    return dict(records=result.records, rows=result.hits, device=_device_line(task, client))


def align_pairs_files(
    sequences: str | os.PathLike,
    output: str | os.PathLike | None,
    *,
    queries: str | os.PathLike | None = None,
    pairs: str | os.PathLike | None = None,
    device: str | Backend | None = None,
    threads: int | None = None,
    workers: int = 2,
    bounds: QueueBounds | None = None,
    progress: Any = None,
    total: Any = None,
    client: Any = None,
    **align_options: Any,
) -> dict[str, Any]:
    """Align all pairs of one set, or the named pairs of a list, to TSV through the pipeline engine.

    ``gseek align --all-vs-all -i SEQS`` (or ``-q Q -t T --pairs TSV``).
    ``output`` None or ``-`` is stdout; ``total(pairs)`` is called once the
    pairs are known, ``progress(pairs)`` as rows are written. Returns the
    ``pairs`` aligned, the ``rows`` written and the ``device`` line.

    Arguments:
        sequences: FASTA/FASTQ: the set (all-vs-all: every pair ``i < j``,
            query ``i``, target ``j``) or, with ``pairs``, the targets.
        output: the TSV file (written under a temporary name, renamed when
            complete); None or ``-``: stdout.
        queries, pairs: a pair list (give both or neither): the queries'
            FASTA/FASTQ and a file of ``query<TAB>target`` names, one pair
            a line; rows come in the list's order.
        device, threads: the backend (default ``auto``) and CPU threads.
        workers: finalize threads (0: every stage in the caller's thread).
        bounds: the engine's :class:`~gseek.pipeline.engine.QueueBounds`.
        progress, total: ``progress(pairs)`` as rows are written,
            ``total(pairs)`` once the pairs are known.
        client: a ``distributed.Client``: the pairs are cut into tiles of
            ``batch_pairs`` (ranges of the triangle in row-major order, or of
            the list), each aligned on a worker, which reads the sequences
            once; the rows are written here in the same order, byte for byte
            the local output (``docs/cluster.md``). ``device`` (other than
            ``auto``) and ``threads`` are then the workers'.
        **align_options: ``options`` (an :class:`~gseek.align.options.AlignOptions`) or its fields, as
            :class:`AlignTask` (``batch_pairs`` sets the pairs per job).

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> seqs = os.path.join(d, "seqs.fa")
    >>> _ = open(seqs, "w").write(">a\\nACGTACGT\\n>b\\nACGACGT\\n>c\\nACGTTCGT\\n")
    >>> out = os.path.join(d, "pairs.tsv")
    >>> align_pairs_files(seqs, out, outfmt="6 qseqid sseqid score cigar", device="cpu", threads=1)
    {'pairs': 3, 'rows': 3, 'device': 'cpu (numba, 1 threads)'}
    >>> print(open(out).read(), end="")
    a  b  7  3=1I4=
    a  c  11 4=1X3=
    b  c  2  3=1D1X3=
    """
    from .tasks.align import PairsTask

    out, encoding = _output_encoding(output)
    check_output(out, [sequences, queries, pairs])
    here = dict(device="cpu", threads=1) if client is not None else dict(device=device, threads=threads)
    task = PairsTask(sequences, queries=queries, pairs=pairs, encoding=encoding, **here, **align_options)
    if total is not None:
        total(task.total)
    result = run_one(task, QueryFile((os.fspath(pairs or sequences),), out), workers=workers, bounds=bounds,
                     job_bytes=None, progress=progress, client=client, device=device, threads=threads)
    return dict(pairs=result.records, rows=result.hits, device=_device_line(task, client))


def _output_encoding(output: str | os.PathLike | None) -> tuple[str, tuple[str, str]]:
    """The output name (``-``: stdout) and the encoding its rows are made in."""
    from gseek.output.tabular import stream_encoding

    out = "-" if output is None or os.fspath(output) == "-" else os.fspath(output)
    return out, (stream_encoding(sys.stdout) if out == "-" else ("ascii", "strict"))

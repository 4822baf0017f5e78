"""``gseek pipeline``: many query files through one engine, a summary, resume.

The query list (``list.txt``) has one query file per line (FASTA/FASTQ,
gzip ok), optionally a second column naming its output (a file name inside
the output folder; mapping: ``.sam``, ``.bam`` or ``.sam.gz``); columns are
separated by a tab, or by blanks on a line without a tab. ``#`` starts a
comment line; blank lines are skipped; relative paths are resolved against
the list's folder. The default output is the query's name without its
FASTA/FASTQ and ``.gz`` suffixes, plus ``.sam``. Paired-end reads (``--task
map``): a line ``R1 R2 [OUTPUT]``, the two mate files (the second column is
mate 2 when its name ends in a FASTA/FASTQ suffix, ``.gz`` or not; the
default output is named after ``R1``). Errors in the list name
``list.txt:LINE``, and so does an output refused before the run starts
(:func:`~gseek.seqio.atomic.check_output`: an input of any entry, the list,
the targets; inside the index; a directory).

``DIR/summary.tsv`` has one row per listed file: ``file``, ``status``
(``ok``, ``failed``, ``skipped``), ``records``, ``hits``, ``seconds``,
``error``, ``output``. A missing, unreadable or malformed file fails alone.

Resume: an output appears under its final name only when complete (it is
written under a temporary name and renamed), and each completed output is
recorded in ``DIR/.gseek-manifest.json`` with the task fingerprint (task,
options that change records, index header), the size and modification time
of its inputs, and its own size and SHA-256 (and a BAM's or CRAM's index's). ``resume=True``
skips a file when its output exists and its manifest entry matches all of these (the
SHA-256 read back from the output and its index); anything else (no output, output of
another size or content, a BAM whose index is missing or another file's, changed input,
other options) is redone.

One run at a time per output folder: a run holds an exclusive ``flock`` on
``DIR/.gseek-lock`` from start to end, and a second run on the same folder
is refused (:class:`~gseek.errors.OutputBusyError`) before it touches
anything. Temporaries left by a killed run (``.NAME.tmp-PID`` of a process
that no longer runs) are removed at the start of the next run on the folder,
with or without ``resume``.

>>> import os, tempfile
>>> from gseek.datasets import lambda_genome, lambda_reads
>>> from gseek.index import Index
>>> d = tempfile.mkdtemp()
>>> Index.build(lambda_genome(), wgram=8, device="cpu").save(os.path.join(d, "lambda.gseek"))
PosixPath('.../lambda.gseek')
>>> _ = open(os.path.join(d, "list.txt"), "w").write(f"# reads\\n{lambda_reads()}\\tlambda.sam\\nmissing.fq\\n")
>>> summary = run_pipeline(os.path.join(d, "list.txt"), os.path.join(d, "lambda.gseek"), os.path.join(d, "out"),
...                        device="cpu", progress=False)
>>> [(os.path.basename(r.query.output), r.status) for r in summary.files], summary.exit_status
([('lambda.sam', 'ok'), ('missing.sam', 'failed')], 1)
>>> sorted(os.listdir(os.path.join(d, "out")))
['.gseek-lock', '.gseek-manifest.json', 'lambda.sam', 'summary.tsv']
>>> again = run_pipeline(os.path.join(d, "list.txt"), os.path.join(d, "lambda.gseek"), os.path.join(d, "out"),
...                      device="cpu", progress=False, resume=True)
>>> [r.status for r in again.files]
['skipped', 'failed']
"""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gseek.backend import Backend
from gseek.errors import OptionError, OutputBusyError, OutputClash, OutputError, Terminated, one_line
from gseek.index import Index
from gseek.index.format import resolve as resolve_index
from gseek.index.format import sha256_file
from gseek.seqio.atomic import check_output, index_files, remove_stale_temporaries
from gseek.seqio import open_output

from .cluster import ClusterFiles, cluster_spec
from .cluster_jobs import remote_dispatcher, shard_dispatcher
from .engine import FileResult, Progress, QueryFile, QueueBounds
from .tasks import AlignTask, BlastTask, MapTask, TaskSpec
from .query_list import SUMMARY_NAME, QueryListError, default_output, read_query_list  # noqa: F401 - its names too
from .tasks.map import VALUE_KEYWORDS, map_values

__all__ = ["QueryListError", "PipelineSummary", "read_query_list", "run_pipeline", "TASKS",
           "SUMMARY_NAME", "MANIFEST_NAME", "LOCK_NAME"]

#: Tasks the pipeline runs (megablast/blastn come with the BLAST-style search).
TASKS = {"map": MapTask, "align": AlignTask, "megablast": BlastTask, "blastn": BlastTask, "blastn-short": BlastTask,
         "dc-megablast": BlastTask}
MANIFEST_NAME = ".gseek-manifest.json"
#: The output folder's lock file (``flock``; holds the PID of the run holding it).
LOCK_NAME = ".gseek-lock"
#: Manifest layout; 2: each output's SHA-256; 3: and its BAM/CRAM index's (a manifest of another
#: version skips nothing).
MANIFEST_VERSION = 3
SUMMARY_COLUMNS = ("file", "status", "records", "hits", "seconds", "error", "output")
@dataclass
class PipelineSummary:
    """Outcome of :func:`run_pipeline`: one :class:`FileResult` per listed file, in list order,
    and the engine's ``stats`` (peak jobs and bytes in flight, full-queue counts)."""

    files: list[FileResult]
    path: Path
    seconds: float
    stats: dict = field(default_factory=dict)

    def count(self, status: str) -> int:
        return sum(r.status == status for r in self.files)

    @property
    def exit_status(self) -> int:
        """0 when no file failed, else 1 (the CLI's exit code)."""
        return 1 if self.count("failed") else 0

    def __repr__(self) -> str:
        return (f"PipelineSummary(ok={self.count('ok')}, failed={self.count('failed')}, "
                f"skipped={self.count('skipped')}, seconds={self.seconds:.2f})")


# --------------------------------------------------------------------------- resume manifest


def _input_stats(query: QueryFile) -> list[list[Any]] | None:
    try:
        return [[p, st.st_size, st.st_mtime_ns] for p in query.paths for st in [os.stat(p)]]
    except OSError:
        return None


def _indexes(output: Path) -> dict[str, str]:
    """The SHA-256 of each index beside a BAM or CRAM ``output`` (``x.bam.bai``), by name."""
    return {p.name: sha256_file(p) for p in index_files(output) if p.is_file()}


class _Manifest:
    """``DIR/.gseek-manifest.json``: what each complete output was made from."""

    def __init__(self, outdir: Path) -> None:
        self.path = outdir / MANIFEST_NAME
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            self.outputs = dict(data["outputs"]) if data.get("version") == MANIFEST_VERSION else {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self.outputs = {}

    def entry(self, query: QueryFile, fingerprint: str, output: Path, *, content: bool = True) -> dict:
        """What ``output`` was made from, its size and (``content``) its SHA-256."""
        size = output.stat().st_size if output.exists() else None
        return dict(inputs=_input_stats(query), fingerprint=fingerprint, size=size,
                    sha256=sha256_file(output) if content and size is not None else None,
                    index=_indexes(output) if content and size is not None else None)

    def complete(self, query: QueryFile, name: str, fingerprint: str, output: Path) -> dict | None:
        """The recorded entry when ``output`` is complete and made from the same inputs and options:
        same inputs, fingerprint and size, then the same content (its SHA-256 read back)."""
        old = self.outputs.get(name)
        if not old or not output.is_file():
            return None
        now = self.entry(query, fingerprint, output, content=False)
        same = all(old.get(k) == now[k] for k in ("inputs", "fingerprint", "size")) and now["inputs"] is not None
        if not same or not isinstance(old.get("sha256"), str):
            return None
        try:  # a BAM or CRAM is complete only with its own index (the same bytes as recorded, or none)
            return old if sha256_file(output) == old["sha256"] and _indexes(output) == old.get("index") else None
        except OSError:
            return None

    def record(self, name: str, entry: dict) -> None:
        self.outputs[name] = entry
        with open_output(self.path, "w") as fh:
            fh.write(json.dumps(dict(version=MANIFEST_VERSION, outputs=self.outputs), indent=1, sort_keys=True)
                     + "\n")


class _FolderLock:
    """An exclusive ``flock`` on ``DIR/.gseek-lock`` for the length of a run.

    The kernel drops it when the process ends, however it ends (SIGKILL too),
    so a lock file left behind never blocks a later run. Refuses at once
    (:class:`~gseek.errors.OutputBusyError`) when another run holds it.
    """

    def __init__(self, outdir: Path) -> None:
        self.path = outdir / LOCK_NAME
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(self.fd, 32, 0).decode("ascii", "replace").strip() or "?"
            os.close(self.fd)
            if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                raise
            raise OutputBusyError(outdir, f"in use by another gseek run (pid {holder}); wait for it to finish "
                                          "or give another output folder") from None
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        os.close(self.fd)  # closing the descriptor drops the lock


# --------------------------------------------------------------------------- progress


class _Bars(Progress):
    """Overall (files, records, hits, ETA) and per-file (records) tqdm bars on stderr."""

    def __init__(self, total: int) -> None:
        from tqdm import tqdm

        self._tqdm = tqdm
        self.overall = tqdm(total=total, unit="file", desc="gseek pipeline", position=0, file=sys.stderr,
                            dynamic_ncols=True)
        self.records = self.hits = 0
        self.bars: dict[int, Any] = {}

    def start(self, query: QueryFile) -> None:
        self.bars[id(query)] = self._tqdm(desc=Path(query.name).name[:30], unit=" rec", unit_scale=True,
                                          position=1, leave=False, file=sys.stderr, dynamic_ncols=True)

    def update(self, query: QueryFile, counts: dict[str, int]) -> None:
        n, h = int(counts.get("records", 0)), int(counts.get("hits", 0))
        self.records += n
        self.hits += h
        bar = self.bars.get(id(query))
        if bar is not None:
            bar.update(n)
        self.overall.set_postfix(records=f"{self.records:,}", hits=f"{self.hits:,}", refresh=False)

    def finish(self, result: FileResult) -> None:
        bar = self.bars.pop(id(result.query), None)
        if bar is not None:
            bar.close()
        self.overall.update(1)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()
        self.overall.close()


class _Recorder(Progress):
    """Writer-side hooks: the manifest on every completed file, then the user's progress."""

    def __init__(self, manifest: _Manifest, names: dict[int, str], paths: dict[int, Path], fingerprint: str,
                 inner: Progress, log: Any) -> None:
        self.manifest, self.names, self.paths, self.fingerprint = manifest, names, paths, fingerprint
        self.inner, self.log = inner, log

    def start(self, query: QueryFile) -> None:
        self.inner.start(query)

    def update(self, query: QueryFile, counts: dict[str, int]) -> None:
        self.inner.update(query, counts)

    def finish(self, result: FileResult) -> None:
        key = id(result.query)
        if result.status == "ok":
            entry = self.manifest.entry(result.query, self.fingerprint, self.paths[key])
            entry.update(records=result.records, hits=result.hits)
            self.manifest.record(self.names[key], entry)
        elif result.status == "failed" and self.log is not None:
            print(f"gseek: {result.query.name}: failed: {one_line(result.error)}", file=self.log)
        self.inner.finish(result)


# --------------------------------------------------------------------------- run


def run_pipeline(
    list_file: str | os.PathLike,
    index: Index | str | os.PathLike,
    outdir: str | os.PathLike,
    task: str = "map",
    *,
    gpus: Sequence[int] | None = None,
    devices: Sequence[str | Backend] | None = None,
    device: str | Backend = "auto",
    threads: int | None = None,
    resume: bool = False,
    progress: bool | Progress | None = None,
    workers: int = 2,
    job_bytes: int | None = None,
    bounds: QueueBounds | None = None,
    max_inflight_bytes: int | None = None,
    command: str = "gseek pipeline",
    quiet: bool = False,
    client: Any = None,
    **task_options: Any,
) -> PipelineSummary:
    """Run ``task`` over every query file of ``list_file``; write outputs and ``summary.tsv`` in ``outdir``.

    Arguments:
        list_file: the query list (see the module docstring).
        index: ``map``: an :class:`~gseek.index.Index` or the path of a saved
            one; ``align``: the target FASTA/FASTQ (the database).
        outdir: output folder (created); holds the outputs, ``summary.tsv``
            and the resume manifest.
        task: ``"map"`` (SAM out) or ``"align"`` (every query against every
            target, TSV out as ``gseek align -q FILE -t TARGETS``).
        gpus: CUDA device ordinals, one prelim worker (and index copy) each.
        devices: explicit backends or device names, one prelim worker each
            (overrides ``gpus`` and ``device``).
        device, threads: the single device when neither is given (``auto``:
            the GPU if CuPy finds one, else the CPU), CPU threads.
        resume: skip files whose outputs are complete (see the module docstring).
        progress: bars on stderr: None = when stderr is a terminal, True,
            False, or a :class:`~gseek.pipeline.engine.Progress`.
        workers, job_bytes, bounds, max_inflight_bytes: engine tuning
            (:class:`~gseek.pipeline.engine.Dispatcher`; ``docs/pipeline.md``).
        command: SAM ``@PG CL``.
        quiet: no line on stderr for a failed file (it is in ``summary.tsv``)
            nor for a lost cluster worker.
        client: a ``distributed.Client``: each query file is a Dask task,
            run by a worker (which loads the index once) that writes the
            output into ``outdir`` (storage every worker sees at the same
            path); ``workers``, ``job_bytes``, ``bounds`` and
            ``max_inflight_bytes`` tune each worker's engine; ``devices``
            or ``device`` (other than ``auto``) name the workers' device,
            else each takes its GPU if it has one (``docs/cluster.md``).
            ``megablast``/``blastn``: each job (a batch of queries) is a
            task and this process writes the outputs; with ``split="database"``
            each worker searches one shard of the database and this process
            merges the hits.
        **task_options: the task's options (mapping: ``mismatches``,
            ``max_alignments``, ``report_all``, ``max_hits``, ``norc``, ``nofw``,
            ``xa_limit``, ``no_unal``, ``cigar_eq``, ``min_piece``; align: the
            :class:`~gseek.align.PairAligner` options).

    Returns a :class:`PipelineSummary`; its ``exit_status`` is 1 when a file
    failed. Errors in the list raise :class:`QueryListError` before anything
    runs; a second run on the same ``outdir`` raises
    :class:`~gseek.errors.OutputBusyError` (the folder's lock). An exception
    that is not about one file (or Ctrl-C, SIGTERM, SIGHUP) stops the run:
    ``summary.tsv`` is still written (unfinished files ``failed``,
    ``interrupted`` or ``terminated by SIGTERM``) and the exception re-raised.

    An ``align`` run (the module docstring has a ``map`` run and resume):

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> _ = open(os.path.join(d, "targets.fa"), "w").write(">t1\\nACGTACGTAC\\n>t2\\nGATTACAGAT\\n")
    >>> _ = open(os.path.join(d, "queries.fa"), "w").write(">q1\\nACGTTCGTAC\\n>q2\\nGATTACA\\n")
    >>> _ = open(os.path.join(d, "list.txt"), "w").write("queries.fa\\nmissing.fa\\tm.tsv\\n")
    >>> summary = run_pipeline(os.path.join(d, "list.txt"), os.path.join(d, "targets.fa"), os.path.join(d, "out"),
    ...                        task="align", mode="local", device="cpu", progress=False, quiet=True)
    >>> [(r.query.name, r.status, r.records, r.hits) for r in summary.files], summary.exit_status
    ([('queries.fa', 'ok', 2, 4), ('missing.fa', 'failed', 0, 0)], 1)
    >>> sorted(os.listdir(os.path.join(d, "out")))
    ['.gseek-lock', '.gseek-manifest.json', 'queries.tsv', 'summary.tsv']
    >>> print(open(os.path.join(d, "out", "queries.tsv")).read(), end="")
    #qname  tname  score  qend  tend  qlen  tlen
    q1      t1     15     10    10    10    10
    q1      t2     6      10    6     10    10
    q2      t1     6      6     6     7     10
    q2      t2     14     7     7     7     10
    """
    started = time.perf_counter()
    if task not in TASKS:
        raise OptionError(f"task {task!r} is not available in the pipeline; choose from {', '.join(TASKS)}")
    task_cls = TASKS[task]
    if task_cls is BlastTask:
        task_options["task"] = task
    if task_cls is MapTask:  # the options as values, made once here (loose keywords or values)
        task_options = _map_task_options(task_options)
    entries = read_query_list(list_file, suffix=task_cls.output_suffix)
    for query, _ in entries:
        if query.paired and task != "map":
            raise QueryListError(Path(list_file), query.line, f"paired-end reads (two read files) are mapped by "
                                                              f"--task map, not --task {task}")
    out = Path(outdir)
    if task != "align":  # the index folder: nothing may be written inside it
        index_dir = index.path if isinstance(index, Index) else resolve_index(index)
        # the FASTA a CRAM is encoded against: an input like the queries
        sam = task_options.get("sam_options")
        within, reference = ([] if index_dir is None else [index_dir]), [None if sam is None else sam.reference]
    else:  # the targets file: an input like the queries
        within, reference = [], [index]
    inputs = [list_file, *reference, *(p for query, _ in entries for p in query.paths)]
    check_output(out, within=within, folder=True)
    out.mkdir(parents=True, exist_ok=True)
    check_output(out / LOCK_NAME, inputs)
    lock = _FolderLock(out)
    try:
        _check_outputs(list_file, entries, out, task_cls, inputs, within, task_options)
        return _run_locked(entries, task_cls, index, out, started, gpus=gpus, devices=devices, device=device,
                           threads=threads, resume=resume, progress=progress, workers=workers, job_bytes=job_bytes,
                           bounds=bounds, max_inflight_bytes=max_inflight_bytes, command=command, quiet=quiet,
                           client=client, **task_options)
    finally:
        lock.release()


def _check_outputs(list_file: str | os.PathLike, entries: list[tuple[QueryFile, str]], out: Path, task_cls: Any,
                   inputs: list[Any], within: list[Any], task_options: dict[str, Any]) -> None:
    """Refuse, before any work, an output that would destroy an input (any
    entry's, the list, the index or targets) or cannot be written: a list
    entry's as ``list.txt:LINE``, ``summary.tsv`` and the manifest by name. An
    output's name is checked with the task's options (``.cram`` needs ``reference``)."""
    for query, name in entries:
        path = out / name
        try:
            check_output(path, inputs, within=within)
            task_cls.check_output_name(path, **task_options)
        except (OSError, OutputError) as exc:
            error = QueryListError(list_file, query.line, one_line(exc))
            if isinstance(exc, OutputClash):  # the list names an input as an output: a usage error, as on the command line
                error.exit_status = exc.exit_status
            raise error from None
    for name in (SUMMARY_NAME, MANIFEST_NAME):
        check_output(out / name, inputs, within=within)


def _run_locked(entries: list[tuple[QueryFile, str]], task_cls: Any, index: Any, out: Path, started: float, *,
                gpus: Sequence[int] | None, devices: Sequence[str | Backend] | None, device: str | Backend,
                threads: int | None, resume: bool, progress: bool | Progress | None, workers: int,
                job_bytes: int | None, bounds: QueueBounds | None, max_inflight_bytes: int | None, command: str,
                quiet: bool, client: Any = None, **task_options: Any) -> PipelineSummary:
    """:func:`run_pipeline` once the output folder's lock is held."""
    remove_stale_temporaries(out, every=True)  # left by a killed run (no other run writes here now)
    if client is not None and gpus is not None:
        raise OptionError("gpus: on a cluster each worker uses its own device (one GPU a worker with "
                          "`dask cuda worker`); give no GPU list")
    if devices is None and gpus is not None:
        gpus = list(gpus)
        if not gpus:
            raise OptionError("gpus: give at least one GPU ordinal")
        devices = [f"gpu:{int(g)}" for g in gpus]
    results: dict[int, FileResult] = {}
    todo: list[QueryFile] = []
    names: dict[int, str] = {}
    paths: dict[int, Path] = {}
    folder = out if client is None else out.absolute()  # a worker's working folder is not the client's
    for i, (query, name) in enumerate(entries):
        entries[i] = (dataclasses.replace(query, output=os.fspath(folder / name)), name)
    shard_spec = job_spec = None
    try:
        if client is None:
            worker = task_cls(index, devices=devices, device=device if devices is None else None, threads=threads,
                              command=command, **task_options)
        elif task_cls is BlastTask and task_options.get("split") == "database":
            # each worker searches its shard of the database; this process reads the queries, merges
            # the shards' hits and formats them (with the database's text) and writes the outputs
            shard_spec = _cluster_task_spec(task_cls, index, devices, device, threads, command, task_options)
            worker = task_cls(index, device="cpu", threads=threads, command=command,
                              **{k: v for k, v in task_options.items() if k != "split"})
        elif task_cls is BlastTask:
            # BLAST query files are small and each job scans the whole database: jobs, not files,
            # are the tasks, so a worker with two threads keeps both searchers of its GPU busy
            job_spec = _cluster_task_spec(task_cls, index, devices, device, threads, command, task_options)
            worker = task_cls(index, device="cpu", threads=threads, command=command, **task_options)
        else:  # the workers build the task (load the index); the first one says its fingerprint
            worker = ClusterFiles(client, _cluster_task_spec(task_cls, index, devices, device, threads, command,
                                                             task_options), log=None if quiet else sys.stderr)
        fingerprint = worker.fingerprint()
        manifest = _Manifest(out)
        for i, (query, name) in enumerate(entries):
            target = out / name
            old = manifest.complete(query, name, fingerprint, target) if resume else None
            if old is not None:
                results[i] = FileResult(query, "skipped", dict(records=old.get("records", 0),
                                                               hits=old.get("hits", 0)))
                continue
            todo.append(query)
            names[id(query)], paths[id(query)] = name, target
    except (KeyboardInterrupt, Terminated) as exc:  # stopped while setting up: no file ran
        reason = "interrupted" if isinstance(exc, KeyboardInterrupt) else one_line(exc)
        summary = PipelineSummary([results.get(i) or FileResult(q, "failed", error=RuntimeError(reason))
                                   for i, (q, _) in enumerate(entries)], out / SUMMARY_NAME,
                                  time.perf_counter() - started)
        _write_summary(summary, [name for _, name in entries])
        raise

    bars: Progress
    if isinstance(progress, Progress):
        bars = progress
    elif progress or (progress is None and sys.stderr.isatty()):
        bars = _Bars(len(todo))
    else:
        bars = Progress()
    options: dict[str, Any] = dict(workers=workers, bounds=bounds)
    if job_bytes is not None:
        options["job_bytes"] = job_bytes
    if max_inflight_bytes is not None:
        options["max_inflight_bytes"] = max_inflight_bytes
    recorder = _Recorder(manifest, names, paths, fingerprint, bars, None if quiet else sys.stderr)
    if client is None:
        dispatcher = worker.dispatcher(progress=recorder, **options)
    elif shard_spec is not None:
        dispatcher = shard_dispatcher(client, worker, shard_spec, progress=recorder,
                                      log=None if quiet else sys.stderr, **options)
    elif job_spec is not None:
        dispatcher = remote_dispatcher(client, worker, job_spec, progress=recorder,
                                       log=None if quiet else sys.stderr, **options)
    else:
        worker.options, worker.progress = options, recorder
        dispatcher = worker
    failure: BaseException | None = None
    try:
        dispatcher.run(todo)
    except BaseException as exc:
        failure = exc
        raise
    finally:
        if isinstance(bars, _Bars):
            bars.close()
        done = {id(r.query): r for r in dispatcher.results}
        reason = "interrupted" if isinstance(failure, KeyboardInterrupt) else one_line(failure)
        for i, (query, _) in enumerate(entries):
            if i not in results:
                results[i] = done.get(id(query)) or FileResult(query, "failed", error=RuntimeError(reason))
        summary = PipelineSummary([results[i] for i in range(len(entries))], out / SUMMARY_NAME,
                                  time.perf_counter() - started, dict(dispatcher.stats))
        _write_summary(summary, [name for _, name in entries])
        if client is not None:  # what a worker lost mid-write left (it no longer runs)
            remove_stale_temporaries(out, every=True)
    return summary


#: Task options that name a file a worker reads (made absolute: a worker's folder is not the client's).
def _map_task_options(options: dict[str, Any]) -> dict[str, Any]:
    """A map run's options: the four values (:func:`~gseek.pipeline.tasks.map.map_values`) and the rest."""
    names = ("options", "read_options", "sam_options", "pair_options")
    values = map_values(**{k: v for k, v in options.items() if k in names or k in VALUE_KEYWORDS})
    rest = {k: v for k, v in options.items() if k not in names and k not in VALUE_KEYWORDS}
    return {**dict(zip(names, values)), **rest}


def _absolute_paths(options: dict[str, Any]) -> dict[str, Any]:
    """The task's options with the files they name as absolute paths (the same on every node)."""
    sam = options.get("sam_options")
    if sam is not None and sam.reference is not None:
        return {**options, "sam_options": sam.replace(reference=os.path.abspath(sam.reference))}
    return options


def _cluster_task_spec(task_cls: Any, index: Any, devices: Sequence[str | Backend] | None, device: str | Backend,
                       threads: int | None, command: str, task_options: dict[str, Any]) -> TaskSpec:
    """The spec every worker builds the task from: absolute paths (the same on every node)."""
    if isinstance(index, Index):
        if index.path is None:
            raise OptionError("a cluster run needs a saved index: give its path (Index.save)")
        index = index.path
    source = os.path.abspath(index if task_cls is AlignTask else resolve_index(index))  # targets or index
    spec = TaskSpec.of(task_cls.name, source, dict(command=command, **_absolute_paths(task_options)))
    return cluster_spec(spec, device=device, devices=devices, threads=threads)




def _write_summary(summary: PipelineSummary, outputs: list[str]) -> None:
    with open_output(summary.path, "wb") as fh:
        fh.write(("\t".join(SUMMARY_COLUMNS) + "\n").encode())
        for r, name in zip(summary.files, outputs):
            row = (r.query.name, r.status, str(r.records), str(r.hits), f"{r.seconds:.3f}",
                   one_line(r.error).replace("\t", " "), name)
            fh.write(("\t".join(row) + "\n").encode("utf-8", "replace"))

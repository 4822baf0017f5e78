"""The pipeline (issue 6): output byte-identical to map_reads file by file for
any bounds, workers and devices; back-pressure; faults that fail one file;
exceptions and interrupts that stop cleanly; the query list; resume.

The SAM ``@PG CL`` holds the command line, so the pipeline and map_reads are
given the same ``command`` string; nothing else is ignored in the comparisons.
"""

from __future__ import annotations

import _thread
import gzip
import json
import os
import random
import threading
import time
from pathlib import Path

import pytest

from gseek.backend import CpuBackend
from gseek.datasets import lambda_genome
from gseek.datasets.simulate import kmismatch_reads
from gseek.errors import FastxError
from gseek.index import Index
from gseek.pipeline import map_reads
from gseek.pipeline import (Chunk, Dispatcher, Progress, QueryFile, QueryListError, QueueBounds, map_files,
                            read_query_list, run_pipeline)
from gseek.pipeline.engine import THREAD_PREFIX
from gseek.pipeline.runner import MANIFEST_NAME
from gseek.seqio import write_fasta, write_fastq

CMD = "gseek pipeline --test"
TINY = QueueBounds(query=1, job=1, prelim=1, result=1)


@pytest.fixture(autouse=True)
def no_pipeline_threads():
    yield
    alive = [t.name for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]
    assert not alive, f"pipeline threads left running: {alive}"


def no_temporaries(folder: Path) -> None:
    left = [p.name for p in folder.iterdir() if ".tmp-" in p.name]
    assert not left, f"temporary files left: {left}"


# --------------------------------------------------------------------------- data


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A saved lambda index and 8 read files: FASTQ, FASTA, gzip; 1 to 1,500 reads, 16-1,200 bp."""
    root = tmp_path_factory.mktemp("pipeline")
    index = Index.build(lambda_genome(), wgram=8, device="cpu").save(root / "lambda.gseek")
    reads = root / "reads"
    reads.mkdir()
    files = []
    sizes = [1500, 1, 40, 700, 3, 1200, 250, 900]
    for i, n in enumerate(sizes):
        sim = kmismatch_reads(lambda_genome(), n, (16, 150), 3, seed=100 + i, n_rate=0.01, random_fraction=0.1)
        records = list(sim.records())
        if i == 3:
            records.append(("long", "ACGT" * 300, "I" * 1200))  # over MAX_READ_LENGTH: unmapped TOO_LONG
        if i == 2:
            path = reads / f"s{i}.fa"
            write_fasta(path, [(name, seq) for name, seq, _ in records])
        else:
            path = reads / f"s{i}.fq"
            write_fastq(path, records)
        if i == 5:
            gz = path.with_name(path.name + ".gz")
            gz.write_bytes(gzip.compress(path.read_bytes(), mtime=0))
            path.unlink()
            path = gz
        files.append(path)
    return dict(root=root, index=index, files=files)


_REFERENCE: dict = {}


def reference(data, path: Path, backend_threads: int = 1, **options) -> bytes:
    """map_reads' output for one file (cached)."""
    key = (path, backend_threads, tuple(sorted(options.items())))
    if key not in _REFERENCE:
        out = data["root"] / f"ref-{len(_REFERENCE)}.sam"
        map_reads(data["index"], path, out, command=CMD, device=CpuBackend(backend_threads), **options)
        _REFERENCE[key] = out.read_bytes()
    return _REFERENCE[key]


def write_list(folder: Path, files, outputs=None, extra: str = "") -> Path:
    """A query list with a comment, a blank line and paths relative to the list's folder."""
    lines = ["# query files", ""]
    for i, f in enumerate(files):
        rel = os.path.relpath(f, folder)
        lines.append(rel if outputs is None else f"{rel}\t{outputs[i]}")
    path = folder / "list.txt"
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


def run(data, tmp_path, files, **options):
    options.setdefault("devices", [CpuBackend(1)])
    options.setdefault("progress", False)
    options.setdefault("quiet", True)
    listing = write_list(tmp_path, files)
    out = tmp_path / "out"
    return run_pipeline(listing, data["index"], out, command=CMD, **options), out


# --------------------------------------------------------------------------- identical output

CONFIGS = {
    "inline": dict(workers=0),
    "tiny-bounds": dict(workers=1, bounds=TINY, job_bytes=4096),
    "byte-cap": dict(workers=3, job_bytes=2048, max_inflight_bytes=1),
    "3-devices": dict(workers=2, bounds=TINY, job_bytes=8192, devices=[CpuBackend(1) for _ in range(3)]),
}


@pytest.mark.parametrize("n_files", [1, 8])
@pytest.mark.parametrize("config", list(CONFIGS))
def test_output_equals_map_reads_file_by_file(data, tmp_path, n_files, config):
    files = data["files"][:n_files] if n_files == 1 else data["files"]
    summary, out = run(data, tmp_path, files, **CONFIGS[config])
    assert summary.exit_status == 0 and [r.status for r in summary.files] == ["ok"] * len(files)
    for f, r in zip(files, summary.files):
        assert Path(r.query.output).read_bytes() == reference(data, f), f.name
    no_temporaries(out)
    if config == "byte-cap":  # a job larger than the cap is let through alone
        assert summary.stats["peak_jobs"] == 1
    if config in ("tiny-bounds", "3-devices") and n_files == 8:
        assert summary.stats["jobs"] > 8 and summary.stats["full_result"] + summary.stats["full_job"] > 0


@pytest.mark.parametrize("options", [dict(max_alignments=3, no_unal=True),
                                     dict(report_all=True, max_hits=2, cigar_eq=True, norc=True)])
def test_mapping_options_give_identical_output(data, tmp_path, options):
    files = data["files"][:4]
    summary, _ = run(data, tmp_path, files, workers=2, bounds=TINY, job_bytes=4096, **options)
    for f, r in zip(files, summary.files):
        assert Path(r.query.output).read_bytes() == reference(data, f, **options)


def test_several_prelim_workers_on_each_backend(data, tmp_path, backend):
    """Three prelim workers on one device kind give map_reads' bytes (multi-GPU: same code, one device each)."""
    files = data["files"][:6:2]
    listing = write_list(tmp_path, files)
    summary = run_pipeline(listing, data["index"], tmp_path / "out", devices=[backend] * 3, workers=2,
                           job_bytes=4096, bounds=TINY, command=CMD, progress=False, quiet=True)
    for f, r in zip(files, summary.files):
        expected = tmp_path / "expected.sam"
        map_reads(data["index"], f, expected, command=CMD, device=backend)
        assert Path(r.query.output).read_bytes() == expected.read_bytes()


def test_map_files_is_map_reads_through_the_engine(data, tmp_path):
    files = data["files"][:3]
    ours, theirs = tmp_path / "ours.sam", tmp_path / "theirs.sam"
    a = map_files(data["index"], files, ours, command=CMD, device=CpuBackend(1), chunk_bytes=3000, workers=2)
    b = map_reads(data["index"], files, theirs, command=CMD, device=CpuBackend(1))
    assert a == b and ours.read_bytes() == theirs.read_bytes()
    bad = tmp_path / "bad.fq"
    bad.write_text("@r\nACGTACGTACGTACGTACGT\n+\nIII\n")
    with pytest.raises(FastxError, match=r"bad.fq:4: .*quality length 3 != sequence length 20"):
        map_files(data["index"], bad, tmp_path / "bad.sam", device=CpuBackend(1))
    no_temporaries(tmp_path)
    assert not (tmp_path / "bad.sam").exists()


# --------------------------------------------------------------------------- faults


def test_bad_files_fail_alone(data, tmp_path):
    good = data["files"][0], data["files"][3], data["files"][5]
    bad = tmp_path / "bad"
    bad.mkdir()
    malformed = bad / "malformed.fq"  # good records first, so some batches are written before the error
    text = data["files"][3].read_text()
    malformed.write_text(text + "@broken\nACGTACGTACGTACGTACGT\n+\nIIII\n")
    short = bad / "short.fq"
    short.write_text("@ok\n" + "ACGT" * 10 + "\n+\n" + "I" * 40 + "\n@tiny\nACGTAC\n+\nIIIIII\n")
    empty = bad / "empty.fq"
    empty.write_text("")
    directory = bad / "dir.fq"
    directory.mkdir()
    corrupt = bad / "corrupt.fq.gz"
    corrupt.write_bytes(b"\x1f\x8b" + os.urandom(200))
    files = [good[0], malformed, bad / "missing.fq", good[1], short, empty, directory, corrupt, good[2]]
    summary, out = run(data, tmp_path, files, workers=2, bounds=TINY, job_bytes=3000)
    assert summary.exit_status == 1
    status = {Path(r.query.name).name: r for r in summary.files}
    for f in good:
        assert status[f.name].status == "ok"
        assert Path(status[f.name].query.output).read_bytes() == reference(data, f)
    assert status["short.fq"].status == "ok"  # a read under 16 bp is an unmapped record, not an error
    tiny = [x for x in Path(status["short.fq"].query.output).read_text().splitlines() if x.startswith("tiny\t")]
    assert len(tiny) == 1 and tiny[0].split("\t")[1] == "4" and tiny[0].endswith("\tYF:Z:TOO_SHORT")
    reasons = {"malformed.fq": "quality length 4 != sequence length 20", "missing.fq": "cannot open",
               "empty.fq": "empty file", "dir.fq": "cannot open", "corrupt.fq.gz": "cannot read"}
    rows = {line.split("\t")[0]: line.split("\t") for line in summary.path.read_text().splitlines()[1:]}
    assert summary.path.read_text().splitlines()[0].split("\t") == ["file", "status", "records", "hits", "seconds",
                                                                     "error", "output"]
    for name, reason in reasons.items():
        assert status[name].status == "failed" and reason in str(status[name].error), name
        row = rows[os.path.relpath(bad / name, tmp_path)]
        assert row[1] == "failed" and reason in row[5]
        assert not (out / row[6]).exists()
    no_temporaries(out)


def test_failed_files_are_reported_on_stderr(data, tmp_path, capsys):
    summary, _ = run(data, tmp_path, [data["files"][1], tmp_path / "missing.fq"], quiet=False)
    assert summary.exit_status == 1
    err = capsys.readouterr().err
    assert "missing.fq: failed:" in err and "cannot open" in err


@pytest.mark.parametrize("text, message", [
    ("a.fq\tx.sam\textra\n", "list.txt:1: expected 'QUERY [OUTPUT]', found 3 columns"),
    ("# c\na.fq\tsame.sam\n\nb.fq\tsame.sam\n", "list.txt:4: output 'same.sam' is also the output of line 2"),
    ("a.fq\nsub/a.fq\n", "list.txt:2: output 'a.sam' is also the output of line 1"),
    ("a.fq\tdir/x.sam\n", "list.txt:1: output 'dir/x.sam' must be a file name inside the output folder"),
    ("a.fq\t.hidden\n", "list.txt:1: output '.hidden' must be a file name"),
    ("a.fq\tsummary.tsv\n", "list.txt:1: output 'summary.tsv' must be a file name"),
    ("# nothing\n\n", "list.txt: no query files listed"),
])
def test_query_list_errors_name_the_line(tmp_path, text, message):
    listing = tmp_path / "list.txt"
    listing.write_text(text)
    with pytest.raises(QueryListError) as info:
        read_query_list(listing)
    assert str(info.value).endswith(message) or message in str(info.value)
    assert str(info.value).startswith(str(listing))


def test_query_list_paths_outputs_and_missing_list(tmp_path):
    (tmp_path / "sub").mkdir()
    listing = tmp_path / "sub" / "list.txt"
    listing.write_text("# comment\n\nr1.fastq.gz\n../r2.fa  two.bam\n/abs/r3.fq\n")
    entries = read_query_list(listing)
    assert [(q.paths[0], q.line, name) for q, name in entries] == [
        (str(tmp_path / "sub" / "r1.fastq.gz"), 3, "r1.sam"), (str(tmp_path / "r2.fa"), 4, "two.bam"),
        ("/abs/r3.fq", 5, "r3.sam")]
    with pytest.raises(QueryListError, match="no such query list"):
        read_query_list(tmp_path / "nope.txt")
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(QueryListError, match="not a text file"):
        read_query_list(tmp_path / "bin.txt")


def test_unknown_task_and_bad_engine_options(data, tmp_path):
    listing = write_list(tmp_path, data["files"][:1])
    with pytest.raises(ValueError, match="task 'tblastx' is not available"):
        run_pipeline(listing, data["index"], tmp_path / "o", task="tblastx")
    with pytest.raises(ValueError, match="workers must be"):
        Dispatcher(lambda q, n: [], lambda j: None, lambda p: None, lambda q: None, workers=-1)
    with pytest.raises(ValueError, match="queue bound 'job'"):
        QueueBounds(job=0)


# --------------------------------------------------------------------------- the engine on toy stages


class MemorySink:
    """Sink of the toy tests: chunks in a list, committed into ``store``; ``store[output + '.tmp']`` while open."""

    def __init__(self, store, query):
        self.store, self.query, self.parts = store, query, []
        store[query.output + ".tmp"] = True

    def write(self, data):
        self.parts.append(data)

    def commit(self):
        del self.store[self.query.output + ".tmp"]
        self.store[self.query.output] = b"".join(self.parts)

    def abort(self):
        self.store.pop(self.query.output + ".tmp", None)


def toy(store, *, seed=0, prelim_fail=None, finalize_fail=None, workers=3, prelims=3, **options):
    """Payloads are byte strings; prelim upper-cases after a random delay, finalize reverses twice."""
    rng = random.Random(seed)
    delays = [rng.random() * 0.004 for _ in range(1000)]

    def read(query, chunk):
        for path in query.paths:
            if path == "missing":
                raise FastxError(path, None, "cannot open: No such file or directory")
            for i in range(0, len(path), 3):
                yield path[i : i + 3].encode()

    def prelim(job):
        time.sleep(delays[job.serial % 1000])
        if prelim_fail:
            prelim_fail(job)
        return [p.upper() for p in job.payloads]

    def finalize(partial):
        time.sleep(delays[(len(partial) * 7) % 1000])
        if finalize_fail:
            finalize_fail(partial)
        return [Chunk(p, dict(records=1, hits=len(p))) for p in partial]

    return Dispatcher(read, [prelim] * prelims, finalize, lambda q: MemorySink(store, q), workers=workers,
                      size=len, **options)


QUERIES = [QueryFile((f"file{i}-" + "acgt" * i,), f"out{i}") for i in range(12)]


@pytest.mark.parametrize("combine", [False, True])
@pytest.mark.parametrize("workers, prelims", [(0, 1), (0, 3), (1, 1), (4, 3)])
def test_engine_keeps_input_order(workers, prelims, combine):
    store = {}
    results = toy(store, workers=workers, prelims=prelims, combine=combine, job_bytes=7, bounds=TINY).run(QUERIES)
    assert [r.query for r in results] == QUERIES and {r.status for r in results} == {"ok"}
    assert store == {q.output: q.paths[0].upper().encode() for q in QUERIES}
    assert [r.records for r in results] == [-(-len(q.paths[0]) // 3) for q in QUERIES]


@pytest.mark.parametrize("workers", [0, 2])
def test_engine_setup_runs_once_per_prelim_before_its_jobs(workers, tmp_path, monkeypatch):
    calls = []
    lock = threading.Lock()

    def setup_for(i):
        def setup():
            with lock:
                calls.append(("setup", i, threading.current_thread().name))
        return setup

    store = {}
    d = toy(store, workers=workers, prelims=3, job_bytes=7, bounds=TINY, setup=[setup_for(i) for i in range(3)])
    real = d.prelims
    d.prelims = [lambda job, p=p, i=i: (calls.append(("job", i, threading.current_thread().name)), p(job))[1]
                 for i, p in enumerate(real)]
    monkeypatch.setenv("GSEEK_TRACE", str(tmp_path / "t.json"))
    results = d.run(QUERIES)
    assert {r.status for r in results} == {"ok"}
    assert sorted(c[1] for c in calls if c[0] == "setup") == [0, 1, 2]
    for i in range(3):  # each worker's setup comes before any job of that worker
        mine = [c[0] for c in calls if c[1] == i and (workers == 0 or c[2].endswith(f"prelim-{i}"))]
        assert mine[:1] == ["setup"] or not mine
    spans = json.loads((tmp_path / "t.json").read_text())["spans"]
    assert {s["stage"] for s in spans} >= {"read", "prelim", "finalize", "write", "commit"}
    with pytest.raises(ValueError, match="one callable per prelim"):
        toy({}, prelims=2, setup=[None])


def test_engine_file_error_in_a_combined_job_lands_on_its_file():
    store = {}

    def prelim_fail(job):
        if any(p.startswith(b"BAD") or p.startswith(b"bad") for p in job.payloads):
            raise FastxError("bad", 1, "bad payload")

    queries = [QueryFile(("good1",), "g1"), QueryFile(("badfile",), "b"), QueryFile(("missing",), "m"),
               QueryFile(("good2",), "g2")]
    results = toy(store, prelim_fail=prelim_fail, combine=True, job_bytes=100).run(queries)
    assert [r.status for r in results] == ["ok", "failed", "failed", "ok"]
    assert "bad payload" in str(results[1].error) and "cannot open" in str(results[2].error)
    assert store == {"g1": b"GOOD1", "g2": b"GOOD2"}


def test_engine_file_error_in_finalize_and_commit_fail_alone():
    store = {}

    def finalize_fail(partial):
        if any(p.startswith(b"X") for p in partial):
            raise OSError("disk trouble")

    class Picky(MemorySink):
        def commit(self):
            if self.query.output == "nocommit":
                raise FastxError(self.query.output, None, "no records")
            super().commit()

    d = toy(store, finalize_fail=finalize_fail, combine=True, job_bytes=100)
    d.open_output = lambda q: Picky(store, q)
    queries = [QueryFile(("aaa",), "a"), QueryFile(("xyz",), "x"), QueryFile(("ccc",), "nocommit"),
               QueryFile(("ddd",), "d")]
    results = d.run(queries)
    assert [r.status for r in results] == ["ok", "failed", "failed", "ok"]
    assert store == {"a": b"AAA", "d": b"DDD"}


def test_engine_rerun_of_a_failed_job_never_runs_a_prelim_stage_twice_at_once():
    """A finalize error in a job of several files re-runs its payloads through the
    job's prelim stage on the finalize thread while the stage's worker runs the next
    job: the two calls must take turns (a stage's workspace/stream is not shared)."""
    active, overlaps = [0], []
    guard = threading.Lock()

    def prelim(job):
        with guard:
            active[0] += 1
            overlaps.append(active[0])
        time.sleep(0.002)
        with guard:
            active[0] -= 1
        return [p.upper() for p in job.payloads]

    def finalize(partial):
        if any(p.startswith(b"X") for p in partial) and len(partial) > 1:
            raise OSError("disk trouble")  # a file error in a job of several files: re-run one by one
        time.sleep(0.002)
        return [Chunk(p, dict(records=1)) for p in partial]

    store = {}
    d = Dispatcher(lambda q, n: [x.encode() for x in q.paths], prelim, finalize, lambda q: MemorySink(store, q),
                   workers=3, combine=True, job_bytes=6, size=len)
    queries = [QueryFile(("xy" if i % 3 == 1 else f"a{i:02d}",), f"o{i}") for i in range(60)]
    results = d.run(queries)
    assert max(overlaps) == 1, "a prelim stage ran on two threads at once"
    assert all(r.status == "ok" for r in results)  # re-run alone, "XY" passes (one payload)


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("where", ["prelim", "finalize"])
@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_engine_fatal_errors_reach_the_caller_and_stop_everything(workers, where, error):
    store, calls = {}, []

    def fail(item):
        calls.append(1)
        if len(calls) > 5:
            raise error

    d = toy(store, workers=workers, **{f"{where}_fail": fail}, job_bytes=1)
    with pytest.raises(type(error)) as info:
        d.run(QUERIES)
    assert info.value is error
    assert not [k for k in store if k.endswith(".tmp")]  # every open output aborted
    assert len([k for k in store if k.startswith("out")]) < len(QUERIES)


@pytest.mark.parametrize("workers", [0, 2])
def test_engine_interrupt_in_the_callers_thread(workers):
    """Ctrl-C lands in the caller's thread: from a progress hook, and as a real signal."""
    store = {}

    class Hook(Progress):
        def finish(self, result):
            if result.query.output == "out3":
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        toy(store, workers=workers, progress=Hook()).run(QUERIES)
    assert set(store) == {"out0", "out1", "out2", "out3"}

    store.clear()
    sent = threading.Event()

    def interrupt(job):
        if job.serial == 4 and not sent.is_set():
            sent.set()
            _thread.interrupt_main()
            time.sleep(0.3)

    with pytest.raises(KeyboardInterrupt):
        toy(store, workers=workers, prelim_fail=interrupt).run(QUERIES)
        time.sleep(1)  # inline: the signal arrives at the next bytecode
    assert not [k for k in store if k.endswith(".tmp")]


def test_engine_failure_does_not_wait_for_a_stage_that_never_returns(monkeypatch):
    """A run that fails (here: finalize) while another stage never returns (a compute that cannot be
    interrupted, a lock the interrupted caller left held: a pipeline once hung after SIGTERM) ends
    after ``_JOIN_AFTER_ERROR``, its outputs aborted, instead of waiting for that stage forever."""
    from gseek.pipeline import engine

    monkeypatch.setattr(engine, "_JOIN_AFTER_ERROR", 0.5)
    store, stuck, release = {}, threading.Event(), threading.Event()

    def hang(job):
        if job.serial == 3:
            stuck.set()
            release.wait(60)

    def fail(partial):
        if stuck.is_set():
            raise RuntimeError("boom")

    d = toy(store, workers=2, prelims=2, prelim_fail=hang, finalize_fail=fail, job_bytes=1)
    started = time.monotonic()
    try:
        with pytest.raises(RuntimeError, match="boom"):
            d.run(QUERIES)
        assert time.monotonic() - started < 20
        assert not [k for k in store if k.endswith(".tmp")]
    finally:
        release.set()  # the stage returns and its thread ends (no_pipeline_threads checks)
        for t in threading.enumerate():
            if t.name.startswith(THREAD_PREFIX):
                t.join(10)


@pytest.mark.parametrize("workers, prelims", [(1, 1), (2, 4)])
def test_engine_ends_without_waiting_for_its_idle_threads_to_poll(monkeypatch, workers, prelims):
    """A run that succeeds ends when its last output is written: the workers waiting for work are told to
    stop, not left to see the stop signal at their next poll (``_POLL``: 50 ms at the end of every command;
    here made 30 s, so that a run waiting for it would be seen)."""
    from gseek.pipeline import engine

    monkeypatch.setattr(engine, "_POLL", 30.0)
    store = {}
    started = time.monotonic()
    results = toy(store, workers=workers, prelims=prelims, job_bytes=7).run(QUERIES[:3])
    assert time.monotonic() - started < 10
    assert {r.status for r in results} == {"ok"} and len(store) == 3


# --------------------------------------------------------------------------- interrupt, resume, progress


def test_interrupt_leaves_only_complete_outputs_and_resume_finishes(data, tmp_path):
    files = data["files"]

    class StopAfterTwo(Progress):
        def finish(self, result):
            if result.query.name.endswith("s1.fq"):
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(data, tmp_path, files, workers=2, bounds=TINY, job_bytes=4096, progress=StopAfterTwo())
    out = tmp_path / "out"
    no_temporaries(out)
    rows = [line.split("\t") for line in (out / "summary.tsv").read_text().splitlines()[1:]]
    assert [r[1] for r in rows] == ["ok", "ok"] + ["failed"] * 6 and rows[2][5] == "interrupted"
    assert sorted(p.name for p in out.glob("*.sam")) == ["s0.sam", "s1.sam"]

    summary, _ = run(data, tmp_path, files, workers=2, resume=True)
    assert [r.status for r in summary.files] == ["skipped"] * 2 + ["ok"] * 6
    for f, r in zip(files, summary.files):
        assert Path(r.query.output).read_bytes() == reference(data, f)
    assert summary.files[0].records == 1500


def test_resume_skips_complete_outputs_and_redoes_the_rest(data, tmp_path):
    files = data["files"][:5]
    first, out = run(data, tmp_path, files, workers=1)
    stamps = {p.name: p.stat().st_mtime_ns for p in out.glob("*.sam")}
    again, _ = run(data, tmp_path, files, workers=1, resume=True)
    assert [r.status for r in again.files] == ["skipped"] * 5
    assert [r.records for r in again.files] == [r.records for r in first.files]
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.sam")} == stamps

    (out / "s0.sam").unlink()  # incomplete: no output
    with open(out / "s1.sam", "a") as fh:  # an output that is not what was recorded
        fh.write("junk\n")
    (out / ".s0.sam.tmp-99999").write_text("half")  # left by a killed run
    os.utime(files[4], ns=(time.time_ns(), time.time_ns()))  # changed input
    redo, _ = run(data, tmp_path, files, workers=1, resume=True)
    assert [r.status for r in redo.files] == ["ok", "ok", "skipped", "skipped", "ok"]
    for f, r in zip(files, redo.files):
        assert Path(r.query.output).read_bytes() == reference(data, f)
    no_temporaries(out)

    other, _ = run(data, tmp_path, files, workers=1, resume=True, mismatches=1)  # other options: redo all
    assert [r.status for r in other.files] == ["ok"] * 5
    (out / MANIFEST_NAME).write_text("{not json")
    lost, _ = run(data, tmp_path, files[:1], workers=1, resume=True, mismatches=1)
    assert [r.status for r in lost.files] == ["ok"]


def test_progress_bars_on_request(data, tmp_path, capsys, monkeypatch):
    """progress=True draws tqdm bars on stderr that advance to the end: the
    overall bar to every file, with the records and hits in its postfix, and
    each file's bar to that file's records."""
    import tqdm

    bars = []

    class Recorded(tqdm.tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            bars.append(self)

    monkeypatch.setattr(tqdm, "tqdm", Recorded)
    files = [data["files"][0], data["files"][3], data["files"][1]]
    summary, _ = run(data, tmp_path, files, progress=True, workers=2, job_bytes=4096)
    assert summary.exit_status == 0
    records, hits = sum(r.records for r in summary.files), sum(r.hits for r in summary.files)
    assert records > 2000 and hits > 0
    overall, *per_file = bars
    assert (overall.n, overall.total) == (3, 3)
    shown = {f"records={records:,}", f"hits={hits:,}"}
    assert set(overall.postfix.split(", ")) == shown
    assert sorted((bar.desc, bar.n) for bar in per_file) == sorted((f.name, r.records)
                                                                   for f, r in zip(files, summary.files))
    last = capsys.readouterr().err.rsplit("gseek pipeline:", 1)[-1]  # the overall bar as closed
    assert last.startswith(" 100%") and "| 3/3 [" in last and all(text in last for text in shown)


def test_a_stage_error_in_a_combined_job_fails_only_its_file(data, tmp_path, monkeypatch):
    """A FastxError raised by the mapping stage for a job that combines several small files
    is re-run batch by batch, so only the file that holds the bad record fails."""
    from gseek.errors import FastxError
    from gseek.mapper import Mapper

    real_search = Mapper.search

    def map_or_fail(self, batch):
        names = batch.name_list()
        if "poison" in names:
            raise FastxError(batch.path, int(batch.lines[names.index("poison")]), "poisoned read")
        return real_search(self, batch)

    poison = tmp_path / "poison.fq"
    poison.write_text("".join(f"@{name}\n{'ACGT' * 10}\n+\n{'I' * 40}\n" for name in ("ok", "poison")))
    files = [data["files"][0], poison, data["files"][3]]
    expected = {f.name: reference(data, f) for f in (files[0], files[2])}
    monkeypatch.setattr(Mapper, "search", map_or_fail)
    summary, out = run(data, tmp_path, files, workers=2, job_bytes=1 << 22)  # one job holds all three files
    status = {Path(r.query.name).name: r for r in summary.files}
    assert status["poison.fq"].status == "failed" and "poison.fq:5: poisoned read" in str(status["poison.fq"].error)
    for name, text in expected.items():
        assert status[name].status == "ok"
        assert Path(status[name].query.output).read_bytes() == text
    no_temporaries(out)

"""Dask distributed runs (issue 19): the same bytes as one process, a lost worker, a bad file alone.

One ``LocalCluster`` of two worker processes (one thread each) serves the
module. A worker is lost mid-run by a worker plugin that ends its own
process (``os._exit``) when the first task of the run starts executing; the
nanny starts a new one, the scheduler runs the task again elsewhere.
"""

from __future__ import annotations

import logging
import os
import pickle
import re
import sys
import time
import types
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

import cloudpickle  # noqa: E402 - a dependency of distributed
from distributed.diagnostics.plugin import WorkerPlugin  # noqa: E402

from gseek.backend import CpuBackend  # noqa: E402
from gseek.cli import main  # noqa: E402
from gseek.datasets import lambda_genome  # noqa: E402
from gseek.datasets.simulate import dp_families, kmismatch_reads  # noqa: E402
from gseek.errors import ClusterError, FastxError, IndexFormatError, OutputError, Terminated  # noqa: E402
from gseek.index import Index  # noqa: E402
from gseek.pipeline import align_files, align_pairs_files, run_pipeline  # noqa: E402
from gseek.seqio import write_fasta, write_fastq  # noqa: E402

CMD = "gseek pipeline --cluster-test"
# The plugin below travels to the workers by value (they cannot import this module).
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def client():
    import dask

    config = {
        "distributed.scheduler.allowed-failures": 1,  # a task lost with 2 workers: KilledWorker
        "distributed.scheduler.worker-saturation": 1.0,  # a worker holds only the task it runs (docs/cluster.md)
        # the cluster closes a nanny whose worker has not come back this long after a loss, even when it
        # is restarting it after a second one (tests kill workers seconds apart)
        "distributed.deploy.lost-worker-timeout": "1h",
        # a cluster left with no worker fails the waiting tasks (the test) instead of hanging the run
        "distributed.scheduler.no-workers-timeout": "120s",
    }
    with dask.config.set(config):
        cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, memory_limit=0,
                                           dashboard_address=None, silence_logs=logging.CRITICAL,
                                           scheduler_kwargs={"dashboard_address": ":0"})
        with distributed.Client(cluster) as c:
            yield c
        cluster.close()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A saved lambda index, five read files, a malformed one and a missing one; a set of sequences."""
    root = tmp_path_factory.mktemp("cluster")
    index = Index.build(lambda_genome(), wgram=8, device="cpu").save(root / "lambda.gseek")
    files = []
    for i, n in enumerate([400, 3, 150, 60, 250]):
        path = root / f"s{i}.fq"
        write_fastq(path, kmismatch_reads(lambda_genome(), n, (20, 150), 3, seed=40 + i, n_rate=0.01,
                                          random_fraction=0.1).records())
        files.append(path)
    bad = root / "bad.fq"
    bad.write_text("@r1\nACGTACGTACGTACGTACGT\n+\nIIII\n")
    files[2:2] = [bad]
    files.append(root / "missing.fq")
    (root / "list.txt").write_text("".join(f"{p.name}\n" for p in files))
    seqs = root / "seqs.fa"
    fam = dp_families(3, 5, 120, seed=7, max_divergence=0.2)
    write_fasta(seqs, fam.records)
    names = [n for n, _ in fam.records]
    pairs = root / "pairs.tsv"
    pairs.write_text("".join(f"{names[i]}\t{names[(7 * i + 2) % len(names)]}\n" for i in range(len(names))))
    return dict(root=root, index=index, files=files, seqs=seqs, pairs=pairs)


#: A worker ends itself only once its process has been up this long: one that dies as its nanny is still
#: starting it is not started again (the nanny gives up), and the cluster would stay one short (or,
#: both lost, hang the run). Dask runs a task again after each loss (``allowed-failures``, gseek's
#: ``retries``), so young workers are killed too; their start takes seconds on a loaded 2-core
#: machine (2 s was too short once in CI). The worker's event loop waits, so the task cannot
#: finish meanwhile; backup copies are off while a plugin kills (:class:`_killing`).
SETTLED = 10.0


class _Killer(WorkerPlugin):
    def die(self):
        import psutil  # a dependency of distributed

        time.sleep(max(0.0, psutil.Process().create_time() + SETTLED - time.time()))  # the process's age
        os._exit(1)


class KillOnce(_Killer):
    """Ends its worker's process when the first task whose key starts with ``prefix`` starts
    executing, once for the whole cluster (the ``marker`` file says it happened)."""

    def __init__(self, marker: str, prefix: str) -> None:
        self.marker, self.prefix = marker, prefix

    def transition(self, key, start, finish, **kwargs):
        if finish == "executing" and str(key).startswith(self.prefix):
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return
            self.die()


class KillAlways(_Killer):
    """Ends its worker's process whenever the task ``PREFIX...-serial`` starts executing."""

    def __init__(self, prefix: str, serial: int) -> None:
        self.prefix, self.serial = prefix, str(serial)

    def transition(self, key, start, finish, **kwargs):
        if finish == "executing" and str(key).startswith(self.prefix) and str(key).rsplit("-", 1)[1] == self.serial:
            self.die()


class _killing:
    """A killing plugin on every worker for the length of a ``with`` block, without backup copies (a
    job held by a dying worker's wait would straggle, and its copy finish elsewhere); the cluster
    has its two workers again at the end."""

    name = ""

    def __init__(self, client, plugin: _Killer) -> None:
        self.client, self.plugin = client, plugin

    def __enter__(self):
        import gseek.pipeline.cluster as cluster_module

        self.backup_after, cluster_module.BACKUP_AFTER = cluster_module.BACKUP_AFTER, None
        self.client.register_plugin(self.plugin, name=self.name)
        return self

    def __exit__(self, *exc):
        import gseek.pipeline.cluster as cluster_module

        cluster_module.BACKUP_AFTER = self.backup_after
        self.client.unregister_worker_plugin(self.name)
        self.client.wait_for_workers(2, timeout=60)


class always_killing(_killing):
    """:class:`KillAlways` for the length of a ``with`` block."""

    name = "kill-always"

    def __init__(self, client, prefix: str, serial: int) -> None:
        super().__init__(client, KillAlways(prefix, serial))


class killing_a_worker(_killing):
    """:class:`KillOnce` for the length of a ``with`` block (``killed``: it happened)."""

    name = "kill-once"

    def __init__(self, client, tmp_path: Path, prefix: str) -> None:
        self.marker = tmp_path / "killed"
        super().__init__(client, KillOnce(str(self.marker), prefix))

    @property
    def killed(self) -> bool:
        return self.marker.exists()


def no_tasks_left(client) -> None:
    """The run's results were released as they came in: a worker lost later has nothing of it to redo."""

    def gseek_tasks(dask_scheduler):
        return sorted(str(k) for k in dask_scheduler.tasks if str(k).startswith("gseek-"))

    # 30 s: a loaded 2-core machine (the run's threads release their jobs as they look at the stop signal again:
    # POLL_SECONDS; until 3da013d a job whose result was lost as it was gathered waited for its run again, >10 s)
    deadline = time.monotonic() + 30
    while (left := client.run_on_scheduler(gseek_tasks)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left == []


def summary_rows(path: Path) -> list[list[str]]:
    """summary.tsv without the seconds column."""
    return [row[:4] + row[5:] for row in (line.split("\t") for line in path.read_text().splitlines())]


def outputs(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.suffix == ".sam"}


_LOCAL: dict = {}


def local_pipeline(data) -> Path:
    """The single-process run of the list (once)."""
    if "out" not in _LOCAL:
        out = data["root"] / "local"
        run_pipeline(data["root"] / "list.txt", data["index"], out, devices=[CpuBackend(1)], progress=False,
                     quiet=True, command=CMD)
        _LOCAL["out"] = out
    return _LOCAL["out"]


def cluster_pipeline(client, data, out: Path, **options):
    options.setdefault("quiet", True)
    return run_pipeline(data["root"] / "list.txt", data["index"], out, devices=["cpu"], threads=1, progress=False,
                        command=CMD, client=client, **options)


def no_temporaries(folder: Path) -> None:
    left = [p.name for p in folder.iterdir() if ".tmp-" in p.name]
    assert not left, f"temporary files left: {left}"


# --------------------------------------------------------------------------- pipeline


def test_pipeline_on_a_cluster_writes_the_local_outputs_and_a_bad_file_fails_alone(client, data, tmp_path):
    local = local_pipeline(data)
    summary = cluster_pipeline(client, data, tmp_path / "out", job_bytes=2048)
    assert [r.status for r in summary.files] == ["ok", "ok", "failed", "ok", "ok", "ok", "failed"]
    assert outputs(tmp_path / "out") == outputs(local) and len(outputs(local)) == 5
    assert summary_rows(tmp_path / "out" / "summary.tsv") == summary_rows(local / "summary.tsv")
    no_tasks_left(client)
    assert "bad.fq:4: " in summary.files[2].error.args[0] and isinstance(summary.files[2].error, FastxError)
    no_temporaries(tmp_path / "out")
    again = cluster_pipeline(client, data, tmp_path / "out", resume=True)
    assert [r.status for r in again.files] == ["skipped", "skipped", "failed", "skipped", "skipped", "skipped",
                                               "failed"]
    assert [r.records for r in again.files] == [r.records for r in summary.files]


def test_pipeline_worker_lost_mid_run_still_writes_every_record_once(client, data, tmp_path, capsys):
    with killing_a_worker(client, tmp_path, "gseek-file-") as kill:
        summary = cluster_pipeline(client, data, tmp_path / "out", quiet=False)
    assert kill.killed
    assert outputs(tmp_path / "out") == outputs(local_pipeline(data))
    assert [r.status for r in summary.files].count("ok") == 5
    err = capsys.readouterr().err
    assert "was lost during the run" in err and "run again on other workers" in err, err
    no_temporaries(tmp_path / "out")


def test_pipeline_file_whose_worker_always_dies_fails_alone(client, data, tmp_path):
    with always_killing(client, "gseek-file-", 3):  # the 4th file: s2.fq
        summary = cluster_pipeline(client, data, tmp_path / "out")
    no_tasks_left(client)
    assert [r.status for r in summary.files] == ["ok", "ok", "failed", "failed", "ok", "ok", "failed"]
    assert "its worker died each time it ran" in str(summary.files[3].error)
    local = outputs(local_pipeline(data))
    del local["s2.sam"]
    assert outputs(tmp_path / "out") == local
    no_temporaries(tmp_path / "out")


def test_pipeline_align_task_on_a_cluster(client, data, tmp_path):
    import gseek

    (tmp_path / "list.txt").write_text(f"{data['seqs']}\ta.tsv\n{data['pairs']}\tnot-fasta.tsv\n")
    runs = {}
    for name, extra in (("local", {}), ("cluster", dict(client=client))):
        runs[name] = gseek.run_pipeline(tmp_path / "list.txt", data["seqs"], tmp_path / name, task="align",
                                        device="cpu", threads=1, progress=False, quiet=True, mode="local",
                                        traceback=True, job_bytes=300, **extra)
    assert [r.status for r in runs["cluster"].files] == [r.status for r in runs["local"].files] == ["ok", "failed"]
    assert str(runs["cluster"].files[1].error) == str(runs["local"].files[1].error)
    assert (tmp_path / "cluster" / "a.tsv").read_bytes() == (tmp_path / "local" / "a.tsv").read_bytes()


def test_pipeline_paired_end_sorted_bam_on_a_cluster(client, data, tmp_path):
    from gseek.datasets.simulate import kmismatch_pairs

    kmismatch_pairs(lambda_genome(), 200, 50, (100, 300), 2, seed=5, random_fraction=0.1).write(
        tmp_path / "a.fq", tmp_path / "b.fq")
    (tmp_path / "list.txt").write_text(f"a.fq b.fq pairs.bam\n{data['files'][0]} single.bam\n")
    for name, extra in (("local", {}), ("cluster", dict(client=client))):
        summary = run_pipeline(tmp_path / "list.txt", data["index"], tmp_path / name, device="cpu", threads=1,
                               progress=False, quiet=True, command=CMD, **extra)
        assert [r.status for r in summary.files] == ["ok", "ok"], summary.files
    for out in ("pairs.bam", "pairs.bam.bai", "single.bam"):
        assert (tmp_path / "cluster" / out).read_bytes() == (tmp_path / "local" / out).read_bytes(), out
    no_temporaries(tmp_path / "cluster")


def test_pipeline_megablast_on_a_cluster(client, data, tmp_path):
    from gseek.seqio import read_fastx

    genome = read_fastx(lambda_genome()).sequence(0)
    write_fasta(tmp_path / "q.fa", [(f"q{i}", genome[i * 997: i * 997 + 300]) for i in range(12)])
    (tmp_path / "list.txt").write_text("q.fa\n")
    runs = {}
    for name, extra in (("local", {}), ("cluster", dict(client=client))):
        runs[name] = run_pipeline(tmp_path / "list.txt", data["index"], tmp_path / name, task="megablast",
                                  device="cpu", threads=1, progress=False, quiet=True, **extra)
    assert [r.status for r in runs["cluster"].files] == ["ok"] and runs["cluster"].files[0].hits >= 12
    assert (tmp_path / "cluster" / "q.tsv").read_bytes() == (tmp_path / "local" / "q.tsv").read_bytes()


@pytest.fixture(scope="module")
def blast_data(data):
    """A database of lambda cut into five contigs plus a reverse-complemented copy of a region (so
    queries hit subjects in two shards), two query files (slices across the cuts, and random
    sequences) and a malformed one between them."""
    from gseek.seqio import read_fastx

    genome = read_fastx(lambda_genome()).sequence(0).upper()
    cuts = (0, 6000, 15000, 26000, 38000, len(genome))
    contigs = [genome[a:b] for a, b in zip(cuts[:-1], cuts[1:])]
    contigs.append(genome[2000:7000][::-1].translate(str.maketrans("ACGT", "TGCA")))
    root = data["root"] / "blast"
    root.mkdir()
    write_fasta(root / "db.fa", [(f"c{i}", c) for i, c in enumerate(contigs)])
    index = Index.build(root / "db.fa", wgram=4, device="cpu").save(root / "db.gseek")
    write_fasta(root / "a.fa", [(f"q{i}", genome[i * 2300 + 500: i * 2300 + 1400]) for i in range(20)])
    rng = __import__("numpy").random.default_rng(3)
    write_fasta(root / "b.fa", [(f"r{i}", "".join(rng.choice(list("ACGT"), 400))) for i in range(3)]
                + [("s", genome[5500:6600])])
    (root / "bad.fa").write_text(">x\nACGT\n@oops\n")
    (root / "list.txt").write_text("a.fa\nbad.fa\nb.fa\n")
    return dict(root=root, index=index)


def blast_runs(client, blast_data, tmp_path, split="database", **cluster_options):
    """The list searched in one process (unsplit) and on the cluster (the database split, or jobs
    of query batches as the tasks)."""
    options = dict(task="blastn", threads=1, progress=False, quiet=True, outfmt="7 std qseq sseq btop",
                   max_target_seqs=3, job_bytes=4000)
    local = run_pipeline(blast_data["root"] / "list.txt", blast_data["index"], tmp_path / "local", device="cpu",
                         **options)
    options.update(cluster_options)
    remote = run_pipeline(blast_data["root"] / "list.txt", blast_data["index"], tmp_path / "cluster", device="cpu",
                          client=client, split=split, **options)
    return local, remote


def test_blast_jobs_on_a_cluster_write_the_one_process_bytes(client, blast_data, tmp_path):
    """Without the database split, a BLAST job (a batch of queries), not a file, is a task: the
    bytes of one process, the bad file alone failing, every job run once."""
    local, remote = blast_runs(client, blast_data, tmp_path, split="queries")
    assert [r.status for r in remote.files] == [r.status for r in local.files] == ["ok", "failed", "ok"]
    for name in ("a.tsv", "b.tsv"):
        assert (tmp_path / "cluster" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
    assert remote.stats["jobs_sent"] > 3 and sum(remote.stats["jobs_by_worker"].values()) == remote.stats["jobs_sent"]
    # files are not combined into one job (one search: one searcher busy): each file its own job(s)
    _, whole = blast_runs(client, blast_data, tmp_path / "big", split="queries", job_bytes=8 << 20)
    assert whole.stats["jobs_sent"] == 2  # a.fa and b.fa (bad.fa fails as it is read)
    no_temporaries(tmp_path / "cluster")
    no_tasks_left(client)


def test_blast_database_split_across_workers_writes_the_unsplit_bytes(client, blast_data, tmp_path):
    local, remote = blast_runs(client, blast_data, tmp_path)
    assert [r.status for r in remote.files] == [r.status for r in local.files] == ["ok", "failed", "ok"]
    assert "bad.fa:3" in str(remote.files[1].error)
    for name in ("a.tsv", "b.tsv"):
        assert (tmp_path / "cluster" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
    assert (tmp_path / "local" / "a.tsv").read_text().count("\n") > 40
    assert summary_rows(tmp_path / "cluster" / "summary.tsv") == summary_rows(tmp_path / "local" / "summary.tsv")
    assert len(remote.stats["jobs_by_worker"]) == 2  # a shard on each worker
    no_temporaries(tmp_path / "cluster")
    no_tasks_left(client)
    again = run_pipeline(blast_data["root"] / "list.txt", blast_data["index"], tmp_path / "cluster", task="blastn",
                         device="cpu", threads=1, progress=False, quiet=True, outfmt="7 std qseq sseq btop",
                         max_target_seqs=3, resume=True)  # one fingerprint for both forms of the search
    assert [r.status for r in again.files] == ["skipped", "failed", "skipped"]


def test_blast_database_split_worker_lost_mid_run_still_writes_every_hit_once(client, blast_data, tmp_path, capsys):
    with killing_a_worker(client, tmp_path, "gseek-shard-") as kill:
        _, remote = blast_runs(client, blast_data, tmp_path, quiet=False)
    assert kill.killed
    assert [r.status for r in remote.files] == ["ok", "failed", "ok"]
    for name in ("a.tsv", "b.tsv"):
        assert (tmp_path / "cluster" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
    assert "was lost during the run" in capsys.readouterr().err


def test_cli_blast_database_split_with_scheduler(client, blast_data, tmp_path, capsys):
    base = ["--device", "cpu", "-p", "1", "pipeline", "--task", "megablast", "--queries",
            blast_data["root"] / "list.txt", "-x", blast_data["index"], "--outfmt", "6 std btop"]
    assert gseek([*base, "--outdir", tmp_path / "local"], capsys)[0] == 1  # bad.fa fails
    code, _, err = gseek([*base, "--outdir", tmp_path / "cluster", "--split", "database", "--scheduler",
                          client.scheduler.address], capsys)
    assert code == 1 and "2 ok, 1 failed" in err, err
    for name in ("a.tsv", "b.tsv"):
        assert (tmp_path / "cluster" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name


def test_a_cluster_run_needs_a_saved_index_and_takes_no_gpu_list(client, data, tmp_path):
    from gseek.errors import OptionError

    unsaved = Index.build(lambda_genome(), wgram=8, device="cpu")
    with pytest.raises(OptionError, match="saved index"):
        run_pipeline(data["root"] / "list.txt", unsaved, tmp_path / "a", client=client, progress=False, quiet=True)
    with pytest.raises(OptionError, match="gpus"):
        run_pipeline(data["root"] / "list.txt", data["index"], tmp_path / "b", gpus=[0], client=client,
                     progress=False, quiet=True)


def test_each_worker_builds_the_task_once(client, data, tmp_path):
    def runtimes():
        from gseek.pipeline import cluster

        return sorted(id(task) for task, _ in cluster._RUNTIMES.values() if type(task).__name__ == "MapTask")

    cluster_pipeline(client, data, tmp_path / "a")
    before = client.run(runtimes)
    cluster_pipeline(client, data, tmp_path / "b")
    assert client.run(runtimes) == before and all(len(ids) <= 1 for ids in before.values())


def test_two_jobs_on_one_worker_run_at_once_on_different_stages():
    """A worker with two threads runs two jobs at once, each on a free prelim stage (two searchers or
    aligners of one GPU); a third waits for one to come free; a file task holds every stage."""
    import threading

    import gseek.pipeline.cluster as cluster_module


    both = threading.Barrier(2, timeout=5)
    used: list[int] = []

    class Task:
        def prelims(self):
            return [lambda job, k=k: (used.append(k), both.wait()) for k in range(2)]

    task = Task()
    out: list = []

    def job():
        prelim, slot = cluster_module._free_stage(task)
        try:
            out.append(prelim(None))  # both jobs must be inside a stage for the barrier to open
        finally:
            slot.release()

    threads = [threading.Thread(target=job) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(used) == [0, 1] and len(out) == 2
    slots = cluster_module._prelim_slots(task)
    assert slots is cluster_module._prelim_slots(task) and len(slots) == 2
    for _, slot in slots:
        slot.acquire()
    waiting = threading.Thread(target=lambda: out.append(cluster_module._free_stage(task)))
    waiting.start()
    waiting.join(0.2)
    assert waiting.is_alive()  # every stage taken: it waits
    slots[1][1].release()
    waiting.join(5)
    assert not waiting.is_alive() and out[-1][1] is slots[1][1]


def test_runtime_is_kept_per_spec_until_its_source_changes(data, tmp_path):
    from gseek.pipeline import cluster
    from gseek.pipeline.tasks import TaskSpec

    targets = tmp_path / "t.fa"
    targets.write_text(">t\nACGTACGTAC\n")
    spec = TaskSpec.of("align", str(targets), dict(mode="local"), ["cpu"], 1)
    first, lock = cluster.runtime(spec)
    assert cluster.runtime(spec) == (first, lock)
    other = [cluster.runtime(TaskSpec.of("align", str(targets), dict(mode=m), ["cpu"], 1))[0]
             for m in ("global", "semiglobal")]  # two more: the first is dropped (KEEP_RUNTIMES = 2)
    assert cluster.runtime(spec)[0] is not first and cluster.runtime(spec)[0] is cluster.runtime(spec)[0]
    again = cluster.runtime(spec)[0]
    os.utime(targets, ns=(0, 0))  # the targets changed: built again
    assert cluster.runtime(spec)[0] is not again and len(other) == 2


# --------------------------------------------------------------------------- align


ALIGN = dict(device="cpu", threads=1, mode="local", traceback=True, batch_pairs=9)


@pytest.mark.parametrize("form", ["all-vs-all", "pairs", "query-vs-targets"])
def test_align_on_a_cluster_is_byte_identical(client, data, tmp_path, form):
    outs = []
    for name, extra in (("local.tsv", {}), ("cluster.tsv", dict(client=client))):
        out = tmp_path / name
        if form == "all-vs-all":
            done = align_pairs_files(data["seqs"], out, **ALIGN, **extra)
        elif form == "pairs":
            done = align_pairs_files(data["seqs"], out, queries=data["seqs"], pairs=data["pairs"], **ALIGN, **extra)
        else:
            done = align_files(data["seqs"], data["seqs"], out, job_bytes=300, **ALIGN, **extra)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and outs[0].count(b"\n") > 15
    assert done["device"].startswith("Dask cluster tcp://")


def remote_stats(monkeypatch) -> dict:
    """The stats of the last cluster ``align`` run (jobs per worker, backup copies), filled as it ends."""
    import gseek.pipeline.cluster_jobs as cluster_jobs

    seen: dict = {}
    real = cluster_jobs._RemoteDispatcher.run

    def run(self, queries):
        try:
            return real(self, queries)
        finally:
            seen.update(self.stats)

    monkeypatch.setattr(cluster_jobs._RemoteDispatcher, "run", run)
    return seen


def test_backup_copies_at_the_run_s_end_change_no_row(client, data, tmp_path, monkeypatch):
    """Every job of the run's end gets a backup copy on an idle worker at once (``BACKUP_AFTER`` 0):
    whichever copy finishes first, the rows are the single-process ones, each once; each job is
    counted once, for the worker whose copy was used."""
    import gseek.pipeline.cluster as cluster_module
    import gseek.pipeline.cluster_jobs as cluster_jobs

    align_pairs_files(data["seqs"], tmp_path / "local.tsv", **ALIGN)
    monkeypatch.setattr(cluster_module, "BACKUP_AFTER", 0.0)
    monkeypatch.setattr(cluster_module, "POLL_SECONDS", 0.001)  # looks again before the last job is done
    # every worker counts as idle: the copies go to a worker that may also run the original
    monkeypatch.setattr(cluster_jobs._RemoteStage, "_idle_workers",
                        lambda self: list(self.client.scheduler_info()["workers"]))
    seen = remote_stats(monkeypatch)
    sent = []
    for _ in range(4):  # whether a copy goes out depends on timing: until one does
        align_pairs_files(data["seqs"], tmp_path / "cluster.tsv", client=client, **ALIGN)
        assert (tmp_path / "cluster.tsv").read_bytes() == (tmp_path / "local.tsv").read_bytes()
        assert sum(seen["jobs_by_worker"].values()) == seen["jobs_sent"] > 5
        sent.append(seen["backups_sent"])
        if sent[-1]:
            break
    assert sent[-1] >= 1, sent  # the last jobs ran while a worker idled


class SlowWorker(WorkerPlugin):
    """Makes one worker (the one of address ``slow``) take ``delay`` seconds more for every job,
    as a CPU worker among GPU workers would: its tasks' function looked up by name, patched."""

    def __init__(self, slow: str, delay: float) -> None:
        self.slow, self.delay = slow, delay

    def setup(self, worker):
        import gseek.pipeline.cluster as module

        self.module, self.original = module, module._run_stages
        if worker.address == self.slow:
            delay, original = self.delay, self.original

            def slowly(*args, **kwargs):
                time.sleep(delay)
                return original(*args, **kwargs)

            module._run_stages = slowly

    def teardown(self, worker):
        self.module._run_stages = self.original


def test_a_slow_worker_holds_neither_the_writer_nor_the_end(client, data, tmp_path, monkeypatch):
    """One of the two workers takes 4 s more per job: its jobs get backup copies on the other
    worker once that one idles (the writer waits for them in order), so the run takes far less
    than the slow worker's share, and the rows are the single-process ones."""
    import gseek.pipeline.cluster as cluster_module

    align_pairs_files(data["seqs"], tmp_path / "local.tsv", **ALIGN)
    monkeypatch.setattr(cluster_module, "BACKUP_AFTER", 0.5)
    seen = remote_stats(monkeypatch)
    slow = sorted(client.scheduler_info()["workers"])[0]
    client.register_plugin(SlowWorker(slow, 4.0), name="slow-worker")
    try:
        started = time.monotonic()
        align_pairs_files(data["seqs"], tmp_path / "cluster.tsv", client=client, **ALIGN)
        took = time.monotonic() - started
    finally:
        client.unregister_worker_plugin("slow-worker")
    assert (tmp_path / "cluster.tsv").read_bytes() == (tmp_path / "local.tsv").read_bytes()
    assert seen["backups_used"] >= 1, seen
    slow_name = str(client.scheduler_info()["workers"][slow]["name"])
    # without copies the slow worker's jobs (about half of them) would take 4 s each
    assert took < 4.0 * seen["jobs_sent"] / 2, (took, seen)
    assert seen["jobs_by_worker"].get(slow_name, 0) < seen["jobs_sent"] / 2, seen
    # once timed as slow it gets no new job: only those already on their way (four in flight) need copies,
    # and the run does not wait for the one it is still running
    assert seen["backups_sent"] <= 4 and took < 4.0, (took, seen)


class GpuWorker(WorkerPlugin):
    """Makes one worker (of address ``gpu``) say its stages run on a GPU (``_device_kind``)."""

    def __init__(self, gpu: str) -> None:
        self.gpu = gpu

    def setup(self, worker):
        import gseek.pipeline.cluster as module

        self.module, self.original = module, module._device_kind
        if worker.address == self.gpu:
            module._device_kind = lambda spec: "gpu"

    def teardown(self, worker):
        self.module._device_kind = self.original


def test_a_cpu_worker_beside_a_gpu_worker_runs_no_job(client, data, tmp_path, monkeypatch):
    """One worker says it has a GPU: every job of the run goes to it (the other is asked its kind
    once, and runs nothing), the rows are the single-process ones."""
    align_pairs_files(data["seqs"], tmp_path / "local.tsv", **ALIGN)
    seen = remote_stats(monkeypatch)
    gpu = sorted(client.scheduler_info()["workers"])[1]
    client.register_plugin(GpuWorker(gpu), name="gpu-worker")
    try:
        align_pairs_files(data["seqs"], tmp_path / "cluster.tsv", client=client, **ALIGN)
    finally:
        client.unregister_worker_plugin("gpu-worker")
    assert (tmp_path / "cluster.tsv").read_bytes() == (tmp_path / "local.tsv").read_bytes()
    gpu_name = str(client.scheduler_info()["workers"][gpu]["name"])
    assert seen["jobs_by_worker"] == {gpu_name: seen["jobs_sent"]} and seen["jobs_sent"] > 3, seen
    no_tasks_left(client)


class StandInClient:
    """What :class:`~gseek.pipeline.cluster_jobs._RemoteStage` asks a client when it places a job."""

    def __init__(self, processing: dict[str, list[str]]) -> None:
        self.jobs = processing

    def processing(self) -> dict[str, list[str]]:
        return self.jobs

    def nthreads(self) -> dict[str, int]:
        return dict.fromkeys(self.jobs, 1)


def test_a_slow_worker_gets_no_new_job_and_copies_go_to_the_fastest_idle_worker():
    """The choosing logic: a worker timed at ``SLOW_WORKER`` times the run's median job (and at least
    ``BACKUP_AFTER`` s) is left out of new jobs' workers; a copy goes to the idle worker timed
    fastest, then to one not timed yet, never to one that would not beat the running copy."""
    import gseek.pipeline.cluster as cluster_module
    import gseek.pipeline.cluster_jobs as cluster_jobs

    assert cluster_module.BACKUP_AFTER == 2.0 and cluster_module.SLOW_WORKER == 10.0
    stage = cluster_jobs._RemoteStage(StandInClient({"gpu": [], "cpu0": [], "cpu1": ["job-3"], "new": []}),
                                        None, "token", 0)
    stage.kinds = dict.fromkeys(stage.client.jobs, "?")  # workers that did not say their kind: timings alone
    assert stage._slow() == set() and stage._placement() == {}  # nothing timed yet
    stage.seconds = [0.1] * 20
    stage.timings = {"gpu": [0.1] * 20, "cpu0": [3.0], "cpu1": [5.0, 2.5, 6.0]}
    assert stage._slow() == {"cpu0", "cpu1"}
    assert stage._placement() == {"workers": ["gpu", "new"], "allow_other_workers": False}
    assert stage._backup_worker(2.5) == "gpu"
    stage.client.jobs["gpu"] = ["job-4"]
    assert stage._backup_worker(2.5) == "new"
    stage.client.jobs["new"] = ["job-5"]
    assert stage._backup_worker(2.5) is None  # cpu0 takes 3 s a job: no faster than the running copy
    assert stage._backup_worker(7.0) == "cpu0"
    stage.timings = {"gpu": [0.1] * 20, "cpu0": [0.3, 1.5]}  # slower, not slow: it keeps its share
    assert stage._slow() == set() and stage._placement() == {}
    # copies a worker lost: only a lower bound of its time. A worker none of whose jobs was used is
    # timed by the longest (a CPU worker whose first job lost to a GPU copy after 2.4 s: slow, even
    # after a copy it lost 0.3 s after it was sent); a worker that finishes jobs, by those alone (a
    # GPU worker's copy lost after 5 s in its queue does not make it slow)
    stage.timings = {"gpu": [0.1] * 20}
    stage.lower = {"cpu0": [2.4, 0.3], "gpu": [5.0]}
    assert stage._estimate("cpu0") == 2.4 and stage._estimate("gpu") == 0.1 and stage._estimate("new") is None
    assert stage._slow() == {"cpu0"}
    assert stage._placement() == {"workers": ["cpu1", "gpu", "new"], "allow_other_workers": False}
    stage.lower = {}
    stage.client.jobs = {"gpu": [], "cpu0": []}
    stage.timings = {"gpu": [3.0], "cpu0": [4.0]}  # every worker slow: no restriction
    stage.seconds = [0.1]
    assert stage._slow() == {"gpu", "cpu0"} and stage._placement() == {}


def test_cpu_workers_beside_a_gpu_worker_get_no_job_nor_copy():
    """The kinds the workers said (``_device_kind``): while a GPU worker is up, the CPU workers are
    left out of new jobs and backup copies before any job is timed (a worker of no known kind is
    not); once no GPU worker is up, they take jobs again."""
    import gseek.pipeline.cluster_jobs as cluster_jobs

    stage = cluster_jobs._RemoteStage(StandInClient({"gpu": ["job-1"], "cpu0": [], "cpu1": [], "new": []}),
                                        None, "token", 0)
    stage.kinds = {"gpu": "gpu", "cpu0": "cpu", "cpu1": "cpu", "new": "?"}
    assert stage._placement() == {"workers": ["gpu", "new"], "allow_other_workers": False}
    assert stage._backup_worker(30.0) == "new"  # the idle CPU workers are not asked
    stage.client.jobs["new"] = ["job-2"]
    assert stage._backup_worker(30.0) is None
    stage.kinds["new"] = "cpu"
    assert stage._placement() == {"workers": ["gpu"], "allow_other_workers": False}
    for other in ("cpu0", "cpu1", "new"):  # the others restarting, the GPU worker up alone: still restricted
        stage.client.jobs.pop(other)
    assert stage._placement() == {"workers": ["gpu"], "allow_other_workers": False}
    stage.client.jobs.update(cpu0=[], cpu1=[], new=["job-2"])
    del stage.client.jobs["gpu"]  # the GPU worker left
    assert stage._placement() == {} and stage._backup_worker(30.0) == "cpu0"
    # a worker that came later and has not said its kind yet (asked without waiting): no job meanwhile
    stage.client.jobs["late"] = []
    stage._asking["late"] = types.SimpleNamespace(status="pending")
    assert stage._placement() == {"workers": ["cpu0", "cpu1", "new"], "allow_other_workers": False}
    assert stage._backup_worker(30.0) == "cpu0"


def test_align_worker_lost_mid_run_still_writes_every_row_once(client, data, tmp_path, capsys):
    align_pairs_files(data["seqs"], tmp_path / "local.tsv", **ALIGN)
    with killing_a_worker(client, tmp_path, "gseek-job-") as kill:
        align_pairs_files(data["seqs"], tmp_path / "cluster.tsv", client=client, **ALIGN)
    assert kill.killed
    assert (tmp_path / "cluster.tsv").read_bytes() == (tmp_path / "local.tsv").read_bytes()
    assert "was lost during the run" in capsys.readouterr().err


def test_align_job_whose_worker_always_dies_stops_the_run_with_one_line(client, data, tmp_path):
    with always_killing(client, "gseek-job-", 2), \
            pytest.raises(ClusterError, match=r"job \d+ \(9 pairs\): its worker died each time it ran"):
        align_pairs_files(data["seqs"], tmp_path / "cluster.tsv", client=client, **ALIGN)
    assert list(tmp_path.iterdir()) == []  # no output, no temporary
    no_tasks_left(client)


class _DiesWhenSent:
    """A job's result whose worker ends its process as it sends it to the client."""

    def __reduce__(self):
        _Killer().die()


def _lost_as_sent_then_waits(folder: str):
    """A job whose first result is lost with its worker as the client gathers it; run again, it says
    so (``again``) and waits for ``release`` (60 s at most)."""
    first, again, release = (os.path.join(folder, name) for name in ("first", "again", "release"))
    if not os.path.exists(first):
        open(first, "w").close()
        return _DiesWhenSent()
    open(again, "w").close()
    end = time.time() + 60
    while not os.path.exists(release) and time.time() < end:
        time.sleep(0.05)
    return "run again"


def test_a_job_whose_result_is_lost_as_gathered_gives_up_once_the_run_stops(client, tmp_path, monkeypatch):
    """The job finished, its worker died as the client gathered its result, and the scheduler runs it
    again; the run then stops (another job failed): the job's thread gives up at its next look, the job
    is cancelled and released, instead of waiting for the run again (and its own worker deaths)."""
    import gseek.pipeline.cluster as cluster_module
    import gseek.pipeline.cluster_jobs as cluster_jobs

    monkeypatch.setattr(cluster_module, "BACKUP_AFTER", None)
    stage = cluster_jobs._RemoteStage(client, None, "lost-as-gathered", 0)

    class StopsAsItRunsAgain:  # the run stops (another job's error) once the scheduler runs the job again
        @property
        def stopping(self) -> bool:
            return (tmp_path / "again").exists()

    stage.dispatcher = StopsAsItRunsAgain()
    future = client.submit(_lost_as_sent_then_waits, str(tmp_path), key="gseek-job-lost-as-gathered-0", pure=False)
    distributed.wait(future)
    assert future.status == "finished"
    try:
        with pytest.raises(ClusterError, match="stopped while its job ran on the cluster"):
            stage._wait(future, time.monotonic(), None)
        assert time.time() - (tmp_path / "again").stat().st_mtime < 5  # its next look (0.2 s), not the run's end
        assert future.status == "cancelled"
    finally:
        (tmp_path / "release").touch()
        future.release()
    no_tasks_left(client)
    client.wait_for_workers(2, timeout=60)


# --------------------------------------------------------------------------- command line


def gseek(args, capsys):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_pipeline_and_align_with_scheduler(client, data, tmp_path, capsys, monkeypatch):
    address = client.scheduler.address
    monkeypatch.setenv("GSEEK_CLUSTER_STATS", "1")  # the files each worker ran (benchmarks/run.py cluster-hetero)
    code, _, err = gseek(["--device", "cpu", "-p", "1", "pipeline", "--queries", data["root"] / "list.txt", "-x",
                          data["index"], "--outdir", tmp_path / "out", "--scheduler", address], capsys)
    assert code == 1 and "5 ok, 2 failed, 0 skipped" in err, err
    shares = re.search(r"files per worker: (.*)", err).group(1).split(", ")
    assert sum(int(w.rsplit(" ", 1)[1]) for w in shares) == 7, err
    assert outputs(tmp_path / "out").keys() == outputs(local_pipeline(data)).keys()
    align = ["--device", "cpu", "-p", "1", "align", "--all-vs-all", "-i", data["seqs"], "--mode", "local",
             "--traceback"]
    assert gseek([*align, "-o", tmp_path / "local.tsv"], capsys)[0] == 0
    code, _, err = gseek([*align, "-o", tmp_path / "cluster.tsv", "--scheduler", address], capsys)
    assert code == 0 and "alignments on Dask cluster" in err, err
    assert (tmp_path / "cluster.tsv").read_bytes() == (tmp_path / "local.tsv").read_bytes()


def test_cli_local_cluster(data, tmp_path, capsys):
    align = ["--device", "cpu", "-p", "1", "align", "-q", data["seqs"], "-t", data["seqs"]]
    assert gseek([*align, "-o", tmp_path / "local.tsv"], capsys)[0] == 0
    code, _, err = gseek([*align, "-o", tmp_path / "cluster.tsv", "--local-cluster", "1"], capsys)
    assert code == 0 and "Dask cluster tcp://" in err and "1 workers" in err, err
    assert (tmp_path / "cluster.tsv").read_bytes() == (tmp_path / "local.tsv").read_bytes()


@pytest.mark.parametrize("extra, message", [
    (["--scheduler", "tcp://127.0.0.1:1", "--local-cluster", "2"], "exclude each other"),
    (["--local-cluster", "0"], "--local-cluster"),
    (["--gpus", "0", "--local-cluster", "2"], "--gpus"),
])
def test_cli_cluster_usage_errors(data, tmp_path, capsys, extra, message):
    code, _, err = gseek(["pipeline", "--queries", data["root"] / "list.txt", "-x", data["index"], "--outdir",
                          tmp_path / "out", *extra], capsys)
    assert code == 2 and message in err, err


def test_without_distributed_the_options_give_one_line(data, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    for command in (["pipeline", "--queries", data["root"] / "list.txt", "-x", data["index"], "--outdir",
                     tmp_path / "out"], ["align", "--all-vs-all", "-i", data["seqs"]]):
        code, _, err = gseek(["--device", "cpu", *command, "--local-cluster", "2"], capsys)
        assert code == 1 and err.count("\n") == 1, err
        assert err.startswith("gseek: error: ") and "needs the 'distributed' package" in err and "gseek[dask]" in err


def test_gseek_errors_pickle_as_themselves():
    for error in (FastxError("r.fq", 4, "bad"), IndexFormatError("x.gseek", "no header"), OutputError("o", "why"),
                  Terminated(15)):
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is type(error) and str(again) == str(error) and again.__dict__ == error.__dict__


# --------------------------------------------------------------------------- GPU


@pytest.mark.gpu
def test_two_workers_sharing_one_gpu_reproduce_the_single_process_output(client, data, tmp_path):
    """The module's two worker processes both on GPU 0: the pipeline of read files (map) and
    ``align --all-vs-all`` write the bytes of one GPU process."""
    pytest.importorskip("cupy")
    from gseek.backend import gpu_available

    if not gpu_available():
        pytest.skip("no CUDA device / CuPy")
    local = run_pipeline(data["root"] / "list.txt", data["index"], tmp_path / "local", devices=["gpu"], threads=1,
                         progress=False, quiet=True, command=CMD)
    remote = run_pipeline(data["root"] / "list.txt", data["index"], tmp_path / "cluster", devices=["gpu"], threads=1,
                          progress=False, quiet=True, command=CMD, client=client)
    assert [r.status for r in remote.files] == [r.status for r in local.files]
    assert outputs(tmp_path / "cluster") == outputs(tmp_path / "local") and len(outputs(tmp_path / "local")) == 5
    gpu = dict(ALIGN, device="gpu")
    align_pairs_files(data["seqs"], tmp_path / "local.tsv", **gpu)
    done = align_pairs_files(data["seqs"], tmp_path / "cluster.tsv", client=client, **gpu)
    assert (tmp_path / "cluster.tsv").read_bytes() == (tmp_path / "local.tsv").read_bytes()
    assert done["device"].startswith("Dask cluster tcp://")


@pytest.mark.gpu
def test_blast_database_split_across_gpu_workers_writes_the_one_gpu_bytes(client, blast_data, tmp_path):
    """The module's two workers, each searching its shard of the database on GPU 0 (two streams
    each): the bytes of one GPU process searching the whole database."""
    pytest.importorskip("cupy")
    from gseek.backend import gpu_available

    if not gpu_available():
        pytest.skip("no CUDA device / CuPy")
    options = dict(task="blastn", threads=1, progress=False, quiet=True, outfmt="7 std qseq sseq btop",
                   max_target_seqs=3, job_bytes=4000, devices=["gpu"])
    run_pipeline(blast_data["root"] / "list.txt", blast_data["index"], tmp_path / "local", **options)
    remote = run_pipeline(blast_data["root"] / "list.txt", blast_data["index"], tmp_path / "cluster", client=client,
                          split="database", **options)
    assert [r.status for r in remote.files] == ["ok", "failed", "ok"]
    for name in ("a.tsv", "b.tsv"):
        assert (tmp_path / "cluster" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name


def test_a_database_split_on_a_cluster_without_workers_waits_then_fails_clearly(monkeypatch):
    """No worker (a cluster starting, or its workers restarting): the split waits a while for one,
    then fails with one line naming the wait."""
    import gseek.pipeline.cluster as cluster_module
    import gseek.pipeline.cluster_jobs as cluster_jobs
    from gseek.errors import ClusterError

    monkeypatch.setattr(cluster_module, "WORKER_WAIT_SECONDS", 0.5)
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None,
                                  silence_logs=logging.CRITICAL) as empty, distributed.Client(empty) as c:
        with pytest.raises(ClusterError, match=r"no worker \(waited 0.5 s\)"):
            cluster_jobs.shard_dispatcher(c, None, None)


@pytest.mark.parametrize("shard", [False, True])
def test_a_worker_with_a_corrupted_index_sends_back_no_results(tmp_path, shard):
    """A BLAST task a worker builds from its spec checks its own copy of the index beside the work
    (``verify=False`` at load, as the client's); a job (or a database shard's job) on a corrupted copy
    fails with the index's error instead of returning HSPs computed from it."""
    from gseek.pipeline import cluster
    from gseek.pipeline.tasks._base import TaskSpec
    from gseek.seqio import read_fastx

    assert main(["--quiet", "--device", "cpu", "index", "--parts", "text", str(lambda_genome()), "-o",
                 str(tmp_path / "db.gseek")]) == 0
    (tmp_path / "q.fa").write_text(">q1\n" + read_fastx(lambda_genome()).sequence(0)[2000:2600] + "\n")
    batch = read_fastx(tmp_path / "q.fa")
    options = {"task": "megablast", "outfmt": "6", **({"shard": (0, 1)} if shard else {})}
    spec = TaskSpec.of("blast", tmp_path / "db.gseek", options, ["cpu"], 1)
    run = (lambda: cluster._run_shard(spec, [batch], True)) if shard else (lambda: cluster._run_stages(spec, [batch]))
    assert run()  # the good index: HSPs
    part = tmp_path / "db.gseek" / "text.npy"
    data = bytearray(part.read_bytes())
    data[-3] ^= 0xFF
    part.write_bytes(bytes(data))  # a new file state: the worker builds the task again
    with pytest.raises(IndexFormatError, match="text.npy: corrupted part"):
        run()


def test_the_front_doors_on_a_cluster_write_the_local_bytes(client, data, blast_data, tmp_path):
    """map_files and blast_files with client=: each job mapped or searched and formatted on a worker, the
    output the local run's (SAM but its @PG line; BLAST's database name and -query_loc offset reach the
    workers, which format the text)."""
    from gseek.pipeline import blast_files, map_files

    reads = data["files"][0]
    for name, extra in (("local.sam", {}), ("cluster.sam", dict(client=client))):
        map_files(data["index"], reads, tmp_path / name, mismatches=2, device="cpu", threads=1, cigar_eq=True,
                  trim5=2, **extra)
    sam = [(tmp_path / n).read_text().splitlines() for n in ("local.sam", "cluster.sam")]
    assert [x for x in sam[0] if not x.startswith("@PG")] == [x for x in sam[1] if not x.startswith("@PG")]
    queries = blast_data["root"] / "a.fa"
    for name, extra in (("local.tsv", {}), ("cluster.tsv", dict(client=client))):
        blast_files(blast_data["index"], queries, tmp_path / name, outfmt="7 std", database="MYDB", query_offset=100,
                    device="cpu", threads=1, **extra)
    text = (tmp_path / "local.tsv").read_text()
    assert "# Database: MYDB" in text and (tmp_path / "cluster.tsv").read_text() == text
    no_tasks_left(client)

"""How a BLAST task cuts a small query input into jobs (``BlastTask.job_parts``: one a GPU, one a CPU searcher),
and the device set-up a GPU task begins on a thread as it is built (``warm_devices``). Jobs change no output
(``tests/test_blast_search.py``: ``test_outfmt_sam_through_the_pipeline``, ``test_batch_splits_give_the_same_rows``)."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

from gseek.blast.options import BlastOptions
from gseek.blast.searcher import BlastSearcher
from gseek.datasets import lambda_genome
from gseek.index import Index
from gseek.index.text import ReferenceText
from gseek.pipeline.tasks import blast as blast_task
from gseek.pipeline.tasks.blast import BlastTask, job_parts, warm_devices


class _Backend:
    """A stand-in for a backend (NumPy as its array module): its name and device (a GPU's searchers on streams
    share one device id); the sizes of the arrays put on it."""

    def __init__(self, name: str, device_id: int = 0) -> None:
        self.name, self.device_id, self.xp = name, device_id, np
        self.uploads: list[int] = []

    def active(self):
        return contextlib.nullcontext()

    def asarray(self, array, dtype=None):
        self.uploads.append(np.asarray(array).size)
        return np.asarray(array, dtype=dtype)

    def synchronize(self) -> None:
        pass


class _Searcher:
    def __init__(self, *backends: _Backend, greedy: bool = False) -> None:
        self.options = BlastOptions.for_task("megablast" if greedy else "blastn")
        if len(backends) == 1:
            self.backend = backends[0]
        else:  # a searcher of a database split: a shard a device
            self.shards = [_Searcher(b, greedy=greedy) for b in backends]


def test_a_gpus_searchers_share_one_part_where_their_rounds_run_there():
    """One part a GPU for the blastn task's searchers (affine gaps: the gapped rounds on the device), one a
    searcher for megablast's (its rounds on the host) and for CPU searchers."""
    gpu = lambda n: _Backend("gpu", n)  # noqa: E731
    assert job_parts([_Searcher(gpu(0)) for _ in range(4)]) == 1  # four streams of one GPU
    assert job_parts([_Searcher(gpu(n)) for n in (0, 0, 1, 1, 2, 2)]) == 3  # the queries split over 3 GPUs
    assert job_parts([_Searcher(gpu(0), gpu(1)) for _ in range(4)]) == 1  # the database split: each spans both
    assert job_parts([_Searcher(gpu(0), greedy=True) for _ in range(4)]) == 4  # megablast: a job a searcher
    assert job_parts([_Searcher(gpu(0), gpu(1), greedy=True) for _ in range(4)]) == 4
    assert job_parts([_Searcher(_Backend("cpu"))]) == 1
    assert job_parts([_Searcher(_Backend("cpu")), _Searcher(_Backend("cpu")), _Searcher(gpu(0))]) == 3
    assert job_parts([]) == 1


def test_a_small_file_is_one_job_on_one_gpu_and_a_job_a_gpu_on_several(tmp_path, monkeypatch):
    """The job size a GPU task plans for a query file of less than a job (and below a job a searcher): the
    whole file on one GPU of four searchers, a half a GPU on two; a larger file keeps the job size."""
    monkeypatch.setattr(blast_task, "BLAST_MIN_JOB_BYTES", 1000)
    path = tmp_path / "q.fa"
    path.write_bytes(b"x" * 9001)
    task = object.__new__(BlastTask)
    task.job_bytes = 10_000
    for gpus, size, planned in (((0, 0, 0, 0), 10_000, 9001), ((0, 0, 1, 1), 4501, 4501)):
        task.searchers = [_Searcher(_Backend("gpu", n)) for n in gpus]
        task.job_parts = job_parts(task.searchers)
        assert task.job_size(path, 10_000) == size
        assert task.plan([blast_task.QueryFile((str(path),), str(tmp_path / "o.tsv"))]) == planned
    path.write_bytes(b"x" * 25_000)
    assert task.job_size(path, 10_000) == 10_000  # three jobs, on every searcher there is


@pytest.fixture(scope="module")
def lambda_text():
    return ReferenceText.from_index(Index.build(lambda_genome(), wgram=4, device="cpu"))


def test_warm_devices_puts_the_text_on_each_gpu_once_and_leaves_cpu_searchers_alone(lambda_text):
    assert warm_devices([BlastSearcher(lambda_text, task="megablast", device="cpu")]) is None
    assert warm_devices([_Searcher(_Backend("gpu"))]) is None  # (not a BlastSearcher: a sharded one's own)
    searchers = [BlastSearcher(lambda_text, task="megablast", device="cpu") for _ in range(3)]
    backends = [_Backend("gpu", n) for n in (0, 0, 1)]
    for searcher, backend in zip(searchers, backends):
        searcher.backend = backend
    thread = warm_devices(searchers)
    thread.join(30)
    assert not thread.is_alive()
    # the text, N mask and contig offsets once a device, by its first searcher (and nothing else)
    text = [lambda_text.text.size, lambda_text.nmask.size, lambda_text.contig_offsets.size]
    assert backends[0].uploads == backends[2].uploads == text and backends[1].uploads == []
    assert {k for k in lambda_text._cache if isinstance(k, tuple)} >= {("device", "gpu", 0), ("device", "gpu", 1)}
    assert lambda_text.on(backends[1]) is lambda_text.on(backends[0])  # the other searcher of gpu 0 finds it
    assert backends[1].uploads == []
    lambda_text.release()


def test_warm_devices_ends_quietly_where_a_device_fails(lambda_text, monkeypatch):
    """Only a head start: an upload that raises ends that device's warming without an error (the search
    meets it), and the next device is still warmed."""
    import threading

    raised = []
    monkeypatch.setattr(threading, "excepthook", raised.append)
    searchers = [BlastSearcher(lambda_text, task="megablast", device="cpu") for _ in range(2)]
    broken, fine = _Backend("gpu", 5), _Backend("gpu", 6)
    broken.asarray = lambda *a, **k: (_ for _ in ()).throw(RuntimeError("no device"))
    searchers[0].backend, searchers[1].backend = broken, fine
    thread = warm_devices(searchers)
    thread.join(30)
    assert not thread.is_alive() and raised == []
    assert ("device", "gpu", 5) not in lambda_text._cache and ("device", "gpu", 6) in lambda_text._cache
    lambda_text.release()


@pytest.mark.gpu
def test_a_gpu_task_has_its_text_on_the_device_before_its_first_search(tmp_path):
    index = Index.build(lambda_genome(), wgram=4, device="cpu").save(tmp_path / "lambda.gseek")
    task = BlastTask(index, "blastn", device="gpu", threads=2)
    assert task.job_parts == 1 and len(task.searchers) == blast_task.BLAST_STREAMS_PER_GPU  # the blastn task
    task.warming.join(60)
    ref, backend = task.searchers[0].ref, task.searchers[0].backend
    assert ("device", "gpu", backend.device_id) in ref._cache
    text = ref.on(task.searchers[1].backend)
    assert np.array_equal(backend.to_host(text.text), ref.text)

"""Task specs: every pipeline task is a picklable ``TaskSpec`` (name, source file, options) that
builds the same task again in another process, with byte-identical outputs; and ``PairsTask``
(``align --pairs`` / ``--all-vs-all`` through the engine) writes what the aligner's own
streaming API gives, for any worker count and chunk size."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

from gseek.align import PairAligner
from gseek.datasets import lambda_genome, lambda_reads
from gseek.datasets.simulate import dp_families
from gseek.index import Index
from gseek.options import ReadOptions
from gseek.output.tabular import AlignmentWriter
from gseek.pipeline import QueryFile
from gseek.pipeline import align_pairs_files, map_files
from gseek.pipeline.tasks import AlignTask, MapTask, PairsTask, Task, TaskSpec
from gseek.seqio import read_fastx, write_fasta


@pytest.fixture(scope="module")
def seqs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tasks")
    fam = dp_families(2, 6, 150, seed=3, max_divergence=0.2)
    path = root / "seqs.fa"
    write_fasta(path, fam.records)
    pairs = root / "pairs.tsv"
    names = [n for n, _ in fam.records]
    pairs.write_text("".join(f"{names[i]}\t{names[(5 * i + 3) % len(names)]}\n" for i in range(len(names))))
    return dict(root=root, path=path, pairs=pairs, names=names)


def test_spec_survives_pickle_and_builds_the_same_align_task(seqs, tmp_path):
    task = AlignTask(seqs["path"], device="cpu", threads=1, mode="local", traceback=True)
    spec = pickle.loads(pickle.dumps(task.spec))
    assert spec == task.spec and spec.task == "align" and dict(spec.options)["options"].mode == "local"
    again = spec.build()
    assert isinstance(again, AlignTask) and again.fingerprint() == task.fingerprint()
    for t, name in ((task, "a.tsv"), (again, "b.tsv")):
        result, = t.dispatcher(workers=1).run([QueryFile((str(seqs["path"]),), str(tmp_path / name))])
        assert result.error is None
    assert (tmp_path / "a.tsv").read_bytes() == (tmp_path / "b.tsv").read_bytes()


def test_map_spec_needs_a_saved_index_and_builds_in_another_process(tmp_path):
    index = Index.build(lambda_genome(), wgram=8, device="cpu")
    assert MapTask(index, 2, device="cpu").spec is None  # never saved: nothing to rebuild from
    saved = index.save(tmp_path / "lambda.gseek")
    task = MapTask(saved, 2, device="cpu", threads=1, command="gseek test")
    blob = pickle.dumps(task.spec)
    map_files(saved, lambda_reads(), tmp_path / "here.sam", mismatches=2, device="cpu", threads=1,
              command="gseek test")
    code = ("import pickle, sys\nfrom gseek.pipeline import QueryFile\n"
            "task = pickle.loads(sys.stdin.buffer.read()).build()\n"
            f"r, = task.dispatcher(workers=1).run([QueryFile(({str(lambda_reads())!r},), {str(tmp_path / 'there.sam')!r})])\n"
            "assert r.error is None, r.error\n")
    subprocess.run([sys.executable, "-c", code], input=blob, check=True)
    assert (tmp_path / "there.sam").read_bytes() == (tmp_path / "here.sam").read_bytes()


def test_an_unknown_task_spec_is_refused():
    with pytest.raises(KeyError):
        TaskSpec("blastx", "x.fa").build()


@pytest.mark.parametrize("workers, batch_pairs", [(0, 7), (2, 5), (3, 1 << 16)])
def test_all_vs_all_through_the_engine_equals_the_aligner(seqs, tmp_path, workers, batch_pairs):
    options = dict(mode="global", traceback=True, batch_pairs=batch_pairs)
    aligner = PairAligner(device="cpu", **options)
    with AlignmentWriter(tmp_path / "want.tsv", aligner.columns) as w:
        for chunk in aligner.iter_all_vs_all(read_fastx(seqs["path"])):
            w.write(chunk)
    totals = []
    done = align_pairs_files(seqs["path"], tmp_path / "got.tsv", device="cpu", workers=workers, total=totals.append,
                             **options)
    n = len(seqs["names"])
    assert totals == [n * (n - 1) // 2] and done["pairs"] == totals[0] and done["rows"] == totals[0]
    assert (tmp_path / "got.tsv").read_bytes() == (tmp_path / "want.tsv").read_bytes()


def test_pair_list_through_the_engine_equals_the_aligner(seqs, tmp_path):
    options = dict(mode="local", min_score=20, batch_pairs=4)
    aligner = PairAligner(device="cpu", **options)
    batch = read_fastx(seqs["path"])
    with AlignmentWriter(tmp_path / "want.tsv", aligner.columns) as w:
        for chunk in aligner.iter_pair_list(batch, batch, seqs["pairs"]):
            w.write(chunk)
    done = align_pairs_files(seqs["path"], tmp_path / "got.tsv", queries=seqs["path"], pairs=seqs["pairs"],
                             device="cpu", **options)
    assert done["pairs"] == len(seqs["names"])
    assert (tmp_path / "got.tsv").read_bytes() == (tmp_path / "want.tsv").read_bytes()


def test_a_set_without_pairs_writes_the_header_alone(tmp_path):
    one = tmp_path / "one.fa"
    write_fasta(one, [("only", "ACGTACGT")])
    done = align_pairs_files(one, tmp_path / "out.tsv", device="cpu")
    assert done["pairs"] == 0 and done["rows"] == 0
    assert (tmp_path / "out.tsv").read_text() == "#" + "\t".join(PairAligner(device="cpu").columns) + "\n"


def test_pairs_task_needs_both_queries_and_pairs(seqs):
    from gseek.errors import OptionError

    with pytest.raises(OptionError, match="both queries and pairs"):
        PairsTask(seqs["path"], pairs=seqs["pairs"], device="cpu")


def test_map_read_options_travel_in_the_spec_and_the_fingerprint(tmp_path):
    """phred64/trim/skip/upto are task options: in the picklable spec (the same
    records from a rebuilt task) and in the fingerprint (--resume redoes a file
    mapped with others); left at their defaults, neither changes."""
    from gseek.errors import GseekWarning, OptionError
    from gseek.pipeline import run_pipeline

    genome = read_fastx(lambda_genome()).sequence(0)
    saved = Index.build(lambda_genome(), wgram=8, device="cpu").save(tmp_path / "lambda.gseek")
    reads = tmp_path / "r.fq"
    reads.write_text("".join(f"@r{i}\n{genome[i * 300 : i * 300 + 40]}\n+\n{'h' * 40}\n" for i in range(12)))
    plain = MapTask(saved, 1, device="cpu", threads=1)
    assert set(plain.options) == {"mismatches", "no_unal", "cigar_eq"}  # the fingerprint of before these options
    assert plain.fingerprint() == MapTask(saved, 1, device="cpu", threads=1, phred64=False, trim5=0, skip=0,
                                          upto=None).fingerprint()
    options = dict(phred64=True, trim5=2, trim3=3, skip=1, upto=9)
    task = MapTask(saved, 1, device="cpu", threads=1, **options)
    spec = pickle.loads(pickle.dumps(task.spec))
    assert dict(spec.options)["read_options"] == ReadOptions(**options)
    again = spec.build()
    assert again.fingerprint() == task.fingerprint() != plain.fingerprint()
    for t, name in ((task, "a.sam"), (again, "b.sam")):
        result, = t.dispatcher(workers=1).run([QueryFile((str(reads),), str(tmp_path / name))])
        assert result.error is None and result.counts["records"] == 9
    assert (tmp_path / "a.sam").read_bytes() == (tmp_path / "b.sam").read_bytes()
    records = [line.split("\t") for line in (tmp_path / "a.sam").read_text().splitlines() if line[0] != "@"]
    assert [r[0] for r in records] == [f"r{i}" for i in range(1, 10)]
    assert all(len(r[9]) == 35 and r[10] == "I" * 35 for r in records)
    # through run_pipeline: each query file is skipped and cut on its own
    (tmp_path / "list.txt").write_text(f"{reads}\ta.sam\n{reads}\tb.sam\n")
    with pytest.warns(GseekWarning, match=r"r\.fq: qualities look Phred\+64"):  # 'h' read as Phred+33
        summary = run_pipeline(tmp_path / "list.txt", saved, tmp_path / "out", "map", device="cpu", threads=1,
                               progress=False, quiet=True, mismatches=1, skip=10, upto=5)
    assert summary.exit_status == 0
    for name in ("a.sam", "b.sam"):
        assert [line.split("\t")[0] for line in (tmp_path / "out" / name).read_text().splitlines()
                if line[0] != "@"] == ["r10", "r11"]
    for bad in (dict(trim5=-1), dict(upto=0), dict(skip=1.5), dict(phred64="yes")):
        with pytest.raises(OptionError):
            MapTask(saved, 1, device="cpu", **bad)


def test_every_task_is_a_task_and_every_front_door_takes_the_same_run_arguments():
    """The Task protocol (pipeline/tasks/_base.py) is what each task implements; the five front doors
    (pipeline/front.py) take the same run arguments, client= included."""
    import inspect

    from gseek.pipeline import BlastTask, Task, align_files, align_pairs_files, blast_files, map_files, map_reads
    from gseek.pipeline.tasks._base import Task as Protocol

    members = [n for n in dir(Protocol) if not n.startswith("_")] + list(Protocol.__annotations__)
    for cls in (MapTask, BlastTask, AlignTask, PairsTask):
        assert [m for m in members if not hasattr(cls, m) and m not in ("spec", "job_bytes")] == [], cls
    assert Task is Protocol
    for door in (map_files, blast_files, align_files, align_pairs_files):
        assert {"workers", "bounds", "progress", "client", "device", "threads"} <= set(inspect.signature(door).parameters)
    assert "workers" not in inspect.signature(map_reads).parameters  # map_files in the caller's thread


def test_pairs_task_fingerprint_follows_its_pairs(seqs):
    a = PairsTask(seqs["path"], device="cpu", threads=1, mode="local")
    b = PairsTask(seqs["path"], device="cpu", threads=1, mode="local")
    c = PairsTask(seqs["path"], queries=seqs["path"], pairs=seqs["pairs"], device="cpu", threads=1, mode="local")
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()
    assert isinstance(a, Task)

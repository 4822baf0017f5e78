"""`gseek pipeline` and `gseek search --task map` through the pipeline engine: each option."""

from __future__ import annotations

from pathlib import Path

import pytest

from gseek.cli import main
from gseek.datasets import lambda_genome
from gseek.datasets.simulate import kmismatch_reads
from gseek.index import Index
from gseek.pipeline import map_reads
from gseek.pipeline import engine
from gseek.seqio import write_fastq


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("clipipe")
    index = Index.build(lambda_genome(), wgram=8, device="cpu").save(root / "lambda.gseek")
    files = []
    for i, n in enumerate([300, 5, 120]):
        path = root / f"s{i}.fq"
        write_fastq(path, kmismatch_reads(lambda_genome(), n, (30, 120), 3, seed=i, random_fraction=0.1).records())
        files.append(path)
    (root / "list.txt").write_text("# three files\ns0.fq\ns1.fq\tone.sam\n\ns2.fq\n")
    return dict(root=root, index=index, files=files, outputs=["s0.sam", "one.sam", "s2.sam"])


def gseek(args, capsys):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def pipeline(setup, outdir, *extra):
    return ["--device", "cpu", "pipeline", "--queries", setup["root"] / "list.txt", "-x", setup["index"],
            "--outdir", outdir, *extra]


def same_as_map_reads(setup, outdir, options, command):
    for f, name in zip(setup["files"], setup["outputs"]):
        expected = outdir.parent / f"expected-{name}"
        map_reads(setup["index"], f, expected, device="cpu", command=command, **options)
        assert (outdir / name).read_bytes() == expected.read_bytes(), name


def command_of(sam: Path) -> str:
    line = next(x for x in sam.read_text().splitlines() if x.startswith("@PG"))
    return next(f[3:] for f in line.split("\t") if f.startswith("CL:"))


@pytest.mark.parametrize("extra, options", [
    ([], {}),
    (["-v", "1"], dict(mismatches=1)),
    (["-k", "3"], dict(max_alignments=3)),
    (["--all", "--max-hits", "2"], dict(report_all=True, max_hits=2)),
    (["--norc"], dict(norc=True)),
    (["--nofw"], dict(nofw=True)),
    (["--no-unal"], dict(no_unal=True)),
    (["--xa-limit", "0"], dict(xa_limit=0)),
    (["--cigar-eq"], dict(cigar_eq=True)),
    (["--workers", "0"], {}),
    (["--workers", "3", "--job-mb", "0.001"], {}),
])
def test_pipeline_options_give_map_reads_output(setup, tmp_path, capsys, extra, options):
    out = tmp_path / "out"
    code, _, err = gseek(pipeline(setup, out, *extra), capsys)
    assert code == 0, err
    assert "3 ok, 0 failed, 0 skipped" in err and (out / "summary.tsv").is_file()
    same_as_map_reads(setup, out, options, command_of(out / "s0.sam"))


def test_pipeline_resume_skips(setup, tmp_path, capsys):
    out = tmp_path / "out"
    assert gseek(pipeline(setup, out), capsys)[0] == 0
    code, _, err = gseek(pipeline(setup, out, "--resume"), capsys)
    assert code == 0 and "0 ok, 0 failed, 3 skipped" in err


def test_pipeline_failed_file_gives_exit_status_1(setup, tmp_path, capsys):
    listing = tmp_path / "list.txt"
    listing.write_text(f"{setup['files'][0]}\nmissing.fq\n")
    code, _, err = gseek(["--device", "cpu", "pipeline", "--queries", listing, "-x", setup["index"], "--outdir",
                          tmp_path / "o"], capsys)
    assert code == 1 and "missing.fq: failed:" in err and "1 ok, 1 failed" in err
    code, _, err = gseek(["--quiet", "--device", "cpu", "pipeline", "--queries", listing, "-x", setup["index"],
                          "--outdir", tmp_path / "o"], capsys)
    assert code == 1 and err == ""


def test_pipeline_list_and_index_errors_are_one_line(setup, tmp_path, capsys):
    listing = tmp_path / "list.txt"
    listing.write_text("a.fq\tx.sam\tthird\n")
    code, _, err = gseek(pipeline(setup, tmp_path / "o")[:4] + [listing, "-x", setup["index"], "--outdir",
                                                                  tmp_path / "o"], capsys)
    assert code == 1 and err.startswith("gseek: error: ") and "list.txt:1: expected" in err
    code, _, err = gseek(["--device", "cpu", "pipeline", "--queries", setup["root"] / "list.txt", "-x",
                          tmp_path / "nope", "--outdir", tmp_path / "o"], capsys)
    assert code == 1 and "no such index directory" in err


@pytest.mark.parametrize("args, message", [
    (["--gpus", "a,b"], "expected GPU ordinals"),
    (["--gpus", "0,0"], "distinct GPU ordinals"),
    (["--max-hits", "2"], "--max-hits caps --all"),
    (["--split", "database"], "--split database: for --task megablast|blastn"),
    (["--split", "shards"], "Invalid value for '--split'"),
])
def test_pipeline_usage_errors(setup, tmp_path, capsys, args, message):
    code, _, err = gseek(pipeline(setup, tmp_path / "o", *args), capsys)
    assert code == 2 and message in err


@pytest.mark.parametrize("missing", ["--queries", "--index", "--outdir"])
def test_pipeline_required_options(setup, tmp_path, capsys, missing):
    args = {"--queries": setup["root"] / "list.txt", "--index": setup["index"], "--outdir": tmp_path / "o"}
    del args[missing]
    code, _, err = gseek(["pipeline", *[x for kv in args.items() for x in kv]], capsys)
    assert code == 2 and missing in err


def test_pipeline_gpus_without_a_gpu(setup, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GSEEK_DISABLE_GPU", "1")
    code, _, err = gseek(["pipeline", "--queries", setup["root"] / "list.txt", "-x", setup["index"], "--outdir",
                          tmp_path / "o", "--gpus", "0"], capsys)
    assert code == 1 and "GSEEK_DISABLE_GPU" in err
    code, _, err = gseek(pipeline(setup, tmp_path / "o", "--gpus", "0"), capsys)
    assert code == 2 and "--gpus and --device cpu" in err


@pytest.mark.gpu
def test_pipeline_gpus_equal_map_reads(setup, tmp_path, capsys):
    import cupy

    gpus = ",".join(str(i) for i in range(min(2, cupy.cuda.runtime.getDeviceCount())))
    out = tmp_path / "out"
    code, _, err = gseek(["pipeline", "--queries", setup["root"] / "list.txt", "-x", setup["index"], "--outdir",
                          out, "--gpus", gpus], capsys)
    assert code == 0, err
    for f, name in zip(setup["files"], setup["outputs"]):
        expected = tmp_path / f"expected-{name}"
        map_reads(setup["index"], f, expected, device="gpu:0", command=command_of(out / name))
        assert (out / name).read_bytes() == expected.read_bytes()


def test_search_runs_through_the_engine(setup, tmp_path, capsys, monkeypatch):
    runs = []
    original = engine.Dispatcher.run

    def counted(self, queries):
        queries = list(queries)
        runs.append(len(queries))
        return original(self, queries)

    monkeypatch.setattr(engine.Dispatcher, "run", counted)
    out = tmp_path / "s.sam"
    code, _, err = gseek(["--device", "cpu", "search", "-x", setup["index"], "-q", setup["files"][0], "-q",
                          setup["files"][2], "-o", out], capsys)
    assert code == 0 and runs == [1]
    expected = tmp_path / "expected.sam"
    map_reads(setup["index"], setup["files"][::2], expected, device="cpu", command=command_of(out))
    assert out.read_bytes() == expected.read_bytes()

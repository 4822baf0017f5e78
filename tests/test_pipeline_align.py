"""``gseek pipeline --task align`` (AlignTask): each query file aligned against a
target set through the pipeline engine gives, byte for byte, what ``gseek align
-q FILE -t TARGETS`` writes with the same options — for any job size, queue
bounds, worker and device count, on every backend; bad files fail alone;
resume; the command line's task/option checks."""

from __future__ import annotations

import gzip
import threading
from pathlib import Path

import pytest

from gseek.backend import CpuBackend
from gseek.cli import main
from gseek.datasets.simulate import dp_families
from gseek.align.options import AlignOptions
from gseek.errors import OptionError
from gseek.pipeline import AlignTask, QueueBounds, run_pipeline
from gseek.pipeline.engine import THREAD_PREFIX
from gseek.seqio import read_fastx, write_fasta, write_fastq

TINY = QueueBounds(query=1, job=1, prelim=1, result=1)
PROTEIN = "ARNDCQEGHILKMFPSTWYV"


@pytest.fixture(autouse=True)
def no_pipeline_threads():
    yield
    alive = [t.name for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]
    assert not alive, f"pipeline threads left running: {alive}"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Targets (3 families x 4 members, ~240 bp) and 5 query files: other members of
    the same families mixed with unrelated sequences, as FASTA, FASTQ and gzip,
    1 to 40 records; protein targets and queries for the matrix case."""
    import numpy as np

    root = tmp_path_factory.mktemp("pipe-align")
    fam = dp_families(3, 12, 240, seed=11, max_divergence=0.25)
    targets = root / "targets.fa"
    write_fasta(targets, fam.records[::3])
    rng = np.random.default_rng(5)
    pool = [r for i, r in enumerate(fam.records) if i % 3]
    files = []
    for i, n in enumerate([40, 1, 17, 25, 9]):
        recs = []
        for j in range(n):
            if j % 3 == 2:  # unrelated: local scores near zero, global ones very negative
                seq = "".join("ACGT"[k] for k in rng.integers(0, 4, int(rng.integers(30, 300))))
                recs.append((f"r{i}_{j}", seq))
            else:
                name, seq = pool[int(rng.integers(0, len(pool)))]
                recs.append((f"{name}.f{i}_{j}", seq))
        if i == 3:
            recs.append((f"n{i}", "ACGTNNNNACGTRYACGT"))  # ambiguity codes: N (mismatch everywhere)
        path = root / (f"q{i}.fq" if i == 2 else f"q{i}.fa")
        if i == 2:
            write_fastq(path, [(n_, s, "I" * len(s)) for n_, s in recs])
        else:
            write_fasta(path, recs)
        if i == 4:
            gz = path.with_name(path.name + ".gz")
            gz.write_bytes(gzip.compress(path.read_bytes(), mtime=0))
            path.unlink()
            path = gz
        files.append(path)
    prot_t, prot_q = root / "prot_t.fa", root / "prot_q.fa"
    pt = ["".join(PROTEIN[k] for k in rng.integers(0, 20, int(rng.integers(40, 120)))) for _ in range(6)]
    write_fasta(prot_t, [(f"p{i}", s) for i, s in enumerate(pt)])
    write_fasta(prot_q, [(f"pq{i}", s[5:-5]) for i, s in enumerate(pt[::2])] + [("pz", "WWWWYYYYCCCC")])
    return dict(root=root, targets=targets, files=files, prot_t=prot_t, prot_q=prot_q)


def gseek(args, capsys):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


_EXPECTED: dict = {}


def expected(data, query: Path, targets: Path, options: tuple, capsys) -> bytes:
    """``gseek --device cpu align -q QUERY -t TARGETS OPTIONS`` (cached)."""
    key = (query, targets, options)
    if key not in _EXPECTED:
        out = data["root"] / f"expected-{len(_EXPECTED)}.tsv"
        code, _, err = gseek(["--device", "cpu", "-p", "1", "--quiet", "align", "-q", query, "-t", targets,
                              *options, "-o", out], capsys)
        assert code == 0, err
        _EXPECTED[key] = out.read_bytes()
    return _EXPECTED[key]


def listing(folder: Path, files) -> Path:
    path = folder / "list.txt"
    path.write_text("# queries\n\n" + "".join(f"{f}\n" for f in files))
    return path


def no_temporaries(folder: Path) -> None:
    left = [p.name for p in folder.iterdir() if ".tmp-" in p.name]
    assert not left, f"temporary files left: {left}"


def output_of(folder: Path, query: Path) -> Path:
    name = query.name.removesuffix(".gz")
    return folder / (name.rsplit(".", 1)[0] + ".tsv")


# (CLI options, PairAligner options): every mode, trace-back, lazy, BLAST columns
OPTION_SETS = [
    ([], {}),
    (["--mode", "local", "--traceback"], dict(mode="local", traceback=True)),
    (["--mode", "semiglobal", "--free-ends", "target_start,target_end", "--traceback", "--cigar-m"],
     dict(mode="semiglobal", free_ends=("target_start", "target_end"), traceback=True, cigar_m=True)),
    (["--mode", "local", "--min-score", "60", "--traceback"], dict(mode="local", min_score=60, traceback=True)),
    (["--min-identity", "0.8", "--match", "1", "--mismatch", "-2"],
     dict(min_identity=0.8, match=1, mismatch=-2)),
    (["--mode", "local", "--outfmt", "6"], dict(mode="local", outfmt="6")),
]

ENGINE = {
    "inline": dict(workers=0),
    "tiny-bounds": dict(workers=1, bounds=TINY, job_bytes=700, batch_pairs=7),  # DP chunks of 7 pairs
    "3-devices": dict(workers=3, bounds=TINY, job_bytes=1500, devices=[CpuBackend(1) for _ in range(3)]),
}


@pytest.mark.parametrize("engine", list(ENGINE))
@pytest.mark.parametrize("cli, options", OPTION_SETS, ids=lambda x: " ".join(x) if isinstance(x, list) else "")
def test_outputs_equal_gseek_align_file_by_file(data, tmp_path, capsys, engine, cli, options):
    settings = dict(dict(devices=[CpuBackend(1)], progress=False, quiet=True), **ENGINE[engine])
    out = tmp_path / "out"
    summary = run_pipeline(listing(tmp_path, data["files"]), data["targets"], out, "align", **settings, **options)
    assert [r.status for r in summary.files] == ["ok"] * len(data["files"]), [r.error for r in summary.files]
    for f, r in zip(data["files"], summary.files):
        body = Path(r.query.output).read_bytes()
        assert body == expected(data, f, data["targets"], tuple(cli), capsys), f.name
        assert r.records == len(read_fastx(f))
        rows = sum(1 for line in body.splitlines() if not line.startswith(b"#"))
        assert r.hits == rows
    no_temporaries(out)


@pytest.mark.parametrize("cli, options", OPTION_SETS, ids=lambda x: " ".join(x) if isinstance(x, list) else "")
def test_gseek_align_query_vs_targets_equals_the_api(data, tmp_path, capsys, cli, options):
    """``gseek align -q -t`` (which streams the queries through AlignTask) writes what
    the API's whole-file ``PairAligner.query_vs_database`` + ``AlignmentWriter`` write:
    the reference the other tests' ``expected`` rests on; stdout too."""
    from gseek.align import PairAligner
    from gseek.output.tabular import AlignmentWriter

    aligner = PairAligner(device=CpuBackend(1), **options)
    for f in data["files"][:3]:
        api = tmp_path / "api.tsv"
        with AlignmentWriter(api, aligner.columns) as w:
            w.write(aligner.query_vs_database(read_fastx(f), read_fastx(data["targets"])))
        assert expected(data, f, data["targets"], tuple(cli), capsys) == api.read_bytes(), f.name
    code, out, err = gseek(["--device", "cpu", "--quiet", "align", "-q", data["files"][0], "-t", data["targets"],
                            *cli], capsys)
    assert code == 0 and out.encode() == expected(data, data["files"][0], data["targets"], tuple(cli), capsys)


@pytest.mark.parametrize("content, message", [
    ("", "no FASTA/FASTQ records (empty file)"),
    (">x\nAC\n+\nI\n", "q.fa"),
    (None, "No such file"),
])
def test_gseek_align_bad_queries_are_one_line(data, tmp_path, capsys, content, message):
    query = tmp_path / "q.fa"
    if content is not None:
        query.write_text(content)
    out = tmp_path / "o.tsv"
    code, _, err = gseek(["--device", "cpu", "align", "-q", query, "-t", data["targets"], "-o", out], capsys)
    assert code == 1 and err.startswith("gseek: error: ") and message in err and len(err.splitlines()) == 1
    assert not out.exists() and not list(tmp_path.glob(".o.tsv.tmp-*"))
    code, text, err = gseek(["--device", "cpu", "align", "-q", query, "-t", data["targets"]], capsys)
    assert code == 1 and message in err and text == ""  # stdout: not even the header


@pytest.mark.parametrize("residue, message", [
    ("J", "p.fa:4: invalid protein character 'J'"),  # the reader's alphabet
    ("U", "sequence 'odd': residue 'U' at position 3 is not in the alphabet of matrix BLOSUM62"),  # the matrix's
])
def test_gseek_align_bad_residue_names_the_sequence(data, tmp_path, capsys, residue, message):
    query = tmp_path / "p.fa"
    query.write_text(f">good\nACDEF\n>odd\nAC{residue}EF\n")
    code, _, err = gseek(["--device", "cpu", "align", "-q", query, "-t", data["prot_t"], "--matrix", "BLOSUM62"],
                         capsys)
    assert code == 1 and message in err and len(err.splitlines()) == 1


def test_job_size_does_not_change_the_rows(data, tmp_path, capsys):
    """Jobs split a file into batches of one record, or gather all files into one:
    the same bytes (the row order is query-major in input order)."""
    files = data["files"][:3]
    cli = ["--mode", "local", "--traceback"]
    for job_bytes in (1, 1 << 20):
        out = tmp_path / f"out{job_bytes}"
        run_pipeline(listing(tmp_path, files), data["targets"], out, "align", devices=[CpuBackend(2)], workers=2,
                     job_bytes=job_bytes, progress=False, quiet=True, mode="local", traceback=True)
        for f in files:
            assert output_of(out, f).read_bytes() == expected(data, f, data["targets"], tuple(cli), capsys)


def test_protein_matrix(data, tmp_path, capsys):
    cli = ("--matrix", "BLOSUM62", "--mode", "local", "--traceback")
    out = tmp_path / "out"
    summary = run_pipeline(listing(tmp_path, [data["prot_q"]]), data["prot_t"], out, "align",
                           devices=[CpuBackend(1)], workers=2, progress=False, quiet=True, matrix="BLOSUM62",
                           mode="local", traceback=True)
    assert summary.exit_status == 0
    body = output_of(out, data["prot_q"]).read_bytes()
    assert body == expected(data, data["prot_q"], data["prot_t"], cli, capsys)
    assert b"pq0\tp0\t" in body  # a query cut from a target finds it


def test_several_prelim_workers_on_each_backend(data, tmp_path, capsys, backend):
    """Three prelim workers on one device kind give the CPU's bytes (multi-GPU: same code, one device each)."""
    files = data["files"][:4]
    out = tmp_path / "out"
    summary = run_pipeline(listing(tmp_path, files), data["targets"], out, "align", devices=[backend] * 3,
                           workers=2, job_bytes=800, bounds=TINY, progress=False, quiet=True, mode="local",
                           traceback=True)
    assert summary.exit_status == 0
    for f in files:
        assert output_of(out, f).read_bytes() == expected(data, f, data["targets"], ("--mode", "local",
                                                                                     "--traceback"), capsys)


def test_bad_files_fail_alone(data, tmp_path, capsys):
    bad_fastq = tmp_path / "bad.fq"
    bad_fastq.write_text("@a\nACGT\n+\nII\n")  # quality shorter than the sequence
    empty = tmp_path / "empty.fa"
    empty.write_text("")
    bad_residue = tmp_path / "resid.fa"
    bad_residue.write_text(">x\nACDEFJKL\n")  # J: not in BLOSUM62's alphabet
    good = data["prot_q"]
    out = tmp_path / "out"
    files = [good, bad_fastq, tmp_path / "missing.fa", empty, bad_residue]
    summary = run_pipeline(listing(tmp_path, files), data["prot_t"], out, "align", devices=[CpuBackend(1)],
                           workers=2, progress=False, quiet=True, matrix="BLOSUM62")
    status = {Path(r.query.name).name: (r.status, str(r.error)) for r in summary.files}
    assert status["prot_q.fa"][0] == "ok"
    assert status["bad.fq"][0] == "failed" and "bad.fq" in status["bad.fq"][1]
    assert status["missing.fa"][0] == "failed" and "No such file" in status["missing.fa"][1]
    assert status["empty.fa"] == ("failed", f"{empty}: no FASTA/FASTQ records (empty file)")
    assert status["resid.fa"][0] == "failed" and "'J'" in status["resid.fa"][1]
    assert summary.exit_status == 1
    assert sorted(p.name for p in out.iterdir()) == [".gseek-lock", ".gseek-manifest.json", "prot_q.tsv", "summary.tsv"]
    # the good output is complete, and what gseek align writes
    assert (out / "prot_q.tsv").read_bytes() == expected(data, good, data["prot_t"], ("--matrix", "BLOSUM62"),
                                                          capsys)


@pytest.mark.parametrize("workers", [0, 1, 3])
def test_a_bad_name_in_a_combined_job_fails_only_its_file(data, tmp_path, capsys, workers):
    """Small files share jobs; a non-ASCII name in one of them fails that file (before
    the DP), and the files beside it in the same jobs keep gseek align's bytes."""
    files = []
    for i in range(8):
        path = tmp_path / f"f{i}.fa"
        body = data["files"][0].read_bytes().split(b">")[1 + i].rstrip(b"\n")  # one record each
        name = b"bad\xe9" if i % 4 == 2 else f"ok{i}".encode()
        path.write_bytes(b">" + name + b"\n" + body.split(b"\n", 1)[1] + b"\n")
        files.append(path)
    out = tmp_path / "out"
    summary = run_pipeline(listing(tmp_path, files), data["targets"], out, "align", devices=[CpuBackend(1)],
                           workers=workers, job_bytes=600, progress=False, quiet=True, mode="local",
                           traceback=True)
    for i, (f, r) in enumerate(zip(files, summary.files)):
        if i % 4 == 2:
            assert r.status == "failed" and "cannot be written in the output" in str(r.error) and "bad" in str(r.error)
        else:
            assert r.status == "ok", r.error
            assert output_of(out, f).read_bytes() == expected(data, f, data["targets"], ("--mode", "local",
                                                                                         "--traceback"), capsys)
    no_temporaries(out)


def test_what_would_fail_every_file_fails_once_before_the_work(data, tmp_path, capsys):
    bad = tmp_path / "bad_targets.fa"
    bad.write_bytes(b">t\xe9\nACGTACGT\n")
    with pytest.raises(OptionError, match=r"bad_targets.fa: sequence name 't\\xe9|bad_targets.fa: sequence name 'té"):
        AlignTask(bad, device="cpu")
    with pytest.raises(OptionError, match="the DP's range"):
        AlignTask(data["targets"], device="cpu", match=600_000, mode="local")  # 600,000 x ~240 bp
    code, _, err = gseek(cli_pipeline(data, tmp_path, "-t", bad), capsys)
    assert code == 1 and err.startswith("gseek: error: ") and "cannot be written" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").glob("*.tsv"))


def test_resume_follows_options_and_targets(data, tmp_path):
    files = data["files"][:2]
    lst = listing(tmp_path, files)
    out = tmp_path / "out"

    def go(targets=data["targets"], **options):
        s = run_pipeline(lst, targets, out, "align", devices=[CpuBackend(1)], workers=1, progress=False,
                         quiet=True, resume=True, **options)
        return [r.status for r in s.files]

    assert go() == ["ok", "ok"]
    assert go() == ["skipped", "skipped"]
    assert go(mode="local") == ["ok", "ok"]  # other options: other rows
    changed = tmp_path / "t2.fa"
    changed.write_bytes(data["targets"].read_bytes().replace(b"A", b"C", 1))
    assert go(changed, mode="local") == ["ok", "ok"]  # other targets: other rows
    assert go(changed, mode="local") == ["skipped", "skipped"]


def test_task_options_are_checked_when_the_task_is_made(data):
    with pytest.raises(OptionError, match="mode must be one of"):
        AlignTask(data["targets"], device="cpu", mode="diagonal")
    with pytest.raises(OptionError, match="unknown AlignOptions option.*colour"):
        AlignTask(data["targets"], device="cpu", colour="red")
    with pytest.raises(OptionError, match="not both"):  # the value whole, or its fields, once
        AlignTask(data["targets"], device="cpu", options=AlignOptions(mode="local"), mode="global")
    with pytest.raises(OptionError, match="give at least one device"):
        AlignTask(data["targets"], devices=[])


# --------------------------------------------------------------------------- command line


def cli_pipeline(data, tmp_path, *extra, files=None):
    return ["--device", "cpu", "pipeline", "--task", "align", "--queries", listing(tmp_path, files or data["files"]),
            "--outdir", tmp_path / "out", *extra]


def test_cli_pipeline_align(data, tmp_path, capsys):
    code, _, err = gseek(cli_pipeline(data, tmp_path, "-t", data["targets"], "--mode", "local", "--traceback",
                                      "--workers", "3", "--job-mb", "0.001"), capsys)
    assert code == 0, err
    assert f"{len(data['files'])} ok, 0 failed, 0 skipped" in err
    for f in data["files"]:
        assert output_of(tmp_path / "out", f).read_bytes() == expected(data, f, data["targets"],
                                                                      ("--mode", "local", "--traceback"), capsys)


@pytest.mark.parametrize("args, message", [
    ([], "--task align takes -t/--target FASTA"),
    (["-t", "T", "-x", "I"], "--task align takes -t/--target FASTA"),
    (["-t", "T", "-v", "1"], "--mismatches: not an option of --task align"),
    (["-t", "T", "--all", "--norc"], "--all, --norc: not an option of --task align"),
])
def test_cli_align_task_usage_errors(data, tmp_path, capsys, args, message):
    code, _, err = gseek(cli_pipeline(data, tmp_path, *args), capsys)
    assert code == 2 and message in err


@pytest.mark.parametrize("args, message", [
    (["-x", "I", "--mode", "local"], "--mode: not an option of --task map"),
    (["-x", "I", "--score-only", "--match", "1"], "--match, --traceback/--score-only: not an option of --task map"),
    (["-x", "I", "-t", "T"], "--task map takes -x/--index INDEX"),
    ([], "--task map takes -x/--index INDEX"),
])
def test_cli_map_task_refuses_align_options(data, tmp_path, capsys, args, message):
    argv = cli_pipeline(data, tmp_path, *args)
    argv[argv.index("align")] = "map"
    code, _, err = gseek(argv, capsys)
    assert code == 2 and message in err, err


def test_cli_bad_targets_are_one_line(data, tmp_path, capsys):
    code, _, err = gseek(cli_pipeline(data, tmp_path, "-t", tmp_path / "nope.fa"), capsys)
    assert code == 1 and err.startswith("gseek: error: ") and "nope.fa" in err and len(err.splitlines()) == 1


@pytest.mark.gpu
def test_cli_gpus_equal_the_cpu(data, tmp_path, capsys):
    import cupy

    gpus = ",".join(str(i) for i in range(min(2, cupy.cuda.runtime.getDeviceCount())))
    argv = cli_pipeline(data, tmp_path, "-t", data["targets"], "--mode", "local", "--traceback", "--gpus", gpus,
                        "--job-mb", "0.001")[2:]  # no --device cpu
    code, _, err = gseek(argv, capsys)
    assert code == 0, err
    for f in data["files"]:
        assert output_of(tmp_path / "out", f).read_bytes() == expected(data, f, data["targets"],
                                                                      ("--mode", "local", "--traceback"), capsys)

"""``gseek search --server URL`` and ``gseek.serve.client.Client``: the local command's bytes, exit
codes and one-line errors, from a service started by the test (a child process on a free port)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from serve_helpers import CALL_S, Service, lambda_index, local_search, make_queries, without_pg  # noqa: E402

from gseek.datasets import lambda_reads  # noqa: E402


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("client")
    lambda_index(d)
    make_queries(d / "q.fa", 6, seed=3)
    make_queries(d / "bad.fa", 2, seed=4, bad_line=True)
    (d / "reads.fq").write_text("".join(open(lambda_reads()).readlines()[:400]))
    (d / "empty.fa").write_text("")
    return d


@pytest.fixture(scope="module")
def service(data):
    svc = Service(data / "lambda.gseek", "--workers", "1", cwd=data)  # the searches in a worker process
    yield svc
    assert svc.stop() == 0, svc.err.decode()


def remote(service, *args, cwd, env=None):
    proc = subprocess.run([sys.executable, "-m", "gseek", "search", "--server", service.url, "-x", "lambda", *args],
                          capture_output=True, cwd=cwd, timeout=CALL_S, env={**os.environ, **(env or {})})
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize("args", [["--task", "megablast"], ["--task", "blastn", "--outfmt", "7 std qlen", "--evalue",
                                                                "1e-20", "--dust", "no"],
                                  ["--task", "megablast", "--outfmt", "sam", "--gapopen", "2", "--gapextend", "1"],
                                  ["-v", "1", "--no-unal"]])
def test_same_bytes_as_the_local_command(data, service, args):
    queries = "reads.fq" if "-v" in args else "q.fa"
    code, local, _ = local_search(data / "lambda.gseek", data / queries, *args, cwd=data)
    assert code == 0 and local
    got = remote(service, "-q", queries, *args, cwd=data)
    assert got[0] == 0, got[2]
    assert without_pg(got[1]) == without_pg(local)
    if b"@PG" in got[1]:  # the command given here
        assert b"CL:gseek search --server " in got[1]


def test_output_file_and_environment(data, service, tmp_path):
    code, local, _ = local_search(data / "lambda.gseek", data / "q.fa", "--task", "megablast", cwd=data)
    out = tmp_path / "out.tsv"
    proc = subprocess.run([sys.executable, "-m", "gseek", "search", "-x", "lambda", "--task", "megablast", "-q", "q.fa",
                           "-o", str(out)], capture_output=True, cwd=data, timeout=CALL_S,
                          env={**os.environ, "GSEEK_SERVER": service.url})
    assert proc.returncode == 0 and proc.stdout == b"", proc.stderr
    assert out.read_bytes() == local
    assert [p.name for p in tmp_path.iterdir()] == ["out.tsv"]  # no temporary left


@pytest.mark.parametrize("query, args, status", [
    ("bad.fa", ["--task", "megablast"], 1),  # bad record: the file and line
    ("none.fa", ["--task", "megablast"], 1),  # missing file
    ("empty.fa", ["--task", "blastn", "--outfmt", "sam"], 1),  # no records: an error, nothing written
    ("empty.fa", ["-v", "1"], 1),
    ("q.fa", ["--task", "megablast", "--word-size", "2"], 2),  # usage error
])
def test_same_errors_as_the_local_command(data, service, query, args, status):
    code, out, err = local_search(data / "lambda.gseek", data / query, *args, cwd=data)
    got = remote(service, "-q", query, *args, cwd=data)
    assert code == got[0] == status
    assert out == got[1] == b""
    if status == 1:
        assert err == got[2] and err.count(b"\n") == 1
    else:
        assert err.splitlines()[-1] == got[2].splitlines()[-1]


def test_server_errors_in_one_line(data, service):
    code, out, err = remote(service, "-q", "q.fa", "--task", "megablast", cwd=data)
    assert code == 0
    proc = subprocess.run([sys.executable, "-m", "gseek", "search", "--server", service.url, "-x", "nt", "-q", "q.fa",
                           "--task", "megablast"], capture_output=True, text=True, cwd=data, timeout=CALL_S)
    assert proc.returncode == 1 and proc.stderr == "gseek: error: no database 'nt' here; this server has: lambda\n"
    proc = subprocess.run([sys.executable, "-m", "gseek", "search", "--server", "http://127.0.0.1:9", "-x", "nt",
                           "-q", "q.fa", "--task", "megablast"], capture_output=True, text=True, cwd=data,
                          timeout=CALL_S)
    assert proc.returncode == 1 and proc.stderr.startswith("gseek: error: cannot reach the gseek server at ")
    assert proc.stderr.count("\n") == 1


def test_client_api(data, service):
    from gseek.serve.client import Client, ServerError

    client = Client(service.url)
    assert [d["name"] for d in client.databases()] == ["lambda"]
    queries = client.records("lambda", [("q.fa", (data / "q.fa").read_text())], task="megablast", evalue=1e-10)
    assert len(queries) == 7 and sum(len(q["hits"]) for q in queries) >= 6
    assert {"qaccver", "saccver", "pident", "evalue", "qseq", "sseq"} <= set(queries[0]["hits"][0])
    assert queries[0]["name"] == "s3q0" and queries[0]["hits"][0]["qaccver"] == "s3q0"
    with pytest.raises(ServerError, match="unknown BlastOptions option"):
        client.search("lambda", ">a\nACGT\n", nope=1)


@pytest.mark.parametrize("task, options", [("megablast", {}), ("blastn", {"evalue": 1e-10, "dust": None}),
                                           ("megablast", {"strand": "minus", "max_hsps": 1})])
def test_client_search_returns_the_local_apis_hits(data, service, task, options):
    """``Client.search`` returns a BlastHits, as ``BlastSearcher.search`` does: the same rows in every
    field (the sequences and BTOP read from the subjects' windows it carries), the same tables."""
    from gseek import BlastSearcher, Index
    from gseek.blast.hits import BlastHits
    from gseek.blast.tables import hsp_fields
    from gseek.serve.client import Client

    files = [("q.fa", (data / "q.fa").read_text()), ("q2.fa", (data / "bad.fa").read_text().split("@oops")[0])]
    got = Client(service.url).search("lambda", files, task=task, **options)
    searcher = BlastSearcher(Index.load(data / "lambda.gseek", device="cpu"), task=task, device="cpu", **options)
    local = searcher.search(_both(data))
    assert isinstance(got, BlastHits) and len(got) == len(local) > 0
    fields = "std qlen slen sstrand nident gaps score qseq sseq btop"
    words = hsp_fields(fields)
    assert [got.row(h, words) for h in range(len(got))] == [local.row(h, words) for h in range(len(local))]
    assert list(got.query_names) == list(local.query_names)
    pd = pytest.importorskip("pandas")
    assert got.to_pandas(fields).equals(local.to_pandas(fields))
    assert isinstance(got.to_pandas(), pd.DataFrame)
    pytest.importorskip("pyarrow")
    assert got.to_arrow(fields).equals(local.to_arrow(fields))


def _both(data):
    """The queries of q.fa and bad.fa's good records, as one batch (what the two files searched at once hold)."""
    from gseek.seqio import SequenceBatch, read_fastx

    (data / "good.fa").write_text((data / "bad.fa").read_text().split("@oops")[0])
    return SequenceBatch.concat([read_fastx(data / "q.fa"), read_fastx(data / "good.fa")])


def test_the_client_imports_nothing_heavy():
    script = "import sys, gseek.serve.client; print(sorted(m for m in ('numpy', 'numba', 'starlette', 'uvicorn', " \
             "'click') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "[]", proc.stderr


def test_the_server_command_imports_neither_numpy_nor_numba(data, service):
    """``gseek search --server`` (the whole command, the CLI group's compile notice included) loads no
    NumPy and no Numba: it starts in about 0.2 s (docs/serve.md), and writes the service's bytes."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "gseek", "search", "--server", service.url, "-x",
                           "lambda", "-q", "q.fa", "--task", "megablast"], capture_output=True, text=True, cwd=data,
                          timeout=CALL_S)
    assert proc.returncode == 0 and proc.stdout.startswith("s3q0\t"), proc.stderr[-500:]
    imported = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "gseek.cli.search" in imported and "gseek.serve.client" in imported
    assert not {m for m in imported if m.split(".")[0] in ("numpy", "numba", "cupy", "starlette")}


@pytest.mark.parametrize("task, options, args", [
    ("megablast", {"word_size": 2}, ["--task", "megablast", "--word-size", "2"]),
    ("blastn", {"gap_open": 1, "gap_extend": 9}, ["--task", "blastn", "--gapopen", "1", "--gapextend", "9"]),
    ("map", {"max_alignments": 2, "report_all": True}, ["-k", "2", "--all"]),
    ("map", {"max_hits": 3}, ["--max-hits", "3"]),
    ("map", {"norc": True, "nofw": True}, ["--norc", "--nofw"]),
])
def test_a_bad_option_gets_the_command_lines_message(data, service, task, options, args):
    """The request's options are made into the option values the command makes (gseek.serve.options):
    a bad one is refused with 400 and the one line the command prints for it (a usage error, exit 2)."""
    from serve_helpers import call

    queries = "reads.fq" if task == "map" else "q.fa"
    code, _, err = local_search(data / "lambda.gseek", data / queries, *args, cwd=data)
    body = {"database": "lambda", "task": task, "options": options, "queries": (data / queries).read_text()}
    status, text, _ = call(service.url + "/api/v1/search", body)
    error = json.loads(text)
    assert code == 2 and status == 400 and error["kind"] == "usage"
    assert err.decode().splitlines()[-1] == f"Error: {error['error']}"


@pytest.mark.parametrize("options", [{"mismatches": 2}, {"mismatches": 1, "max_alignments": 3},
                                     {"mismatches": 2, "report_all": True, "max_hits": 2, "norc": True}])
def test_client_map_returns_the_local_apis_mapping_result(data, service, options):
    """``Client.map`` (and ``Client.search(task="map")``) returns a MappingResult, as ``Mapper.map``
    does: the same arrays, the same per-hit views (MD and the =/X CIGAR read from the reference
    windows it carries) and the same tables, unmapped reads too."""
    import numpy as np

    from gseek import Mapper, MappingResult
    from gseek.seqio import read_fastx
    from gseek.serve.client import Client

    text = (data / "reads.fq").read_text()
    got = Client(service.url).map("lambda", [("reads.fq", text)], **options)
    local = Mapper(data / "lambda.gseek", device="cpu", **options).map(read_fastx(data / "reads.fq"))
    assert isinstance(got, MappingResult) and repr(got) == repr(local) and len(local) > 0
    for name in ("read", "contig", "pos", "strand", "mismatches", "secondary", "hit_offsets", "best", "n_best",
                 "mapq", "status", "alt_offsets", "alt_pos", "capped"):
        assert np.array_equal(getattr(got, name), getattr(local, name)), name
    views = [[(h.ctg, h.r_st, h.r_en, h.strand, h.mapq, h.NM, h.MD, h.cigar_eq_str, h.ctg_len, str(h))
              for h in read.hits] for read in got]
    assert views == [[(h.ctg, h.r_st, h.r_en, h.strand, h.mapq, h.NM, h.MD, h.cigar_eq_str, h.ctg_len, str(h))
                      for h in read.hits] for read in local]
    assert [r.name for r in got] == [r.name for r in local]
    pytest.importorskip("pandas")
    assert got.to_pandas(unmapped=True).equals(local.to_pandas(unmapped=True))
    assert got.to_pandas().equals(local.to_pandas())
    pytest.importorskip("pyarrow")
    assert got.to_arrow().equals(local.to_arrow())
    again = Client(service.url).search("lambda", text, task="map", **options)
    assert isinstance(again, MappingResult) and again.to_pandas().equals(local.to_pandas())


def test_client_map_refuses_what_mapper_map_does_not_take(service):
    from gseek.serve.client import Client, ServerError

    with pytest.raises(ServerError, match="format mapping .*not trim5") as info:
        Client(service.url).map("lambda", "@r\nACGTACGTACGTACGTACGTAC\n+\nIIIIIIIIIIIIIIIIIIIIII\n", trim5=2)
    assert info.value.status == 400 and info.value.kind == "usage"


@pytest.mark.parametrize("order", ["fastq_first", "fasta_first"])
def test_client_map_refuses_fasta_and_fastq_files_together(service, order):
    """A mapping request's files are one batch: FASTA beside FASTQ gets a 400 naming the odd file (it
    lost the qualities, or failed with NumPy's message)."""
    from gseek.serve.client import Client, ServerError

    fq = ("r.fq", "@r\nACGTACGTACGTACGTACGTAC\n+\nIIIIIIIIIIIIIIIIIIIIII\n")
    fa = ("s.fa", ">s\nACGTACGTACGTACGTACGTAC\n")
    files = [fq, fa] if order == "fastq_first" else [fa, fq]
    with pytest.raises(ServerError) as info:
        Client(service.url).map("lambda", files)
    assert info.value.status == 400 and str(info.value).count("\n") == 0
    assert files[1][0] in str(info.value) and "one kind of file a request" in str(info.value)

"""The README's two commands are the ones CI and users run; its Python example runs."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

from gseek.datasets import lambda_genome, lambda_reads, lambda_truth
from gseek.seqio import read_fastx

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    return re.findall(r"```sh\n(.+?)\n```", (ROOT / "README.md").read_text())


def test_ci_runs_the_readme_test_command():
    demo, tests = _readme_commands()[:2]
    assert "pytest" in tests and "demo" in demo
    ci_lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert tests in ci_lines


def test_readme_python_example_runs_on_the_lambda_data(tmp_path, monkeypatch):
    """The "In Python" block, run as written in a folder holding the files it
    names (the embedded lambda genome and reads, gzipped), finds exactly the
    reads the truth places on the forward strand without mismatches."""
    (block,) = re.findall(r"```python\n(.+?)```", (ROOT / "README.md").read_text(), re.S)
    from gseek.datasets.simulate import blast_queries

    reads_fq_gz = gzip.compress(lambda_reads().read_bytes(), mtime=0)
    queries = blast_queries(lambda_genome(), 6, (400, 800), seed=1)
    queries.write(tmp_path / "queries.fa")
    for name, data in {"ref.fa": lambda_genome().read_bytes(), "reads.fq.gz": reads_fq_gz,
                       "queries.fa": (tmp_path / "queries.fa").read_bytes()}.items():
        assert f'"{name}"' in block, f"the README example no longer reads {name}: update this test"
        (tmp_path / name).write_bytes(data)
    monkeypatch.chdir(tmp_path)
    names: dict = {}
    exec(compile(block, "README.md", "exec"), names)

    assert (tmp_path / "ref.gseek").is_dir()
    batch, hits = names["batch"], names["hits"]  # the last batch's
    reads = batch.name_list()
    found = {(reads[i], contig, pos) for i, contig, pos in hits}  # an Occurrence a match
    assert len(found) == len(hits)
    rows = [line.split("\t") for line in lambda_truth().read_text().splitlines()[1:]]
    in_batch = set(reads)
    exact = {(row[0], 0, int(row[2])) for row in rows if row[0] in in_batch and row[3] == "+" and row[4] == "0"}
    assert len(exact) > 100 and found == exact
    genome_fasta = read_fastx(lambda_genome())
    genome, genome_name = genome_fasta.sequence(0), genome_fasta.name_list()[0]
    for i, pos in zip(hits.pattern.tolist(), hits.position.tolist()):
        assert genome[pos:pos + len(batch.sequence(i))] == batch.sequence(i)


    # the mappy-style part: every read the truth places within 2 mismatches, where it says
    placed = names["placed"]
    truth = {row[0]: (int(row[2]), row[3], int(row[4])) for row in rows if row[4] in "012"}
    assert len(truth) > 1000
    assert {name: (h.r_st, "+" if h.strand > 0 else "-", h.NM) for name, h in placed.items()} == truth
    assert str(placed["r0002"]).split("\t")[:9] == ["r0002", "100", "0", "100", "+", genome_name, "48502",
                                                     str(truth["r0002"][0]), str(truth["r0002"][0] + 100)]
    assert [(h.r_st, h.strand) for h in names["one"]] == [(22128, 1)]
    result = names["result"]
    assert [read.name for read in result] == reads

    # the BLAST search and both tables
    sam, blast, hsps = names["sam"], names["blast"], names["hsps"]
    assert len(sam) == len(result) and sam["QNAME"].tolist() == [reads[i] for i in result.read.tolist()]
    assert len(blast) == len(hsps) >= 5 and blast["qaccver"].tolist() == [h.qaccver for h in hsps]
    planted = {name for name, contig, *_ in queries.truth if contig != "*"}
    assert set(names["best"].index) == planted and (names["best"] > 500).all()

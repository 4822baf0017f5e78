"""The benchmarks folder's shape (benchmarks/README.md): one suite, its records and table, an archive.

Nothing here runs or times a benchmark: the suite is imported (its modules import only the standard
library at the top), ``run.py --list`` is asked for the names, and the report generator is fed a
sample record.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
SUITE = BENCH / "suite"
MAX_LINES = 600
#: The benchmarks the suite registers; RESULTS.md and docs/ hold commands for each.
EXPECTED = {"io", "index", "map", "map-pairs", "map-bam", "startup", "blast", "align", "pipeline", "pipeline-align",
            "pipeline-blast", "cluster", "cluster-hetero", "cluster-gpus"}
#: gseek names the suite still imports that are not public (not in gseek's _LAZY), and why
#: (benchmarks/README.md, "Private names"). A new one must be added here, with its reason.
PRIVATE_IMPORTS = {
    "gseek.alphabet": "COMPLEMENT, encode_dna/decode_dna for the simulated data (no public alphabet module yet)",
    "gseek.blast.compare": "COMPARE_FIELDS, compare_reports: recall against blastn (not exported yet)",
    "gseek.datasets.simulate": "_MAX_INDEL and datagen's vectorised pair simulator's window sampler",
    "gseek.kernels": "_cupy_cache: the startup benchmark's notes (to become gseek.precompile.status())",
    "gseek.kernels._cuda": "cubin_status: the startup benchmark's notes (to become gseek.precompile.status())",
    "gseek.kernels._jit": "prebuilt_status: the startup benchmark's notes (to become gseek.precompile.status())",
}
#: Public: gseek's _LAZY names, and the subpackages' documented __all__ (gseek.datasets, gseek.seqio).
PUBLIC_MODULES = {"gseek", "gseek.datasets", "gseek.seqio"}


@pytest.fixture()
def suite(monkeypatch):
    """``benchmarks.suite`` imported with the repository root at the end of ``sys.path`` (as run.py does)."""
    monkeypatch.setattr(sys, "path", [*sys.path, str(ROOT)])
    import benchmarks.suite as suite

    return suite


def _readme_rows(readme: Path) -> set[str]:
    """The file names in the first column of a README's tables (```name```, several per cell allowed)."""
    names = set()
    for line in readme.read_text().splitlines():
        if line.startswith("|") and not set(line) <= set("|-: "):
            first = line.split("|")[1]
            names.update(re.findall(r"`([^`/]+\.(?:py|sh))`", first))
    return names


def test_every_benchmark_is_importable_and_listed(suite):
    registered = suite.load()
    assert set(registered) == EXPECTED
    for name, b in registered.items():
        assert b.module.startswith("benchmarks.suite."), name
        assert b.module.rsplit(".", 1)[-1] in suite.FAMILIES, name
    listed = subprocess.run([sys.executable, str(BENCH / "run.py"), "--list"], capture_output=True, text=True,
                            check=True, cwd=ROOT).stdout
    assert {line.split()[0] for line in listed.splitlines() if line.strip()} == EXPECTED


def test_run_py_is_a_shim():
    text = (BENCH / "run.py").read_text()
    assert len(text.splitlines()) < 40
    assert "from benchmarks.suite.cli import main" in text


def test_archive_and_tools_have_one_readme_row_each():
    for folder in ("archive", "tools"):
        files = {p.name for p in (BENCH / folder).iterdir() if p.name not in ("README.md", "__pycache__")}
        rows = _readme_rows(BENCH / folder / "README.md")
        assert files - rows == set(), f"benchmarks/{folder}: files without a README row"
        assert rows - files == set(), f"benchmarks/{folder}/README.md: rows for files that are not there"


def test_top_level_holds_only_the_suite_entry_points():
    kept = {"README.md", "RESULTS.md", "RESULTS-table.md", "run.py", "ab.py", "env.sh", "fetch_peers.sh",
            "suite", "archive", "tools", "results", "data", "peers", "out", "__pycache__"}
    tracked = subprocess.run(["git", "ls-files", "benchmarks"], capture_output=True, text=True, cwd=ROOT).stdout
    top = {Path(p).parts[1] for p in tracked.split()} or {p.name for p in BENCH.iterdir()}
    assert top <= kept, sorted(top - kept)


def test_no_suite_module_over_the_limit():
    for path in sorted(SUITE.glob("*.py")):
        n = len(path.read_text().splitlines())
        assert n <= MAX_LINES, f"{path.relative_to(ROOT)}: {n} lines"


def test_private_gseek_imports_are_the_listed_ones():
    lazy = ast.literal_eval(re.search(r"_LAZY = (\{.*?\})", (ROOT / "gseek" / "__init__.py").read_text(), re.S)[1])
    found = {}
    for path in sorted(SUITE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gseek"):
                for alias in node.names:
                    public = node.module in PUBLIC_MODULES and (node.module != "gseek" or alias.name in lazy)
                    if not public or alias.name.startswith("_"):
                        found.setdefault(node.module, set()).add(f"{path.name}: {alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("gseek") and alias.name not in PUBLIC_MODULES:
                        found.setdefault(alias.name, set()).add(f"{path.name}: import")
    assert set(found) == set(PRIVATE_IMPORTS), found


SAMPLE = {
    "schema": 1, "benchmark": "io", "title": "Sequence I/O", "date": "2026-11-28T12:53:09+00:00",
    "host": "vm", "cpu": "Intel(R) Xeon(R) Processor", "cores": 2, "device": "none", "python": "3.11.7",
    "commit": "e266455", "command": "python benchmarks/run.py io --reads 20000 --repeat 1",
    "versions": {"gseek": "0.1.0", "pysam": "0.24.1"}, "data": {"reads": 20000},
    "data_line": "Data: synthetic FASTQ 20,000 × 100 bp", "peers": ["pysam"],
    "figures": [{"header": ["parser", "input", "median s"], "align": "llr",
                 "rows": [["gseek FastxReader", "fastq", "0.07"], ["pysam.FastxFile", "fastq", "0.03"]]}],
    "table": "", "notes": ["all parsers counted 20,000 reads"], "results": [],
}


def test_report_turns_a_record_into_the_table(suite, tmp_path):
    from benchmarks.suite import harness, report

    records = tmp_path / "results"
    records.mkdir()
    (records / "io-20261128T125309Z.json").write_text(json.dumps(SAMPLE))
    older = dict(SAMPLE, date="2026-11-21T10:00:00+00:00", commit="98fcedf", figures=[],
                 table="| parser | median s |\n| --- | ---: |\n| pysam.FastxFile | 0.05 |")
    (records / "io-20261121T100000Z.json").write_text(json.dumps(older))
    out = report.write_table(records, tmp_path / "RESULTS-table.md")
    text = out.read_text()
    assert text.startswith("# Benchmark results: the table")
    index = harness.parse_tables(text)[0]
    assert index["header"][:5] == ["date", "benchmark", "GPU", "CPU", "commit"]
    assert [row[0] for row in index["rows"]] == ["2026-11-28", "2026-11-21"]  # newest first
    assert "[`io-20261128T125309Z.json`](results/io-20261128T125309Z.json)" in index["rows"][0][-1]
    assert "Command: `python benchmarks/run.py io --reads 20000 --repeat 1`" in text
    assert "| gseek FastxReader | fastq |     0.07 |" in text  # the figures, aligned as the run printed them
    assert "| pysam.FastxFile | 0.05 |" in text  # a record without figures: its Markdown table as written
    assert "- all parsers counted 20,000 reads" in text


def test_record_figures_round_trip(suite):
    from benchmarks.suite import harness

    rows = [["gseek", "1.00", "2.00x"], ["bowtie", "2.00", "1.00x"]]
    table = harness.markdown_table(["tool", "s", "vs bowtie"], rows)
    (figures,) = harness.parse_tables(table)
    assert figures["rows"][1] == ["bowtie", "2.00", "1.00x"]
    assert harness.markdown_table(figures["header"], figures["rows"], figures["align"]) == table


def test_keep_refuses_what_is_not_a_record(suite, tmp_path):
    from benchmarks.suite import cli

    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"benchmark": "io"}))
    with pytest.raises(SystemExit, match="x.json: not a benchmark record"):
        cli.keep([bad], tmp_path / "results")
    good = tmp_path / "io-1.json"
    good.write_text(json.dumps(SAMPLE))
    assert [p.name for p in cli.keep([good], tmp_path / "results")] == ["io-1.json"]


def test_results_table_is_generated_from_the_kept_records(suite):
    from benchmarks.suite import harness, report

    records = report.load_records(harness.RESULTS_DIR)
    assert records, "benchmarks/results/ holds no record"
    for path, record in records:
        assert all(k in record for k in ("benchmark", "date", "device", "commit", "command")), path.name
    expected = report.render(records, harness.RESULTS_TABLE.parent)
    assert harness.RESULTS_TABLE.read_text() == expected, "run `python benchmarks/run.py report` and commit the table"

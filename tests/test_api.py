"""The public API from ``import gseek`` (issue 38, items 3 and 4): the BLAST search and the result types
exported, a path where an index is taken, ``len()`` of a locate, and every result as a table equal to the
text the real writers print for the same search (SAM, BLAST ``-outfmt 6``, the align TSV), on the CPU."""

from __future__ import annotations

import doctest
import inspect
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gseek
from gseek.datasets import lambda_genome, lambda_reads

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

ROOT = Path(__file__).resolve().parent.parent
EXPORTED = ["BlastSearcher", "BlastOptions", "BlastHits", "blast_files", "MappingResult", "MappedRead", "Hit",
            "AlignmentResults", "Alignment", "Occurrences"]


# ---------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    """The whole index, saved, of the lambda genome and two copies of a part of it (reads there
    map two or three times: secondary records, XA, ZH), one with a run of N (MD's N)."""
    folder = tmp_path_factory.mktemp("api")
    genome = gseek.read_fastx(lambda_genome()).sequence(0)
    copy = genome[10000:11000] + "N" + genome[11001:12000]
    reverse = genome[10500:11500][::-1].translate(str.maketrans("ACGT", "TGCA"))
    (folder / "ref.fa").write_text(f">lambda\n{genome}\n>copy\n{copy}\n>copy_rc the reverse strand\n{reverse}\n")
    path = folder / "ref.gseek"
    gseek.Index.build(folder / "ref.fa", wgram=8, device="cpu").save(path)
    return path


@pytest.fixture(scope="module")
def index(saved):
    return gseek.Index.load(saved, device="cpu")


@pytest.fixture(scope="module")
def reads(tmp_path_factory) -> Path:
    """The first 400 lambda reads and four a read of its own could not hold: too short, too long, with N."""
    lines = lambda_reads().read_text().splitlines()[: 4 * 400]
    genome = gseek.read_fastx(lambda_genome()).sequence(0)
    extra = [("short", "ACGTACGT"), ("long", genome[100:1200]), ("with_n", genome[5000:5040] + "N" + genome[5041:5090]),
             ("repeat", "ACGT" * 20), ("across_n", genome[10950:11050])]
    for name, seq in extra:
        lines += [f"@{name}", seq, "+", "I" * len(seq)]
    path = tmp_path_factory.mktemp("reads") / "reads.fq"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def queries(tmp_path_factory) -> Path:
    from gseek.datasets.simulate import blast_queries

    path = tmp_path_factory.mktemp("queries") / "queries.fa"
    blast_queries(lambda_genome(), 12, (300, 1500), seed=7, sub_rate=0.05, indel_rate=0.005).write(path)
    return path


# ---------------------------------------------------------------------------- the names


@pytest.mark.parametrize("name", EXPORTED)
def test_result_and_blast_types_are_exported(name):
    value = getattr(gseek, name)
    assert name in gseek.__all__ and name in dir(gseek)
    assert (inspect.getdoc(value) or "").strip(), f"gseek.{name} has no docstring"


def test_dir_lists_only_public_names():
    names = dir(gseek)
    assert names == sorted(gseek.__all__)
    for private in ("Any", "annotations", "importlib", "errors", "_LAZY"):
        assert private not in names
    gseek.Mapper  # noqa: B018 - loading a name adds nothing to dir()
    assert dir(gseek) == names


def test_help_mentions_the_blast_search():
    doc = gseek.__doc__
    assert "BlastSearcher" in doc and "megablast" in doc and "blast_files" in doc and "to_pandas" in doc


def test_import_gseek_loads_neither_numba_nor_pandas():
    code = ("import sys, gseek; dir(gseek); "
            "print(sorted(m for m in ('numba', 'cupy', 'numpy', 'pandas', 'pyarrow') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_docs_blast_imports_from_gseek():
    text = (ROOT / "docs" / "blast.md").read_text()
    assert "from gseek.blast.searcher import" not in text and "gseek.blast.searcher.BlastSearcher" not in text


# ---------------------------------------------------------------------------- paths and strings


def test_mapper_takes_an_index_path(saved, index):
    by_path = gseek.Mapper(str(saved), mismatches=1, device="cpu")
    by_pathlike = gseek.Mapper(saved, mismatches=1, device="cpu")
    genome = gseek.read_fastx(lambda_genome()).sequence(0)
    read = genome[22128:22164]
    assert [(h.r_st, h.strand) for h in by_path.map(read)] == [(22128, 1)]
    assert by_path.map(read)[0].ctg == by_pathlike.map(read)[0].ctg == index.contigs.names[0]
    with pytest.raises(TypeError, match="an Index or the path of a saved one"):
        gseek.Mapper(42)


def test_blast_searcher_takes_an_index_path(saved):
    genome = gseek.read_fastx(lambda_genome()).sequence(0)
    hits = gseek.BlastSearcher(str(saved), device="cpu").search([("q", genome[2000:2600])])
    assert len(hits) == 1 and hits.row(0).split("\t")[8:10] == ["2001", "2600"]


def test_blast_search_of_a_str_is_one_query(saved):
    genome = gseek.read_fastx(lambda_genome()).sequence(0)
    hits = gseek.BlastSearcher(saved, device="cpu").search(genome[2000:2600])
    assert len(hits) == 1 and hits.query_names == ["query0"]


def test_pair_aligner_takes_a_fasta_path_and_a_str_is_one_sequence(queries, tmp_path):
    targets = tmp_path / "t.fa"
    targets.write_text(">a\nACGTACGTTTGACA\n>b\nGATTACAGATTACA\n")
    aligner = gseek.PairAligner(mode="local", traceback=True, device="cpu")
    by_path = aligner.query_vs_database("ACGTACGATTGA", targets)
    assert list(by_path.target_names) == ["a", "b"] and len(by_path) == 2
    assert by_path.to_pandas().equals(aligner.query_vs_database(["ACGTACGATTGA"], gseek.read_fastx(targets)).to_pandas())
    with pytest.raises(gseek.OptionError, match="residue '/'"):  # a str is a sequence, not a file
        aligner.query_vs_database("ACGTACGATTGA", str(targets))


def test_locate_len_is_the_number_of_matches(index):
    hits = index.locate(["GGCTTTG", "ACGTACGTACGTACGTNN", "GGGCGGCGACCT"])
    assert len(hits) == hits.size == int(index.count(["GGCTTTG", "ACGTACGTACGTACGTNN", "GGGCGGCGACCT"]).sum())
    assert len(hits) > 3
    rows = list(hits)
    assert len(rows) == len(hits)
    assert rows[0]._asdict() == {"pattern": int(hits.pattern[0]), "contig": int(hits.contig[0]),
                                 "position": int(hits.position[0])}
    assert hits[-1] == rows[-1] and hits[-1].position == int(hits.position[-1])
    assert len(index.locate(["ACGTNACGT"])) == 0


# ---------------------------------------------------------------------------- read mapping as a table


def _sam_frame(path: Path, unmapped: bool) -> pd.DataFrame:
    """The SAM records of ``path`` parsed as text: the 11 fields, then one column per tag."""
    from gseek.mapper.tables import SAM_FIELDS, SAM_TAGS

    records = [line.split("\t") for line in path.read_text().splitlines() if not line.startswith("@")]
    tags = list(SAM_TAGS) + (["YF"] if unmapped else [])
    columns: dict[str, list] = {name: [] for name in (*SAM_FIELDS, *tags)}
    for fields in records:
        for name, value in zip(SAM_FIELDS, fields[:11]):
            columns[name].append(int(value) if name in ("FLAG", "POS", "MAPQ", "PNEXT", "TLEN") else value)
        present = {}
        for tag in fields[11:]:
            name, kind, value = tag.split(":", 2)
            present[name] = int(value) if kind == "i" else value
        assert set(present) <= set(tags), present
        for name in tags:
            columns[name].append(present.get(name))
    frame = pd.DataFrame(columns)
    for name in ("NM", "X0", "X1", "ZH"):  # integer tags: int64 where every record has it, else nullable
        every = None not in columns[name] and name != "ZH"
        frame[name] = np.array(columns[name], np.int64) if every else pd.array(columns[name], dtype="Int64")
    return frame


MAP_OPTIONS = {"best": {}, "k3": {"max_alignments": 3}, "all": {"report_all": True, "max_hits": 2}}


@pytest.mark.parametrize("options", list(MAP_OPTIONS))
@pytest.mark.parametrize("unmapped", [False, True], ids=["hits", "every-record"])
def test_mapping_frame_equals_the_sam_written(index, reads, tmp_path, options, unmapped):
    opts = MAP_OPTIONS[options]
    sam = tmp_path / "out.sam"
    gseek.map_reads(index, reads, sam, mismatches=2, device="cpu", no_unal=not unmapped, **opts)
    result = gseek.Mapper(index, mismatches=2, **opts).map(gseek.read_fastx(reads))
    frame = result.to_pandas(unmapped=unmapped)
    expected = _sam_frame(sam, unmapped)
    assert len(frame) == len(expected) > 250
    pd.testing.assert_frame_equal(frame, expected)
    if options == "best":
        assert not (frame["FLAG"] & 256).any() and frame["XA"].notna().any()
    else:
        assert (frame["FLAG"] & 256).any() and frame["XA"].isna().all()
    if options == "k3":  # the copy's N, a mismatch: MD writes the reference's N
        assert (frame["MD"].str.contains("N") & (frame["RNAME"] == "copy")).any()
    if options == "all":
        assert frame["ZH"].notna().any()
    if unmapped:
        assert set(frame.loc[frame["FLAG"] == 4, "YF"].dropna()) == {"TOO_SHORT", "TOO_LONG"}
    table = result.to_arrow(unmapped=unmapped)
    assert table.column_names == list(frame.columns) and table.num_rows == len(frame)
    from gseek.mapper.tables import SAM_TYPES

    assert all(table.schema.field(c).type == (pa.int64() if t == "int64" else pa.string())
               for c, t in SAM_TYPES.items() if c in frame.columns)
    for name in frame.columns:  # the same values, a missing tag null
        assert table.column(name).to_pylist() == [None if pd.isna(v) else v for v in frame[name].tolist()], name


def test_mapping_frame_of_fasta_reads_and_no_hits(index, tmp_path):
    result = gseek.Mapper(index, mismatches=0).map(["ACGTTTTTTTTTTTTTTTTTTTTTGGG" * 2])
    frame = result.to_pandas()
    assert len(frame) == 0 and list(frame.columns)[:3] == ["QNAME", "FLAG", "RNAME"]
    assert result.to_arrow().num_rows == 0
    fasta = tmp_path / "r.fa"
    genome = gseek.read_fastx(lambda_genome()).sequence(0)
    fasta.write_text(f">r1\n{genome[300:350]}\n")
    row = gseek.Mapper(index, mismatches=0).map(gseek.read_fastx(fasta)).to_pandas().iloc[0]
    assert (row.QNAME, row.POS, row.QUAL, row.CIGAR, row.MD, row.NM) == ("r1", 301, "*", "50M", "50", 0)


def test_hits_have_asdict(index):
    genome = gseek.read_fastx(lambda_genome()).sequence(0)
    hit, = gseek.Mapper(index, mismatches=1).map(genome[1000:1040])
    record = hit._asdict()
    assert list(record) == list(hit._fields)
    assert record["r_st"] == 1000 and record["strand"] == 1 and record["NM"] == 0 and record["cigar_str"] == "40M"
    assert pd.DataFrame([h._asdict() for h in gseek.Mapper(index).map(genome[1000:1040])])["r_en"].tolist() == [1040]


# ---------------------------------------------------------------------------- BLAST hits as a table


BLAST_FIELDS = [None, "qseqid sseqid pident nident length mismatch gapopen gaps qstart qend sstart send qlen slen "
                      "sstrand qcovhsp score evalue bitscore"]


def _read_tabular(path: Path, names: list[str]) -> pd.DataFrame:
    from gseek.blast.tables import FLOAT_FIELDS, INT_FIELDS

    dtype = {n: (np.int64 if n in INT_FIELDS else np.float64) for n in names if n in INT_FIELDS | FLOAT_FIELDS}
    return pd.read_csv(path, sep="\t", header=None, names=names, dtype=dtype, keep_default_na=False)


@pytest.mark.parametrize("fields", BLAST_FIELDS, ids=["std", "more"])
@pytest.mark.parametrize("task", ["megablast", "blastn"])
def test_blast_frame_equals_the_tabular_written(saved, queries, tmp_path, fields, task):
    from gseek.blast.report import STD

    out = tmp_path / "out.tsv"
    outfmt = "6" if fields is None else f"6 {fields}"
    gseek.blast_files(saved, queries, out, task=task, outfmt=outfmt, device="cpu", workers=0)
    hits = gseek.BlastSearcher(saved, task=task, device="cpu").search(gseek.read_fastx(queries))
    frame = hits.to_pandas(fields)
    names = STD if fields is None else fields.split()
    expected = _read_tabular(out, names)
    assert len(frame) == len(expected) > 10
    pd.testing.assert_frame_equal(frame, expected)
    pd.testing.assert_frame_equal(hits.to_arrow(fields).to_pandas(), frame)
    records = list(hits)  # the std columns, as records
    assert len(records) == len(hits) and list(records[0]._asdict()) == STD
    assert records[0]._asdict()["evalue"] == hits.to_pandas()["evalue"][0]


def test_blast_frame_fields_are_checked_and_empty_hits_have_columns(saved):
    searcher = gseek.BlastSearcher(saved, device="cpu")
    hits = searcher.search([("none", "ACGT" * 30)])
    frame = hits.to_pandas("qseqid evalue")
    assert list(frame.columns) == ["qseqid", "evalue"] and len(frame) == 0 and frame["evalue"].dtype == np.float64
    assert hits.to_arrow().num_rows == 0 and list(hits) == []
    with pytest.raises(gseek.OptionError, match="not supported"):
        hits.to_pandas("qseqid nosuchfield")


# ---------------------------------------------------------------------------- alignments as a table


@pytest.mark.parametrize("outfmt", [None, "6", "6 qseqid sseqid pident nident length gaps qlen slen cigar score"])
@pytest.mark.parametrize("traceback", [True, False])
def test_alignment_frame_equals_the_tsv_written(queries, tmp_path, outfmt, traceback):
    targets = tmp_path / "targets.fa"
    batch = gseek.read_fastx(queries)
    targets.write_text("".join(f">t{i}\n{batch.sequence(i)[50:250]}\n" for i in range(4)))
    opts = dict(mode="local", traceback=traceback, **({} if outfmt is None else {"outfmt": outfmt}))
    out = tmp_path / "out.tsv"
    gseek.align_files(targets, queries, out, device="cpu", workers=0, **opts)
    results = gseek.PairAligner(device="cpu", **opts).query_vs_database(batch, gseek.read_fastx(targets))
    frame = results.to_pandas()
    expected = pd.read_csv(out, sep="\t", header=None if results.columns[0] == "qseqid" else 0,
                           names=list(results.columns), keep_default_na=False)
    assert len(frame) == len(expected) == len(batch) * 4
    pd.testing.assert_frame_equal(frame, expected)
    assert [str(c) for c in frame.dtypes] == [str(c) for c in results.to_arrow().to_pandas().dtypes]
    row = next(iter(results))._asdict()
    assert list(row) == list(results.columns) and row == frame.iloc[0].to_dict()


# ---------------------------------------------------------------------------- without pandas / pyarrow


@pytest.mark.parametrize("module", ["pandas", "pyarrow"])
def test_missing_table_library_says_what_to_install(monkeypatch, module):
    results = gseek.PairAligner(device="cpu").align_pairs(["ACGT"], ["ACGA"])
    monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    with pytest.raises(ImportError, match=rf"needs {module} .*pip install 'gseek\[tables\]'"):
        results.to_pandas() if module == "pandas" else results.to_arrow()


# ---------------------------------------------------------------------------- the notebook example


def test_docs_python_api_runs(tmp_path, monkeypatch):
    """docs/python-api.md is a doctest file: its examples run as written."""
    monkeypatch.chdir(tmp_path)
    result = doctest.testfile(str(ROOT / "docs" / "python-api.md"), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 10 and result.failed == 0

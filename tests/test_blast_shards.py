"""A BLAST database split into shards (gseek.blast.shards, docs/blast.md "Database split").

Database: the embedded lambda genome cut into contigs of uneven lengths (one of 500 bases, an N
run inside one and at the end of another), plus copies of two regions with a few substitutions
(one reverse-complemented), so that queries hit several subjects and the limits choose among
them. Queries: ``tests/data/blast/search_queries.fa`` (simulated from lambda, so many span a cut).
Every shard count, both tasks, small limits and every output format: the merged shards' output
is the unsplit search's, byte for byte.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from gseek.blast.report import write_tabular
from gseek.blast.searcher import BlastSearcher
from gseek.blast.shards import ShardedSearcher, merge_hits
from gseek.datasets import lambda_genome
from gseek.index import Index
from gseek.index.text import ReferenceText, shard_ranges
from gseek.seqio import read_fastx

DATA = Path(__file__).resolve().parent / "data" / "blast"
CUTS = (3000, 9000, 9500, 20000, 31000, 40000)
ALL_FIELDS = ("6 qseqid qacc qaccver sseqid sacc saccver pident length mismatch gapopen qstart qend sstart send "
              "evalue bitscore score qlen slen sstrand nident positive gaps ppos qcovhsp btop qseq sseq")
FORMATS = ("6", "7 std qlen slen", ALL_FIELDS, "sam")


def _mutate(seq: str, every: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    s = list(seq)
    for i in range(every // 2, len(s), every):
        s[i] = "ACGT"[("ACGT".index(s[i]) + 1 + int(rng.integers(3))) % 4] if s[i] in "ACGT" else s[i]
    return "".join(s)


def _revcomp(seq: str) -> str:
    return seq[::-1].translate(str.maketrans("ACGTN", "TGCAN"))


@pytest.fixture(scope="module")
def split_index(tmp_path_factory):
    genome = read_fastx(lambda_genome()).sequence(0).upper()
    bounds = (0,) + CUTS + (len(genome),)
    contigs = [genome[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    contigs[3] = contigs[3][:4000] + "N" * 60 + contigs[3][4060:]  # an N run inside a contig
    contigs[1] = contigs[1] + "N" * 25  # and at a contig's end
    contigs.append(_mutate(genome[1000:6000], 40, 1))  # a second subject for queries of 1000-6000
    contigs.append(_revcomp(_mutate(genome[12000:16000], 25, 2)))  # a third, minus strand, weaker
    path = tmp_path_factory.mktemp("shards") / "split.fa"
    path.write_text("".join(f">c{i} contig {i}\n{c}\n" for i, c in enumerate(contigs)))
    return Index.build(path, wgram=4, device="cpu")


@pytest.fixture(scope="module")
def ref(split_index):
    return ReferenceText.from_index(split_index)


@pytest.fixture(scope="module")
def queries():
    return read_fastx(DATA / "search_queries.fa")


def _text(hits, fmt: str) -> str:
    out = io.StringIO()
    write_tabular(hits, out, fmt, database="split", command="t")
    return out.getvalue()


# --------------------------------------------------------------------------- the shards of a text


def test_shard_ranges_are_contiguous_whole_contigs_balanced_by_bases():
    off = np.array([0, 100, 150, 160, 400, 1000], np.int64)
    for n in range(1, 9):
        ranges = shard_ranges(off, n)
        assert len(ranges) == n and ranges[0][0] == 0 and ranges[-1][1] == 5
        assert all(a <= b for a, b in ranges) and all(ranges[i][1] == ranges[i + 1][0] for i in range(n - 1))
        for i, (a, b) in enumerate(ranges):  # each contig in the shard of its midpoint
            for c in range(a, b):
                assert i == n * (off[c] + off[c + 1]) // (2 * off[-1])
    assert shard_ranges(off, 1) == [(0, 5)]
    assert shard_ranges(off, 2) == [(0, 4), (4, 5)]
    with pytest.raises(ValueError):
        shard_ranges(off, 0)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 12])
def test_a_shard_is_its_contigs_text(ref, n):
    """Bases (N included), N runs, names and offsets of every shard, against the whole text; the
    database's totals are the whole's in every shard."""
    shards = [ref.shard(i, n) for i in range(n)]
    assert sum(len(s.contig_names) for s in shards) == len(ref.contig_names)
    assert [repr(s) for s in ref.shards(n)] == [repr(s) for s in shards if s.contig_names]
    for s, (a, b) in zip(shards, shard_ranges(ref.contig_offsets, n)):
        assert s.first_contig == a and s.contig_names == ref.contig_names[a:b]
        assert s.origin == ref.contig_offsets[a] and s.n_bases == ref.contig_offsets[b] - ref.contig_offsets[a]
        assert s.bases(0, s.n_bases).tolist() == ref.bases(s.origin, s.origin + s.n_bases).tolist()
        assert s.text.size == (s.n_bases + 15) // 16
        whole_runs = [(max(x, s.origin) - s.origin, min(y, s.origin + s.n_bases) - s.origin)
                      for x, y in ref.amb_runs.tolist() if y > s.origin and x < s.origin + s.n_bases]
        assert s.amb_runs.tolist() == [list(r) for r in whole_runs]
        assert (s.db_bases, s.db_sequences) == (ref.n_bases, len(ref.contig_names))
        assert s.is_shard == (n > 1) and not ref.is_shard
        inner = s.contigs(0, len(s.contig_names))  # a shard of a shard keeps the database's numbers
        assert (inner.origin, inner.first_contig) == (s.origin, s.first_contig)


def test_a_shard_scans_the_whole_databases_stride_positions(ref, queries):
    """The scan of a shard finds the whole text's hits inside it (stride positions counted from the
    database's start, not the shard's: megablast's stride is 17)."""
    from gseek.backend import get_backend
    from gseek.blast.lookup import build_lookup, word_codes
    from gseek.blast.seeds import device_queries, scan_hits

    searcher = BlastSearcher(ref, task="megablast", device="cpu")
    opts = searcher.options
    seq_codes, seq_mask, seq_off, _, _ = searcher._sequences(queries)
    table = build_lookup(seq_codes, seq_off, opts.lut_word, seq_mask)
    valid = (word_codes(seq_codes, seq_off, opts.lut_word, seq_mask) >= 0).astype(np.uint8)
    backend = get_backend("cpu")
    qs = device_queries(backend, seq_codes, seq_off, valid, table)
    whole = backend.to_host(scan_hits(backend, ref, qs, opts.lut_word, opts.stride))
    assert opts.stride == 17
    for s in ref.shards(3):
        got = backend.to_host(scan_hits(backend, s, qs, opts.lut_word, opts.stride))
        want = whole[(whole >= s.origin) & (whole + opts.lut_word <= s.origin + s.n_bases)] - s.origin
        assert got.tolist() == want.tolist()
    assert any(s.origin % 17 for s in ref.shards(3)), "the test needs a shard whose start is no stride position"


# --------------------------------------------------------------------------- merged = unsplit


@pytest.mark.parametrize("task", ["megablast", "blastn"])
@pytest.mark.parametrize("limits", [{}, {"max_target_seqs": 1}, {"max_target_seqs": 2, "max_hsps": 1}])
def test_merged_shards_equal_the_unsplit_search(ref, queries, task, limits):
    """Shards 1, 2, 3 and 7 (some empty), searched alone and merged: every output format byte-identical."""
    whole = BlastSearcher(ref, task=task, device="cpu", **limits).search(queries)
    assert len(set(whole.arrays["subject"].tolist())) >= 3 or limits, "the data must give several subjects"
    want = {fmt: _text(whole, fmt) for fmt in FORMATS}
    for n in (1, 2, 3, 7):
        parts = [BlastSearcher(ref, task=task, device="cpu", shard=(i, n), **limits).search(queries) for i in range(n)]
        merged = merge_hits(parts[::-1], limits.get("max_target_seqs", 500), limits.get("max_hsps"))
        for fmt in FORMATS:
            assert _text(merged, fmt) == want[fmt], (n, fmt)


def test_limits_matter_on_this_data(ref, queries):
    """The merge's limits are exercised: without a second search of the union, shards would report
    more subjects than the unsplit search."""
    whole = BlastSearcher(ref, task="megablast", device="cpu", max_target_seqs=1).search(queries)
    parts = [BlastSearcher(ref, task="megablast", device="cpu", shard=(i, 3), max_target_seqs=1).search(queries)
             for i in range(3)]
    assert sum(len(p) for p in parts) > len(whole)
    assert len(merge_hits(parts, 1)) == len(whole)


def test_sharded_searcher_on_cpu_devices(ref, queries, split_index):
    """ShardedSearcher (a shard per device, in threads): the unsplit search's output; more
    devices than contigs leaves some shards unsearched."""
    whole = BlastSearcher(ref, task="blastn", device="cpu", max_target_seqs=2).search(queries)
    for devices in (["cpu"], ["cpu", "cpu"], ["cpu"] * 11):
        sharded = ShardedSearcher(split_index, task="blastn", devices=devices, max_target_seqs=2)
        assert len(sharded.shards) == len(devices)
        assert len(sharded.searchers) == sum(1 for s in sharded.shards if s.ref.contig_names)
        got = sharded.search(queries)
        sharded.close()
        for fmt in FORMATS:
            assert _text(got, fmt) == _text(whole, fmt)


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("volume", [1, 5000, 12000, 10**9])
def test_volumes_give_the_unsplit_output_and_leave_the_device(ref, queries, split_index, device, volume):
    """The database in volumes of about ``volume`` bases (``--db-volume-size``; 1: a contig per
    volume), one device going through them in turn: the unsplit search's output in every format,
    and no volume's text left on the device after the search."""
    from gseek.backend import gpu_available

    if device == "gpu" and not gpu_available():
        pytest.skip("no CUDA device / CuPy")
    whole = BlastSearcher(ref, task="blastn", device="cpu", max_target_seqs=2).search(queries)
    sharded = ShardedSearcher(split_index, task="blastn", devices=[device], volume_bases=volume, max_target_seqs=2)
    assert len(sharded.shards) == min(len(ref.contig_names), -(-ref.n_bases // volume))
    assert len(sharded.searchers) > 1 or volume >= ref.n_bases
    got = sharded.search(queries)
    for fmt in FORMATS:
        assert _text(got, fmt) == _text(whole, fmt)
    assert not any(isinstance(k, tuple) and k[0] == "device" for s in sharded.searchers for k in s.ref._cache)


def test_volumes_on_two_devices_and_of_a_shard(ref, queries, split_index, tmp_path):
    """Volumes spread over two devices (each its run of them), and a cluster worker's shard of the
    database searched in volumes: the same output as without volumes; bad sizes are refused."""
    from gseek.errors import OptionError
    from gseek.pipeline.tasks.blast import BlastTask

    whole = BlastSearcher(ref, task="megablast", device="cpu").search(queries)
    two = ShardedSearcher(split_index, task="megablast", devices=["cpu", "cpu"], volume_bases=7000)
    assert len(two.shards) % 2 == 0 and len(two.shards) >= 4
    assert _text(two.search(queries), "6 std btop") == _text(whole, "6 std btop")
    index = split_index.save(tmp_path / "split.gseek")
    for shard in ((0, 2), (1, 2)):
        plain = BlastTask(index, "megablast", devices=["cpu"], shard=shard).searchers[0].search(queries)
        task = BlastTask(index, "megablast", devices=["cpu"], shard=shard, volume_size=3000)
        assert "ShardedSearcher" in repr(task) and task.fingerprint() == BlastTask(
            index, "megablast", devices=["cpu"], shard=shard).fingerprint()
        assert _text(task.searchers[0].search(queries), "6 std btop") == _text(plain, "6 std btop")
    from gseek.pipeline import blast_files

    fasta = tmp_path / "q.fa"
    fasta.write_text((DATA / "search_queries.fa").read_text())
    for name, extra in (("plain.tsv", {}), ("volumes.tsv", {"volume_size": 4000})):
        blast_files(index, fasta, tmp_path / name, task="blastn", outfmt="6 std btop", device="cpu", **extra)
    # several devices at once (``gseek search --gpus``; CPU stand-ins), jobs of ~2 kB: the same bytes
    blast_files(index, fasta, tmp_path / "two.tsv", task="blastn", outfmt="6 std btop", devices=["cpu", "cpu"],
                chunk_bytes=2000)
    assert (tmp_path / "volumes.tsv").read_bytes() == (tmp_path / "plain.tsv").read_bytes()
    assert (tmp_path / "two.tsv").read_bytes() == (tmp_path / "plain.tsv").read_bytes()
    assert (tmp_path / "plain.tsv").read_bytes().count(b"\n") > 10
    with pytest.raises(OptionError, match="volume size must be at least 1 base"):
        ShardedSearcher(split_index, devices=["cpu"], volume_bases=0)
    with pytest.raises(OptionError, match="database volume size must be at least 1 base"):
        BlastTask(index, "megablast", devices=["cpu"], volume_size=0)


def test_volumes_on_the_cpu_from_a_fresh_command(split_index, tmp_path):
    """``gseek --device cpu search --db-volume-size`` in a fresh process: the pipeline's prelim stage
    holds the Numba guard (no parallel function has run yet, so the lock) while the volumes run; a
    volume in another thread waiting for the same lock hung the command for ever (a hostile
    tester's finding, 2026-11-26). Now the CPU's volumes run in the caller's thread: the output
    without volumes, in seconds."""
    import subprocess
    import sys

    index = split_index.save(tmp_path / "split.gseek")
    fasta = tmp_path / "q.fa"
    fasta.write_text((DATA / "search_queries.fa").read_text())
    outputs = {}
    for name, extra in (("plain", []), ("volumes", ["--db-volume-size", "5K"])):
        out = tmp_path / f"{name}.tsv"
        subprocess.run([sys.executable, "-m", "gseek", "--device", "cpu", "--quiet", "search", "-x", str(index),
                        "-q", str(fasta), "--task", "megablast", "-o", str(out), *extra], check=True, timeout=120)
        outputs[name] = out.read_bytes()
    assert outputs["volumes"] == outputs["plain"] and outputs["plain"].count(b"\n") > 10

@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_volumes_chosen_from_free_device_memory(split_index, tmp_path, monkeypatch, device):
    """Without ``--db-volume-size``, a database that does not fit in DEVICE_DB_SHARE of the device's
    free memory is searched in the volumes that fit (on the CPU, a stand-in reports 40 kB free;
    on the GPU, a share of 10^-15: one base a volume): the resident search's output; with room, resident."""
    import gseek.blast.shards as shards_module
    from gseek.backend import CpuBackend, gpu_available
    from gseek.blast.options import BlastOptions
    from gseek.pipeline import blast_files
    from gseek.pipeline.tasks.blast import BlastTask

    if device == "gpu" and not gpu_available():
        pytest.skip("no CUDA device / CuPy")
    index = split_index.save(tmp_path / "split.gseek")
    fasta = tmp_path / "q.fa"
    fasta.write_text((DATA / "search_queries.fa").read_text())
    blast_files(index, fasta, tmp_path / "resident.tsv", task="blastn", outfmt="6 std btop", device="cpu")
    assert BlastTask(index, "blastn", devices=[device]).volume_size is None
    if device == "cpu":
        monkeypatch.setattr(CpuBackend, "free_memory", lambda self: 40_000)
    else:
        monkeypatch.setattr(shards_module, "DEVICE_DB_SHARE", 1e-15)  # under one base of any free memory
    task = BlastTask(index, "blastn", devices=[device])
    stride = BlastOptions.for_task("blastn").stride
    want = int(0.25 * 40_000 / shards_module.device_bytes_per_base(stride)) if device == "cpu" else 1
    assert task.volume_size == want and "ShardedSearcher" in repr(task)
    assert len(task.searchers[0].shards) > 1
    blast_files(index, fasta, tmp_path / "auto.tsv", task="blastn", outfmt="6 std btop", devices=[device])
    assert (tmp_path / "auto.tsv").read_bytes() == (tmp_path / "resident.tsv").read_bytes()


def test_statistics_are_the_whole_databases(ref, queries):
    """A shard's e-values are those of the whole database (its own length would give smaller ones)."""
    s = BlastSearcher(ref, task="megablast", device="cpu", shard=(1, 3))
    assert (s.db_length, s.db_sequences) == (ref.n_bases, len(ref.contig_names))
    assert "contigs=[" in repr(s)


def test_pipeline_database_split_writes_the_same_bytes(split_index, tmp_path):
    """``gseek pipeline --task blastn --gpus A,B --split database`` as the API runs it (CPU devices
    standing in for GPUs): the same files as one device and as the split of query jobs."""
    from gseek.pipeline import run_pipeline

    index = split_index.save(tmp_path / "split.gseek")
    fasta = tmp_path / "q.fa"
    fasta.write_text((DATA / "search_queries.fa").read_text())
    (tmp_path / "list.txt").write_text(f"{fasta}\tq.tsv\n")
    got = {}
    for name, extra in (("one", dict(devices=["cpu"])), ("queries", dict(devices=["cpu", "cpu"])),
                        ("database", dict(devices=["cpu", "cpu", "cpu"], split="database"))):
        summary = run_pipeline(tmp_path / "list.txt", index, tmp_path / name, "blastn", threads=1, progress=False,
                               quiet=True, command="t", outfmt="6 std btop", max_target_seqs=2, **extra)
        assert [r.status for r in summary.files] == ["ok"]
        got[name] = (tmp_path / name / "q.tsv").read_bytes()
    assert got["database"] == got["one"] == got["queries"] and got["one"].count(b"\n") > 10
    from gseek.errors import OptionError
    from gseek.pipeline.tasks.blast import BlastTask

    with pytest.raises(OptionError, match="split must be"):
        BlastTask(index, "blastn", devices=["cpu"], split="contigs")
    assert "ShardedSearcher" in repr(BlastTask(index, "blastn", devices=["cpu", "cpu"], split="database"))


@pytest.mark.gpu
def test_database_split_on_the_gpu_equals_the_cpu_search(split_index, queries):
    """Shards on GPU backends (two on GPU 0, or one on each of two GPUs): the CPU search's rows."""
    from gseek.backend import gpu_available

    if not gpu_available():
        pytest.skip("no CUDA device / CuPy")
    import cupy

    whole = BlastSearcher(split_index, task="blastn", device="cpu", max_target_seqs=2).search(queries)
    n = cupy.cuda.runtime.getDeviceCount()
    devices = ["gpu:0", "gpu:1"] if n > 1 else ["gpu:0", "gpu:0"]
    sharded = ShardedSearcher(split_index, task="blastn", devices=devices, max_target_seqs=2)
    try:
        got = sharded.search(queries)
    finally:
        sharded.close()
    for fmt in FORMATS:
        assert _text(got, fmt) == _text(whole, fmt)


@pytest.mark.gpu
def test_pipeline_gpu_streams_write_the_cpu_bytes(split_index, tmp_path):
    """Several searchers per GPU, each on its own stream, many small jobs in flight (split of query jobs
    and of the database over every GPU; the queries over four GPU backends, GPU 0 four times on a
    one-GPU host, with fewer searchers each): the bytes of the CPU pipeline."""
    from gseek.backend import gpu_available

    if not gpu_available():
        pytest.skip("no CUDA device / CuPy")
    import cupy

    from gseek.pipeline import run_pipeline
    from gseek.pipeline.tasks.blast import BLAST_STREAMS_PER_GPU, BlastTask, searchers_per_gpu

    index = split_index.save(tmp_path / "split.gseek")
    fasta = tmp_path / "q.fa"
    fasta.write_text((DATA / "search_queries.fa").read_text() * 3)
    (tmp_path / "list.txt").write_text(f"{fasta}\tq.tsv\n")
    gpus = [f"gpu:{i}" for i in range(cupy.cuda.runtime.getDeviceCount())]
    one = BlastTask(index, "blastn", devices=gpus[:1])
    assert len(one.searchers) == BLAST_STREAMS_PER_GPU
    assert {s.device_searchers for s in one.searchers} == {BLAST_STREAMS_PER_GPU}  # their launches share the GPU
    assert BlastTask(index, "blastn", devices=["cpu"]).searchers[0].device_searchers == 1
    four = [gpus[i % len(gpus)] for i in range(4)]
    many = BlastTask(index, "blastn", devices=four)
    assert len(many.searchers) == 4 * searchers_per_gpu(4) < 4 * BLAST_STREAMS_PER_GPU
    assert {s.device_searchers for s in many.searchers} == {searchers_per_gpu(4)}
    # -p bounds each GPU searcher's host passes (they took every core before)
    assert {s.host.threads for s in BlastTask(index, "blastn", devices=four, threads=3).searchers} == {3}
    got = {}
    for name, extra in (("cpu", dict(devices=["cpu"])), ("gpu", dict(devices=gpus[:1])),
                        ("gpus", dict(devices=gpus)), ("four", dict(devices=four)),
                        ("database", dict(devices=gpus if len(gpus) > 1 else gpus * 2, split="database"))):
        summary = run_pipeline(tmp_path / "list.txt", index, tmp_path / name, "blastn", threads=4, progress=False,
                               quiet=True, command="t", outfmt="6 std btop", max_target_seqs=2, job_bytes=2000,
                               workers=4, **extra)
        assert [r.status for r in summary.files] == ["ok"]
        got[name] = (tmp_path / name / "q.tsv").read_bytes()
    assert got["cpu"].count(b"\n") > 30
    assert got["gpu"] == got["cpu"] == got["gpus"] == got["four"] == got["database"]


def test_searchers_per_gpu_bounded_in_one_process_with_the_queries_split():
    """With the queries split over many GPUs of one process, fewer searchers a GPU (their host passes
    share one interpreter), never under the floor; one GPU, and a database split, keep them all."""
    from gseek.pipeline.tasks.blast import (BLAST_MIN_STREAMS_PER_GPU, BLAST_SEARCHERS_PER_PROCESS,
                                            BLAST_STREAMS_PER_GPU, searchers_per_gpu)

    assert searchers_per_gpu(1) == searchers_per_gpu(4, "database") == BLAST_STREAMS_PER_GPU == 4
    assert [searchers_per_gpu(n) for n in (2, 4, 8)] == [4, 2, 2]
    for n in range(1, 17):
        per = searchers_per_gpu(n)
        assert BLAST_MIN_STREAMS_PER_GPU <= per <= BLAST_STREAMS_PER_GPU
        assert n * per <= max(BLAST_SEARCHERS_PER_PROCESS, BLAST_STREAMS_PER_GPU, n * BLAST_MIN_STREAMS_PER_GPU)


@pytest.mark.parametrize("devices", [["cpu"], ["cpu", "cpu", "cpu"]])
def test_small_files_searched_together_write_each_files_own_bytes(split_index, tmp_path, monkeypatch, devices):
    """``gseek pipeline --task`` over many small query files: the files are gathered into about a job
    a searcher (``BlastTask.plan``) and each job's files searched as one batch (one lookup table, one
    scan), its HSPs then shared out (``split_hits``): each output is that file's own search's bytes
    (tabular with CIGAR-derived fields, ``-outfmt 7``, SAM), a file without HSPs and an empty file
    among them (the empty one fails alone, as ever)."""
    from gseek.pipeline import run_pipeline
    from gseek.pipeline.tasks import blast as blast_task

    monkeypatch.setattr(blast_task, "BLAST_MIN_JOB_BYTES", 1000)  # jobs of a few files at this size
    calls = []
    search = BlastSearcher.search
    monkeypatch.setattr(BlastSearcher, "search", lambda self, q: calls.append(len(q)) or search(self, q))
    index = split_index.save(tmp_path / "split.gseek")
    records = (DATA / "search_queries.fa").read_text().split(">")[1:]
    files = []
    for i in range(0, len(records), 2):  # files of two queries
        files.append(tmp_path / f"q{i:02d}.fa")
        files[-1].write_text("".join(">" + r for r in records[i:i + 2]))
    files.insert(3, tmp_path / "none.fa")
    files[3].write_text(">random\n" + "ACGT" * 5 + "TTAGGC" * 7 + "\n")  # no HSP
    files.insert(5, tmp_path / "empty.fa")
    files[5].write_text("")
    for fmt, suffix in (("6 std btop", "tsv"), ("7", "tsv"), ("sam", "sam")):
        (tmp_path / "list.txt").write_text("".join(f"{f}\t{f.stem}.{suffix}\n" for f in files))
        calls.clear()
        out = tmp_path / f"out-{fmt[0]}-{len(devices)}"
        summary = run_pipeline(tmp_path / "list.txt", index, out, "megablast", devices=devices, threads=1,
                               progress=False, quiet=True, command="t", outfmt=fmt)
        assert [r.status for r in summary.files] == ["failed" if f.stem == "empty" else "ok" for f in files]
        assert max(calls) > 2  # some job searched several files at once
        for f in files:
            if f.stem == "empty":
                continue
            want = io.StringIO()
            hits = BlastSearcher(split_index, task="megablast", device="cpu").search(read_fastx(f))
            write_tabular(hits, want, fmt, database=str(tmp_path / "split.gseek"), command="t")
            assert (out / f"{f.stem}.{suffix}").read_text() == want.getvalue(), (fmt, f.name)

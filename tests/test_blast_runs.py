"""The HSPs' CIGAR runs left where the extensions made them (:class:`gseek.dp.runs.LazyRuns`) and gathered
for the reported rows only when an output reads them (:class:`gseek.blast.hits.HitArrays`).

The runs are never moved between the trace-back and the report, only two indices per alignment (piece,
item): these tests check that every reported row gets its own alignment's runs after the steps that
reorder or drop alignments (launches in parts, extensions done again with a wider window, the trace-back
rounds, the re-scoring's drops, the purge, the report order and ``max_hsps``, shards merged and split),
and that a search whose output prints no alignment never gathers them.
"""

from __future__ import annotations

import io
import pickle

import numpy as np
import pytest
from blast_checks import check_alignments

from gseek.blast.hits import HitArrays
from gseek.blast.report import write_tabular
from gseek.blast.searcher import BlastSearcher
from gseek.blast.shards import merge_hits, split_hits
from gseek.datasets import lambda_genome
from gseek.dp.runs import LazyRuns
from gseek.index import Index
from gseek.index.text import ReferenceText
from gseek.seqio import read_fastx


def _reference_gather(items: list[list[int]]) -> tuple[list[int], list[int]]:
    """Items laid side by side and their offsets: the readable reference of :meth:`LazyRuns.gather`."""
    data, offsets = [], [0]
    for item in items:
        data += item
        offsets.append(len(data))
    return data, offsets


def test_lazy_runs_gather_the_items_taken_and_joined():
    """Random pieces, joined, taken (with repeats, reversed, a mask), joined again: each alignment's runs
    are the item it points at, whatever the number of pieces used."""
    rng = np.random.default_rng(7)
    pieces, items = [], []
    for _ in range(5):
        sizes = rng.integers(0, 6, rng.integers(1, 8))
        piece = [[int(x) for x in rng.integers(0, 1 << 20, s)] for s in sizes]
        data, offsets = _reference_gather(piece)
        pieces.append(LazyRuns.of(np.array(data, np.uint32), np.array(offsets)))
        items.append(piece)
    runs = LazyRuns.concat(pieces)
    want = [x for piece in items for x in piece]
    assert len(runs) == len(want)
    for step in range(20):
        pick = rng.integers(0, len(want), rng.integers(0, 2 * len(want)))
        if step % 3 == 1:
            pick = np.flatnonzero(rng.random(len(want)) < 0.5)[::-1]
        runs, want = runs.take(pick), [want[i] for i in pick]
        if step % 4 == 3:  # joined with a part of itself
            half = np.arange(len(want) // 2)
            runs, want = LazyRuns.concat([runs, runs.take(half)]), want + [want[i] for i in half]
        data, offsets = runs.gather()
        assert (data.tolist(), offsets.tolist()) == _reference_gather(want)
        assert data.dtype == np.uint32 and offsets.dtype == np.int64
        if not len(want):
            runs, want = LazyRuns.concat(pieces), [x for piece in items for x in piece]
    assert LazyRuns.empty().gather()[1].tolist() == [0]


def _mutate(rng, seq: str, rate: float) -> str:
    """``seq`` with substitutions at ``rate`` and a tenth as many deletions and insertions."""
    out = []
    for c in seq:
        r = rng.random()
        if r < rate:
            out.append("ACGT"[("ACGT".index(c) + int(rng.integers(1, 4))) % 4])
        elif r < rate * 1.1:
            continue
        else:
            out.append(c)
            if r > 1 - rate * 0.1:
                out.append("ACGT"[int(rng.integers(4))])
    return "".join(out)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A database of lambda and three mutated copies of its halves (HSPs on several subjects:
    ``max_target_seqs``), and queries from lambda (2-8 % substitutions), some holding a piece twice
    (several HSPs of a query and subject: ``max_hsps``), some reverse-complemented, three cut into
    fragments for the score-only pass (traced back whole: beyond a fragment's window), one random."""
    genome = read_fastx(lambda_genome()).sequence(0)
    rng = np.random.default_rng(11)
    half = len(genome) // 2
    contigs = [("lambda", genome), ("copy1", _mutate(rng, genome[:half], 0.04)),
               ("copy2", _mutate(rng, genome[half:], 0.06)), ("copy3", _mutate(rng, genome[:half], 0.08))]
    fasta = tmp_path_factory.mktemp("runs") / "db.fa"
    fasta.write_text("".join(f">{name}\n{seq}\n" for name, seq in contigs))
    text = ReferenceText.from_index(Index.build(str(fasta), wgram=4, device="cpu"))
    comp = str.maketrans("ACGT", "TGCA")
    queries = []
    for k in range(10):
        a = int(rng.integers(0, len(genome) - 6000))
        piece = genome[a:a + int(rng.integers(800, 5000))]
        seq = _mutate(rng, piece, 0.02 + 0.006 * k)
        if k % 3 == 0:
            seq = seq + _mutate(rng, piece[: len(piece) // 2], 0.05) + _mutate(rng, piece, 0.03)
        if k % 4 == 1:
            seq = seq.translate(comp)[::-1]
        queries.append((f"q{k}", seq))
    for k in range(3):  # cut by 50-base stretches of 55 %: the score-only X-drop stops at each, the final one does not
        piece = genome[4000 + 9000 * k:9000 + 9000 * k]
        cut = [_mutate(rng, piece[i:i + 900], 0.03) + _mutate(rng, piece[i + 900:i + 950], 0.55)
               for i in range(0, len(piece), 950)]
        queries.append((f"frag{k}", "".join(cut)))
    queries.append(("random", "".join("ACGT"[i] for i in rng.integers(0, 4, 2000))))
    return text, queries


def _text(hits, fmt: str) -> str:
    out = io.StringIO()
    write_tabular(hits, out, fmt)
    return out.getvalue()


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("task", ["megablast", "blastn"])
def test_each_row_gets_its_own_alignments_runs(data, monkeypatch, device, task):
    """Alignments in many launches (a small launch budget) and done again (narrow windows), every
    score-only HSP traced back (copies the purge drops), dropped by the re-scoring, ``max_target_seqs``
    and ``max_hsps``, permuted by the report order: each reported row's runs are its own; the same rows
    and runs on every device; ``-outfmt 6`` gathers no runs."""
    import gseek.blast.gapped as gapped_module

    text, queries = data
    for name, value in (("_EXTEND_BYTES", 200_000), ("_EXTEND_BYTES_HOST", 200_000), ("_EXTEND_SHARE", 0.0),
                        ("_TRACEBACK_ROUNDS", 0), ("_CHAIN_DIAGONALS", 0), ("_CHAIN_WHOLE", 100.0)):
        monkeypatch.setattr(gapped_module, name, value)
    extend = BlastSearcher._extend

    def narrow(self, *args, **kwargs):  # trace-back windows of 16 bases beside the score-only HSP: many done again
        if kwargs.get("traceback", True) and kwargs.get("span") is not None:
            kwargs["margin"] = 16
        return extend(self, *args, **kwargs)

    monkeypatch.setattr(BlastSearcher, "_extend", narrow)
    limits = {"max_hsps": 2, "max_target_seqs": 3}
    searcher = BlastSearcher(text, task=task, device=device, **limits)
    hits = searcher.search(queries)
    c = searcher.counts
    assert c["done again with the query's reach, with trace-back"] > 5 and c["launches, with trace-back"] > 3
    traced = c["extended with trace-back"] - c.get("dropped when scored again", 0)
    assert len(hits) < c["kept by the purge"] <= traced and (task != "megablast" or c["kept by the purge"] < traced)
    assert len(hits) > 15 and len(set(hits.arrays["query"].tolist())) >= 9
    rows = _text(hits, "6 std")
    assert isinstance(hits.arrays, HitArrays) and not hits.arrays.gathered  # tabular columns: no runs read
    check_alignments(hits)
    assert hits.arrays.gathered
    cpu = BlastSearcher(text, task=task, device="cpu", **limits).search(queries)
    assert _text(cpu, "6 std") == rows
    assert _text(cpu, "17") == _text(hits, "17")  # SAM: the runs as CIGARs


def test_merged_and_split_hits_keep_their_runs(data):
    """Hits merged (the report order again: each row twice), and a search's hits split by query batches:
    each row's runs still its own, and none gathered by the merge or the split."""
    text, queries = data
    searcher = BlastSearcher(text, task="megablast", device="cpu")
    first, second = searcher.search(queries[:6]), searcher.search(queries[6:])
    joined = split_hits(searcher.search(queries), [6, len(queries) - 6])
    for part, alone in zip(joined, (first, second)):
        assert not part.arrays.gathered
        assert _text(part, "6 std btop") == _text(alone, "6 std btop")
        check_alignments(part)
    merged = merge_hits([first, first], max_target_seqs=500)
    assert not merged.arrays.gathered and len(merged) == 2 * len(first)
    check_alignments(merged)
    again = pickle.loads(pickle.dumps(merged.arrays))  # (another process: a plain dict, the runs gathered)
    assert list(again) == list(merged.arrays) and all(np.array_equal(again[k], merged.arrays[k]) for k in again)


class _SlowDevice:
    """A device stand-in for :class:`LazyRuns`' pieces: each download takes a while and is counted (by the
    array's first value), so that threads reading the runs at once meet inside it."""

    def __init__(self) -> None:
        self.downloads: list[int] = []

    def active(self):
        import contextlib

        return contextlib.nullcontext()

    def to_host(self, array):
        import time

        self.downloads.append(int(array[0]))
        time.sleep(0.05)
        return np.array(array)


def test_runs_read_by_many_threads_at_once_are_downloaded_once():
    """Twelve threads read the runs at once (a search's hits split by query batches, each part read by two
    threads; the service's requests, the engine's output threads): each piece downloaded once, each part's
    runs gathered once (every reader of a part gets the same arrays), each its own."""
    import threading

    rng = np.random.default_rng(3)
    device = _SlowDevice()
    pieces, items = [], []
    for p in range(3):
        piece = [[1000 * p] + [int(x) for x in rng.integers(1, 999, rng.integers(0, 4))] for _ in range(40)]
        data, offsets = _reference_gather(piece)
        pieces.append(LazyRuns.of(np.array(data, np.uint32), np.array(offsets), backend=device))
        items += piece
    order = rng.permutation(len(items))
    runs = LazyRuns.concat(pieces).take(order)
    parts = [HitArrays({"score": np.zeros(20)}, runs.take(np.arange(a, a + 20))) for a in range(0, 120, 20)]
    got: list = [None] * 12
    start = threading.Barrier(12)

    def read(t: int) -> None:
        start.wait()
        got[t] = (parts[t // 2]["cigar"], parts[t // 2]["cigar_offsets"])

    threads = [threading.Thread(target=read, args=(t,)) for t in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(device.downloads) == [0, 1000, 2000]
    for t in range(12):
        want = _reference_gather([items[i] for i in order[20 * (t // 2):20 * (t // 2) + 20]])
        assert (got[t][0].tolist(), got[t][1].tolist()) == want
        assert got[t][0] is got[t ^ 1][0] and got[t][1] is got[t ^ 1][1]


def test_released_runs_let_their_pieces_go_when_no_hits_share_them():
    """Hits released (:meth:`BlastHits.release`, ``with hits:``): their runs' pieces (a device's arrays) are let
    go once no other hits made from the same search hold them; reading the runs then raises, the other
    arrays stay; hits made from released ones have none either."""
    import weakref

    device = _SlowDevice()
    data = np.array([17, 33, 49, 65], np.uint32)  # (the piece's array "on the device")
    piece = weakref.ref(data)
    runs = LazyRuns.of(data, np.array([0, 1, 3, 4]), backend=device)
    parts = [HitArrays({"score": np.arange(2) + a}, runs.take(np.arange(a, a + 2))) for a in (0, 1)]
    del data, runs
    parts[0].release()
    assert piece() is not None and parts[1]["cigar"].tolist() == [33, 49, 65]  # (gathered: on the host now)
    assert piece() is None and device.downloads == [17]
    with pytest.raises(KeyError, match="'cigar': these hits' CIGAR runs were released"):
        parts[0]["cigar"]
    assert list(parts[0]) == ["score"] and "cigar" not in parts[0] and len(parts[0]) == 1
    assert parts[0]["score"].tolist() == [0, 1] and pickle.loads(pickle.dumps(parts[0])).keys() == {"score"}
    parts[1].release()
    assert parts[1].released and not parts[1].gathered and parts[1]["score"].tolist() == [1, 2]


def test_outputs_that_read_no_runs_print_the_same_from_released_hits(data):
    """Every ``-outfmt 6|7|10`` field that :func:`reads_runs` says reads no runs prints the same from released
    hits; each that it says reads them, and SAM, cannot be printed from them (the list is whole)."""
    from gseek.blast.report import FIELDS, RUN_FIELDS, reads_runs

    text, queries = data
    searcher = BlastSearcher(text, task="megablast", device="cpu")
    hits = searcher.search(queries)
    released = split_hits(searcher.search(queries), [len(queries)])[0]
    with released:
        pass
    assert released.arrays.released and len(released) == len(hits) > 15
    merged = merge_hits([released, released], max_target_seqs=500)  # (made from released hits: none either)
    assert merged.arrays.released
    with pytest.raises(AttributeError, match="'cigar': these hits' CIGAR runs were released"):
        released.cigar
    for kind in ("6", "7", "10"):
        for field in FIELDS:
            fmt = f"{kind} qseqid {field}"
            if reads_runs(fmt):
                assert field in RUN_FIELDS
                with pytest.raises(KeyError, match="released"):
                    _text(released, fmt)
            else:
                assert _text(released, fmt) == _text(hits, fmt), fmt
    assert reads_runs("sam")
    with pytest.raises(KeyError, match="released"):
        _text(released, "sam")


@pytest.mark.parametrize("outfmt, at_once", [("6", True), ("7 std qcovs", True), ("10 qseqid btop", False),
                                             ("sam", False), ("0", False)])
def test_a_pipeline_search_lets_its_runs_go_once_its_text_is_made(data, tmp_path, outfmt, at_once):
    """The BLAST task's search lets its runs go as it ends where the output reads none (not while the job
    waits for a finalize thread), else once its text is made; the text is the kept hits' text."""
    import types

    from gseek.pipeline.tasks import BlastTask

    text, queries = data
    for k, part in enumerate((queries[:6], queries[6:])):
        (tmp_path / f"{k}.fa").write_text("".join(f">{n}\n{s}\n" for n, s in part))
    batches = [read_fastx(tmp_path / f"{k}.fa") for k in range(2)]
    index = Index.build(str(tmp_path / "0.fa"), wgram=8, device="cpu")  # (a database of the first file's queries)
    task = BlastTask(index, "megablast", devices=["cpu"], outfmt=outfmt)
    partial = task.prelims()[0](types.SimpleNamespace(payloads=batches))  # one search of both, split
    assert [hits.arrays.released for _, hits in partial] == [at_once] * 2 and len(partial[0][1]) >= 6
    kept = [(b, task.searchers[0].search(b)) for b in batches]
    chunks = task.finalize(partial)
    assert all(hits.arrays.released for _, hits in partial)
    assert [c.data for c in chunks] == [c.data for c in task.finalize(kept)]

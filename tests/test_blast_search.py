"""BlastSearcher end to end against blastn 2.12 (fixtures and commands: tests/data/blast/README.md).

Database: the embedded lambda genome; queries: ``search_queries.fa`` (40 simulated, 8 %
substitutions and 1 % indels, and hand-made records). For every HSP of blastn with e <= 1e-10:
found (gseek.blast.compare: same query, subject, strand, 90 % reciprocal overlap), bit score
within 1, e-value within 5 %; at most 2 % of gseek's HSPs (e <= 1e-10) without a counterpart.
Then the lines themselves: most are byte-identical; the known differences are

* megablast (linear gaps, 0/0): none. gseek runs BLAST+'s greedy extension, its trace-back start,
  edits and re-scoring (``gseek.dp.greedy``), from the ungapped HSP's middle as BLAST+ does: all 44
  lines are blastn's (2026-11-27; from the seed's run of matches 41, 3 with gap columns placed
  otherwise at equal score; with the DP before, 22 %, 90 % but for ``gapopen``);
* equal-score alternatives of blastn's affine gaps: one identity and one gap open more against
  one mismatch more (``2 + 5 == 5 + 2``), so ``mismatch``/``nident``/``pident``/``gapopen`` move;
* blastn's ends at equal score (``length``, ``qstart``/``sstart``): for megablast, gone with the
  greedy extension (it ends where BLAST+'s does);

An N scores as BLAST+ scores it, the rounded mean of the scores of the four bases (-2 with 2/-3,
-1 with 1/-2): blastn and gseek both join the two halves of ``h_nrun`` across its 40 N.

The outputs are byte-identical on the CPU, on the CUDA source compiled for the host and on a GPU,
and whatever the batch of queries.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from blast_checks import check_alignments
from host_cuda import build as host_cuda_build

from gseek.backend import GpuBackend
from gseek.blast.compare import compare_reports
from gseek.blast.options import BlastOptions
from gseek.blast.report import write_tabular
from gseek.blast.searcher import BlastSearcher
from gseek.datasets import lambda_genome
from gseek.errors import OptionError
from gseek.index import Index
from gseek.index.text import ReferenceText
from gseek.kernels import blast as kblast
from gseek.kernels import dp as kdp
from gseek.kernels import greedy as kgreedy
from gseek.seqio import read_fastx

DATA = Path(__file__).resolve().parent / "data" / "blast"
FIELDS = ("6 qseqid sseqid pident length mismatch gapopen qstart qend sstart send evalue bitscore score sstrand "
          "nident gaps qcovhsp")
COLUMNS = FIELDS.split()[1:]
#: fixture -> (task, option overrides) of its blastn run.
RUNS = {"search_megablast": ("megablast", {}), "search_blastn": ("blastn", {}),
        "search_blastn_dust_no": ("blastn", {"dust": None})}
#: Queries whose blastn HSPs gseek does not reproduce (see test_n_scores_as_blastn_scores_it).
KNOWN = {"search_megablast": set(), "search_blastn": set(), "search_blastn_dust_no": set()}
#: Of blastn's lines with e <= 1e-10 (known queries left out), how many gseek prints byte for byte,
#: and how many but for the ``gapopen`` column (measured 2026-11-27: 44/44, 44/44; 40/43, 40/43; 41/44, 41/44).
MIN_IDENTICAL = {"search_megablast": (1.0, 1.0), "search_blastn": (0.90, 0.90),
                 "search_blastn_dust_no": (0.90, 0.90)}
MAX_EVALUE = 1e-10


@pytest.fixture(scope="module")
def lambda_text():
    return ReferenceText.from_index(Index.build(lambda_genome(), wgram=4, device="cpu"))


@pytest.fixture(scope="module")
def queries():
    return read_fastx(DATA / "search_queries.fa")


@pytest.fixture(scope="module")
def pairs(queries):
    return [(queries.name(i), queries.sequence(i)) for i in range(len(queries))]


def _lines(hits, fmt: str = FIELDS, **kwargs) -> list[str]:
    out = io.StringIO()
    write_tabular(hits, out, fmt, **kwargs)
    return out.getvalue().splitlines()


@pytest.fixture(scope="module")
def cpu_lines(lambda_text, queries):
    """gseek's lines for each fixture's run, on the CPU, all queries at once (computed once)."""
    cache = {}

    def get(name):
        if name not in cache:
            task, opts = RUNS[name]
            cache[name] = _lines(BlastSearcher(lambda_text, task=task, device="cpu", **opts).search(queries))
        return cache[name]

    return get


def _blastn(name: str) -> list[str]:
    return (DATA / f"{name}.tsv").read_text().splitlines()


def _significant(lines, skip=()) -> list[str]:
    return [x for x in lines if float(x.split("\t")[COLUMNS.index("evalue")]) <= MAX_EVALUE
            and x.split("\t")[0] not in skip]


def _for_compare(lines) -> list[str]:
    """FIELDS lines as gseek.blast.compare's fields (qseqid sseqid sstrand qstart qend sstart send evalue bitscore)."""
    keep = [COLUMNS.index(c) for c in ("qseqid", "sseqid", "sstrand", "qstart", "qend", "sstart", "send", "evalue",
                                       "bitscore")]
    return ["\t".join(x.split("\t")[k] for k in keep) for x in lines]


# --------------------------------------------------------------------------- against blastn


@pytest.mark.parametrize("name", RUNS)
def test_recall_scores_and_evalues_against_blastn(cpu_lines, name):
    skip = KNOWN[name]
    ours = [x for x in cpu_lines(name) if x.split("\t")[0] not in skip]
    theirs = [x for x in _blastn(name) if x.split("\t")[0] not in skip]
    c = compare_reports(_for_compare(ours), _for_compare(theirs), max_evalue=MAX_EVALUE)
    assert c["expected"] >= 40
    assert c["recall"] >= 0.99, c["missed"]
    assert c["bits_within_1"] == 1.0 and c["evalue_within_5pct"] == 1.0, c
    assert c["extra"] <= 0.02, c


@pytest.mark.parametrize("name", RUNS)
def test_lines_equal_blastn(cpu_lines, name):
    skip = KNOWN[name]
    theirs = _significant(_blastn(name), skip)
    ours = set(_significant(cpu_lines(name), skip))
    identical = sum(x in ours for x in theirs)

    def but_gapopen(x):
        cols = x.split("\t")
        del cols[COLUMNS.index("gapopen")]
        return "\t".join(cols)

    ours_but = {but_gapopen(x) for x in ours}
    identical_but = sum(but_gapopen(x) in ours_but for x in theirs)
    full, but = MIN_IDENTICAL[name]
    assert identical >= full * len(theirs), (identical, len(theirs))
    assert identical_but >= but * len(theirs), (identical_but, len(theirs))


def test_dust_masks_seeds_as_blastn_does(cpu_lines):
    """h_lowcomp's only seeds lie in its DUST interval: a significant hit with -dust no only."""
    low = [x for x in _significant(_blastn("search_blastn_dust_no")) if x.startswith("h_lowcomp\t")]
    assert len(low) == 1 and low[0] in cpu_lines("search_blastn_dust_no")
    assert not [x for x in _significant(cpu_lines("search_blastn")) if x.startswith("h_lowcomp\t")]
    assert not [x for x in _significant(_blastn("search_blastn")) if x.startswith("h_lowcomp\t")]


def test_n_scores_as_blastn_scores_it(lambda_text, pairs):
    query = [p for p in pairs if p[0] == "h_nrun"]
    lines = _lines(BlastSearcher(lambda_text, task="blastn", device="cpu").search(query))
    want = [x for x in _blastn("search_blastn") if x.startswith("h_nrun\t")][0]
    assert lines[0] == want  # 800 columns, 69 mismatches (40 of them N), score 1295


def test_outfmt_7_comment_lines_equal_blastn(lambda_text, pairs):
    """One query with hits, one without: blastn -outfmt 7's header, field names and counts."""
    two = [p for p in pairs if p[0] in ("h_minus", "h_negative")]
    hits = BlastSearcher(lambda_text, task="megablast", device="cpu").search(two)
    ours = _lines(hits, "7" + FIELDS[1:], database="lambda")
    assert ours == (DATA / "search_outfmt7.txt").read_text().splitlines()


# --------------------------------------------------------------------------- same output everywhere


@pytest.mark.parametrize("task", ["megablast", "blastn"])
def test_batch_splits_give_the_same_rows(lambda_text, queries, pairs, cpu_lines, task):
    """All queries at once (a SequenceBatch, or (name, sequence) pairs), in two halves, or one at a
    time: the same lines (megablast one at a time on every third query, to stay fast)."""
    name = f"search_{task}"
    whole = cpu_lines(name)
    searcher = BlastSearcher(lambda_text, task=task, device="cpu")
    assert _lines(searcher.search(pairs)) == whole
    half = len(pairs) // 2
    assert _lines(searcher.search(pairs[:half])) + _lines(searcher.search(pairs[half:])) == whole
    step = 3 if task == "megablast" else 1
    some = pairs[::step]
    names = {p[0] for p in some}
    one_by_one = [x for p in some for x in _lines(searcher.search([p]))]
    assert one_by_one == [x for x in whole if x.split("\t")[0] in names]


def test_extension_launch_size_changes_nothing(lambda_text, pairs, cpu_lines, monkeypatch):
    """Gapped extensions split into launches of 7 seeds (longest expected first, then put back in
    order): the same lines as in one launch."""
    import gseek.blast.gapped as gapped_module

    whole = cpu_lines("search_blastn")  # made (and cached) before the launch size changes
    monkeypatch.setattr(gapped_module, "_EXTEND_CHUNK", 7)
    assert _lines(BlastSearcher(lambda_text, task="blastn", device="cpu").search(pairs)) == whole


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("task", ["blastn", "megablast"])
@pytest.mark.parametrize("ahead, depth", [(0, 8), (600, 1), (100_000, 8)])
def test_seeds_extended_ahead_of_their_round_change_nothing(lambda_text, pairs, cpu_lines, monkeypatch, device, task,
                                                            ahead, depth):
    """Score-only rounds whose launch also extends seeds of later rounds (``_AHEAD``: what a GPU
    searcher does with rounds of few seeds), each result used by the round that takes it: the same
    rounds and lines as rounds that extend only their own seeds; with a large ``_AHEAD`` every
    seed goes in the first launch and no later round launches."""
    import gseek.blast.gapped as gapped_module
    import gseek.blast.rounds as rounds_module

    whole = cpu_lines(f"search_{task}")
    monkeypatch.setattr(gapped_module, "_AHEAD", {"cpu": 0, "gpu": 0})
    plain = BlastSearcher(lambda_text, task=task, device=device)
    assert _lines(plain.search(pairs)) == whole
    assert plain.counts["rounds launched"] == plain.counts["rounds"] >= 2
    monkeypatch.setattr(gapped_module, "_AHEAD", {"cpu": ahead, "gpu": ahead})
    monkeypatch.setattr(rounds_module, "_AHEAD_DEPTH", depth)
    searcher = BlastSearcher(lambda_text, task=task, device=device)
    assert _lines(searcher.search(pairs)) == whole
    counts = searcher.counts
    assert counts["rounds"] == plain.counts["rounds"]
    if ahead == 0:
        assert counts.get("extended ahead of their round", 0) == 0
    else:
        assert counts["extended ahead of their round"] > 0
        assert counts["rounds launched"] < counts["rounds"]
    if ahead == 100_000:
        assert counts["rounds launched"] == 1


def _fragmented_queries(seed: int = 3) -> list[tuple[str, str]]:
    """Six 5 kb pieces of lambda (3 % substitutions) each cut by four 50-base stretches of 55 %: the
    score-only X-drop stops at each, the final one goes through, so each piece's score-only HSPs are
    fragments of one final alignment."""
    import numpy as np

    genome = read_fastx(lambda_genome()).sequence(0)
    rng = np.random.default_rng(seed)

    def mutate(seq, rate):
        out = list(seq)
        for i, c in enumerate(out):
            if rng.random() < rate:
                out[i] = "ACGT"[("ACGT".index(c) + int(rng.integers(1, 4))) % 4]
        return "".join(out)

    queries = []
    for k in range(6):
        piece, parts, pos = genome[3000 + 6000 * k:8000 + 6000 * k], [], 0
        for cut in (800, 1700, 2600, 3500):
            parts += [mutate(piece[pos:cut], 0.03), mutate(piece[cut:cut + 50], 0.55)]
            pos = cut + 50
        queries.append((f"frag{k}", "".join(parts) + mutate(piece[pos:], 0.03)))
    return queries


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("task", ["megablast", "blastn"])
def test_traceback_skips_hsps_inside_one_traced_back(lambda_text, monkeypatch, device, task):
    """The trace-back pass skips a score-only HSP that lies inside one HSP already traced back with a
    score of at least its own (BLAST+'s rule): checked against every HSP traced back (same query
    strand and contig, both ends in its ranges, within _DIAG_NEAR of its diagonals); on these
    fragmented alignments it traces back fewer and reports the same HSPs (ends and scores) as
    tracing back every one and purging the copies. (Not so everywhere: a fragment that is skipped
    could have traced back to the same ends with a higher score, as in BLAST+; docs/blast.md.)"""
    import numpy as np

    import gseek.blast.gapped as gapped_module
    import gseek.blast.rounds as rounds_module

    queries = _fragmented_queries()
    seen = []
    traceback = BlastSearcher._traceback

    def spy(self, *args):
        res, ids = traceback(self, *args)
        seen.append((args[11], args[13], args[14], args[15], args[1], res, ids))  # key, sel, span, raw, scale
        return res, ids

    monkeypatch.setattr(BlastSearcher, "_traceback", spy)
    fields = "6 qseqid sseqid sstrand qstart qend sstart send score"
    out = {}
    for rounds in (0, 4):
        monkeypatch.setattr(gapped_module, "_TRACEBACK_ROUNDS", rounds)
        searcher = BlastSearcher(lambda_text, task=task, device=device)
        out[rounds] = (_lines(searcher.search(queries), fields), dict(searcher.counts))
    assert out[4][0] == out[0][0]
    assert out[4][1]["inside an HSP traced back"] > 0
    assert out[4][1]["extended with trace-back"] < out[0][1]["extended with trace-back"]
    key, sel, span, raw, scale, res, ids = seen[-1]  # the search with rounds (0: one round of all)
    skipped = np.setdiff1d(sel, ids)
    assert skipped.size == out[4][1]["inside an HSP traced back"]
    column = {c: i for i, c in enumerate(sel.tolist())}
    near = rounds_module._DIAG_NEAR

    def inside(q, s, h):
        d0, d1 = res["s_start"][h] - res["q_start"][h], res["s_end"][h] - res["q_end"][h]
        return (res["q_start"][h] <= q < res["q_end"][h] and res["s_start"][h] <= s < res["s_end"][h]
                and min(d0, d1) - near <= s - q <= max(d0, d1) + near)

    for c in skipped.tolist():
        qa, qb, sa, sb = span[:, column[c]]
        own = raw[column[c]]
        assert any(key[t] == key[c] and res["score"][h] // scale >= own and inside(qa, sa, h)  # one HSP holds both
                   and inside(qb - 1, sb - 1, h) for h, t in enumerate(ids.tolist()))


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("budget", [1, 50_000])
def test_extension_launch_memory_changes_nothing(lambda_text, pairs, cpu_lines, monkeypatch, budget, device):
    """Gapped extensions split into launches by the bytes of their windows and DP rows (a seed that
    needs more than the budget is a launch of its own; 50 kB: a few seeds each): the same lines.
    With trace-back windows of 4 bases each side of the score-only HSP, most sweeps reach a window's
    edge and are done again with the query's reach: still the same lines (a window never changes a
    result), and those launches keep to the budget too."""
    import numpy as np

    import gseek.blast.gapped as gapped_module
    import gseek.dp.xdrop as xdrop_module  # (gapped imports xdrop_gapped where the X-drop pass runs)

    whole = cpu_lines("search_blastn")
    launches, over = [], []
    cut, extend = gapped_module._launches, xdrop_module.xdrop_gapped

    def xdrop_gapped(backend, codes, q_off, q_len, t_off, t_len, *args, **kwargs):
        if len(t_len) > 1 and 9 * int(np.sum(t_len)) > budget:  # 9 bytes a window base
            over.append(len(t_len))
        return extend(backend, codes, q_off, q_len, t_off, t_len, *args, **kwargs)

    monkeypatch.setattr(gapped_module, "_EXTEND_BYTES", budget)
    monkeypatch.setattr(gapped_module, "_EXTEND_BYTES_HOST", budget)
    monkeypatch.setattr(gapped_module, "_EXTEND_SHARE", 0.0)  # a GPU's free memory would not split
    monkeypatch.setattr(gapped_module, "_launches", lambda o, n, b: [launches.append(i.size) or i for i in cut(o, n, b)])
    monkeypatch.setattr(xdrop_module, "xdrop_gapped", xdrop_gapped)
    extend_ = BlastSearcher._extend

    def narrow(self, *args, **kwargs):
        if kwargs.get("traceback", True) and kwargs.get("span") is not None:
            kwargs["margin"] = 4
        return extend_(self, *args, **kwargs)

    monkeypatch.setattr(BlastSearcher, "_extend", narrow)
    searcher = BlastSearcher(lambda_text, task="blastn", device=device)
    assert _lines(searcher.search(pairs)) == whole
    assert max(launches) == 1 if budget == 1 else 1 < max(launches) < sum(launches)
    assert over == [] and sum(searcher.counts.get(f"done again with the query's reach, {side}", 0)
                                  for side in ("score only", "with trace-back")) > 10


def test_extension_launch_budget_is_a_share_of_a_gpus_free_memory():
    """A launch may hold _EXTEND_SHARE of a GPU's free memory (fewer launches: fewer tails), never
    less than _EXTEND_BYTES; the CPU's budget is _EXTEND_BYTES_HOST (its windows are the process's memory)."""
    from gseek.backend import CpuBackend
    from gseek.blast.gapped import _EXTEND_BYTES, _EXTEND_BYTES_HOST, _EXTEND_SHARE, _extend_budget

    class Gpu:
        def __init__(self, free):
            self.free = free

        def free_memory(self):
            return self.free

    assert _extend_budget(CpuBackend()) == _EXTEND_BYTES_HOST < _EXTEND_BYTES
    assert _extend_budget(Gpu(80 << 30)) == int(_EXTEND_SHARE * (80 << 30)) > _EXTEND_BYTES
    assert _extend_budget(Gpu(1 << 20)) == _EXTEND_BYTES
    # searchers launching on one device at once share half its free memory (0.25 each up to two)
    assert _extend_budget(Gpu(80 << 30), 2) == _extend_budget(Gpu(80 << 30))
    assert _extend_budget(Gpu(80 << 30), 4) == int(0.125 * (80 << 30)) > _EXTEND_BYTES


def test_prepared_queries_search_as_the_queries(lambda_text, pairs, cpu_lines):
    """``search(prepare(q))`` is ``search(q)`` (what the volumes of a database share); queries
    prepared with other options are refused."""
    searcher = BlastSearcher(lambda_text, task="blastn", device="cpu")
    prepared = searcher.prepare(pairs)
    assert _lines(searcher.search(prepared)) == _lines(searcher.search(prepared)) == cpu_lines("search_blastn")
    with pytest.raises(ValueError, match="prepared with other options"):
        BlastSearcher(lambda_text, task="blastn", device="cpu", strand="plus").search(prepared)


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_lookup_pair_chunks_change_nothing(lambda_text, pairs, cpu_lines, monkeypatch, device, chunk):
    """The table-word hits expanded in chunks of at most ``chunk`` (query, text) pairs (a hit with
    more pairs is a chunk of its own): the same lines as in one chunk."""
    import gseek.blast.seeds as seeds_module

    whole = cpu_lines("search_blastn")
    monkeypatch.setattr(seeds_module, "PAIR_CHUNK", chunk)
    monkeypatch.setattr(seeds_module, "GPU_CHUNKS", (seeds_module.SCAN_CHUNK, chunk))
    assert _lines(BlastSearcher(lambda_text, task="blastn", device=device).search(pairs)) == whole


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("task", ["blastn", "megablast"])
@pytest.mark.parametrize("min_extent", [1, 200])
def test_long_extensions_on_the_host_change_nothing(lambda_text, pairs, cpu_lines, monkeypatch, task, min_extent,
                                                     device):
    """The longest gapped extensions done on the host's cores beside the launch of the others (what a
    GPU searcher does; on the CPU both sides are the CPU), in launches of 5 seeds: the same lines,
    both passes split (the host's share is asserted non-empty and not everything)."""
    import gseek.blast.gapped as gapped_module
    from gseek.backend import get_backend

    whole = cpu_lines(f"search_{task}")
    monkeypatch.setattr(gapped_module, "_EXTEND_CHUNK", 5)
    monkeypatch.setattr(gapped_module, "_HOST_MIN_EXTENT", min_extent)
    monkeypatch.setattr(gapped_module, "_HOST_SPEEDUP", {True: 2.0, False: 2.0})
    shares = []
    share = gapped_module._host_share
    monkeypatch.setattr(gapped_module, "_host_share", lambda *a: shares.append(share(*a)) or shares[-1])
    searcher = BlastSearcher(lambda_text, task=task, device=device)
    searcher.host = get_backend("cpu", 2)
    assert _lines(searcher.search(pairs)) == whole
    assert any(0 < s.sum() < s.size for s in shares) and len(shares) >= 2


@pytest.fixture(scope="module")
def host_cuda(tmp_path_factory):
    return host_cuda_build(tmp_path_factory.mktemp("hostblastsearch"), [kblast, kdp, kgreedy])


@pytest.mark.parametrize("kind", ["host-cuda", pytest.param("gpu", marks=pytest.mark.gpu),
                                  pytest.param("gpu-tiny", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("name", ["search_megablast", "search_blastn_dust_no"])
def test_backends_give_byte_identical_output(request, lambda_text, queries, cpu_lines, kind, name):
    device = {"host-cuda": lambda: request.getfixturevalue("host_cuda"), "gpu": lambda: GpuBackend(0),
              "gpu-tiny": lambda: GpuBackend(0, block_size=32, max_blocks=2)}[kind]()
    task, opts = RUNS[name]
    hits = BlastSearcher(lambda_text, task=task, device=device, **opts).search(queries)
    assert _lines(hits) == cpu_lines(name)
    assert _lines(hits, "6 std btop") == _lines(BlastSearcher(lambda_text, task=task, device="cpu", **opts)
                                                .search(queries), "6 std btop")


def _slow_btop(qseq: str, sseq: str) -> str:
    """BLAST+'s BTOP of two aligned rows: a count of identical columns, or the query letter then the
    subject letter of a column that differs (a gap is ``-``)."""
    out, run = [], 0
    for a, b in zip(qseq, sseq):
        if a == b and a != "N":
            run += 1
            continue
        out += [str(run)] if run else []
        run = 0
        out.append(a + b)
    return "".join(out + ([str(run)] if run else []))


@pytest.mark.parametrize("task", ["megablast", "blastn"])
def test_aligned_rows_and_btop_are_the_sequences(lambda_text, queries, task):
    """``qseq``/``sseq`` without gaps are the query's and the subject's stretches (the subject
    reverse-complemented on the minus strand, as BLAST+ shows it), and ``btop``, ``nident``,
    ``mismatch``, ``gaps`` and ``length`` say what the two rows say (checked from the FASTA text)."""
    lam = read_fastx(lambda_genome())
    subject = lam.sequence(0).upper()
    query = {queries.name(i).split()[0]: queries.sequence(i).upper() for i in range(len(queries))}
    comp = str.maketrans("ACGTN", "TGCAN")
    hits = BlastSearcher(lambda_text, task=task, device="cpu").search(queries)
    fmt = "6 qseqid qstart qend sstart send sstrand length nident mismatch gaps btop qseq sseq"
    lines = _lines(hits, fmt)
    assert len(lines) > 20 and any("\tminus\t" in x for x in lines)
    for line in lines:
        qid, qs, qe, ss, se, strand, length, nident, mismatch, gaps, btop, qseq, sseq = line.split("\t")
        qs, qe, ss, se = int(qs), int(qe), int(ss), int(se)
        assert qseq.replace("-", "") == query[qid][qs - 1:qe]
        if strand == "plus":
            assert sseq.replace("-", "") == subject[ss - 1:se]
        else:
            assert sseq.replace("-", "") == subject[se - 1:ss][::-1].translate(comp)
        assert btop == _slow_btop(qseq, sseq)
        assert int(length) == len(qseq) == len(sseq)
        assert int(nident) == sum(a == b and a != "N" for a, b in zip(qseq, sseq))
        assert int(gaps) == qseq.count("-") + sseq.count("-")
        assert int(mismatch) == sum(a != b and "-" not in (a, b) for a, b in zip(qseq, sseq))


# --------------------------------------------------------------------------- options


def test_option_errors():
    with pytest.raises(OptionError, match="word size must be at least 4 for task megablast, not 3"):
        BlastOptions.for_task("megablast", word_size=3)
    with pytest.raises(OptionError, match="word size must be at least 4 for task blastn, not 2"):
        BlastOptions.for_task("blastn", word_size=2)
    BlastOptions.for_task("blastn", word_size=4)
    with pytest.raises(OptionError, match=r"gap costs 1 \(open\) and 1 \(extend\) are not supported with "
                                          r"reward/penalty 2/-3; supported \(open and extend\): .*5 and 2"):
        BlastOptions.for_task("blastn", gap_open=1, gap_extend=1)
    with pytest.raises(OptionError, match=r"reward/penalty 3/-1 is not supported; BLAST\+ has statistics for "
                                          r".*1/-2, 2/-3"):
        BlastOptions.for_task("blastn", reward=3, penalty=-1)
    with pytest.raises(OptionError, match="strand must be one of both, plus, minus, not 'up'"):
        BlastOptions.for_task("megablast", strand="up")
    for bad in [(1, 64, 1), (65, 64, 1), (20, 7, 1), (20, 65, 1), (20, 64, 0), (20, 64, 33)]:
        with pytest.raises(OptionError, match=r"dust must be 'LEVEL WINDOW LINKER' with level 2..64, window "
                                              r"8..64, linker 1..32"):
            BlastOptions.for_task("blastn", dust=bad)
    for name in ("xdrop_ungap", "xdrop_gap", "xdrop_gap_final"):  # inf overflowed into a traceback
        for bad in (0, -1, float("inf"), float("nan"), 1e300):
            with pytest.raises(OptionError, match=f"{name} must be > 0 and at most 1,000,000 bits"):
                BlastOptions.for_task("megablast", **{name: bad})
        BlastOptions.for_task("megablast", **{name: 1_000_000}).raw_xdrop(1_000_000)
    with pytest.raises(OptionError, match="unknown BLAST option"):
        BlastOptions.for_task("blastn", wordsize=11)
    with pytest.raises(OptionError, match="unknown task 'tblastx'"):
        BlastOptions.for_task("tblastx")
    with pytest.raises(OptionError):  # a subclass of ValueError
        BlastSearcher(ReferenceText.__new__(ReferenceText), task="blastn", strand="x")
    assert issubclass(OptionError, ValueError)


def test_dust_none_turns_dust_off():
    """``dust=None`` is ``-dust no`` (it was dropped with the other None overrides)."""
    opts = BlastOptions.for_task("megablast", dust=None)
    assert opts.dust is None and repr(opts) == "BlastOptions(task='megablast', dust=None)"
    assert BlastOptions.for_task("megablast", evalue=None).dust == (20, 64, 1)


@pytest.mark.parametrize("task, word_size", [("megablast", 28), ("megablast", 16), ("megablast", 12),
                                             ("blastn", 11), ("blastn", 7), ("blastn", 4), ("megablast", 40)])
def test_stride_puts_a_table_word_in_every_word_run(task, word_size):
    """Wherever a run of word_size equal bases starts, a table word at a multiple of the stride lies
    inside it (so the scan finds every seed), and the stride is the largest such."""
    o = BlastOptions.for_task(task, word_size=word_size)
    lut, stride = o.lut_word, o.stride
    assert 1 <= lut <= min(word_size, 13)

    def covered(stride):
        return all(any(p % stride == 0 for p in range(a, a + word_size - lut + 1)) for a in range(3 * stride))

    assert covered(stride) and not covered(stride + 1)


@pytest.mark.parametrize("word_size", [28, 16])
def test_an_exact_run_of_the_word_size_is_found_at_every_phase_of_the_stride(lambda_text, word_size):
    """Queries holding only ``word_size`` bases of lambda (between random flanks that differ from
    lambda's next bases), at 2 x stride consecutive offsets: each is a hit (the long queries of the
    fixtures would hide a stride too large)."""
    import numpy as np

    genome = read_fastx(lambda_genome()).sequence(0)
    rng = np.random.default_rng(word_size)
    stride = BlastOptions.for_task("megablast", word_size=word_size).stride
    batch = []
    for a in range(2 * stride):
        s = 5000 + a
        left = "".join("ACGT"[c] for c in rng.integers(0, 4, 60).tolist())
        right = "".join("ACGT"[c] for c in rng.integers(0, 4, 60).tolist())
        left = left[:-1] + "ACGT".replace(genome[s - 1], "")[0]      # the run is exactly word_size long
        right = "ACGT".replace(genome[s + word_size], "")[0] + right[1:]
        batch.append((f"phase{a}", left + genome[s:s + word_size] + right))
    hits = BlastSearcher(lambda_text, task="megablast", word_size=word_size, device="cpu").search(batch)
    for a in range(2 * stride):
        s = 5000 + a
        assert any(hits.query[h] == a and hits.strand[h] == 1 and hits.q_start[h] <= 60 and
                   hits.q_end[h] >= 60 + word_size and hits.s_start[h] <= s and hits.s_end[h] >= s + word_size
                   for h in range(len(hits))), a


@pytest.mark.parametrize("task", ["megablast", "blastn"])
def test_empty_short_and_n_only_queries(lambda_text, pairs, task):
    """An empty query, an all-N one and one shorter than the word have no hits and do not disturb
    the others; an empty batch gives no hits."""
    searcher = BlastSearcher(lambda_text, task=task, device="cpu")
    minus = [p for p in pairs if p[0] == "h_minus"]
    alone = _lines(searcher.search(minus))
    mixed = searcher.search([("empty", ""), minus[0], ("nnn", "N" * 50), ("short", minus[0][1][:10])])
    assert _lines(mixed) == alone and len(alone) >= 1
    assert [line for line in _lines(mixed, "7") if line.startswith("# ") and "hits found" in line] == \
        ["# 0 hits found", f"# {len(alone)} hits found", "# 0 hits found", "# 0 hits found"]
    assert len(searcher.search([])) == 0


def test_gseek_compile_runs_the_blast_workload(monkeypatch):
    """``gseek compile --only blast`` runs both tasks (and ungapped, outfmt 7) end to end, the report order's pass
    over rows tied on sort keys wider than 63 bits, which its small searches never reach (missing from the prebuilt
    sets, a fresh install's first megablast of 600 x 500 bp against 240 kb compiled it: 4.9 s), the round choice in
    parts of keys (``rounds._select_parts``: rounds of 2^14 seeds or more, which its searches never reach either; its
    first use compiled it: 1.8-2.9 s here), DUST's device path (a GPU's first search compiled its host passes), and,
    where makeblastdb is installed, a BLAST+ database's conversion (its first search compiled 20 functions: 13 s)."""
    from gseek.blast import dust, purge, rounds
    from gseek.precompile import compile_kernels

    calls = []
    order_ties = purge._order_ties
    monkeypatch.setattr(purge, "_order_ties", lambda *args: calls.append(order_ties(*args)))
    parts = []
    select_parts = rounds._select_parts
    monkeypatch.setattr(rounds, "_select_parts", lambda *a: parts.append(a[0].dtype.name) or select_parts(*a))
    scans = []
    if shutil.which("makeblastdb"):
        from gseek.index import blastdb_scan

        scan_deflines = blastdb_scan.scan_deflines
        monkeypatch.setattr(blastdb_scan, "scan_deflines", lambda *args: scans.append(1) or scan_deflines(*args))
    dusts = []  # DUST's device path (every GPU search), its host passes through the CPU backend: a record with an N
    on_backend = dust._on_backend
    monkeypatch.setattr(dust, "_on_backend", lambda *a: dusts.append(bool((a[1] > 3).any())) or on_backend(*a))
    seconds = compile_kernels("cpu", ("blast",))
    assert list(seconds) == ["blast"] and seconds["blast"] > 0
    assert calls and bool(scans) == bool(shutil.which("makeblastdb"))
    assert parts and set(parts) == {"int64"}  # the types of a search's rounds
    assert True in dusts


OPTION_RUNS = {
    "megablast__lcase_masking": ("megablast", dict(lcase_masking=True)),
    "blastn__ungapped": ("blastn", dict(ungapped=True)),
    "megablast__ungapped": ("megablast", dict(ungapped=True)),
    "blastn__strand_plus": ("blastn", dict(strand="plus")),
    "blastn__max_hsps_1__max_target_seqs_1": ("blastn", dict(max_hsps=1, max_target_seqs=1)),
    "blastn__perc_identity_95__qcov_hsp_perc_50": ("blastn", dict(perc_identity=95, qcov_hsp_perc=50)),
}


@pytest.mark.parametrize("name", list(OPTION_RUNS))
def test_options_agree_with_blastn(lambda_text, queries, name):
    """Each option against blastn run with it (tests/data/blast/README.md): the issue's recall bar
    at e <= 1e-10, and most lines the same (measured: 97-100 % of blastn's; blastn -ungapped 872 of 874 since
    BLAST+'s ungapped beta of 2/-3 is used, 58 % before)."""
    from gseek.blast.compare import COMPARE_FIELDS

    task, options = OPTION_RUNS[name]
    hits = BlastSearcher(lambda_text, task=task, device="cpu", **options).search(queries)
    out = io.StringIO()
    write_tabular(hits, out, COMPARE_FIELDS)
    ours = out.getvalue().splitlines()
    theirs = (DATA / f"options_{name}.tsv").read_text().splitlines()
    r = compare_reports(ours, theirs)
    assert r["recall"] >= 0.99 and r["bits_within_1"] >= 0.99 and r["evalue_within_5pct"] >= 0.99, r
    assert r["extra"] <= 0.02, r
    assert len(set(ours) & set(theirs)) >= 0.95 * len(theirs)


def test_a_text_only_index_serves_blast_and_is_refused_for_mapping(tmp_path, queries, cpu_lines):
    """``gseek index --parts text``: no suffix array; the same BLAST lines as the whole index, saved
    and loaded; read mapping refuses it in one line naming how it was built."""
    from gseek.mapper import Mapper

    path = Index.build(lambda_genome(), parts="text", device="cpu").save(tmp_path / "lambda.gseek")
    assert not (path / "occ.npy").exists() and (path / "text.npy").exists()
    index = Index.load(path, device="cpu")
    assert _lines(BlastSearcher(index, task="blastn", device="cpu").search(queries)) == cpu_lines("search_blastn")
    with pytest.raises(OptionError, match="--parts text"):
        Mapper(index, 2)
    with pytest.raises(OptionError, match="parts must be"):
        Index.build(lambda_genome(), parts="fm", device="cpu")


@pytest.mark.parametrize("task", ["megablast", "blastn"])
def test_every_hsp_is_consistent(lambda_text, queries, task):
    """Each HSP's CIGAR spans exactly its query and subject ranges, its =/X columns are the bases' (a
    match: equal bases 0-3), ``nident + mismatch + gaps == length``, its gap opens are its gap runs, and
    it scores (reward, penalty, an N the matrix value; gaps as the task's costs, megablast's linear
    ones at twice the scale, halved and rounded down) exactly its reported score."""
    searcher = BlastSearcher(lambda_text, task=task, device="cpu")
    hits = searcher.search(queries)
    assert len(hits) > 40
    check_alignments(hits, searcher)


def test_megablast_keeps_only_the_part_scored_again():
    """A greedy alignment ending in a zero-scoring gap tail is cut to its best part when scored again
    (BLAST+'s ``s_UpdateReevaluatedHSP``): 200 bases of lambda and 5 bases from 2 further on align as
    200 identical columns, as blastn 2.12 reports them (until the re-scoring moved to the device the
    tail's runs stayed in the CIGAR: length 207, one gap open, 2 gap columns)."""
    from gseek.index import Index
    from gseek.seqio import read_fastx

    genome = read_fastx(lambda_genome()).sequence(0)
    ref = ReferenceText.from_index(Index.build(lambda_genome(), wgram=4, device="cpu"))
    hits = BlastSearcher(ref, task="megablast", device="cpu").search([("tail_gap", genome[10000:10200]
                                                                      + genome[10202:10207])])
    cols = hits.row(0).split("\t")
    assert cols[2:10] == ["100.000", "200", "0", "0", "1", "200", "10001", "10200"], cols


def test_outfmt_sam_is_valid_and_consistent(lambda_text, queries, tmp_path):
    """``--outfmt sam``: pysam reads every record; hard clips + aligned query = the query's length;
    SEQ against the reference text gives the record's NM; FLAG 16 on the minus strand, 256 for
    every HSP of a query but its first; AS/EV/BS tags as the tabular line's numbers."""
    import numpy as np
    import pysam

    hits = BlastSearcher(lambda_text, task="blastn", device="cpu").search(queries)
    path = tmp_path / "o.sam"
    with open(path, "w") as fh:
        write_tabular(hits, fh, "sam", command="test")
    genome = lambda_text.bases(0, lambda_text.n_bases)
    letters = np.frombuffer(b"ACGTN", np.uint8)
    seen = set()
    with pysam.AlignmentFile(str(path)) as sam:
        assert sam.header.references == (hits.subject_names[0].split()[0],)
        records = list(sam)
    assert len(records) == len(hits) > 0
    for h, rec in enumerate(records):
        q = int(hits.arrays["query"][h])
        assert rec.query_name == hits.query_names[q].split()[0]
        assert rec.is_reverse == (hits.arrays["strand"][h] < 0)
        assert rec.is_secondary == (q in seen)
        seen.add(q)
        clips = sum(n for op, n in rec.cigartuples if op == 5)
        assert clips + rec.query_length == hits.query_lengths[q]
        ref = letters[genome[rec.reference_start:rec.reference_end]].tobytes().decode()
        nm, i, j = 0, 0, 0
        for op, n in rec.cigartuples:
            if op == 0:
                nm += sum(a != b or a == "N" for a, b in zip(rec.query_sequence[i:i + n], ref[j:j + n]))
                i, j = i + n, j + n
            elif op == 1:
                nm, i = nm + n, i + n
            elif op == 2:
                nm, j = nm + n, j + n
        assert rec.get_tag("NM") == nm and rec.get_tag("AS") == hits.arrays["score"][h]
        assert rec.reference_start == hits.arrays["s_start"][h] and rec.reference_end == hits.arrays["s_end"][h]


def test_outfmt_sam_through_the_pipeline(tmp_path, queries):
    """``blast_files(outfmt="sam")`` (``gseek search --outfmt sam``): the header once, then the
    records, the same bytes as ``write_tabular`` of one search; two small jobs change nothing."""
    from gseek.pipeline import blast_files

    index = Index.build(lambda_genome(), wgram=4, device="cpu")
    fasta = tmp_path / "q.fa"
    fasta.write_text((DATA / "search_queries.fa").read_text())
    out = io.StringIO()
    write_tabular(BlastSearcher(index, task="megablast", device="cpu").search(queries), out, "sam", command="t")
    for job_bytes in (None, 4000):
        path = tmp_path / "o.sam"
        blast_files(index, fasta, path, task="megablast", outfmt="sam", device="cpu", command="t",
                    chunk_bytes=job_bytes, workers=1)
        assert path.read_text() == out.getvalue()


def test_a_file_of_less_than_a_job_a_part_gives_each_part_a_job(tmp_path, monkeypatch):
    """``BlastTask.job_size``: a regular query file is cut into one job a part (``job_parts``: a GPU, a CPU
    searcher; ``tests/test_blast_jobs.py``) when it is less than a job each, never below the minimum; a
    pipe, or one part, keeps the given size. Jobs change no output (``test_outfmt_sam_through_the_pipeline``,
    ``test_batch_splits_give_the_same_rows``)."""
    import os

    from gseek.pipeline.tasks import blast as blast_task

    monkeypatch.setattr(blast_task, "BLAST_MIN_JOB_BYTES", 1000)
    task = object.__new__(blast_task.BlastTask)
    task.job_parts = 2
    path = tmp_path / "q.fa"
    path.write_bytes(b"x" * 9001)
    assert task.job_size(path, 8000) == 4501  # two jobs
    assert task.job_size(path, 3000) == 3000  # already a job a searcher and more
    path.write_bytes(b"x" * 1500)
    assert task.job_size(path, 8000) == 1000  # never below the minimum
    assert task.job_size(path, 500) == 500  # nor above the given size
    gz = tmp_path / "q.fa.gz"
    gz.write_bytes(b"x" * 1500)
    assert task.job_size(gz, 8000) == 8000  # a compressed file's size is not its text's
    task.job_parts = 1
    assert task.job_size(path, 8000) == 8000
    task.job_parts = 2
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert task.job_size(fifo, 8000) == 8000 and task.job_size(tmp_path / "missing", 8000) == 8000


# --------------------------------------------------------------------------- host passes


def test_seeds_outside_found_hsps_match_a_brute_force_check():
    """``_outside`` over one sorted block of HSPs per round (``_found_block``) equals checking every
    seed against every HSP found so far (same key, inside both ranges, within ``_DIAG_NEAR`` of the
    diagonals of its ends)."""
    import numpy as np

    from gseek.blast import rounds as S

    rng = np.random.default_rng(5)
    n = 4000
    key = rng.integers(0, 6, n)
    q = rng.integers(0, 2000, n)
    s = q + rng.integers(-300, 300, n)
    blocks, every = [], []
    for _ in range(5):  # rounds of HSPs of various extents
        m = int(rng.integers(1, 40))
        k = rng.integers(0, 6, m)
        qa = rng.integers(0, 1800, m)
        ln = rng.integers(1, 600, m)
        sa = qa + rng.integers(-250, 250, m)
        sb = sa + ln + rng.integers(-20, 20, m).clip(0)
        blocks.append(S._found_block(k, {"q_start": qa, "q_end": qa + ln, "s_start": sa, "s_end": sb}))
        d0, d1 = sa - qa, sb - (qa + ln)
        every += list(zip(k, qa, qa + ln, sa, sb, np.minimum(d0, d1) - S._DIAG_NEAR, np.maximum(d0, d1) + S._DIAG_NEAR))
    d = s - q
    brute = [i for i in range(n) if not any(
        r[0] == key[i] and r[1] <= q[i] < r[2] and r[3] <= s[i] < r[4] and r[5] <= d[i] <= r[6] for r in every)]
    assert len(brute) < n  # some seeds are inside
    assert S._outside(np.arange(n), key, q, s, blocks).tolist() == brute


def test_hsps_contained_in_found_hsps_match_a_brute_force_check():
    """``_contained`` (the trace-back pass's skip rule, BLAST+'s): an HSP lies inside one found HSP of
    its key whose score is at least its own (both its first and its last cell in that HSP's ranges
    and near its diagonals), as a check of every HSP against every found one."""
    import numpy as np

    from gseek.blast import rounds as S

    rng = np.random.default_rng(7)
    n = 3000
    key = rng.integers(0, 4, n)
    qa = rng.integers(0, 2000, n)
    qb = qa + rng.integers(1, 400, n)
    sa = qa + rng.integers(-200, 200, n)
    sb = sa + (qb - qa) + rng.integers(-30, 30, n).clip(-(qb - qa) + 1)
    score = rng.integers(0, 100, n)
    blocks, every = [], []
    for _ in range(4):
        m = int(rng.integers(1, 30))
        k = rng.integers(0, 4, m)
        fa = rng.integers(0, 1800, m)
        ln = rng.integers(100, 1500, m)
        ga = fa + rng.integers(-150, 150, m)
        gb = ga + ln + rng.integers(-20, 20, m)
        sc = rng.integers(0, 100, m)
        blocks.append(S._found_block(k, {"q_start": fa, "q_end": fa + ln, "s_start": ga, "s_end": gb}, sc))
        d0, d1 = ga - fa, gb - (fa + ln)
        every += list(zip(k, fa, fa + ln, ga, gb, np.minimum(d0, d1) - S._DIAG_NEAR, np.maximum(d0, d1) + S._DIAG_NEAR,
                          sc))

    def holds(r, i, q, s):
        return r[0] == key[i] and r[1] <= q < r[2] and r[3] <= s < r[4] and r[5] <= s - q <= r[6]

    def brute(i):
        return any(r[7] >= score[i] and holds(r, i, qa[i], sa[i]) and holds(r, i, qb[i] - 1, sb[i] - 1) for r in every)

    want = [brute(i) for i in range(n)]
    assert 0 < sum(want) < n
    # HSPs with each end in a different found HSP, or inside one of a lower score, are there and must not count
    apart = [not want[i] and any(holds(r, i, qa[i], sa[i]) for r in every)
             and any(holds(r, i, qb[i] - 1, sb[i] - 1) for r in every) for i in range(n)]
    assert any(apart)
    assert S._contained(key, qa, qb, sa, sb, score, blocks).tolist() == want


def test_chain_extents_match_a_brute_force_check():
    """``_chain_extent`` (the trace-back's expected subject extent): for every HSP, the least start and
    the greatest end of the HSPs of its key within ``near`` diagonals of its own, itself included."""
    import numpy as np

    from gseek.blast import rounds as S

    rng = np.random.default_rng(11)
    for n, keys, spread, near in [(1, 1, 10, 5), (400, 3, 300, 20), (2000, 40, 2000, 256), (300, 1, 5, 0)]:
        key = rng.integers(0, keys, n)
        diag = rng.integers(-spread, spread, n)
        s_lo = rng.integers(0, 10_000, n)
        s_hi = s_lo + rng.integers(1, 3000, n)
        lo, hi = s_lo.copy(), s_hi.copy()
        S._chain_extent(np.lexsort((diag, key)), key, diag, s_lo, s_hi, near, lo, hi)
        for i in range(n):
            mine = (key == key[i]) & (np.abs(diag - diag[i]) <= near)
            assert (lo[i], hi[i]) == (s_lo[mine].min(), s_hi[mine].max())


def test_host_passes_beside_other_searchers_under_the_workqueue_layer(tmp_path):
    """The searchers of a GPU run their host passes on threads side by side; Numba's ``workqueue``
    layer aborts the process when two threads enter it at once, so every parallel pass of the
    search (the round test, the containment test, the CIGAR gathers) holds ``numba_guard``. Four
    threads at once, in a process whose layer is ``workqueue``."""
    import subprocess
    import sys

    script = tmp_path / "wq.py"
    script.write_text('''
import threading
import numpy as np
from gseek.dp.runs import gather_runs as _gather
from gseek.blast.rounds import _contained, _found_block, _outside
rng = np.random.default_rng(0)
n = 100_000
key, q, s = rng.integers(0, 50, n), rng.integers(0, 10_000, n), rng.integers(0, 10**6, n)
res = {"q_start": q[:5000], "q_end": q[:5000] + 100, "s_start": s[:5000], "s_end": s[:5000] + 100,
       "score": rng.integers(20, 90, 5000)}
block = _found_block(key[:5000], res, res["score"])
runs, offs = rng.integers(0, 1 << 20, 400_000).astype(np.uint32), np.arange(0, 400_001, 4)
def work():
    for _ in range(30):
        _outside(np.arange(n), key, q, s, [block])
        _contained(key[:2000], q[:2000], q[:2000] + 50, s[:2000], s[:2000] + 50, np.full(2000, 40), [block])
        _gather(runs, offs, np.arange(100_000)[::-1].copy())
threads = [threading.Thread(target=work) for _ in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
import numba
print("layer", numba.threading_layer())
''')
    env = dict(__import__("os").environ, NUMBA_THREADING_LAYER="workqueue", NUMBA_NUM_THREADS="2")
    proc = subprocess.run([sys.executable, "-P", str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0 and "layer workqueue" in proc.stdout, proc.stderr[-2000:]

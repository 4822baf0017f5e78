"""The tasks blastn-short and dc-megablast (issue 41): discontiguous words and BLAST+'s presets.

Kernels: the discontiguous word of each query position (``gseek.blast.lookup.template_word_codes``),
the scan and lookup with a template and the two-hit rule (``kernels/blast.{cu,py}``) against the slow
references of ``tests/reference_blast.py``, on the Numba twins, on the CUDA source compiled for the
host and on a GPU (default and tiny launch geometry); inputs: ``test_blast_kernels.random_case``'s
texts and queries (planted, mutated, N runs, masks).

End to end: the fixtures of ``tests/data/blast_tasks/`` (README.md: inputs and blastn 2.12's command
lines) — primers and probes of 20-30 bp for blastn-short, 20-30 % divergent orthologous genes and
diverged lambda pieces for dc-megablast: recall of blastn's HSPs with e <= 1e-10, scores, e-values and
the lines themselves; every template against blastn itself where it is installed; the same bytes on
a GPU as on the CPU.
"""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_blast_kernels import Case, backend, host_cuda, random_case  # noqa: F401 (fixtures)

import reference_blast as ref
from gseek.backend import GpuBackend
from gseek.blast.compare import COMPARE_FIELDS, compare_reports
from gseek.blast.lookup import TEMPLATES, Template, lookup_of_words, seeding, template_of, template_word_codes
from gseek.blast.options import BlastOptions
from gseek.blast.plus_args import parse_blastn
from gseek.blast.report import write_tabular
from gseek.blast.searcher import BlastSearcher
from gseek.blast.seeds import DiscWords, device_queries, find_seeds, scan_hits
from gseek.errors import OptionError
from gseek.index import Index
from gseek.index.text import ReferenceText
from gseek.kernels import blast as kblast
from gseek.seqio import read_fastx

DATA = Path(__file__).resolve().parent / "data" / "blast_tasks"
#: fixture -> (task, blastn arguments beyond -task, query file)
RUNS = {"blastn_short": ("blastn-short", [], "short.fa"), "dc_megablast": ("dc-megablast", [], "dc.fa")}
#: dc-megablast's other templates, checked against blastn itself where it is installed
VARIANTS = [("optimal", 18, 11), ("coding", 16, 12), ("optimal", 21, 12), ("coding_and_optimal", 18, 11),
            ("coding_and_optimal", 21, 12)]
needs_blast = pytest.mark.skipif(shutil.which("blastn") is None or shutil.which("makeblastdb") is None,
                                 reason="BLAST+ (blastn, makeblastdb) not installed")


# --------------------------------------------------------------------------- templates


#: BLAST+'s index functions (blast_nalookup.h), as (mask, shift) pieces of the 64-bit accumulator that
#: holds the span, its last base in the low bits: the word's bases are those under the masks.
BLAST_MASKS = {
    (11, 18, "coding"): [0x3, 0xf0, 0x3c00, 0x30000, 0x3c00000, 0xf0000000, 0xc << 32],
    (11, 16, "coding"): [0x3, 0xf0, 0x3c00, 0xf0000, 0x3c00000, 0xf0000000],
    (11, 21, "optimal"): [0x3f, 0x300, 0xc000, 0xc00000, 0xc000000, 0x3 << 32, 0x3f0 << 32],
    (12, 21, "optimal"): [0x3f, 0x300, 0xc000, 0xf00000, 0xc000000, 0x3 << 32, 0x3f0 << 32],
}


def test_templates_are_blasts():
    """Every template has its weight and length, begins and ends with a base of the word; four are
    read against BLAST+'s own index masks (the bases they keep, counted from the span's end)."""
    assert len(TEMPLATES) == 12
    for (weight, length, kind), pattern in TEMPLATES.items():
        t = template_of(weight, length, kind)
        assert (t.weight, t.span, pattern[0], pattern[-1]) == (weight, length, "1", "1")
        assert t.mask == int(pattern, 2)
    for key, masks in BLAST_MASKS.items():
        kept = sum(masks)
        span = key[1]
        from_blast = "".join("1" if (kept >> (2 * (span - 1 - j))) & 3 else "0" for j in range(span))
        assert from_blast == TEMPLATES[key], key
    with pytest.raises(OptionError):
        template_of(13, 18, "coding")


@pytest.mark.parametrize("key", sorted(TEMPLATES), ids=lambda k: f"{k[0]}of{k[1]}-{k[2]}")
def test_template_words_equal_the_reference(key):
    case = random_case(3, 18, 11, 1)
    pattern = TEMPLATES[key]
    words = template_word_codes(np.array(case.qcodes, np.uint8), np.array(case.qoff), Template(pattern),
                                np.array(case.mask, np.uint8))
    listed = ref.template_listed(case.qcodes, case.qoff, pattern, case.mask)
    want = [ref.template_word(case.qcodes[i:i + len(pattern)], pattern) if ok else -1 for i, ok in enumerate(listed)]
    assert sum(listed) > 100 and words.tolist() == want


# --------------------------------------------------------------------------- kernels


class DiscCase:
    """``random_case``'s text and queries with a template's lookup table (reference and device)."""

    def __init__(self, seed: int, patterns: tuple[str, ...]):
        self.case: Case = random_case(seed, len(patterns[0]), 11, 1, n_queries=10)
        c = self.case
        self.patterns = patterns
        self.templates = tuple(Template(p) for p in patterns)
        self.listed = ref.template_listed(c.qcodes, c.qoff, patterns[0], c.mask)
        self.tables = [ref.template_table(c.qcodes, self.listed, p) for p in patterns]

    def queries(self, backend, k: int = 0):
        c = self.case
        codes, off, mask = np.array(c.qcodes, np.uint8), np.array(c.qoff, np.int64), np.array(c.mask, np.uint8)
        words = template_word_codes(codes, off, self.templates[k], mask)
        return device_queries(backend, codes, off, seeding(words), lookup_of_words(words, self.templates[k].weight))

    def hits(self, k: int = 0) -> list[int]:
        return ref.template_scan(self.case.text, self.patterns[k], self.tables[k])

    def pairs(self, k: int = 0) -> list[tuple[int, int]]:
        return ref.template_pairs(self.case.text, self.hits(k), self.patterns[k], self.tables[k])


DISC = [pytest.param(seed, key, id=f"{key[0]}of{key[1]}-{key[2]}-{seed}")
        for seed, key in [(1, (11, 18, "coding")), (2, (12, 21, "optimal")), (3, (11, 16, "optimal")),
                          (4, (12, 18, "coding"))]]


@pytest.mark.parametrize("seed, key", DISC)
def test_template_scan_equals_the_reference(backend, seed, key):
    d = DiscCase(seed, (TEMPLATES[key],))
    hits = backend.to_host(scan_hits(backend, d.case.ref_text, d.queries(backend), key[0], 1,
                                     disc=DiscWords(d.templates[0]))).tolist()
    want = d.hits()
    assert len(want) > 20 and hits == want


def _two_hit_on(backend, d: DiscCase, pairs, window: int, other: Template | None) -> list[int]:
    qs = d.queries(backend)
    rt = d.case.ref_text
    dev = rt.on(backend)
    m = len(pairs)
    keep = backend.xp.zeros(m, dtype=np.uint8)
    q_pos = backend.asarray(np.array([p[0] for p in pairs], np.int32))
    s_pos = backend.asarray(np.array([p[1] for p in pairs], np.int64))
    backend.launch(kblast, "two_hit", m, dev.text, dev.nmask, np.int32(int(rt.has_amb)), np.int64(rt.n_words),
                   dev.contig_offsets, np.int64(len(rt.contig_names)), qs.codes, qs.offsets, np.int64(qs.n_seq),
                   qs.valid, q_pos, s_pos, np.int64(m), np.int32(d.templates[0].span), np.int64(d.templates[0].mask),
                   np.int64(other.mask if other else 0), np.int32(window), keep)
    return backend.to_host(keep).tolist()


@pytest.mark.parametrize("window", [40, 0, 25])
@pytest.mark.parametrize("seed, key", DISC[:3])
def test_two_hit_rule_equals_the_reference(backend, seed, key, window):
    d = DiscCase(seed, (TEMPLATES[key],))
    pairs = d.pairs()
    pairs = [pairs[i] for i in np.random.default_rng(seed).permutation(len(pairs))]  # any order
    keep = _two_hit_on(backend, d, pairs, window, None)
    want = ref.two_hit(d.case.text, d.case.contig_off, d.case.qcodes, d.case.qoff, d.listed, pairs, d.patterns, window)
    assert keep == want
    assert 0 < sum(want) < len(want) or window == 0


@pytest.mark.parametrize("seed", [1, 2])
def test_two_hit_rule_with_two_templates_equals_the_reference(backend, seed):
    """coding_and_optimal: a hit of either template is a first hit of the other's."""
    coding, optimal = TEMPLATES[(11, 18, "coding")], TEMPLATES[(11, 18, "optimal")]
    d = DiscCase(seed, (coding, optimal))
    pairs = d.pairs(0)
    keep = _two_hit_on(backend, d, pairs, 40, Template(optimal))
    want = ref.two_hit(d.case.text, d.case.contig_off, d.case.qcodes, d.case.qoff, d.listed, pairs, [coding, optimal], 40)
    alone = ref.two_hit(d.case.text, d.case.contig_off, d.case.qcodes, d.case.qoff, d.listed, pairs, [coding], 40)
    assert keep == want and want != alone


@pytest.mark.parametrize("seed, key", DISC)
def test_disc_seeds_are_the_two_hit_pairs(backend, seed, key):
    """find_seeds with a template: every lookup pair that passes the two-hit rule, once, as an empty
    run (the ungapped extension scores the word's bases)."""
    d = DiscCase(seed, (TEMPLATES[key],))
    seeds = find_seeds(backend, d.case.ref_text, d.queries(backend), key[0], 1, key[0],
                       disc=DiscWords(d.templates[0], None, 40))
    got = list(zip(*(backend.to_host(a).tolist() for a in (seeds.q, seeds.s, seeds.length))))
    pairs = d.pairs()
    keep = ref.two_hit(d.case.text, d.case.contig_off, d.case.qcodes, d.case.qoff, d.listed, pairs, d.patterns, 40)
    want = sorted((q, s, 0) for (q, s), k in zip(pairs, keep) if k)
    assert len(want) >= 5 and got == want


# --------------------------------------------------------------------------- options


def test_presets_are_blast_2_12s():
    short = BlastOptions.for_task("blastn-short")
    assert (short.word_size, short.reward, short.penalty, short.gap_open, short.gap_extend, short.evalue,
            short.dust, short.lut_word, short.stride, short.templates, short.two_hit_window) == \
        (7, 1, -3, 5, 2, 10.0, (20, 64, 1), 7, 1, (), 0)
    dc = BlastOptions.for_task("dc-megablast")
    assert (dc.word_size, dc.reward, dc.penalty, dc.gap_open, dc.gap_extend, dc.xdrop_gap, dc.template_type,
            dc.template_length, dc.lut_word, dc.stride, dc.two_hit_window) == \
        (11, 2, -3, 5, 2, 30.0, "coding", 18, 11, 1, 40)
    assert [t.pattern for t in dc.templates] == ["101101100101101101"]
    both = BlastOptions.for_task("dc-megablast", template_type="coding_and_optimal", template_length=21, word_size=12)
    assert [t.pattern for t in both.templates] == [TEMPLATES[(12, 21, "coding")], TEMPLATES[(12, 21, "optimal")]]
    assert repr(both) == ("BlastOptions(task='dc-megablast', word_size=12, template_type='coding_and_optimal', "
                          "template_length=21)")
    for bad, match in [({"word_size": 13}, "word size must be either 11 or 12"),
                       ({"template_length": 17}, "template_length must be 16, 18 or 21"),
                       ({"template_type": "wobble"}, "template_type must be one of")]:
        with pytest.raises(OptionError, match=match):
            BlastOptions.for_task("dc-megablast", **bad)
    with pytest.raises(OptionError, match="apply to task dc-megablast only"):
        BlastOptions.for_task("megablast", template_type="coding", template_length=18)
    run = parse_blastn(["-db", "d", "-task", "dc-megablast", "-template_type", "optimal", "-template_length", "21"])
    assert (run.options.template_type, run.options.template_length) == ("optimal", 21)


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def db_text():
    return ReferenceText.from_index(Index.build(DATA / "db.fa", wgram=4, device="cpu", parts="text"))


def _lines(hits, fmt: str = COMPARE_FIELDS) -> list[str]:
    out = io.StringIO()
    write_tabular(hits, out, fmt)
    return out.getvalue().splitlines()


_CPU: dict[tuple, list[str]] = {}


def _search(db_text, task: str, query: str, device="cpu", fmt: str = COMPARE_FIELDS, **options) -> list[str]:
    key = (task, query, fmt, tuple(sorted(options.items())))
    if device == "cpu" and key in _CPU:
        return _CPU[key]
    lines = _lines(BlastSearcher(db_text, task=task, device=device, **options).search(read_fastx(DATA / query)), fmt)
    if device == "cpu":
        _CPU[key] = lines
    return lines


@pytest.mark.parametrize("name", sorted(RUNS))
def test_recall_and_lines_against_blastn(db_text, name):
    """Against the stored blastn lines: every HSP with e <= 1e-10 found with its bit score and e-value,
    none extra; measured (2026-11-28) every line of blastn's byte-identical (977 and 28)."""
    task, _, query = RUNS[name]
    ours = _search(db_text, task, query)
    theirs = (DATA / f"{name}.tsv").read_text().splitlines()
    c = compare_reports(ours, theirs, max_evalue=1e-10)
    assert c["expected"] >= 8 and c["recall"] >= 0.99, c["missed"]
    assert c["bits_within_1"] == 1.0 and c["evalue_within_5pct"] == 1.0 and c["extra"] <= 0.02, c
    every = compare_reports(ours, theirs, max_evalue=10.0)
    assert every["recall"] >= 0.99, every["missed"]
    assert sum(x in set(ours) for x in theirs) >= 0.95 * len(theirs)


@needs_blast
@pytest.mark.parametrize("name", sorted(RUNS))
def test_fixtures_are_blastns(tmp_path, name):
    task, args, query = RUNS[name]
    run = subprocess.run(["blastn", "-task", task, *args, "-query", DATA / query, "-subject", DATA / "db.fa",
                          "-outfmt", COMPARE_FIELDS], capture_output=True, text=True, check=True)
    assert run.stdout == (DATA / f"{name}.tsv").read_text()


@needs_blast
@pytest.mark.parametrize("kind, length, word", VARIANTS, ids=[f"{k}-{n}-w{w}" for k, n, w in VARIANTS])
def test_templates_against_blastn(db_text, kind, length, word):
    run = subprocess.run(["blastn", "-task", "dc-megablast", "-template_type", kind, "-template_length", str(length),
                          "-word_size", str(word), "-query", DATA / "dc.fa", "-subject", DATA / "db.fa", "-outfmt",
                          COMPARE_FIELDS], capture_output=True, text=True, check=True)
    ours = _search(db_text, "dc-megablast", "dc.fa", template_type=kind, template_length=length, word_size=word)
    c = compare_reports(ours, run.stdout.splitlines(), max_evalue=1e-10)
    assert c["expected"] >= 20 and c["recall"] >= 0.99 and c["bits_within_1"] == 1.0 and c["extra"] <= 0.02, c


@needs_blast
@pytest.mark.parametrize("window", [10, 20, 25, 60, 200])
def test_window_size_against_blastn(db_text, window):
    """``-window_size`` (dc-megablast's two-hit window): blastn's HSPs (none when the window is shorter than
    the template: 10 < 18)."""
    run = subprocess.run(["blastn", "-task", "dc-megablast", "-window_size", str(window), "-query", DATA / "dc.fa",
                          "-subject", DATA / "db.fa", "-outfmt", COMPARE_FIELDS], capture_output=True, text=True,
                         check=True)
    run_args = ["-db", "d", "-task", "dc-megablast", "-window_size", str(window)]
    assert parse_blastn(run_args).options.window_size == window
    ours = _search(db_text, "dc-megablast", "dc.fa", window_size=window)
    theirs = run.stdout.splitlines()
    if window < 18:
        assert ours == theirs == []
        return
    c = compare_reports(ours, theirs, max_evalue=1e-10)
    assert c["expected"] >= 20 and c["recall"] >= 0.99 and c["bits_within_1"] == 1.0 and c["extra"] <= 0.02, c
    seeds = {}
    for w in (window, 40):  # the window reaches the two-hit rule: it changes the seeds extended
        searcher = BlastSearcher(db_text, task="dc-megablast", device="cpu", window_size=w)
        searcher.search(read_fastx(DATA / "dc.fa"))
        seeds[w] = searcher.counts["seeds"]
    assert (seeds[window] < seeds[40]) if window < 40 else (seeds[window] >= seeds[40]), seeds


@pytest.mark.gpu
@pytest.mark.parametrize("geometry", ["default", "tiny"])
@pytest.mark.parametrize("task, query, options", [
    ("blastn-short", "short.fa", {}), ("dc-megablast", "dc.fa", {}),
    ("dc-megablast", "dc.fa", {"template_type": "coding_and_optimal", "template_length": 21, "word_size": 12}),
    ("dc-megablast", "dc.fa", {"window_size": 25})])
def test_gpu_gives_the_cpus_bytes(db_text, task, query, options, geometry):
    device = GpuBackend(0) if geometry == "default" else GpuBackend(0, block_size=32, max_blocks=2)
    fmt = "6 std sstrand score btop"
    assert _search(db_text, task, query, device=device, fmt=fmt, **options) == \
        _search(db_text, task, query, fmt=fmt, **options)


def test_both_spellings_give_the_same_bytes(tmp_path):
    """``gseek blastn -task T``, ``gseek search --task T`` and ``gseek pipeline --task T`` (one engine)."""
    from click.testing import CliRunner

    from gseek.cli import cli
    from gseek.cli.blast_plus import blastn_main

    runner = CliRunner()
    got = runner.invoke(cli, ["--device", "cpu", "makeblastdb", "-in", str(DATA / "db.fa"), "-dbtype", "nucl",
                              "-out", str(tmp_path / "db")])
    assert got.exit_code == 0, got.output
    for task, query, extra_plus, extra_search in [
            ("dc-megablast", "dc.fa", ["-template_type", "optimal", "-template_length", "16"],
             ["--template-type", "optimal", "--template-length", "16"]),
            ("blastn-short", "short.fa", [], [])]:
        a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
        code = blastn_main(["-task", task, "-query", str(DATA / query), "-db", str(tmp_path / "db"), "-outfmt", "6",
                            "-out", str(a), "-device", "cpu", *extra_plus])
        assert code == 0
        got = runner.invoke(cli, ["--device", "cpu", "search", "--task", task, "-x", str(tmp_path / "db.gseek"),
                                  "-q", str(DATA / query), "-o", str(b), *extra_search])
        assert got.exit_code == 0, got.output
        assert a.read_bytes() == b.read_bytes() and a.stat().st_size > 500
        (tmp_path / "list.txt").write_text(f"{DATA / query}\tq.tsv\n")
        got = runner.invoke(cli, ["--device", "cpu", "pipeline", "--task", task, "--queries", str(tmp_path / "list.txt"),
                                  "-x", str(tmp_path / "db.gseek"), "--outdir", str(tmp_path / f"out-{task}"),
                                  *extra_search])
        assert got.exit_code == 0, got.output
        assert (tmp_path / f"out-{task}" / "q.tsv").read_bytes() == a.read_bytes()

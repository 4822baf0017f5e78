#!/usr/bin/env python3
"""Per-stage profile of the BLAST-style search in steady state: GPU kernel time against host time.

    python benchmarks/tools/profile_blast_stages.py [--device gpu|cpu] [--work DIR] [--out FILE.json]
        [--sets megablast-10kb,megablast-30kb,blastn-10kb] [--db-bases 75000000] [--contigs 12] [--scale 1]
        [--repeat 3] [--profiled 1] [--threads N] [--cpu-check SETS] [--tag NAME]
        [--db FASTA] [--queries NAME=TASK:FASTA ...]

Issue 40's sets: a random database (``--contigs`` contigs, ``--db-bases`` in all; the bytes of
``benchmarks/archive/gpu_ab_megablast.sh``'s ``db.fa``), 100 x 10 kb queries (the ``10kb`` preset, seed 12)
and 156 x 30 kb "contigs" (seed 11) simulated from it (``--scale`` multiplies the query counts: tiny
runs on the VM); ``blastn-30kb`` runs the blastn task on the 30 kb set. ``--db`` takes a database FASTA of
one's own instead (its index ``FASTA``'s stem ``.gseek`` beside it, built unless there; e.g. ``run.py blast``'s
``db.fa``), ``--queries NAME=TASK:FASTA`` a query set of one's own (then ``--sets`` defaults to those). For each
set one searcher is built and kept warm (its first search compiles), then:

* ``--repeat`` steady searches, each followed by its ``-outfmt 6`` text: median and spread of the
  search and of the text, ``nvidia-smi``'s utilization sampled every 100 ms during the searches;
* on a GPU with PyTorch importable (its profiler reads CUPTI: every kernel and copy of the process,
  CuPy's and gseek's), one more search under the profiler: kernel time over the search's wall time;
* ``--profiled`` searches with every stage bound and inner pass wrapped (the device synchronised at
  each bound, so the kernels a pass queued count in it; ``GSEEK_BLAST_TIMING`` on): per stage (the
  searcher's own ``_Clock`` laps, then the report) and per innermost pass, the wall time, the GPU's
  kernel and copy time inside it (CUPTI; "-" without it) and the time the GPU sat idle (wall minus
  kernels and copies: the host's part). Each ``kernel NAME`` pass is one launch of gseek's own
  kernels, its wall time the kernel's plus the launch and the wait.

The rows' SHA-256 per set goes in the JSON (``--out``): an A/B compares them (``--cpu-check``: those
sets once more on the CPU backend, the digest compared). Reaches into private stages on purpose
(``benchmarks/tools/README.md``): when one is renamed, update :data:`REGIONS`.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

#: (module, attribute, region name) wrapped in the profiled searches; a class attribute as "Class.method".
#: A name ending in ":" is completed by the call's ``traceback`` keyword (score only / with trace-back).
REGIONS = [
    ("gseek.blast.searcher", "BlastSearcher.prepare", "query side (strands, DUST, lookup table)"),
    ("gseek.blast.searcher", "dust_mask", "DUST (dust_mask)"),
    ("gseek.blast.searcher", "query_strands", "strands (query_strands)"),
    ("gseek.blast.searcher", "word_codes", "words on the host (word_codes)"),
    ("gseek.blast.searcher", "lookup_of_words", "table on the host (lookup_of_words)"),
    ("gseek.blast.searcher", "seeding", "seeding flags on the host (seeding)"),
    ("gseek.blast.searcher", "build_on", "words and table on the device (build_on)"),
    ("gseek.blast.searcher", "device_queries", "upload queries and table"),
    ("gseek.blast.seeds", "scan_hits", "scan (PV, sort of hits)"),
    ("gseek.blast.seeds", "ungapped_extend", "ungapped extension"),
    ("gseek.blast.seeds", "_passing", "trigger filter"),
    ("gseek.blast.seeds", "_first_of_extents", "seed selection (first of extents, rank order, to host)"),
    ("gseek.blast.seeds", "_extent_firsts", "seed selection's sorts (_extent_firsts)"),
    ("gseek.blast.gapped", "_select_round", "round selection (_select_round)"),
    ("gseek.blast.gapped", "select_round", "round selection, isolated seeds on the device (select_round)"),
    ("gseek.blast.gapped", "select_round_parts", "round selection in parts of keys (select_round_parts)"),
    ("gseek.blast.device_rounds", "_select_round", "round selection (_select_round)"),
    ("gseek.blast.device_rounds", "select_round_parts", "round selection in parts of keys (select_round_parts)"),
    ("gseek.blast.device_gapped", "select_round_parts", "round selection in parts of keys (select_round_parts)"),
    ("gseek.blast.device_rounds", "isolated", "isolated seeds (isolated)"),
    ("gseek.blast.gapped", "score_only_rounds", "score-only rounds on the device (score_only_rounds)"),
    ("gseek.blast.device_gapped", "_Columns", "candidates' columns uploaded (_Columns)"),
    ("gseek.blast.device_gapped", "_select_on", "round selection on the device (_select_on)"),
    ("gseek.blast.device_gapped", "isolated", "isolated seeds (isolated)"),
    ("gseek.blast.device_gapped", "_select_round", "round selection (_select_round)"),
    ("gseek.blast.device_gapped", "_chunk", "extension chunk on the device: windows, launch (_chunk)"),
    ("gseek.dp.xdrop", "xdrop_gapped_scores", "X-drop DP: score only, on the device"),
    ("gseek.blast.device_gapped", "_outside_on", "seeds on a found path, on the device (_outside_on)"),
    ("gseek.blast.gapped", "found_block", "found HSPs sorted on the device (found_block)"),
    ("gseek.blast.gapped", "longest_first", "launch order on the device (longest_first)"),
    ("gseek.blast.gapped", "_ahead", "seeds ahead of their round (_ahead)"),
    ("gseek.blast.gapped", "_found_block", "found HSPs sorted (_found_block)"),
    ("gseek.blast.gapped", "_outside", "seeds on a found path (_outside)"),
    ("gseek.blast.gapped", "GappedPasses._prelim", "score-only launch set-up (_prelim)"),
    ("gseek.blast.gapped", "GappedPasses._extend_chunk", "extension chunk: windows, results (_extend_chunk):"),
    ("gseek.blast.gapped", "unpack_ranges", "subject windows (unpack_ranges)"),
    ("gseek.blast.gapped", "greedy_gapped", "greedy DP:"),
    ("gseek.dp.xdrop", "xdrop_gapped", "X-drop DP:"),  # (gapped imports it where the X-drop pass runs)
    ("gseek.dp.greedy", "_rescored", "greedy re-scoring and CIGAR runs (_rescored)"),
    ("gseek.blast.gapped", "GappedPasses._traceback_starts", "trace-back starts"),
    ("gseek.blast.gapped", "GappedPasses._traceback", "trace-back rounds (_traceback)"),
    ("gseek.blast.gapped", "_chain_extent", "chain extents (_chain_extent)"),
    ("gseek.blast.gapped", "_contained", "inside a traced-back HSP (_contained)"),
    ("gseek.blast.gapped", "_merge_extensions", "merge of launches (_merge_extensions)"),
    ("gseek.blast.gapped", "_gather", "CIGAR gathers (_gather)"),
    ("gseek.blast.searcher", "_gather", "CIGAR gathers (_gather)"),
    ("gseek.dp.runs", "LazyRuns.gather", "CIGAR runs gathered (LazyRuns.gather)"),
    ("gseek.blast.searcher", "identities_as_given", "identities as given"),
    ("gseek.blast.searcher", "_purge", "purge (_purge)"),
    ("gseek.blast.searcher", "_report_order", "report order (_report_order)"),
    ("gseek.blast.searcher", "BlastSearcher._report", "statistics (_report)"),
]
#: Query sets: name -> (task, query file stem).
SETS = {"megablast-10kb": ("megablast", "q10k"), "megablast-30kb": ("megablast", "q30k"),
        "blastn-10kb": ("blastn", "q10k"), "blastn-30kb": ("blastn", "q30k")}
#: The sets run when neither ``--sets`` nor ``--queries`` is given.
DEFAULT_SETS = "megablast-10kb,megablast-30kb,blastn-10kb"
REPORT = "report (-outfmt 6 text)"


class Timeline:
    """Enter/exit marks of regions and the searcher's stage laps, on ``perf_counter_ns``."""

    def __init__(self, sync) -> None:
        self.sync, self.events, self.on = sync, [], False

    def mark(self, kind: str, name: str) -> None:
        if self.on:
            self.events.append((time.perf_counter_ns(), kind, name))

    @contextlib.contextmanager
    def region(self, name: str):
        if not self.on:
            yield
            return
        self.sync()
        self.mark("enter", name)
        try:
            yield
        finally:
            self.sync()
            self.mark("exit", name)

    def segments(self) -> list[tuple[int, int, str, str]]:
        """(start, end, stage, innermost region) of every stretch between two marks."""
        laps = [(t, name) for t, kind, name in self.events if kind == "lap"]
        out, stack, last = [], [], None
        for t, kind, name in self.events:
            if last is not None and t > last and stack:
                out.append([last, t, None, stack[-1]])
            if kind == "enter":
                stack.append(name)
            elif kind == "exit":
                stack.pop()
            last = t
        li = 0
        for seg in out:  # the stage: the first lap at or after the stretch's end (the report's own)
            while li < len(laps) and laps[li][0] < seg[1]:
                li += 1
            if seg[3] == REPORT:
                seg[2] = REPORT
            elif li < len(laps):
                seg[2] = laps[li][1]
            else:
                seg[2] = laps[-1][1] if laps else "search"
        return [tuple(s) for s in out]


def _patch(timeline: Timeline, backend) -> contextlib.ExitStack:
    """Every region of :data:`REGIONS`, the searcher's ``_Clock.lap`` and its backend's launches wrapped."""
    import importlib

    import gseek.blast.gapped as G

    stack = contextlib.ExitStack()

    def put(owner, attr, value):
        old = owner.__dict__[attr] if attr in owner.__dict__ else getattr(owner, attr)
        setattr(owner, attr, value)
        stack.callback(setattr, owner, attr, old)

    for module, attr, name in REGIONS:
        try:
            owner = importlib.import_module(module)
        except ImportError:  # a module this tree does not have (an A/B's other tree)
            continue
        if "." in attr:
            cls, attr = attr.split(".")
            owner = getattr(owner, cls)
        fn = getattr(owner, attr, None)
        if fn is None:  # a pass this tree does not have (an A/B's other tree)
            continue

        def wrapped(*a, _fn=fn, _name=name, **k):
            label = _name
            if _name.endswith(":"):
                tb = k["traceback"] if "traceback" in k else a[9]  # _extend_chunk's positional one
                label = _name + (" with trace-back" if tb else " score only")
            with timeline.region(label):
                return _fn(*a, **k)

        put(owner, attr, wrapped)
    lap = G._Clock.lap

    def lapped(self, stage):
        lap(self, stage)
        timeline.mark("lap", stage)

    put(G._Clock, "lap", lapped)
    launch = backend.launch

    def launched(family, kernel, n_items, *args):
        with timeline.region(f"kernel {kernel}"):
            return launch(family, kernel, n_items, *args)

    backend.launch = launched
    stack.callback(backend.__dict__.pop, "launch", None)
    return stack


class Sampler:
    """``nvidia-smi``'s GPU utilization every 100 ms in a child process (None where there is none)."""

    def __init__(self, device: int) -> None:
        self.samples: list[tuple[float, float]] = []
        try:
            self.proc = subprocess.Popen(
                ["nvidia-smi", "-i", str(device), "--query-gpu=timestamp,utilization.gpu",
                 "--format=csv,noheader,nounits", "-lms", "100"], stdout=subprocess.PIPE, text=True,
                stderr=subprocess.DEVNULL)
        except OSError:
            self.proc = None
            return
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                stamp, util = line.strip().split(", ")
                when = datetime.datetime.strptime(stamp, "%Y/%m/%d %H:%M:%S.%f").timestamp()
                self.samples.append((when, float(util)))
            except ValueError:
                continue

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait()
            self.reader.join(2)

    def mean(self, windows: list[tuple[float, float]]) -> float | None:
        inside = [u for t, u in self.samples if any(a <= t <= b for a, b in windows)]
        return statistics.fmean(inside) if inside else None


class Cupti:
    """Kernel and copy intervals of the process through PyTorch's profiler (CUPTI), on ``perf_counter_ns``."""

    def __init__(self) -> None:
        import torch  # noqa: F401  (fails where there is none: no kernel times)
        from torch.profiler import ProfilerActivity, profile, record_function

        self.profile, self.activities, self.record = profile, [ProfilerActivity.CPU, ProfilerActivity.CUDA], \
            record_function

    @contextlib.contextmanager
    def collect(self, into: dict):
        with self.profile(activities=self.activities) as prof:
            with self.record("gseek_anchor_0"):
                a0 = time.perf_counter_ns()
            yield
            with self.record("gseek_anchor_1"):
                a1 = time.perf_counter_ns()
        try:
            self._read(prof, a0, a1, into)
        except Exception as exc:  # noqa: BLE001 - a trace this tool cannot read: wall times only
            into.clear()
            into["error"] = repr(exc)

    @staticmethod
    def _read(prof, a0: int, a1: int, into: dict) -> None:
        path = Path(tempfile.mkstemp(suffix=".json")[1])
        prof.export_chrome_trace(str(path))
        trace = json.loads(path.read_text())
        path.unlink()
        events = trace["traceEvents"] if isinstance(trace, dict) else trace
        anchors = {e["name"]: float(e["ts"]) for e in events
                   if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("gseek_anchor")}
        off0 = a0 - anchors["gseek_anchor_0"] * 1000
        off1 = a1 - anchors["gseek_anchor_1"] * 1000
        into["clock_skew_us"] = (off1 - off0) / 1000
        for kind, cats in (("kernels", ("kernel",)), ("copies", ("gpu_memcpy", "gpu_memset"))):
            into[kind] = _union(sorted((int(float(e["ts"]) * 1000 + off0), int((float(e["ts"]) + float(e["dur"]))
                                        * 1000 + off0)) for e in events if e.get("cat") in cats and e.get("dur")))
        into["kernel_count"] = sum(1 for e in events if e.get("cat") == "kernel")


def _union(iv: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in iv:
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [tuple(x) for x in out]


def _overlap(iv: list[tuple[int, int]], a: int, b: int) -> int:
    """Nanoseconds of the sorted disjoint intervals ``iv`` inside ``[a, b)``."""
    import bisect

    i = max(0, bisect.bisect_right(iv, (a, a)) - 1)
    total = 0
    while i < len(iv) and iv[i][0] < b:
        total += max(0, min(b, iv[i][1]) - max(a, iv[i][0]))
        i += 1
    return total


def make_data(work: Path, db_bases: int, contigs: int, scale: float, db: Path | None = None,
              stems: tuple[str, ...] = ("q10k", "q30k")) -> dict[str, Path]:
    """The random database (``gpu_ab_megablast.sh``'s bytes for 12 x 6.25 Mbp), or ``db`` where given, and the
    query sets of ``stems`` simulated from it, each made once."""
    import numpy as np

    from gseek.datasets import simulate

    work.mkdir(parents=True, exist_ok=True)
    db = db or work / f"db-{db_bases}-{contigs}.fa"
    if not db.exists():
        rng = np.random.default_rng(5)
        part = db.with_suffix(".part")
        with open(part, "w") as f:
            for i in range(contigs):
                s = rng.choice(np.frombuffer(b"ACGT", np.uint8), db_bases // contigs).tobytes().decode()
                f.write(f">c{i}\n" + "\n".join(s[j:j + 80] for j in range(0, len(s), 80)) + "\n")
        part.rename(db)
    files = {"db": db}
    for stem, n, length, seed in (("q10k", 100, 10_000, 12), ("q30k", 156, 30_000, 11)):
        if stem not in stems:
            continue
        n = max(1, round(n * scale))
        path = work / f"{stem}-{db.stem}-{n}.fa"
        if not path.exists():
            simulate.blast_queries(str(db), n, length, seed).write(str(path))
        files[stem] = path
    return files


def run_set(name: str, index: Path, files: dict, args, cupti: Cupti | None) -> dict:
    from gseek.blast.report import write_tabular
    from gseek.blast.searcher import BlastSearcher
    from gseek.seqio import read_fastx

    task, stem = SETS[name]
    batch = read_fastx(str(files[stem]))
    searcher = BlastSearcher(str(index), task=task, device=args.device, threads=args.threads)
    backend = searcher.backend

    def text(hits) -> str:
        out = io.StringIO()
        write_tabular(hits, out)
        return out.getvalue()

    rec = {"set": name, "task": task, "queries": len(batch), "query_bases": int(batch.offsets[-1]),
           "backend": backend.describe()}
    t = time.perf_counter()
    first = text(searcher.search(batch))
    rec["first_s"] = time.perf_counter() - t
    rec["hsps"], rec["sha256"] = first.count("\n"), hashlib.sha256(first.encode()).hexdigest()
    sampler = Sampler(getattr(backend, "device_id", 0)) if backend.name == "gpu" else None
    searches, reports, windows, same = [], [], [], True
    for _ in range(args.repeat):
        backend.synchronize()
        a, t = time.time(), time.perf_counter()
        hits = searcher.search(batch)
        backend.synchronize()
        t1 = time.perf_counter()
        windows.append((a, time.time()))
        same &= text(hits) == first
        searches.append(t1 - t)
        reports.append(time.perf_counter() - t1)
    if sampler is not None:
        time.sleep(0.3)
        sampler.stop()
        rec["nvidia_smi_util"] = sampler.mean(windows)
        rec["nvidia_smi_samples"] = sum(1 for w, _ in sampler.samples if any(a <= w <= b for a, b in windows))
    rec.update(search_s=searches, report_s=reports, same_rows=same)
    if cupti is not None:  # one plain search under CUPTI: the GPU's busy share
        got: dict = {}
        with cupti.collect(got):
            t0 = time.perf_counter_ns()
            searcher.search(batch)
            backend.synchronize()
            t1 = time.perf_counter_ns()
        if "error" in got:
            print(f"CUPTI trace not read: {got['error']}", file=sys.stderr)
            rec["cupti_error"] = got["error"]
        else:
            rec["cupti_search_s"] = (t1 - t0) / 1e9
            rec["cupti_kernel_s"] = _overlap(got["kernels"], t0, t1) / 1e9
            rec["cupti_copy_s"] = _overlap(got["copies"], t0, t1) / 1e9
            rec["cupti_kernels"] = got["kernel_count"]
    # the profiled searches: stages and passes
    rows: dict[tuple[str, str], list[float]] = {}
    walls = []
    os.environ["GSEEK_BLAST_TIMING"] = "1"
    try:
        for _ in range(args.profiled):
            timeline = Timeline(backend.synchronize)
            got = {}
            with _patch(timeline, backend), (cupti.collect(got) if cupti else contextlib.nullcontext()):
                timeline.on = True
                t0 = time.perf_counter_ns()
                with timeline.region("search (other)"):
                    hits = searcher.search(batch)
                with timeline.region(REPORT):
                    same &= text(hits) == first
                walls.append((time.perf_counter_ns() - t0) / 1e9)
                timeline.on = False
            if "error" in got:
                rec["cupti_error"] = got.pop("error")
            for a, b, stage, region in timeline.segments():
                k = _overlap(got["kernels"], a, b) if got else 0
                c = _overlap(got["copies"], a, b) if got else 0
                acc = rows.setdefault((stage, region), [0.0, 0.0, 0.0, 0.0])
                acc[0] += (b - a) / 1e6 / args.profiled
                acc[1] += k / 1e6 / args.profiled
                acc[2] += c / 1e6 / args.profiled
                acc[3] += 1 / args.profiled
            if got:
                rec["clock_skew_us"] = got["clock_skew_us"]
    finally:
        os.environ.pop("GSEEK_BLAST_TIMING", None)
    rec["same_rows"] = same
    rec["profiled_s"] = walls
    rec["cupti"] = cupti is not None and "cupti_error" not in rec
    rec["regions"] = [[s, r, *v] for (s, r), v in rows.items()]
    rec["counts"] = dict(searcher.counts)
    if name in (args.cpu_check or "").split(","):
        cpu = BlastSearcher(str(index), task=task, device="cpu", threads=args.threads)
        t = time.perf_counter()
        rec["cpu_sha256_same"] = hashlib.sha256(text(cpu.search(batch)).encode()).hexdigest() == rec["sha256"]
        rec["cpu_s"] = time.perf_counter() - t
    return rec


def _ms(x: float) -> str:
    return f"{x:,.1f}"


def print_set(rec: dict, out=sys.stdout) -> None:
    s, r = rec["search_s"], rec["report_s"]
    med = statistics.median(s) if s else float("nan")
    line = (f"\n### {rec['set']} ({rec['task']}, {rec['queries']} queries, {rec['query_bases']:,} bases) on "
            f"{rec['backend']}: {rec['hsps']:,} HSPs, rows {rec['sha256'][:12]} (same every search: "
            f"{rec['same_rows']})\n\nsteady search {med:.3f} s (median of {len(s)}, {min(s):.3f}-{max(s):.3f}), "
            f"text {statistics.median(r):.3f} s; first search {rec['first_s']:.2f} s")
    if rec.get("nvidia_smi_util") is not None:
        line += f"; nvidia-smi util {rec['nvidia_smi_util']:.0f} % ({rec['nvidia_smi_samples']} samples)"
    if "cupti_search_s" in rec:
        line += (f"; under CUPTI {rec['cupti_search_s']:.3f} s, kernels {rec['cupti_kernel_s']:.3f} s "
                 f"(**{100 * rec['cupti_kernel_s'] / rec['cupti_search_s']:.0f} % busy**), copies "
                 f"{rec['cupti_copy_s']:.3f} s, {rec['cupti_kernels']:,} kernels")
    if "cpu_sha256_same" in rec:
        line += f"; CPU backend rows identical: {rec['cpu_sha256_same']} ({rec['cpu_s']:.1f} s)"
    if rec["profiled_s"]:  # (--profiled 0: none)
        line += f"; profiled (synchronised) {statistics.fmean(rec['profiled_s']):.3f} s"
    print(line + "\n", file=out)
    regions = rec["regions"]
    have = rec["cupti"]
    stages: dict[str, list[float]] = {}
    for stage, _, w, k, c, _ in regions:
        acc = stages.setdefault(stage, [0.0, 0.0, 0.0])
        acc[0] += w
        acc[1] += k
        acc[2] += c
    total = sum(v[0] for v in stages.values()) or 1.0
    print("| stage | wall ms | share | GPU kernels ms | copies ms | GPU idle (host) ms | busy |", file=out)
    print("|---|--:|--:|--:|--:|--:|--:|", file=out)
    for stage, (w, k, c) in stages.items():
        kk = _ms(k) if have else "-"
        cc = _ms(c) if have else "-"
        idle = _ms(w - k - c) if have else "-"
        busy = f"{100 * k / w:.0f} %" if have and w else "-"
        print(f"| {stage} | {_ms(w)} | {100 * w / total:.0f} % | {kk} | {cc} | {idle} | {busy} |", file=out)
    print("\n| stage | innermost pass | wall ms | GPU kernels ms | GPU idle (host) ms | entries |", file=out)
    print("|---|---|--:|--:|--:|--:|", file=out)
    for stage, region, w, k, c, n in sorted(regions, key=lambda x: -x[2]):
        if w < 0.01 * total:
            continue
        print(f"| {stage} | {region} | {_ms(w)} | {_ms(k) if have else '-'} | "
              f"{_ms(w - k - c) if have else '-'} | {n:.0f} |", file=out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "gseek-stages"))
    ap.add_argument("--out", default=None, help="JSON of every figure")
    ap.add_argument("--sets", default=None, help=f"of {', '.join(SETS)} and --queries' names "
                                                 f"(default: --queries' names, else {DEFAULT_SETS})")
    ap.add_argument("--db", default=None, help="a database FASTA instead of the random one")
    ap.add_argument("--queries", action="append", default=[], metavar="NAME=TASK:FASTA",
                    help="a query set of one's own (repeatable)")
    ap.add_argument("--db-bases", type=int, default=75_000_000)
    ap.add_argument("--contigs", type=int, default=12)
    ap.add_argument("--scale", type=float, default=1.0, help="query counts multiplied by this")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profiled", type=int, default=1)
    ap.add_argument("--cpu-check", default="", help="sets run once more on the CPU backend (rows compared)")
    ap.add_argument("--tag", default="", help="a name for this tree in the output (A/B)")
    ap.add_argument("--no-cupti", action="store_true")
    args = ap.parse_args()
    from gseek.index import Index

    for spec in args.queries:  # NAME=TASK:FASTA
        name, _, rest = spec.partition("=")
        task, _, fasta = rest.partition(":")
        if not (name and task and fasta):
            ap.error(f"--queries {spec}: give NAME=TASK:FASTA")
        SETS[name] = (task, f"own:{name}")
    args.sets = args.sets or ",".join(s.partition("=")[0] for s in args.queries) or DEFAULT_SETS
    unknown = [n for n in args.sets.split(",") if n not in SETS]
    if unknown:
        ap.error(f"--sets: unknown {', '.join(unknown)} (known: {', '.join(SETS)})")
    if args.db and not Path(args.db).is_file():
        ap.error(f"--db {args.db}: no such file")
    t = time.perf_counter()
    stems = tuple({SETS[n][1] for n in args.sets.split(",")})
    files = make_data(Path(args.work), args.db_bases, args.contigs, args.scale,
                      Path(args.db) if args.db else None, stems)
    files.update({f"own:{s.partition('=')[0]}": Path(s.partition(":")[2]) for s in args.queries})
    data_s = time.perf_counter() - t
    cupti = None
    if args.device.startswith("gpu") and not args.no_cupti:
        try:
            cupti = Cupti()
        except Exception as exc:  # noqa: BLE001 - no PyTorch: wall times only
            print(f"no CUPTI through PyTorch ({exc}): kernel times left out", file=sys.stderr)
    t = time.perf_counter()
    index = files["db"].with_suffix(".gseek")  # one text index, kept (the format does not change in an A/B)
    if not index.exists():
        Index.build(str(files["db"]), parts="text", device="cpu").save(files["db"].with_suffix(".part.gseek"))
        files["db"].with_suffix(".part.gseek").rename(index)
    index_s = time.perf_counter() - t
    head = {"tag": args.tag, "device": args.device, "db": files["db"].name, "data_s": data_s, "index_s": index_s,
            "argv": sys.argv[1:], "sets": []}
    print(f"# profile_blast_stages {args.tag}: data {data_s:.1f} s, index {index_s:.1f} s, db {files['db'].name}")
    for name in args.sets.split(","):
        rec = run_set(name, index, files, args, cupti)
        head["sets"].append(rec)
        print_set(rec)
        if args.out:
            Path(args.out).write_text(json.dumps(head, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

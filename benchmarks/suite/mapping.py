"""`map`, `map-pairs`: k-mismatch mapping as whole commands against bowtie and bwa aln (issues 3, 18)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from . import harness
from .harness import markdown_table, ratio
from .registry import benchmark, Report
from .common import add_read_options, text_handle


def _map_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("fasta", nargs="+", help="reference FASTA files (plain or .gz)")
    p.add_argument("--reads", type=int, default=1_000_000, help="simulated reads per reference (default 1M)")
    add_read_options(p)
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="threads for peers and the CPU backend")
    p.add_argument("--devices", default="gpu,cpu", help="gseek backends to time (default gpu,cpu)")
    p.add_argument("--peers", default="bowtie-best,bowtie-all,bwa-aln",
                   help="peers to run: bowtie-best, bowtie-all, bwa-aln (default all)")
    p.add_argument("--all", action="store_true", help="also time gseek --all")


def _sam_stats(path: Path) -> dict:
    """Mapped reads and records of a SAM file (samtools-free, for agreement checks)."""
    mapped, records, reads = set(), 0, set()
    with open(path) as fh:
        for line in fh:
            if line.startswith("@"):
                continue
            name, flag = line.split("\t", 2)[:2]
            records += 1
            reads.add(name)
            if not int(flag) & 4:
                mapped.add(name)
    return {"records": records, "reads": len(reads), "mapped": len(mapped)}


@benchmark("map", "k-mismatch read mapping, whole command (FASTQ in, SAM out): gseek vs bowtie vs bwa aln",
           _map_options)
def bench_map(args: argparse.Namespace) -> Report:
    import shutil

    from gseek.datasets import kmismatch_reads

    with harness.scratch_dir("gseek-map-bench-") as work:
        env = harness.peer_env_or_host("map", "gseek only")
        have = lambda tool: shutil.which(tool, path=env.get("PATH")) is not None  # noqa: E731
        k, T = args.mismatches, str(args.threads)
        results, rows, data = [], [], {"references": []}
        for fasta in args.fasta:
            name = Path(fasta).name.removesuffix(".gz")
            plain = work / (name + ".plain.fa")
            with text_handle(fasta) as src, open(plain, "w") as dst:
                shutil.copyfileobj(src, dst)
            t0 = time.perf_counter()
            sim = kmismatch_reads(str(plain), args.reads, args.length, k, seed=7, both_strands=True)
            reads = work / f"{name}.reads.fq"
            sim.write(reads)
            print(f"  map: {args.reads:,} reads simulated in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            data["references"].append({"path": fasta, "reads": args.reads, "length": args.length, "k": k})
            runs = []
            harness.run_process([sys.executable, "-P", "-m", "gseek", "--quiet", "index", str(plain),
                                 "-o", str(work / name)], env=env)
            for device in [d.strip() for d in args.devices.split(",") if d.strip()]:
                if device == "gpu" and harness.gpu_name() == "none":
                    continue
                base = [sys.executable, "-P", "-m", "gseek", "--quiet", "--device", device, "-p", T, "search",
                        "-x", str(work / name), "-q", str(reads), "-v", str(k)]
                runs.append((f"gseek --device {device} -v {k}", base + ["-o", str(work / f"g-{device}.sam")],
                             work / f"g-{device}.sam"))
                if args.all:
                    runs.append((f"gseek --device {device} -v {k} --all",
                                 base + ["--all", "-o", str(work / f"ga-{device}.sam")], work / f"ga-{device}.sam"))
            peers = {p.strip() for p in args.peers.split(",") if p.strip()}
            if have("bowtie") and peers & {"bowtie-best", "bowtie-all"}:
                harness.run_process(["bowtie-build", "--threads", T, "-q", str(plain), str(work / "bt")], env=env)
                if "bowtie-best" in peers:
                    runs.append((f"bowtie -p {T} -v {k} --best", ["bowtie", "-p", T, "-v", str(k), "--best", "-S",
                                 str(work / "bt"), str(reads), str(work / "bt.sam")], work / "bt.sam"))
                if "bowtie-all" in peers:
                    runs.append((f"bowtie -p {T} -v {k} -a", ["bowtie", "-p", T, "-v", str(k), "-a", "-S",
                                 str(work / "bt"), str(reads), str(work / "bta.sam")], work / "bta.sam"))
            if have("bwa") and "bwa-aln" in peers:
                harness.run_process(["bwa", "index", "-p", str(work / "bwa"), str(plain)], env=env)
                runs.append((f"bwa aln -t {T} -n {k} -o 0 + samse", ["bash", "-c",
                             f"bwa aln -t {T} -n {k} -o 0 {work / 'bwa'} {reads} > {work / 'r.sai'} && "
                             f"bwa samse {work / 'bwa'} {work / 'r.sai'} {reads} > {work / 'bwa.sam'}"],
                             work / "bwa.sam"))
            base_time = None
            for label, cmd, out in runs:
                print(f"  map: {label} on {name} ...", file=sys.stderr, flush=True)
                proc = harness.run_process(cmd, env=env)
                stats = _sam_stats(out)
                out.unlink()
                if label.startswith("bowtie") and "--best" in label:
                    base_time = proc.seconds
                results.append({"tool": label, "reference": fasta, "seconds": proc.seconds, "cpu_s": proc.cpu_s,
                                "peak_rss_mib": proc.peak_rss_mib, **stats})
            for r in results[-len(runs):]:
                rows.append([r["tool"], name, f"{r['seconds']:.2f}", f"{r['cpu_s']:.1f}", f"{r['peak_rss_mib']:.0f}",
                             f"{args.reads / r['seconds'] / 1e6:.3f}", f"{r['mapped']:,}", f"{r['records']:,}",
                             ratio(base_time, r["seconds"]) if base_time else "-"])
            (work / (name + ".reads.fq")).unlink()
        table = markdown_table(
            ["command", "reference", "wall s", "CPU s", "peak RSS MiB", "M reads/s", "mapped reads", "SAM records",
             "vs bowtie --best"], rows, align="llrrrrrrr")
        notes = [
            f"{args.reads:,} reads of {args.length} bp per reference simulated with "
            f"gseek.datasets.simulate.kmismatch_reads (seed 7, both strands, 0..{k} substitutions), FASTQ in, "
            "SAM out, whole command wall time from process start (imports, index load, kernel compile included); "
            "indexes built beforehand; each command run once",
            "mapped reads are counted from each SAM; gseek and bowtie report every read with a placement of "
            f"<= {k} mismatches (complete), bwa aln -n {k} -o 0 is a different (seeded, quality-aware) search",
        ]
        data["summary"] = ", ".join(f"{Path(r['path']).name}: {r['reads']:,} × {r['length']} bp, k={r['k']}"
                                    for r in data["references"])
        return Report(title="k-mismatch mapping", data=data, table=table, notes=notes, results=results)


# ----------------------------------------------------------------- map-pairs


def _pairs_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("fasta", nargs="+", help="reference FASTA files (plain or .gz)")
    p.add_argument("--pairs", type=int, default=5_000_000, help="simulated pairs per reference (default 5M)")
    p.add_argument("--length", type=int, default=100, help="mate length (default 100)")
    p.add_argument("-v", "--mismatches", type=int, default=3, help="k (default 3); each mate carries 0..k substitutions")
    p.add_argument("-I", "--minins", type=int, default=0, help="shortest concordant fragment, both tools (default 0)")
    p.add_argument("-X", "--maxins", type=int, default=500, help="longest concordant fragment, both tools (default 500)")
    p.add_argument("--fragment", default="250,30", help="fragment length mean,sd (clipped to -I..-X; default 250,30)")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="-p of both tools")
    p.add_argument("--devices", default="gpu", help="gseek backends to time (default gpu)")
    p.add_argument("--warm", type=int, default=1, help="further gseek runs after the first (default 1)")
    p.add_argument("--gzip", action="store_true", help="write the FASTQ gzipped (level 1)")
    p.add_argument("--no-peers", action="store_true", help="skip bowtie")
    p.add_argument("--best", action="store_true", help="bowtie --best (default: bowtie's default, any valid pair)")


def _concordant_records(spec: tuple[str, int, int, dict[bytes, int]]):
    """The primary records with FLAG 0x2 among the lines of a SAM that start in bytes [lo, hi).

    Returns (records seen, int64 array of rows: pair, mate, contig, 0-based
    pos, reverse, NM). Pair names are ``pN`` (a ``/1``, ``/2`` is dropped).
    """
    import numpy as np

    path, lo, hi, ctg_id = spec
    rows, records = [], 0
    with open(path, "rb") as fh:
        at = lo
        if lo > 0:  # the line that holds byte lo-1 belongs to the chunk before
            fh.seek(lo - 1)
            at = lo - 1 + len(fh.readline())
        while at < hi:
            line = fh.readline()
            if not line:
                break
            at += len(line)
            if line[:1] == b"@":
                continue
            records += 1
            qname, flag, rname, pos, _ = line.split(b"\t", 4)
            flag = int(flag)
            if flag & 0x102 != 0x2:
                continue
            j = line.find(b"\tNM:i:") + 6
            e = line.find(b"\t", j)
            rows.append((int(qname[1:-2] if qname[-2:-1] == b"/" else qname[1:]), (flag >> 7) & 1,
                         ctg_id.get(rname, -2), int(pos) - 1, (flag >> 4) & 1, int(line[j:e] if e > 0 else line[j:])))
    return records, np.array(rows, dtype=np.int64).reshape(-1, 6)


def _pair_truth(sam: Path, truth: dict, processes: int = 1) -> dict:
    """Concordant pairs reported in ``sam`` (primary records with FLAG 0x2) against the planted truth.

    at_truth: both mates at their true contig, position and strand;
    elsewhere_as_good: another concordant pair with no more mismatches in all
    (NM of both mates) than the planted ones (a repeat); worse: another pair
    with more; missed: worse or none reported (a complete mapper has none).
    The file is read in ``processes`` byte ranges at once.
    """
    import multiprocessing

    import numpy as np

    n = truth["contig"].size
    ctg_id = {name.encode(): i for i, name in enumerate(truth["contig_names"])}
    size = sam.stat().st_size
    parts = max(1, min(processes, size // (1 << 20) + 1))
    bounds = [size * p // parts for p in range(parts + 1)]
    specs = [(str(sam), bounds[p], bounds[p + 1], ctg_id) for p in range(parts)]
    if parts == 1:
        answers = [_concordant_records(specs[0])]
    else:
        with multiprocessing.get_context("fork").Pool(parts) as pool:
            answers = pool.map(_concordant_records, specs)
    rows = np.concatenate([a[1] for a in answers])
    got = np.full((6, 2, n), -1, dtype=np.int64)
    got[:, rows[:, 1], rows[:, 0]] = rows.T
    got_ctg, got_pos, got_rev, got_nm = got[2], got[3], got[4], got[5]
    concordant = (got_ctg >= 0).all(axis=0)
    at_truth = concordant & ((got_ctg == truth["contig"]) & (got_pos == truth["pos"])
                             & (got_rev == truth["reverse"])).all(axis=0)
    planted = truth["mismatches"].sum(axis=0, dtype=np.int64)
    elsewhere = concordant & ~at_truth
    as_good = elsewhere & (got_nm.sum(axis=0) <= planted)
    return {"records": sum(a[0] for a in answers), "concordant": int(concordant.sum()),
            "at_truth": int(at_truth.sum()), "elsewhere_as_good": int(as_good.sum()),
            "worse": int((elsewhere & ~as_good).sum()), "not_concordant": int((~concordant).sum()),
            "missed": int((~concordant | (elsewhere & ~as_good)).sum())}


def _share(x: int, n: int) -> str:
    return f"{x:,} ({100 * x / n:.2f}%)"


def _same_records(a: Path, b: Path) -> bool:
    """Two SAM files alike but for their @PG lines (whose CL names the output)."""
    with open(a, "rb") as fa, open(b, "rb") as fb:
        heads = []
        for fh in (fa, fb):
            head = []
            while (line := fh.readline()).startswith(b"@"):
                head.append(line)
            heads.append(([x for x in head if not x.startswith(b"@PG")], line))
        if heads[0] != heads[1]:
            return False
        while True:
            x, y = fa.read(1 << 24), fb.read(1 << 24)
            if x != y:
                return False
            if not x:
                return True


@benchmark("map-pairs", "paired-end k-mismatch mapping, whole command (R1/R2 FASTQ in, SAM out): gseek vs "
           "bowtie -1 -2, checked against the planted pairs", _pairs_options)
def bench_map_pairs(args: argparse.Namespace) -> Report:
    """Paired-end mapping of simulated ``--fr`` pairs with exact truth: gseek vs bowtie 1 (issue 18).

        python benchmarks/run.py map-pairs ecoli.fa.gz bacteria75.fa.gz --threads 16   # 5M pairs each
        python benchmarks/run.py map-pairs ecoli.fa.gz --pairs 20000 --devices cpu --threads 2  # smoke run

    Per reference: pairs simulated (``datagen.kmismatch_pairs_fastq``), both
    indexes built (untimed), then whole commands timed: ``gseek search -1 -2
    -v k -I -X`` (first run, then ``--warm`` more) and ``bowtie -v k -I -X -S
    -1 -2``. Each SAM's concordant pairs are checked against the truth.
    """
    import shutil

    from . import datagen

    mean, sd = (float(x) for x in args.fragment.split(","))
    with harness.scratch_dir("gseek-pairs-bench-") as work:
        env = harness.peer_env_or_host("map-pairs", "gseek only") if not args.no_peers else dict(os.environ)
        bowtie = not args.no_peers and shutil.which("bowtie", path=env.get("PATH")) is not None
        k, T, n = args.mismatches, str(args.threads), args.pairs
        ins = ["-I", str(args.minins), "-X", str(args.maxins)]

        def stage(what: str, t0: float) -> None:
            print(f"  map-pairs: {what} in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)

        results, rows, summary, cross, data = [], [], [], [], {"references": []}
        for fasta in args.fasta:
            name = Path(fasta).name.removesuffix(".gz")
            plain = work / (name + ".plain.fa")
            t0 = time.perf_counter()
            with text_handle(fasta) as src, open(plain, "w") as dst:
                shutil.copyfileobj(src, dst)
            suffix = ".fq.gz" if args.gzip else ".fq"
            r1, r2 = work / f"{name}_1{suffix}", work / f"{name}_2{suffix}"
            truth = datagen.kmismatch_pairs_fastq(plain, n, args.length, k, r1, r2, fragment=(mean, sd),
                                                  bounds=(args.minins, args.maxins), compress=args.gzip)
            stage(f"{n:,} pairs of {name} simulated and written", t0)
            frag = truth["fragment"]
            data["references"].append({"path": fasta, "pairs": n, "length": args.length, "k": k,
                                       "fragment": [int(frag.min()), float(frag.mean()), int(frag.max())]})
            t0 = time.perf_counter()
            harness.run_process([sys.executable, "-P", "-m", "gseek", "--quiet", "index", str(plain),
                                 "-o", str(work / name)], env=env)
            stage("gseek index built", t0)
            first, warm, peer = [], [], []  # (label, kind, run, command, output)
            for device in [d.strip() for d in args.devices.split(",") if d.strip()]:
                if device == "gpu" and harness.gpu_name() == "none":
                    print("  map-pairs: no GPU here; --device gpu skipped", file=sys.stderr)
                    continue
                cmd = [sys.executable, "-P", "-m", "gseek", "--quiet", "--device", device, "-p", T, "search",
                       "-x", str(work / name), "-1", str(r1), "-2", str(r2), "-v", str(k), *ins]
                label = f"gseek --device {device} -p {T} -v {k} -I {args.minins} -X {args.maxins}"
                out = work / f"g-{device}.sam"
                first.append((label, f"gseek-{device}", 0, cmd + ["-o", str(out)], out))
                for w in range(args.warm):
                    wout = work / f"g-{device}-warm.sam"
                    warm.append((label, f"gseek-{device}", w + 1, cmd + ["-o", str(wout)], wout))
            if bowtie:
                t0 = time.perf_counter()
                harness.run_process(["bowtie-build", "--threads", T, "-q", str(plain), str(work / "bt")], env=env)
                stage(f"bowtie-build --threads {T} done", t0)
                best = ["--best"] if args.best else []
                label = f"bowtie -p {T} -v {k}{' --best' if args.best else ''} -I {args.minins} -X {args.maxins}"
                peer.append((label, "bowtie", 0,
                             ["bowtie", "-p", T, "-v", str(k), *best, *ins, "-S", str(work / "bt"),
                              "-1", str(r1), "-2", str(r2), str(work / "bt.sam")], work / "bt.sam"))
            runs = first + peer + warm  # gseek's first runs, bowtie, then gseek's warm runs
            first_out: dict[str, Path] = {}
            by_kind: dict[str, list[dict]] = {}
            for label, kind, rep, cmd, out in runs:
                print(f"  map-pairs: {label} on {name}{' (warm)' if rep else ''} ...", file=sys.stderr, flush=True)
                proc = harness.run_process(cmd, env=env)
                print(f"  map-pairs: ... {proc.seconds:.2f} s", file=sys.stderr, flush=True)
                r = {"tool": label, "kind": kind, "run": rep, "reference": fasta, "pairs": n, "seconds": proc.seconds,
                     "cpu_s": proc.cpu_s, "peak_rss_mib": proc.peak_rss_mib}
                if rep == 0:
                    t0 = time.perf_counter()
                    r.update(_pair_truth(out, truth, args.threads))
                    stage(f"truth check of {out.name}", t0)
                    first_out[kind] = out
                else:
                    r["same_sam_as_first"] = _same_records(first_out[kind], out)
                    out.unlink()
                results.append(r)
                by_kind.setdefault(kind, []).append(r)
            gseeks = sorted(kind for kind in first_out if kind.startswith("gseek-"))
            if len(gseeks) > 1:  # the backends must agree (docs/sam.md): the SAM but for @PG
                same = all(_same_records(first_out[gseeks[0]], first_out[g]) for g in gseeks[1:])
                cross.append(f"{name}: SAM of {', '.join(gseeks)} " + ("identical" if same else "DIFFER") +
                             " (but for @PG)")
            for out in first_out.values():
                out.unlink()
            bt_s = by_kind["bowtie"][0]["seconds"] if "bowtie" in by_kind else None
            for r in results[-len(runs):]:
                check = by_kind[r["kind"]][0]
                rows.append([r["tool"] + (f" (warm {r['run']})" if r["run"] else ""), name, f"{r['seconds']:.2f}",
                             f"{r['cpu_s']:.1f}", f"{r['peak_rss_mib']:.0f}",
                             ratio(bt_s, r["seconds"]) if bt_s else "-",
                             _share(check["concordant"], n) if not r["run"] else
                             ("same SAM" if r["same_sam_as_first"] else "SAM differs!"),
                             _share(check["at_truth"], n) if not r["run"] else "",
                             f"{check['elsewhere_as_good']:,}" if not r["run"] else "",
                             f"{check['missed']:,}" if not r["run"] else ""])
            for kind, rs in by_kind.items():
                if kind == "bowtie":
                    continue
                cold, again = rs[0], rs[1:]
                warm_s = sorted(x["seconds"] for x in again)[len(again) // 2] if again else None
                b = by_kind.get("bowtie", [None])[0]
                summary.append([name, f"{n:,}", kind.removeprefix("gseek-"),
                                f"{bt_s:.2f}" if bt_s else "-", f"{cold['seconds']:.2f}",
                                f"{warm_s:.2f}" if warm_s else "-",
                                (ratio(bt_s, cold["seconds"]) + (f" / {ratio(bt_s, warm_s)}" if warm_s else ""))
                                if bt_s else "-",
                                f"{100 * b['at_truth'] / n:.2f}%" if b else "-",
                                f"{100 * cold['at_truth'] / n:.2f}%", f"{cold['missed']:,}"])
            for f in (r1, r2, plain):
                f.unlink()
        table = markdown_table(
            ["reference", "pairs", "gseek device", "bowtie s", "gseek s (first)", "gseek s (warm)",
             "speed-up first / warm", "bowtie at truth", "gseek at truth", "gseek missed"],
            summary, align="lrlrrrrrrr")
        table += "\n\nEvery command:\n\n" + markdown_table(
            ["command", "reference", "wall s", "CPU s", "peak RSS MiB", "vs bowtie", "concordant pairs",
             "both mates at truth", "elsewhere, as good", "missed"], rows, align="llrrrrrrrr")
        notes = [
            (f"{n:,} pairs of {args.length} bp per reference: fragments normal (mean {mean:g}, sd {sd:g}) clipped to "
            f"[max(I, {args.length + 1}), X] = [{max(args.minins, args.length + 1)}, {args.maxins}], uniform over "
            "the N-free stretches, either strand; mate 1 forward from the fragment's start, mate 2 reverse "
            f"complement from its end (--fr); each mate 0..{k} substitutions; quality 'I' "
            "(benchmarks/suite/datagen.py kmismatch_pairs_fastq, seed 11); FASTQ ") + ("gzip level 1" if args.gzip else
                                                                                 "plain"),
            ("whole command wall time from process start (imports, index load, kernel compile included); indexes "
            "built beforehand; gseek's first run, then bowtie, then the warm runs; both get -I/-X explicitly"),
            ("truth: primary records with FLAG 0x2 (concordant); 'at truth' = both mates at their planted "
            "contig, position and strand; 'elsewhere, as good' = another concordant pair with no more "
            "mismatches (NM of both mates) than planted (a repeat); 'missed' = no concordant pair or a worse "
            "one — a complete best-pair mapper misses none") + ("" if args.best else
                                                               "; bowtie without --best reports any valid pair"),
        ]
        notes += cross
        data["summary"] = ", ".join(
            f"{Path(r['path']).name}: {r['pairs']:,} pairs × 2 × {r['length']} bp, k={r['k']}, fragment "
            f"{r['fragment'][0]}..{r['fragment'][2]} (mean {r['fragment'][1]:.0f})" for r in data["references"])
        return Report(title="Paired-end k-mismatch mapping", data=data, table=table, notes=notes, results=results)

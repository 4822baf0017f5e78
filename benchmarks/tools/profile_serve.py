"""Where one small ``gseek serve`` request's time goes (issue 39): the warm service's steps, in process.

Builds a random database (``--bases``, one contig a ``--contig`` bases, seeded; ``gseek index --parts
text``) or takes ``--index``, makes a :class:`~gseek.serve.engine.Engine` on ``--device``, warms it,
then times ``--runs`` megablast requests of ``--queries`` x ``--length`` bp (cut from the text with 1 %
substitutions) step by step, with ``time.perf_counter`` laps: the request checked (JSON to options),
the queries parsed (host thread's work), the warm searcher found, the search's parts (the query
side: strands and DUST, table words, the lookup table (sparse for a small batch), the seeding flags;
the table laid into the resident arrays and the queries uploaded; the rest of the search: scan, seeds, gapped, report) and the output text. With
``--http`` the same requests also go through a real service (``gseek serve`` in a child process) one
after another: the difference to the in-process sum is the HTTP, JSON, thread hops and the batcher's
window. ``--tables``: the direct and the sparse table's costs by batch size. ``--cprofile N`` prints the N costliest functions of one more request (cumulative).

    python benchmarks/tools/profile_serve.py --device cpu --bases 5000000 --runs 20 --http
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _database(folder: Path, bases: int, contig: int, seed: int) -> tuple[Path, str]:
    import numpy as np

    rng = np.random.default_rng(seed)
    fasta = folder / "db.fa"
    text = []
    with open(fasta, "wb") as fh:
        for i in range(max(1, bases // contig)):
            seq = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, contig, dtype=np.uint8)].tobytes()
            fh.write(b">c%d\n%s\n" % (i, seq))
            text.append(seq.decode())
    subprocess.run([sys.executable, "-m", "gseek", "--quiet", "index", str(fasta), "-o", str(folder / "db"),
                    "--parts", "text"], check=True)
    return folder / "db.gseek", "".join(text[:4])


def _queries(text: str, n: int, length: int, rng: random.Random) -> str:
    out = []
    for i in range(n):
        a = rng.randrange(0, len(text) - length)
        s = list(text[a:a + length])
        for _ in range(max(1, length // 100)):
            s[rng.randrange(length)] = "ACGT"[rng.randrange(4)]
        out.append(f">q{i}\n{''.join(s)}\n")
    return "".join(out)


class Laps:
    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {}
        self.t = time.perf_counter()

    def start(self) -> None:
        self.t = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.times.setdefault(name, []).append(now - self.t)
        self.t = now


def _one(engine, body: dict, laps: Laps, sync) -> bytes:
    import numpy as np

    from gseek.blast.lookup import lookup_of_words, seeding, word_codes
    from gseek.backend import numba_guard
    from gseek.blast.hits import PreparedQueries
    from gseek.blast.seeds import device_queries
    from gseek.blast.small_table import SMALL_TABLE_WORDS, resident_table, sparse_lookup
    from gseek.serve.engine import parse_request

    laps.start()
    req = parse_request(body, engine.databases)
    laps.lap("request checked (JSON to options)")
    batches = engine.read_queries(req)
    laps.lap("queries parsed")
    searcher = engine.searcher(req.database, req.options)
    laps.lap("warm searcher found")
    batch = batches[0]
    seq_codes, seq_mask, seq_off, seq_query, seq_strand = searcher._sequences(batch)
    laps.lap("query side: strands, DUST")
    w = req.options.lut_word
    words = word_codes(seq_codes, seq_off, w, seq_mask)
    laps.lap("query side: table words")
    table = sparse_lookup(words, w) if words.size <= SMALL_TABLE_WORDS else lookup_of_words(words, w)
    laps.lap("query side: lookup table")
    valid = (words >= 0).view(np.uint8) if words.size <= SMALL_TABLE_WORDS else seeding(words)
    laps.lap("query side: seeding flags")
    with searcher.backend.active(), resident_table(searcher.backend, table) as laid:
        device_queries(searcher.backend, seq_codes, seq_off, valid, laid)
        sync()
    laps.lap("table laid in, queries and table uploaded (alone, then again in the search)")
    prep = PreparedQueries(req.options, batch, seq_codes, seq_off, seq_query, seq_strand, table, valid)
    with numba_guard(searcher.backend.name == "cpu"):  # as Engine.search_group runs a search
        hits = searcher.search(prep)
    sync()
    laps.lap("search of the prepared queries (upload, scan, seeds, gapped, report)")
    data = engine.blast_text(req, [hits], batches)
    laps.lap("output text")
    return data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--index", type=Path)
    ap.add_argument("--reference-text", type=Path, help="FASTA the queries are cut from (with --index)")
    ap.add_argument("--bases", type=int, default=5_000_000)
    ap.add_argument("--contig", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=1)
    ap.add_argument("--length", type=int, default=500)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--http", action="store_true")
    ap.add_argument("--cprofile", type=int, default=0)
    ap.add_argument("--tables", action="store_true", help="also the direct and the sparse table's costs by size")
    args = ap.parse_args(argv)

    from gseek.serve.engine import Engine

    with tempfile.TemporaryDirectory() as tmp:
        if args.index is None:
            index, text = _database(Path(tmp), args.bases, args.contig, 5)
        else:
            from gseek.seqio import read_fastx

            index = args.index
            ref = read_fastx(args.reference_text)
            text = "".join(ref.sequence(i) for i in range(min(4, len(ref))))
        t0 = time.perf_counter()
        engine = Engine([f"db={index}"], device=args.device, threads=args.threads)
        engine.warm()
        print(f"engine made and warmed: {time.perf_counter() - t0:.2f} s", file=sys.stderr)
        backend = engine.backend
        sync = (lambda: backend.xp.cuda.Device().synchronize()) if backend.name == "gpu" else (lambda: None)
        rng = random.Random(11)
        bodies = [{"database": "db", "task": "megablast", "format": "6",
                   "queries": _queries(text, args.queries, args.length, rng)} for _ in range(args.runs + 2)]
        laps = Laps()
        for body in bodies[:2]:  # warm-up
            _one(engine, body, Laps(), sync)
        totals = []
        for body in bodies[2:]:
            t = time.perf_counter()
            _one(engine, body, laps, sync)
            totals.append(time.perf_counter() - t)
        print(f"\n{args.device}, {args.queries} x {args.length} bp megablast, {args.runs} requests in process "
              "(median / min / max ms):\n")
        print("| step | median | min | max |\n|---|--:|--:|--:|")
        for name, ts in laps.times.items():
            print(f"| {name} | {1e3 * statistics.median(ts):.2f} | {1e3 * min(ts):.2f} | {1e3 * max(ts):.2f} |")
        print(f"| **whole (with the extra upload)** | {1e3 * statistics.median(totals):.2f} | "
              f"{1e3 * min(totals):.2f} | {1e3 * max(totals):.2f} |")
        timings = engine.searcher(engine.databases["db"], _options()).timings
        searches = args.runs + 3
        print(f"\nsearcher stages, mean of {searches} searches (ms; GSEEK_BLAST_TIMING=1 synchronises at bounds):",
              json.dumps({k: round(1e3 * v / searches, 2) for k, v in timings.items()}))
        if args.cprofile:
            prof = cProfile.Profile()
            prof.enable()
            for body in bodies[2:2 + min(5, args.runs)]:
                _one(engine, body, Laps(), sync)
            prof.disable()
            pstats.Stats(prof).sort_stats("cumulative").print_stats(args.cprofile)
        if args.tables:
            _tables(backend, sync)
        engine.close()
        if args.http:
            _http(index, args, bodies)
    return 0


def _tables(backend, sync) -> None:
    """The direct table (built, uploaded) against the sparse one (built, laid into the resident
    arrays) for batches of 1k, 100k and 2M random positions (w = 12), median of 5."""
    import numpy as np

    from gseek.blast.lookup import lookup_of_words, word_codes
    from gseek.blast.seeds import device_queries
    from gseek.blast.small_table import resident_table, sparse_lookup

    rng = np.random.default_rng(1)
    print("\n| positions | direct: build / upload ms | sparse: build / lay in and upload ms |\n|--:|--:|--:|")
    for n in (1000, 100_000, 2_000_000):
        codes = rng.integers(0, 4, n).astype(np.uint8)
        off = np.array([0, n], np.int64)
        words = word_codes(codes, off, 12)
        valid = (words >= 0).astype(np.uint8)
        out = {}
        for kind, build in (("direct", lookup_of_words), ("sparse", sparse_lookup)):
            times = []
            for _ in range(6):
                t0 = time.perf_counter()
                table = build(words, 12)
                t1 = time.perf_counter()
                with backend.active(), resident_table(backend, table) as laid:
                    device_queries(backend, codes, off, valid, laid)
                    sync()
                times.append((t1 - t0, time.perf_counter() - t1))
            times = times[1:]
            out[kind] = (1e3 * statistics.median(t for t, _ in times), 1e3 * statistics.median(u for _, u in times))
        print(f"| {n:,} | {out['direct'][0]:.2f} / {out['direct'][1]:.2f} | {out['sparse'][0]:.2f} / "
              f"{out['sparse'][1]:.2f} |")


def _options():
    from gseek.blast.options import BlastOptions

    return BlastOptions.for_task("megablast")


def _http(index: Path, args, bodies: list[dict]) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from serve_helpers import Service

    service = Service(index, device=args.device, threads=args.threads, name="db")
    try:
        times = []
        for k, body in enumerate(bodies):
            data = json.dumps(body).encode()
            t = time.perf_counter()
            call = urllib.request.Request(service.url + "/api/v1/search", data=data,
                                          headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(call, timeout=120) as resp:
                resp.read()
            if k >= 2:
                times.append(time.perf_counter() - t)
        print(f"\nthrough HTTP (gseek serve, one request at a time): median {1e3 * statistics.median(times):.2f} ms, "
              f"min {1e3 * min(times):.2f}, max {1e3 * max(times):.2f}")
    finally:
        service.stop()


if __name__ == "__main__":
    raise SystemExit(main())

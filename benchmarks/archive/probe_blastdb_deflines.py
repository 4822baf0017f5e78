"""A BLAST+ database of many short sequences converted by gseek: the whole conversion against its
defline pass (issue 41's last gap). Made here: N sequences of 80-200 bp (seeded), ids of several kinds
(`ref|NM_n.1|`, `gi|n|gb|AB..|`, bare words) with titles; `makeblastdb` with and without `-parse_seqids`.

    python benchmarks/archive/probe_blastdb_deflines.py [N=200000] [REPEATS=3] [WORK=/tmp/probe_deflines]

Prints per database, for the record-by-record Python pass (before) and the one-pass reader
(`gseek.index.blastdb_scan`, after), run alternately in one process: conversion seconds (median, min,
max of REPEATS, each into a fresh folder), the defline pass alone, and a digest of every file the
conversion wrote (the same digest: the same converted database).
"""

from __future__ import annotations

import hashlib
import mmap
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from gseek.index import blastdb


def make_fasta(path: Path, n: int) -> None:
    rng = random.Random(41)
    with open(path, "w") as fh:
        for i in range(n):
            kind = i % 3
            name = (f"ref|NM_{i:06d}.1|" if kind == 0 else f"gi|{1000 + i}|gb|AB{i:06d}.2|" if kind == 1
                    else f"contig_{i}")
            seq = "".join(rng.choice("ACGT") for _ in range(rng.randrange(80, 200)))
            fh.write(f">{name} sequence {i} of a probe, some words of title\n{seq}\n")


def slow_subject_ids(nhr, hdr) -> list:
    """The record-by-record pass the conversion made before ``blastdb_scan`` (main at 6c51f55)."""
    from gseek.index.blastdb_defline import DeflineError, parse_defline_set, subject_ids

    hdr = hdr.tolist()
    out = []
    for i in range(len(hdr) - 1):
        try:
            out.append(subject_ids(parse_defline_set(nhr[hdr[i]:hdr[i + 1]])))
        except DeflineError as err:
            raise DeflineError(f"record {i + 1}: {err}") from None
    return out


def defline_pass(db, reader) -> int:
    """The conversion's defline pass alone."""
    n = 0
    for v in db.volumes:
        vol = blastdb.read_volume(v)
        with open(f"{vol.path}.nhr", "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as nhr:
            n += len(reader(nhr, vol.hdr))
    return n


def digest(path: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(path.iterdir()):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    work = Path(sys.argv[3] if len(sys.argv) > 3 else "/tmp/probe_deflines")
    work.mkdir(parents=True, exist_ok=True)
    fasta = work / f"short{n}.fa"
    if not fasta.exists():
        make_fasta(fasta, n)
    new_reader = blastdb.volume_subject_ids
    readers = {"before": slow_subject_ids, "after": new_reader}
    for parse in (False, True):
        name = work / f"db{n}{'_p' if parse else ''}"
        if not Path(f"{name}.nin").exists():
            subprocess.run(["makeblastdb", "-in", str(fasta), "-dbtype", "nucl", "-out", str(name)]
                           + (["-parse_seqids"] if parse else []), check=True, capture_output=True)
        db = blastdb.find_blastdb(str(name))
        t = time.perf_counter()
        blastdb.convert_blastdb(db, work / "warm")  # JIT (or its cache) and the page cache
        print(f"{name.name}: first conversion in this process {time.perf_counter() - t:.2f} s", flush=True)
        whole = {k: [] for k in readers}
        alone = {k: [] for k in readers}
        digests = {k: set() for k in readers}
        for r in range(repeats):
            for label, reader in readers.items():  # alternately
                blastdb.volume_subject_ids = reader
                dest = work / f"conv_{label}"
                subprocess.run(["rm", "-rf", str(dest)], check=True)
                t = time.perf_counter()
                blastdb.convert_blastdb(db, dest)
                whole[label].append(time.perf_counter() - t)
                t = time.perf_counter()
                defline_pass(db, reader)
                alone[label].append(time.perf_counter() - t)
                digests[label].add(digest(dest))
        blastdb.volume_subject_ids = new_reader
        for label in readers:
            w, a = whole[label], alone[label]
            print(f"{name.name} ({n:,} sequences, parse_seqids={parse}) {label}: conversion median "
                  f"{statistics.median(w):.2f} s (min {min(w):.2f}, max {max(w):.2f}); defline pass "
                  f"{statistics.median(a):.2f} s (min {min(a):.2f}, max {max(a):.2f}); digest "
                  f"{' '.join(sorted(digests[label]))}", flush=True)


if __name__ == "__main__":
    main()

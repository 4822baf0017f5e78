"""Benchmark data built on demand and cached in ``benchmarks/data/`` (git-ignored).

Every file is a pure function of its parameters and seed; its name says so, a
``.json`` sidecar describes it, and it is written under a temporary name and
renamed when whole, so an interrupted build never leaves a half file behind.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np

from harness import DATA_DIR

#: Fraction of bases drawn as N in the synthetic reads.
N_RATE = 0.001
#: Qualities are uniform in Phred 2..40 ('#'..'I'), Phred+33.
QUAL_MIN, QUAL_MAX = 2, 40
#: Records generated per numpy block (bounds memory for large files).
BLOCK_READS = 1 << 18


def _fastq_block(rng: np.random.Generator, first: int, count: int, length: int, width: int) -> bytes:
    """``count`` 4-line records ``@r<first+1 zero-padded>`` as one bytes object."""
    head = 2 + width  # '@r' + digits
    row = head + 1 + length + 1 + 2 + length + 1
    out = np.empty((count, row), dtype=np.uint8)
    out[:, 0] = ord("@")
    out[:, 1] = ord("r")
    numbers = np.arange(first + 1, first + count + 1, dtype=np.int64)
    for k in range(width):  # digits, most significant first
        out[:, 2 + width - 1 - k] = 48 + (numbers // 10**k) % 10
    col = head
    out[:, col] = 10
    col += 1
    bases = np.frombuffer(b"ACGT", dtype=np.uint8)[rng.integers(0, 4, size=(count, length))]
    bases[rng.random((count, length)) < N_RATE] = ord("N")
    out[:, col : col + length] = bases
    col += length
    out[:, col] = 10
    out[:, col + 1] = ord("+")
    out[:, col + 2] = 10
    col += 3
    out[:, col : col + length] = rng.integers(QUAL_MIN + 33, QUAL_MAX + 34, size=(count, length), dtype=np.uint8)
    out[:, col + length] = 10
    return out.tobytes()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 24):
            h.update(chunk)
    return h.hexdigest()


def synthetic_fastq(reads: int, length: int, seed: int = 42, data_dir: Path = DATA_DIR) -> dict:
    """Build (once) ``reads`` random reads of ``length`` bp as FASTQ and FASTQ.gz.

    Returns the description stored in the sidecar: paths, sizes, counts, seed,
    generator and SHA-256 of the plain file.
    """
    if reads < 1 or length < 1:
        raise ValueError("reads and length must be positive")
    data_dir.mkdir(parents=True, exist_ok=True)
    stem = f"reads_n{reads}_l{length}_s{seed}"
    plain = data_dir / f"{stem}.fq"
    packed = data_dir / f"{stem}.fq.gz"
    meta_path = data_dir / f"{stem}.json"
    if meta_path.exists() and plain.exists() and packed.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("bytes") == plain.stat().st_size and meta.get("gz_bytes") == packed.stat().st_size:
            return meta
    width = max(9, len(str(reads)))
    rng = np.random.default_rng(seed)
    tmp = plain.with_name(f".{plain.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as fh:
        for first in range(0, reads, BLOCK_READS):
            fh.write(_fastq_block(rng, first, min(BLOCK_READS, reads - first), length, width))
    os.replace(tmp, plain)
    tmp = packed.with_name(f".{packed.name}.tmp-{os.getpid()}")
    with open(plain, "rb") as src, open(tmp, "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0, filename="") as gz:
            shutil.copyfileobj(src, gz, 1 << 22)
    os.replace(tmp, packed)
    meta = {
        "kind": "synthetic FASTQ",
        "reads": reads,
        "length": length,
        "bases": reads * length,
        "seed": seed,
        "generator": (
            f"numpy default_rng({seed}); uniform ACGT, N with p={N_RATE}; "
            f"Phred {QUAL_MIN}..{QUAL_MAX} uniform; names @r{'0' * (width - 1)}1..; 4-line records"
        ),
        "path": str(plain),
        "bytes": plain.stat().st_size,
        "gz_path": str(packed),
        "gz_bytes": packed.stat().st_size,
        "gz": "gzip level 6 (Python zlib), mtime 0",
        "sha256": _sha256(plain),
    }
    tmp = meta_path.with_name(f".{meta_path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(meta, indent=2) + "\n")
    os.replace(tmp, meta_path)
    return meta

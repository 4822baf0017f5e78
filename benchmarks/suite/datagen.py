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

from .harness import DATA_DIR

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


#: Pairs simulated per numpy block by :func:`kmismatch_pairs_fastq` (bounds memory).
BLOCK_PAIRS = 1 << 16


def _fastq_rows(first: int, letters: np.ndarray, width: int, mate: int) -> bytes:
    """FASTQ records ``@p<first+i zero-padded>/<mate>`` of the rows of ``letters`` (ASCII), quality ``I``."""
    count, length = letters.shape
    head = 2 + width + 2  # '@p' + digits + '/1'
    row = head + 1 + length + 3 + length + 1
    out = np.empty((count, row), dtype=np.uint8)
    out[:, 0], out[:, 1] = ord("@"), ord("p")
    numbers = np.arange(first, first + count, dtype=np.int64)
    for k in range(width):
        out[:, 2 + width - 1 - k] = 48 + (numbers // 10**k) % 10
    col = 2 + width
    out[:, col], out[:, col + 1], out[:, col + 2] = ord("/"), ord(str(mate)), 10
    col += 3
    out[:, col : col + length] = letters
    col += length
    out[:, col], out[:, col + 1], out[:, col + 2] = 10, ord("+"), 10
    col += 3
    out[:, col : col + length] = ord("I")
    out[:, col + length] = 10
    return out.tobytes()


def kmismatch_pairs_fastq(fasta: str | os.PathLike, pairs: int, length: int, mismatches: int, r1: Path, r2: Path, *,
                          fragment: tuple[float, float] = (250, 30), bounds: tuple[int, int] = (0, 500),
                          seed: int = 11, compress: bool = False) -> dict:
    """Simulate ``--fr`` pairs with exact truth, vectorised, straight to FASTQ ``r1``/``r2``.

    Fragment lengths are normal (``fragment`` = mean, sd), rounded and clipped
    to ``bounds`` (and to at least ``length + 1``: mates starting at the same
    base are not a concordant pair); each fragment lies in an N-free stretch of
    one contig, uniformly (``gseek.datasets.simulate``'s window sampler), from
    either strand: mate 1 is the first ``length`` bases of the fragment,
    forward, mate 2 the reverse complement of its last ``length``. Each mate
    gets ``0..mismatches`` substitutions (uniform count, distinct positions,
    always another base). Names ``pN/1``, ``pN/2`` (``N`` zero-padded from 0).
    ``gseek.datasets.kmismatch_pairs`` draws the same kind of pairs one at a
    time in Python; this is its vectorised twin for millions of pairs.

    Returns the truth: ``contig_names``, per pair ``contig``, ``fragment``,
    and per mate (rows 0, 1) ``pos`` (0-based leftmost base), ``reverse``,
    ``mismatches``.
    """
    from gseek.alphabet import COMPLEMENT
    from gseek.datasets.simulate import _distinct_positions, _load_genome, _sample_windows

    genome = _load_genome(fasta)
    rng = np.random.default_rng(seed)
    lo, hi = max(bounds[0], length + 1), bounds[1]
    if lo > hi:
        raise ValueError(f"no fragment length fits: bounds {bounds}, reads of {length}")
    frag = np.clip(np.rint(rng.normal(fragment[0], fragment[1], pairs)), lo, hi).astype(np.int64)
    gstart, contig = _sample_windows(genome, frag, rng, avoid_n=True)
    minus = rng.random(pairs) < 0.5  # fragment from the - strand: mate 1 is the right end, reversed
    left, right = gstart, gstart + frag - length
    src = np.stack([np.where(minus, right, left), np.where(minus, left, right)])
    reverse = np.stack([minus, ~minus])
    mism = rng.integers(0, mismatches + 1, size=(2, pairs)).astype(np.int8)
    letters = np.frombuffer(b"ACGTN", dtype=np.uint8)
    width = len(str(max(pairs - 1, 0)))
    cols, within = np.arange(mismatches), np.arange(length)
    with (gzip.open(r1, "wb", compresslevel=1) if compress else open(r1, "wb")) as f1, \
         (gzip.open(r2, "wb", compresslevel=1) if compress else open(r2, "wb")) as f2:
        for a in range(0, pairs, BLOCK_PAIRS):
            b = min(pairs, a + BLOCK_PAIRS)
            for mate, fh in ((0, f1), (1, f2)):
                codes = genome.codes[src[mate, a:b, None] + within]
                rev = reverse[mate, a:b]
                codes[rev] = COMPLEMENT[codes[rev][:, ::-1]]
                where = _distinct_positions(np.full(b - a, length, dtype=np.int64), mismatches, rng)
                shift = rng.integers(1, 4, size=where.shape)
                used = cols[None, :] < mism[mate, a:b, None]
                rows = np.broadcast_to(np.arange(b - a)[:, None], where.shape)
                r, c = rows[used], where[used]
                codes[r, c] = (codes[r, c] + shift[used]) % 4
                fh.write(_fastq_rows(a, letters[codes], width, mate + 1))
    return {
        "contig_names": genome.name_list(),
        "contig": contig.astype(np.int32),
        "fragment": frag,
        "pos": src - genome.offsets[contig][None, :],
        "reverse": reverse,
        "mismatches": mism,
    }

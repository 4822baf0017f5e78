"""The demo behind ``gseek demo``: the embedded lambda genome and simulated reads.

It runs what the engine has today on the chosen backend -- parse, 2-bit pack,
w-gram seeding of every read (both strands), the FM-index (build, then an
exact-match count of every read on both strands) -- and writes SAM. Read
placement with mismatches arrives with the mapper (issue 5); until then every
read is written unmapped and the summary says so.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gseek.datasets import lambda_genome, lambda_reads

from .backend import Backend
from .encode import WGRAM_INVALID, pack_2bit, reverse_complement, wgram_codes
from .sam import SamWriter, sam_header
from .seqio import read_fastx

W = 12


def run_demo(backend: Backend, outdir: Path, *, command: str) -> list[str]:
    """Run the demo into ``outdir``; return the summary lines."""
    genome_path, reads_path = lambda_genome(), lambda_reads()
    genome = read_fastx(genome_path)
    reads = read_fastx(reads_path)

    packed, nmask = pack_2bit(backend, genome.codes)
    genome_grams = backend.to_host(wgram_codes(backend, genome.codes, genome.offsets, W))
    present = np.zeros(1 << (2 * W), dtype=bool)
    present[genome_grams[genome_grams != WGRAM_INVALID]] = True

    fw = backend.to_host(wgram_codes(backend, reads.codes, reads.offsets, W))
    rc_codes = reverse_complement(backend, reads.codes, reads.offsets)
    rc = backend.to_host(wgram_codes(backend, rc_codes, reads.offsets, W))
    hit = np.zeros(reads.codes.size, dtype=bool)
    for grams in (fw, rc):
        ok = grams != WGRAM_INVALID
        hit[ok] |= present[grams[ok]]
    seeded = np.logical_or.reduceat(hit, reads.offsets[:-1]) if len(reads) else np.zeros(0, bool)
    seeded &= reads.lengths > 0

    from gseek.index import Index

    index = Index.build(genome_path, wgram=10, device=backend)
    exact = (index.count((reads.codes, reads.offsets)) + index.count((backend.to_host(rc_codes), reads.offsets))) > 0

    outdir.mkdir(parents=True, exist_ok=True)
    sam_path = outdir / "lambda_reads.sam"
    header = sam_header(genome.name_list(), genome.lengths, command=command, backend=backend.describe())
    with SamWriter(sam_path, header) as sam:
        sam.write_unmapped(reads)

    return [
        f"backend           {backend.describe()}",
        f"reference         {genome_path.name}: {len(genome)} contig, {genome.total_length:,} bp, "
        f"{int((genome.codes == 4).sum())} N, packed into {int(packed.size):,} words",
        f"reads             {reads_path.name}: {len(reads):,} reads, {reads.total_length:,} bases",
        f"{W}-mer seeded     {int(seeded.sum()):,} of {len(reads):,} reads share an exact {W}-mer "
        "with lambda (either strand)",
        f"exact matches     {int(exact.sum()):,} reads occur exactly in lambda (FM-index count, either strand)",
        "placement         k-mismatch mapping is not available yet (issue 5); reads written unmapped",
        f"SAM               {sam_path} ({sam.records:,} records)",
    ]

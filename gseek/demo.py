"""The demo behind ``gseek demo``: the embedded lambda genome and simulated reads.

It runs the engine end to end on the chosen backend: parse, FM-index build,
complete 3-mismatch mapping of the 2,000 reads on both strands (``-v 3``,
:data:`MISMATCHES`: the simulated reads carry up to 3 substitutions; ``gseek
search`` defaults to ``-v 2``, as bowtie; the summary says both), SAM output,
and a check of every placed read against the simulator's truth file; then a
megablast search of 20 simulated queries (mutated slices of the genome on
both strands, and random negatives) whose top hits are checked against their
origins.
"""

from __future__ import annotations

from pathlib import Path

import pysam

from gseek.datasets import lambda_genome, lambda_reads, lambda_truth, read_truth

from .backend import Backend
from .index import Index
from .mapper import DEFAULT_MISMATCHES
from .pipeline import blast_files, map_reads

#: The demo's ``-v``: the simulated reads carry 0..3 substitutions (``gseek search`` defaults to ``-v 2``).
MISMATCHES = 3
#: The demo's BLAST queries: count, length range, seed (``blast_queries``).
BLAST_QUERIES = (20, (400, 3000), 3)


def run_demo(backend: Backend, outdir: Path, *, command: str) -> list[str]:
    """Run the demo into ``outdir``; return the summary lines."""
    genome_path, reads_path = lambda_genome(), lambda_reads()
    index = Index.build(genome_path, device=backend)
    outdir.mkdir(parents=True, exist_ok=True)
    sam_path = outdir / "lambda_reads.sam"
    counts = map_reads(index, reads_path, sam_path, mismatches=MISMATCHES, device=backend, command=command)

    truth = {t.read: t for t in read_truth(lambda_truth())}
    placed = at_origin = unique = 0
    with pysam.AlignmentFile(str(sam_path)) as sam:
        for rec in sam:
            if rec.is_unmapped or rec.is_secondary:
                continue
            unique += rec.get_tag("X0") == 1
            origin = truth[rec.query_name]
            if origin.contig is None:
                continue
            placed += 1
            at_origin += (rec.reference_start == origin.pos and rec.is_reverse == (origin.strand == "-"))
    from gseek.datasets.simulate import blast_queries

    n, lengths, seed = BLAST_QUERIES
    sim = blast_queries(genome_path, n, lengths, seed=seed, sub_rate=0.05, indel_rate=0.005)
    queries_path = outdir / "lambda_queries.fa"
    sim.write(queries_path)
    tsv_path = outdir / "lambda_queries.megablast.tsv"
    found = blast_files(index, queries_path, tsv_path, task="megablast", outfmt="6 qseqid sseqid sstart send sstrand",
                        device=backend, workers=0)
    top: dict[str, tuple[int, int, str]] = {}
    for line in tsv_path.read_text().splitlines():
        q, _s, a, b, strand = line.split("\t")
        top.setdefault(q, (min(int(a), int(b)) - 1, max(int(a), int(b)), strand))
    planted = [t for t in sim.truth if t[1] != "*"]
    origin = sum(1 for name, _c, start, end, strand, _d in planted if name in top and
                 top[name][0] < int(end) and int(start) < top[name][1] and (top[name][2] == "plus") == (strand == "+"))
    stats = index.stats
    return [
        f"backend           {backend.describe()}",
        f"reference         {genome_path.name}: {stats['contigs']} contig, {stats['bases']:,} bp, "
        f"index {sum(index.nbytes.values()) / 2**20:.1f} MiB",
        f"reads             {reads_path.name}: {counts['reads']:,} reads",
        f"mapped (-v {MISMATCHES})     {counts['mapped']:,} reads ({unique:,} unique), "
        f"{counts['unmapped']:,} unmapped: every placement within {MISMATCHES} mismatches "
        f"(gseek search -v {MISMATCHES}; its default is -v {DEFAULT_MISMATCHES})",
        f"truth             {at_origin:,} of {placed:,} simulated reads reported at their true origin",
        f"SAM               {sam_path} ({counts['records']:,} records)",
        f"megablast         {found['queries']} queries ({len(planted)} from the genome), {found['with_hits']} with hits, "
        f"{found['hsps']} HSPs; {origin} of {len(planted)} top hits at their origin",
        f"BLAST tabular     {tsv_path}",
    ]

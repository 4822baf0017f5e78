"""``gseek compile``: compile every kernel ahead of time, so no later command waits for a compiler.

Numba compiles a function the first time it is called with new argument
types and keeps the machine code in its on-disk cache (``__pycache__`` beside
the source, or ``NUMBA_CACHE_DIR``); CuPy compiles each ``.cu`` family once
per device architecture into its own cache (``CUPY_CACHE_DIR``). A fresh
install, container or cluster worker starts with both empty, and its first
command pays for them (``docs/startup.md``). This module runs each command's
stages once on tiny embedded data — the same functions with the same argument
types as real runs — so the caches hold everything afterwards.

Workloads (``--only``): ``parse`` (FASTA/FASTQ, gzip, several threads),
``index`` (the FM-index build), ``map`` (exact and approximate pieces, the
flank index of reference N, every report mode, SAM and BAM), ``align`` (every
DP mode, score-only and trace-back, one thread and one warp a pair, lazy,
protein, X-drop, the TSV rows), ``blast`` (both tasks of the BLAST-style search,
ungapped too, outfmt 6 and 7). With ``processes`` > 1 they run in separate
processes at once (the caches are shared files). On a GPU backend the ``.cu``
families are compiled for that device as well.

>>> WORKLOADS
('parse', 'index', 'map', 'align', 'blast')
"""

from __future__ import annotations

import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from .backend import Backend, get_backend

__all__ = ["WORKLOADS", "compile_kernels"]

WORKLOADS = ("parse", "index", "map", "align", "blast")


def _parse(backend: Backend, tmp: Path) -> None:
    import gzip

    from gseek.datasets import lambda_reads
    from gseek.seqio import FastxReader, read_fastx

    fq = Path(lambda_reads())
    gz = tmp / "r.fq.gz"
    gz.write_bytes(gzip.compress(fq.read_bytes(), mtime=0))
    for path in (fq, gz):
        for threads in (1, 2):
            list(FastxReader(path, chunk_bytes=1 << 16, threads=threads))
    protein, dna = tmp / "p.fa", tmp / "d.fa"
    protein.write_text(">p\nMKVLAW\n")
    dna.write_text(">q\nacgtNNacgt\n")
    read_fastx(protein, alphabet="protein")
    read_fastx(dna)


def _reference(tmp: Path) -> Path:
    """The lambda genome with a run of N and a second contig (the flank index, contig ends)."""
    from gseek.datasets import lambda_genome
    from gseek.seqio import read_fastx, write_fasta

    genome = read_fastx(lambda_genome()).sequence(0)
    ref = tmp / "ref.fa"
    write_fasta(ref, [("lambda_a", genome[:30000] + "N" * 40 + genome[30000:40000]), ("lambda_b", genome[40000:])])
    return ref


def _index(backend: Backend, tmp: Path) -> None:
    from gseek.index import Index

    Index.build(_reference(tmp), wgram=8, device="cpu").save(tmp / "idx.gseek")


def _map(backend: Backend, tmp: Path) -> None:
    from gseek.datasets import lambda_reads
    from gseek.index import Index
    from gseek.pipeline import map_files
    from gseek.pipeline.tasks import warm_host

    warm_host().join()
    index_path = tmp / "idx.gseek"
    if not (index_path / "header.json").is_file():
        Index.build(_reference(tmp), wgram=8, device="cpu").save(index_path)
    short = tmp / "short.fq"  # reads below (k + 1) * min_piece: pieces with budgets, the flank index
    lines = Path(lambda_reads()).read_text().splitlines()[:400]
    short.write_text("".join(f"{x[:30]}\n" if i % 2 else f"{x}\n" for i, x in enumerate(lines)))
    for reads, options in ((lambda_reads(), {}), (short, {"mismatches": 3}), (lambda_reads(), {"report_all": True}),
                           (lambda_reads(), {"max_alignments": 2, "cigar_eq": True})):
        for out in ("o.sam", "o.bam"):
            map_files(index_path, reads, tmp / out, device=backend, **{"mismatches": 2, **options})
    from gseek.datasets.simulate import kmismatch_pairs

    # paired-end reads: the pairing and mate-field passes (FASTQ and FASTA mates)
    kmismatch_pairs(_reference(tmp), 200, 100, (150, 400), 2, seed=1, random_fraction=0.1).write(
        tmp / "p_1.fq", tmp / "p_2.fq")
    for options in ({}, {"report_all": True, "cigar_eq": True}):
        map_files(index_path, tmp / "p_1.fq", tmp / "pairs.sam", mate2=tmp / "p_2.fq", device=backend, mismatches=2,
                  **options)


def _align(backend: Backend, tmp: Path) -> None:
    import numpy as np

    from gseek.align import PairAligner
    from gseek.datasets.simulate import dp_families
    from gseek.dp import Scoring, xdrop_gapped, xdrop_ungapped
    from gseek.output.tabular import TsvFormatter

    fam = dp_families(1, 6, 600, seed=1, max_divergence=0.1)
    seqs = [s for _, s in fam.records]
    for mode in ("global", "local", "semiglobal"):
        for traceback in (False, True):
            a = PairAligner(mode=mode, traceback=traceback, device=backend)
            TsvFormatter().format(a.all_vs_all(seqs))
            TsvFormatter().format(a.all_vs_all([s[:100] for s in seqs]))
    PairAligner(min_identity=0.9, device=backend).all_vs_all(seqs)
    PairAligner(min_score=10, device=backend).all_vs_all(seqs)
    TsvFormatter().format(PairAligner(outfmt="6", device=backend).all_vs_all(seqs[:3]))
    PairAligner(matrix="BLOSUM62", gap_open=11, gap_extend=1, traceback=True, device=backend).align_pairs(
        ["MKVLAWGHR"], ["MKVIAWHR"])
    s = Scoring()
    codes = np.concatenate([s.encode(seqs[0]), s.encode(seqs[1])])
    n0, n1 = len(seqs[0]), len(seqs[1])
    xdrop_ungapped(backend, codes, [0], [n0], [n0], [n1], [50], [50], s, 20)
    xdrop_gapped(backend, codes, [0], [n0], [n0], [n1], [50], [50], s, 30)


def _blast(backend: Backend, tmp: Path) -> None:
    from gseek.datasets.simulate import blast_queries
    from gseek.index import Index
    from gseek.pipeline.tasks import blast_files

    ref = _reference(tmp)
    index_path = tmp / "idx.gseek"
    if not (index_path / "header.json").is_file():
        Index.build(ref, wgram=8, device="cpu").save(index_path)
    blast_queries(ref, 8, (300, 1500), seed=2).write(tmp / "q.fa")
    for task, options in (("megablast", {}), ("blastn", {}), ("blastn", {"ungapped": True, "dust": None})):
        for outfmt in ("6", "7 std btop qseq sseq qcovhsp"):
            blast_files(index_path, tmp / "q.fa", tmp / "q.tsv", task=task, outfmt=outfmt, device=backend, workers=0,
                        **options)


def _run(work: tuple[str, str]) -> tuple[str, float]:
    name, device = work
    started = time.perf_counter()
    backend = get_backend(device)
    with tempfile.TemporaryDirectory(prefix=f"gseek-compile-{name}-") as tmp:
        globals()[f"_{name}"](backend, Path(tmp))
    return name, time.perf_counter() - started


def compile_kernels(device: str | Backend = "auto", only: tuple[str, ...] = WORKLOADS,
                    processes: int = 1) -> dict[str, float]:
    """Compile what the ``only`` workloads use on ``device`` into the caches; seconds per workload.

    Arguments:
        device: the backend to compile for (``auto``, ``cpu``, ``gpu``, ``gpu:N``). The
            host stages' Numba code (parser, select, formatters) is compiled on any
            backend; the Numba twins of the kernels only for ``cpu``.
        only: a subset of :data:`WORKLOADS`.
        processes: run the workloads in this many processes at once (1: here).
    """
    unknown = [w for w in only if w not in WORKLOADS]
    if unknown:
        from .errors import OptionError

        raise OptionError(f"unknown compile workload {unknown[0]!r} (known: {', '.join(WORKLOADS)})")
    spec = device.spec if isinstance(device, Backend) else str(device)
    if spec == "auto":
        spec = get_backend("auto").spec
    jobs = [(name, spec) for name in WORKLOADS if name in only]
    if processes <= 1 or len(jobs) == 1:
        return dict(_run(job) for job in jobs)
    import multiprocessing

    with ProcessPoolExecutor(min(processes, len(jobs)), mp_context=multiprocessing.get_context("spawn")) as pool:
        return dict(pool.map(_run, jobs))


def cache_dirs() -> dict[str, str]:
    """Where the compiled code goes: Numba's cache and CuPy's kernel cache."""
    numba_dir = os.environ.get("NUMBA_CACHE_DIR") or "__pycache__ beside each module"
    cupy_dir = os.environ.get("CUPY_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cupy", "kernel_cache")
    return {"numba": numba_dir, "cupy": cupy_dir}

"""``gseek compile``: compile every kernel ahead of time, so no later command waits for a compiler.

Numba compiles a function the first time it is called with new argument
types and keeps the machine code in its on-disk cache (``__pycache__`` beside
the source, or ``NUMBA_CACHE_DIR``); CuPy compiles each ``.cu`` family once
per device architecture into its own cache (``CUPY_CACHE_DIR``). A fresh
install, container or cluster worker starts with both empty, and its first
command pays for them (``docs/startup.md``). This module runs each command's
stages once on tiny embedded data — the same functions with the same argument
types as real runs — so the caches hold everything afterwards.

Workloads (``--only``): ``parse`` (FASTA/FASTQ, gzip, several threads), ``index`` (the FM-index build), ``map``
(exact and approximate pieces, the flank index of reference N, every report mode, SAM and BAM), ``align`` (every DP
mode, score-only and trace-back, one thread and one warp a pair, lazy, protein, X-drop, the TSV rows), ``blast``
(both tasks of the BLAST-style search, ungapped too, outfmt 6 and 7; where ``makeblastdb`` is installed, a BLAST+
database converted on its first search). With ``processes`` > 1 they run in separate processes at once (the caches
are shared files). On a GPU backend the ``.cu`` families are compiled for that device as well.

>>> WORKLOADS
('parse', 'index', 'map', 'align', 'blast')
"""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from .backend import Backend, get_backend

__all__ = ["WORKLOADS", "build_cubins", "build_cupy_cache", "build_prebuilt", "collect_prebuilt", "compile_kernels",
           "status", "write_prebuilt"]

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
    protein.write_text(">p\nMKVLAW\n"), dna.write_text(">q\nacgtNNacgt\n")
    read_fastx(protein, alphabet="protein"), read_fastx(dna)
    # the encoding stages of the Python API (gseek.encode)
    import numpy as np

    from gseek.alphabet import encode_dna
    from gseek.encode import pack_2bit, reverse_complement, unpack_2bit, wgram_codes

    codes = encode_dna("ACGTNACGTACGTACGTA")
    packed, nmask = pack_2bit(backend, codes)
    unpack_2bit(backend, packed, nmask, codes.size)
    offsets = np.array([0, 5, 18])
    reverse_complement(backend, codes, offsets)
    wgram_codes(backend, codes, offsets, 2)


def _reference(tmp: Path) -> Path:
    """The lambda genome with a run of N and a second contig (the flank index, contig ends)."""
    from gseek.datasets import lambda_genome
    from gseek.seqio import read_fastx, write_fasta

    genome = read_fastx(lambda_genome()).sequence(0)
    ref = tmp / "ref.fa"
    write_fasta(ref, [("lambda_a", genome[:30000] + "N" * 40 + genome[30000:40000]), ("lambda_b", genome[40000:])])
    return ref


def _index(backend: Backend, tmp: Path) -> None:
    import numpy as np

    from gseek.index import Index
    from gseek.index.search import extend_intervals, occ_at, sa_at

    built = Index.build(_reference(tmp), wgram=8, device="cpu")
    built.save(tmp / "idx.gseek")
    wide = Index.build(_reference(tmp), wgram=0, pos64=True, device="cpu")  # 64-bit positions (texts >= 2^32)
    # the Python API's searches, on indexes built in this process and on one loaded from disk
    patterns = ["GGGCGGCGACCTCGCGGGTTTTCGCT", "ACGTTTAC", "NNACGT"]
    for index in (built, wide, Index.load(tmp / "idx.gseek", device=backend)):
        index.count(patterns)
        index.locate(patterns)
        fm, rows = index.device_arrays(), np.arange(int(index.C[4]) + 1)
        occ_at(index.backend, fm, rows)
        sa_at(index.backend, fm, rows[:-1])
        extend_intervals(index.backend, fm, np.array([0, 3, 5]), np.array([rows[-1], 3, 9]))


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
    import numpy as np

    from gseek.output.sam_route import Parts, route_lines

    # the lines of a sorted BAM against a reference of 1 Mbp or more, shared out among its sorts: from the
    # formatter's buffers (writable) and from bytes (read-only), each its own machine code
    for text in (bytearray(b"r\t0\tc\t7\t60\n" * 4), b"r\t0\tc\t7\t60\n" * 4):
        route_lines(np.frombuffer(text, np.uint8), Parts(["c"], [10], 2), chunk_bytes=8)
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

    seqs = [s for _, s in dp_families(1, 6, 600, seed=1, max_divergence=0.1).records]
    wide = {"match": 100, "mismatch": -150, "gap_open": 250, "gap_extend": 100}  # beyond int16 (and a 32-bit re-run)
    for more in ({"mode": "global"}, {"mode": "local"}, {"mode": "semiglobal"}, wide, {"traceback_memory": 1}):
        for traceback in (False, True):  # the last two: the one-pair kernels, where the CPU's lanes leave pairs
            a = PairAligner(traceback=traceback, device=backend, **more)
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
    from gseek.blast import purge, warm_paths
    from gseek.blast.compact_table import compact_lookup
    from gseek.blast.lookup import lookup_of_words, seeding, word_codes
    from gseek.blast.searcher import BlastSearcher
    from gseek.datasets.simulate import blast_queries
    from gseek.index import Index
    from gseek.pipeline import blast_files
    from gseek.seqio import read_fastx

    ref = _reference(tmp)
    index_path = tmp / "idx.gseek"
    if not (index_path / "header.json").is_file():
        Index.build(ref, wgram=8, device="cpu").save(index_path)
    queries = read_fastx(blast_queries(ref, 8, (300, 1500), seed=2).write(tmp / "q.fa")[0])
    words = word_codes(queries.codes, queries.offsets, 8)  # batches of > 2^18 words: the CPU's compact table,
    compact_lookup(words, 8), lookup_of_words(words, 8), seeding(words)  # the direct one (a QueryMask on the CPU)
    purge._lexsort([(queries.offsets[:2] > 0).astype("int64") << 50] * 2)  # keys past 63 bits (large searches): ties
    warm_paths.warm_large_searches(backend, index_path, queries)  # what only large searches reach (its module)
    for task in ("megablast", "blastn"):  # a database shard (its text repacked: --gpus, --db-volume-size)
        BlastSearcher(index_path, task=task, device=backend, shard=(1, 2)).search(queries)
    for task, options in (("megablast", {}), ("blastn", {}), ("blastn", {"ungapped": True, "dust": None}),
                          ("dc-megablast", {}), ("blastn-short", {})):  # dc-megablast: the template kernels
        for outfmt in ("6", "7 std btop qseq sseq qcovhsp"):
            blast_files(index_path, tmp / "q.fa", tmp / "q.tsv", task=task, outfmt=outfmt, device=backend, workers=0,
                        **options)
    if shutil.which("makeblastdb"):  # a BLAST+ database's conversion on its first search (where BLAST+ is installed)
        subprocess.run(["makeblastdb", "-in", str(ref), "-dbtype", "nucl", "-parse_seqids", "-out", str(tmp / "b")],
                       check=True, capture_output=True)
        blast_files(tmp / "b", tmp / "q.fa", tmp / "q.tsv", device=backend, workers=0)


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


def status():
    """What ``gseek --version`` says (a :class:`gseek.release.ShippedStatus`; ``str()`` gives its lines):
    gseek's, Python's, Numba's, llvmlite's, NumPy's and CuPy's versions, the backend ``--device auto``
    gets, and whether the machine code shipped for them is current here (the prebuilt CPU set of this
    Python and Numba, the cubins, the copy of CuPy's kernels). Starts no backend.

    >>> print(status())  # doctest: +ELLIPSIS
    gseek, version ...
    Python 3... Numba ...
    backend: ...
    prebuilt CPU machine code: ...
    """
    from .release import status as shipped_status

    return shipped_status()


def cache_dirs() -> dict[str, str]:
    """Where the compiled code goes: Numba's cache and CuPy's kernel cache."""
    from gseek.kernels._cupy_cache import cache_dir

    numba_dir = os.environ.get("NUMBA_CACHE_DIR") or "__pycache__ beside each module"
    return {"numba": numba_dir, "cupy": cache_dir(sys.modules.get("cupy"))}


# --------------------------------------------------------------------------- the prebuilt machine code

#: The packages whose folders hold gseek's modules (pyproject.toml's package-dir).
PACKAGES = ("gseek", "gseek.index", "gseek.kernels", "gseek.pipeline", "gseek.datasets")


def build_prebuilt(folder: str | os.PathLike | None = None, remove: bool = False) -> dict[str, str]:
    """Compile what ``gseek --device cpu compile`` compiles for a generic x86-64 CPU into this Python's
    and Numba's set of the prebuilt folder (``folder``, default :data:`~gseek.kernels._jit.PREBUILT`;
    the set: :func:`~gseek.kernels._jit.prebuilt_set`); what happened to each module (``kept``,
    ``written``, ``removed``).

    The compile runs in one fresh process (two would share the cache's index files, whose saves are
    not safe across processes: an entry could get another signature's code) with an empty Numba cache,
    the prebuilt code off and no other ``NUMBA_*`` setting (bounds checks, optimisation level, SVML
    would change the code without changing its key), so every function is compiled from the source as
    it is now. A module whose entries hold the same signatures and were built from the same import
    closure keeps its files (they would differ only in compiler-made names), so the folder changes
    only where the code did. A module of the old manifest that no longer has entries is removed only
    with ``remove`` (else :class:`ValueError`: a build that compiled less than before is a mistake
    more often than a change).
    """
    from gseek.kernels._jit import PREBUILT, PREBUILT_CPU, prebuilt_set

    with tempfile.TemporaryDirectory(prefix="gseek-prebuilt-") as cache:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "GSEEK_"))}
        env.update(NUMBA_CACHE_DIR=cache, NUMBA_CPU_NAME=PREBUILT_CPU, NUMBA_DISABLE_INTEL_SVML="1",
                   GSEEK_PREBUILT="0")
        subprocess.run([sys.executable, "-P", "-m", "gseek", "--device", "cpu", "--quiet", "compile"], env=env,
                       check=True)
        entries = collect_prebuilt(cache)
    return write_prebuilt(entries, (Path(folder) if folder else PREBUILT) / prebuilt_set(), remove=remove)


def _module_files(packages: tuple[str, ...]) -> dict[Path, str]:
    """Every source file of ``packages`` (as imported: links not followed, as Numba names them) -> module."""
    found: dict[Path, str] = {}
    for package in packages:
        spec = importlib.util.find_spec(package)
        for root in (spec.submodule_search_locations or []) if spec else []:
            for path in sorted(Path(root).rglob("*.py")):
                parts = path.relative_to(root).with_suffix("").parts
                name = ".".join((package, *parts[: -1 if parts[-1] == "__init__" else None]))
                found.setdefault(Path(os.path.abspath(path)), name)
    return found


def _index_entries(data: bytes) -> dict:
    """A Numba cache index file's entries: key (signature, (triple, CPU, features), hashes) -> data file name."""
    import pickle

    view = io.BytesIO(data)
    pickle.load(view)  # Numba's version
    return pickle.loads(view.read())[1]


def collect_prebuilt(cache: str | os.PathLike, packages: tuple[str, ...] = PACKAGES) -> dict[str, dict[str, bytes]]:
    """The Numba cache files in folder ``cache`` (a ``NUMBA_CACHE_DIR``) by module: module -> file name -> bytes.

    Each index entry is checked against its data file (the signature the code was compiled for, the
    generic CPU), and data files no entry names are left out; a file of no module of ``packages``, or
    an entry that does not check, raises :class:`ValueError`.
    """
    import pickle

    from numba.core.caching import _CacheLocator

    from gseek.kernels._jit import PREBUILT_CPU

    modules = _module_files(packages)
    folders = {_CacheLocator.get_suitable_cache_subpath(str(path)): path.parent for path in modules}
    entries: dict[str, dict[str, bytes]] = {}
    for index in sorted(Path(cache).glob("*/*.nbi")):
        source = folders.get(index.parent.name)
        module = modules.get(source / f"{index.name.split('.')[0]}.py") if source else None
        if module is None:
            raise ValueError(f"{index}: a cache file of no module of {', '.join(packages)}")
        files = entries.setdefault(module, {})
        files[index.name] = index.read_bytes()
        for key, name in _index_entries(files[index.name]).items():
            data = (index.parent / name).read_bytes()
            compiled_for = getattr(pickle.loads(data)[3], "args", None)  # CompileResult._reduce: the signature
            if tuple(compiled_for or ()) != tuple(key[0]) or tuple(key[1][1:]) != (PREBUILT_CPU, ""):
                raise ValueError(f"{index.parent / name}: compiled for {compiled_for}, {key[1]}; its index says "
                                 f"{key[0]} for the {PREBUILT_CPU} CPU")
            files[name] = data
    return entries


def _closure(module: str, modules: dict[str, Path]) -> set[str]:
    """``module`` and every module of ``modules`` it imports, at any depth (imports inside functions too)."""
    seen, todo = {module}, [module]
    while todo:
        name = todo.pop()
        path = modules[name]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = name.split(".")[: None if path.name == "__init__.py" else -1]
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                found = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            for other in found:
                if other in modules and other not in seen:
                    seen.add(other)
                    todo.append(other)
    return seen


def _imported_with(module: str, packages: tuple[str, ...]) -> set[str]:
    """The modules of ``packages`` that importing ``module`` loads (in a fresh process): what
    the source scan cannot see (a name a package's ``__getattr__`` imports, say)."""
    code = ("import importlib, sys; importlib.import_module(sys.argv[1]); "
            "print(*[m for m in sys.modules if m.split('.')[0] in sys.argv[2:]])")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", code, module, *{p.split(".")[0] for p in packages}], env=env,
                         capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def _file_digest(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def write_prebuilt(entries: dict[str, dict[str, bytes]], folder: Path, packages: tuple[str, ...] = PACKAGES,
                   remove: bool = False) -> dict[str, str]:
    """Write ``entries`` (:func:`collect_prebuilt`) and their manifest into ``folder`` (one set:
    ``PREBUILT/<prebuilt_set()>``); what happened per module.

    The manifest (written last) names each module's import closure and the SHA-256 of every file, so
    a folder left half-written, or a file damaged later, is not used (``gseek.kernels._jit``).
    """
    import llvmlite
    import numba
    import numpy

    from gseek.kernels._jit import PREBUILT_CPU, module_digest

    if not entries:
        raise ValueError("no compiled function to write (was anything compiled?)")
    modules = {name: path for path, name in _module_files(packages).items()}
    try:
        old = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        old = {}
    versions = {"numba": numba.__version__, "llvmlite": llvmlite.__version__,
                "numpy": ".".join(numpy.__version__.split(".")[:2]),
                "python": f"{sys.version_info[0]}.{sys.version_info[1]}", "cpu": PREBUILT_CPU}
    gone = sorted(set(old.get("modules", {})) - set(entries))
    if gone and not remove:
        raise ValueError(f"these modules had prebuilt code and have none now: {', '.join(gone)} "
                         "(remove=True, --remove, to drop them)")
    same_build = old.get("format") == 2 and all(old.get(k) == v for k, v in versions.items())
    manifest = {"format": 2, **versions, "modules": {}}
    done: dict[str, str] = {}
    folder.mkdir(parents=True, exist_ok=True)
    for module, files in sorted(entries.items()):
        closure = _closure(module, modules) | (_imported_with(module, packages) & set(modules))
        imports = {name: module_digest(name) for name in sorted(closure)}
        target, was = folder / module, old.get("modules", {}).get(module, {})
        if same_build and was.get("imports") == imports and _signatures(target, was.get("files")) == \
                _signatures_of(files):
            manifest["modules"][module] = was
            done[module] = "kept"
            continue
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir()
        for name, data in files.items():
            (target / name).write_bytes(data)
        manifest["modules"][module] = {"imports": imports,
                                       "files": {name: _file_digest(data) for name, data in sorted(files.items())}}
        done[module] = "written"
    for stale in gone:
        shutil.rmtree(folder / stale, ignore_errors=True)
        done[stale] = "removed"
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return done


def _signatures_of(files: dict[str, bytes]) -> dict[str, set[str]]:
    """Index file name -> the signatures it holds (as text), of files given as bytes."""
    return {name: {str(key[0]) for key in _index_entries(data)} for name, data in files.items()
            if name.endswith(".nbi")}


def _signatures(target: Path, digests: dict[str, str] | None) -> dict[str, set[str]] | None:
    """:func:`_signatures_of` the files in ``target``, if they are all there as ``digests`` says; else None."""
    try:
        files = {name: (target / name).read_bytes() for name in (digests or {})}
    except OSError:
        return None
    if not digests or any(_file_digest(data) != digests[name] for name, data in files.items()):
        return None
    return _signatures_of(files)


# --------------------------------------------------------------------------- the shipped CUDA machine code

def build_cubins(folder: str | os.PathLike | None = None, archs: tuple[str, ...] = ("90",)) -> dict[str, str]:
    """Compile every ``.cu`` family with NVRTC for each architecture of ``archs`` into the shipped
    cubin folder (``folder``, default :data:`gseek.kernels._cuda.CUBINS`); family -> files written.

    Each program is what a default GPU backend (its block size) loads, compiled with the options
    CuPy's ``RawModule`` gives NVRTC for a device of that architecture
    (:data:`~gseek.kernels._cuda.CUPY_OPTIONS`), so the cubin is the one CuPy would compile there.
    NVRTC comes from CuPy (``cupy.cuda.nvrtc``); no GPU is needed. Files of the folder that the new
    manifest does not name are removed; the manifest is written last.
    """
    import hashlib
    import inspect

    import cupy
    from cupy.cuda import nvrtc

    from gseek.backend import GpuBackend
    from gseek.kernels import _cuda
    from gseek.kernels._cupy_cache import nvrtc_version
    from gseek.kernels._shipped import write_folder

    from .errors import KernelCompileError

    target = Path(folder) if folder else _cuda.CUBINS
    block = inspect.signature(GpuBackend.__init__).parameters["block_size"].default
    manifest: dict = {"format": 1, "nvrtc": nvrtc_version(), "cupy": cupy.__version__,
                      "block_size": block, "families": {}}
    files: dict[str, bytes] = {}
    done: dict[str, str] = {}
    for name in _cuda.FAMILIES:
        family = importlib.import_module(f"gseek.kernels.{name}")
        code, options = _cuda.source(family.CUDA_SOURCE), _cuda.family_options(family, block)
        text, opts = _cuda.program(family.CUDA_SOURCE, code, options)
        for arch in archs:
            prog = nvrtc.createProgram(text, f"kernels/{family.CUDA_SOURCE}", [], [])
            try:
                try:
                    nvrtc.compileProgram(prog, [*opts, *(o.format(arch=arch) for o in _cuda.CUPY_OPTIONS)])
                except nvrtc.NVRTCError:
                    raise KernelCompileError(_cuda._first_error(f"kernels/{family.CUDA_SOURCE}",
                                                                nvrtc.getProgramLog(prog))) from None
                cubin = nvrtc.getCUBIN(prog)
            finally:
                nvrtc.destroyProgram(prog)
            file = f"{family.CUDA_SOURCE.rsplit('.', 1)[0]}.sm_{arch}.cubin"
            files[file] = cubin
            manifest["families"].setdefault(family.CUDA_SOURCE, []).append(
                {"arch": arch, "key": _cuda.cubin_key(family.CUDA_SOURCE, code, options), "file": file,
                 "sha256": hashlib.sha256(cubin).hexdigest()})
            done[name] = f"{done[name]} {file}" if name in done else file
    write_folder(target, files, manifest, lambda name: name.endswith(".cubin"))
    return done


def build_cupy_cache(folder: str | os.PathLike | None = None, processes: int = 4) -> dict[str, int]:
    """Fill an empty CuPy kernel cache by ``gseek --device gpu compile`` (every workload), then make it the
    shipped copy (``folder``, default :data:`gseek.kernels._cupy_cache.SHIPPED`); file -> bytes.

    Needs a GPU: CuPy generates its kernels' code at their first use. The compile runs in a child process
    with ``CUPY_CACHE_DIR`` set to a new folder and the seeding off (``GSEEK_CUPY_CACHE=0``), so the copy
    holds exactly what the commands compile today and nothing from an older copy.
    """
    import cupy

    from gseek.kernels import _cupy_cache

    with tempfile.TemporaryDirectory(prefix="gseek-cupy-cache-") as tmp:
        env = dict(os.environ, CUPY_CACHE_DIR=os.path.join(tmp, "cupy"), NUMBA_CACHE_DIR=os.path.join(tmp, "numba"),
                   GSEEK_CUPY_CACHE="0")
        env.pop("CUPY_CACHE_IN_MEMORY", None)  # (CuPy would write nothing to collect)
        subprocess.run([sys.executable, "-m", "gseek", "--quiet", "--device", "gpu", "compile", "--processes",
                        str(processes)], env=env, check=True, cwd=tmp)  # (not beside a source tree's gseek/)
        return _cupy_cache.collect(env["CUPY_CACHE_DIR"], cupy.__version__, _cupy_cache.nvrtc_version(),
                                   str(cupy.cuda.Device(0).compute_capability),
                                   Path(folder) if folder else _cupy_cache.SHIPPED)


def main(argv: list[str] | None = None) -> int:
    """``python -m gseek.precompile --prebuilt [--remove] [--folder DIR]``: rebuild the prebuilt machine code;
    ``--prebuilt-all [--python X.Y[=PATH] ...] [--jobs N] [--remove]``: that for every supported Python;
    ``--cubins [--arch 90 ...] [--folder DIR]``: rebuild the shipped CUDA machine code; ``--cupy-cache
    [--folder DIR]``: rebuild the shipped copy of CuPy's kernels (on a GPU machine)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m gseek.precompile", description=main.__doc__)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--prebuilt", action="store_true",
                      help="compile for a generic x86-64 CPU into this Python's and Numba's set of gseek's "
                           "prebuilt folder (gseek.kernels._jit)")
    what.add_argument("--prebuilt-all", action="store_true",
                      help="--prebuilt for every supported Python, each in a venv of its own with the Numba "
                           "pyproject.toml pins for it (gseek.release.build_all_sets; a source checkout)")
    what.add_argument("--cubins", action="store_true",
                      help="compile the .cu families with CuPy's NVRTC into gseek's cubin folder "
                           "(gseek.kernels._cuda; no GPU needed)")
    what.add_argument("--cupy-cache", action="store_true",
                      help="run gseek --device gpu compile into an empty CuPy cache and ship what CuPy compiled "
                           "(gseek.kernels._cupy_cache; needs a GPU)")
    parser.add_argument("--arch", action="append", help="with --cubins: a compute capability (default 90)")
    parser.add_argument("--python", action="append", metavar="X.Y=PATH",
                        help="with --prebuilt-all: build only these Pythons, with these interpreters")
    parser.add_argument("--jobs", type=int, help="with --prebuilt-all: builds at once (default: one a core)")
    parser.add_argument("--remove", action="store_true", help="drop modules that no longer have compiled code")
    parser.add_argument("--folder", help="write there instead of into the package's folder")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    from .errors import KernelCompileError

    try:
        if args.cubins:
            done, what = build_cubins(args.folder, tuple(args.arch or ("90",))), "families"
        elif args.cupy_cache:
            done, what = build_cupy_cache(args.folder), "CuPy kernels"
        elif args.prebuilt_all:
            from .release import build_all_sets, find_python

            chosen = dict(p.split("=", 1) if "=" in p else (p, find_python(p)) for p in args.python or ()) or None
            done, what = build_all_sets(chosen, args.jobs, args.remove), "prebuilt sets"
        else:
            from gseek.kernels._jit import prebuilt_set

            done, what = build_prebuilt(args.folder, remove=args.remove), f"modules of set {prebuilt_set()}"
    except (ImportError, KernelCompileError, ValueError, subprocess.CalledProcessError) as exc:
        need = " (--cubins needs CuPy and its NVRTC: pip install cupy-cuda12x; no GPU)" \
            if isinstance(exc, ImportError) else \
            " (--cupy-cache runs gseek --device gpu compile: it needs a GPU and CuPy)" if args.cupy_cache else ""
        print(f"python -m gseek.precompile: error: {exc}{need}", file=sys.stderr)
        return 1
    for name, result in done.items():
        print(f"{result:8} {name}")
    print(f"{len(done)} {what} in {time.perf_counter() - started:.1f} s")
    return 0

if __name__ == "__main__":
    sys.exit(main())

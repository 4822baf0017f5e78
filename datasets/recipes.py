"""Recipes that build real benchmark genomes from Debian example packages.

A recipe fetches ``.deb`` files (``apt-get download`` into the cache, or from
a folder of already-downloaded ``.deb`` files, for machines without network),
unpacks them with ``dpkg-deb -x`` (no root needed), and writes one FASTA (or
``.fa.gz``) under a temporary name, renamed when whole. A ``.json`` manifest
next to the output records the sources, size and SHA-256; a second call
returns at once when the output still matches it.

Recipes:

* ``ecoli`` -- E. coli K-12 MG1655 (4.6 Mbp), from ``ragout-examples``.
* ``bacteria75`` -- 75.4 Mbp of 21 bacterial genomes (37 contigs): every
  ``ragout-examples`` reference (E. coli, H. pylori, S. aureus, V. cholerae),
  the four ``kleborate-examples`` Klebsiella genomes and E. coli 536 from
  ``bowtie-examples``, in that order (files sorted by path within a package).
* ``pangenome`` -- at least 1 Gbp: mutated copies of ``bacteria75`` (1-5%
  substitutions, a tenth as many small indels), written contig by contig.

Sequences are written as gseek reads them: upper-case ``ACGTN``, every IUPAC
ambiguity letter as ``N``, 70 columns. A contig name that occurs in more than
one genome file is prefixed with its file's stem (``stem|name``).

>>> sorted(RECIPES)
['bacteria75', 'ecoli', 'pangenome']
>>> RECIPES["ecoli"].sources[0].package
'ragout-examples'
"""

from __future__ import annotations

import functools
import hashlib
import json
import lzma
import math
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from numpy.random import PCG64, Generator, SeedSequence

from gseek.alphabet import decode_dna
from gseek.errors import GseekError
from gseek.seqio import iter_fastx, read_fastx, write_fasta

from .simulate import mutate

__all__ = [
    "RecipeError",
    "DebSource",
    "Recipe",
    "RECIPES",
    "RECIPE_VERSION",
    "default_cache_dir",
    "fetch_deb",
    "extract_deb",
    "genome_files",
    "build",
    "manifest",
    "ecoli",
    "bacteria75",
    "pangenome",
]

#: Bumped whenever a recipe's output would change; part of every manifest.
RECIPE_VERSION = 1
#: Target size of the ``pangenome`` recipe.
PANGENOME_BASES = 1_000_000_000


class RecipeError(GseekError, ValueError):
    """A recipe cannot get or assemble its inputs (missing .deb, bad package, clash)."""


@dataclass(frozen=True)
class DebSource:
    """Files taken from one Debian package: glob patterns relative to the package root."""

    package: str
    patterns: tuple[str, ...]


@dataclass(frozen=True)
class Recipe:
    """A named benchmark genome and the package files it is built from."""

    name: str
    description: str
    sources: tuple[DebSource, ...]


_RAGOUT = "usr/share/doc/ragout/examples"
ECOLI = Recipe(
    "ecoli",
    "E. coli K-12 MG1655 from ragout-examples",
    (DebSource("ragout-examples", (f"{_RAGOUT}/E.Coli/references/MG1655-K12.fasta.gz",)),),
)
BACTERIA75 = Recipe(
    "bacteria75",
    "~75 Mbp: ragout-examples references + kleborate-examples genomes + E. coli 536 (bowtie-examples)",
    (
        DebSource("ragout-examples", (f"{_RAGOUT}/*/references/*.fasta.gz",)),
        DebSource("kleborate-examples", ("usr/share/doc/kleborate/examples/data/*.fna.xz",)),
        DebSource("bowtie-examples", ("usr/share/doc/bowtie/examples/genomes/NC_008253.fna.gz",)),
    ),
)
PANGENOME = Recipe(
    "pangenome",
    ">= 1 Gbp: mutated copies of bacteria75 (1-5% substitutions + small indels)",
    BACTERIA75.sources,
)
RECIPES: dict[str, Recipe] = {r.name: r for r in (ECOLI, BACTERIA75, PANGENOME)}


# --------------------------------------------------------------------- packages


def default_cache_dir() -> Path:
    """Where recipes keep .deb files, unpacked packages and outputs.

    ``$GSEEK_DATA_DIR`` if set, else ``$XDG_CACHE_HOME/gseek/datasets``
    (``~/.cache/gseek/datasets``).
    """
    if os.environ.get("GSEEK_DATA_DIR"):
        return Path(os.environ["GSEEK_DATA_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gseek" / "datasets"


def _run(args: list[str], *, cwd: Path | None = None, what: str) -> str:
    if shutil.which(args[0]) is None:
        raise RecipeError(f"{what}: {args[0]} not found (recipes need Debian's dpkg tools)")
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).split())[-300:]
        raise RecipeError(f"{what}: {' '.join(args)} failed (exit {done.returncode}): {tail}")
    return done.stdout


def _deb_field(deb: Path, field: str) -> str:
    return _run(["dpkg-deb", "-f", str(deb), field], what=str(deb)).strip()


def _compare_versions(a: str, b: str) -> int:
    if subprocess.run(["dpkg", "--compare-versions", a, "lt", b]).returncode == 0:
        return -1
    return 0 if a == b else 1


def _find_deb(folder: Path, package: str) -> Path | None:
    """The newest ``package_*.deb`` in ``folder`` (by the Version in its control file)."""
    found = sorted(p for p in folder.glob(f"{package}_*.deb") if p.is_file())
    if len(found) <= 1:
        return found[0] if found else None
    by_version = {_deb_field(p, "Version"): p for p in found}
    newest = max(by_version, key=functools.cmp_to_key(_compare_versions))
    return by_version[newest]


def fetch_deb(package: str, cache_dir: str | os.PathLike, *, debs: str | os.PathLike | None = None) -> Path:
    """Return a ``.deb`` of ``package``: from ``debs`` if given, else from the cache or ``apt-get download``.

    With ``debs`` (a folder of already-downloaded packages, e.g. on a machine
    without network) nothing is downloaded; a missing package is an error.
    """
    if debs is not None:
        deb = _find_deb(Path(debs), package)
        if deb is None:
            raise RecipeError(f"{debs}: no {package}_*.deb (fetch it with: apt-get download {package})")
        return deb
    folder = Path(cache_dir) / "debs"
    folder.mkdir(parents=True, exist_ok=True)
    deb = _find_deb(folder, package)
    if deb is None:
        _run(["apt-get", "download", package], cwd=folder,
             what=f"downloading {package} (no network? pass --debs DIR with {package}_*.deb)")
        deb = _find_deb(folder, package)
        if deb is None:
            raise RecipeError(f"apt-get download {package} left no {package}_*.deb in {folder}")
    return deb


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(functools.partial(fh.read, 1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def extract_deb(deb: str | os.PathLike, cache_dir: str | os.PathLike) -> Path:
    """Unpack ``deb`` with ``dpkg-deb -x`` under ``cache_dir/pkgs``; return the package root.

    Unpacked into a temporary folder and renamed when complete; reused on the
    next call (the folder name holds the package, version and checksum).
    """
    deb = Path(deb)
    package, version = _deb_field(deb, "Package"), _deb_field(deb, "Version")
    root = Path(cache_dir) / "pkgs" / f"{package}_{version.replace(':', '%3a')}_{_sha256(deb)[:12]}"
    if root.is_dir():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{root.name}.", dir=root.parent))
    try:
        _run(["dpkg-deb", "-x", str(deb), str(tmp)], what=f"unpacking {deb}")
        os.replace(tmp, root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return root


@dataclass(frozen=True)
class GenomeFile:
    """One genome file found in an unpacked package."""

    package: str
    version: str
    deb_sha256: str
    member: str
    path: Path

    @property
    def stem(self) -> str:
        name = self.path.name
        for suffix in (".gz", ".xz"):
            name = name.removesuffix(suffix)
        return name.rsplit(".", 1)[0] if "." in name else name


def genome_files(
    recipe: Recipe, cache_dir: str | os.PathLike, *, debs: str | os.PathLike | None = None
) -> list[GenomeFile]:
    """Fetch and unpack the packages of ``recipe``; return its genome files in recipe order."""
    out: list[GenomeFile] = []
    for source in recipe.sources:
        deb = fetch_deb(source.package, cache_dir, debs=debs)
        package = _deb_field(deb, "Package")
        if package != source.package:
            raise RecipeError(f"{deb}: package is {package!r}, expected {source.package!r}")
        root = extract_deb(deb, cache_dir)
        members = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
        version, digest = _deb_field(deb, "Version"), _sha256(deb)
        for pattern in source.patterns:
            hits = [m for m in members if PurePosixPath(m).match(pattern)]
            if not hits:
                raise RecipeError(f"{deb}: no file matches {pattern!r}")
            out += [GenomeFile(package, version, digest, m, root / m) for m in hits]
    return out


def _read_genome(path: Path):
    """Read a genome file (plain, gzip or xz) into one batch."""
    if path.name.endswith(".xz"):
        with tempfile.TemporaryDirectory() as tmp:
            plain = Path(tmp) / path.name[:-3]
            try:
                with lzma.open(path) as src, open(plain, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            except lzma.LZMAError as exc:
                raise RecipeError(f"{path}: cannot decompress: {exc}") from None
            return read_fastx(plain)
    return read_fastx(path)


def _genome_records(files: list[GenomeFile]) -> Iterator[tuple[str, str]]:
    """``(header, sequence)`` of every contig, names made unique across files.

    A name found in more than one file becomes ``stem|name`` in each of them;
    a name twice in one file, or still clashing after that, is an error.
    """
    stems: dict[str, list[str]] = {}
    for f in files:  # first pass: names only
        seen = _read_genome(f.path).name_list()
        if len(set(seen)) != len(seen):
            dup = next(n for n in seen if seen.count(n) > 1)
            raise RecipeError(f"{f.member}: contig name {dup!r} occurs twice in one file")
        for n in seen:
            stems.setdefault(n, []).append(f.stem)
    clash = {n for n, s in stems.items() if len(s) > 1}
    final = [f"{s}|{n}" if n in clash else n for n, ss in stems.items() for s in ss]
    if len(set(final)) != len(final):
        raise RecipeError(f"contig names still clash after prefixing the file stem: {sorted(clash)}")
    for f in files:
        batch = _read_genome(f.path)
        for i in range(len(batch)):
            name, desc = batch.name(i), batch.description(i)
            if name in clash:
                name = f"{f.stem}|{name}"
            yield (f"{name} {desc}" if desc else name), batch.sequence(i)


# --------------------------------------------------------------------- outputs + manifests


def _manifest_path(out: Path) -> Path:
    return out.with_name(out.name + ".json")


def _up_to_date(out: Path, recipe: str, params: dict) -> bool:
    """Whether ``out`` exists and matches its manifest (recipe, parameters, size, SHA-256)."""
    manifest = _manifest_path(out)
    if not (out.is_file() and manifest.is_file()):
        return False
    try:
        m = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return False
    return (
        m.get("recipe") == recipe
        and m.get("recipe_version") == RECIPE_VERSION
        and m.get("params") == params
        and m.get("size") == out.stat().st_size
        and m.get("sha256") == _sha256(out)
    )


class _Counter:
    """Counts the contigs and bases of records passing through."""

    def __init__(self, records: Iterator[tuple[str, str]]) -> None:
        self.records, self.contigs, self.bases = records, 0, 0

    def __iter__(self) -> Iterator[tuple[str, str]]:
        for header, seq in self.records:
            self.contigs += 1
            self.bases += len(seq)
            yield header, seq


def _write_output(out: Path, recipe: str, params: dict, records: Iterator[tuple[str, str]], sources: list) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    counter = _Counter(records)
    write_fasta(out, counter)
    manifest = {
        "recipe": recipe,
        "recipe_version": RECIPE_VERSION,
        "params": params,
        "output": out.name,
        "contigs": counter.contigs,
        "bases": counter.bases,
        "size": out.stat().st_size,
        "sha256": _sha256(out),
        "sources": sources,
    }
    tmp = _manifest_path(out).with_name(f".{_manifest_path(out).name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    os.replace(tmp, _manifest_path(out))
    return out


def _output_path(name: str, cache_dir: Path, out: str | os.PathLike | None, compress: bool) -> Path:
    if out is not None:
        return Path(out)
    return cache_dir / (f"{name}.fa.gz" if compress else f"{name}.fa")


def _sources(files: list[GenomeFile]) -> list[dict]:
    return [{"package": f.package, "version": f.version, "deb_sha256": f.deb_sha256, "member": f.member}
            for f in files]


def manifest(path: str | os.PathLike) -> dict:
    """The manifest written next to a recipe output (contigs, bases, size, sha256, sources)."""
    return json.loads(_manifest_path(Path(path)).read_text())


def _from_packages(
    recipe: Recipe,
    cache_dir: str | os.PathLike | None,
    debs: str | os.PathLike | None,
    out: str | os.PathLike | None,
    compress: bool,
) -> Path:
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = _output_path(recipe.name, cache, out, compress)
    if _up_to_date(path, recipe.name, {}):
        return path
    files = genome_files(recipe, cache, debs=debs)
    return _write_output(path, recipe.name, {}, _genome_records(files), _sources(files))


def ecoli(
    cache_dir: str | os.PathLike | None = None,
    *,
    debs: str | os.PathLike | None = None,
    out: str | os.PathLike | None = None,
    compress: bool = False,
) -> Path:
    """Build ``ecoli.fa`` (E. coli K-12 MG1655, 4,639,675 bp); return its path.

    Arguments:
        cache_dir: where .deb files, unpacked packages and the output live
            (default :func:`default_cache_dir`).
        debs: folder of already-downloaded .deb files; nothing is downloaded.
        out: output path instead of ``cache_dir/ecoli.fa``; ``.gz`` compresses.
        compress: write ``ecoli.fa.gz`` when ``out`` is not given.
    """
    return _from_packages(ECOLI, cache_dir, debs, out, compress)


def bacteria75(
    cache_dir: str | os.PathLike | None = None,
    *,
    debs: str | os.PathLike | None = None,
    out: str | os.PathLike | None = None,
    compress: bool = False,
) -> Path:
    """Build ``bacteria75.fa`` (21 genomes, 37 contigs, 75,380,882 bp); return its path.

    Arguments as for :func:`ecoli`. The manifest's ``bases`` holds the total.
    """
    return _from_packages(BACTERIA75, cache_dir, debs, out, compress)


def _pangenome_records(source: Path, copies: int, seed: int) -> Iterator[tuple[str, str]]:
    """Mutated copies of every contig of ``source``, contig by contig (bounded memory)."""
    rates = [0.01 + 0.04 * (c / (copies - 1) if copies > 1 else 0.0) for c in range(copies)]
    index = 0
    for batch in iter_fastx(source):
        for i in range(len(batch)):
            codes, name = batch.codes_of(i), batch.name(i)
            for c, sub_rate in enumerate(rates):
                rng = Generator(PCG64(SeedSequence([seed, index, c])))
                seq, _ = mutate(codes, rng, sub_rate, sub_rate / 10)
                yield f"{name}_copy{c + 1:02d} sub_rate={sub_rate:.4f} indel_rate={sub_rate / 10:.4f}", decode_dna(seq)
            index += 1


def pangenome(
    cache_dir: str | os.PathLike | None = None,
    *,
    debs: str | os.PathLike | None = None,
    out: str | os.PathLike | None = None,
    compress: bool = False,
    target_bases: int = PANGENOME_BASES,
    seed: int = 0,
) -> Path:
    """Build ``pangenome.fa``: mutated copies of ``bacteria75`` totalling >= ``target_bases``.

    Arguments as for :func:`ecoli`, and:
        target_bases: the output holds at least this many bases (1 Gbp).
        seed: copy ``c`` of contig ``i`` is mutated with ``SeedSequence([seed, i, c])``.

    Every contig of bacteria75 (built first, in the cache) is copied
    ``ceil(1.01 * target_bases / bacteria75 bases)`` times; copy ``c`` of
    ``C`` has substitution rate ``0.01 + 0.04 c / (C - 1)`` (1% to 5%) and a
    tenth of that rate of 1-3 bp indel events. Contigs are streamed, so
    memory stays at a few contigs whatever the target.
    """
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = _output_path("pangenome", cache, out, compress)
    params = {"target_bases": int(target_bases), "seed": int(seed)}
    if target_bases < 1 or seed < 0:
        raise RecipeError(f"pangenome needs target_bases >= 1 and seed >= 0, got {target_bases}, {seed}")
    if _up_to_date(path, "pangenome", params):
        return path
    source = bacteria75(cache, debs=debs)
    info = manifest(source)
    copies = max(1, math.ceil(1.01 * target_bases / info["bases"]))
    _write_output(path, "pangenome", params, _pangenome_records(source, copies, seed),
                  [{"recipe": "bacteria75", "sha256": info["sha256"], "copies": copies}] + info["sources"])
    bases = manifest(path)["bases"]
    if bases < target_bases:  # deletions outweighed insertions by over 1%: never seen
        _manifest_path(path).unlink()
        path.unlink()
        raise RecipeError(f"{path}: {bases} bases < target {target_bases}; try another seed")
    return path


_BUILDERS: dict[str, Callable[..., Path]] = {"ecoli": ecoli, "bacteria75": bacteria75, "pangenome": pangenome}


def build(name: str, cache_dir: str | os.PathLike | None = None, **options) -> Path:
    """Build the recipe ``name`` (see :data:`RECIPES`); return the output path.

    >>> build("human")
    Traceback (most recent call last):
    ...
    gseek.datasets.recipes.RecipeError: unknown recipe 'human' (known: bacteria75, ecoli, pangenome)
    """
    if name not in _BUILDERS:
        raise RecipeError(f"unknown recipe {name!r} (known: {', '.join(sorted(_BUILDERS))})")
    return _BUILDERS[name](cache_dir, **options)

"""The ``gseek`` command line: thin click commands over the Python API.

Commands parse options and call the API; errors print one line
(``gseek: error: ...``) and exit non-zero, with the traceback only under
``--debug``. Options that belong to every command (``--device``, ``-p``,
``--quiet``, ``--debug``) are accepted before or after the command name.
"""

from __future__ import annotations

import errno
import functools
import io
import os
import shlex
import signal
import sys
import time
import types
import warnings
from pathlib import Path

import click

from . import __version__
from .errors import GseekError, GseekWarning, Terminated, deliver_signal, one_line

DEVICE_CHOICE = click.Choice(["auto", "cpu", "gpu"], case_sensitive=False)

#: Exit status when the reader of stdout went away (``| head -1``): 128 + SIGPIPE,
#: what a shell reports for samtools or bowtie killed by SIGPIPE (docs/exit-codes.md).
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
#: Signals handled like Ctrl-C (exit 128 + the signal number: SIGTERM 143, SIGHUP 129).
TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class NotYetAvailable(GseekError):
    """A command whose engine is planned but not built yet."""


class _State:
    device: str = "auto"
    threads: int = 0
    quiet: bool = False
    debug: bool = False
    argv: tuple[str, ...] = ()


STATE = _State()


def _common(func):
    """Options every command takes; given after the command they override the group's."""

    def set_opt(name):
        def callback(ctx, param, value):
            if value is not None and value is not False:
                setattr(STATE, name, value)
            return value

        return callback

    func = click.option("--device", type=DEVICE_CHOICE, default=None, expose_value=False,
                        callback=set_opt("device"), help="Where kernels run: auto (GPU if found), cpu, gpu.")(func)
    func = click.option("-p", "--threads", type=click.IntRange(min=0), default=None, expose_value=False,
                        callback=set_opt("threads"), help="CPU threads (0 = all cores).")(func)
    func = click.option("--quiet", is_flag=True, default=None, expose_value=False,
                        callback=set_opt("quiet"), help="No progress or summary on stderr.")(func)
    func = click.option("--debug", is_flag=True, default=None, expose_value=False,
                        callback=set_opt("debug"), help="Show tracebacks on errors.")(func)
    return func


def _backend(device: str | None = None):
    """The backend of ``--device`` (or of ``device``), with ``-p`` threads."""
    from .backend import get_backend

    return get_backend(device or STATE.device, threads=STATE.threads)


def _say(message: str) -> None:
    if not STATE.quiet:
        click.echo(message, err=True)


MAP_OPTIONS = ("mismatches", "max_alignments", "report_all", "max_hits", "norc", "nofw", "no_unal", "xa_limit",
               "cigar_eq", "phred64", "trim5", "trim3", "skip", "upto")


def _map_options(func):
    """The read-mapping options shared by ``search`` and ``pipeline``, collected
    into one ``map_options`` dict argument and checked together."""
    options = [
        click.option("-v", "--mismatches", type=click.IntRange(0, 8), default=2, show_default=True,
                     help="map: report placements with at most this many mismatches (N counts as one)."),
        click.option("-k", "max_alignments", type=click.IntRange(min=1), default=None,
                     help="map: report up to N alignments per read, best strata first."),
        click.option("-a", "--all", "report_all", is_flag=True, help="map: report every placement."),
        click.option("--max-hits", type=click.IntRange(min=1), default=None, help="map: cap for --all (tag ZH:i)."),
        click.option("--norc", is_flag=True, help="Do not align the reverse-complement strand."),
        click.option("--nofw", is_flag=True, help="Do not align the forward strand."),
        click.option("--no-unal", is_flag=True, help="map: drop unmapped reads from the SAM output."),
        click.option("--xa-limit", type=click.IntRange(0, 2**31 - 1), default=3, show_default=True,
                     help="map: list other best/second-best placements in XA when there are at most N."),
        click.option("--cigar-eq", is_flag=True, help="map: CIGAR with =/X runs instead of M."),
        click.option("--phred64/--phred33", "phred64", default=False,
                     help="map: FASTQ qualities are Phred+64 ('@'..'~', written as Phred+33) or Phred+33 "
                          "('!'..'~') [--phred33]."),
        click.option("-5", "--trim5", type=click.IntRange(min=0), default=0,
                     help="map: trim N bases from the 5' (left) end of each read before mapping."),
        click.option("-3", "--trim3", type=click.IntRange(min=0), default=0,
                     help="map: trim N bases from the 3' (right) end of each read before mapping."),
        click.option("-s", "--skip", type=click.IntRange(min=0), default=0,
                     help="map: skip the first N reads of the input (of each query file in pipeline)."),
        click.option("-u", "--upto", "--qupto", "upto", type=click.IntRange(min=1), default=None,
                     help="map: stop after N reads (not counting skipped ones)."),
    ]

    @functools.wraps(func)
    def wrapper(**kwargs):
        map_options = {name: kwargs.pop(name) for name in MAP_OPTIONS}
        if map_options["max_hits"] is not None and not map_options["report_all"]:
            raise click.UsageError("--max-hits caps --all; give --all too")
        from .errors import OptionError
        from .mapper import check_map_options

        checked = {k: map_options[k] for k in ("max_alignments", "report_all", "max_hits", "norc", "nofw", "xa_limit")}
        try:  # every mistake in the options alone or together is a usage error (exit 2)
            check_map_options(map_options["mismatches"], **checked)
        except OptionError as exc:
            raise click.UsageError(str(exc)) from None
        return func(map_options=map_options, **kwargs)

    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


PAIR_OPTIONS = ("minins", "maxins", "orientation")


def _pair_options(func):
    """bowtie's paired-end options (``-I``, ``-X``, ``--fr``/``--rf``/``--ff``), collected
    into one ``pair_options`` dict of :func:`~gseek.pipeline.map_files` arguments."""
    from .mapper.pairs import DEFAULT_MAXINS, DEFAULT_MININS

    options = [
        click.option("-I", "--minins", type=click.IntRange(min=0), default=DEFAULT_MININS, show_default=True,
                     help="map, pairs: shortest fragment (leftmost to rightmost base of both mates) of a concordant "
                          "pair."),
        click.option("-X", "--maxins", type=click.IntRange(min=0), default=DEFAULT_MAXINS, show_default=True,
                     help="map, pairs: longest fragment of a concordant pair (bowtie 1's default)."),
        click.option("--fr", "orientation", flag_value="fr", default=True,
                     help="map, pairs: mate 1 forward upstream of mate 2 reverse (or the reverse) [default]."),
        click.option("--rf", "orientation", flag_value="rf", help="map, pairs: mate 1 reverse, mate 2 forward."),
        click.option("--ff", "orientation", flag_value="ff", help="map, pairs: both mates forward."),
    ]

    @functools.wraps(func)
    def wrapper(**kwargs):
        pair_options = {name: kwargs.pop(name) for name in PAIR_OPTIONS}
        if pair_options["minins"] > pair_options["maxins"]:
            raise click.UsageError(f"-I/--minins {pair_options['minins']} is larger than -X/--maxins "
                                   f"{pair_options['maxins']}")
        return func(pair_options=pair_options, **kwargs)

    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


BLAST_OPTIONS = ("evalue", "word_size", "reward", "penalty", "gapopen", "gapextend", "dust", "soft_masking",
                 "lcase_masking", "strand", "max_target_seqs", "max_hsps", "perc_identity", "qcov_hsp_perc",
                 "xdrop_ungap", "xdrop_gap", "xdrop_gap_final", "ungapped", "db_volume_size", "outfmt")


#: The suffixes of a number of bases (decimal, as sequence sizes are written).
_BASE_UNITS = types.MappingProxyType({"": 1, "K": 10**3, "M": 10**6, "G": 10**9})


class _BaseCount(click.ParamType):
    """A number of bases, decimal suffixes allowed: ``500K``, ``1M``, ``2.5G`` (1M = 1,000,000)."""

    name = "SIZE"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        text = str(value).strip().upper()
        number, unit = (text[:-1], text[-1]) if text[-1:] in _BASE_UNITS else (text, "")
        try:
            bases = float(number) * _BASE_UNITS[unit]
        except ValueError:
            self.fail(f"{value!r} is not a number of bases (e.g. 500K, 1M, 2G)", param, ctx)
        if bases < 1:
            self.fail(f"{value!r}: a volume holds at least 1 base", param, ctx)
        return int(bases)


def _dust_value(ctx, param, value):
    """``--dust yes|no|'LEVEL WINDOW LINKER'`` (BLAST+'s forms) as None, a triple or "default"."""
    if value is None:
        return None
    text = value.strip().lower()
    if text == "yes":
        return "yes"
    if text == "no":
        return "no"
    parts = text.split()
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise click.BadParameter(f"expected yes, no or 'LEVEL WINDOW LINKER' (e.g. '20 64 1'), not {value!r}")
    return tuple(int(p) for p in parts)


def _blast_options(func=None, *, outfmt: bool = True):
    """The BLAST-style search's options (BLAST+ 2.12's names) shared by ``search`` and ``pipeline``,
    collected into one ``blast_options`` dict of the values given (the task's presets fill the rest).
    ``outfmt=False``: the command has its own ``--outfmt`` (``pipeline``, shared with align)."""
    if func is None:
        return functools.partial(_blast_options, outfmt=outfmt)
    options = [
        click.option("--evalue", type=float, default=None, help="megablast/blastn: E-value cutoff [10]."),
    ]
    if outfmt:
        options.append(click.option(
            "--outfmt", default=None,
            help="megablast/blastn: 6 or 7, optionally with BLAST+ field keywords (e.g. '6 std qlen') [6]."))
    options += [
        click.option("--word-size", type=int, default=None, help="megablast/blastn: word size [28 / 11]."),
        click.option("--reward", type=int, default=None, help="megablast/blastn: match reward [1 / 2]."),
        click.option("--penalty", type=int, default=None, help="megablast/blastn: mismatch penalty [-2 / -3]."),
        click.option("--gapopen", type=int, default=None,
                     help="megablast/blastn: gap existence cost [0 / 5] (megablast 0 0: linear gaps)."),
        click.option("--gapextend", type=int, default=None,
                     help="megablast/blastn: gap extension cost [0 / 2]."),
        click.option("--dust", callback=_dust_value, default=None, metavar="yes|no|'L W K'",
                     help="megablast/blastn: DUST-mask queries for seeding [yes = '20 64 1']."),
        click.option("--soft-masking", type=click.BOOL, default=None, metavar="true|false",
                     help="megablast/blastn: masks apply to seeding only [true]."),
        click.option("--lcase-masking", is_flag=True, default=None, help="megablast/blastn: lowercase never seeds."),
        click.option("--strand", type=click.Choice(["both", "plus", "minus"]), default=None,
                     help="megablast/blastn: query strand(s) searched [both]."),
        click.option("--max-target-seqs", type=click.IntRange(min=1), default=None,
                     help="megablast/blastn: subjects kept per query [500]."),
        click.option("--max-hsps", type=click.IntRange(min=1), default=None,
                     help="megablast/blastn: HSPs kept per subject and query [all]."),
        click.option("--perc-identity", type=click.FloatRange(0, 100), default=None,
                     help="megablast/blastn: minimum percent identity [0]."),
        click.option("--qcov-hsp-perc", type=click.FloatRange(0, 100), default=None,
                     help="megablast/blastn: minimum query coverage per HSP [0]."),
        click.option("--xdrop-ungap", type=float, default=None, help="megablast/blastn: ungapped X-drop, bits [20]."),
        click.option("--xdrop-gap", type=float, default=None, help="megablast/blastn: gapped X-drop, bits [25 / 30]."),
        click.option("--xdrop-gap-final", type=float, default=None,
                     help="megablast/blastn: final gapped X-drop, bits [100]."),
        click.option("--ungapped", is_flag=True, default=None, help="megablast/blastn: no gapped extension."),
        click.option("--db-volume-size", type=_BaseCount(), default=None,
                     help="megablast/blastn: search the database in volumes of about SIZE bases (K/M/G; whole "
                          "contigs), one volume on a device at a time; the same output [the whole database, or on a "
                          "GPU the volumes that fit a quarter of its free memory]."),
    ]

    names = BLAST_OPTIONS if outfmt else tuple(n for n in BLAST_OPTIONS if n != "outfmt")

    @functools.wraps(func)
    def wrapper(**kwargs):
        blast_options = {name: kwargs.pop(name) for name in names}
        return func(blast_options=blast_options, **kwargs)

    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


SAM_OPTIONS = ("sort", "compression_level", "reference", "rg_id", "rg_fields", "rg_line")


def _sam_options(func):
    """The SAM/BAM/CRAM output options shared by ``search`` and ``pipeline --task
    map``, collected into one ``sam_options`` dict (``sort``, ``compression_level``,
    ``reference``, ``read_group``) of :func:`~gseek.pipeline.map_files` arguments; a
    mistake in them is a usage error (exit 2)."""
    options = [
        click.option("--sort/--no-sort", default=None,
                     help="map: coordinate-sort a .bam/.cram output and index it (.bai/.crai) "
                          "[sort .bam and .cram files; --no-sort: records in input order]."),
        click.option("--compression-level", type=click.IntRange(0, 9), default=None, metavar="0-9",
                     help="map: zlib level of a .bam/.cram/.sam.gz output, as samtools' -l (0: none, 9: smallest) "
                          "[samtools' default, 6]."),
        click.option("--reference", metavar="FASTA",
                     help="map: the reference FASTA a .cram output is encoded against (required for .cram)."),
        click.option("--rg-id", metavar="ID",
                     help="map: read group: write '@RG ID:ID' in the header and RG:Z:ID on every record."),
        click.option("--rg", "rg_fields", metavar="TAG:VALUE", multiple=True,
                     help="map: a field of the @RG line (SM:sample, PL:ILLUMINA, ...); needs --rg-id; repeatable."),
        click.option("-R", "rg_line", metavar="LINE",
                     help="map: the whole @RG line as bwa takes it, e.g. '@RG\\tID:lane1\\tSM:sample1'."),
    ]

    @functools.wraps(func)
    def wrapper(**kwargs):
        v = {name: kwargs.pop(name) for name in SAM_OPTIONS}
        from .errors import OptionError
        from .output.sam import read_group, read_group_line

        try:
            if v["rg_line"] is not None:
                if v["rg_id"] is not None or v["rg_fields"]:
                    raise OptionError("-R and --rg-id/--rg both give the read group; give one of them")
                group = read_group_line(v["rg_line"])
            else:
                group = read_group(v["rg_id"], v["rg_fields"])
        except OptionError as exc:
            raise click.UsageError(str(exc)) from None
        sam_options = {"sort": v["sort"], "compression_level": v["compression_level"], "reference": v["reference"],
                       "read_group": group}
        return func(sam_options=sam_options, **kwargs)

    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


def _blast_kwargs(given: dict) -> dict:
    """The given BLAST options as :class:`~gseek.blast.options.BlastOptions` overrides (``outfmt`` apart)."""
    from .blast.dust import DUST_LEVEL, DUST_LINKER, DUST_WINDOW

    out = {k: v for k, v in given.items() if v is not None and k != "outfmt"}
    for cli_name, name in (("gapopen", "gap_open"), ("gapextend", "gap_extend"), ("db_volume_size", "volume_size")):
        if cli_name in out:
            out[name] = out.pop(cli_name)
    if "dust" in out:
        out["dust"] = None if out["dust"] == "no" else (DUST_LEVEL, DUST_WINDOW, DUST_LINKER) \
            if out["dust"] == "yes" else out["dust"]
    return out


class _BrokenPipe(Exception):
    """A write to a pipe whose reader went away (EPIPE), out of the command:
    click would end the process with ``sys.exit(1)``; :func:`main` returns
    :data:`EXIT_BROKEN_PIPE`."""


class _Group(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                raise _BrokenPipe(str(exc)) from exc
            raise


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="gseek")
@_common
def cli() -> None:
    """gseek: GPU sequence search -- FM-index read mapping, BLASTN-style search and
    batched NW/SW alignment, with an identical CPU backend."""


# --------------------------------------------------------------------- index


@cli.command()
@click.argument("reference", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "prefix", metavar="PREFIX",
              help="Write the index to PREFIX.gseek/ [REFERENCE without .fa/.fasta/.fna/.gz].")
@click.option("--sa-sample", type=click.IntRange(min=1), default=16, show_default=True,
              help="Keep the SA at text positions that are multiples of N (locate walks < N steps).")
@click.option("--wgram", type=click.IntRange(0, 15), default=12, show_default=True,
              help="w of the w-gram table that jumps the first w steps of backward search (0: none).")
@click.option("--parts", type=click.Choice(["all", "text"]), default="all", show_default=True,
              help="text: only the packed text and contig table, for the BLAST-style search (seconds; "
                   "no suffix array, read mapping refuses it).")
@_common
def index(reference, prefix, sa_sample, wgram, parts) -> None:
    """Build the FM-index (BWT with interleaved Occ, sampled SA) and w-gram table of REFERENCE.

    The build runs on the CPU (the index is identical either way); --device
    applies to the searches that load it."""
    from .index import Index
    from .seqio.atomic import check_output

    started = time.perf_counter()
    out = _index_path(reference, prefix)
    check_output(out, [reference], folder=True)  # before the build: not the FASTA, nor holding it
    idx = Index.build(reference, sa_sample=sa_sample, wgram=wgram, threads=STATE.threads,
                      progress=not STATE.quiet and sys.stderr.isatty(), device="cpu", parts=parts)
    idx.save(out)
    _say(idx.summary())
    _say(f"[gseek] index {out} written in {time.perf_counter() - started:.2f} s")


def _index_path(reference: str, prefix: str | None) -> Path:
    """PREFIX.gseek, PREFIX defaulting to REFERENCE without its FASTA suffixes."""
    if prefix is None:
        prefix = str(reference)
        for suffix in (".gz", ".fa", ".fasta", ".fna", ".fas"):
            prefix = prefix.removesuffix(suffix)
    return Path(prefix if prefix.endswith(".gseek") else prefix + ".gseek")


# --------------------------------------------------------------------- search


#: ``--device auto`` maps reads on the CPU when all of them come from regular files of less text than
#: this (gzip counted at 4x its size): a GPU's start-up (context, index upload, kernels) costs more than
#: such a job. On the H100 host (16 cores) 1M reads (~250 MB) took 2.14 s on the GPU and 2.39 s on its
#: CPU, 1,000 reads 1.7-1.8 s against 0.92 s (benchmarks/RESULTS.md); 16 MiB is ~64k reads of 100 bp.
AUTO_CPU_BELOW = 16 << 20


def _small_input(paths) -> int | None:
    """Bytes of text in ``paths`` when every one is a regular file and they hold less than
    :data:`AUTO_CPU_BELOW`; None otherwise (stdin, a pipe or FIFO, or more)."""
    import stat

    total = 0
    for path in paths:
        try:
            info = os.stat(path) if path and path != "-" else None
            if info is None or not stat.S_ISREG(info.st_mode):
                return None
            with open(path, "rb") as handle:
                total += info.st_size * (4 if handle.read(2) == b"\x1f\x8b" else 1)
        except OSError:
            return None  # the reader reports it, with the file's name
    return total if total < AUTO_CPU_BELOW else None


def _gpu_list(ctx, param, value):
    """``--gpus 0,1`` as a list of ordinals."""
    if value is None:
        return None
    try:
        gpus = [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"expected GPU ordinals like 0,1, not {value!r}") from None
    if not gpus or any(g < 0 for g in gpus) or len(set(gpus)) != len(gpus):
        raise click.BadParameter(f"expected distinct GPU ordinals like 0,1, not {value!r}")
    return gpus


@cli.command()
@click.option("-x", "--index", "index_prefix", metavar="INDEX", help="Index prefix built by `gseek index`.")
@click.option("-q", "-U", "--query", "queries", metavar="FILE", multiple=True,
              help="Reads (FASTA/FASTQ, gzip ok, - for stdin) or BLAST queries; repeatable.")
@click.option("-1", "mate1", metavar="FILE", help="map: paired-end reads, mate 1 (FASTA/FASTQ, gzip ok); with -2.")
@click.option("-2", "mate2", metavar="FILE", help="map: paired-end reads, mate 2; with -1.")
@click.option("--interleaved", metavar="FILE", help="map: paired-end reads, mate 1 and mate 2 of each pair in turn.")
@click.option("--task", type=click.Choice(["map", "megablast", "blastn"]), default="map", show_default=True,
              help="map: complete k-mismatch read mapping; megablast/blastn: seed-and-extend search.")
@_map_options
@_pair_options
@_blast_options
@_sam_options
@click.option("-o", "--output", metavar="FILE",
              help="Output: map: FILE.sam, FILE.sam.gz (BGZF-compressed SAM), FILE.bam or FILE.cram (sorted and "
                   "indexed unless --no-sort) [SAM on stdout]; megablast/blastn: BLAST tabular text (.gz: gzip).")
@click.option("--gpus", metavar="0,1,...", callback=_gpu_list,
              help="Search on these GPUs at once: each takes whole jobs (chunks of the input) in turn; the same "
                   "output as one device [the --device one].")
@click.option("--un", metavar="FILE", help="map: write the reads that failed to align to FILE, as given (gzip: .gz; "
                                            "pairs: FILE_1, FILE_2 as bowtie names them).")
@click.option("--al", metavar="FILE", help="map: write the reads that aligned to FILE, as given (gzip: .gz; pairs: "
                                            "aligned concordantly, FILE_1, FILE_2).")
@_common
def search(index_prefix, queries, mate1, mate2, interleaved, task, map_options, pair_options, blast_options,
           sam_options, output, gpus, un, al) -> None:
    """Map reads (--task map, SOAP3-style complete k-mismatch; paired-end with
    -1/-2 or --interleaved) or search queries (--task megablast|blastn,
    G-BLASTN-style) against an index."""
    paired = mate1 is not None or mate2 is not None or interleaved is not None
    if gpus is not None and STATE.device == "cpu":
        raise click.UsageError("--gpus and --device cpu exclude each other")
    devices = None if gpus is None else [f"gpu:{g}" for g in gpus]
    if task != "map":
        if un or al:
            raise click.UsageError(f"--un/--al: options of --task map, not of --task {task}")
        if paired or _given(PAIR_OPTIONS):
            raise click.UsageError(f"paired-end reads (-1/-2, --interleaved, -I/-X/--fr/--rf/--ff): --task map only, "
                                   f"not --task {task}")
        _blast_search(index_prefix, queries, task, blast_options, output, devices)
        return
    given = _given(BLAST_OPTIONS)
    if given:
        raise click.UsageError(f"{', '.join(given)}: these apply to --task megablast|blastn; --task map writes SAM/BAM")
    if not index_prefix:
        raise click.UsageError("--task map needs -x INDEX")
    if paired:
        if queries:
            raise click.UsageError("give -q FILE (unpaired reads) or -1/-2 / --interleaved (pairs), not both")
        if interleaved is not None and (mate1 is not None or mate2 is not None):
            raise click.UsageError("give -1 FILE -2 FILE or --interleaved FILE, not both")
        if interleaved is None and (mate1 is None or mate2 is None):
            raise click.UsageError("paired-end reads need both -1 FILE and -2 FILE")
        queries = (interleaved,) if interleaved is not None else (mate1,)
        pair_options = dict(pair_options, mate2=mate2, interleaved=interleaved is not None)
    else:
        given = _given(PAIR_OPTIONS)
        if given:
            raise click.UsageError(f"{', '.join(given)}: options of paired-end reads (-1/-2 or --interleaved)")
        pair_options = {}
    if not queries:
        raise click.UsageError("--task map needs -q FILE (or -1 FILE -2 FILE, or --interleaved FILE)")
    from .pipeline import map_files
    from .pipeline.tasks import warm_host

    for path in (output, un, al):
        _remove_stale_temporaries(path)
    started = time.perf_counter()
    small = _small_input([*queries, mate2] if mate2 else queries) if STATE.device == "auto" and devices is None \
        else None
    device = None if devices is not None else _backend("cpu" if small is not None else None)
    with compile_notice(), _CountBar("gseek search", " pairs" if paired else " reads") as bar:
        warm = warm_host()  # Numba's set-up overlaps the device's and the index's
        try:
            counts = map_files(index_prefix, list(queries), output or "-", device=device, devices=devices,
                               threads=STATE.threads, command=_command_line(), un=un, al=al,
                               progress=bar.update if bar.shown else None, **map_options, **sam_options,
                               **pair_options)
        finally:
            warm.join()
    for line in bowtie_summary(counts["reads"], counts["mapped"], counts["alignments"],
                               paired=counts.get("paired", False)):
        _say(line)
    why = "" if STATE.device != "auto" else \
        f" (auto: {small / (1 << 20):.1f} MiB of reads: the CPU answers before a GPU would have started)" \
        if small is not None else " (auto: a GPU was found)" if counts["device"].startswith("gpu") \
        else " (auto: no GPU found)"
    what = (f"{counts['reads']:,} pairs, {counts['mapped']:,} aligned concordantly, {counts['unmapped']:,} not "
            f"({counts['mates_aligned']:,} mates aligned; {counts['too_long']:,} mates too long, "
            f"{counts['too_short']:,} too short)" if counts.get("paired") else
            f"{counts['reads']:,} reads, {counts['mapped']:,} mapped, {counts['unmapped']:,} unmapped "
            f"({counts['too_long']:,} too long, {counts['too_short']:,} too short)")
    _say(f"[gseek] {what}, {counts['records']:,} records in {time.perf_counter() - started:.2f} s on "
         f"{counts['device']}{why}")


def _blast_search(index_prefix, queries, task, blast_options, output, devices=None) -> None:
    """``gseek search --task megablast|blastn``."""
    foreign = _given(MAP_OPTIONS + SAM_OPTIONS)
    if foreign:
        raise click.UsageError(f"{', '.join(foreign)}: options of --task map, not of --task {task}")
    if not index_prefix:
        raise click.UsageError(f"--task {task} needs -x INDEX (a `gseek index` directory)")
    if not queries:
        raise click.UsageError(f"--task {task} needs -q FILE (FASTA queries)")
    from .errors import OptionError
    from .pipeline.tasks import blast_files

    options = _blast_kwargs(blast_options)
    outfmt = blast_options["outfmt"] or "6"
    try:
        from .blast.options import BlastOptions
        from .blast.report import parse_outfmt

        BlastOptions.for_task(task, **{k: v for k, v in options.items() if k != "volume_size"})
        parse_outfmt(outfmt)
    except OptionError as exc:
        raise click.UsageError(str(exc)) from None
    _remove_stale_temporaries(output)
    started = time.perf_counter()
    counts = blast_files(index_prefix, list(queries), output or "-", task=task, outfmt=outfmt,
                         device=_backend() if devices is None else None, devices=devices, threads=STATE.threads,
                         database=os.fspath(index_prefix), command=_command_line(), **options)
    why = "" if STATE.device != "auto" else " (auto: a GPU was found)" if counts["device"].startswith("gpu") \
        else " (auto: no GPU found)"
    _say(f"[gseek] {task}: {counts['queries']:,} queries, {counts['with_hits']:,} with hits, {counts['hsps']:,} HSPs "
         f"in {time.perf_counter() - started:.2f} s on {counts['device']}{why}")


class compile_notice:
    """While entered, the first Numba compile of the process (a kernel missing
    from the cache: the first run after an install) says so on stderr, once:
    the command is not stuck, and ``gseek compile`` does it ahead of time."""

    _said = False
    TEXT = ("[gseek] compiling kernels on first use (once, into the cache; tens of seconds; "
            "`gseek compile` does it ahead of time)")

    def __enter__(self) -> compile_notice:
        from numba.core import event

        outer = self

        class Listener(event.Listener):
            def on_start(self, ev) -> None:
                if not compile_notice._said:
                    compile_notice._said = True
                    _say(outer.TEXT)

            def on_end(self, ev) -> None:
                pass

        self._listener = Listener()
        event.register("numba:compile", self._listener)
        return self

    def __exit__(self, *exc) -> None:
        from numba.core import event

        event.unregister("numba:compile", self._listener)


def bowtie_summary(reads: int, aligned: int, alignments: int, *, paired: bool = False) -> list[str]:
    """The lines bowtie 1.3.1 prints on stderr after a run (``-v`` mode, no ``-m``).

    ``paired``: ``reads`` are pairs, ``aligned`` pairs aligned concordantly,
    ``alignments`` concordant pairs reported ("paired-end alignments").

    >>> print("\\n".join(bowtie_summary(3, 2, 5)))
    # reads processed: 3
    # reads with at least one alignment: 2 (66.67%)
    # reads that failed to align: 1 (33.33%)
    Reported 5 alignments
    >>> bowtie_summary(0, 0, 0)[1:]
    ['# reads with at least one alignment: 0 (0.00%)', '# reads that failed to align: 0 (0.00%)', 'No alignments']
    >>> bowtie_summary(300, 270, 270, paired=True)[-1]
    'Reported 270 paired-end alignments'
    """

    def percent(n: int) -> str:
        return f"{100.0 * n / reads if reads else 0.0:.2f}%"

    return [f"# reads processed: {reads}",
            f"# reads with at least one alignment: {aligned} ({percent(aligned)})",
            f"# reads that failed to align: {reads - aligned} ({percent(reads - aligned)})",
            f"Reported {alignments} {'paired-end ' if paired else ''}alignments" if alignments else "No alignments"]


# --------------------------------------------------------------------- align


ALIGN_OPTIONS = ("mode", "free_ends", "match", "mismatch", "gap_open", "gap_extend", "matrix", "min_score",
                 "min_identity", "traceback", "cigar_m", "outfmt")


def _align_options(func):
    """The DP options shared by ``align`` and ``pipeline --task align``, collected
    into one ``align_options`` dict of :class:`~gseek.align.PairAligner` arguments
    (options the user did not give keep the API's defaults, so the API checks
    what was given)."""
    options = [
        click.option("--mode", type=click.Choice(["global", "local", "semiglobal"]), default="global",
                     show_default=True),
        click.option("--free-ends", default=None,
                     help="semiglobal: free overhangs, comma-separated from query_start, query_end, target_start, "
                          "target_end [all four]."),
        click.option("--match", type=int, default=None, help="DNA match score [2]."),
        click.option("--mismatch", type=int, default=None, help="DNA mismatch score [-3]."),
        click.option("--gap-open", type=int, default=5, show_default=True, help="Cost of opening a gap (>= 0)."),
        click.option("--gap-extend", type=int, default=2, show_default=True, help="Cost of each gap base (>= 0)."),
        click.option("--matrix", metavar="NAME", help="Substitution matrix from Biopython (e.g. BLOSUM62)."),
        click.option("--min-score", type=int, default=None, help="Trace back only pairs scoring at least this."),
        click.option("--min-identity", type=float, default=None,
                     help="Trace back only pairs at least this identical."),
        click.option("--traceback/--score-only", default=False, help="Report CIGAR and extents."),
        click.option("--cigar-m", is_flag=True, help="Write M instead of =/X in CIGARs."),
        click.option("--outfmt", default=None, help="'6' or '6 COLUMNS...' (BLAST-style tabular) [gseek TSV]."),
    ]

    @functools.wraps(func)
    def wrapper(**kwargs):
        v = {name: kwargs.pop(name) for name in ALIGN_OPTIONS}
        align_options = {k: v[k] for k in ("mode", "gap_open", "gap_extend", "matrix", "min_score", "min_identity",
                                           "traceback", "cigar_m", "outfmt")}
        free_ends = v["free_ends"]
        given = dict(match=v["match"], mismatch=v["mismatch"],
                     free_ends=None if free_ends is None else tuple(x for x in free_ends.split(",") if x))
        align_options.update({k: x for k, x in given.items() if x is not None})
        return func(align_options=align_options, **kwargs)

    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


def _check_align_options(align_options: dict) -> None:
    """The DP options checked as the API checks them (an aligner built on the
    CPU, no input read): a mistake alone or together is a usage error (exit 2)."""
    from .align import PairAligner
    from .errors import OptionError

    try:
        PairAligner(device="cpu", threads=1, **align_options)
    except OptionError as exc:
        raise click.UsageError(str(exc)) from None


def _given(names) -> list[str]:
    """The options among ``names`` (parameter names) set on the command line, as ``--option`` text."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    by_name = {p.name: p for p in ctx.command.params}
    return ["/".join([max(by_name[n].opts, key=len), *by_name[n].secondary_opts]) for n in names
            if ctx.get_parameter_source(n) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)]


def _cluster_options(func):
    """``--scheduler`` / ``--local-cluster``: the run's tasks on a Dask cluster
    (``docs/cluster.md``), collected into one ``cluster`` argument (None: this process)."""
    options = [
        click.option("--scheduler", metavar="tcp://HOST:PORT", default=None,
                     help="Run the tasks on the Dask cluster of this scheduler (needs gseek[dask]; docs/cluster.md)."),
        click.option("--local-cluster", type=click.IntRange(min=1), default=None, metavar="N",
                     help="Run the tasks on a Dask cluster of N worker processes started on this machine "
                          "(each with -p threads, default the cores over N)."),
    ]

    @functools.wraps(func)
    def wrapper(**kwargs):
        scheduler, local = kwargs.pop("scheduler"), kwargs.pop("local_cluster")
        if scheduler is not None and local is not None:
            raise click.UsageError("--scheduler and --local-cluster exclude each other")
        cluster = None if scheduler is None and local is None else (scheduler, local)
        return func(cluster=cluster, **kwargs)

    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


def _cluster_threads(cluster) -> int:
    """CPU threads of each worker: ``-p``, or with ``--local-cluster N`` and no ``-p`` the cores over N."""
    if cluster is not None and cluster[1] is not None and not STATE.threads:
        return max(1, (os.cpu_count() or 1) // cluster[1])
    return STATE.threads


def _client(cluster):
    """A Dask client for ``cluster`` (``(scheduler, local workers)``), closed at the end; None without one."""
    if cluster is None:
        import contextlib

        return contextlib.nullcontext(None)
    from .pipeline.cluster import cluster_client

    return cluster_client(*cluster)


@cli.command()
@click.option("-i", "--input", "seqs", metavar="FASTA", help="Sequences for --all-vs-all.")
@click.option("--all-vs-all", is_flag=True, help="Align every pair i < j of --input.")
@click.option("-q", "--query", metavar="FASTA", help="Query sequences.")
@click.option("-t", "--target", metavar="FASTA", help="Target sequences (all queries vs all targets).")
@click.option("--pairs", metavar="TSV", help="Only these 'query<TAB>target' name pairs.")
@_align_options
@click.option("-o", "--output", metavar="TSV", help="Output table [stdout].")
@_cluster_options
@_common
def align(seqs, all_vs_all, query, target, pairs, align_options, output, cluster) -> None:
    """Batched NW/SW/semiglobal alignment with optional (lazy) trace-back."""
    if all_vs_all:
        if not seqs or query or target or pairs:
            raise click.UsageError("--all-vs-all takes -i FASTA (and no -q/-t/--pairs)")
    elif not (query and target) or seqs:
        raise click.UsageError("give -q FASTA -t FASTA (optionally --pairs TSV), or -i FASTA --all-vs-all")
    _check_align_options(align_options)
    _remove_stale_temporaries(output)
    bar = _CountBar("gseek align", " pairs")
    options = dict(device=_backend() if cluster is None else STATE.device, threads=_cluster_threads(cluster),
                   progress=bar.update, **align_options)
    with _client(cluster) as client, bar:
        if client is not None:
            options["client"] = client
        if all_vs_all:  # every pair i < j of one set
            from .pipeline.tasks import align_pairs_files

            done = align_pairs_files(seqs, output, total=bar.set_total, **options)
        elif pairs:  # the pairs a list names
            from .pipeline.tasks import align_pairs_files

            done = align_pairs_files(target, output, queries=query, pairs=pairs, total=bar.set_total, **options)
        else:  # every query against every target: the query file streams (a pipeline of one file)
            from .pipeline.tasks import align_files

            done = align_files(target, query, output, **options)
    _say(f"[gseek] align: {done['rows']:,} alignments on {done['device']}")


class _CountBar:
    """A tqdm bar counting ``unit`` (its rate: ``unit``/s) on a terminal's stderr;
    none with --quiet or when stderr is not a terminal (a log). ``gseek align``
    counts pairs (``set_total`` when known), ``gseek search`` reads as their
    records are written."""

    def __init__(self, desc: str, unit: str) -> None:
        self.desc, self.unit = desc, unit
        self.total: int | None = None
        self._bar = None

    @property
    def shown(self) -> bool:
        return self._bar is not None

    def __enter__(self) -> _CountBar:
        if not STATE.quiet and sys.stderr.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=self.total, desc=self.desc, unit=self.unit, unit_scale=True, file=sys.stderr)
        return self

    def set_total(self, total: int) -> None:
        if self._bar is not None:
            self._bar.total = total
            self._bar.refresh()

    def update(self, n: int) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.close()


# --------------------------------------------------------------------- pipeline


@cli.command()
@click.option("--queries", "query_list", metavar="LIST", required=True,
              help="Text file: one query file per line, optional second column = output name.")
@click.option("--task", type=click.Choice(["map", "align", "megablast", "blastn"]), default="map", show_default=True,
              help="map: k-mismatch read mapping (SAM); align: DP of every query against every target (TSV).")
@click.option("-x", "--index", "index_prefix", metavar="INDEX", help="map: index prefix built by `gseek index`.")
@click.option("-t", "--target", metavar="FASTA", help="align: the target sequences (every query against each).")
@click.option("--outdir", metavar="DIR", required=True, help="Output folder (with summary.tsv).")
@click.option("--gpus", metavar="0,1,...", callback=_gpu_list,
              help="GPUs to use (map: one prelim worker each; align: two, on their own CUDA streams).")
@click.option("--split", type=click.Choice(["queries", "database"]), default="queries", show_default=True,
              help="megablast/blastn with --gpus or on a cluster: each GPU (worker) takes whole query jobs (queries), "
                   "or holds one shard of the database and searches every job (database); the same output either "
                   "way.")
@click.option("--resume", is_flag=True, help="Skip files whose outputs are complete.")
@_map_options
@_pair_options
@click.option("--interleaved", is_flag=True,
              help="map: each one-file query holds paired-end reads, mate 1 and mate 2 of each pair in turn "
                   "(a line 'R1 R2 [OUTPUT]' is a pair of mate files either way).")
@_sam_options
@_align_options
@_blast_options(outfmt=False)
@click.option("--workers", type=click.IntRange(min=0), default=2, show_default=True,
              help="Finalize threads (SAM/TSV formatting) beside the device workers; 0: everything in one thread.")
@click.option("--job-mb", type=click.FloatRange(min=0, min_open=True), default=None,
              help="MiB of query input per job (big files are split, small ones combined) "
                   "[map: 64 on a GPU, 16 on the CPU; align: about 2^40 DP cells on a GPU, 2^32 on the CPU].")
@_cluster_options
@_common
def pipeline(query_list, task, index_prefix, target, outdir, gpus, split, resume, map_options, pair_options,
             interleaved, sam_options, align_options, blast_options, workers, job_mb, cluster) -> None:
    """Run a search over many query files with the threaded query/job/prelim/result pipeline."""
    if split == "database" and task not in ("megablast", "blastn"):
        raise click.UsageError("--split database: for --task megablast|blastn (with --gpus, or on a cluster)")
    if gpus is not None and STATE.device == "cpu":
        raise click.UsageError("--gpus and --device cpu exclude each other")
    if gpus is not None and cluster is not None:
        raise click.UsageError("--gpus: on a cluster each worker uses its own GPU (`dask cuda worker`); "
                               "give no --gpus with --scheduler or --local-cluster")
    if task == "map":
        if index_prefix is None or target is not None:
            raise click.UsageError("--task map takes -x/--index INDEX (and no -t)")
        foreign = _given(ALIGN_OPTIONS) + _given(BLAST_OPTIONS[:-1])
        reference, options = index_prefix, {**map_options, **sam_options, **pair_options}
        if interleaved:
            options["interleaved"] = True
    elif task in ("megablast", "blastn"):
        if index_prefix is None or target is not None:
            raise click.UsageError(f"--task {task} takes -x/--index INDEX (and no -t)")
        foreign = [o for o in _given(ALIGN_OPTIONS) if o != "--outfmt"] + _given(
            MAP_OPTIONS + SAM_OPTIONS + PAIR_OPTIONS + ("interleaved",))
        reference, options = index_prefix, _blast_kwargs(blast_options)
        options["outfmt"] = align_options["outfmt"] or "6"
        options["database"] = os.fspath(index_prefix)
        if split == "database":
            options["split"] = split
        from .blast.options import BlastOptions
        from .errors import OptionError

        try:
            BlastOptions.for_task(task, **{k: v for k, v in options.items() if k not in ("outfmt", "database",
                                                                                        "split", "volume_size")})
        except OptionError as exc:
            raise click.UsageError(str(exc)) from None
    else:
        if target is None or index_prefix is not None:
            raise click.UsageError("--task align takes -t/--target FASTA, the targets (and no -x)")
        foreign = _given(MAP_OPTIONS + SAM_OPTIONS + PAIR_OPTIONS + ("interleaved",)) + _given(BLAST_OPTIONS[:-1])
        reference, options = target, align_options
    if foreign:
        raise click.UsageError(f"{', '.join(foreign)}: not an option of --task {task}")
    if task == "align":
        _check_align_options(align_options)
    from .pipeline import run_pipeline
    from .pipeline.tasks import warm_host

    # Numba's set-up overlaps the device's and the index's (on a cluster, the workers map)
    with compile_notice():
        warm = warm_host() if task == "map" and cluster is None else None
        try:
            with _client(cluster) as client:
                device = STATE.device if client is not None else _backend() if gpus is None else "auto"
                summary = run_pipeline(query_list, reference, outdir, task, gpus=gpus, device=device,
                                       threads=_cluster_threads(cluster), resume=resume,
                                       progress=False if STATE.quiet else None, quiet=STATE.quiet, workers=workers,
                                       job_bytes=None if job_mb is None else max(1, int(job_mb * 2**20)),
                                       command=_command_line(), client=client, **options)
        finally:
            if warm is not None:
                warm.join()
    _say(f"[gseek] pipeline: {summary.count('ok')} ok, {summary.count('failed')} failed, "
         f"{summary.count('skipped')} skipped in {summary.seconds:.2f} s; {summary.path}")
    if summary.exit_status:
        raise click.exceptions.Exit(summary.exit_status)


# --------------------------------------------------------------------- stats


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--protein", is_flag=True, help="Read protein sequences instead of DNA.")
@_common
def stats(files, protein) -> None:
    """Summarise FASTA/FASTQ FILES (records, residues, lengths, N, soft-masked); runs on the CPU."""
    from .seqio import FastxReader

    click.echo("file\tformat\trecords\tresidues\tmin_len\tmean_len\tmax_len\tN\tsoft_masked")
    for path in files:
        reader = FastxReader(path, alphabet="protein" if protein else "dna")
        records = residues = n_count = masked = 0
        lo, hi = None, 0
        for batch in reader:
            lengths = batch.lengths
            records += len(batch)
            residues += batch.total_length
            if len(batch):
                lo = int(lengths.min()) if lo is None else min(lo, int(lengths.min()))
                hi = max(hi, int(lengths.max()))
            if not protein:
                n_count += int((batch.codes == 4).sum())
            masked += int((batch.soft_mask[:, 1] - batch.soft_mask[:, 0]).sum())
        mean = residues / records if records else 0.0
        click.echo(f"{path}\t{reader.format or '-'}\t{records}\t{residues}\t{lo or 0}\t{mean:.1f}\t{hi}"
                   f"\t{n_count}\t{masked}")


# --------------------------------------------------------------------- demo


@cli.command()
@click.option("-o", "--outdir", default="gseek-demo", show_default=True, help="Where to write the demo SAM.")
@_common
def demo(outdir) -> None:
    """Run gseek on the embedded lambda phage genome and reads; write SAM to OUTDIR."""
    from .demo import run_demo

    started = time.perf_counter()
    summary = run_demo(_backend(), Path(outdir), command=_command_line())
    for line in summary:
        click.echo(line)
    _say(f"[gseek] demo finished in {time.perf_counter() - started:.2f} s")


@cli.command(context_settings={"ignore_unknown_options": True}, add_help_option=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def blastn(ctx, args) -> None:
    """BLAST+ 2.12's blastn command line (-db -query -out -outfmt ..., -help), run by gseek (docs/blast.md)."""
    from .pipeline.blast_plus import blastn_main

    ctx.exit(blastn_main(list(args)))


@cli.command(context_settings={"ignore_unknown_options": True}, add_help_option=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def makeblastdb(ctx, args) -> None:
    """BLAST+ 2.12's makeblastdb command line (-in -dbtype nucl -out ...): a gseek database (docs/blast.md)."""
    from .pipeline.blast_plus import makeblastdb_main

    ctx.exit(makeblastdb_main(list(args)))


@cli.command("compile")
@click.option("--only", default=",".join(("parse", "index", "map", "align", "blast")), show_default=True,
              help="Comma-separated workloads to compile: parse, index, map, align, blast.")
@click.option("--processes", type=click.IntRange(min=1), default=1, show_default=True,
              help="Compile the workloads in this many processes at once.")
@_common
def compile_(only, processes) -> None:
    """Compile every kernel the commands use (Numba and, on a GPU, CUDA) into the caches, ahead of time."""
    from .precompile import WORKLOADS, cache_dirs, compile_kernels

    chosen = tuple(w.strip() for w in only.split(",") if w.strip())
    unknown = [w for w in chosen if w not in WORKLOADS]
    if unknown or not chosen:
        raise click.BadParameter(f"choose from {', '.join(WORKLOADS)}, not {only!r}", param_hint="--only")
    started = time.perf_counter()
    seconds = compile_kernels(_backend(), chosen, processes)
    for name, took in seconds.items():
        _say(f"[gseek] compile: {name} {took:.1f} s")
    caches = cache_dirs()
    _say(f"[gseek] compile: done in {time.perf_counter() - started:.1f} s (Numba cache: {caches['numba']}; "
         f"CuPy cache: {caches['cupy']})")
    from .kernels import _cupy_cache
    from .kernels._cuda import cubin_status
    from .kernels._jit import prebuilt_status

    _say(f"[gseek] compile: prebuilt machine code (used where the cache has none): {prebuilt_status()}")
    _say(f"[gseek] compile: shipped CUDA machine code (used where it fits the device): {cubin_status()}")
    _say(f"[gseek] compile: shipped CuPy kernels (copied into CuPy's cache where they fit): {_cupy_cache.status()}")


def _remove_stale_temporaries(output: str | None) -> None:
    """What a killed earlier run left beside ``output`` (``.NAME.tmp-PID``; docs/exit-codes.md)."""
    if output and output != "-":
        from .seqio.atomic import remove_stale_temporaries

        remove_stale_temporaries(output)


def _command_line() -> str:
    """The command as the user typed it, for SAM @PG CL and BLAST headers."""
    return " ".join(shlex.quote(a) for a in ["gseek", *STATE.argv])


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI, print errors as one line, return the exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    STATE.__dict__.update(device="auto", threads=0, quiet=False, debug="--debug" in args, argv=tuple(args))
    with warnings.catch_warnings():
        warnings.simplefilter("always", GseekWarning)  # one line per warning, each time (several files)
        warnings.showwarning = functools.partial(_show_warning, warnings.showwarning)
        return _main(args)


def _show_warning(show, message, category, *args, **kwargs) -> None:
    """A :class:`~gseek.errors.GseekWarning` as one line, ``gseek: warning: ...`` (none with ``--quiet``)."""
    if not issubclass(category, GseekWarning):
        show(message, category, *args, **kwargs)
    elif not STATE.quiet:
        click.echo(f"gseek: warning: {one_line(message)}", err=True)


def _main(args: list[str]) -> int:
    try:
        code = cli.main(args=args, prog_name="gseek", standalone_mode=False)
        if sys.stdout is not None:
            sys.stdout.flush()  # an error writing what is still buffered is the command's error
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except Terminated as exc:  # SIGTERM, SIGHUP (run()): cleaned up as Ctrl-C is
        click.echo(f"gseek: {exc}", err=True)
        return exc.exit_status
    except (_BrokenPipe, BrokenPipeError):  # the reader of stdout went away: stop quietly, as samtools does
        return EXIT_BROKEN_PIPE
    except click.Abort:
        click.echo("gseek: interrupted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except (GseekError, OSError, ValueError, MemoryError) as exc:
        if STATE.debug:
            raise
        click.echo(f"gseek: error: {one_line(exc)}", err=True)
        return 1
    except KeyboardInterrupt:
        click.echo("gseek: interrupted", err=True)
        return 130
    return code if isinstance(code, int) else 0  # a command's ctx.exit(N) (pipeline: a file failed)


def run() -> None:
    """Console-script entry point (``gseek``, ``python -m gseek``): :func:`main`
    in a process of its own (see :func:`exit_now`), which Numba starts without
    SciPy's BLAS.

    Numba's CPU target imports ``scipy.linalg.cython_blas`` as it starts, when
    SciPy is installed, to offer ``np.dot`` and ``np.linalg`` in compiled code:
    0.37 s of imports on the 2-core VM and 0.52 s on the GPU host (SciPy pulls
    in ``numpy.f2py``), in every command's start-up. gseek's compiled code uses
    neither, so the command's own process refuses that import and Numba
    records that it has no BLAS. A program importing gseek is left as it is.
    """
    sys.modules.setdefault("scipy.linalg.cython_blas", None)  # type: ignore[arg-type]
    _standard_streams()
    for signum in TERMINATING_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:  # ignored stays ignored (nohup: SIGHUP)
            signal.signal(signum, _terminate)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where the shell ignores it (&)
        signal.signal(signal.SIGINT, _interrupt)
    try:
        code = main()
    except Terminated as exc:  # arrived before main's own handler: said here, as main says it
        print(f"gseek: {exc}", file=sys.stderr)
        code = exc.exit_status
    exit_now(code)


def _terminate(signum: int, frame) -> None:
    """SIGTERM/SIGHUP handler: raise :class:`~gseek.errors.Terminated` in the main
    thread, which unwinds like Ctrl-C. Later signals (these and SIGINT) are ignored
    so that they cannot interrupt the clean-up (SIGKILL still ends the process)."""
    _ignore_later_signals()
    deliver_signal(Terminated(signum))  # raised now, or where a signals_held block ends


def _interrupt(signum: int, frame) -> None:
    """SIGINT (Ctrl-C) handler: ``KeyboardInterrupt``, as Python's own, except that
    a :class:`~gseek.errors.signals_held` block finishes first; later signals are
    ignored, as after SIGTERM."""
    _ignore_later_signals()
    deliver_signal(KeyboardInterrupt())


def _ignore_later_signals() -> None:
    for other in (*TERMINATING_SIGNALS, signal.SIGINT):
        if signal.getsignal(other) in (_terminate, _interrupt):
            signal.signal(other, signal.SIG_IGN)


class _ClosedStdout(io.TextIOBase):
    """``sys.stdout`` when the process started with descriptor 1 closed (``>&-``):
    every write raises ``OSError(EBADF)`` naming standard output, so a command
    that writes there fails with one line instead of dropping its output
    (Python would leave ``sys.stdout`` None, which click writes nothing to)."""

    encoding = "utf-8"
    errors = "strict"

    @property
    def buffer(self) -> _ClosedStdout:  # binary writers (SAM) fail the same way
        return self

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF), "standard output")


def _standard_streams() -> None:
    """Descriptors 0, 1, 2 closed at start are opened on /dev/null, so no file the
    command opens takes their number; a closed stdout then fails every write to it.

    Under ``PYTHONUNBUFFERED`` (or ``-u``) ``sys.stdout.buffer`` is the raw file,
    whose ``write`` may write part of the data (a pipe, a signal) and say so only
    in its return value; the binary writers (SAM) write through a buffered
    writer instead, which writes it all or raises. Text still goes out at once.
    """
    if isinstance(getattr(sys.stdout, "buffer", None), io.RawIOBase):
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(sys.stdout.buffer), encoding=sys.stdout.encoding,
                                      errors=sys.stdout.errors, line_buffering=sys.stdout.line_buffering,
                                      write_through=True)
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            if fd == 1:
                sys.stdout = _ClosedStdout()


def exit_now(code: int) -> None:
    """End the process with ``code`` once stdout and stderr are flushed, without
    the interpreter's teardown.

    Every output is complete and closed (renamed into place) when a command
    returns; what is left is freeing GBs of arrays one by one, the device
    context and the import state (0.25-0.3 s of mapping 200k reads on the
    2-core VM, for nothing). Only for a process run as the command line
    (``gseek``, ``python -m gseek``): :func:`main` itself returns. A BAM
    writer still open (a signal landed between its making and the block
    that closes it) is aborted first: its child killed, its temporaries removed.
    """
    for signum in (*TERMINATING_SIGNALS, signal.SIGINT):  # the process is ending: nothing may cut this short
        signal.signal(signum, signal.SIG_IGN)
    bam = sys.modules.get("gseek.output.bam")  # loaded only where a BAM or CRAM was written
    if bam is not None:
        bam.abort_open_writers()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: the descriptor was closed when the process started
                stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can be said there
            pass
    os._exit(code)

"""The option groups several commands share, as click decorators: each collects its options
into one argument of the command (``map_options``, ``pair_options``, ``blast_options``,
``sam_options``, ``align_options``, ``cluster``), checked together where they are made
(a mistake is a usage error, exit 2)."""

from __future__ import annotations

import contextlib
import functools
import os
import types

import click

from ..errors import OptionError
from ..options import DEFAULT_MAXINS, DEFAULT_MININS, MapOptions, PairOptions, ReadOptions, SamOptions
from .app import STATE

MAP_OPTIONS = ("mismatches", "max_alignments", "report_all", "max_hits", "norc", "nofw", "no_unal", "xa_limit",
               "cigar_eq", "phred64", "trim5", "trim3", "skip", "upto")


def with_map_options(func):
    """The read-mapping options shared by ``search`` and ``pipeline``, made into a
    :class:`~gseek.options.MapOptions` (``map_options``) and a :class:`~gseek.options.ReadOptions`
    (``read_options``), checked together; ``--no-unal`` and ``--cigar-eq`` go to
    :func:`with_sam_options`' value (which an inner decorator of the command makes)."""
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
        if kwargs["max_hits"] is not None and not kwargs["report_all"]:
            raise click.UsageError("--max-hits caps --all; give --all too")
        with usage_errors():  # every mistake in the options alone or together is a usage error (exit 2)
            map_options = MapOptions(**{name: kwargs.pop(name) for name in MapOptions.field_names() if name in kwargs})
            read_options = ReadOptions(**{name: kwargs.pop(name) for name in ReadOptions.field_names()})
        # --no-unal and --cigar-eq stay in kwargs: SAM options (with_sam_options, inside this one)
        return func(map_options=map_options, read_options=read_options, **kwargs)

    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


@contextlib.contextmanager
def usage_errors():
    """An :class:`~gseek.errors.OptionError` raised inside as a usage error (exit 2)."""
    try:
        yield
    except OptionError as exc:
        raise click.UsageError(str(exc)) from None


PAIR_OPTIONS = ("minins", "maxins", "orientation")


def with_pair_options(func):
    """bowtie's paired-end options (``-I``, ``-X``, ``--fr``/``--rf``/``--ff``), made into one
    :class:`~gseek.options.PairOptions` (``pair_options``)."""
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
        given_values = {name: kwargs.pop(name) for name in PAIR_OPTIONS}
        if given_values["minins"] > given_values["maxins"]:
            raise click.UsageError(f"-I/--minins {given_values['minins']} is larger than -X/--maxins "
                                   f"{given_values['maxins']}")
        with usage_errors():
            pair_options = PairOptions(**given_values)
        return func(pair_options=pair_options, **kwargs)

    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


BLAST_OPTIONS = ("evalue", "word_size", "reward", "penalty", "gapopen", "gapextend", "dust", "soft_masking",
                 "lcase_masking", "strand", "max_target_seqs", "max_hsps", "perc_identity", "qcov_hsp_perc",
                 "xdrop_ungap", "xdrop_gap", "xdrop_gap_final", "ungapped", "template_type", "template_length",
                 "db_volume_size", "outfmt")


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


def with_blast_options(func=None, *, outfmt: bool = True):
    """The BLAST-style search's options (BLAST+ 2.12's names) shared by ``search`` and ``pipeline``,
    collected into one ``blast_options`` dict of the values given (the task's presets fill the rest).
    ``outfmt=False``: the command has its own ``--outfmt`` (``pipeline``, shared with align)."""
    if func is None:
        return functools.partial(with_blast_options, outfmt=outfmt)
    options = [
        click.option("--evalue", type=float, default=None, help="megablast/blastn: E-value cutoff [10]."),
    ]
    if outfmt:
        options.append(click.option(
            "--outfmt", default=None,
            help="megablast/blastn: 6, 7 or 10, optionally with BLAST+ field keywords (e.g. '6 std qlen'); 0 "
                 "(pairwise), 5 (XML), 15 (JSON), sam [6]."))
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
        click.option("--template-type", type=click.Choice(["coding", "optimal", "coding_and_optimal"]), default=None,
                     help="dc-megablast: discontiguous word template [coding]."),
        click.option("--template-length", type=click.Choice(["16", "18", "21"]), default=None,
                     callback=lambda ctx, param, v: None if v is None else int(v),
                     help="dc-megablast: template length [18]."),
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


def with_sam_options(func):
    """The SAM/BAM/CRAM output options shared by ``search`` and ``pipeline --task
    map``, made into one :class:`~gseek.options.SamOptions` (``sam_options``; with the
    map group's ``--no-unal`` and ``--cigar-eq``); a mistake in them is a usage error (exit 2)."""
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
        with usage_errors():
            if v["rg_line"] is None and v["rg_id"] is None and not v["rg_fields"]:
                group = None  # no read group: the SAM module (NumPy, Numba) not imported
            elif v["rg_line"] is not None:
                from ..output.sam import read_group_line

                if v["rg_id"] is not None or v["rg_fields"]:
                    raise OptionError("-R and --rg-id/--rg both give the read group; give one of them")
                group = read_group_line(v["rg_line"])
            else:
                from ..output.sam import read_group

                group = read_group(v["rg_id"], v["rg_fields"])
            sam_options = SamOptions(no_unal=kwargs.pop("no_unal", False), cigar_eq=kwargs.pop("cigar_eq", False),
                                     read_group=None if group is None else tuple(group.items()), sort=v["sort"],
                                     compression_level=v["compression_level"], reference=v["reference"])
        return func(sam_options=sam_options, **kwargs)

    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


def blast_value(task: str, given_values: dict):
    """The given BLAST options as one :class:`~gseek.blast.options.BlastOptions` of ``task`` (its preset,
    then what was given, checked: a usage error), and the database volume size apart (None: not given)."""
    from ..blast.dust import DUST_LEVEL, DUST_LINKER, DUST_WINDOW
    from ..blast.options import BlastOptions

    out = {k: v for k, v in given_values.items() if v is not None and k not in ("outfmt", "db_volume_size")}
    for cli_name, name in (("gapopen", "gap_open"), ("gapextend", "gap_extend")):
        if cli_name in out:
            out[name] = out.pop(cli_name)
    if "dust" in out:
        out["dust"] = None if out["dust"] == "no" else (DUST_LEVEL, DUST_WINDOW, DUST_LINKER) \
            if out["dust"] == "yes" else out["dust"]
    with usage_errors():
        return BlastOptions.for_task(task, **out), given_values.get("db_volume_size")


ALIGN_OPTIONS = ("mode", "free_ends", "match", "mismatch", "gap_open", "gap_extend", "matrix", "min_score",
                 "min_identity", "traceback", "cigar_m", "outfmt")


def with_align_options(func):
    """The DP options shared by ``align`` and ``pipeline --task align``, collected
    into one ``align_options`` dict of :class:`~gseek.align.options.AlignOptions` fields
    (options the user did not give keep its defaults), made into the value by :func:`align_value`."""
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


def align_value(align_options: dict):
    """The DP options given, as one :class:`~gseek.align.options.AlignOptions` (checked as the API
    checks them, no input read): a mistake alone or together is a usage error (exit 2). Made by the
    commands that run the DP only (``pipeline`` shares ``--outfmt`` with its BLAST tasks)."""
    from ..align.options import AlignOptions

    with usage_errors():
        return AlignOptions(**align_options)


def with_cluster_options(func):
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


def cluster_threads(cluster) -> int:
    """CPU threads of each worker: ``-p``, or with ``--local-cluster N`` and no ``-p`` the cores over N."""
    if cluster is not None and cluster[1] is not None and not STATE.threads:
        return max(1, (os.cpu_count() or 1) // cluster[1])
    return STATE.threads


def cluster_client_for(cluster):
    """A Dask client for ``cluster`` (``(scheduler, local workers)``), closed at the end; None without one."""
    if cluster is None:
        import contextlib

        return contextlib.nullcontext(None)
    from ..pipeline.cluster import cluster_client

    return cluster_client(*cluster)


"""BLAST+ 2.12's command lines (``blastn``, ``makeblastdb``) read as BLAST+ reads them, into gseek's options.

Single-dash long options, each value one argument (``-outfmt "6 qseqid sseqid"``), BLAST+'s defaults,
its error texts (``Error: Argument "evalue". Argument cannot be converted:  `abc'``), checked against
blastn 2.12's own (``tests/test_blast_plus.py``). A BLAST+ flag gseek does not support is refused by
name, never ignored; ``-device`` and ``-gpus`` are gseek's own.

>>> run = parse_blastn(["-query", "-", "-db", "nt", "-outfmt", "6 qseqid sseqid", "-evalue", "1e-5"])
>>> run.query, run.db, run.outfmt, run.options
('-', 'nt', '6 qseqid sseqid', BlastOptions(task='megablast', evalue=1e-05))
>>> parse_blastn(["-db", "nt", "-evalue", "abc"])
Traceback (most recent call last):
...
gseek.blast.plus_args.PlusArgError: Error: Cannot convert string 'abc' to double (m_Pos = 0)
Error: Argument "evalue". Argument cannot be converted:  `abc'
Error:  (CArgException::eConvert) Argument "evalue". Argument cannot be converted:  `abc'
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from gseek.errors import OptionError

from .options import BlastOptions
from .stats import nucleotide_params, supported_gap_costs

__all__ = ["PlusArgError", "BlastnRun", "MakeblastdbRun", "parse_blastn", "parse_makeblastdb", "BLASTN_FLAGS",
           "BLASTN_REFUSED", "blastn_usage", "VERSION_TEXT", "database_names", "options_error"]

#: What ``blastn -version`` prints (gseek answers as the BLAST+ it stands in for, and names itself).
VERSION_TEXT = "blastn: 2.12.0+\n Package: blast 2.12.0, gseek {version} (a drop-in for BLAST+ blastn)\n"
TASKS = ("blastn", "blastn-short", "dc-megablast", "megablast", "rmblastn")
SUPPORTED_TASKS = ("megablast", "blastn", "blastn-short", "dc-megablast")

#: blastn's flags gseek takes: name -> (kind, BLAST+'s constraint). Kinds: str, int, float, bool (a value),
#: flag (none).
BLASTN_FLAGS: dict[str, tuple[str, object]] = {
    "h": ("flag", None), "help": ("flag", None), "version": ("flag", None),
    "db": ("str", None), "query": ("str", None), "out": ("str", None), "subject": ("str", None),
    "subject_loc": ("str", None), "query_loc": ("str", None),
    "task": ("str", TASKS), "evalue": ("float", None), "word_size": ("int", (">=", 4)),
    "gapopen": ("int", None), "gapextend": ("int", None), "reward": ("int", (">=", 0)), "penalty": ("int", ("<=", 0)),
    "perc_identity": ("float", (0, 100)), "qcov_hsp_perc": ("float", (0, 100)), "max_hsps": ("int", (">=", 1)),
    "xdrop_ungap": ("float", None), "xdrop_gap": ("float", None), "xdrop_gap_final": ("float", None),
    "dust": ("str", None), "soft_masking": ("bool", None), "lcase_masking": ("flag", None), "ungapped": ("flag", None),
    "strand": ("str", ("both", "minus", "plus")), "outfmt": ("str", None), "html": ("flag", None),
    "max_target_seqs": ("int", (">=", 1)), "num_threads": ("int", (">=", 1)),
    "template_type": ("str", ("coding", "coding_and_optimal", "optimal")), "template_length": ("int", (16, 18, 21)),
    "window_size": ("int", (">=", 0)),
    "num_descriptions": ("int", (">=", 0)), "num_alignments": ("int", (">=", 0)), "line_length": ("int", (">=", 1)),
    "device": ("str", None), "gpus": ("str", None),  # gseek's own
}
#: blastn 2.12's other flags: refused by name (what each would need is in docs/blast.md).
BLASTN_REFUSED = (
    "import_search_strategy", "export_search_strategy", "dbsize", "gilist", "seqidlist", "negative_gilist",
    "negative_seqidlist", "taxids", "negative_taxids", "taxidlist", "negative_taxidlist", "entrez_query",
    "db_soft_mask", "db_hard_mask", "searchsp", "sum_stats", "no_greedy", "min_raw_gapped_score", "filtering_db",
    "window_masker_taxid", "window_masker_db", "culling_limit",
    "best_hit_overhang", "best_hit_score_edge", "subject_besthit", "off_diagonal_range", "use_index",
    "index_name", "parse_deflines", "show_gis", "sorthits", "sorthsps", "mt_mode", "remote")


class PlusArgError(OptionError):
    """A command line BLAST+ would refuse: ``str()`` is BLAST+'s error text; ``exit_code`` its exit status;
    ``usage`` whether BLAST+ prints its USAGE block first (argument errors) or not (option errors)."""

    def __init__(self, text: str, exit_code: int = 1, usage: bool = True) -> None:
        super().__init__(text)
        self.exit_code, self.usage = exit_code, usage


def _arg_error(kind: str, message: str, first: str | None = None) -> PlusArgError:
    lines = ([f"Error: {first}"] if first else []) + [f"Error: {message}",
                                                      f"Error:  (CArgException::{kind}) {message}"]
    return PlusArgError("\n".join(lines))


def options_error(message: str, code: int = 1) -> PlusArgError:
    """BLAST+'s ``BLAST query/options error`` (no usage block)."""
    return PlusArgError(f"BLAST query/options error: {message}\nPlease refer to the BLAST+ user manual.", code, False)


_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_TRUE, _FALSE = ("true", "t", "yes", "y", "1"), ("false", "f", "no", "n", "0")


def _convert(name: str, kind: str, text: str) -> object:
    if kind == "int":
        m = _INT.match(text)
        if m and m.end() == len(text):
            return int(text)
        raise _arg_error("eConvert", f'Argument "{name}". Argument cannot be converted:  `{text}\'',
                         f"Cannot convert string '{text}' to Int8 (m_Pos = {m.end() if m else 0})")
    if kind == "float":
        m = _FLOAT.match(text)
        if m and m.end() == len(text):
            return float(text)
        raise _arg_error("eConvert", f'Argument "{name}". Argument cannot be converted:  `{text}\'',
                         f"Cannot convert string '{text}' to double (m_Pos = {m.end() if m else 0})")
    if kind == "bool":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise _arg_error("eConvert", f'Argument "{name}". Argument cannot be converted:  `{text}\'',
                         "String cannot be converted to bool (m_Pos = 0)")
    return text


def _constrain(name: str, rule: object, value: object, text: str) -> None:
    if rule is None:
        return
    if isinstance(rule, tuple) and len(rule) == 2 and rule[0] in (">=", "<="):
        op, bound = rule
        ok = value >= bound if op == ">=" else value <= bound
        want = f"{op}{bound}"
    elif isinstance(rule, tuple) and len(rule) == 2 and all(isinstance(x, int) for x in rule):
        ok, want = rule[0] <= value <= rule[1], f"{rule[0]}..{rule[1]}"
    elif name in ("task", "template_length"):
        ok, want = value in rule, "Permissible values: " + " ".join(f"'{t}'" for t in rule) + " "
    else:
        ok, want = value in rule, ", ".join(f"`{t}'" for t in rule)
    if not ok:
        raise _arg_error("eConstraint", f'Argument "{name}". Illegal value, expected {want}:  `{text}\'')


def _scan(argv: list[str], flags: dict, refused: tuple, program: str) -> dict[str, object]:
    """``-name value`` pairs and ``-flag``s of ``argv`` converted and checked, as BLAST+'s argument reader."""
    got: dict[str, object] = {}
    argv = ["-help" if a == "--help" else "-version" if a == "--version" else a for a in argv]  # gseek's spelling too
    i = 0
    while i < len(argv):
        word = argv[i]
        if not word.startswith("-") or len(word) < 2:
            raise _arg_error("eSynopsis", f"Too many positional arguments (1), the offending value: {word}")
        name = word[1:]
        if name in refused:
            raise PlusArgError(f'Error: Argument "{name}". gseek {program} does not support it (docs/blast.md lists '
                               f"the BLAST+ flags gseek takes)")
        if name not in flags:
            raise _arg_error("eInvalidArg", f'Unknown argument: "{name}"')
        if name in got:
            raise _arg_error("eSynopsis", f"Argument with this name is defined already: {name}")
        kind, rule = flags[name]
        if kind == "flag":
            got[name] = True
            i += 1
            continue
        if i + 1 >= len(argv):
            raise _arg_error("eNoArg", f'Argument "{word}". Value is missing')
        text = argv[i + 1]
        value = _convert(name, kind, text)
        _constrain(name, rule, value, text)
        got[name] = value
        i += 2
    return got


@dataclass(frozen=True)
class BlastnRun:
    """One ``blastn`` command line: the search's options and its inputs and outputs."""

    options: BlastOptions
    query: str = "-"
    db: str | None = None
    subject: str | None = None
    out: str = "-"
    outfmt: str = "0"
    threads: int | None = None
    device: str | None = None
    gpus: tuple[str, ...] | None = None
    query_loc: tuple[int, int] | None = None
    subject_loc: tuple[int, int] | None = None
    html: bool = False
    #: ``-outfmt 0``'s ``-num_descriptions``, ``-num_alignments``, ``-line_length`` (blastn's defaults).
    num_descriptions: int = 500
    num_alignments: int = 250
    line_length: int = 60
    #: What blastn warns of on stderr (``Warning: [blastn] ...``), the run going on.
    warnings: tuple[str, ...] = ()
    action: str = "search"  # or "help", "usage", "version"


def _dust(text: str) -> tuple[int, int, int] | None:
    """``-dust``: ``yes``, ``no`` or ``'LEVEL WINDOW LINKER'``, as blastn reads it (those words alone, in lower
    case; the numbers one blank apart)."""
    if text == "yes":
        return (20, 64, 1)
    if text == "no":
        return None
    words = text.split(" ")
    if len(words) != 3:
        raise options_error("Invalid number of arguments to filtering option")
    if not all(_INT.fullmatch(w) for w in words):
        raise options_error("Invalid input for filtering parameters")
    return tuple(int(w) for w in words)  # type: ignore[return-value]


def _loc(text: str, what: str = "query") -> tuple[int, int]:
    """``-query_loc`` / ``-subject_loc`` ``START-STOP`` (1-based, inclusive, start < stop), blastn's errors (status 3)."""
    m = re.fullmatch(r"(\d+)-(\d+)", text)
    start, stop = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    why = ("Format: start-stop" if not m else "range elements cannot be less than or equal to 0" if min(start, stop) < 1
           else "start cannot be larger than stop" if start > stop else "range cannot be empty" if start == stop else "")
    if why:
        raise PlusArgError(f"BLAST engine error: Invalid specification of {what} location ({why})", 3, False)
    return start, stop


def database_names(text: str) -> list[str]:
    """The databases a ``-db`` value names, as BLAST+ reads it: blank-separated, a name holding blanks in double
    quotes.

    >>> database_names('nt "my dbs/refs 2" other')
    ['nt', 'my dbs/refs 2', 'other']
    """
    return [quoted or bare for quoted, bare in re.findall(r'"([^"]*)"|(\S+)', text)]


#: The ``-outfmt`` kinds of the pairwise family (blastn's "alignment view" formats 0-4).
PAIRWISE_OUTFMTS = ("0", "1", "2", "3", "4")
#: BLAST+ 2.12's field keywords of ``-outfmt 6``, ``7`` and ``10`` (``blastn -help``): blastn leaves any other
#: word out (gseek too, with a warning); one gseek does not write is refused by name where the report is made.
BLAST_FIELD_WORDS = frozenset((
    "std qseqid qgi qacc qaccver qlen sseqid sallseqid sgi sallgi sacc saccver sallacc slen qstart qend sstart send "
    "qseq sseq evalue bitscore score length pident nident mismatch positive gapopen gaps ppos frames qframe sframe "
    "btop staxid ssciname scomname sblastname sskingdom staxids sscinames scomnames sblastnames sskingdoms stitle "
    "salltitles sstrand qcovs qcovhsp qcovus").split())
#: The ``-outfmt`` numbers of other BLAST+ programs: what blastn answers.
_OTHER_PROGRAMS = {19: "AIRR rearrangement format is only applicable to igblastn",
                   20: "FASTA output format is only applicable to magicblast"}


def _outfmt(text: str) -> tuple[str, list[str]]:
    """``-outfmt`` as blastn reads it: the number before the first blank (``06`` is 6), then, for the tabular
    kinds, ``delim=X`` (first, or not at all) and the field keywords, a word BLAST+ does not know left out (none
    left: ``std``); blastn ignores what follows the number of the other kinds. The value with its number written
    plainly, and the warnings.

    >>> _outfmt(" 06 qseqid bogus sseqid ")
    ('6 qseqid sseqid', ["-outfmt: 'bogus' is not a BLAST+ field keyword: left out (blastn leaves it out)"])
    """
    number, _, rest = text.strip().partition(" ")
    if not _INT.fullmatch(number) or not -2**31 <= int(number) < 2**31:
        raise options_error(f"'{number}' is not a valid output format")
    kind = int(number)
    if kind in _OTHER_PROGRAMS:
        raise options_error(_OTHER_PROGRAMS[kind])
    if not 0 <= kind <= 18:
        raise PlusArgError("Error: Formatting choice is out of range", 255, False)
    if kind == 17 and rest.split():  # (gseek's SAM, not blastn's: its specifiers would be ignored)
        raise options_error(f"gseek blastn's -outfmt 17 is gseek's SAM (docs/blast.md), without blastn's "
                            f"specifiers: {' '.join(rest.split())} is not supported")
    if kind not in (6, 7, 10):
        return str(kind), []
    words = rest.split()
    delim = [words.pop(0)] if words and words[0].startswith("delim=") else []  # (blastn: first, or not at all)
    unknown = [w for w in words if w not in BLAST_FIELD_WORDS]
    return (" ".join([str(kind), *(d for d in delim if d != "delim="), *(w for w in words if w not in unknown)]),
            [f"-outfmt: {w!r} is not a BLAST+ field keyword: left out (blastn leaves it out)" for w in unknown])


def _hitlist(got: dict, outfmt: str, overrides: dict) -> tuple[tuple[int, int], list[str]]:
    """BLAST+'s rules of ``-max_target_seqs``, ``-num_descriptions`` and ``-num_alignments``: the subjects the
    pairwise report lists and aligns (blastn's defaults 500 and 250), the search's ``max_target_seqs`` set in
    ``overrides`` where they change it, and blastn's warnings."""
    for name in ("num_descriptions", "num_alignments"):
        if name in got and "max_target_seqs" in got:
            raise _arg_error("eConstraint", f'Argument "{name}". Incompatible with argument:  `max_target_seqs\'')
    warnings = []
    nd, na = got.get("num_descriptions"), got.get("num_alignments")
    if (outfmt.split() or ["0"])[0] in PAIRWISE_OUTFMTS:
        if "max_target_seqs" in got:
            nd = na = int(got["max_target_seqs"])
        elif nd is not None or na is not None:
            nd, na = 500 if nd is None else int(nd), 250 if na is None else int(na)
            overrides["max_target_seqs"] = max(1, nd, na)
        else:
            nd, na = 500, 250
    else:
        if nd is not None:
            warnings.append("The parameter -num_descriptions is ignored for output formats > 4 . Use "
                            "-max_target_seqs to control output")
        if "line_length" in got:
            warnings.append("The parameter -line_length is not applicable for output formats > 4 .")
        if "max_target_seqs" not in got and na is not None:
            overrides["max_target_seqs"] = max(1, int(na))
        nd = na = int(overrides.get("max_target_seqs", 500))
    if int(overrides.get("max_target_seqs", 500)) < 5:
        warnings.append("Examining 5 or more matches is recommended")
    return (int(nd), int(na)), warnings


def parse_blastn(argv: list[str]) -> BlastnRun:
    """``blastn`` arguments -> a :class:`BlastnRun` (raises :class:`PlusArgError` with BLAST+'s text)."""
    got = _scan(list(argv), BLASTN_FLAGS, BLASTN_REFUSED, "blastn")
    if got.get("help"):
        return BlastnRun(BlastOptions(), action="help")
    if got.get("h"):
        return BlastnRun(BlastOptions(), action="usage")
    if got.get("version"):
        return BlastnRun(BlastOptions(), action="version")
    for flag in ("query", "subject"):  # BLAST+ opens its input files while it reads the arguments
        path = got.get(flag)
        if path is not None and path != "-" and not os.access(str(path), os.R_OK):
            raise PlusArgError(f'Command line argument error: Argument "{flag}". File is not accessible:  `{path}\'',
                               1, False)
    if "subject" in got and "db" in got:
        raise _arg_error("eConstraint", 'Argument "subject". Incompatible with argument:  `db\'')
    if "subject_loc" in got and "subject" not in got:
        raise _arg_error("eConstraint", 'Argument "subject_loc". Incompatible with argument:  `db\'') \
            if "db" in got else options_error("subject_loc requires -subject")
    task = str(got.get("task", "megablast"))
    if task not in SUPPORTED_TASKS:
        raise PlusArgError(f'Error: Argument "task". gseek blastn does not support task \'{task}\' yet '
                           f"(it has {', '.join(SUPPORTED_TASKS)}; docs/blast.md)", 1, False)
    for one, other in (("template_type", "template_length"), ("template_length", "template_type")):
        if one in got and other not in got:
            raise _arg_error("eConstraint", f'Argument "{other}". Must be specified, as it is required by '
                                            f"argument:  `{one}'")
    if "db" not in got and "subject" not in got:
        raise options_error("Either a BLAST database or subject sequence(s) must be specified")
    evalue = got.get("evalue", 10.0)
    if not evalue > 0:  # type: ignore[operator]
        raise options_error("expect value or cutoff score must be greater than zero")
    names = {"evalue": "evalue", "word_size": "word_size", "reward": "reward", "penalty": "penalty",
             "gapopen": "gap_open", "gapextend": "gap_extend", "perc_identity": "perc_identity",
             "qcov_hsp_perc": "qcov_hsp_perc", "max_hsps": "max_hsps", "xdrop_ungap": "xdrop_ungap",
             "xdrop_gap": "xdrop_gap", "xdrop_gap_final": "xdrop_gap_final", "soft_masking": "soft_masking",
             "strand": "strand", "max_target_seqs": "max_target_seqs"}
    overrides = {ours: got[theirs] for theirs, ours in names.items() if theirs in got}
    if got.get("lcase_masking"):
        overrides["lcase_masking"] = True
    if got.get("ungapped"):
        overrides["ungapped"] = True
    if "template_type" in got:
        if task in ("blastn", "blastn-short"):  # BLAST+'s checks of a template with a contiguous task
            raise options_error("Invalid discontiguous template parameters: word size must be either 11 or 12"
                                if got.get("word_size", 11 if task == "blastn" else 7) not in (11, 12)
                                else "Invalid lookup table type for discontiguous Mega BLAST")
        if task == "megablast":
            raise PlusArgError('Error: Argument "template_type". gseek blastn takes a discontiguous template '
                               "with -task dc-megablast only (docs/blast.md)", 1, False)
        overrides["template_type"], overrides["template_length"] = got["template_type"], got["template_length"]
    if "window_size" in got:
        if task != "dc-megablast":  # BLAST+ would search contiguous words by two hits: gseek does not
            raise PlusArgError('Error: Argument "window_size". gseek blastn takes a two-hit window with -task '
                               "dc-megablast only (docs/blast.md)", 1, False)
        overrides["window_size"] = got["window_size"]
    if "dust" in got:
        overrides["dust"] = _dust(str(got["dust"]))
    outfmt, warnings = _outfmt(str(got.get("outfmt", "0")))
    shown, more = _hitlist(got, outfmt, overrides)
    warnings += more
    try:
        options = BlastOptions.for_task(task, **overrides)
    except OptionError as err:
        raise _gap_costs_error(task, overrides) or options_error(str(err)) from None
    gpus = tuple(g.strip() for g in str(got["gpus"]).split(",") if g.strip()) if "gpus" in got else None
    threads = got.get("num_threads")
    if threads is not None and threads > (os.cpu_count() or 1):  # (blastn's warning and its count)
        threads = os.cpu_count() or 1
        warnings.append(f"Number of threads was reduced to {threads} to match the number of available CPUs")
    return BlastnRun(options, query=str(got.get("query", "-")), db=got.get("db"), subject=got.get("subject"),
                     out=str(got.get("out", "-")), outfmt=outfmt, threads=threads,
                     device=got.get("device"), gpus=gpus,
                     query_loc=_loc(str(got["query_loc"])) if "query_loc" in got else None,
                     subject_loc=_loc(str(got["subject_loc"]), "subject") if "subject_loc" in got else None,
                     html=bool(got.get("html")), num_descriptions=shown[0], num_alignments=shown[1],
                     line_length=int(got.get("line_length", 60)), warnings=tuple(warnings))


def _gap_costs_error(task: str, overrides: dict) -> PlusArgError | None:
    """blastn's error (status 3, its text twice) for gap costs BLAST+'s tables of the scores lack; None where the
    scores and gap costs have statistics, or the scores have none (another error)."""
    if overrides.get("ungapped"):
        return None
    preset = BlastOptions.for_task(task)
    reward, penalty, gap_open, gap_extend = (overrides.get(k, getattr(preset, k))
                                             for k in ("reward", "penalty", "gap_open", "gap_extend"))
    try:
        costs = supported_gap_costs(reward, penalty)
    except OptionError:
        return None
    try:
        nucleotide_params(reward, penalty, gap_open, gap_extend)
        return None
    except OptionError:
        pass
    text = (f"Error: Gap existence and extension values {gap_open} and {gap_extend} are not supported for "
            f"substitution scores {reward} and {penalty}\n"
            + "".join(f"{o} and {e} are supported existence and extension values\n" for o, e in costs if o or e)
            + f"Any values more stringent than {costs[-1][0]} and {costs[-1][1]} are supported\n")
    return PlusArgError(f"BLAST engine error: {text} {text} ", 3, False)


def blastn_usage() -> str:
    """The USAGE block BLAST+ prints before an argument error, with the flags gseek blastn takes."""
    value = {"flag": "", "str": " string", "int": " int_value", "float": " float_value", "bool": " bool_value"}
    flags = [f"[-{n}{value[k]}]" for n, (k, _) in BLASTN_FLAGS.items()]
    lines, line = [], "  blastn"
    for f in flags:
        if len(line) + 1 + len(f) > 78:
            lines.append(line)
            line = "    " + f
        else:
            line += " " + f
    lines.append(line)
    return ("USAGE\n" + "\n".join(lines) + "\n\nDESCRIPTION\n   Nucleotide-Nucleotide BLAST 2.12.0+ (gseek)\n\n"
            "Use '-help' to print detailed descriptions of command line arguments\n" + "=" * 72 + "\n\n")


# ---------------------------------------------------------------------------- makeblastdb

MAKEBLASTDB_FLAGS: dict[str, tuple[str, object]] = {
    "h": ("flag", None), "help": ("flag", None), "version": ("flag", None),
    "in": ("str", None), "dbtype": ("str", ("nucl", "prot")), "out": ("str", None), "title": ("str", None),
    "parse_seqids": ("flag", None), "max_file_sz": ("str", None), "taxid": ("int", (">=", 0)),
    "taxid_map": ("str", None), "blastdb_version": ("int", (4, 5)), "input_type": ("str", ("fasta",)),
    "hash_index": ("flag", None),
}
MAKEBLASTDB_REFUSED = ("mask_data", "mask_id", "mask_desc", "gi_mask", "gi_mask_name", "logfile",
                       "metadata_output_prefix", "oid_masks", "sequence_type")


@dataclass(frozen=True)
class MakeblastdbRun:
    """One ``makeblastdb`` command line."""

    fasta: str = "-"
    out: str = ""
    title: str = ""
    parse_seqids: bool = False
    max_file_sz: int = 1_000_000_000
    taxid: int | None = None
    taxid_map: str | None = None
    action: str = "build"


_SIZE = re.compile(r"(\d+)\s*([kKmMgG]?)[bB]?")


def parse_makeblastdb(argv: list[str]) -> MakeblastdbRun:
    """``makeblastdb`` arguments -> a :class:`MakeblastdbRun` (``-dbtype prot`` refused)."""
    got = _scan(list(argv), MAKEBLASTDB_FLAGS, MAKEBLASTDB_REFUSED, "makeblastdb")
    for what in ("help", "h", "version"):
        if got.get(what):
            return MakeblastdbRun(action={"h": "usage"}.get(what, what))
    if "dbtype" not in got:
        raise _arg_error("eNoArg", "Argument \"dbtype\". Mandatory value is missing:  `String, `nucl', `prot''")
    if "taxid_map" in got and not got.get("parse_seqids"):
        raise _arg_error("eConstraint", 'Argument "parse_seqids". Must be specified, as it is required by argument:  '
                                        "`taxid_map'")
    if got["dbtype"] == "prot":
        raise PlusArgError("Error: gseek makeblastdb builds nucleotide databases only (-dbtype nucl); gseek "
                           "searches DNA", 1, False)
    fasta = str(got.get("in", "-"))
    size = 1_000_000_000
    if "max_file_sz" in got:
        m = _SIZE.fullmatch(str(got["max_file_sz"]).strip())
        if not m:
            raise _arg_error("eConvert", f'Argument "max_file_sz". Argument cannot be converted:  '
                                         f"`{got['max_file_sz']}'")
        size = int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]
    out = str(got.get("out", fasta))
    if not out.strip() or any(c.isspace() for c in out):  # (BLAST+ reads blanks as between database names)
        raise PlusArgError("BLAST options error: Please provide a database name using -out", 1, False)
    return MakeblastdbRun(fasta, out, str(got.get("title", fasta)), bool(got.get("parse_seqids")), size,
                          got.get("taxid"), got.get("taxid_map"))

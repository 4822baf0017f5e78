"""The read-mapping options as values: :class:`MapOptions` (what to report), :class:`ReadOptions`
(how reads are read), :class:`SamOptions` (how the SAM/BAM/CRAM is written) and
:class:`PairOptions` (how mates pair).

Each is a frozen dataclass checked where it is made (:class:`~gseek.errors.OptionError` naming
the rule), passed whole from ``gseek search``/``gseek pipeline`` or the caller to the task that
uses it, and sent as JSON (:class:`~gseek.values.OptionsValue`). This module imports nothing
heavy: the command line and a service client build the values without loading Numba. The
BLAST search's are :class:`gseek.blast.options.BlastOptions`, the DP's
:class:`gseek.align.options.AlignOptions`.

>>> MapOptions(mismatches=3, report_all=True)
MapOptions(mismatches=3, report_all=True)
>>> MapOptions.from_bowtie("-v 1 -k 5 --norc")
MapOptions(mismatches=1, max_alignments=5, norc=True)
>>> MapOptions(max_alignments=2, report_all=True)
Traceback (most recent call last):
...
gseek.errors.OptionError: choose one of -k N and --all
>>> ReadOptions(trim5=3, upto=10).changed()
{'trim5': 3, 'upto': 10}
>>> SamOptions.from_json('{"read_group": [["ID", "lane1"], ["SM", "s1"]]}').read_group
(('ID', 'lane1'), ('SM', 's1'))
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from typing import Any

from .errors import OptionError
from .values import OptionsValue

__all__ = ["MapOptions", "ReadOptions", "SamOptions", "PairOptions", "check_map_options", "DEFAULT_MISMATCHES",
           "MAX_MISMATCHES", "MAX_MIN_PIECE", "ORIENTATIONS", "DEFAULT_MININS", "DEFAULT_MAXINS"]

#: ``-v``/``--mismatches`` by default (bowtie's ``-v 2``).
DEFAULT_MISMATCHES = 2
#: Largest ``k`` (``--mismatches``): the k-mismatch kernels' limit (``gseek.kernels.kmismatch``).
MAX_MISMATCHES = 8
#: Largest ``min_piece``: half the kernels' deepest backtracking (``kmismatch.MAX_DFS_DEPTH // 2``).
MAX_MIN_PIECE = 32
#: Mate orientations: bowtie's ``--fr`` (default), ``--rf``, ``--ff``.
ORIENTATIONS = ("fr", "rf", "ff")
#: bowtie 1.3.1's ``-I/--minins`` and ``-X/--maxins`` defaults.
DEFAULT_MININS, DEFAULT_MAXINS = 0, 250


def _whole(name: str, value: Any, least: int = 0, *, none: bool = False) -> None:
    if none and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) and not hasattr(value, "__index__") or value < least:
        raise OptionError(f"{name} must be a whole number >= {least}{' (or None)' if none else ''}, not {value!r}")


def _flag(name: str, value: Any) -> None:
    if not isinstance(value, bool) and type(value).__name__ != "bool_":
        raise OptionError(f"{name} must be True or False, not {value!r}")


def check_map_options(mismatches: int = DEFAULT_MISMATCHES, *, max_alignments: int | None = None,
                      report_all: bool = False, max_hits: int | None = None, norc: bool = False,
                      nofw: bool = False, xa_limit: int = 3) -> None:
    """Check the mapper's options alone and together (no index needed):
    :class:`~gseek.errors.OptionError` naming the rule broken (:class:`MapOptions` calls it).

    >>> check_map_options(2, max_alignments=2, report_all=True)
    Traceback (most recent call last):
    ...
    gseek.errors.OptionError: choose one of -k N and --all
    """
    if isinstance(mismatches, bool) or not (isinstance(mismatches, int) or hasattr(mismatches, "__index__")):
        raise OptionError(f"mismatches must be an integer 0..{MAX_MISMATCHES}, not {mismatches!r}")
    if not 0 <= mismatches <= MAX_MISMATCHES:
        raise OptionError(f"mismatches must be 0..{MAX_MISMATCHES}, not {mismatches}")
    if max_alignments is not None and int(max_alignments) < 1:
        raise OptionError(f"max_alignments (-k) must be >= 1, not {max_alignments}")
    if max_alignments is not None and report_all:
        raise OptionError("choose one of -k N and --all")
    if max_hits is not None and int(max_hits) < 1:
        raise OptionError(f"max_hits must be >= 1, not {max_hits}")
    if max_hits is not None and not report_all:
        raise OptionError("max_hits caps --all; give report_all=True")
    if norc and nofw:
        raise OptionError("norc and nofw together leave no strand to map")
    if int(xa_limit) < 0:
        raise OptionError(f"xa_limit must be >= 0, not {xa_limit}")


class _Shown(OptionsValue):
    def __repr__(self) -> str:
        shown = self.changed()
        if isinstance(self, MapOptions):
            shown = {"mismatches": self.mismatches, **shown}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


@dataclass(frozen=True, repr=False)
class MapOptions(_Shown):
    """What the k-mismatch mapper reports (bowtie's ``-v``, ``-k``, ``-a``, ``--norc``, ``--nofw``;
    ``max_hits`` caps ``--all`` (``ZH:i``); ``xa_limit``: ``XA`` lists other placements when there
    are at most that many; ``min_piece``: the pigeonhole pieces' least length (None: from the
    reference's size)). :meth:`from_bowtie` reads bowtie's own words for them."""

    mismatches: int = DEFAULT_MISMATCHES
    max_alignments: int | None = None
    report_all: bool = False
    max_hits: int | None = None
    norc: bool = False
    nofw: bool = False
    xa_limit: int = 3
    min_piece: int | None = None

    def __post_init__(self) -> None:
        check_map_options(self.mismatches, max_alignments=self.max_alignments, report_all=self.report_all,
                          max_hits=self.max_hits, norc=self.norc, nofw=self.nofw, xa_limit=self.xa_limit)
        for name in ("report_all", "norc", "nofw"):
            _flag(name, getattr(self, name))
        if self.min_piece is not None and not 1 <= int(self.min_piece) <= MAX_MIN_PIECE:
            raise OptionError(f"min_piece must be 1..{MAX_MIN_PIECE}, not {self.min_piece}")
        for name in ("mismatches", "max_alignments", "max_hits", "xa_limit", "min_piece"):  # plain ints (JSON)
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, int(value))

    #: bowtie 1's options -> (field, value: None = the next word as a number).
    BOWTIE_WORDS = {"-v": ("mismatches", None), "-k": ("max_alignments", None), "-a": ("report_all", True),
                    "--all": ("report_all", True), "--norc": ("norc", True), "--nofw": ("nofw", True)}

    @classmethod
    def from_bowtie(cls, words: str, **overrides: Any) -> MapOptions:
        """The options of bowtie 1's reporting words (``"-v 3 -a --norc"``), then ``overrides``."""
        fields: dict[str, Any] = {}
        parts = shlex.split(words)
        while parts:
            word = parts.pop(0)
            if word not in cls.BOWTIE_WORDS:
                raise OptionError(f"bowtie option {word!r}: gseek takes {', '.join(cls.BOWTIE_WORDS)}")
            name, value = cls.BOWTIE_WORDS[word]
            if value is None:
                if not parts or not parts[0].isdigit():
                    raise OptionError(f"bowtie option {word} needs a number")
                value = int(parts.pop(0))
            fields[name] = value
        return cls(**{**fields, **overrides})

    def mapper_kwargs(self) -> dict[str, Any]:
        """The :class:`~gseek.mapper.Mapper` keywords besides ``mismatches`` that differ from the defaults."""
        return {k: v for k, v in self.changed().items() if k != "mismatches"}


@dataclass(frozen=True, repr=False)
class ReadOptions(_Shown):
    """How reads are read (bowtie's ``--phred64``, ``--trim5``, ``--trim3``, ``--skip``, ``--upto``);
    ``skip``/``upto`` count the reads (pairs) of one query's files as one stream."""

    phred64: bool = False
    trim5: int = 0
    trim3: int = 0
    skip: int = 0
    upto: int | None = None

    def __post_init__(self) -> None:
        for name in ("trim5", "trim3", "skip"):
            _whole(name, getattr(self, name))
        _whole("upto", self.upto, 1, none=True)
        _flag("phred64", self.phred64)
        object.__setattr__(self, "phred64", bool(self.phred64))
        for name in ("trim5", "trim3", "skip", "upto"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, int(value))


@dataclass(frozen=True, repr=False)
class SamOptions(_Shown):
    """How the SAM/BAM/CRAM output is written: ``no_unal`` (no records of unmapped reads),
    ``cigar_eq`` (``=``/``X`` CIGARs), ``read_group`` (the ``@RG`` fields as (tag, value) pairs,
    ``ID`` first; every record gets ``RG:Z:ID``), ``sort`` (coordinate-sort and index a BAM/CRAM;
    None: yes for such a file), ``compression_level`` (0-9, as samtools' ``-l``; None: its 6),
    ``reference`` (the FASTA a CRAM is encoded against)."""

    no_unal: bool = False
    cigar_eq: bool = False
    read_group: tuple[tuple[str, str], ...] | None = None
    sort: bool | None = None
    compression_level: int | None = None
    reference: str | None = None

    def __post_init__(self) -> None:
        _flag("no_unal", self.no_unal)
        _flag("cigar_eq", self.cigar_eq)
        if self.sort is not None:
            _flag("sort", self.sort)
        if self.compression_level is not None:
            _whole("compression level", self.compression_level)
            if not 0 <= int(self.compression_level) <= 9:
                raise OptionError(f"compression level must be 0 to 9, not {self.compression_level}")
            object.__setattr__(self, "compression_level", int(self.compression_level))
        if self.reference is not None:
            object.__setattr__(self, "reference", os.fspath(self.reference))
        group = self.read_group
        if group is not None:
            pairs = tuple((str(t), str(v)) for t, v in (group.items() if isinstance(group, dict) else group))
            if not pairs or pairs[0][0] != "ID":
                raise OptionError(f"read_group: the @RG fields start with ID, not {pairs[:1]}")
            object.__setattr__(self, "read_group", pairs)


@dataclass(frozen=True, repr=False)
class PairOptions(_Shown):
    """How mates pair: fragment length ``minins..maxins`` (leftmost to rightmost
    base of both mates, bowtie's ``-I``/``-X``) and ``orientation`` (``fr``,
    ``rf``, ``ff``). Invalid values raise :class:`~gseek.errors.OptionError`.

    >>> PairOptions(), PairOptions(maxins=500)
    (PairOptions(), PairOptions(maxins=500))
    >>> PairOptions(minins=300, maxins=200)
    Traceback (most recent call last):
    ...
    gseek.errors.OptionError: minins (-I) 300 is larger than maxins (-X) 200
    """

    minins: int = DEFAULT_MININS
    maxins: int = DEFAULT_MAXINS
    orientation: str = "fr"

    def __post_init__(self) -> None:
        for name in ("minins", "maxins"):
            _whole(name, getattr(self, name))
            object.__setattr__(self, name, int(getattr(self, name)))
        if self.minins > self.maxins:
            raise OptionError(f"minins (-I) {self.minins} is larger than maxins (-X) {self.maxins}")
        if self.orientation not in ORIENTATIONS:
            raise OptionError(f"orientation must be one of {', '.join(ORIENTATIONS)}, not {self.orientation!r}")

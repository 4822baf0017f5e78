"""The BLAST-style search's options: BLAST+ 2.12's names, defaults per task, checked together.

>>> o = BlastOptions.for_task("megablast")
>>> o.word_size, o.reward, o.penalty, o.gap_open, o.gap_extend, o.lut_word, o.stride
(28, 1, -2, 0, 0, 12, 17)
>>> BlastOptions.for_task("blastn", evalue=1e-5)
BlastOptions(task='blastn', evalue=1e-05)
>>> BlastOptions.for_task("blastn", word_size=3)
Traceback (most recent call last):
...
gseek.errors.OptionError: word size must be at least 4 for task blastn, not 3
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from gseek.errors import OptionError
from gseek.values import OptionsValue

from .dust import DUST_LEVEL, DUST_LINKER, DUST_WINDOW
from .lookup import MAX_LOOKUP_WORD, Template, template_of
from .stats import KarlinParams, nucleotide_params, ungapped_params

__all__ = ["BlastOptions", "TASKS"]

#: BLAST+ 2.12's per-task defaults (``blastn -task T -help``; the X-drops in bits).
TASKS: dict[str, dict] = {
    "megablast": {"word_size": 28, "reward": 1, "penalty": -2, "gap_open": 0, "gap_extend": 0,
                  "xdrop_ungap": 20.0, "xdrop_gap": 25.0, "xdrop_gap_final": 100.0},
    "blastn": {"word_size": 11, "reward": 2, "penalty": -3, "gap_open": 5, "gap_extend": 2,
               "xdrop_ungap": 20.0, "xdrop_gap": 30.0, "xdrop_gap_final": 100.0},
    # blastn's handle with a short word and 1/-3 (blast_options_handle.cpp); blastn 2.12's command line
    # keeps -evalue 10 and DUST (its XML: expect 10, filter L;m;)
    "blastn-short": {"word_size": 7, "reward": 1, "penalty": -3, "gap_open": 5, "gap_extend": 2,
                     "xdrop_ungap": 20.0, "xdrop_gap": 30.0, "xdrop_gap_final": 100.0},
    # discontiguous megablast (disc_nucl_options.cpp): template 11 of 18, coding; two hits within 40
    # bases; the X-drop DP of the blastn task
    "dc-megablast": {"word_size": 11, "reward": 2, "penalty": -3, "gap_open": 5, "gap_extend": 2,
                     "xdrop_ungap": 20.0, "xdrop_gap": 30.0, "xdrop_gap_final": 100.0,
                     "template_type": "coding", "template_length": 18},
}
#: Smallest word size BLAST+ accepts for each task (dc-megablast: the template's weight, 11 or 12).
MIN_WORD = {"megablast": 4, "blastn": 4, "blastn-short": 4, "dc-megablast": 11}
#: BLAST+'s two-hit window of each task (``-window_size``; 0: one hit extends).
TWO_HIT_WINDOW = {"dc-megablast": 40}
#: The widest two-hit window gseek takes (each word hit looks back over it, base by base).
MAX_WINDOW = 10_000
TEMPLATE_TYPES = ("coding", "optimal", "coding_and_optimal")
TEMPLATE_LENGTHS = (16, 18, 21)
#: Bit score an ungapped HSP needs to be extended with gaps (BLAST+'s gap trigger, nucleotides).
GAP_TRIGGER_BITS = 27.0
STRANDS = ("both", "plus", "minus")
#: The largest X-drop accepted, in bits (BLAST+'s defaults are 20-100): as a raw score it fits the
#: kernels' 32-bit scores for every scoring system (inf or 1e300 overflowed, a traceback).
MAX_XDROP_BITS = 1_000_000


@dataclass(frozen=True, repr=False)
class BlastOptions(OptionsValue):
    """One search's settings; build with :meth:`for_task` (a preset, then checked overrides).

    Names follow ``blastn``'s options with ``_`` for ``-``; ``dust`` is None (``-dust no``)
    or (level, window, linker). ``max_hsps`` None: no limit. Checked where made (any way:
    :meth:`for_task`, the constructor, :meth:`replace`, :meth:`from_json`).

    >>> o = BlastOptions.for_task("blastn", evalue=1e-5, dust=None)
    >>> o.overrides()
    {'evalue': 1e-05, 'dust': None}
    >>> BlastOptions.from_json(o.to_json()) == o
    True
    """

    task: str = "megablast"
    evalue: float = 10.0
    word_size: int = 28
    reward: int = 1
    penalty: int = -2
    gap_open: int = 0
    gap_extend: int = 0
    dust: tuple[int, int, int] | None = (DUST_LEVEL, DUST_WINDOW, DUST_LINKER)
    soft_masking: bool = True
    lcase_masking: bool = False
    strand: str = "both"
    max_target_seqs: int = 500
    max_hsps: int | None = None
    perc_identity: float = 0.0
    qcov_hsp_perc: float = 0.0
    xdrop_ungap: float = 20.0
    xdrop_gap: float = 25.0
    xdrop_gap_final: float = 100.0
    ungapped: bool = False
    #: dc-megablast's discontiguous word: ``coding``, ``optimal`` or ``coding_and_optimal`` (both
    #: templates) of 16, 18 or 21 bases (``""``/0: contiguous words, the other tasks)
    template_type: str = ""
    template_length: int = 0
    #: dc-megablast's two-hit window (``-window_size``), bases; None: the task's (40)
    window_size: int | None = None

    @classmethod
    def for_task(cls, task: str = "megablast", **overrides) -> BlastOptions:
        """The preset of ``task`` (a name of :data:`TASKS`) with ``overrides`` applied and checked."""
        if task not in TASKS:
            raise OptionError(f"unknown task {task!r}; gseek has: {', '.join(TASKS)}")
        names = {f.name for f in dataclasses.fields(cls)} - {"task"}
        unknown = sorted(set(overrides) - names)
        if unknown:
            raise OptionError(f"unknown BLAST option(s): {', '.join(unknown)}")
        values = {**TASKS[task], **{k: v for k, v in overrides.items() if v is not None}}
        values.update({k: None for k in ("max_hsps", "dust") if k in overrides and overrides[k] is None})
        opts = cls(task=task, **values)
        opts.check()
        return opts

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise OptionError(f"unknown task {self.task!r}; gseek has: {', '.join(TASKS)}")
        if self.dust is not None:
            object.__setattr__(self, "dust", tuple(self.dust))
        self.check()

    @classmethod
    def _make(cls, fields: dict) -> BlastOptions:
        """A value from JSON: the task's preset, then the fields given (:meth:`for_task`)."""
        fields = dict(fields)
        return cls.for_task(fields.pop("task", "megablast"), **fields)

    def overrides(self) -> dict:
        """The fields that differ from the task's preset (what ``blastn`` would be given besides ``-task``)."""
        base = {**{f.name: f.default for f in dataclasses.fields(self)}, **TASKS[self.task]}
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name != "task" and getattr(self, f.name) != base[f.name]}

    def __repr__(self) -> str:
        diff = [f"{k}={v!r}" for k, v in self.overrides().items()]
        return f"BlastOptions({', '.join([f'task={self.task!r}'] + diff)})"

    def check(self) -> None:
        """Raise OptionError for a value or combination BLAST+ would refuse."""
        self._check_template()
        if self.word_size < MIN_WORD[self.task]:
            raise OptionError(f"word size must be at least {MIN_WORD[self.task]} for task {self.task}, "
                              f"not {self.word_size}")
        if not 0 < self.evalue < math.inf:  # blastn refuses inf and nan as it parses them
            raise OptionError(f"evalue must be a finite number > 0, not {self.evalue}")
        if self.strand not in STRANDS:
            raise OptionError(f"strand must be one of {', '.join(STRANDS)}, not {self.strand!r}")
        if self.max_target_seqs < 1:
            raise OptionError(f"max_target_seqs must be >= 1, not {self.max_target_seqs}")
        if self.max_hsps is not None and self.max_hsps < 1:
            raise OptionError(f"max_hsps must be >= 1, not {self.max_hsps}")
        if not 0 <= self.perc_identity <= 100 or not 0 <= self.qcov_hsp_perc <= 100:
            raise OptionError("perc_identity and qcov_hsp_perc must be in 0..100")
        for name in ("xdrop_ungap", "xdrop_gap", "xdrop_gap_final"):  # (bits; as raw scores they must fit 32 bits)
            if not 0 < getattr(self, name) <= MAX_XDROP_BITS:
                raise OptionError(f"{name} must be > 0 and at most {MAX_XDROP_BITS:,} bits, not {getattr(self, name)}")
        if self.dust is not None:
            level, window, linker = self.dust
            if not (2 <= level <= 64 and 8 <= window <= 64 and 1 <= linker <= 32):
                raise OptionError(f"dust must be 'LEVEL WINDOW LINKER' with level 2..64, window 8..64, "
                                  f"linker 1..32, not {self.dust}")
        if self.linear_gaps and self.task != "megablast":  # BLAST+'s text (blast_options.c)
            raise OptionError("Greedy extension must be used if gap existence and extension options are zero")
        _ = self.karlin  # raises OptionError, listing BLAST+'s supported costs, for others

    def _check_template(self) -> None:
        if self.window_size is not None:
            if self.task != "dc-megablast":
                raise OptionError(f"window_size applies to task dc-megablast only, not {self.task}")
            if not 1 <= self.window_size <= MAX_WINDOW:
                raise OptionError(f"window_size must be 1 .. {MAX_WINDOW:,} (0, BLAST+'s one-hit discontiguous words, "
                                  f"is not supported: docs/blast.md), not {self.window_size}")
        if self.task != "dc-megablast":
            if self.template_type or self.template_length:
                raise OptionError(f"template_type and template_length apply to task dc-megablast only, not {self.task}")
            return
        if self.word_size not in (11, 12):  # BLAST+'s text (blast_options.c)
            raise OptionError("Invalid discontiguous template parameters: word size must be either 11 or 12")
        if self.template_type not in TEMPLATE_TYPES:
            raise OptionError(f"template_type must be one of {', '.join(TEMPLATE_TYPES)}, not {self.template_type!r}")
        if self.template_length not in TEMPLATE_LENGTHS:
            raise OptionError(f"template_length must be 16, 18 or 21, not {self.template_length}")

    @property
    def templates(self) -> tuple[Template, ...]:
        """The discontiguous word templates of the search (one, or two for ``coding_and_optimal``;
        none for contiguous words)."""
        if not self.template_type:
            return ()
        kinds = ("coding", "optimal") if self.template_type == "coding_and_optimal" else (self.template_type,)
        return tuple(template_of(self.word_size, self.template_length, k) for k in kinds)

    @property
    def two_hit_window(self) -> int:
        """BLAST+'s two-hit window (``-window_size``): a word hit is extended when another lies
        template length .. window bases before it on its diagonal; 0: every hit is."""
        return self.window_size if self.window_size is not None else TWO_HIT_WINDOW.get(self.task, 0)

    @property
    def linear_gaps(self) -> bool:
        """Gap costs (0, 0): megablast's linear gaps, reward/2 - penalty per gap column."""
        return self.gap_open == 0 and self.gap_extend == 0

    @property
    def karlin(self) -> KarlinParams:
        """Statistics of the reported scores (ungapped with ``ungapped``)."""
        if self.ungapped:
            return ungapped_params(self.reward, self.penalty)
        return nucleotide_params(self.reward, self.penalty, self.gap_open, self.gap_extend)

    @property
    def karlin_ungapped(self) -> KarlinParams:
        return ungapped_params(self.reward, self.penalty)

    @property
    def lut_word(self) -> int:
        """Word length of the lookup table (fixed per word size, so results never depend on batching;
        a template's weight for discontiguous words)."""
        if self.templates:
            return self.word_size
        return min(self.word_size, 12 if self.word_size >= 16 else 11, MAX_LOOKUP_WORD)

    @property
    def stride(self) -> int:
        """Scan stride: every run of ``word_size`` equal bases holds a table word at a multiple of it
        (discontiguous words: every position, as BLAST+ scans them)."""
        if self.templates:
            return 1
        return self.word_size - self.lut_word + 1

    def raw_xdrop(self, bits: float, ungapped: bool = False) -> int:
        """An X-drop in bits as a raw score (BLAST+: bits * ln 2 / λ, truncated; the ungapped one rounded up)."""
        lam = (self.karlin_ungapped if ungapped else self.karlin).lambda_
        raw = bits * math.log(2) / lam
        return max(1, math.ceil(raw) if ungapped else int(raw))

    @property
    def raw_xdrop_final(self) -> int:
        """The trace-back's X-drop as a raw score: never below the first gapped pass's (BLAST+ takes the larger
        of ``xdrop_gap_final`` and ``xdrop_gap`` in raw units: ``-xdrop_gap_final 10`` with megablast's 25 is 25)."""
        return max(self.raw_xdrop(self.xdrop_gap_final), self.raw_xdrop(self.xdrop_gap))

    @property
    def gap_trigger(self) -> int:
        """Raw ungapped score from which a seed is extended with gaps (27 bits, ungapped λ, K)."""
        k = self.karlin_ungapped
        return int((GAP_TRIGGER_BITS * math.log(2) + k.log_K) / k.lambda_)

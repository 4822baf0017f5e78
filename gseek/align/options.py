"""The pairwise DP's options as a value: :class:`AlignOptions` (mode, scoring, trace-back, output
columns), checked where made and passed whole from ``gseek align``/``gseek pipeline --task align``
to :class:`~gseek.align.PairAligner` and the pipeline's align tasks.

>>> AlignOptions(mode="local", traceback=True)
AlignOptions(mode='local', traceback=True)
>>> AlignOptions(mode="local", free_ends=("query_start",))
Traceback (most recent call last):
...
gseek.errors.OptionError: free_ends applies to mode='semiglobal' only
>>> AlignOptions.from_json(AlignOptions(scoring="blosum62", cigar_m=True, traceback=True).to_json()).scoring
'blosum62'
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from gseek.dp import FREE_END_NAMES, MODES, SCORING_PRESETS, Scoring, dp_flags
from gseek.errors import OptionError
from gseek.values import OptionsValue

from .results import NEEDS_TRACEBACK, parse_outfmt

__all__ = ["AlignOptions", "SCORING_FIELDS"]

#: The scoring overrides (None: the ``scoring`` preset's value).
SCORING_FIELDS = ("match", "mismatch", "gap_open", "gap_extend", "matrix", "n_score")


@dataclass(frozen=True, repr=False)
class AlignOptions(OptionsValue):
    """What a DP job computes and writes (:class:`~gseek.align.PairAligner`'s options).

    ``mode``: ``global``, ``local`` or ``semiglobal``; ``scoring``: a preset name
    (:data:`~gseek.dp.SCORING_PRESETS`) or a :class:`~gseek.dp.Scoring`, which ``match``,
    ``mismatch``, ``gap_open``, ``gap_extend``, ``matrix``, ``n_score`` override;
    ``traceback``: start cells, CIGAR, identity, gaps too; ``free_ends``: semiglobal only, the free
    overhangs (default all four); ``min_score``/``min_identity``: lazy trace-back of the pairs that
    can pass, keeping those that pass; ``cigar_m``: ``M`` instead of ``=``/``X``; ``outfmt``: None
    (gseek TSV), ``"6"`` or ``"6 COLUMNS..."`` (columns that need the trace-back turn it on).
    """

    mode: str = "global"
    scoring: Any = "dna"
    match: int | None = None
    mismatch: int | None = None
    gap_open: int | None = None
    gap_extend: int | None = None
    matrix: str | None = None
    n_score: int | None = None
    traceback: bool = False
    free_ends: tuple[str, ...] | None = None
    min_score: int | None = None
    min_identity: float | None = None
    cigar_m: bool = False
    outfmt: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise OptionError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if isinstance(self.scoring, dict):  # from JSON
            object.__setattr__(self, "scoring", Scoring(**self.scoring))
        if isinstance(self.free_ends, str):
            object.__setattr__(self, "free_ends", (self.free_ends,))
        elif self.free_ends is not None:
            object.__setattr__(self, "free_ends", tuple(self.free_ends))
        overrides = self.scoring_overrides()
        if overrides.get("matrix") is not None and {"match", "mismatch"} & set(overrides):
            raise OptionError("match/mismatch do not apply with a substitution matrix (it gives every pair's score)")
        self.resolved_scoring()  # checks the preset and the overrides
        for name in self.free_end_names():
            if name not in FREE_END_NAMES:
                raise OptionError(f"free_ends: {name!r} is not one of {', '.join(FREE_END_NAMES)}")
        if self.free_ends is not None and self.mode != "semiglobal":
            raise OptionError("free_ends applies to mode='semiglobal' only")
        if self.min_identity is not None and not 0.0 <= float(self.min_identity) <= 1.0:
            raise OptionError(f"min_identity is a fraction in [0, 1] (e.g. 0.97), not {self.min_identity}")
        if self.cigar_m and not (self.traceback or self.min_identity is not None):
            raise OptionError("cigar_m needs the trace-back (traceback=True): score-only results have no CIGAR")
        self.columns()  # checks outfmt

    def __repr__(self) -> str:
        return f"AlignOptions({', '.join(f'{k}={v!r}' for k, v in self.changed().items())})"

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if isinstance(self.scoring, Scoring):
            out["scoring"] = dataclasses.asdict(self.scoring)
        return out

    def scoring_overrides(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in SCORING_FIELDS if getattr(self, k) is not None}

    def resolved_scoring(self) -> Scoring:
        """The :class:`~gseek.dp.Scoring`: the preset (or the given one) with the overrides."""
        base = self.scoring
        if isinstance(base, Scoring):
            fields = dataclasses.asdict(base)
        elif isinstance(base, str) and base.lower() in SCORING_PRESETS:
            fields = {**dataclasses.asdict(Scoring()), **SCORING_PRESETS[base.lower()]}
        else:
            raise OptionError(f"scoring must be a Scoring or one of {', '.join(SCORING_PRESETS)}, not {base!r}")
        return Scoring(**{**fields, **self.scoring_overrides()})

    def free_end_names(self) -> tuple[str, ...]:
        return FREE_END_NAMES if self.free_ends is None else self.free_ends

    def flags(self) -> int:
        return dp_flags(self.mode, self.free_end_names())

    @property
    def lazy(self) -> bool:
        return self.min_score is not None or self.min_identity is not None

    def traceback_on(self) -> bool:
        """Whether the trace-back runs: asked for, needed by ``min_identity``, or by the columns."""
        on = bool(self.traceback) or self.min_identity is not None
        return on or (self.outfmt is not None and bool(NEEDS_TRACEBACK & set(parse_outfmt(self.outfmt, True))))

    def columns(self) -> tuple[str, ...]:
        return parse_outfmt(self.outfmt, self.traceback_on())

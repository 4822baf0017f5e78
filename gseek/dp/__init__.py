"""Pairwise DP stages: scoring, NW/SW/semiglobal score and trace-back, X-drop extensions.

Each stage is ``stage(backend, arrays...) -> host arrays`` over the ``dp``
kernel family; the aligner (:mod:`gseek.align`) and the BLAST-style search
build on them. CIGAR text is written by :mod:`gseek.output.cigar`.

>>> from gseek.dp import Scoring, score_pairs, dp_flags
>>> Scoring().gap_cost(3)
11
"""

from gseek._lazy import lazy_names

_LAZY = {  # name -> its module, imported on first use (a megablast search loads no NW/SW or X-drop kernels)
    **dict.fromkeys(("FREE_END_NAMES", "MAX_SCORE_REACH", "MODES", "WALK_FIELDS", "DPWorkspace", "check_range",
                     "dp_flags", "identity_score_bound", "score_pairs", "traceback_pairs"), f"{__name__}.nwsw"),
    **dict.fromkeys(("DNA_LETTERS", "SCORING_PRESETS", "Scoring"), f"{__name__}.scoring"),
    **dict.fromkeys(("xdrop_gapped", "xdrop_ungapped"), f"{__name__}.xdrop"),
}

__all__ = [
    "Scoring", "SCORING_PRESETS", "DNA_LETTERS", "MODES", "FREE_END_NAMES", "DPWorkspace", "dp_flags",
    "score_pairs", "traceback_pairs", "identity_score_bound", "check_range", "WALK_FIELDS", "MAX_SCORE_REACH",
    "xdrop_ungapped", "xdrop_gapped",
]
assert set(__all__) == set(_LAZY)

__getattr__ = lazy_names(__name__, _LAZY, globals())


def __dir__():
    return sorted(set(globals()) | set(__all__))

"""Pairwise DP stages: scoring, NW/SW/semiglobal score and trace-back, X-drop extensions.

Each stage is ``stage(backend, arrays...) -> host arrays`` over the ``dp``
kernel family; the aligner (:mod:`gseek.align`) and the BLAST-style search
build on them. CIGAR text is written by :mod:`gseek.output.cigar`.

>>> from gseek.dp import Scoring, score_pairs, dp_flags
>>> Scoring().gap_cost(3)
11
"""

from .nwsw import (
    FREE_END_NAMES,
    MAX_SCORE_REACH,
    MODES,
    WALK_FIELDS,
    DPWorkspace,
    check_range,
    dp_flags,
    identity_score_bound,
    score_pairs,
    traceback_pairs,
)
from .scoring import DNA_LETTERS, SCORING_PRESETS, Scoring
from .xdrop import xdrop_gapped, xdrop_ungapped

__all__ = [
    "Scoring", "SCORING_PRESETS", "DNA_LETTERS", "MODES", "FREE_END_NAMES", "DPWorkspace", "dp_flags",
    "score_pairs", "traceback_pairs", "identity_score_bound", "check_range", "WALK_FIELDS", "MAX_SCORE_REACH",
    "xdrop_ungapped", "xdrop_gapped",
]

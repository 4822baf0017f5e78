"""Batched pairwise alignment: global (NW), local (SW), semiglobal; Gotoh gaps.

One configured :class:`PairAligner` per job, struct-of-arrays results whose
rows print as tab-separated lines. Scoring conventions, tie-breaking and the
output columns are in ``docs/alignment.md``; in short: a gap of length k costs
``gap_open + k * gap_extend`` (BLAST+), coordinates are 0-based half-open,
rows index the query and the CIGAR is the query's (``I`` consumes the query,
``D`` the target).

>>> aligner = PairAligner(mode="global", device="cpu", threads=1)
>>> aligner
PairAligner(device='cpu')
>>> aligner.align("ACGTACGT", "ACGACGT").score
7
>>> hit = PairAligner(mode="local", traceback=True, device="cpu").align("TTTACGTACGTTT", "GGACGTCCGTGG")
>>> print(hit)
q0	t0	11	3	11	2	10	13	12	0.8750	7	1	0	0	4=1X3=
>>> hit.cigar, hit.identity
('4=1X3=', 0.875)

The DP stages themselves are in :mod:`gseek.dp`; the text writers in
:mod:`gseek.output.tabular`.
"""

from .aligner import EncodedSet, PairAligner, default_traceback_memory, encode_set, read_pair_list, triangle
from .options import AlignOptions
from .results import NEEDS_TRACEBACK, Alignment, AlignmentResults, parse_outfmt

__all__ = ["PairAligner", "AlignOptions", "AlignmentResults", "Alignment", "parse_outfmt", "NEEDS_TRACEBACK", "read_pair_list",
           "EncodedSet", "encode_set", "default_traceback_memory", "triangle"]

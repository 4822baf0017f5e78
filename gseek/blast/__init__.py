"""BLAST-style search stages (issue 16), layer 2: numbers and rules taken from BLAST+.

So far: :mod:`gseek.blast.stats`, the Karlin-Altschul statistics of nucleotide scoring
(BLAST+'s tables, length adjustment, e-values, bit scores and their ``-outfmt 6`` text), and
:mod:`gseek.blast.lookup`, the query lookup table and its presence vector, and
:mod:`gseek.blast.dust`, symmetric DUST (the low-complexity intervals blastn masks).
See ``docs/blast.md``.
"""

from gseek.blast.dust import dust_intervals, dust_mask
from gseek.blast.lookup import LookupTable, build_lookup
from gseek.blast.stats import (
                               KarlinParams,
                               bit_scores,
                               effective_search_space,
                               evalues,
                               format_bitscore,
                               format_evalue,
                               length_adjustment,
                               nucleotide_params,
                               supported_gap_costs,
)

__all__ = ["LookupTable", "build_lookup", "dust_intervals", "dust_mask", "KarlinParams", "nucleotide_params",
           "supported_gap_costs", "length_adjustment",
           "effective_search_space", "bit_scores", "evalues", "format_evalue", "format_bitscore"]

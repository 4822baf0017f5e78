"""Complete k-mismatch read mapping (SOAP3's job): :class:`Mapper`.

One stage per module: :mod:`.pieces` (pigeonhole pieces and budgets),
:mod:`.approx` (backtracking search, the flank index of reference N runs),
:mod:`.verify` (Hamming verification on the packed reference),
:mod:`.select` (what to report, MAPQ) and :mod:`.mapper` (the
:class:`Mapper` that runs them); :mod:`.result` holds what they return,
:mod:`.hits` its per-read and per-hit views (mappy-style), :mod:`.tables` its SAM
records as a table (``result.to_pandas()``, ``to_arrow()``).
Mapping files to SAM is the pipeline's job: :func:`gseek.map_files`.

>>> import os, tempfile
>>> from gseek.index import Index
>>> fasta = os.path.join(tempfile.mkdtemp(), "ref.fa")
>>> _ = open(fasta, "w").write(">chr1\\nGATTACAGATTACATTTTCCCCGGGGAAAACGTACGTTGCA\\n")
>>> mapper = Mapper(Index.build(fasta, wgram=4, sa_sample=4, device="cpu"), mismatches=1)
>>> print(mapper.map(["ACATTTTCCCCGGTGA"]).hit_text(0))
read0	chr1	11	+	1
"""

from .approx import flank_regions
from .hits import Hit, MappedRead, md_string
from .mapper import DEFAULT_MISMATCHES, MAX_MISMATCHES, MAX_READ_LENGTH, MIN_READ_LENGTH, Mapper, check_map_options
from .result import STATUS_SEARCHED, STATUS_TOO_LONG, STATUS_TOO_SHORT, MappingResult, Placements, ReadNames
from .select import MAPQ_MAX, MISMATCH_PHRED, mapq_scale

__all__ = [
    "check_map_options",
    "Mapper",
    "MappingResult",
    "MappedRead",
    "Hit",
    "md_string",
    "Placements",
    "ReadNames",
    "DEFAULT_MISMATCHES",
    "MAX_MISMATCHES",
    "MIN_READ_LENGTH",
    "MAX_READ_LENGTH",
    "MAPQ_MAX",
    "MISMATCH_PHRED",
    "STATUS_SEARCHED",
    "STATUS_TOO_LONG",
    "STATUS_TOO_SHORT",
    "flank_regions",
    "mapq_scale",
]

"""Hard masking (``--soft-masking false``): identities counted on the query as given.

With hard masking the masked query bases (DUST, lowercase with ``--lcase-masking``) are N for
the extensions too, so the score and the alignment's ends are those of the masked query. BLAST+
reports the alignment's identities (``pident``, ``nident``, ``mismatch``; ``btop``, ``qseq``)
against the query as given, not the masked one: its formatter reads the original sequence. So a
masked base that matches the subject counts as an identity, as ``btop`` shows it, while the
score keeps what the masked base cost. :func:`identities_as_given` counts them so, for the
HSPs that cover a masked base only.

>>> import numpy as np
>>> runs = np.array([(4 << 4) | 0], np.uint32)  # 4M
>>> given, searched = np.array([0, 1, 2, 3], np.uint8), np.array([0, 4, 4, 3], np.uint8)
>>> subject = np.array([0, 1, 3, 3], np.uint8)
>>> _count(runs, given, 0, subject)
3
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["identities_as_given"]

#: CIGAR operations (BAM codes) that hold a query and a subject base: M, =, X.
_ALIGNED = (0, 7, 8)


def _count(runs: np.ndarray, given: np.ndarray, q: int, subject: np.ndarray) -> int:
    """Identical columns of an alignment (BAM-coded CIGAR ``runs``) of ``given[q:]`` against
    ``subject`` (from its start): a base against the same base; an N matches nothing."""
    same = 0
    s = 0
    for r in runs.tolist():
        n, op = r >> 4, r & 15
        if op in _ALIGNED:
            a, b = given[q:q + n], subject[s:s + n]
            same += int(np.count_nonzero((a == b) & (a < 4)))
            q += n
            s += n
        elif op == 1:
            q += n
        elif op == 2:
            s += n
    return same


def identities_as_given(hsps: dict[str, Any], searched: np.ndarray, given: np.ndarray, bases: Any) -> None:
    """Count ``nident`` and ``mismatch`` of each HSP of ``hsps`` (the searcher's arrays: ``q_start``
    in the searched sequences' coordinates, ``s_start`` in the text's, ``runs`` (a :class:`~gseek.dp.runs.LazyRuns`),
    or none for ungapped HSPs) again against ``given`` (the sequences as given) where the
    ``searched`` ones (hard-masked) differ inside the HSP; in place. ``bases(start, end)``: the
    text's base codes."""
    changed = np.flatnonzero(np.asarray(searched) != np.asarray(given))
    if not changed.size or not hsps["q_start"].size:
        return
    q_start, q_end = np.asarray(hsps["q_start"], np.int64), np.asarray(hsps["q_end"], np.int64)
    touched = np.flatnonzero(np.searchsorted(changed, q_start) < np.searchsorted(changed, q_end))
    if not touched.size:
        return
    nident, mismatch = hsps["nident"].copy(), hsps["mismatch"].copy()
    cigar, offsets = hsps["runs"].take(touched).gather() if "runs" in hsps else (None, None)  # the touched ones'
    for i, h in enumerate(touched.tolist()):
        subject = bases(int(hsps["s_start"][h]), int(hsps["s_end"][h]))
        if cigar is None:  # ungapped: one run of aligned columns
            runs = np.array([(int(q_end[h] - q_start[h]) << 4) | 0], np.int64)
        else:
            runs = np.asarray(cigar[offsets[i]:offsets[i + 1]], np.int64)
        same = _count(runs, given, int(q_start[h]), subject)
        mismatch[h] += nident[h] - same
        nident[h] = same
    hsps["nident"], hsps["mismatch"] = nident, mismatch

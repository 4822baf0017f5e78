"""Checks of BLAST-style hits shared by the tests: :func:`check_alignments`."""

from __future__ import annotations

import numpy as np


def check_alignments(hits, searcher=None) -> None:
    """Each HSP's CIGAR runs (``hits.arrays``' ``cigar``, ``cigar_offsets``) span exactly its query and subject
    ranges, its ``=``/``X`` columns are the bases' (a match: equal bases 0-3), ``nident``, ``mismatch``,
    ``gaps``, ``gapopen`` (its gap runs) and ``length`` are its columns'; with ``searcher`` (the search's
    :class:`~gseek.blast.searcher.BlastSearcher`) it also scores (reward, penalty, an N the matrix value; gaps
    as the task's costs, megablast's linear ones at twice the scale, halved and rounded down) exactly its
    reported score. An HSP given another's runs fails here."""
    a = hits.arrays
    cigar, offsets = a["cigar"], a["cigar_offsets"]
    assert offsets.size == len(hits) + 1
    o = searcher.options if searcher is not None else None
    comp = np.array([3, 2, 1, 0, 4], np.uint8)
    for h in range(len(hits)):
        q = hits.query_codes(int(a["query"][h]))
        if a["strand"][h] < 0:
            q = comp[np.minimum(q, 4)][::-1]
            qa = len(q) - int(a["q_end"][h])
        else:
            qa = int(a["q_start"][h])
        subject = hits.subject_codes(int(a["s_start"][h]), int(a["s_end"][h]), int(a["subject"][h]))
        i = j = matches = mismatches = gaps = opens = total = 0
        for run in cigar[offsets[h]:offsets[h + 1]].tolist():
            n, op = run >> 4, "MIDNSHP=X"[run & 15]
            if op in "=X":
                for _ in range(n):
                    x, y = q[qa + i], subject[j]
                    same = x < 4 and x == y
                    assert same == (op == "="), (h, i, j)
                    matches += same
                    mismatches += not same
                    if o is not None:
                        total += searcher._n_score if x > 3 or y > 3 else (o.reward if same else o.penalty)
                    i, j = i + 1, j + 1
            else:
                assert op in "ID", (h, op)
                gaps, opens = gaps + n, opens + 1
                if o is not None:
                    total -= (0 if o.linear_gaps else o.gap_open) + n * ((o.reward - 2 * o.penalty) / 2
                                                                         if o.linear_gaps else o.gap_extend)
                i, j = (i + n, j) if op == "I" else (i, j + n)
        assert (i, j) == (int(a["q_end"][h] - a["q_start"][h]), int(a["s_end"][h] - a["s_start"][h])), h
        assert (matches, mismatches, gaps, opens) == (a["nident"][h], a["mismatch"][h], a["gaps"][h],
                                                      a["gapopen"][h]), h
        assert matches + mismatches + gaps == a["length"][h], h
        if o is not None:
            assert int(np.floor(total)) == a["score"][h], h

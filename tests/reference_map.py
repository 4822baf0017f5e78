"""Slow, readable references for the read mapper and the ``kmismatch`` kernels.

Brute force over every window of every contig, both strands: the oracle the
mapper's ``--all`` output must equal. An N in the read or the reference is a
mismatch; a window never crosses a contig end.
"""

from __future__ import annotations

import numpy as np

from reference import reverse_complement

CODE = {"A": 0, "C": 1, "G": 2, "T": 3, "N": 4}


def mismatches(read: str, window: str) -> int:
    """Hamming distance in which an N on either side always counts."""
    return sum(1 for a, b in zip(read, window) if a != b or a == "N" or b == "N")


def _codes(seq: str) -> np.ndarray:
    return np.array([CODE[c] for c in seq], dtype=np.int16)


def window_mismatches(contig: str, read: str) -> np.ndarray:
    """Mismatches of ``read`` at every start of ``contig`` (numpy only to keep tests quick)."""
    L = len(read)
    if L > len(contig):
        return np.zeros(0, dtype=np.int64)
    ref = np.lib.stride_tricks.sliding_window_view(_codes(contig), L)
    q = _codes(read)
    bad = (ref != q) | (ref == 4) | (q == 4)
    return bad.sum(axis=1)


def all_placements(contigs: list[str], reads: list[str], k: int, *, fw: bool = True, rc: bool = True
                   ) -> set[tuple[int, int, int, int, int]]:
    """Every ``(read, contig, pos, strand, mismatches)`` with at most k mismatches.

    ``pos`` is the 0-based leftmost base on the forward strand; strand -1
    means the reverse complement of the read matches there.
    """
    out = set()
    for r, read in enumerate(reads):
        strands = ([(1, read)] if fw else []) + ([(-1, reverse_complement(read))] if rc else [])
        for strand, seq in strands:
            for c, contig in enumerate(contigs):
                mm = window_mismatches(contig, seq)
                for pos in np.flatnonzero(mm <= k).tolist():
                    out.add((r, c, pos, strand, int(mm[pos])))
    return out


def piece_occurrences(contigs: list[str], piece: str, budget: int) -> set[tuple[int, int]]:
    """Reference of ``dfs_count``/``dfs_fill`` + locate: every (contig, pos) where
    ``piece`` matches with at most ``budget`` mismatches over reference bases
    only (a window holding a reference N is never found: N is a separator in
    the FM-index text)."""
    out = set()
    for c, contig in enumerate(contigs):
        for pos in range(len(contig) - len(piece) + 1):
            window = contig[pos : pos + len(piece)]
            if "N" not in window and mismatches(piece, window) <= budget:
                out.add((c, pos))
    return out


def best_counts(placements: set, n_reads: int) -> tuple[list[int], list[int], list[int], list[int]]:
    """Per read: best and second-best mismatch counts (-1 if none) and how many placements each has."""
    by_read: dict[int, list[int]] = {}
    for r, _, _, _, mm in placements:
        by_read.setdefault(r, []).append(mm)
    best, second, n_best, n_second = [], [], [], []
    for r in range(n_reads):
        mms = sorted(by_read.get(r, []))
        strata = sorted(set(mms))
        best.append(strata[0] if strata else -1)
        second.append(strata[1] if len(strata) > 1 else -1)
        n_best.append(mms.count(strata[0]) if strata else 0)
        n_second.append(mms.count(strata[1]) if len(strata) > 1 else 0)
    return best, second, n_best, n_second


def md_string(read_fw: str, window: str) -> str:
    """SAM MD:Z of an ungapped alignment (read in forward-reference orientation)."""
    out, run = [], 0
    for a, b in zip(read_fw, window):
        if a != b or a == "N" or b == "N":
            out.append(f"{run}{b}")
            run = 0
        else:
            run += 1
    out.append(str(run))
    return "".join(out)

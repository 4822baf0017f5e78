"""Verification: the Hamming distance of every candidate placement on the packed reference.

One thread per candidate (``kmismatch.verify``): the read, packed in a
word-aligned row with its N mask, against the 2-bit reference text with the
reference N mask (an N on either side is a mismatch); no placement may
cross a contig boundary. The *first finder* rule keeps each placement once
without a sort: a candidate survives only if no earlier piece of its read
would have found it (``docs/architecture.md``, read mapping).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gseek import ragged
from gseek.backend import Backend
from gseek.encode import pack_rows
from gseek.index.text import DeviceText
from gseek.kernels import kmismatch

__all__ = ["verify_candidates"]


def verify_candidates(backend: Backend, ref: DeviceText, has_amb: bool, codes: Any, offsets: Any, pieces: dict,
                      k: int, cand_read: Any, cand_piece: Any, cand_contig: Any, cand_pos: Any) -> tuple[Any, Any]:
    """``(start, mismatches)`` of every candidate (reads ``codes``/``offsets``; ``pieces``: their
    :func:`~gseek.mapper.pieces.piece_layout`); ``mismatches`` is -1 where the candidate is
    rejected (more than ``k``, or found by an earlier piece). ``cand_piece`` ``-1 - p``
    marks a candidate found through piece p in the flank index."""
    b, xp = backend, backend.xp
    lengths = offsets[1:] - offsets[:-1]
    word_off = ragged.offsets((lengths + 15) // 16)
    read_words, read_nmask = pack_rows(b, codes, offsets, word_off)
    n = int(cand_read.size)
    start = xp.empty(n, dtype=np.int64)
    mismatches = xp.empty(n, dtype=np.int32)
    b.launch(kmismatch, "verify", n,
             ref.text, ref.nmask, np.int64(has_amb), np.int64(ref.text.size), ref.contig_offsets,
             read_words, read_nmask, word_off, lengths,
             pieces["first"], pieces["approx"], pieces["offsets"], pieces["budget"], np.int64(k),
             cand_read, cand_piece, cand_contig.astype(np.int32), cand_pos, np.int64(n),
             start, mismatches)  # fmt: skip
    return start, mismatches

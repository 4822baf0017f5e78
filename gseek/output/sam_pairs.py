"""SAM records of paired-end reads: :func:`format_pairs`.

The records are written by the single-end formatter (:mod:`gseek.output.sam_records`,
one record per row: each row's mate sequence, quality and name gathered
first), so every field it writes (CIGAR, SEQ, QUAL, NM, MD, X0, X1, XA, ZH,
YF) is byte for byte what a single-end record has; then one Numba pass,
:func:`mate_patch` (size, prefix sum, fill), rewrites the columns that differ
for a mate: FLAG, RNAME/POS of an unmapped mate placed at its mate, RNEXT,
PNEXT, TLEN, and appends ``YT:Z:CP|DP|UP``. Single-end output is untouched
by any of this. ``docs/sam.md`` (paired-end reads) documents the fields.
"""

from __future__ import annotations

import numba
import numpy as np

from gseek import ragged
from gseek.index.text import ReferenceText
from gseek.kernels._jit import njit
from gseek.kernels.ragged import gather as _gather
from gseek.mapper.pairs import PAIR_TYPES, PairedResult
from gseek.seqio.pairs import PairedBatch

from . import sam_records
from ._text import _byte, _copy, _int

__all__ = ["format_pairs", "mate_patch"]

_TAB, _NL, _STAR, _EQ, _ZERO = 9, 10, 42, 61, 48


@njit(cache=True, nogil=True, error_model="numpy")
def _patch_line(text, a, b, flag, rname, rpos, rnext, pnext, tlen, tag, tag_a, tag_b, cnames, cname_off, out, p,
                write):
    """Line ``text[a:b]`` (its newline included) with FLAG, RNAME/POS (``rname >= 0``),
    RNEXT/PNEXT/TLEN rewritten and ``tag[tag_a:tag_b]`` appended."""
    # the tabs before fields 1, 2, 4, 6 and 9 (no array: this runs once a line)
    t0 = t1 = t3 = t5 = t8 = a
    t = 0
    q = a
    while t < 9:
        if text[q] == _TAB:
            if t == 0:
                t0 = q
            elif t == 1:
                t1 = q
            elif t == 3:
                t3 = q
            elif t == 5:
                t5 = q
            elif t == 8:
                t8 = q
            t += 1
        q += 1
    p = _copy(out, p, text, a, t0 + 1, write)  # QNAME\t
    p = _int(out, p, flag, write)
    if rname >= 0:
        p = _byte(out, p, _TAB, write)
        p = _copy(out, p, cnames, cname_off[rname], cname_off[rname + 1], write)
        p = _byte(out, p, _TAB, write)
        p = _int(out, p, rpos + 1, write)
        p = _copy(out, p, text, t3, t5 + 1, write)  # \tMAPQ\tCIGAR\t
        own = rname
    else:
        p = _copy(out, p, text, t1, t5 + 1, write)  # \tRNAME\tPOS\tMAPQ\tCIGAR\t
        own = -2  # mapped: RNEXT is '=' when it names this record's contig, compared by the caller's ``same``
    if rnext == -1:
        p = _byte(out, p, _STAR, write)
    elif rnext == -2 or rnext == own:
        p = _byte(out, p, _EQ, write)
    else:
        p = _copy(out, p, cnames, cname_off[rnext], cname_off[rnext + 1], write)
    p = _byte(out, p, _TAB, write)
    p = _int(out, p, pnext + 1, write)
    p = _byte(out, p, _TAB, write)
    p = _int(out, p, tlen, write)
    p = _copy(out, p, text, t8, b - 1, write)  # \tSEQ\tQUAL\ttags
    p = _copy(out, p, tag, tag_a, tag_b, write)
    return _byte(out, p, _NL, write)


@njit(parallel=True, cache=True, nogil=True, error_model="numpy")
def mate_patch(text, line_off, flag, rname, rpos, rnext, pnext, tlen, tag, tag_off, kind, cnames, cname_off, out,
               out_off, write):
    """Every line's patched text: sizes into ``out_off[1:]`` (``write`` false) or the text at ``out_off``."""
    for i in numba.prange(line_off.size - 1):
        k = kind[i]
        p = _patch_line(text, line_off[i], line_off[i + 1], flag[i], rname[i], rpos[i], rnext[i], pnext[i], tlen[i],
                        tag, tag_off[k], tag_off[k + 1], cnames, cname_off, out, out_off[i] if write else 0, write)
        if not write:
            out_off[i + 1] = p


def format_pairs(result: PairedResult, pairs: PairedBatch, reference: ReferenceText, *, cigar_eq: bool = False,
                 raw: bool = False, threads: int | None = None) -> tuple[str | np.ndarray, int]:
    """SAM record lines of one batch of pairs (:func:`~gseek.mapper.pairs.select_pairs`), and their number.

    Records come pair by pair in input order: a reported concordant pair as
    mate 1's record then mate 2's (then the next pair's, ``-k``/``--all``);
    a pair reported unpaired as mate 1's records then mate 2's. ``raw``: the
    text as a ``uint8`` array.
    """
    from gseek.mapper import STATUS_TOO_LONG, STATUS_TOO_SHORT

    from .sam import _LETTERS, COMPLEMENT, _joined, _text

    joined = pairs.joined()
    r = len(result)
    mate = result.mate
    mate = np.ascontiguousarray(mate, dtype=np.int64)
    codes, seq_off = _gather(joined.codes, joined.offsets, mate)
    quals = None if joined.quals is None else _gather(joined.quals, joined.offsets, mate)[0]
    names, name_off = _gather(joined.names, joined.name_offsets, mate)
    mapped = result.mapped
    hit_off = ragged.offsets(mapped.astype(np.int64))
    hits = np.flatnonzero(mapped)
    single = result.single
    status = np.asarray(single.status)[mate]
    tags = {STATUS_TOO_LONG: b"\tYF:Z:TOO_LONG", STATUS_TOO_SHORT: b"\tYF:Z:TOO_SHORT"}
    tag_length = np.zeros(max(tags) + 1, dtype=np.int64)
    tag_length[list(tags)] = [len(t) for t in tags.values()]
    unmapped_status = np.where(mapped, 0, status)
    extra_off = ragged.offsets(tag_length[unmapped_status])
    extra = b"".join(tags[s] for s in unmapped_status[unmapped_status != 0].tolist())
    alt_src = np.where(result.alt >= 0, result.alt, 0)
    has_alt = result.alt >= 0
    a_off = single.alt_offsets
    alt_size = np.where(has_alt, a_off[alt_src + 1] - a_off[alt_src], 0)
    alt_idx = np.repeat(a_off[alt_src] - ragged.offsets(alt_size)[:-1], alt_size) + np.arange(int(alt_size.sum()))
    cnames, cname_off = _joined(single.contig_names)
    text, records = sam_records.format_records(
        np.arange(r), names=names, name_off=name_off, codes=codes, seq_off=seq_off, quals=quals, letters=_LETTERS,
        complement=COMPLEMENT, hit_off=hit_off, extra=np.frombuffer(extra, dtype=np.uint8), extra_off=extra_off,
        contig=result.contig[hits], pos=result.pos[hits], strand=result.strand[hits],
        mismatches=result.mismatches[hits], secondary=result.secondary[hits], best=result.mismatches,
        n_best=result.x0, n_second=result.x1, n_found=result.found, mapq=result.mapq, capped=result.capped,
        alt_off=ragged.offsets(alt_size), alt_contig=single.alt_contig[alt_idx], alt_pos=single.alt_pos[alt_idx],
        alt_strand=single.alt_strand[alt_idx], alt_mismatches=single.alt_mismatches[alt_idx], cnames=cnames,
        cname_off=cname_off, contig_start=reference.contig_offsets, text=reference.text,
        amb_start=reference.amb_start, amb_end=reference.amb_end, cigar_eq=cigar_eq, threads=threads)
    assert records == r, (records, r)
    line_off = np.zeros(r + 1, dtype=np.int64)
    line_off[1:] = np.flatnonzero(text == _NL) + 1
    # RNEXT '=' where the mate's contig is the record's own (mapped records: their contig)
    rnext = np.where(mapped & (result.rnext == result.contig), -2, result.rnext).astype(np.int64)
    tag, tag_off = _joined(["", *(f"\tYT:Z:{PAIR_TYPES[k]}" for k in sorted(PAIR_TYPES))])
    args = (text, line_off, result.flag, result.rname.astype(np.int64), result.rpos, rnext, result.pnext,
            result.tlen, tag, tag_off, result.pair_type.astype(np.int64), cnames, cname_off)
    out_off = np.zeros(r + 1, dtype=np.int64)
    mate_patch(*args, text, out_off, False)
    sizes = out_off[1:].copy()
    out_off = ragged.offsets(sizes)
    out = np.empty(int(out_off[-1]), dtype=np.uint8)
    mate_patch(*args, out, out_off, True)
    return (out if raw else _text(out)), r

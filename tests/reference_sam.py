"""Slow, readable reference of the SAM record formatter (``gseek.output.sam_records``).

This is the per-record Python formatter gseek shipped before the Numba one:
f-strings over Python lists, MD and ``=``/``X`` CIGAR from the mismatch
positions of each hit. ``tests/test_sam.py`` checks that ``gseek.output.sam``
writes exactly these bytes.
"""

from __future__ import annotations

import numpy as np

from gseek.alphabet import COMPLEMENT
from gseek.mapper import STATUS_TOO_LONG, STATUS_TOO_SHORT

_LETTERS = np.frombuffer(b"ACGTN", dtype=np.uint8)
FLAG_REVERSE, FLAG_SECONDARY = 16, 256


def md_tag(ref: np.ndarray, mismatch_at: np.ndarray, length: int) -> str:
    """MD:Z value of an ungapped alignment: matched run lengths and the reference
    base (``ACGTN``) at each mismatch.

    >>> md_tag(np.array([0, 4]), np.array([2, 5]), 8)
    '2A2N2'
    """
    parts, last = [], 0
    for where, base in zip(mismatch_at.tolist(), ref.tolist()):
        parts.append(f"{where - last}{'ACGTN'[base]}")
        last = where + 1
    parts.append(str(length - last))
    return "".join(parts)


def cigar_eq(mismatch_at: np.ndarray, length: int) -> str:
    """CIGAR with ``=`` (match) and ``X`` (mismatch) runs of an ungapped alignment.

    >>> cigar_eq(np.array([0, 1, 5]), 8)
    '2X3=1X2='
    """
    parts, last, i = [], 0, 0
    at = mismatch_at.tolist()
    while i < len(at):
        j = i
        while j + 1 < len(at) and at[j + 1] == at[j] + 1:
            j += 1
        if at[i] > last:
            parts.append(f"{at[i] - last}=")
        parts.append(f"{j - i + 1}X")
        last = at[j] + 1
        i = j + 1
    if length > last:
        parts.append(f"{length - last}=")
    return "".join(parts)


def _strand_views(batch):
    """The batch's sequences and qualities as text, forward and reverse(-complemented)."""
    codes, offsets = batch.codes, batch.offsets
    lengths = np.diff(offsets)
    rev = np.repeat(offsets[:-1] + offsets[1:] - 1, lengths) - np.arange(codes.size)
    seq = _LETTERS[codes].tobytes().decode("ascii")
    rc = _LETTERS[COMPLEMENT[codes[rev]]].tobytes().decode("ascii")
    if batch.quals is None:
        return seq, rc, None, None
    return seq, rc, batch.quals.tobytes().decode("ascii"), batch.quals[rev].tobytes().decode("ascii")


def format_unmapped(batch, reads, tags=None) -> str:
    """Flag-4 records of ``reads`` (original orientation); ``tags[i]`` appended to read i's line."""
    names = batch.name_list()
    seq, _, qual, _ = _strand_views(batch)
    o = batch.offsets.tolist()
    lines = []
    for i in np.asarray(reads).tolist():
        a, b = o[i], o[i + 1]
        q = qual[a:b] if qual is not None else "*"
        extra = f"\t{tags[i]}" if tags and i in tags else ""
        lines.append(f"{names[i]}\t4\t*\t0\t0\t*\t*\t0\t0\t{seq[a:b] or '*'}\t{q or '*'}{extra}\n")
    return "".join(lines)


def mismatch_positions(batch, reference, contig, pos, strand, read):
    """Per hit: (flat mismatch positions in SAM SEQ orientation, their offsets, reference codes there)."""
    lengths = batch.lengths[read]
    hit_off = np.zeros(read.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=hit_off[1:])
    total = int(hit_off[-1])
    within = np.arange(total) - np.repeat(hit_off[:-1], lengths)
    g = np.repeat(reference.contig_offsets[contig] + pos, lengths) + within
    words = reference.text[g >> 4]
    shift = (30 - 2 * (g & 15)).astype(np.uint32)
    ref = ((words >> shift) & 3).astype(np.uint8)
    if reference.has_amb:
        ref[((reference.nmask[g >> 4] >> shift) & 3) != 0] = 4
    # the read as aligned to the forward reference: reverse complement for strand -1
    rev = np.repeat(strand < 0, lengths)
    start = np.repeat(batch.offsets[read], lengths)
    end = np.repeat(batch.offsets[read + 1], lengths)
    src = np.where(rev, end - 1 - within, start + within)
    q = batch.codes[src]
    q = np.where(rev, COMPLEMENT[q], q)
    bad = (q != ref) | (q == 4) | (ref == 4)
    flat = np.flatnonzero(bad)
    offsets = np.searchsorted(flat, hit_off)
    return flat - np.repeat(hit_off[:-1], np.diff(offsets)), offsets, ref[flat]


def format_mapping(result, batch, reference, *, no_unal: bool = False, cigar_eq: bool = False) -> tuple[str, int]:
    """SAM record lines of one mapped batch, reads in input order, and their number."""
    names = result.names
    contig_names = result.contig_names
    seq, rc, qual, rqual = _strand_views(batch)
    o = batch.offsets.tolist()
    lengths = batch.lengths.tolist()
    read, contig, pos, strand = result.read, result.contig, result.pos, result.strand
    at, at_off, ref_at = mismatch_positions(batch, reference, contig, pos, strand, read)
    at_off = at_off.tolist()
    mm = result.mismatches.tolist()
    n_best, n_second, mapq = result.n_best.tolist(), result.n_second.tolist(), result.mapq.tolist()
    best = result.best.tolist()
    hit_off = result.hit_offsets.tolist()
    alt_off = result.alt_offsets.tolist()
    capped = result.capped.tolist() if result.capped.size else [False] * result.n_reads
    n_found = result.n_found.tolist()
    status = result.status.tolist()
    contig_l, pos_l, strand_l, sec_l = (x.tolist() for x in (contig, pos, strand, result.secondary))
    lines: list[str] = []
    records = 0
    for i in range(result.n_reads):
        a, b = o[i], o[i + 1]
        L = lengths[i]
        if hit_off[i] == hit_off[i + 1]:
            if no_unal:
                continue
            extra = {STATUS_TOO_LONG: "\tYF:Z:TOO_LONG", STATUS_TOO_SHORT: "\tYF:Z:TOO_SHORT"}.get(status[i], "")
            q = qual[a:b] if qual is not None else "*"
            lines.append(f"{names[i]}\t4\t*\t0\t0\t*\t*\t0\t0\t{seq[a:b]}\t{q}{extra}\n")
            records += 1
            continue
        xa = ""
        if alt_off[i + 1] > alt_off[i]:
            xa = "\tXA:Z:" + "".join(
                f"{contig_names[c]},{'+' if s > 0 else '-'}{p + 1},{L}M,{m};"
                for c, p, s, m in zip(result.alt_contig[alt_off[i]:alt_off[i + 1]].tolist(),
                                      result.alt_pos[alt_off[i]:alt_off[i + 1]].tolist(),
                                      result.alt_strand[alt_off[i]:alt_off[i + 1]].tolist(),
                                      result.alt_mismatches[alt_off[i]:alt_off[i + 1]].tolist()))
        zh = f"\tZH:i:{n_found[i]}" if capped[i] else ""
        for j in range(hit_off[i], hit_off[i + 1]):
            rev = strand_l[j] < 0
            flag = (FLAG_REVERSE if rev else 0) | (FLAG_SECONDARY if sec_l[j] else 0)
            s = rc[a:b] if rev else seq[a:b]
            q = "*" if qual is None else (rqual[a:b] if rev else qual[a:b])
            where = at[at_off[j]:at_off[j + 1]]
            cigar = _cigar_eq(where, L) if cigar_eq else f"{L}M"
            md = md_tag(ref_at[at_off[j]:at_off[j + 1]], where, L)
            quality = mapq[i] if (not sec_l[j] or mm[j] == best[i]) else 0
            tags = f"NM:i:{mm[j]}\tMD:Z:{md}\tX0:i:{n_best[i]}\tX1:i:{n_second[i]}"
            lines.append(f"{names[i]}\t{flag}\t{contig_names[contig_l[j]]}\t{pos_l[j] + 1}\t{quality}\t{cigar}"
                         f"\t*\t0\t0\t{s}\t{q}\t{tags}{xa if not sec_l[j] else ''}{zh}\n")
            records += 1
    return "".join(lines), records


_cigar_eq = cigar_eq

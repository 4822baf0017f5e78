"""A :class:`~gseek.mapper.MappingResult` as a table: the SAM records' fields and tags, one row a hit.

:func:`sam_columns` gives the columns ``gseek search`` writes for the same
batch (``docs/sam.md``), with the SAM field names: ``QNAME FLAG RNAME POS MAPQ
CIGAR RNEXT PNEXT TLEN SEQ QUAL`` (POS 1-based, SEQ and QUAL as on the forward
reference strand, ``*`` for FASTA input) and the tags ``NM MD X0 X1 XA ZH``
(``XA`` on a primary record with alternatives, ``ZH`` on a capped ``--all``
read; None where a record has no such tag). With ``unmapped=True`` the rows are
every record of the SAM output, the unmapped reads' (``FLAG`` 4, ``YF`` for
reads not searched) in their place; by default only the hits (``--no-unal``).
The rules are the SAM formatter's (:mod:`gseek.output.sam_records`);
``tests/test_api.py`` checks the table against the SAM text it writes.

>>> import os, tempfile
>>> from gseek import Index, Mapper
>>> fasta = os.path.join(tempfile.mkdtemp(), "ref.fa")
>>> _ = open(fasta, "w").write(">chr1\\nGATTACAGATTACATTTTCCCCGGGGAAAACGTACGTTGCA\\n")
>>> result = Mapper(Index.build(fasta, wgram=4, device="cpu"), mismatches=1).map(
...     ["ACATTTTCCCCGGTGA", "TGCAACGTACGTTTTC", "ACGT"])
>>> columns = sam_columns(result)
>>> list(columns)[:11]
['QNAME', 'FLAG', 'RNAME', 'POS', 'MAPQ', 'CIGAR', 'RNEXT', 'PNEXT', 'TLEN', 'SEQ', 'QUAL']
>>> columns["QNAME"].tolist(), columns["FLAG"].tolist(), columns["POS"].tolist(), columns["MD"].tolist()
(['read0', 'read1'], [0, 16], [12, 26], ['13G2', '16'])
>>> sam_columns(result, unmapped=True)["YF"].tolist()
[None, None, 'TOO_SHORT']
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gseek import ragged
from gseek.alphabet import COMPLEMENT

__all__ = ["SAM_FIELDS", "SAM_TAGS", "SAM_TYPES", "sam_columns"]

#: SAM's eleven mandatory fields, in order.
SAM_FIELDS = ("QNAME", "FLAG", "RNAME", "POS", "MAPQ", "CIGAR", "RNEXT", "PNEXT", "TLEN", "SEQ", "QUAL")
#: The tags of a mapped record, in the order written (``XA``, ``ZH`` when present).
SAM_TAGS = ("NM", "MD", "X0", "X1", "XA", "ZH")
#: The type of each tag (the fields: int64 or string as they print), as ``gseek.tables`` takes it.
SAM_TYPES = {"NM": "int64", "MD": "string", "X0": "int64", "X1": "int64", "XA": "string", "ZH": "int64",
             "YF": "string"}
#: SAM FLAG bits (as :mod:`gseek.output.sam_records` writes them).
_UNMAPPED, _REVERSE, _SECONDARY = 4, 16, 256
_LETTERS = np.frombuffer(b"ACGTN", np.uint8)


def _held(result: Any, name: str):
    value = getattr(result, name)
    if value is None:
        raise ValueError(f"this MappingResult holds no {name} (it was not made by Mapper.map or Mapper.select): "
                         "the table's SEQ, QUAL and MD need it")
    return value


def _optional(values: list, where: np.ndarray) -> np.ndarray:
    """An object column: ``values[k]`` at the rows ``where`` (bool), None elsewhere."""
    out = np.full(where.size, None, dtype=object)
    out[np.flatnonzero(where)] = values
    return out


def _split(text: bytes, offs: np.ndarray) -> np.ndarray:
    """The strings ``text[offs[k]:offs[k+1]]`` as an object column (``*`` for an empty one)."""
    s = text.decode("latin-1")
    o = offs.tolist()
    return np.array([s[a:b] or "*" for a, b in zip(o[:-1], o[1:])] if len(o) > 1 else [], dtype=object)


def _md(mask: np.ndarray, ref: np.ndarray, offs: np.ndarray) -> list[str]:
    """MD:Z of every row: run lengths and the reference letter at each mismatch (``mask``)."""
    lengths = np.diff(offs)
    md = [str(n) for n in lengths.tolist()]
    bad = np.flatnonzero(mask)
    if not bad.size:
        return md
    row = np.searchsorted(offs, bad, side="right") - 1
    local = bad - offs[row]
    letters = _LETTERS[ref[bad]].tobytes().decode()
    cut = np.flatnonzero(np.diff(row)) + 1
    for lo, hi in zip(np.concatenate([[0], cut]).tolist(), np.concatenate([cut, [bad.size]]).tolist()):
        r = int(row[lo])
        parts, last = [], 0
        for k in range(lo, hi):
            t = int(local[k])
            parts.append(f"{t - last}{letters[k]}")
            last = t + 1
        parts.append(str(int(lengths[r]) - last))
        md[r] = "".join(parts)
    return md


def sam_columns(result: Any, unmapped: bool = False) -> dict[str, np.ndarray]:
    """The SAM records of ``result`` as columns (field or tag name -> numpy array), in
    the SAM output's order: the hits (every record with ``unmapped``, then also ``YF``)."""
    batch, reference = _held(result, "batch"), _held(result, "reference")
    n = result.n_reads
    hit_off = np.asarray(result.hit_offsets, np.int64)
    per_read = np.diff(hit_off)
    rows_of = np.maximum(per_read, 1) if unmapped else per_read
    row_read = np.repeat(np.arange(n, dtype=np.int64), rows_of)
    row_start = ragged.offsets(rows_of)
    hit = hit_off[row_read] + np.arange(row_read.size, dtype=np.int64) - row_start[row_read]
    mapped = per_read[row_read] > 0
    hit = np.where(mapped, hit, 0)
    m = np.flatnonzero(mapped)
    j = hit[m]
    i = row_read[m]

    reverse = np.zeros(row_read.size, bool)
    reverse[m] = np.asarray(result.strand)[j] < 0
    secondary = np.zeros(row_read.size, bool)
    secondary[m] = np.asarray(result.secondary)[j].astype(bool)
    flag = np.where(mapped, _REVERSE * reverse + _SECONDARY * secondary, _UNMAPPED).astype(np.int64)
    contig = np.asarray(result.contig)[j]
    mism = np.asarray(result.mismatches)[j].astype(np.int64)
    mapq = np.zeros(row_read.size, np.int64)
    best = np.asarray(result.best)[i]
    mapq[m] = np.where(~secondary[m] | (mism == best), np.asarray(result.mapq)[i], 0)
    pos = np.zeros(row_read.size, np.int64)
    pos[m] = np.asarray(result.pos)[j] + 1
    lengths = np.diff(np.asarray(batch.offsets, np.int64))
    rname = np.full(row_read.size, "*", dtype=object)
    rname[m] = np.array(result.contig_names, dtype=object)[contig] if m.size else []
    cigar = np.full(row_read.size, "*", dtype=object)
    cigar[m] = [f"{L}M" for L in lengths[i].tolist()]

    # SEQ and QUAL: the read, reverse-complemented (QUAL reversed) for a reverse-strand record
    codes, offs = ragged.gather(np.asarray(batch.codes, np.uint8), np.asarray(batch.offsets, np.int64), row_read)
    within = np.arange(codes.size, dtype=np.int64) - np.repeat(offs[:-1], np.diff(offs))
    row_of_base = np.repeat(np.arange(row_read.size), np.diff(offs))
    back = np.where(reverse[row_of_base], offs[row_of_base + 1] - 1 - within, offs[row_of_base] + within)
    seq = np.where(reverse[row_of_base], COMPLEMENT[codes[back]], codes[back]) if codes.size else codes
    columns: dict[str, np.ndarray] = {
        "QNAME": np.array(batch.name_list(), dtype=object)[row_read] if n else np.zeros(0, object),
        "FLAG": flag, "RNAME": rname, "POS": pos, "MAPQ": mapq, "CIGAR": cigar,
        "RNEXT": np.full(row_read.size, "*", dtype=object), "PNEXT": np.zeros(row_read.size, np.int64),
        "TLEN": np.zeros(row_read.size, np.int64), "SEQ": _split(_LETTERS[seq].tobytes(), offs),
    }
    if batch.quals is None:
        columns["QUAL"] = np.full(row_read.size, "*", dtype=object)
    else:
        quals, _ = ragged.gather(np.asarray(batch.quals, np.uint8), np.asarray(batch.offsets, np.int64), row_read)
        columns["QUAL"] = _split(quals[back].tobytes() if quals.size else b"", offs)

    # tags: NM, MD (read against the reference, as the formatter), X0, X1, XA, ZH
    in_hit = mapped[row_of_base]
    row_text = np.zeros(row_read.size, np.int64)  # where each hit starts in the reference text
    row_text[m] = np.asarray(reference.contig_offsets, np.int64)[contig] + pos[m] - 1
    g = row_text[row_of_base] + within
    read_codes = seq[in_hit]
    ref_codes = reference.bases_at(g[in_hit])
    mask = (read_codes != ref_codes) | (read_codes == 4) | (ref_codes == 4)
    md = _md(mask, ref_codes, ragged.offsets(lengths[i]))
    n_best, n_second = np.asarray(result.n_best, np.int64)[i], np.asarray(result.n_second, np.int64)[i]
    alt_off = np.asarray(result.alt_offsets, np.int64)
    xa_rows = ~secondary[m] & (alt_off[i + 1] > alt_off[i])
    xa = [_xa(result, int(r), int(L)) for r, L in zip(i[xa_rows].tolist(), lengths[i][xa_rows].tolist())]
    capped = np.asarray(result.capped, bool)
    zh_rows = capped[i] if capped.size else np.zeros(i.size, bool)
    zh = np.asarray(result.n_found, np.int64)[i][zh_rows].tolist()
    if unmapped and m.size < row_read.size:  # records without hit tags: None there
        columns.update(NM=_optional(mism.tolist(), mapped), MD=_optional(md, mapped),
                       X0=_optional(n_best.tolist(), mapped), X1=_optional(n_second.tolist(), mapped))
    else:
        columns.update(NM=mism, MD=np.array(md, dtype=object), X0=n_best, X1=n_second)
    xa_at, zh_at = np.zeros(row_read.size, bool), np.zeros(row_read.size, bool)
    xa_at[m[xa_rows]] = True
    zh_at[m[zh_rows]] = True
    columns.update(XA=_optional(xa, xa_at), ZH=_optional(zh, zh_at))
    if unmapped:
        status = np.asarray(result.status)[row_read]
        names = result.NOT_SEARCHED
        yf = ~mapped & np.isin(status, list(names))
        columns["YF"] = _optional([names[s] for s in status[yf].tolist()], yf)
    return columns


def _xa(result: Any, i: int, length: int) -> str:
    """The XA:Z value of read ``i``'s primary record: ``contig,±pos,{length}M,NM;`` per alternative."""
    a, b = int(result.alt_offsets[i]), int(result.alt_offsets[i + 1])
    return "".join(f"{result.contig_names[int(c)]},{'+' if s > 0 else '-'}{int(p) + 1},{length}M,{int(nm)};"
                   for c, p, s, nm in zip(result.alt_contig[a:b].tolist(), result.alt_pos[a:b].tolist(),
                                          result.alt_strand[a:b].tolist(), result.alt_mismatches[a:b].tolist()))

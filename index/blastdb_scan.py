"""BLAST database deflines (``.nhr``) read in one compiled pass: the common shapes of a record.

:func:`~gseek.index.blastdb_defline.parse_defline_set` reads any ``Blast-def-line-set`` record by
record, in Python (about 20 us a record: 4 s for 200,000 sequences, most of a conversion).
:func:`scan_deflines` reads, in one Numba pass over the file, the records makeblastdb writes: one
``Blast-def-line`` with a plain title, up to :data:`MAX_FAST_IDS` ids of the kinds gi, bbs, bbm,
lcl, gnl and the Textseq-id accessions, and a taxid; the spans of their strings and their numbers
into two tables. Anything else (a non-redundant set of several deflines, PDB or patent ids, a title
in pieces, a damaged record) is left to ``parse_defline_set``, which reads it or names what is wrong:
the names are the same either way (``tests/test_blastdb_defline.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gseek.kernels._jit import njit

from .blastdb_defline import (SEQID_TYPES, TEXTSEQ, Defline, DeflineError, SubjectId, parse_defline_set,
                              subject_ids, unparsed_subject_id)

__all__ = ["ID_COLUMNS", "MAX_FAST_DEFLINES", "MAX_FAST_IDS", "RECORD_COLUMNS", "TEXTSEQ_TAGS", "scan_deflines", "volume_subject_ids"]

#: Deflines of one record read by the pass (a non-redundant set of more: read by :func:`parse_defline_set`).
MAX_FAST_DEFLINES = 4
#: Columns of :func:`scan_deflines`'s record rows (the first defline's title span, then the further
#: deflines' title spans from R_MORE on, two columns each) and id rows (I_DEF: the defline of the id).
R_FAST, R_TITLE0, R_TITLE1, R_TAXID, R_NIDS, R_ORD, R_NDEF, R_MORE = range(8)
RECORD_COLUMNS, ID_COLUMNS = R_MORE + 2 * (MAX_FAST_DEFLINES - 1), 9
I_KIND, I_INT, I_STR, I_S1A, I_S1B, I_S2A, I_S2B, I_VER, I_DEF = range(9)
#: Ids of one record read by the pass, all its deflines' (more: the record is read by :func:`parse_defline_set`).
MAX_FAST_IDS = 8
#: Records read a pass (bounds the tables: 540 bytes a record).
CHUNK = 1 << 16
_ORD = np.frombuffer(b"BL_ORD_ID", np.uint8)
#: The Seq-id CHOICE tags of the Textseq-id kinds.
TEXTSEQ_TAGS = np.array(sorted(k for k, v in SEQID_TYPES.items() if v in TEXTSEQ), np.int64)


@njit(cache=True, nogil=True)
def _head(buf, pos, end):
    """(first byte, content start, content end or -1: indefinite) of the element at ``pos``; first
    byte -1 where it is not one this pass reads (high tag numbers, lengths over 7 bytes, overruns)."""
    if pos + 2 > end or buf[pos] & 0x1F == 0x1F:
        return -1, 0, 0
    first = np.int64(buf[pos])
    n = np.int64(buf[pos + 1])
    pos += 2
    if n == 0x80:
        return first, pos, -1
    if n & 0x80:
        k = n & 0x7F
        if k > 7 or pos + k > end:
            return -1, 0, 0
        n = 0
        for j in range(k):
            n = (n << 8) | np.int64(buf[pos + j])
        pos += k
    if pos + n > end:
        return -1, 0, 0
    return first, pos, pos + n


@njit(cache=True, nogil=True)
def _closed(buf, p, c1, end):
    """Where a constructed element whose contents (ending at ``c1``, -1: indefinite) were read up
    to ``p`` ends; -1 when more elements follow."""
    if c1 >= 0:
        return c1 if p == c1 else -1
    if p + 2 <= end and buf[p] == 0 and buf[p + 1] == 0:
        return p + 2
    return -1


@njit(cache=True, nogil=True)
def _more(buf, p, c1, end):
    """Whether another element follows at ``p`` within contents ending at ``c1`` (-1: indefinite)."""
    if c1 >= 0:
        return p < c1
    return p + 2 <= end and not (buf[p] == 0 and buf[p + 1] == 0)


@njit(cache=True, nogil=True)
def _wrapped(buf, pos, end, want):
    """An explicit tag at ``pos`` holding one element whose first byte is ``want``: (inner content
    start, inner content end (-1: indefinite), inner bound, the tag's end (known once the inner one is
    read: returned by :func:`_close_wrapped`), the tag's c1); first -1 when not that."""
    first, c0, c1 = _head(buf, pos, end)
    if first < 0 or not first & 0x20:
        return -1, 0, 0, 0
    bound = c1 if c1 >= 0 else end
    f2, d0, d1 = _head(buf, c0, bound)
    if f2 != want:
        return -1, 0, 0, 0
    return first, d0, d1, c1


@njit(cache=True, nogil=True)
def _primitive(buf, pos, end, want):
    """(content start, content end, the element after) of an explicit tag holding one primitive
    element ``want`` (0x1A VisibleString, 0x02 INTEGER); start and after -1 when not that."""
    first, d0, d1, c1 = _wrapped(buf, pos, end, want)
    if first < 0 or d1 < 0:
        return -1, 0, -1
    after = _closed(buf, d1, c1, end)
    return (d0, d1, after) if after >= 0 else (-1, 0, -1)


@njit(cache=True, nogil=True)
def _field(buf, pos, seen, most):
    """The number n of the explicit field tag ``[n]`` at ``pos``: 0 .. ``most`` and not in ``seen`` (a bit each),
    else -1."""
    tag = np.int64(buf[pos]) - 0xA0
    return tag if 0 <= tag <= most and not seen & (np.int64(1) << tag) else -1


@njit(cache=True, nogil=True)
def _int(buf, a, b):
    """A BER INTEGER of 1-7 bytes (ok, value)."""
    if b <= a or b - a > 7:
        return False, 0
    v = np.int64(0)
    for j in range(a, b):
        v = (v << 8) | np.int64(buf[j])
    if buf[a] & 0x80:
        v -= np.int64(1) << (8 * (b - a))
    return True, v


@njit(cache=True, nogil=True)
def _int_at(buf, pos, end):
    """An explicit tag holding an INTEGER at ``pos``: (ok, its value, the element after)."""
    a, b, after = _primitive(buf, pos, end, 0x02)
    ok, v = _int(buf, a, b) if a >= 0 else (False, 0)
    return ok, v, after


@njit(cache=True, nogil=True)
def _object_id_at(buf, pos, end, row):
    """An Object-id (``[0] INTEGER`` or ``[1] VisibleString``) at ``pos`` into ``row``'s I_INT or
    I_S2A/B (I_STR 1); the element after it, or -1."""
    first = np.int64(buf[pos]) if pos < end else -1
    a, b, after = _primitive(buf, pos, end, 0x02 if first == 0xA0 else 0x1A)
    if a < 0 or first != 0xA0 and first != 0xA1:
        return -1
    if first == 0xA0:
        ok, v = _int(buf, a, b)
        if not ok:
            return -1
        row[I_INT], row[I_STR] = v, 0
    else:
        row[I_S2A], row[I_S2B], row[I_STR] = a, b, 1
    return after


@njit(cache=True, nogil=True)
def _seq_fields(buf, d0, d1, end, row, textseq):
    """The fields of a Dbtag (``textseq`` False: [0] db, [1] Object-id) or a Textseq-id ([0] name, [1]
    accession, [2] release, [3] version) whose contents start at ``d0``; the contents' end or -1."""
    bound = d1 if d1 >= 0 else end
    p, seen = d0, 0
    while _more(buf, p, d1, bound):
        tag = _field(buf, p, seen, 3)
        if tag < 0:
            return -1
        seen |= 1 << tag
        if not textseq and tag == 1:
            p = _object_id_at_wrapped(buf, p, bound, row)
        elif textseq and tag == 3:
            ok, row[I_VER], p = _int_at(buf, p, bound)
            if not ok:
                return -1
        elif tag <= 2:
            a, b, p = _primitive(buf, p, bound, 0x1A)
            if a >= 0 and tag == 0:
                row[I_S1A], row[I_S1B] = a, b  # db; name
            elif a >= 0 and tag == 1:
                row[I_S2A], row[I_S2B] = a, b  # accession
        else:
            return -1
        if p < 0:
            return -1
    if not textseq and seen != 3:
        return -1
    return _closed(buf, p, d1, bound)


@njit(cache=True, nogil=True)
def _pdb_fields(buf, d0, d1, end, row):
    """A PDB-seq-id's fields ([0] mol, [1] chain INTEGER, [3] chain-id; I_STR 1: chain-id, 2: chain, 0: none)
    whose contents start at ``d0``; the contents' end or -1 (a release date [2]: the slow reader's)."""
    bound = d1 if d1 >= 0 else end
    p, seen = d0, 0
    while _more(buf, p, d1, bound):
        tag = _field(buf, p, seen, 3)
        if tag < 0 or tag == 2:
            return -1
        seen |= 1 << tag
        if tag == 1:
            ok, row[I_INT], p = _int_at(buf, p, bound)
            if not ok:
                return -1
            if row[I_STR] == 0:
                row[I_STR] = 2
        else:
            a, b, p = _primitive(buf, p, bound, 0x1A)
            if a < 0:
                return -1
            if tag == 0:
                row[I_S1A], row[I_S1B] = a, b  # mol
            else:
                row[I_S2A], row[I_S2B], row[I_STR] = a, b, 1  # chain-id
        if p < 0:
            return -1
    if not seen & 1:
        return -1
    return _closed(buf, p, d1, bound)


@njit(cache=True, nogil=True)
def _pat_fields(buf, d0, d1, end, row):
    """A Patent-seq-id's fields, in their order: [0] seqid INTEGER, [1] Id-pat { [0] country, [1] CHOICE { [0]
    number, [1] app-number }, [2] doc-type } (I_INT, S1 the country, S2 the number), whose contents start at
    ``d0``; the contents' end or -1."""
    bound = d1 if d1 >= 0 else end
    if d0 >= bound or buf[d0] != 0xA0:
        return -1
    ok, row[I_INT], p = _int_at(buf, d0, bound)
    if not ok or p >= bound or buf[p] != 0xA1:
        return -1
    first, e0, e1, c1 = _wrapped(buf, p, bound, 0x30)  # [1] Id-pat
    if first < 0:
        return -1
    ebound = e1 if e1 >= 0 else (c1 if c1 >= 0 else bound)
    q, got = e0, 0
    while q >= 0 and _more(buf, q, e1, ebound):
        field = _field(buf, q, got, 2)
        if field < 0:
            return -1
        got |= 1 << field
        if field == 1:  # [1] around the CHOICE [0] number / [1] app-number
            f1, g0, g1 = _head(buf, q, ebound)
            if f1 != 0xA1:
                return -1
            gbound = g1 if g1 >= 0 else ebound
            a, b, r = _primitive(buf, g0, gbound, 0x1A)
            if a < 0:
                return -1
            row[I_S2A], row[I_S2B] = a, b
            q = _closed(buf, r, g1, gbound)
        else:
            a, b, q = _primitive(buf, q, ebound, 0x1A)
            if a >= 0 and field == 0:
                row[I_S1A], row[I_S1B] = a, b
    if q < 0 or got & 3 != 3:
        return -1
    q = _closed(buf, q, e1, ebound)
    p = _closed(buf, q, c1, c1 if c1 >= 0 else bound) if q >= 0 else -1
    return _closed(buf, p, d1, bound) if p >= 0 else -1


@njit(cache=True, nogil=True)
def _object_id_at_wrapped(buf, pos, end, row):
    """Dbtag's ``tag [1] Object-id``: the explicit [1] around the Object-id's CHOICE."""
    first, c0, c1 = _head(buf, pos, end)
    if first != 0xA1:
        return -1
    bound = c1 if c1 >= 0 else end
    p = _object_id_at(buf, c0, bound, row)
    return _closed(buf, p, c1, bound) if p >= 0 else -1


@njit(cache=True, nogil=True)
def _seqid_at(buf, pos, end, row, textseq_tags):
    """One Seq-id CHOICE at ``pos`` into ``row`` (gi/bbs/bbm, lcl, gnl, pat, pdb and the Textseq-id kinds);
    the element after it, or -1 (another kind: the record is read the slow way)."""
    first, c0, c1 = _head(buf, pos, end)
    if first < 0 or first & 0xE0 != 0xA0:
        return -1
    kind = first & 0x1F
    row[I_KIND] = kind
    bound = c1 if c1 >= 0 else end
    if kind == 1 or kind == 2 or kind == 11:
        f2, a, b = _head(buf, c0, bound)
        if f2 != 0x02 or b < 0:
            return -1
        ok, v = _int(buf, a, b)
        if not ok:
            return -1
        row[I_INT] = v
        p = b
    elif kind == 0:
        p = _object_id_at(buf, c0, bound, row)
    elif kind == 8 or kind == 10 or kind == 14 or np.any(textseq_tags == kind):
        f2, d0, d1 = _head(buf, c0, bound)
        if f2 != 0x30:
            return -1
        if kind == 8:
            p = _pat_fields(buf, d0, d1, bound, row)
        elif kind == 14:
            p = _pdb_fields(buf, d0, d1, bound, row)
        else:
            p = _seq_fields(buf, d0, d1, bound, row, kind != 10)
    else:
        return -1
    return _closed(buf, p, c1, bound) if p >= 0 else -1


@njit(cache=True, nogil=True)
def _defline_at(nhr, pos, bound, rec, ids, i, n, d, textseq_tags):
    """The ``Blast-def-line`` at ``pos`` (the set's ``d``-th) into ``rec`` (its title span; the first's taxid)
    and ``ids[i, n..]``: (the element after it or -1, the ids read so far)."""
    f2, l0, l1 = _head(nhr, pos, bound)
    if f2 != 0x30:
        return -1, n
    lbound = l1 if l1 >= 0 else bound
    p, seen, n0 = l0, 0, n
    title0, title1 = -1, -1
    while _more(nhr, p, l1, lbound):
        tag = _field(nhr, p, seen, 2)
        if tag < 0:
            return -1, n
        seen |= 1 << tag
        if tag == 0:
            title0, title1, p = _primitive(nhr, p, lbound, 0x1A)
        elif tag == 2:
            good, v, p = _int_at(nhr, p, lbound)
            if d == 0:
                rec[R_TAXID] = v
            p = p if good else -1
        else:
            first, d0, d1, c1 = _wrapped(nhr, p, lbound, 0x30)
            if first < 0:
                return -1, n
            dbound = d1 if d1 >= 0 else (c1 if c1 >= 0 else lbound)
            q = d0
            while _more(nhr, q, d1, dbound):
                if n == MAX_FAST_IDS:
                    q = -1
                    break
                ids[i, n, :] = 0
                ids[i, n, I_DEF] = d
                q = _seqid_at(nhr, q, dbound, ids[i, n], textseq_tags)
                n += 1
                if q < 0:
                    break
            q = _closed(nhr, q, d1, dbound) if q >= 0 else -1
            p = _closed(nhr, q, c1, c1 if c1 >= 0 else lbound) if q >= 0 else -1
        if p < 0:
            return -1, n
    if not seen & 2 or n == n0:
        return -1, n
    if d == 0:
        rec[R_TITLE0], rec[R_TITLE1] = title0, title1
    else:
        rec[R_MORE + 2 * (d - 1)], rec[R_MORE + 2 * (d - 1) + 1] = title0, title1
    return _closed(nhr, p, l1, lbound), n


@njit(cache=True, nogil=True)
def scan_deflines(nhr, hdr, records, ids, textseq_tags):
    """Each ``.nhr`` record (``hdr[i]:hdr[i+1]``) of the common shape, up to :data:`MAX_FAST_DEFLINES`
    ``Blast-def-line``s each with a plain title (or none), together up to :data:`MAX_FAST_IDS` ids of the kinds
    :func:`_seqid_at` reads, and a taxid, read into ``records[i]`` and ``ids[i]`` (R_FAST 1, R_NDEF deflines);
    any other record is left (R_FAST 0) to :func:`parse_defline_set`, which reads it (or names what is wrong
    with it)."""
    for i in range(hdr.size - 1):
        end = hdr[i + 1]
        rec = records[i]
        rec[:] = 0
        first, s0, s1 = _head(nhr, hdr[i], end)
        if first != 0x30:
            continue
        sbound = s1 if s1 >= 0 else end
        p, d, n = s0, 0, 0
        while p >= 0 and _more(nhr, p, s1, sbound):
            if d == MAX_FAST_DEFLINES:
                p = -1
                break
            p, n = _defline_at(nhr, p, sbound, rec, ids, i, n, d, textseq_tags)
            d += 1
        if p < 0 or d == 0 or _closed(nhr, p, s1, sbound) < 0:
            rec[:] = 0
            continue
        rec[R_NIDS], rec[R_NDEF], rec[R_FAST] = n, d, 1
        row = ids[i, 0]
        if d == 1 and n == 1 and row[I_KIND] == 10 and row[I_STR] == 0 and row[I_S1B] - row[I_S1A] == _ORD.size:
            rec[R_ORD] = np.all(nhr[row[I_S1A]:row[I_S1B]] == _ORD)  # gnl|BL_ORD_ID|N: no -parse_seqids


@njit(cache=True, nogil=True)
def _gather_titles(nhr, records, out):
    """The titles of the records read, each followed by a newline, into ``out``; its length."""
    k = 0
    for i in range(records.shape[0]):
        a, b = records[i, R_TITLE0], records[i, R_TITLE1]
        if records[i, R_FAST] and a >= 0:
            out[k:k + b - a] = nhr[a:b]
            k += b - a
        out[k] = 10
        k += 1
    return k


def volume_subject_ids(nhr: Any, hdr: np.ndarray) -> list[SubjectId]:
    """The names of every record of a ``.nhr`` file (``nhr``: its bytes or an mmap; ``hdr``: the
    records' offsets, one more than records) as :func:`subject_ids` gives them: the common shapes
    read by :func:`scan_deflines` in one pass, the others by :func:`parse_defline_set`.
    :class:`DeflineError` names the record (``record N: ...``)."""
    hdr = np.asarray(hdr, np.int64)
    buf = np.frombuffer(nhr, np.uint8)
    out: list[SubjectId] = []
    for first in range(0, hdr.size - 1, CHUNK):
        out += _chunk_ids(nhr, buf, hdr[first:first + CHUNK + 1], first)
    return out


def _chunk_ids(nhr: Any, buf: np.ndarray, hdr: np.ndarray, first: int) -> list[SubjectId]:
    """:func:`volume_subject_ids` of the records ``first``.. (``hdr``: their offsets)."""
    n = hdr.size - 1
    records = np.zeros((n, RECORD_COLUMNS), np.int64)
    ids = np.zeros((n, MAX_FAST_IDS, ID_COLUMNS), np.int64)
    scan_deflines(buf, hdr, records, ids, TEXTSEQ_TAGS)
    spans = np.where(records[:, R_FAST, None] > 0, records[:, R_TITLE0:R_TITLE1 + 1], 0).clip(0)
    joined = np.empty(int((spans[:, 1] - spans[:, 0]).sum()) + n, np.uint8)
    titles = bytes(joined[:_gather_titles(buf, records, joined)]).decode("latin-1").split("\n")[:n]
    if sum(map(len, titles)) + n != joined.size:  # a title holding a newline: one at a time
        titles = [nhr[a:b].decode("latin-1") for a, b in spans.tolist()]
    numbers = ids[:, 0, I_INT].tolist()
    starts = hdr.tolist()
    out = []
    for i, rec in enumerate(records.tolist()):
        kind = rec[R_FAST] + rec[R_ORD]  # 0: the slow reader, 1: ids, 2: gnl|BL_ORD_ID|N
        taxid, nids = rec[R_TAXID], rec[R_NIDS]
        if kind == 2:
            title = titles[i]
            out.append(unparsed_subject_id(title, numbers[i], taxid, (title,)))
        elif kind == 1:
            title = titles[i]
            row = ids[i, :nids].tolist()
            tag, _, is_str, s1a, s1b, s2a, s2b, _, _ = row[0]
            if nids == 1 and tag == 10 and nhr[s1a:s1b] == b"BL_ORD_ID":
                out.append(unparsed_subject_id(title, nhr[s2a:s2b].decode("latin-1") if is_str else numbers[i],
                                               taxid, (title,)))
            else:  # one defline or a set of several: each one's ids and title
                out.append(subject_ids(_deflines(nhr, rec, title, taxid, row)))
        else:
            try:
                out.append(subject_ids(parse_defline_set(nhr[starts[i]:starts[i + 1]])))
            except DeflineError as err:
                raise DeflineError(f"record {first + i + 1}: {err}") from None
    return out


def _deflines(nhr: Any, rec: list, title: str, taxid: int, rows: list) -> list[Defline]:
    """The deflines of a set :func:`scan_deflines` read (``rec``: its record row; ``rows``: its id rows)."""
    out = [Defline(title, [], taxid)]
    for d in range(1, rec[R_NDEF]):
        a, b = rec[R_MORE + 2 * (d - 1)], rec[R_MORE + 2 * (d - 1) + 1]
        out.append(Defline(nhr[a:b].decode("latin-1") if a >= 0 else "", [], 0))
    for r in rows:
        out[r[I_DEF]].seqids.append(_fast_id(nhr, *r[:8]))
    return out


def _fast_id(nhr: Any, tag: int, value: int, is_str: int, s1a: int, s1b: int, s2a: int, s2b: int,
             version: int) -> tuple[str, Any]:
    """One id row of :func:`scan_deflines` as :func:`_seqid` gives it."""
    kind = SEQID_TYPES[tag]
    if kind == "lcl":
        return kind, nhr[s2a:s2b].decode("latin-1") if is_str else value
    if kind == "gnl":
        return kind, (nhr[s1a:s1b].decode("latin-1"), nhr[s2a:s2b].decode("latin-1") if is_str else value)
    if kind in TEXTSEQ:
        return kind, (nhr[s2a:s2b].decode("latin-1"), version, nhr[s1a:s1b].decode("latin-1"))
    if kind == "pat":  # (country, number, sequence number)
        return kind, (nhr[s1a:s1b].decode("latin-1"), nhr[s2a:s2b].decode("latin-1"), value)
    if kind == "pdb":  # (mol, chain: the chain-id, else the old chain number as a letter)
        chain = nhr[s2a:s2b].decode("latin-1") if is_str == 1 else chr(value) if is_str == 2 else ""
        return kind, (nhr[s1a:s1b].decode("latin-1"), chain)
    return kind, value

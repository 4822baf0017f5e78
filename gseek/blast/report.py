"""Text of BLAST-style results: ``blastn -outfmt 6`` and ``-outfmt 7`` lines, BLAST+ 2.12's conventions.

Field keywords are BLAST+'s (``std`` = ``qaccver saccver pident length mismatch gapopen qstart
qend sstart send evalue bitscore``). Coordinates are 1-based; a minus-strand HSP has
``sstart > send``; ``qseq``/``sseq``/``btop`` show the query's plus strand, the subject
reverse-complemented for minus-strand HSPs, as blastn does.

>>> parse_fields("6")
['qaccver', 'saccver', 'pident', 'length', 'mismatch', 'gapopen', 'qstart', 'qend', 'sstart', 'send', 'evalue', 'bitscore']
>>> parse_fields("7 qseqid sseqid score")
['qseqid', 'sseqid', 'score']
>>> parse_fields("6 std saccver stitle")[-3:]
['evalue', 'bitscore', 'stitle']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

import numpy as np

from gseek.errors import OptionError

from .stats import format_bitscore, format_evalue

if TYPE_CHECKING:  # pragma: no cover
    from .hits import BlastHits

__all__ = ["FIELDS", "RUN_FIELDS", "STD", "delimiter", "parse_fields", "parse_outfmt", "reads_runs", "sam_header", "sam_record",
           "tabular_lines", "tabular_row", "write_tabular"]

STD = ["qaccver", "saccver", "pident", "length", "mismatch", "gapopen", "qstart", "qend", "sstart", "send",
       "evalue", "bitscore"]
#: Keyword -> the name ``-outfmt 7`` prints in its ``# Fields:`` line.
FIELDS = {
    "qseqid": "query id", "qacc": "query acc.", "qaccver": "query acc.ver", "sseqid": "subject id",
    "sacc": "subject acc.", "saccver": "subject acc.ver", "pident": "% identity", "length": "alignment length",
    "mismatch": "mismatches", "gapopen": "gap opens", "qstart": "q. start", "qend": "q. end",
    "sstart": "s. start", "send": "s. end", "evalue": "evalue", "bitscore": "bit score", "score": "score",
    "qlen": "query length", "slen": "subject length", "sstrand": "subject strand", "nident": "identical",
    "positive": "positives", "gaps": "gaps", "ppos": "% positives", "qcovhsp": "% query coverage per hsp",
    "btop": "BTOP", "qseq": "query seq", "sseq": "subject seq", "sallseqid": "subject ids",
    "stitle": "subject title", "salltitles": "subject titles", "qcovs": "% query coverage per subject",
    "qcovus": "% query coverage per uniq subject",
    "staxid": "subject tax id", "staxids": "subject tax ids",
}
#: The ``-outfmt 6|7|10`` fields read from the HSPs' CIGAR runs (the alignment's columns: :func:`_aligned`,
#: :func:`_query_range`); the other output kinds (SAM, 0, 5, 15) print the alignment (:func:`reads_runs`).
RUN_FIELDS = ("btop", "qseq", "sseq", "qcovus")
_LETTERS = np.frombuffer(b"ACGTN", np.uint8)
_STRUCTURED = {"0": "the pairwise report", "5": "BLAST XML", "15": "BLAST JSON"}
_COMPLEMENT = np.array([3, 2, 1, 0, 4], np.uint8)


def parse_outfmt(spec: str) -> tuple[str, list[str]]:
    """``"6 qseqid ..."`` -> (``"6"``, fields) (also ``7``, and ``10``: CSV); ``sam`` and ``17`` -> (``"sam"``, []);
    ``0`` (pairwise), ``5`` (XML), ``15`` (JSON) -> (kind, [])."""
    words = str(spec).split()
    if not words:
        raise OptionError("outfmt is empty; use 6, 7 or sam")
    kind = words[0]
    if kind in ("sam", "17"):
        if len(words) > 1:
            raise OptionError("outfmt sam takes no field list")
        return "sam", []
    if kind in ("0", "5", "15"):
        if len(words) > 1:
            raise OptionError(f"outfmt {kind} ({_STRUCTURED[kind]}) takes no field list")
        return kind, []
    if kind not in ("6", "7", "10"):
        raise OptionError(f"outfmt {kind!r} is not supported; use 0 (pairwise), 5, 6, 7, 10 (tabular, comment "
                          f"lines, CSV; BLAST+'s keywords), 15 or sam")
    return kind, parse_fields(spec)


def reads_runs(spec: str) -> bool:
    """Whether an ``-outfmt`` value's text reads the HSPs' CIGAR runs (a search for an output that does not
    can let them go at once: :meth:`~gseek.blast.hits.BlastHits.release`).

    >>> reads_runs("6"), reads_runs("7 std qcovs"), reads_runs("6 qseqid btop"), reads_runs("sam"), reads_runs("0")
    (False, False, True, True, True)
    """
    kind, fields = parse_outfmt(spec)
    return kind not in ("6", "7", "10") or any(f in RUN_FIELDS for f in fields)


def delimiter(spec: str) -> str:
    """The text between the fields of an ``-outfmt 6|7|10 [delim=X] [fields]`` value: ``X``, else a tab (``10``:
    a comma), as blastn reads it.

    >>> delimiter("6 delim=@ qseqid sseqid"), delimiter("10 qseqid"), delimiter("7")
    ('@', ',', '\\t')
    """
    words = str(spec).split()
    if len(words) > 1 and words[1].startswith("delim=") and words[1] != "delim=":
        return words[1][len("delim="):]
    return "," if words and words[0] == "10" else "\t"


def parse_fields(spec: str) -> list[str]:
    """The field keywords of an ``-outfmt 6|7 [delim=X] [fields]`` value (``std`` expands)."""
    words = str(spec).split()[1:]
    if words and words[0].startswith("delim="):  # (the delimiter: :func:`delimiter`)
        words = words[1:]
    if not words:
        return list(STD)
    out: list[str] = []
    for w in words:
        if w == "std":
            out.extend(STD)
        elif w in FIELDS:
            out.append(w)
        else:
            raise OptionError(f"outfmt field {w!r} is not supported; gseek has: std {' '.join(FIELDS)}")
    return list(dict.fromkeys(out))  # blastn writes a field given twice once, where it first appears


def _name(name: str) -> str:
    return name.split()[0] if name else name


def _pident(nident: int, length: int) -> str:
    return f"{100.0 * nident / length:.3f}" if length else "0.000"


def _qcov(covered: int, length: int) -> int:
    """BLAST+'s per-HSP query coverage: a percentage rounded to nearest below 99, truncated from
    99 on, so that only a full cover prints 100."""
    if not length:
        return 0
    pct = 100.0 * covered / length
    return int(pct + 0.5) if pct < 99.0 else int(pct)


def _query_cover_per_subject(hits: BlastHits) -> np.ndarray:
    """Per HSP, the query bases its subject's HSPs cover together (the union of their query ranges): what
    blastn's ``qcovs`` divides by the query's length."""
    a = hits.arrays
    n = len(hits)
    out = np.zeros(n, np.int64)
    if not n:
        return out
    order = np.lexsort((a["q_start"], a["subject"], a["query"]))
    q, s = a["query"][order], a["subject"][order]
    lo, hi = a["q_start"][order].astype(np.int64), a["q_end"][order].astype(np.int64)
    group = np.r_[0, np.cumsum((q[1:] != q[:-1]) | (s[1:] != s[:-1]))]
    covered = np.zeros(int(group[-1]) + 1, np.int64)
    end = -1
    for i in range(n):  # a sweep over each group's ranges in start order
        if i == 0 or group[i] != group[i - 1]:
            end = -1
        start = max(int(lo[i]), end)
        if hi[i] > start:
            covered[group[i]] += int(hi[i]) - start
            end = int(hi[i])
    out[order] = covered[group]
    return out


def query_cover_per_unique_subject(hits: BlastHits) -> np.ndarray:
    """Per HSP, the query bases its subject's HSPs cover, each subject base counted once (blastn's ``qcovus``):
    the subject's HSPs in report order, each adding the query bases aligned to subject bases no earlier HSP
    covered (the query range of the uncovered subject range, mapped through the alignment)."""
    a = hits.arrays
    n = len(hits)
    out = np.zeros(n, np.int64)
    h = 0
    while h < n:
        end = h
        while end < n and a["query"][end] == a["query"][h] and a["subject"][end] == a["subject"][h]:
            end += 1
        subject_cover = np.zeros(0, np.int64).reshape(0, 2)
        query_cover: list[tuple[int, int]] = []
        for i in range(h, end):
            s0, s1 = int(a["s_start"][i]), int(a["s_end"][i])
            todo = _subtract((s0, s1), subject_cover)
            if not todo:
                continue
            if todo[0] == (s0, s1):
                query_cover.append((int(a["q_start"][i]), int(a["q_end"][i])))
            else:
                query_cover += [_query_range(hits, i, lo, hi) for lo, hi in todo]
            subject_cover = np.array(sorted([*map(tuple, subject_cover.tolist()), *todo]), np.int64).reshape(-1, 2)
        out[h:end] = _covered(query_cover)
        h = end
    return out


def _subtract(rng: tuple[int, int], cover: np.ndarray) -> list[tuple[int, int]]:
    """The parts of ``rng`` (half-open) outside the ranges ``cover``."""
    parts, lo = [], rng[0]
    for a, b in cover.tolist():
        if b <= lo or a >= rng[1]:
            continue
        if a > lo:
            parts.append((lo, a))
        lo = max(lo, b)
    if lo < rng[1]:
        parts.append((lo, rng[1]))
    return parts


def _covered(ranges: list[tuple[int, int]]) -> int:
    total, end = 0, -1
    for lo, hi in sorted(ranges):
        lo = max(lo, end)
        if hi > lo:
            total += hi - lo
            end = hi
    return total


def _query_range(hits: BlastHits, h: int, lo: int, hi: int) -> tuple[int, int]:
    """The query bases (plus strand, half-open) HSP ``h`` aligns to subject bases ``[lo, hi)``; where a subject
    base faces a query gap, the nearest query base inside the range."""
    a = hits.arrays
    runs = a["cigar"][a["cigar_offsets"][h]:a["cigar_offsets"][h + 1]].tolist()
    minus = int(a["strand"][h]) < 0
    q, s = 0, int(a["s_start"][h])  # on the searched strand of the query, from the HSP's start
    got: list[int] = []
    for r in runs:
        n, op = r >> 4, r & 15
        if op in (0, 7, 8):
            a0, b0 = max(lo, s), min(hi, s + n)
            if a0 < b0:
                got += [q + a0 - s, q + b0 - s - 1]
            q, s = q + n, s + n
        elif op == 1:
            q += n
        elif op == 2:
            if lo <= s < hi or lo < s + n <= hi:
                got.append(q if s >= lo else q - 1)
            s += n
    first, last = min(got), max(got)
    qa, qb = int(a["q_start"][h]), int(a["q_end"][h])
    if minus:  # the searched strand is the reverse complement: back to plus-strand positions
        return qb - 1 - last, qb - first
    return qa + first, qa + last + 1


def _aligned(hits: BlastHits, h: int) -> tuple[np.ndarray, np.ndarray]:
    """The alignment's query and subject rows as letter codes (gap = 5), in the displayed orientation."""
    a = hits.arrays
    q = int(a["query"][h])
    strand = int(a["strand"][h])
    qcodes = hits.query_codes(q)
    L = qcodes.size
    if strand > 0:
        qseq = qcodes[a["q_start"][h]:a["q_end"][h]]
    else:
        qseq = _COMPLEMENT[qcodes[::-1][L - a["q_end"][h]:L - a["q_start"][h]]]
    sseq = hits.subject_codes(int(a["s_start"][h]), int(a["s_end"][h]), int(a["subject"][h]))
    runs = a["cigar"][a["cigar_offsets"][h]:a["cigar_offsets"][h + 1]].astype(np.int64)
    n, op = runs >> 4, runs & 15
    on_q = np.repeat((op == 0) | (op == 7) | (op == 8) | (op == 1), n)  # a column holding a query base
    on_s = np.repeat((op == 0) | (op == 7) | (op == 8) | (op == 2), n)
    qi, si = np.cumsum(on_q) - 1, np.cumsum(on_s) - 1
    qr = np.where(on_q, qseq[np.clip(qi, 0, max(qseq.size - 1, 0))] if qseq.size else 5, 5).astype(np.uint8)
    sr = np.where(on_s, sseq[np.clip(si, 0, max(sseq.size - 1, 0))] if sseq.size else 5, 5).astype(np.uint8)
    if strand < 0:  # show the query's plus strand: reverse-complement both rows
        comp = np.array([3, 2, 1, 0, 4, 5], np.uint8)
        qr, sr = comp[qr[::-1]], comp[sr[::-1]]
    return qr, sr


def _text(row: np.ndarray) -> str:
    return np.frombuffer(b"ACGTN-", np.uint8)[row].tobytes().decode()


def _btop(qr: np.ndarray, sr: np.ndarray) -> str:
    out: list[str] = []
    run = 0
    letters = "ACGTN-"
    for a, b in zip(qr.tolist(), sr.tolist()):
        if a == b and a < 4:
            run += 1
            continue
        if run:
            out.append(str(run))
            run = 0
        out.append(letters[a] + letters[b])
    if run:
        out.append(str(run))
    return "".join(out)


def tabular_row(hits: BlastHits, h: int, fields: Iterable[str] | None = None, subjects: list | None = None) -> str:
    """HSP ``h`` of ``hits`` as one tab-separated line (no newline)."""
    return tabular_lines(hits, fields, np.array([h], np.int64), subjects)[0]


def _subject_column(hits: BlastHits, field: str, subjects: list | None) -> list[str]:
    """Every subject's text for an id or title field: from ``subjects`` (a BLAST database's parsed ids,
    :class:`gseek.index.blastdb_defline.SubjectId`), else from its defline (the id its first word, the
    title all of it, as blastn prints a database made without ``-parse_seqids``)."""
    if field in ("staxid", "staxids"):  # blastn 2.12: staxid N/A and staxids 0 where a database has no taxid;
        # both N/A for -subject (taxid -1 here)
        ids = [0 if subjects is None else s.taxid for s in (subjects or hits.subject_names)]
        return ["N/A" if t < 0 or (t == 0 and field == "staxid") else str(t) for t in ids]
    if subjects is not None:
        get = {"sseqid": "seqid", "sallseqid": "seqid", "sacc": "acc", "saccver": "accver", "stitle": "title"}
        if field == "salltitles":
            return ["<>".join(s.all_titles) for s in subjects]
        if field == "sallseqid":  # every defline's ids (a non-redundant database's set of several)
            return [s.all_seqids for s in subjects]
        return [getattr(s, get[field]) for s in subjects]
    if field in ("stitle", "salltitles"):
        return [n if n else "N/A" for n in hits.subject_names]
    return [_name(n) for n in hits.subject_names]


def tabular_lines(hits: BlastHits, fields: Iterable[str] | None = None, rows: np.ndarray | None = None,
                  subjects: list | None = None, sep: str = "\t", query_offset: int = 0, subject_offset: int = 0,
                  subject_lengths: Iterable[int] | None = None) -> list[str]:
    """HSPs ``rows`` (default: all) of ``hits`` as tab-separated lines (no newlines), formatted a column
    at a time (each array read once, not an element per field and row: 2.4 s for 276k rows before).
    ``subjects``: the subjects' names of a BLAST database with parsed ids (``_subject_column``); ``sep``: the
    field separator (``,`` for ``-outfmt 10``: blastn quotes nothing); ``query_offset``: added to ``qstart`` and
    ``qend`` (the queries are pieces from there on: blastn's ``-query_loc``); ``subject_offset``,
    ``subject_lengths``: the same of ``sstart``/``send`` and ``slen`` (``-subject_loc``: pieces of these)."""
    a = hits.arrays
    idx = np.arange(len(hits), dtype=np.int64) if rows is None else np.asarray(rows, np.int64)
    col = {k: a[k][idx] for k in ("query", "subject", "strand", "s_start", "s_end", "q_start", "q_end")}
    q, s = col["query"], col["subject"]
    minus = col["strand"] < 0
    out: list[list[str]] = []
    aligned: list[tuple[np.ndarray, np.ndarray]] | None = None
    for f in (STD if fields is None else fields):
        if f in ("qseqid", "qacc", "qaccver"):
            names = [_name(n) for n in hits.query_names]
            out.append([names[i] for i in q.tolist()])
        elif f in ("sseqid", "sacc", "saccver", "sallseqid", "stitle", "salltitles", "staxid", "staxids"):
            names = _subject_column(hits, f, subjects)
            out.append([names[i] for i in s.tolist()])
        elif f in ("pident", "ppos"):
            out.append([_pident(n, L) for n, L in zip(a["nident"][idx].tolist(), a["length"][idx].tolist())])
        elif f in ("length", "mismatch", "gapopen", "nident", "gaps", "score"):
            out.append(list(map(str, a[f][idx].tolist())))
        elif f == "positive":
            out.append(list(map(str, a["nident"][idx].tolist())))
        elif f == "qstart":
            out.append(list(map(str, (col["q_start"] + 1 + query_offset).tolist())))
        elif f == "qend":
            out.append(list(map(str, (col["q_end"] + query_offset).tolist())))
        elif f == "sstart":
            out.append(list(map(str, (np.where(minus, col["s_end"], col["s_start"] + 1) + subject_offset).tolist())))
        elif f == "send":
            out.append(list(map(str, (np.where(minus, col["s_start"] + 1, col["s_end"]) + subject_offset).tolist())))
        elif f == "evalue":
            out.append([format_evalue(x) for x in a["evalue"][idx].tolist()])
        elif f == "bitscore":
            out.append([format_bitscore(x) for x in a["bitscore"][idx].tolist()])
        elif f == "qlen":
            out.append(list(map(str, np.asarray(hits.query_lengths)[q].tolist())))
        elif f == "slen":
            lengths = hits.subject_lengths if subject_lengths is None else subject_lengths
            out.append(list(map(str, np.asarray(lengths)[s].tolist())))
        elif f == "sstrand":
            out.append(["minus" if m else "plus" for m in minus.tolist()])
        elif f == "qcovhsp":
            lengths = np.asarray(hits.query_lengths)[q]
            out.append([str(_qcov(c, L)) for c, L in zip((col["q_end"] - col["q_start"]).tolist(), lengths.tolist())])
        elif f in ("qcovs", "qcovus"):
            lengths = np.asarray(hits.query_lengths)[q]
            cover = (_query_cover_per_subject(hits) if f == "qcovs" else query_cover_per_unique_subject(hits))[idx]
            out.append([str(_qcov(c, L)) for c, L in zip(cover.tolist(), lengths.tolist())])
        elif f in ("btop", "qseq", "sseq"):
            if aligned is None:
                aligned = [_aligned(hits, h) for h in idx.tolist()]
            if f == "btop":
                out.append([_btop(qr, sr) for qr, sr in aligned])
            else:
                out.append([_text(qr if f == "qseq" else sr) for qr, sr in aligned])
        else:
            raise OptionError(f"outfmt field {f!r} is not supported")
    return [sep.join(t) for t in zip(*out)] if out else [""] * idx.size


def sam_header(subject_names, subject_lengths, command: str = "gseek") -> str:
    """The SAM header of ``--outfmt sam``: ``@HD``, one ``@SQ`` per database sequence, ``@PG``."""
    from gseek import __version__

    lines = ["@HD\tVN:1.6\tSO:unsorted\tGO:query"]
    lines += [f"@SQ\tSN:{_name(n)}\tLN:{int(length)}" for n, length in zip(subject_names, subject_lengths)]
    lines.append(f"@PG\tID:gseek\tPN:gseek\tVN:{__version__}\tCL:{command}")
    return "\n".join(lines) + "\n"


def sam_record(hits: BlastHits, h: int, first: bool) -> str:
    """HSP ``h`` as a SAM record: the query aligned to the subject (the database sequence is the
    reference), the searched strand of the query as SEQ (its aligned part; the rest hard-clipped),
    FLAG 16 on the minus strand and 256 for every HSP of a query but its first; MAPQ 255; BLAST+'s
    tags ``AS:i`` (score), ``EV:f`` (e-value), ``BS:f`` (bit score), ``PI:f`` (% identity) and
    ``NM:i`` (mismatches and gap columns)."""
    a = hits.arrays
    q, s = int(a["query"][h]), int(a["subject"][h])
    minus = int(a["strand"][h]) < 0
    L = int(hits.query_lengths[q])
    qa, qb = int(a["q_start"][h]), int(a["q_end"][h])
    lo, hi = (L - qb, L - qa) if minus else (qa, qb)  # on the searched strand
    qcodes = hits.query_codes(q)
    seg = _COMPLEMENT[qcodes[::-1][lo:hi]] if minus else qcodes[lo:hi]
    runs = a["cigar"][a["cigar_offsets"][h]:a["cigar_offsets"][h + 1]].tolist()
    ops: list[list] = []
    for r in runs:
        n, op = r >> 4, "MIDNSHP==X"[r & 15]
        op = "M" if op in "=X" else op
        if ops and ops[-1][1] == op:
            ops[-1][0] += n
        else:
            ops.append([n, op])
    cigar = (f"{lo}H" if lo else "") + "".join(f"{n}{op}" for n, op in ops) + (f"{L - hi}H" if L - hi else "")
    flag = (16 if minus else 0) | (0 if first else 256)
    nm = int(a["mismatch"][h]) + int(a["gaps"][h])
    return "\t".join([_name(hits.query_names[q]), str(flag), _name(hits.subject_names[s]), str(int(a["s_start"][h]) + 1),
                      "255", cigar, "*", "0", "0", _text(seg), "*", f"AS:i:{int(a['score'][h])}",
                      f"EV:f:{float(a['evalue'][h]):.6g}", f"BS:f:{float(a['bitscore'][h]):.6g}",
                      f"PI:f:{100.0 * int(a['nident'][h]) / max(int(a['length'][h]), 1):.2f}", f"NM:i:{nm}"])


def write_tabular(hits: BlastHits, out: TextIO, outfmt: str = "6", database: str = "", program: str = "BLASTN",
                  version: str = "2.12.0+", last: bool = True, header: bool = True, command: str = "gseek",
                  subjects: list | None = None, query_titles: list[str] | None = None, query_offset: int = 0,
                  subject_offset: int = 0, subject_lengths: Iterable[int] | None = None) -> None:
    """Write ``hits`` as ``-outfmt 6`` lines or, for ``7``, with BLAST+'s comment lines per query
    (``last``: also the closing ``# BLAST processed N queries`` line), or as SAM for ``sam``
    (``header``: with its header; ``command`` goes in ``@PG CL``); ``subjects``: as :func:`tabular_lines`;
    ``query_titles``: each query's whole defline, for ``-outfmt 7``'s ``# Query:`` line (default: its name);
    ``query_offset``, ``subject_offset``, ``subject_lengths``: as :func:`tabular_lines`."""
    kind, fields = parse_outfmt(outfmt)
    if kind == "sam":
        if header:
            out.write(sam_header(hits.subject_names, hits.subject_lengths, command))
        query = hits.arrays["query"]
        for h in range(len(hits)):
            out.write(sam_record(hits, h, first=h == 0 or query[h] != query[h - 1]))
            out.write("\n")
        return
    query = hits.arrays["query"]
    bounds = np.searchsorted(query, np.arange(len(hits.query_names) + 1), side="left")
    header = ", ".join(FIELDS[f] for f in fields)
    lines = tabular_lines(hits, fields, subjects=subjects, sep=delimiter(outfmt), query_offset=query_offset,
                          subject_offset=subject_offset, subject_lengths=subject_lengths)
    if kind != "7":
        if lines:
            out.write("\n".join(lines) + "\n")
        return
    for q in range(len(hits.query_names)):
        a, b = int(bounds[q]), int(bounds[q + 1])
        title = hits.query_names[q] if query_titles is None else query_titles[q]
        out.write(f"# {program} {version}\n# Query: {title}\n# Database: {database}\n")
        if b > a:
            out.write(f"# Fields: {header}\n")
        out.write(f"# {b - a} hits found\n")
        if b > a:
            out.write("\n".join(lines[a:b]) + "\n")
    if kind == "7" and last:
        out.write(f"# BLAST processed {len(hits.query_names)} queries\n")

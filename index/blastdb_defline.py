"""BLAST database deflines (``.nhr``): ASN.1 BER ``Blast-def-line-set`` records, and their ids as blastn prints them.

A record of a ``.nhr`` file is a ``Blast-def-line-set`` (NCBI's ``blastdb.asn``): a SEQUENCE OF
``Blast-def-line`` ::= SEQUENCE { title [0] VisibleString OPTIONAL, seqid [1] SEQUENCE OF Seq-id,
taxid [2] INTEGER OPTIONAL, ... }, explicitly tagged, lengths usually indefinite. A ``Seq-id`` is a
CHOICE (``seqloc.asn``): local [0] Object-id, gi [11] INTEGER, the accession types (genbank [4],
embl [5], other (RefSeq) [9], ...) a ``Textseq-id`` { name [0], accession [1], release [2],
version [3] }, general [10] ``Dbtag`` { db [0], tag [1] Object-id }, ...

``makeblastdb`` without ``-parse_seqids`` stores one id ``gnl|BL_ORD_ID|N`` and the whole FASTA
defline as the title; blastn then prints the title's first word as the subject id. With
``-parse_seqids`` the ids are parsed and the title is the rest of the defline.

>>> rec = bytes.fromhex("30803080a0801a0378797a0000a1803080ab80020400" "92e283" + "00" * 10)
>>> d = parse_defline_set(rec)[0]
>>> d.title, d.seqids
('xyz', [('gi', 9626243)])
>>> subject_ids(parse_defline_set(rec))
SubjectId(seqid='gi|9626243', acc='9626243', accver='9626243', title='xyz', taxid=0, all_titles=('xyz',), parsed=True, others=())
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["Defline", "SubjectId", "FurtherDefline", "DeflineError", "parse_defline_set", "subject_ids", "fasta_id", "parse_fasta_ids",
           "defline_ids", "unparsed_subject_id"]

#: Seq-id CHOICE tag -> its FASTA prefix (NCBI's ``CSeq_id`` names).
SEQID_TYPES = {0: "lcl", 1: "bbs", 2: "bbm", 3: "gim", 4: "gb", 5: "emb", 6: "pir", 7: "sp", 8: "pat", 9: "ref",
               10: "gnl", 11: "gi", 12: "dbj", 13: "prf", 14: "pdb", 15: "tpg", 16: "tpe", 17: "tpd", 18: "gpp",
               19: "nat"}
#: Seq-id types that hold a Textseq-id (an accession with a version).
TEXTSEQ = {"gb", "emb", "pir", "sp", "ref", "dbj", "prf", "tpg", "tpe", "tpd", "gpp", "nat"}
#: Which id names a sequence's accession (``sacc``): lower is preferred.
_ACC_RANK = {**{t: 0 for t in TEXTSEQ}, "pdb": 1, "pat": 2, "gnl": 3, "gi": 4, "lcl": 5}


class DeflineError(ValueError):
    """A header record that is not a readable ``Blast-def-line-set`` (the caller names the file and record)."""


@dataclass
class Defline:
    """One ``Blast-def-line``: its title (``""`` when absent), ids as ``(type, value)`` pairs, taxid."""

    title: str = ""
    seqids: list = field(default_factory=list)
    taxid: int = 0


class FurtherDefline(NamedTuple):
    """A further defline of a set (NCBI's non-redundant databases) as blastn's reports print it."""

    seqid: str      # its ids as sseqid prints them
    fasta_ids: str  # its ids in FASTA form (XML's Hit_def: ``>ID TITLE``)
    acc: str        # sacc
    accver: str     # saccver
    title: str


@dataclass(frozen=True)
class SubjectId:
    """A database sequence's names as blastn's tabular fields print them."""

    seqid: str      # sseqid
    acc: str        # sacc
    accver: str     # saccver
    title: str      # stitle ("N/A" when the defline has none)
    taxid: int      # staxid (0: none)
    all_titles: tuple = ()  # salltitles, one a defline
    parsed: bool = True     # ids parsed by makeblastdb -parse_seqids (False: the title's first word)
    others: tuple[FurtherDefline, ...] = ()  # a set's further deflines (NCBI's non-redundant databases)

    @property
    def all_seqids(self) -> str:
        """``sallseqid``: every defline's ids, ``;`` between."""
        return ";".join([self.seqid, *(o.seqid for o in self.others)])


# ---------------------------------------------------------------------------- BER


def _tlv(buf: bytes, pos: int, end: int) -> tuple[int, bool, int, int]:
    """One BER element's header at ``pos``: (tag number, constructed, content start, content end or -1 for an
    indefinite length)."""
    if pos >= end:
        raise DeflineError("truncated record")
    first = buf[pos]
    pos += 1
    tag = first & 0x1F
    if tag == 0x1F:  # high tag number form
        tag = 0
        while True:
            if pos >= end:
                raise DeflineError("truncated tag")
            b = buf[pos]
            pos += 1
            tag = (tag << 7) | (b & 0x7F)
            if not b & 0x80:
                break
    if pos >= end:
        raise DeflineError("truncated length")
    n = buf[pos]
    pos += 1
    if n == 0x80:
        return tag, bool(first & 0x20), pos, -1
    if n & 0x80:
        k = n & 0x7F
        if k > 8 or pos + k > end:
            raise DeflineError("bad length")
        n = int.from_bytes(buf[pos:pos + k], "big")
        pos += k
    if pos + n > end:
        raise DeflineError("element runs past the record's end")
    return tag, bool(first & 0x20), pos, pos + n


def _parse(buf: bytes, pos: int, end: int) -> tuple[tuple, int]:
    """The element at ``pos`` as a tree ``(tag, constructed, content start, content end, children)`` (children
    None for a primitive element) and the position after it: the record is read once."""
    tag, cons, c0, c1 = _tlv(buf, pos, end)
    if not cons:
        if c1 < 0:
            raise DeflineError("indefinite length on a primitive element")
        return (tag, False, c0, c1, None), c1
    kids = []
    p = c0
    if c1 < 0:  # up to the end-of-contents octets
        while True:
            if p + 2 > end:
                raise DeflineError("truncated record (no end of contents)")
            if buf[p] == 0 and buf[p + 1] == 0:
                return (tag, True, c0, p, kids), p + 2
            kid, p = _parse(buf, p, end)
            kids.append(kid)
    while p < c1:
        kid, p = _parse(buf, p, c1)
        kids.append(kid)
    return (tag, True, c0, c1, kids), c1


def _inner(buf: bytes, el: tuple) -> list[tuple]:
    """The elements of a constructed element."""
    if el[4] is None:
        raise DeflineError("expected a constructed element")
    return el[4]


def _explicit(buf: bytes, el: tuple) -> tuple:
    """The one element an explicit ``[n]`` tag wraps."""
    inner = _inner(buf, el)
    if len(inner) != 1:
        raise DeflineError("an explicit tag holds one element")
    return inner[0]


def _string(buf: bytes, el: tuple) -> str:
    if el[4] is not None:  # a constructed string: its pieces
        return "".join(_string(buf, e) for e in el[4])
    return buf[el[2]:el[3]].decode("latin-1")


def _integer(buf: bytes, el: tuple) -> int:
    if el[4] is not None or el[3] <= el[2]:
        raise DeflineError("bad INTEGER")
    return int.from_bytes(buf[el[2]:el[3]], "big", signed=True)


def _object_id(buf: bytes, el: tuple) -> Any:
    """Object-id ::= CHOICE { id [0] INTEGER, str [1] VisibleString }: an int or a str."""
    value = _explicit(buf, el)
    return _integer(buf, value) if el[0] == 0 else _string(buf, value)


def _fields(buf: bytes, seq: tuple) -> dict[int, tuple]:
    """A SEQUENCE's explicitly tagged fields by tag number (the wrapped element)."""
    return {e[0]: _explicit(buf, e) for e in _inner(buf, seq)}


def _seqid(buf: bytes, choice: tuple) -> tuple[str, Any]:
    """One Seq-id as (FASTA type, value): an int, a str, or a tuple for the structured kinds."""
    kind = SEQID_TYPES.get(choice[0])
    if kind is None:
        raise DeflineError(f"unknown Seq-id choice [{choice[0]}]")
    value = _explicit(buf, choice)
    if kind in ("gi", "bbs", "bbm"):
        return kind, _integer(buf, value)
    if kind == "lcl":
        return kind, _object_id(buf, value)
    if kind == "gnl":  # Dbtag { db [0] VisibleString, tag [1] Object-id }
        f = _fields(buf, value)
        return kind, (_string(buf, f[0]), _object_id(buf, f[1]))
    if kind in TEXTSEQ:  # Textseq-id { name [0], accession [1], release [2], version [3] }
        f = _fields(buf, value)
        return kind, (_string(buf, f[1]) if 1 in f else "", _integer(buf, f[3]) if 3 in f else 0,
                      _string(buf, f[0]) if 0 in f else "")
    if kind == "pdb":  # PDB-seq-id { mol [0], chain [1] INTEGER, ..., chain-id [3] VisibleString }
        f = _fields(buf, value)
        chain = _string(buf, f[3]) if 3 in f else (chr(_integer(buf, f[1])) if 1 in f else "")
        return kind, (_string(buf, f[0]) if 0 in f else "", chain)
    if kind == "pat":  # Patent-seq-id { seqid [0] INTEGER, cit [1] Id-pat { country, number|app-number } }
        f = _fields(buf, value)
        cit = _fields(buf, f[1]) if 1 in f else {}
        number = cit.get(1)
        num = _string(buf, _explicit(buf, number)) if number is not None and number[1] else \
            (_string(buf, number) if number is not None else "")
        return kind, (_string(buf, cit[0]) if 0 in cit else "", num, _integer(buf, f[0]) if 0 in f else 0)
    return kind, buf[value[2]:value[3]].hex()  # giim, prf: kept opaque (never printed by makeblastdb's ids)


def parse_defline_set(record: bytes) -> list[Defline]:
    """The deflines of one ``.nhr`` record (raises :class:`DeflineError` when it is not one)."""
    buf = bytes(record)
    if not buf or buf[0] != 0x30:
        raise DeflineError("not a Blast-def-line-set (no SEQUENCE at its start)")
    whole, _ = _parse(buf, 0, len(buf))
    out = []
    for line in _inner(buf, whole):
        if line[0] != 16:
            raise DeflineError("not a Blast-def-line (no SEQUENCE)")
        d = Defline()
        for tag, el in _fields(buf, line).items():
            if tag == 0:
                d.title = _string(buf, el)
            elif tag == 1:
                d.seqids = [_seqid(buf, c) for c in _inner(buf, el)]
            elif tag == 2:
                d.taxid = _integer(buf, el)
        out.append(d)
    if not out:
        raise DeflineError("an empty Blast-def-line-set")
    return out


# ---------------------------------------------------------------------------- ids as text


def fasta_id(kind: str, value: Any) -> str:
    """One Seq-id in FASTA form (``ref|NC_001416.1|``, ``gi|9626243``, ``gnl|SRA|SRR1.1``, ``lcl|x``).

    >>> fasta_id("ref", ("NC_001416", 1, "")), fasta_id("gnl", ("SRA", "SRR123.1")), fasta_id("lcl", 7)
    ('ref|NC_001416.1|', 'gnl|SRA|SRR123.1', 'lcl|7')
    """
    if kind in TEXTSEQ:
        acc, ver, name = value
        return f"{kind}|{acc}{f'.{ver}' if ver else ''}|{name}"
    if kind == "gnl":
        return f"gnl|{value[0]}|{value[1]}"
    if kind == "pdb":
        return f"pdb|{value[0]}|{value[1]}"
    if kind == "pat":
        return f"pat|{value[0]}|{value[1]}|{value[2]}"
    return f"{kind}|{value}"


def _accession(kind: str, value: Any, version: bool) -> str:
    if kind in TEXTSEQ:
        acc, ver, name = value
        acc = acc or name
        return f"{acc}.{ver}" if version and ver else acc
    if kind == "gnl":
        return f"{value[0]}:{value[1]}"
    if kind == "pdb":
        return f"{value[0]}_{value[1]}" if value[1] else value[0]
    if kind == "pat":
        return f"{value[0]}{value[1]}_{value[2]}"
    return str(value)


def subject_ids(deflines: list[Defline]) -> SubjectId:
    """The names blastn's ``sseqid``, ``sacc``, ``saccver``, ``stitle``, ``salltitles`` and ``staxid`` print for a
    database sequence (its first defline; a set holds more for a non-redundant database)."""
    first = deflines[0]
    ids = first.seqids
    titles = tuple(d.title for d in deflines)
    if len(ids) == 1 and ids[0][0] == "gnl" and ids[0][1][0] == "BL_ORD_ID":  # made without -parse_seqids
        return unparsed_subject_id(first.title, ids[0][1][1], first.taxid, titles)
    if not ids:
        raise DeflineError("a defline without ids")
    seqid = _seqid_text(ids)
    best = min(ids, key=lambda kv: _ACC_RANK.get(kv[0], 6))
    others = []
    for d in deflines[1:]:
        if not d.seqids:
            raise DeflineError("a defline without ids")
        top = min(d.seqids, key=lambda kv: _ACC_RANK.get(kv[0], 6))
        others.append(FurtherDefline(_seqid_text(d.seqids), "|".join(fasta_id(k, v) for k, v in d.seqids),
                                     _accession(*top, version=False), _accession(*top, version=True), d.title))
    return SubjectId(seqid, _accession(*best, version=False), _accession(*best, version=True), first.title or "N/A",
                     first.taxid, tuple(t or "N/A" for t in titles), True, tuple(others))


def _seqid_text(ids: list) -> str:
    """A defline's ids as blastn's ``sseqid`` prints them (a local id alone bare)."""
    if len(ids) == 1 and ids[0][0] == "lcl":
        return str(ids[0][1])
    return "|".join(fasta_id(k, v) for k, v in ids)


def unparsed_subject_id(title: str, number: Any, taxid: int, titles: tuple) -> SubjectId:
    """The names of a sequence stored without ``-parse_seqids`` (id ``gnl|BL_ORD_ID|number``): the
    title's first word."""
    word = title.split(None, 1)[0] if title.strip() else str(number)
    return SubjectId(word, word, word, title or "N/A", taxid, tuple(t or "N/A" for t in titles), False)


#: Fields after each FASTA id type (``gi|N``: 1, ``gnl|DB|TAG``: 2, ``ref|ACC.V|NAME``: 2, ``pat|C|N|S``: 3).
_FASTA_FIELDS = {**{t: 2 for t in TEXTSEQ}, "lcl": 1, "gi": 1, "bbs": 1, "bbm": 1, "gnl": 2, "pdb": 2, "pat": 3}
_REVERSE = {v: k for k, v in SEQID_TYPES.items()}


def parse_fasta_ids(word: str) -> list[tuple[str, Any]] | None:
    """The Seq-ids of a FASTA id (``gi|9626243|ref|NC_001416.1|``), as ``makeblastdb -parse_seqids`` reads
    them; None where ``word`` is no such list (a bare word: a local id).

    >>> parse_fasta_ids("gi|9626243|ref|NC_001416.1|")
    [('gi', 9626243), ('ref', ('NC_001416', 1, ''))]
    >>> parse_fasta_ids("contig_7") is None
    True
    """
    parts = word.split("|")
    out: list[tuple[str, Any]] = []
    i = 0
    while i < len(parts):
        kind = parts[i].lower()
        n = _FASTA_FIELDS.get(kind)
        if n is None or (i + 1 >= len(parts)):
            return None
        fields = (parts[i + 1:i + 1 + n] + [""] * n)[:n]
        i += 1 + n
        if kind in ("gi", "bbs", "bbm"):
            if not fields[0].isdigit():
                return None
            out.append((kind, int(fields[0])))
        elif kind == "lcl":
            out.append((kind, int(fields[0]) if fields[0].isdigit() else fields[0]))
        elif kind == "gnl":
            out.append((kind, (fields[0], fields[1])))
        elif kind in TEXTSEQ:
            acc, _, ver = fields[0].partition(".")
            out.append((kind, (acc, int(ver) if ver.isdigit() else 0, fields[1])))
        elif kind == "pdb":
            out.append((kind, (fields[0], fields[1])))
        else:
            out.append((kind, (fields[0], fields[1], int(fields[2]) if fields[2].isdigit() else 0)))
    return out or None


def defline_ids(name: str, description: str, parse_seqids: bool, taxid: int = 0) -> SubjectId:
    """A FASTA record's names as blastn prints them once ``makeblastdb`` (``-parse_seqids`` or not) stored it.
    A bare word with ``-parse_seqids`` is kept as a local id (BLAST+ guesses an accession's type from NCBI's
    prefix table, e.g. ``NC_000913.3`` -> ``ref|NC_000913.3|``: not done here)."""
    title = f"{name} {description}".strip() if description else name
    if not parse_seqids:  # deflines joined with Ctrl-A make one title, a blank between
        title = title.replace("\x01", " ")
        return SubjectId(name, name, name, title or "N/A", taxid, (title or "N/A",), False)
    first, *more = description.split("\x01")  # Ctrl-A: the next defline of a non-redundant set
    deflines = [Defline(first, parse_fasta_ids(name) or [("lcl", name)], taxid)]
    for part in more:
        word, _, rest = part.strip().partition(" ")
        deflines.append(Defline(rest.strip(), parse_fasta_ids(word) or [("lcl", word)], taxid))
    return subject_ids(deflines)


"""``blastn -outfmt 0``: BLAST+ 2.12's pairwise report (blastn's default output), and ``-html``.

The report is a prolog (:func:`pairwise_prolog`: program, reference, database), one block a query
(:func:`pairwise_queries`: ``Query=``, ``Length=``, the table of "Sequences producing significant
alignments", each subject's ``>`` defline and ``Length=``, each HSP's score, identities, strand and
alignment in blocks of 60 columns, the query's ``Lambda K H`` and effective search space) and an
epilog (:func:`pairwise_epilog`: the database's size, the scoring). The layout is BLAST+'s
(``CBlastFormat``, ``CShowBlastDefline``, ``CDisplaySeqalign``: column widths, the e-value and bit
score texts, the wrapping of titles); ``tests/test_blast_pairwise.py`` holds it to blastn 2.12's
bytes. :class:`PairwiseLayout` holds what blastn's ``-num_descriptions``, ``-num_alignments``,
``-line_length`` and ``-html`` change.

>>> score_texts(2.064e-161, 582.3), score_texts(0.0123, 40.1), score_texts(12.3, 19.6)
(('2e-161', '582'), ('0.012', '40.1'), ('12', '19.6'))
>>> wrap_flat("Escherichia coli str. K-12 substr. MG1655, complete genome", 30)
['Escherichia coli str. K-12', 'substr. MG1655, complete', 'genome']
"""

from __future__ import annotations

import html as _html
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from gseek.errors import OptionError
from gseek.values import OptionsValue

from .stats import KarlinParams, length_adjustment, ungapped_params

if TYPE_CHECKING:  # pragma: no cover
    from .hits import BlastHits
    from .options import BlastOptions

__all__ = ["PairwiseLayout", "ReportFrame", "pairwise_prolog", "pairwise_queries", "pairwise_epilog", "score_texts",
           "wrap_flat", "wrap_title"]

#: The width of the report's text: titles, the descriptions' column (BLAST+'s ``kFormatLineLength``).
LINE = 68
_PROLOG = {
    ("megablast", False): 'Reference: Zheng Zhang, Scott Schwartz, Lukas Wagner, and Webb\nMiller (2000), "A greedy '
                          'algorithm for aligning DNA sequences", J\nComput Biol 2000; 7(1-2):203-14.\n',
    ("blastn", False): 'Reference: Stephen F. Altschul, Thomas L. Madden, Alejandro A.\nSchaffer, Jinghui Zhang, Zheng '
                       'Zhang, Webb Miller, and David J.\nLipman (1997), "Gapped BLAST and PSI-BLAST: a new generation '
                       'of\nprotein database search programs", Nucleic Acids Res. 25:3389-3402.\n',
    ("megablast", True): '<b><a\nhref="https://www.ncbi.nlm.nih.gov/entrez/query.fcgi?db=PubMed&cmd=R\netrieve&'
                         'list_uids=10890397&dopt=Citation">Reference</a>:</b>\nZheng Zhang, Scott Schwartz, Lukas '
                         'Wagner, and Webb Miller (2000),\n"A greedy algorithm for aligning DNA sequences", J Comput '
                         'Biol 2000;\n'
                         '7(1-2):203-14.\n',
    ("blastn", True): '<b><a\nhref="https://www.ncbi.nlm.nih.gov/entrez/query.fcgi?db=PubMed&cmd=R\netrieve&list_uids='
                      '9254694&dopt=Citation">Reference</a>:</b>\nStephen F. Altschul, Thomas L. Madden, Alejandro A. '
                      'Sch&auml;ffer,\nJinghui Zhang, Zheng Zhang, Webb Miller, and David J. Lipman (1997),\n"Gapped '
                      'BLAST and PSI-BLAST: a new generation of protein database\nsearch programs", Nucleic Acids Res. '
                      '25:3389-3402.\n',
}
_HTML_HEAD = ('<HTML>\n<HEAD><TITLE>BLAST Search Results</TITLE></HEAD>\n<BODY BGCOLOR="#FFFFFF" LINK="#0000FF" '
              'VLINK="#660099" ALINK="#660099">\n<PRE>\n\n')
_HTML_TAIL = "</PRE>\n</BODY>\n</HTML>\n"
_MASK = '<font color="#000000">{}</font>'
#: Seq-id types blastn links to Entrez's nucleotide records in its HTML.
_LINKED = {"ref", "gb", "emb", "dbj", "tpg", "tpe", "tpd", "gpp", "nat", "sp", "pir", "prf", "pdb", "pat"}
_LETTER_BYTES = np.frombuffer(b"ACGTN-", np.uint8)
_PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"


@dataclass(frozen=True)
class PairwiseLayout(OptionsValue):
    """What the pairwise report shows: ``num_descriptions`` subjects in the table, ``num_alignments`` subjects'
    alignments, ``line_length`` columns a block, ``html`` (blastn's ``-html``). blastn's defaults.

    >>> PairwiseLayout(num_descriptions=-1)
    Traceback (most recent call last):
    ...
    gseek.errors.OptionError: num_descriptions must be at least 0, not -1
    """

    num_descriptions: int = 500
    num_alignments: int = 250
    line_length: int = 60
    html: bool = False

    def __post_init__(self) -> None:
        for name, low in (("num_descriptions", 0), ("num_alignments", 0), ("line_length", 1)):
            if int(getattr(self, name)) < low:
                raise OptionError(f"{name} must be at least {low}, not {getattr(self, name)}")


@dataclass(frozen=True)
class ReportFrame:
    """What the report names beyond the search's hits: the database's title and posted date, where the subjects
    come from (``db``, or ``subject``: ``-subject``, with their deflines ``subject_titles``), and the whole
    sequences the searched pieces were cut from (``-query_loc``: each query's whole length, by its record
    number in the file, and its number among all the file's records, ``query_numbers``; ``-subject_loc``: the pieces start at ``subject_offset`` of subjects of
    ``subject_lengths``)."""

    database_title: str = ""
    date: str = "Unknown"
    source: str = "db"
    subject_titles: tuple[str, ...] | None = None
    query_lengths: tuple[int, ...] | None = None
    query_numbers: tuple[int, ...] | None = None
    subject_offset: int = 0
    subject_lengths: tuple[int, ...] | None = None


def score_texts(evalue: float, bits: float) -> tuple[str, str]:
    """An HSP's e-value and bit score as the pairwise report prints them (BLAST+'s ``GetScoreString``: ``%.0e``
    below 0.0009, no decimals from 10 on; bits ``%4.1f``, the integer part above 99.9, ``%.3e`` above 99999)."""
    if evalue < 1.0e-180:
        e = "0.0"
    elif evalue < 0.0009:
        e = f"{evalue:.0e}"
    elif evalue < 0.1:
        e = f"{evalue:4.3f}"
    elif evalue < 1.0:
        e = f"{evalue:3.2f}"
    elif evalue < 10.0:
        e = f"{evalue:2.1f}"
    else:
        e = f"{evalue:2.0f}"
    if bits > 99999:
        b = f"{bits:5.3e}"
    elif bits > 99.9:
        b = f"{int(bits):3d}"
    else:
        b = f"{bits:4.1f}"
    return e, b


def wrap_flat(text: str, width: int = LINE, html: bool = False) -> list[str]:
    """``text`` in lines of at most ``width``, broken at the last space, else after a comma or a hyphen, else
    within a word, as BLAST+ wraps its titles (the toolkit's ``NStr::Wrap``, flat-file mode; ``html``: its
    HTML mode, an entity one column, a break also at other punctuation, one blank dropped at a break)."""
    out: list[str] = []
    pos, n = 0, len(text)
    while pos < n:
        best, best_score = n, 0  # scores: 0 forced, 1 punctuation, 2 comma, 3 space
        column, p = 0, pos
        while p < n and column <= width:
            c, score, at = text[p], 0, p
            if c.isspace():
                if html and p > 0 and text[p - 1].isspace():  # the first blank of a run
                    p, column = p + 1, column + 1
                    continue
                score = 3
            elif html and c == "&":  # an entity: one column
                q = p + 1
                while q < n and (text[q].isalnum() or text[q] == "#"):
                    q += 1
                p = q if q < n and text[q] == ";" else p
            elif c == "," and column < width and p < n - 1:
                score, at = 2, p + 1
            elif c == "-" or (html and c in _PUNCT):
                if html and c in "([{<`":
                    score = 1
                elif p < n - 1 and column < width:
                    score, at = 1, p + 1
            if score >= best_score and at > pos:  # (a word longer than the line: cut at its end)
                best, best_score = at, score
            p, column = p + 1, column + 1
        if p >= n and column <= width:  # the rest fits
            best = n
        out.append(text[pos:best])
        pos = best
        if best_score == 3 and best < n:
            pos += 1
            while not html and pos < n and text[pos] == " ":
                pos += 1
    return out


def wrap_title(text: str, width: int = 60) -> str:
    """A subject's title as the alignments' ``>`` line wraps it: a new line after the first blank from each
    ``width``-th character on (the blank stays at the line's end)."""
    if len(text) <= width:
        return text
    out, due = [], False
    for i, c in enumerate(text):
        if i and i % width == 0:
            due = True
        out.append(c)
        if due and c.isspace():
            out.append("\n")
            due = False
    return "".join(out)


def _commas(n: int) -> str:
    return f"{int(n):,}"


def pairwise_prolog(task: str, title: str, sequences: int, letters: int, html: bool = False) -> str:
    """The report's opening: program, reference, the database's title and size."""
    head = (_HTML_HEAD + "<b>BLASTN 2.12.0+</b>\n") if html else "BLASTN 2.12.0+\n"
    return (head + "\n\n" + _PROLOG[("megablast" if task == "megablast" else "blastn", html)] + "\n\n\n"
            + "Database: " + "".join(line + "\n" for line in wrap_flat(title))
            + f"           {_commas(sequences)} sequences; {_commas(letters)} total letters\n\n")


def pairwise_epilog(title: str, date: str, sequences: int, letters: int, options: BlastOptions,
                    html: bool = False) -> str:
    """The report's closing: the database's title, date and size, the scoring (``options``: the search's)."""
    out = ["\n\n  Database: ", "".join(line + "\n" for line in wrap_flat(title)),
           f"    Posted date:  {date}\n  Number of letters in database: {_commas(letters)}\n"
           f"  Number of sequences in database:  {_commas(sequences)}\n\n",
           f"\n\nMatrix: blastn matrix {options.reward} {options.penalty}\n"]
    if not options.ungapped:
        extend = float(options.gap_extend)
        if options.gap_extend == 0:  # the linear costs of megablast's greedy extension (BLAST+'s note)
            extend = (-2 * options.penalty + options.reward) / 2.0
        out.append(f"Gap Penalties: Existence: {options.gap_open}, Extension: {extend:g}\n")
    if options.two_hit_window:  # dc-megablast's two-hit window, as blastn names it
        out.append(f"Window for multiple hits: {options.two_hit_window}\n")
    if html:
        out.append(_HTML_TAIL)
    return "".join(out)


def _h(text: str, html: bool) -> str:
    """Text as blastn's HTML encodes it (``"&<>``)."""
    return _html.escape(text, quote=False).replace('"', "&quot;") if html else text


def _karlin(params: KarlinParams, gapped: bool) -> str:
    return (("Gapped\n" if gapped else "") + "Lambda      K        H\n"
            + "".join(f"{x:#8.3g} " for x in (params.lambda_, params.K, params.H)) + "\n")


def _subject_view(hits: BlastHits, s: int, subjects: list | None, frame: ReportFrame) -> dict:
    """What the report prints of subject ``s``: the id shown before its title (None: none), the title, the
    anchor its HTML links to, and its Entrez accession (None: no link)."""
    sid = subjects[s] if subjects is not None else None
    if frame.source == "subject":  # -subject: the whole defline, no id
        title = frame.subject_titles[s] if frame.subject_titles is not None else hits.subject_names[s]
        return dict(id=None, title=title, anchor=f"Subject_{s + 1}", link=None, bl2seq=True)
    if sid is not None and sid.parsed:
        view = _parsed_view(sid.seqid, sid.accver, "" if sid.title == "N/A" else sid.title)
        view["more"] = [_parsed_view(o.seqid, o.accver, o.title) for o in sid.others]  # a set's further deflines
        return view
    title = (sid.title if sid.title != "N/A" else sid.seqid) if sid is not None else hits.subject_names[s]
    return dict(id=None, title=title, anchor=f"BL_ORD_ID:{s}", link=None)


def _parsed_view(seqid: str, accver: str, title: str) -> dict:
    """The id, title, anchor and Entrez link of a defline with parsed ids (``-parse_seqids``)."""
    gi = seqid.split("|")[1] if seqid.startswith("gi|") else None
    linked = "|" in seqid and any(part in _LINKED for part in seqid.split("|"))
    shown = accver if linked or not seqid.startswith("gi|") else seqid
    return dict(id=shown, title=title, anchor=gi or shown, link=shown if linked else None)


def _entrez(acc: str, where: str, rank: int, rid: str) -> str:
    return (f'<a title="Show report for {acc}" href="https://www.ncbi.nlm.nih.gov/nucleotide/{acc}?report=genbank'
            f'&log$={where}&blast_rank={rank}&RID={rid}" >')


def _description(view: dict, bits: str, evalue: str, widths: tuple[int, int], rank: int, html: bool) -> str:
    """One line of the table: the id and title in :data:`LINE` columns (cut with ``...``), score, e-value."""
    line, shown = [], 0
    if view["id"] is not None:
        ident = view["id"] + " "
        if html and view["link"]:
            line.append(_entrez(view["link"], "nucltop", rank, "") + ident + "</a>")
        else:
            line.append(ident)
        shown = len(ident)
    rest = view["title"]
    rest = rest[:LINE - shown - 3] + "..." if len(rest) + shown > LINE else rest[:LINE - shown]
    line.append(_h(rest, html))
    shown += len(rest)
    line.append(" " * (LINE - shown) + "  ")
    line.append(f"<a href=#{view['anchor']}>{bits}</a>" if html else bits)
    line.append(" " * (widths[0] - len(bits)) + "  " + evalue + " " * (widths[1] - len(evalue)) + "\n")
    return "".join(line)


def _defline(view: dict, length: int, rank: int, html: bool) -> str:
    """A subject's ``>`` line(s) (a set's further deflines each on a line of its own, after a blank) and
    ``Length=`` above its alignments."""
    lines = []
    for k, one in enumerate([view, *view.get("more", ())]):
        out = [">" if k == 0 else " "]
        if one["id"] is not None:
            if html and one["link"]:
                out.append(_entrez(one["link"], "nuclalign", rank, "0") + one["id"] + "</a>")
            else:
                out.append(one["id"])
        if html:
            out.append(f"<a name={one['anchor']}></a>")
        if len("".join(out)) > 1 or view.get("bl2seq"):  # (blastn: always for -subject)
            out.append(" ")
        if one["title"]:
            out.append(wrap_title(_h(one["title"], html)))
        lines.append("".join(out))
    return "\n".join(lines) + f"\nLength={length}\n"


def _percent(part: int, whole: int) -> int:
    """BLAST+'s percentage of the pairwise report: rounded, 100 only when whole."""
    return 100 if part == whole else min(99, int(0.5 + 100.0 * part / whole))


def _mask_columns(qr: np.ndarray, q_start: int, intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The alignment columns (first, last) of each masked interval's query bases in an HSP."""
    if not intervals:
        return []
    bases = qr != 5
    pos = q_start + np.cumsum(bases) - 1
    out = []
    for lo, hi in intervals:
        cols = np.flatnonzero(bases & (pos >= lo) & (pos < hi))
        if cols.size:
            out.append((int(cols[0]), int(cols[-1])))
    return out


def _font_tags(line: str, a: int, b: int, masks: list[tuple[int, int]]) -> str:
    """Columns ``a:b`` of the query row (``line``, masked bases already in lowercase) with each masked run in
    blastn's font tag; blastn's rule: none where its stored range is (0, 0) (a run from column 0 past this line,
    or of column 0 alone), to the line's end where the run goes on past it or ends on its first column."""
    spans = []
    for lo, hi in masks:
        lo_, hi_ = max(lo, a), min(hi, b - 1)
        if lo_ > hi_:
            continue
        end = hi_ if hi <= b - 1 else 0
        if not (lo_ == 0 and end == 0):
            spans.append((lo_ - a, end - a if end - a > 0 else b - 1 - a))
    out, i = [], 0
    for lo, hi in sorted(spans):
        out.append(line[i:lo] + _MASK.format(line[lo:hi + 1]))
        i = hi + 1
    return "".join(out) + line[i:]


def _blocks(qr: np.ndarray, sr: np.ndarray, q_first: int, s_first: int, minus: bool, widths: int,
            masks: list[tuple[int, int]], line_length: int, html: bool) -> str:
    """An HSP's alignment in blocks of ``line_length`` columns: ``Query`` (masked bases in lowercase), the match
    line, ``Sbjct``; each row with its first and last base (1-based; a row of gaps only shows none). The rows'
    text is made whole, then cut (12 µs a column when made a line at a time)."""
    qcodes = _LETTER_BYTES[qr]
    for lo, hi in masks:
        qcodes[lo:hi + 1] |= 0x20  # lowercase ('-' stays '-')
    rows = (("Query", qcodes.tobytes().decode(), np.cumsum(qr != 5), q_first, 1, masks),
            ("Sbjct", _LETTER_BYTES[sr].tobytes().decode(), np.cumsum(sr != 5), s_first, -1 if minus else 1, []))
    mid = np.where(qr == sr, 124, 32).astype(np.uint8).tobytes().decode()  # '|' where the letters are equal
    pad = " " * (5 + 2 + widths + 2)
    out = []
    n = qr.size
    ends = [None, None]  # each row's last base shown
    for a in range(0, n, line_length):
        b = min(n, a + line_length)
        lines = []
        for r, (name, text, done, first, step, masked) in enumerate(rows):
            before = int(done[a - 1]) if a else 0
            k = int(done[b - 1]) - before
            start = first + step * before
            end = start + step * (k - 1) if k else ends[r]
            empty = (a > 0 and k == 0) or (a == 0 and start == 1 and end == 1)
            ends[r] = end
            body = _font_tags(text[a:b], a, b, masked) if html and masked else text[a:b]
            lines.append(f"{name}  " + ("" if empty else str(start)).ljust(widths + 2) + body + "  "
                         + ("" if empty else str(end)))
        out.append(f"{lines[0]}\n{pad}{mid[a:b]}\n{lines[1]}\n\n")
    return "".join(out)


def pairwise_queries(hits: BlastHits, query_titles: list[str], params: KarlinParams, reward: int, penalty: int,
                     db_length: int, db_sequences: int, *, masked: list | None = None, subjects: list | None = None,
                     layout: PairwiseLayout = PairwiseLayout(), frame: ReportFrame = ReportFrame(),
                     ungapped: bool = False, query_offset: int = 0, first_record: int = 0,
                     statistics: list | None = None) -> str:
    """One block a query of ``hits``: ``Query=``, the descriptions, the alignments, the statistics.

    Arguments:
        query_titles: each query's whole defline; params: the gapped Karlin-Altschul parameters.
        reward, penalty: the scores (the ungapped ``Lambda K H``).
        db_length, db_sequences: the database's size (each query's effective search space).
        masked: each query's masked intervals (0-based half-open, plus strand), shown in lowercase.
        subjects: the subjects' names (``SubjectId``) of a database; frame: as :class:`ReportFrame`.
        query_offset: the queries are pieces from there on (``-query_loc``); first_record: the record number
            of the batch's first query in its file (``frame.query_lengths``).
        statistics: :func:`~gseek.blast.json_report.query_statistics`' list, where made: a query it gives None
            (no letter blastn counts) has no ``Lambda K H`` and no search space, as in blastn's report (-1s
            where no query has: :func:`~gseek.blast.xml_report.none_scored`).
    """
    from .report import _aligned
    from .xml_report import UNSCORED, by_subject, none_scored  # (a report's, not a -outfmt 6 search's import)

    a = hits.arrays
    html = layout.html
    bounds = np.searchsorted(a["query"], np.arange(len(hits.query_names) + 1), side="left")
    ungapped_k = ungapped_params(reward, penalty)
    out: list[str] = []
    skipped = none_scored(statistics)
    for q in range(len(hits.query_names)):
        qlen = int(hits.query_lengths[q])
        whole = qlen if frame.query_lengths is None else int(frame.query_lengths[first_record + q])
        out.append("\n\n" + ("<b>Query=</b> " if html else "Query= ")
                   + "".join(line + "\n" for line in wrap_flat(_h(query_titles[q], html), html=html))
                   + f"\nLength={whole}\n")
        lo, hi = int(bounds[q]), int(bounds[q + 1])
        if hi == lo:
            out.append("\n\n***** No hits found *****\n\n\n")
        else:
            groups = list(by_subject(hits, lo, hi, subjects))
            views = {s: _subject_view(hits, s, subjects, frame) for _, s, _, _ in groups}
            shown = groups[:layout.num_descriptions]
            texts = [score_texts(float(a["evalue"][rows[0]]), float(a["bitscore"][rows[0]])) for _, _, _, rows in shown]
            widths = (max([6] + [len(b) for _, b in texts]), max([5] + [len(e) for e, _ in texts]))
            head = (" " * (LINE + 2) + "Score" + " " * (widths[0] - 5) + "    E\n"
                    + "Sequences producing significant alignments:" + " " * (LINE - 43 + 1) + "(Bits)"
                    + " " * (widths[0] - 6) + "  Value\n\n")
            out.append((head if shown else "") + "".join(_description(views[s], b, e, widths, k, html)
                                      for (k, s, _, _), (e, b) in zip(shown, texts)) + "\n\n")
            for k, s, _, rows in groups[:layout.num_alignments]:
                slen = int((hits.subject_lengths if frame.subject_lengths is None else frame.subject_lengths)[s])
                for n_hsp, i in enumerate(rows):
                    qr, sr = _aligned(hits, i)
                    minus, ev = int(a["strand"][i]) < 0, float(a["evalue"][i])
                    s0, s1 = int(a["s_start"][i]) + 1, int(a["s_end"][i])
                    evalue, bits = score_texts(ev, float(a["bitscore"][i]))
                    length = int(qr.size)
                    ident = int(np.count_nonzero(qr == sr))
                    gaps = int(np.count_nonzero((qr == 5) | (sr == 5)))
                    q0, q1 = int(a["q_start"][i]) + query_offset, int(a["q_end"][i]) + query_offset
                    s0, s1 = s0 + frame.subject_offset, s1 + frame.subject_offset
                    widths_i = max(len(str(q1 - 1)), len(str(s1 - 1)))
                    text = [_defline(views[s], slen, k, html) + "\n"] if n_hsp == 0 else []
                    text.append(f" Score = {bits} bits ({int(a['score'][i])}),  Expect = {evalue}\n"
                                f" Identities = {ident}/{length} ({_percent(ident, length)}%), Gaps = {gaps}/{length} "
                                f"({_percent(gaps, length)}%)\n Strand=Plus/{'Minus' if minus else 'Plus'}\n\n")
                    masks = _mask_columns(qr, int(a["q_start"][i]), masked[q] if masked else [])
                    text.append(_blocks(qr, sr, q0 + 1, s1 if minus else s0, minus, widths_i, masks,
                                        layout.line_length, html) + "\n")
                    out.append("".join(text))
        if skipped:  # (blastn scores no query of the search: -1s, -ungapped too)
            out.append("\n" + _karlin(UNSCORED, False) + "\n" + _karlin(UNSCORED, True)
                       + "\nEffective search space used: 0\n")
            continue
        if statistics is not None and statistics[q] is None:  # (blastn: no statistics for such a query)
            out.append("\n\n\nEffective search space used: 0\n")
            continue
        ell = length_adjustment(params, qlen, db_length, db_sequences)
        space = max(db_length - db_sequences * ell, 1) * (qlen - ell)
        out.append("\n" + _karlin(ungapped_k, False) + "\n" + ("" if ungapped else _karlin(params, True)) + "\n"
                   + f"Effective search space used: {space}\n")
    return "".join(out)

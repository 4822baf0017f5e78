"""``blastn -outfmt 5``: BLAST XML (NCBI_BlastOutput.dtd), as blastn 2.12 writes it, readable by Biopython's
``Bio.Blast.NCBIXML`` and ``Bio.SearchIO``.

The output is a header (:func:`xml_header`), one ``<Iteration>`` per query (:func:`xml_iterations`; its
number is written by the output's writer, which knows how many queries came before: ``ITER_MARK``) and
:data:`XML_FOOTER`.

>>> print(xml_header("megablast", "nt", "q1 a query", 420, dict(evalue=10.0, reward=1, penalty=-2, gap_open=0,
...                  gap_extend=0, dust=(20, 64, 1), soft_masking=True, lcase_masking=False)).splitlines()[9])
  <BlastOutput_query-len>420</BlastOutput_query-len>
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

import numpy as np

from .stats import KarlinParams, length_adjustment

if TYPE_CHECKING:  # pragma: no cover
    from .searcher import BlastHits

__all__ = ["xml_header", "xml_iterations", "XML_FOOTER", "ITER_MARK", "QUERY_MARK", "NAMED", "NAMED_END",
           "unscored_message", "query_name", "NO_DATA", "NO_KARLIN", "UNSCORED", "none_scored"]

#: Where an iteration's number goes; the writer replaces each with the query's number in the output.
ITER_MARK = "\x00ITER\x00"
#: Where the writer puts a query's number in its file (``Query_N``: blastn counts a query ``-query_loc`` misses).
QUERY_MARK = "\x00QNUM\x00"
#: Around a query's title further in its text: the writer puts ``Query_N TITLE`` there as blastn names a query in
#: a message (N the number of the last QUERY_MARK; :func:`query_name`).
NAMED, NAMED_END = "\x00QNAMED\x00", "\x00QEND\x00"
XML_FOOTER = "</BlastOutput_iterations>\n</BlastOutput>\n\n"  # (blastn ends with an empty line)
_REFERENCE = {
    "megablast": "Zheng Zhang, Scott Schwartz, Lukas Wagner, and Webb Miller (2000), &quot;A greedy algorithm for "
                 "aligning DNA sequences&quot;, J Comput Biol 2000; 7(1-2):203-14.",
    "blastn": "Stephen F. Altschul, Thomas L. Madden, Alejandro A. Sch&amp;auml;ffer, Jinghui Zhang, Zheng Zhang, "
              "Webb Miller, and David J. Lipman (1997), &quot;Gapped BLAST and PSI-BLAST: a new generation of protein "
              "database search programs&quot;, Nucleic Acids Res. 25:3389-3402.",
}


def _esc(text: str) -> str:
    """Text as BLAST's XML writes it (``&``, ``<``, ``>``, ``'`` and ``"`` as entities)."""
    return escape(text, {"'": "&apos;", '"': "&quot;"})


#: What blastn says of a query whose κ λ H it cannot compute (``query_statistics``' None): without a letter, or
#: without one it counts.
NO_DATA = "Sequence contains no data"
NO_KARLIN = ("Could not calculate ungapped Karlin-Altschul parameters due to an invalid query sequence or its "
             "translation. Please verify the query sequence(s) and/or filtering options")


#: The κ λ H blastn prints for a query it cannot score (``query_statistics``' None); in the pairwise report too
#: where it scores no query of the search (:func:`none_scored`).
UNSCORED = KarlinParams(-1.0, -1.0, -1.0, 0.0, 0.0)


def none_scored(statistics: list | None) -> bool:
    """Whether blastn scores no query of a search (``statistics``: ``query_statistics``'), so skips it: its JSON
    then has no ``hits`` lists, its pairwise report prints -1 for ``Lambda K H``."""
    return bool(statistics) and all(s is None for s in statistics)


def unscored_message(title: str, length: int) -> str:
    """blastn's message (XML's ``Iteration_message``, JSON's ``message``) for a query it cannot score, without hits:
    its name (``Query_N`` and its title between :data:`NAMED` marks, which the writer fills in: :func:`query_name`),
    twice.

    >>> name = lambda m: query_name(3, m.group(1))
    >>> re.sub(f"{NAMED}(.*?){NAMED_END}", name, unscored_message("q1 a title", 0))
    'Query_3 q1 a title:  Query_3 q1 a title: Sequence contains no data  No hits found'
    """
    named = f"{NAMED}{title}{NAMED_END}"
    return f"{named}:  {named}: {NO_DATA if length == 0 else NO_KARLIN}  No hits found"


def query_name(number: int, title: str) -> str:
    """A query's name in blastn's messages: ``Query_N TITLE``, past 35 characters its first 25 and ``..``.

    >>> query_name(4, "abcdefghijklmnopqrstuvwxyzAB"), query_name(3, "abcdefghijklmnopqrstuvwxyzA")
    ('Query_4 abcdefghijklmnopq.. ', 'Query_3 abcdefghijklmnopqrstuvwxyzA')
    """
    name = f"Query_{number} {title}"
    return name if len(name) <= 35 else name[:25] + ".. "


def _real(x: float) -> str:
    """A real as BLAST+'s XML and JSON writers write it (15 significant digits, ``%.15g``): the statistics'
    κ λ H (blastn-short's ``0.710602795216363``), the parameters' expect value."""
    return f"{x:.15g}"


def _g(x: float) -> str:
    """A bit score or e-value as blastn's XML and JSON write it: first cut to 6 significant digits (BLAST+'s
    formatter does), then written as any real (``894.535``, ``1.4e-154``)."""
    return _real(float(f"{x:.6g}"))


def xml_header(task: str, database: str, query_def: str, query_len: int, options: dict) -> str:
    """``<BlastOutput>`` up to ``<BlastOutput_iterations>``: program, reference, database, the first query, the
    parameters (``options``: ``BlastOptions``' fields)."""
    filt = ("L;" if options.get("dust") else "") + ("m;" if options.get("soft_masking") else "")
    return (
        '<?xml version="1.0"?>\n'
        '<!DOCTYPE BlastOutput PUBLIC "-//NCBI//NCBI BlastOutput/EN" '
        '"http://www.ncbi.nlm.nih.gov/dtd/NCBI_BlastOutput.dtd">\n'
        "<BlastOutput>\n"
        "  <BlastOutput_program>blastn</BlastOutput_program>\n"
        "  <BlastOutput_version>BLASTN 2.12.0+</BlastOutput_version>\n"
        f"  <BlastOutput_reference>{_REFERENCE.get(task, _REFERENCE['blastn'])}</BlastOutput_reference>\n"
        f"  <BlastOutput_db>{_esc(database)}</BlastOutput_db>\n"
        f"  <BlastOutput_query-ID>Query_{QUERY_MARK}</BlastOutput_query-ID>\n"
        f"  <BlastOutput_query-def>{_esc(query_def)}</BlastOutput_query-def>\n"
        f"  <BlastOutput_query-len>{int(query_len)}</BlastOutput_query-len>\n"
        "  <BlastOutput_param>\n    <Parameters>\n"
        f"      <Parameters_expect>{_real(options['evalue'])}</Parameters_expect>\n"
        f"      <Parameters_sc-match>{options['reward']}</Parameters_sc-match>\n"
        f"      <Parameters_sc-mismatch>{options['penalty']}</Parameters_sc-mismatch>\n"
        f"      <Parameters_gap-open>{options['gap_open']}</Parameters_gap-open>\n"
        f"      <Parameters_gap-extend>{options['gap_extend']}</Parameters_gap-extend>\n"
        f"      <Parameters_filter>{filt or 'F'}</Parameters_filter>\n"
        "    </Parameters>\n  </BlastOutput_param>\n"
        "<BlastOutput_iterations>\n")


def by_subject(hits: BlastHits, lo: int, hi: int, subjects: list | None):
    """One query's HSPs ``lo:hi`` by subject, in order (the XML and JSON reports' hits): each
    ``(hit number, subject, (id, def, accession), the HSPs' rows)``."""
    a = hits.arrays
    h, n_hit = lo, 0
    while h < hi:
        s = int(a["subject"][h])
        end = h
        while end < hi and int(a["subject"][end]) == s:
            end += 1
        n_hit += 1
        yield n_hit, s, _hit_names(hits, s, subjects), range(h, end)
        h = end


def hsp_view(hits: BlastHits, i: int) -> tuple:
    """What the XML and JSON reports print of HSP ``i``: (minus strand, query row, subject row, midline,
    subject start 1-based, subject end, e-value)."""
    from .report import _aligned

    a = hits.arrays
    qr, sr = _aligned(hits, i)
    mid = np.where((qr == sr) & (qr < 4), 124, 32).astype(np.uint8).tobytes().decode()  # '|' or ' '

    return (int(a["strand"][i]) < 0, qr, sr, mid, int(a["s_start"][i]) + 1, int(a["s_end"][i]),
            float(a["evalue"][i]))


def _hit_names(hits: BlastHits, subject: int, subjects: list | None) -> tuple[str, str, str]:
    """``Hit_id``, ``Hit_def``, ``Hit_accession`` of a subject: its parsed ids, else BLAST+'s ordinal id and the
    whole defline (a database made without ``-parse_seqids``)."""
    if subjects is not None and subjects[subject].parsed:
        s = subjects[subject]
        acc = s.acc.split(":", 1)[-1] if s.seqid.startswith("gnl|") else s.acc  # a general id: its tag
        return s.seqid, ("No definition line" if s.title == "N/A" else s.title), acc
    title = subjects[subject].title if subjects is not None else hits.subject_names[subject]
    return f"gnl|BL_ORD_ID|{subject}", title, str(subject)


def bl2seq_names(hits: BlastHits, frame, subject: int) -> tuple[str, str]:
    """A ``-subject`` subject's id and title as blastn's XML and JSON write them: the defline's first word, the
    whole defline."""
    title = frame.subject_titles[subject] if frame.subject_titles is not None else hits.subject_names[subject]
    return (title.split(None, 1)[0] if title.strip() else title), title


def xml_iterations(hits: BlastHits, query_titles: list[str], params: KarlinParams, db_length: int, db_sequences: int,
                   subjects: list | None = None, frame=None, query_offset: int = 0,
                   statistics: list[KarlinParams | None] | None = None) -> str:
    """One ``<Iteration>`` per query of ``hits`` (its number :data:`ITER_MARK`), hits grouped by subject in report
    order, each HSP with its aligned rows and midline, and the query's statistics (the length adjustment and
    effective search space of ``params`` over the whole database). ``frame``: a
    :class:`~gseek.blast.pairwise.ReportFrame` (``-subject``: its names as blastn writes them, database size 0;
    ``-subject_loc``: whole subjects' coordinates and lengths); ``query_offset``: ``-query_loc``'s;
    ``statistics``: each query's printed κ λ H (:func:`~gseek.blast.json_report.query_statistics`; None: blastn
    cannot compute them, -1 and its message), else ``params``'."""
    from .report import _text

    bl2seq = frame is not None and frame.source == "subject"
    s_off = 0 if frame is None else frame.subject_offset
    s_len = hits.subject_lengths if frame is None or frame.subject_lengths is None else frame.subject_lengths

    a = hits.arrays
    query = a["query"]
    bounds = np.searchsorted(query, np.arange(len(hits.query_names) + 1), side="left")
    out: list[str] = []
    for q in range(len(hits.query_names)):
        qlen = int(hits.query_lengths[q])
        shown = params if statistics is None else statistics[q]
        ell = length_adjustment(params, qlen, db_length, db_sequences) if shown is not None else 0
        space = max(db_length - db_sequences * ell, 1) * (qlen - ell) if shown is not None else 0
        out.append(f"<Iteration>\n  <Iteration_iter-num>{ITER_MARK}</Iteration_iter-num>\n"
                   f"  <Iteration_query-ID>Query_{QUERY_MARK}</Iteration_query-ID>\n"
                   f"  <Iteration_query-def>{_esc(query_titles[q])}</Iteration_query-def>\n"
                   f"  <Iteration_query-len>{qlen}</Iteration_query-len>\n<Iteration_hits>\n")
        lo, hi = int(bounds[q]), int(bounds[q + 1])
        for n_hit, s, (hid, hdef, hacc), rows in by_subject(hits, lo, hi, subjects):
            if bl2seq:  # -subject: the defline's first word, the whole defline, Subject_N
                (hid, hdef), hacc = bl2seq_names(hits, frame, s), f"Subject_{s + 1}"
            if subjects is not None and subjects[s].others and not bl2seq:  # a set's further deflines
                hdef += "".join(f" >{o.fasta_ids} {o.title}" for o in subjects[s].others)
            out.append(f"<Hit>\n  <Hit_num>{n_hit}</Hit_num>\n  <Hit_id>{_esc(hid)}</Hit_id>\n"
                       f"  <Hit_def>{_esc(hdef)}</Hit_def>\n  <Hit_accession>{_esc(hacc)}</Hit_accession>\n"
                       f"  <Hit_len>{int(s_len[s])}</Hit_len>\n  <Hit_hsps>\n")
            for k, i in enumerate(rows, 1):
                minus, qr, sr, mid, s0, s1, ev = hsp_view(hits, i)
                s0, s1 = s0 + s_off, s1 + s_off
                out.append(
                    f"    <Hsp>\n      <Hsp_num>{k}</Hsp_num>\n"
                    f"      <Hsp_bit-score>{_g(float(a['bitscore'][i]))}</Hsp_bit-score>\n"
                    f"      <Hsp_score>{int(a['score'][i])}</Hsp_score>\n"
                    f"      <Hsp_evalue>{'0' if ev < 1e-180 else _g(ev)}</Hsp_evalue>\n"
                    f"      <Hsp_query-from>{int(a['q_start'][i]) + 1 + query_offset}</Hsp_query-from>\n"
                    f"      <Hsp_query-to>{int(a['q_end'][i]) + query_offset}</Hsp_query-to>\n"
                    f"      <Hsp_hit-from>{s1 if minus else s0}</Hsp_hit-from>\n"
                    f"      <Hsp_hit-to>{s0 if minus else s1}</Hsp_hit-to>\n"
                    f"      <Hsp_query-frame>1</Hsp_query-frame>\n"
                    f"      <Hsp_hit-frame>{-1 if minus else 1}</Hsp_hit-frame>\n"
                    f"      <Hsp_identity>{int(a['nident'][i])}</Hsp_identity>\n"
                    f"      <Hsp_positive>{int(a['nident'][i])}</Hsp_positive>\n"
                    f"      <Hsp_gaps>{int(a['gaps'][i])}</Hsp_gaps>\n"
                    f"      <Hsp_align-len>{int(a['length'][i])}</Hsp_align-len>\n"
                    f"      <Hsp_qseq>{_text(qr)}</Hsp_qseq>\n      <Hsp_hseq>{_text(sr)}</Hsp_hseq>\n"
                    f"      <Hsp_midline>{mid}</Hsp_midline>\n    </Hsp>\n")
            out.append("  </Hit_hsps>\n</Hit>\n")
        shown = UNSCORED if shown is None else shown
        message = "No hits found" if shown is not UNSCORED else unscored_message(_esc(query_titles[q]), qlen)
        out.append("</Iteration_hits>\n  <Iteration_stat>\n    <Statistics>\n"
                   f"      <Statistics_db-num>{0 if bl2seq else db_sequences}</Statistics_db-num>\n"
                   f"      <Statistics_db-len>{0 if bl2seq else db_length}</Statistics_db-len>\n"
                   f"      <Statistics_hsp-len>{ell}</Statistics_hsp-len>\n"
                   f"      <Statistics_eff-space>{space}</Statistics_eff-space>\n"
                   f"      <Statistics_kappa>{_real(shown.K)}</Statistics_kappa>\n"
                   f"      <Statistics_lambda>{_real(shown.lambda_)}</Statistics_lambda>\n"
                   f"      <Statistics_entropy>{_real(shown.H)}</Statistics_entropy>\n"
                   "    </Statistics>\n  </Iteration_stat>\n"
                   + (f"  <Iteration_message>{message}</Iteration_message>\n" if hi == lo else "")
                   + "</Iteration>\n")
    return "".join(out)

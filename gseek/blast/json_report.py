"""``blastn -outfmt 15``: single-file BLAST JSON (``BlastOutput2``), as blastn 2.12 writes it.

One ``report`` a query (:func:`json_reports`), each preceded by :data:`REPORT_MARK` and numbered at
:data:`~gseek.blast.xml_report.ITER_MARK` by the output's writer, which knows the queries before it;
:data:`JSON_HEADER` and :data:`JSON_FOOTER` around them.

>>> import json
>>> json.loads(JSON_HEADER + "{}" + JSON_FOOTER)
{'BlastOutput2': [{}]}
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np

from .stats import KarlinParams, length_adjustment, query_params
from .xml_report import (NAMED, NAMED_END, QUERY_MARK, UNSCORED, _g, _real, bl2seq_names, by_subject, hsp_view,
                         none_scored, unscored_message)

if TYPE_CHECKING:  # pragma: no cover
    from gseek.seqio import SequenceBatch

    from .searcher import BlastHits

__all__ = ["json_reports", "query_masking", "query_statistics", "JSON_HEADER", "JSON_FOOTER", "REPORT_MARK", "report_separator"]

JSON_HEADER = '{\n"BlastOutput2": [\n'
JSON_FOOTER = "\n]\n}\n"
#: Before each report: the writer puts ``{`` before the first and ``,`` ``{`` between the others.
REPORT_MARK = "\x00REPORT\x00"
_REFERENCE = {
    "megablast": 'Zheng Zhang, Scott Schwartz, Lukas Wagner, and Webb Miller (2000), "A greedy algorithm for aligning '
                 'DNA sequences", J Comput Biol 2000; 7(1-2):203-14.',
    "blastn": 'Stephen F. Altschul, Thomas L. Madden, Alejandro A. Sch&auml;ffer, Jinghui Zhang, Zheng Zhang, Webb '
              'Miller, and David J. Lipman (1997), "Gapped BLAST and PSI-BLAST: a new generation of protein database '
              'search programs", Nucleic Acids Res. 25:3389-3402.',
}


def _marked(text: str) -> str:
    """JSON text with the writer's marks as they were (``json.dumps`` escapes their NUL)."""
    for mark in (NAMED, NAMED_END):
        text = text.replace(_s(mark)[1:-1], mark)
    return text


def report_separator(first: bool) -> str:
    """What goes where a :data:`REPORT_MARK` is: the report's opening brace, after a comma but for the first."""
    return "{\n" if first else "\n,\n{\n"


def _s(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def query_masking(batch: SequenceBatch, options: dict) -> list[list[tuple[int, int]]]:
    """Each query's masked intervals as blastn lists them (``query_masking``): DUST's, and the lowercase runs
    with ``-lcase_masking``, merged, 0-based half-open
    ``(start, end)`` (the JSON prints ``end - 1`` as ``to``)."""
    from .dust import dust_intervals

    runs = np.zeros((0, 2), np.int64)
    if options.get("dust"):
        level, window, linker = options["dust"]
        runs = dust_intervals(batch.codes, batch.offsets, level, window, linker)
    if options.get("lcase_masking") and batch.soft_mask.size:
        runs = np.concatenate([runs, np.asarray(batch.soft_mask, np.int64).reshape(-1, 2)])
    offsets = np.asarray(batch.offsets, np.int64)
    out: list[list[tuple[int, int]]] = [[] for _ in range(len(batch))]
    for a, b in sorted(runs.tolist()):
        q = int(np.searchsorted(offsets, a, side="right")) - 1
        lo, hi = a - int(offsets[q]), b - int(offsets[q])
        if out[q] and lo <= out[q][-1][1]:
            out[q][-1] = (out[q][-1][0], max(out[q][-1][1], hi))
        else:
            out[q].append((lo, hi))
    return out


def query_statistics(batch: SequenceBatch, options: dict, params: KarlinParams,
                     masked: list[list[tuple[int, int]]] | None = None) -> list[KarlinParams | None]:
    """Each query's λ K H as blastn reports them (``Statistics_kappa`` ..., JSON's ``stat``): ``params``, or where
    they are computed (``-ungapped``, gap costs past BLAST+'s tables: ``blastn-short``) those of the query's
    searched strand's letters, the bases hard-masked (``-soft_masking false``: DUST's and ``-lcase_masking``'s)
    left out (:func:`~gseek.blast.stats.query_params`); None for a query without such a letter (none at all,
    ambiguous ones only, or all hard-masked), whose statistics blastn cannot compute
    (:func:`~gseek.blast.xml_report.unscored_message`);
    ``masked``: :func:`query_masking`'s, where made already."""
    n = len(batch)
    if n == 0:
        return []
    codes = np.asarray(batch.codes)
    offsets = np.asarray(batch.offsets, np.int64)
    keep = codes < 4
    if not options.get("soft_masking", True):
        for q, intervals in enumerate(query_masking(batch, options) if masked is None else masked):
            for lo, hi in intervals:
                keep[offsets[q] + lo: offsets[q] + hi] = False
    which = np.repeat(np.arange(n), np.diff(offsets))
    counts = np.bincount(which[keep] * 4 + codes[keep], minlength=4 * n).reshape(n, 4)
    if options.get("strand") == "minus":  # the minus strand's letters: A<->T, C<->G
        counts = counts[:, ::-1]
    return [query_params(params, options["reward"], options["penalty"], c) if sum(c) else None
            for c in counts.tolist()]


def _masked_text(row: np.ndarray, start: int, intervals: list[tuple[int, int]]) -> str:
    """An aligned query row (plus strand, from query base ``start``) as text, its masked bases in lowercase
    (blastn's JSON shows the query's masking so, but for a masked interval that begins before the HSP: its
    bases stay in capitals)."""
    text = bytearray(np.frombuffer(b"ACGTN-", np.uint8)[row].tobytes())
    if intervals:
        bases = row != 5
        pos = start + np.cumsum(bases) - 1
        for lo, hi in intervals:
            if lo < start:
                continue
            for c in np.flatnonzero(bases & (pos >= lo) & (pos < hi)).tolist():
                text[c] = text[c] | 0x20
    return text.decode()


def json_reports(hits: BlastHits, batch: SequenceBatch, query_titles: list[str], params: KarlinParams,
                 db_length: int, db_sequences: int, database: str, options: dict,
                 subjects: list | None = None, frame=None, query_offset: int = 0,
                 statistics: list[KarlinParams | None] | None = None,
                 masked: list[list[tuple[int, int]]] | None = None) -> str:
    """One ``report`` a query of ``hits`` (its batch ``batch``), each after a :data:`REPORT_MARK`; ``frame`` and
    ``query_offset``: ``-subject_loc``'s and ``-query_loc``'s coordinates, as
    :func:`~gseek.blast.xml_report.xml_iterations`; ``statistics``: each query's printed λ K H
    (:func:`query_statistics`), else ``params``'; ``masked``: :func:`query_masking`'s, where made already."""
    s_off = 0 if frame is None else frame.subject_offset
    s_len = hits.subject_lengths if frame is None or frame.subject_lengths is None else frame.subject_lengths
    from .report import _text

    a = hits.arrays
    query = a["query"]
    bounds = np.searchsorted(query, np.arange(len(hits.query_names) + 1), side="left")
    masked = query_masking(batch, options) if masked is None else masked
    filt = ("L;" if options.get("dust") else "") + ("m;" if options.get("soft_masking") else "")
    bl2seq = frame is not None and frame.source == "subject"
    target = ('      "search_target": {\n        "subjects": [\n'  # -subject: blastn's bl2seq layout
              + ",\n".join(f'          "Subject_{n}"' for n in range(1, db_sequences + 1)) + "\n        ]\n      },\n"
              if bl2seq else f'      "search_target": {{\n        "db": {_s(database)}\n      }},\n')
    head = ('    "report": {\n      "program": "blastn",\n      "version": "BLASTN 2.12.0+",\n'
            f'      "reference": {_s(_REFERENCE.get(options["task"], _REFERENCE["blastn"]))},\n' + target
            + f'      "params": {{\n        "expect": {_real(options["evalue"])},\n'
            f'        "sc_match": {options["reward"]},\n'
            f'        "sc_mismatch": {options["penalty"]},\n'
            + ("" if options.get("ungapped") else  # (blastn -ungapped: no gap costs)
               f'        "gap_open": {options["gap_open"]},\n        "gap_extend": {options["gap_extend"]},\n')
            + f'        "filter": {_s(filt or "F")}\n      }},\n')
    out: list[str] = []
    skipped = none_scored(statistics)
    for q in range(len(hits.query_names)):
        qlen = int(hits.query_lengths[q])
        shown = params if statistics is None else statistics[q]
        ell = length_adjustment(params, qlen, db_length, db_sequences) if shown is not None else 0
        space = max(db_length - db_sequences * ell, 1) * (qlen - ell) if shown is not None else 0
        body = [f'          "query_id": "Query_{QUERY_MARK}",\n          "query_title": {_s(query_titles[q])},\n'
                f'          "query_len": {qlen},\n']
        if masked[q] and masked[q] != [(0, int(batch.offsets[q + 1] - batch.offsets[q]))]:
            # (a query masked from end to end is listed without its mask, as blastn lists it)
            body.append('          "query_masking": [\n' + ",\n".join(
                f'            {{\n              "from": {lo + query_offset},\n'
                f'              "to": {hi - 1 + query_offset}\n            }}'
                for lo, hi in masked[q]) + "\n          ],\n")
        if not skipped:  # (blastn: no hits lists where it scores no query of the search)
            body.append('          "hits": [\n')
        lo, hi = int(bounds[q]), int(bounds[q + 1])
        hit_texts = []
        for n_hit, s, (hid, hdef, hacc), rows in by_subject(hits, lo, hi, subjects):
            hsps = []
            for k, i in enumerate(rows, 1):
                minus, qr, sr, mid, s0, s1, ev = hsp_view(hits, i)
                s0, s1 = s0 + s_off, s1 + s_off
                hsps.append(
                    f'                {{\n                  "num": {k},\n'
                    f'                  "bit_score": {_g(float(a["bitscore"][i]))},\n'
                    f'                  "score": {int(a["score"][i])},\n'
                    f'                  "evalue": {"0" if ev < 1e-180 else _g(ev)},\n'
                    f'                  "identity": {int(a["nident"][i])},\n'
                    f'                  "query_from": {int(a["q_start"][i]) + 1 + query_offset},\n'
                    f'                  "query_to": {int(a["q_end"][i]) + query_offset},\n'
                    f'                  "query_strand": "Plus",\n'
                    f'                  "hit_from": {s1 if minus else s0},\n'
                    f'                  "hit_to": {s0 if minus else s1},\n'
                    f'                  "hit_strand": "{"Minus" if minus else "Plus"}",\n'
                    f'                  "align_len": {int(a["length"][i])},\n'
                    f'                  "gaps": {int(a["gaps"][i])},\n'
                    f'                  "qseq": "{_masked_text(qr, int(a["q_start"][i]), masked[q])}",\n'
                    f'                  "hseq": "{_text(sr)}",\n'
                    f'                  "midline": "{mid}"\n                }}')
            if bl2seq:  # the defline's first word and the whole defline; no accession
                hid, hdef = bl2seq_names(hits, frame, s)
            described = [(hid, hacc, hdef)] + ([] if bl2seq or subjects is None else  # a set's further deflines
                                               [(o.seqid, o.acc, o.title) for o in subjects[s].others])
            names = "                },\n                {\n".join(
                f'                  "id": {_s(i)},\n'
                + ("" if bl2seq else f'                  "accession": {_s(acc)},\n')
                + f'                  "title": {_s(title)}\n' for i, acc, title in described)
            hit_texts.append(
                f'            {{\n              "num": {n_hit},\n              "description": [\n                {{\n'
                + names + '                }\n              ],\n'
                f'              "len": {int(s_len[s])},\n              "hsps": [\n'
                + ",\n".join(hsps) + "\n              ]\n            }")
        if not skipped:
            body.append((",\n".join(hit_texts) + "\n" if hit_texts else "") + "          ],\n")
        shown = UNSCORED if shown is None else shown
        message = "No hits found" if shown is not UNSCORED else unscored_message(query_titles[q], qlen)
        body.append('          "stat": {\n'
                    + ("" if bl2seq else f'            "db_num": {db_sequences},\n            "db_len": {db_length},\n')
                    + f'            "hsp_len": {ell},\n            "eff_space": {space},\n'
                    f'            "kappa": {_real(shown.K)},\n            "lambda": {_real(shown.lambda_)},\n'
                    f'            "entropy": {_real(shown.H)}\n          }}'
                    + (f',\n          "message": {_marked(_s(message))[:-1]}'
                       + (' \\u000ANo hits found"' if skipped else '"') + "\n" if hi == lo else "\n"))
        if bl2seq:  # one search in a list, two columns further in
            text = "".join(body).replace("\n", "\n  ")
            out.append(REPORT_MARK + head + '      "results": {\n        "bl2seq": [\n          {\n  ' + text[:-2]
                       + "          }\n        ]\n      }\n    }\n  }")
        else:
            out.append(REPORT_MARK + head + '      "results": {\n        "search": {\n' + "".join(body)
                       + "        }\n      }\n    }\n  }")
    return "".join(out)

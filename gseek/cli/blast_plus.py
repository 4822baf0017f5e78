"""``gseek blastn`` and ``gseek makeblastdb``: BLAST+ 2.12's command lines, run by gseek's engine.

The arguments are read by :mod:`gseek.blast.plus_args` (BLAST+'s syntax, defaults and error texts); the
search is :func:`~gseek.pipeline.blast_files`, the same as ``gseek search --task``. Each function
returns the exit status and writes BLAST+'s messages to ``stderr``.

>>> import io
>>> err = io.StringIO()
>>> blastn_main(["-query", "-"], stderr=err)
1
>>> print(err.getvalue(), end="")
BLAST query/options error: Either a BLAST database or subject sequence(s) must be specified
Please refer to the BLAST+ user manual.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
from typing import TextIO

from gseek.blast.plus_args import (VERSION_TEXT, PlusArgError, blastn_usage, database_names, options_error,
                                   parse_blastn, parse_makeblastdb)
from gseek.errors import GseekError, IndexFormatError, OptionError


__all__ = ["blastn_main", "makeblastdb_main", "BLASTN_OUTFMTS"]

#: The ``-outfmt`` kinds gseek blastn writes (17: gseek's SAM, the database as the reference: docs/blast.md).
BLASTN_OUTFMTS = ("0", "5", "6", "7", "10", "15", "17")


_MAKEBLASTDB_USAGE = ("USAGE\n  makeblastdb -in FASTA -dbtype nucl [-out NAME] [-title TITLE] [-parse_seqids]\n"
                      "    [-max_file_sz SIZE] [-taxid INT] [-taxid_map FILE] [-blastdb_version 4|5]\n")


def _fail(err: PlusArgError, stderr: TextIO) -> int:
    if err.usage:
        stderr.write(blastn_usage())
    stderr.write(f"{err}\n")
    return err.exit_code


def blastn_main(argv: list[str], stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run ``blastn ARGV`` (BLAST+ 2.12's arguments, plus ``-device`` and ``-gpus``); the exit status."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    from gseek import __version__

    try:
        run = parse_blastn(argv)
        if run.action == "version":
            stdout.write(VERSION_TEXT.format(version=__version__))
            return 0
        if run.action in ("help", "usage"):
            stdout.write(blastn_usage())
            return 0
        kind = run.outfmt.split()[0] if run.outfmt.split() else "0"
        if kind not in BLASTN_OUTFMTS:
            raise options_error(f"gseek blastn writes -outfmt {', '.join(BLASTN_OUTFMTS)} (6, 7 and 10 with "
                                f"BLAST+'s field keywords); -outfmt {kind} is not supported")
        for warning in run.warnings:
            stderr.write(f"Warning: [blastn] {warning}\n")
        return _search(run, stderr)
    except PlusArgError as err:
        return _fail(err, stderr)


def _search(run, stderr: TextIO) -> int:
    options = {f.name: getattr(run.options, f.name) for f in dataclasses.fields(run.options) if f.name != "task"}
    outfmt = "sam" if run.outfmt.split()[0] == "17" else run.outfmt
    with tempfile.TemporaryDirectory(prefix="gseek-blastn-") as folder:
        return _search_in(run, stderr, options, outfmt, folder)


def _search_in(run, stderr: TextIO, options: dict, outfmt: str, folder: str) -> int:
    from gseek.blast.database import resolve_database
    from gseek.blast.pairwise import PairwiseLayout, ReportFrame
    from gseek.index.blastdb_defline import defline_ids
    from gseek.seqio import open_output

    from ..pipeline import blast_files

    subjects, frame = None, {}
    try:
        if run.subject is not None and run.subject != "-" and _blank(run.subject):
            raise PlusArgError("BLAST engine error: Empty CBlastQueryVector", 3, False)  # (blastn's words)
        if run.subject is not None:  # the subjects as a database of their own (blastn's statistics: their total)
            from gseek.index import Index
            from gseek.seqio import read_fastx

            from ..seqio.atomic import check_output

            check_output(run.out, [run.subject])  # (the query is checked with the search's outputs)

            frame = dict(source="subject", database_title=f"User specified sequence set (Input: {run.subject}).")
            if run.subject_loc is not None:  # each subject's piece searched (blastn's statistics: the pieces')
                start, stop = run.subject_loc
                lengths: list[int] = []
                batch = read_fastx(_pieces(run.subject, start, stop, folder, "subject", lengths))
                frame.update(subject_offset=start - 1, subject_lengths=tuple(lengths))
            else:
                batch = read_fastx(run.subject)
            # each subject's defline, its blanks collapsed (blastn's title of a -subject)
            frame["subject_titles"] = tuple(" ".join(f"{batch.name(i)} {batch.description(i)}".split())
                                            for i in range(len(batch)))
            database = Index.build(batch, parts="text", device="cpu")
            # blastn prints a subject's first word as its ids and no title ("N/A")
            subjects = [dataclasses.replace(defline_ids(batch.name(i), "", False), title="N/A", all_titles=("N/A",),
                                            taxid=-1) for i in range(len(batch))]
        else:
            names = list(dict.fromkeys(database_names(run.db)))  # (a name given twice: one database, as blastn)
            if not names:
                raise PlusArgError("BLAST Database error: Database name is required.", 2, False)
            for name in names:  # (blastn names the first it does not find)
                try:
                    resolve_database(name)
                except GseekError as err:
                    if "no such gseek index or BLAST database" not in str(err):
                        raise
                    raise PlusArgError(f"BLAST Database error: No alias or index file found for nucleotide database "
                                       f"[{name}] in search path [{os.getcwd()}:{os.environ.get('BLASTDB', '')}:]",
                                       2, False) from None
            if len(names) > 1:
                raise options_error(f"gseek blastn searches one database; -db names {len(names)} (an alias file "
                                    f"listing them, NAME.nal with DBLIST, is one: docs/blast.md)")
            database = names[0]
        if run.query != "-" and _blank(run.query):  # blastn: a warning, an empty output, status 0
            stderr.write("Warning: [blastn] Query is Empty!\n")
            with open_output(run.out):
                pass
            return 0
        devices = [g if g.startswith(("gpu", "cpu")) else f"gpu:{g}" for g in run.gpus] if run.gpus else None
        query, offset = run.query, 0
        if run.query_loc is not None:
            whole: list[int] = []
            numbers: list[int] = []
            query = _pieces(run.query, *run.query_loc, folder, "query", whole, numbers)
            offset = run.query_loc[0] - 1
            frame.update(query_lengths=tuple(whole), query_numbers=tuple(numbers))
        layout = PairwiseLayout(run.num_descriptions, run.num_alignments, run.line_length, run.html)
        blast_files(database, query, run.out, task=run.options.task, outfmt=outfmt,
                    device=None if devices else (run.device or "auto"), devices=devices, threads=run.threads,
                    database=run.db if run.db is not None else "User specified sequence set (Input: "
                    f"{run.subject})", command="gseek blastn", subjects=subjects, query_offset=offset, layout=layout,
                    frame=ReportFrame(**frame), **options)
    except PlusArgError:
        raise
    except IndexFormatError as err:  # a database that cannot be read: one line naming its file (blastn: status 2)
        stderr.write(f"BLAST Database error: {err}\n")
        return 2
    except (GseekError, OSError) as err:
        stderr.write(f"BLAST query/options error: {err}\n" if not isinstance(err, OSError) else
                     f"Error: {err}\n")
        return 1
    return 0


def makeblastdb_main(argv: list[str], stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run ``makeblastdb ARGV``: a gseek database ``OUT.gseek`` (a text-only index, what the BLAST-style search
    reads) from a FASTA file, with the names blastn would print for BLAST+'s database of it."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    try:
        run = parse_makeblastdb(argv)
    except PlusArgError as err:  # (an argument error after the USAGE block, as makeblastdb prints it)
        stderr.write((_MAKEBLASTDB_USAGE + "\n" if err.usage else "") + f"{err}\n")
        return err.exit_code
    if run.action == "version":
        stdout.write("makeblastdb: 2.12.0+ (gseek: a text-only gseek index)\n")
        return 0
    if run.action in ("help", "usage"):
        stdout.write(_MAKEBLASTDB_USAGE)
        return 0
    from gseek.index import Index
    from gseek.index.blastdb import write_subject_ids
    from gseek.index.blastdb_defline import defline_ids
    from gseek.seqio import read_fastx

    try:
        batch = read_fastx(run.fasta)
        taxids = _taxid_map(run.taxid_map) if run.taxid_map else {}
        index = Index.build(batch, parts="text", device="cpu")
        index.header["blastdb"] = {"title": run.title, "made_by": "gseek makeblastdb"}
        path = index.save(f"{run.out}.gseek")
        write_subject_ids(path, [defline_ids(batch.name(i), batch.description(i), run.parse_seqids,
                                             taxids.get(batch.name(i), run.taxid or 0)) for i in range(len(batch))])
    except (GseekError, OSError) as err:
        stderr.write(f"BLAST options error: {err}\n")
        return 1
    stdout.write(f"\n\nBuilding a new DB (gseek)\nNew DB name:   {os.path.abspath(run.out)}\nNew DB title:  "
                 f"{run.title}\nSequence type: Nucleotide\nAdding sequences from FASTA; added {len(batch)} "
                 f"sequences\n\n")
    return 0


def _pieces(path: str, start: int, stop: int, folder: str, what: str, lengths: list[int] | None = None,
            numbers: list[int] | None = None) -> str:
    """A FASTA of bases ``start..stop`` (1-based, inclusive) of each record of ``path``, as ``-query_loc`` and
    ``-subject_loc`` ask (the statistics are the pieces': blastn reports ``qlen`` and the e-values of the piece);
    ``lengths``: each whole record's length appended; ``numbers``: its number in ``path`` (from 1); ``what``:
    ``query`` or ``subject`` (a subject ending before ``start``: blastn's error; no record left: blastn's, status 3)."""
    out = os.path.join(folder, f"{what}_loc.fa")
    source = sys.stdin if path == "-" else open(path, encoding="latin-1")
    kept = 0
    try:
        with open(out, "w", encoding="latin-1") as fh:
            header, seq, number = None, [], 0
            for line in [*source, ">"]:
                if line.startswith(">"):
                    whole = "".join(seq)
                    if header is not None and start - 1 > len(whole) and what == "subject":
                        raise options_error("Invalid from coordinate (greater than sequence length)")
                    if header is not None and start <= len(whole):  # (blastn skips a query the range misses)
                        fh.write(f"{header}\n{whole[start - 1:stop]}\n")
                        kept += 1
                        if lengths is not None:
                            lengths.append(len(whole))
                        if numbers is not None:
                            numbers.append(number)
                    header, seq, number = line.rstrip("\n"), [], number + 1
                elif line.strip():
                    seq.append(line.strip())
    finally:
        if source is not sys.stdin:
            source.close()
    if not kept:  # (blastn: no query left; -subject_loc past every subject: the error above)
        raise PlusArgError("BLAST engine error: Empty CBlastQueryVector", 3, False)
    return out


def _blank(path: str) -> bool:
    """Whether a (plain) query file holds nothing but blanks (blastn: "Query is Empty!"); False for what is not a
    regular file (a pipe, ``<(zcat q.fa.gz)``: read once, by the search)."""
    if not os.path.isfile(path):  # (a missing file: the search's error naming it)
        return False
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 16):
            if chunk.strip():
                return False
    return True


def _taxid_map(path: str) -> dict[str, int]:
    """``-taxid_map``: lines of a sequence id and its taxid (BLAST+'s file), as a dict."""
    out: dict[str, int] = {}
    with open(path, encoding="latin-1") as fh:
        for number, line in enumerate(fh, 1):
            words = line.split()
            if not words:
                continue
            if len(words) < 2 or not words[1].isdigit():
                raise OptionError(f"{path}:{number}: expected 'SEQID TAXID'")
            out[words[0]] = int(words[1])
    return out

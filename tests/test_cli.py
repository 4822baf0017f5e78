"""The command line: help, version, options, and one-line errors."""

from __future__ import annotations

import contextlib
import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from gseek import __version__
from gseek.cli import main
from gseek.errors import FastxError
from gseek.serve.engine import Limits

COMMANDS = ["index", "search", "align", "pipeline", "stats", "demo", "compile", "blastn", "makeblastdb"]


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_version(capsys):
    code, out, _ = run(["--version"], capsys)
    assert code == 0 and out.splitlines()[0] == f"gseek, version {__version__}"  # then the status (test_release)


def test_top_level_help_lists_every_command(capsys):
    code, out, _ = run(["--help"], capsys)
    assert code == 0
    for command in COMMANDS:
        assert f"  {command} " in out
    for option in ("--device", "--threads", "--quiet", "--debug"):
        assert option in out


# --------------------------------------------------------------------------- every option reaches the API
#
# Each row runs a command with the API it calls replaced by a recorder and
# checks what the API received: argv, the API function, and the expected
# arguments (an int: positional, a str: keyword). The values differ from the
# defaults, so an option that is parsed but dropped fails its row. Rows whose
# function is "error" expect a non-zero exit whose message names the text;
# "raises" expects the exception to propagate (--debug; the recorders raise
# a FastxError when given the name "bad"). An expected "stderr" is the whole
# of stderr (--quiet).

INDEX = ["index", "ref.fa"]
SEARCH = ["search", "-x", "idx", "-q", "r.fq"]
ALIGN = ["align", "-q", "q.fa", "-t", "t.fa"]
PAIRS = ALIGN + ["--pairs", "p.tsv"]
PIPE_MAP = ["pipeline", "--queries", "list.txt", "--outdir", "out", "-x", "idx"]
SERVE = ["serve", "-x", "lambda=idx"]
PIPE_ALIGN = ["pipeline", "--queries", "list.txt", "--outdir", "out", "--task", "align", "-t", "t.fa"]

MAP_CASES = [  # (spellings, value args, API keyword, value): search and pipeline --task map
    (("-v", "--mismatches"), ["3"], "mismatches", 3),
    (("-k",), ["4"], "max_alignments", 4),
    (("-a", "--all"), [], "report_all", True),
    (("--norc",), [], "norc", True),
    (("--nofw",), [], "nofw", True),
    (("--no-unal",), [], "no_unal", True),
    (("--xa-limit",), ["5"], "xa_limit", 5),
    (("--cigar-eq",), [], "cigar_eq", True),
    (("--phred64",), [], "phred64", True),
    (("--phred33",), [], "phred64", False),
    (("-5", "--trim5"), ["2"], "trim5", 2),
    (("-3", "--trim3"), ["4"], "trim3", 4),
    (("-s", "--skip"), ["5"], "skip", 5),
    (("-u", "--upto", "--qupto"), ["7"], "upto", 7),
]
SAM_CASES = [  # the SAM/BAM/CRAM output options: search and pipeline --task map
    (("--sort",), [], "sort", True),
    (("--no-sort",), [], "sort", False),
    (("--compression-level",), ["6"], "compression_level", 6),
    (("--reference",), ["ref.fa"], "reference", "ref.fa"),
    (("--rg-id",), ["lane1"], "read_group", {"ID": "lane1"}),
    (("--rg",), ["SM:s 1", "--rg-id", "L", "--rg", "PL:ILLUMINA"], "read_group",
     {"ID": "L", "SM": "s 1", "PL": "ILLUMINA"}),
    (("-R",), [r"@RG\tID:L\tSM:s"], "read_group", {"ID": "L", "SM": "s"}),
]
SAM_ERRORS = [  # (extra argv, message): usage errors of the read group options
    (["--rg", "SM:s"], "--rg SM:s: give the read group's ID with --rg-id"),
    (["--rg-id", "L", "--rg", "SM"], "expected TAG:VALUE"),
    (["-R", "ID:L"], "expected an @RG line"),
    (["-R", r"@RG\tSM:s"], "has no ID field"),
    (["-R", r"@RG\tID:L", "--rg-id", "L"], "-R and --rg-id/--rg both give the read group"),
]
ALIGN_CASES = [  # the same for align and pipeline --task align
    (("--mode",), ["local"], "mode", "local"),
    (("--free-ends",), ["query_start,target_end", "--mode", "semiglobal"], "free_ends", ("query_start", "target_end")),
    (("--match",), ["3"], "match", 3),
    (("--mismatch",), ["-4"], "mismatch", -4),
    (("--gap-open",), ["7"], "gap_open", 7),
    (("--gap-extend",), ["3"], "gap_extend", 3),
    (("--matrix",), ["BLOSUM62"], "matrix", "BLOSUM62"),
    (("--min-score",), ["10"], "min_score", 10),
    (("--min-identity",), ["0.9"], "min_identity", 0.9),
    (("--traceback",), [], "traceback", True),
    (("--cigar-m",), ["--traceback"], "cigar_m", True),  # the API's rule: checked as options are parsed
    (("--outfmt",), ["6 qseqid score"], "outfmt", "6 qseqid score"),
]
BLASTN = SEARCH + ["--task", "blastn"]
BLAST_CASES = [  # the same for search and pipeline --task megablast|blastn (blastn's presets)
    (("--evalue",), ["1e-5"], "evalue", 1e-5),
    (("--outfmt",), ["7 qseqid sseqid"], "outfmt", "7 qseqid sseqid"),
    (("--word-size",), ["16"], "word_size", 16),
    (("--reward",), ["1"], "reward", 1),
    (("--penalty",), ["-4", "--gapopen", "4", "--gapextend", "4"], "penalty", -4),
    (("--gapopen",), ["4"], "gap_open", 4),
    (("--gapextend",), ["4", "--gapopen", "2"], "gap_extend", 4),
    (("--dust",), ["no"], "dust", None),
    (("--soft-masking",), ["false"], "soft_masking", False),
    (("--lcase-masking",), [], "lcase_masking", True),
    (("--strand",), ["plus"], "strand", "plus"),
    (("--max-target-seqs",), ["5"], "max_target_seqs", 5),
    (("--max-hsps",), ["2"], "max_hsps", 2),
    (("--perc-identity",), ["90"], "perc_identity", 90.0),
    (("--qcov-hsp-perc",), ["50"], "qcov_hsp_perc", 50.0),
    (("--xdrop-ungap",), ["10"], "xdrop_ungap", 10.0),
    (("--xdrop-gap",), ["20"], "xdrop_gap", 20.0),
    (("--xdrop-gap-final",), ["50"], "xdrop_gap_final", 50.0),
    (("--ungapped",), [], "ungapped", True),
    (("--db-volume-size",), ["2.5M"], "volume_size", 2_500_000),
]


PAIRED = ["search", "-x", "idx", "-1", "a.fq", "-2", "b.fq"]
PAIR_CASES = [  # search -1/-2 and pipeline --task map
    (("-I", "--minins"), ["20"], "minins", 20),
    (("-X", "--maxins"), ["600"], "maxins", 600),
    (("--fr",), [], "orientation", "fr"),
    (("--rf",), [], "orientation", "rf"),
    (("--ff",), [], "orientation", "ff"),
]


def _spelled(base, call, cases):
    return [(base + [spelling, *args], call, {key: value})
            for spellings, args, key, value in cases for spelling in spellings]


OPTION_CASES = [
    (INDEX + ["--sa-sample", "8"], "build", {0: "ref.fa", "sa_sample": 8}),
    (INDEX + ["--wgram", "9"], "build", {"wgram": 9}),
    (INDEX + ["--parts", "text"], "build", {"parts": "text"}),
    (INDEX + ["--parts", "fm"], "error", "--parts"),
    (INDEX + ["-o", "lam"], "save", {0: Path("lam.gseek")}),
    (INDEX + ["--output", "lam.gseek"], "save", {0: Path("lam.gseek")}),
    (INDEX + ["-p", "3"], "build", {"threads": 3}),
    (INDEX + ["--threads", "3"], "build", {"threads": 3}),
    (INDEX + ["--device", "gpu"], "build", {"device": "cpu"}),  # the build runs on the CPU (documented)
    (INDEX + ["--quiet"], "build", {"progress": False, "stderr": ""}),
    (["index", "bad"], "error", "gseek: error: bad:1: bad record\n"),
    (["index", "bad", "--debug"], "raises", FastxError),
    (["search", "--index", "idx2", "--query", "r.fq", "-q", "r2.fq"], "map_files", {0: "idx2", 1: ["r.fq", "r2.fq"]}),
    (SEARCH + ["--task", "map"], "map_files", {0: "idx"}),
    (SEARCH + ["--task", "megablast"], "blast_files", {0: "idx", 1: ["r.fq"], 2: "-", "task": "megablast",
                                                       "outfmt": "6"}),
    (["search", "--task", "blastn", "-q", "r.fq"], "error", "--task blastn needs -x INDEX"),
    (["search", "--task", "blastn", "-x", "idx"], "error", "--task blastn needs -q FILE"),
    (BLASTN + ["--reward", "3", "--penalty", "-7"], "error", "3/-7 is not supported"),
    (BLASTN + ["--word-size", "3"], "error", "word size must be at least 4"),
    (BLASTN + ["--outfmt", "1"], "error", "outfmt '1' is not supported"),
    (BLASTN + ["--outfmt", "0"], "blast_files", {"outfmt": "0"}),
    (BLASTN + ["--outfmt", "5"], "blast_files", {"outfmt": "5"}),
    (BLASTN + ["--dust", "20 64"], "error", "LEVEL WINDOW LINKER"),
    (BLASTN + ["-v", "1"], "error", "--mismatches: options of --task map"),
    (BLASTN + ["--dust", "10 32 2"], "blast_files", {"dust": (10, 32, 2)}),
    (BLASTN + ["--dust", "yes"], "blast_files", {"dust": (20, 64, 1)}),
    (BLASTN + ["-o", "hits.tsv"], "blast_files", {2: "hits.tsv", "task": "blastn"}),
    (BLASTN + ["--outfmt", "sam", "-o", "hits.sam"], "blast_files", {2: "hits.sam", "outfmt": "sam"}),
    *_spelled(BLASTN, "blast_files", BLAST_CASES),
    (SEARCH[:-2] + ["--task", "dc-megablast", "--template-type", "optimal", "--template-length", "16"] + SEARCH[-2:],
     "blast_files", {"task": "dc-megablast", "template_type": "optimal", "template_length": 16}),
    (SEARCH + ["--all", "--max-hits", "6"], "map_files", {"report_all": True, "max_hits": 6}),
    (["search", "-x", "idx", "-1", "a.fq", "-2", "b.fq"], "map_files",
     {1: ["a.fq"], "mate2": "b.fq", "interleaved": False, "minins": 0, "maxins": 250, "orientation": "fr"}),
    (["search", "-x", "idx", "--interleaved", "ab.fq"], "map_files", {1: ["ab.fq"], "mate2": None, "interleaved": True}),
    (["search", "-x", "idx", "-1", "a.fq"], "error", "paired-end reads need both -1 FILE and -2 FILE"),
    (["search", "-x", "idx", "-1", "a.fq", "-2", "b.fq", "-q", "r.fq"], "error", "not both"),
    (["search", "-x", "idx", "-1", "a.fq", "-2", "b.fq", "--interleaved", "c.fq"], "error",
     "give -1 FILE -2 FILE or --interleaved FILE, not both"),
    (["search", "-x", "idx", "-1", "a.fq", "-2", "b.fq", "--un", "u.fq"], "map_files", {"un": "u.fq", "mate2": "b.fq"}),
    (SEARCH + ["-X", "300"], "error", "--maxins: options of paired-end reads"),
    (PAIRED + ["-I", "300", "-X", "200"], "error", "-I/--minins 300 is larger than -X/--maxins 200"),
    *_spelled(PAIRED, "map_files", PAIR_CASES),
    (BLASTN + ["--fr"], "error", "--task map only"),
    (SEARCH + ["--max-hits", "6"], "error", "--max-hits caps --all"),
    (SEARCH + ["--evalue", "1e-5"], "error", "apply to --task megablast|blastn"),
    (SEARCH + ["--outfmt", "6"], "error", "apply to --task megablast|blastn"),
    (SEARCH + ["-o", "out.sam"], "map_files", {2: "out.sam"}),
    (["search", "-x", "idx", "-U", "u.fq"], "map_files", {1: ["u.fq"]}),
    (SEARCH + ["--un", "un.fq"], "map_files", {"un": "un.fq", "al": None}),
    (SEARCH + ["--al", "al.fa.gz"], "map_files", {"al": "al.fa.gz", "un": None}),
    (SEARCH + ["-u", "0"], "error", "Invalid value for '-u' / '--upto' / '--qupto': 0 is not in the range x>=1"),
    (SEARCH + ["--trim5", "-1"], "error", "Invalid value for '-5' / '--trim5'"),
    (SEARCH + ["--trim3", "x"], "error", "Invalid value for '-3' / '--trim3'"),
    (SEARCH + ["--skip", "1.5"], "error", "Invalid value for '-s' / '--skip'"),
    (SEARCH + ["--output", "out.bam"], "map_files", {2: "out.bam"}),
    (SEARCH + ["--gpus", "0,1"], "map_files", {"devices": ["gpu:0", "gpu:1"], "device": None}),
    (BLASTN + ["--gpus", "1"], "blast_files", {"devices": ["gpu:1"], "device": None}),
    (SEARCH + ["--gpus", "0,0"], "error", "expected distinct GPU ordinals"),
    (["--device", "cpu", *SEARCH, "--gpus", "0"], "error", "--gpus and --device cpu exclude each other"),
    (SEARCH + ["--device", "gpu", "-p", "3"], "get_backend", {0: "gpu", "threads": 3}),
    (["--device", "gpu", "--threads", "2", *SEARCH], "get_backend", {0: "gpu", "threads": 2}),
    (SEARCH + ["--quiet"], "map_files", {"stderr": ""}),
    (["search", "-x", "bad", "-q", "r.fq", "--debug"], "raises", FastxError),
    *_spelled(SEARCH, "map_files", MAP_CASES),
    *_spelled(SEARCH, "map_files", SAM_CASES),
    *[(SEARCH + args, "error", message) for args, message in SAM_ERRORS],
    (SEARCH + ["-p", "3"], "map_files", {"threads": 3}),  # htslib's threads too (BAM/CRAM)
    (ALIGN, "align_files", {0: "t.fa", 1: "q.fa", 2: None}),
    (["align", "--query", "q.fa", "--target", "t.fa", "-o", "a.tsv"], "align_files",
     {0: "t.fa", 1: "q.fa", 2: "a.tsv"}),
    (ALIGN + ["--output", "a.tsv", "-p", "3"], "align_files", {2: "a.tsv", "threads": 3}),
    (ALIGN + ["--device", "gpu"], "get_backend", {0: "gpu"}),
    (PAIRS, "align_pairs_files", {0: "t.fa", 1: None, "queries": "q.fa", "pairs": "p.tsv"}),
    (PAIRS + ["--matrix", "BLOSUM62", "--mode", "local"], "align_pairs_files", {"matrix": "BLOSUM62", "mode": "local"}),
    (PAIRS + ["-o", "a.tsv"], "align_pairs_files", {1: "a.tsv"}),
    (PAIRS + ["--gap-open", "7"], "align_pairs_files", {"gap_open": 7}),
    (["align", "-i", "s.fa", "--all-vs-all"], "align_pairs_files", {0: "s.fa", 1: None}),
    (["align", "--input", "s.fa", "--all-vs-all", "--mode", "local"], "align_pairs_files", {"mode": "local"}),
    (["align", "-i", "s.fa"], "error", "--all-vs-all"),
    (ALIGN + ["--traceback", "--score-only"], "align_files", {"traceback": False}),
    (ALIGN + ["--quiet", "--threads", "2"], "align_files", {"threads": 2, "stderr": ""}),
    (["align", "-q", "q.fa", "-t", "bad", "--debug"], "raises", FastxError),
    *_spelled(ALIGN, "align_files", ALIGN_CASES),
    (PIPE_MAP, "run_pipeline", {0: "list.txt", 1: "idx", 2: "out", 3: "map"}),
    (["pipeline", "--queries", "l2.txt", "--outdir", "o2", "--index", "i2"], "run_pipeline",
     {0: "l2.txt", 1: "i2", 2: "o2"}),
    (PIPE_ALIGN, "run_pipeline", {1: "t.fa", 3: "align"}),
    (["pipeline", "--queries", "l.txt", "--outdir", "o", "--task", "align", "--target", "t2.fa"], "run_pipeline",
     {1: "t2.fa"}),
    (PIPE_MAP + ["--task", "blastn"], "run_pipeline", {1: "idx", 3: "blastn", "outfmt": "6", "database": "idx"}),
    (PIPE_MAP + ["--task", "megablast", "--outfmt", "7 qseqid"], "run_pipeline", {3: "megablast",
                                                                                 "outfmt": "7 qseqid"}),
    (PIPE_MAP + ["--task", "blastn", "--mode", "local"], "error", "--mode: not an option of --task blastn"),
    (PIPE_MAP + ["--evalue", "1"], "error", "--evalue: not an option of --task map"),
    (PIPE_MAP + ["--task", "blastn", "--reward", "3", "--penalty", "-7"], "error", "3/-7 is not supported"),
    *_spelled(PIPE_MAP + ["--task", "blastn"], "run_pipeline", [c for c in BLAST_CASES if c[0] != ("--outfmt",)]),
    (PIPE_MAP + ["--task", "dc-megablast", "--template-type", "coding_and_optimal", "--template-length", "21"],
     "run_pipeline", {3: "dc-megablast", "template_type": "coding_and_optimal", "template_length": 21}),
    (PIPE_MAP + ["--gpus", "0,1"], "run_pipeline", {"gpus": [0, 1]}),
    (PIPE_MAP + ["--task", "blastn", "--gpus", "0,1", "--split", "database"], "run_pipeline",
     {"gpus": [0, 1], "split": "database"}),
    (PIPE_MAP + ["--split", "database"], "error", "--split database: for --task megablast|blastn"),
    (PIPE_MAP + ["--resume"], "run_pipeline", {"resume": True}),
    (PIPE_MAP + ["--workers", "0"], "run_pipeline", {"workers": 0}),
    (PIPE_MAP + ["--job-mb", "0.5"], "run_pipeline", {"job_bytes": 1 << 19}),
    (PIPE_MAP + ["--quiet"], "run_pipeline", {"quiet": True, "progress": False}),
    (PIPE_MAP + ["--device", "gpu", "-p", "3"], "run_pipeline", {"device": ("gpu", 3), "threads": 3}),
    (PIPE_MAP + ["--threads", "2"], "run_pipeline", {"device": ("auto", 2), "threads": 2}),
    (["pipeline", "--queries", "bad", "--outdir", "out", "-x", "idx", "--debug"], "raises", FastxError),
    (PIPE_MAP + ["--all", "--max-hits", "6"], "run_pipeline", {"max_hits": 6}),
    *_spelled(PIPE_MAP, "run_pipeline", PAIR_CASES),
    (PIPE_MAP + ["--interleaved"], "run_pipeline", {"interleaved": True}),
    (PIPE_ALIGN + ["--interleaved"], "error", "--interleaved: not an option of --task align"),
    (PIPE_ALIGN + ["-X", "9"], "error", "--maxins: not an option of --task align"),
    (PIPE_MAP + ["--mode", "local"], "error", "--mode: not an option of --task map"),
    (PIPE_ALIGN + ["--mismatches", "1"], "error", "--mismatches: not an option of --task align"),
    (PIPE_ALIGN + ["--trim5", "1", "--phred64"], "error",
     "--phred64/--phred33, --trim5: not an option of --task align"),
    *_spelled(PIPE_MAP, "run_pipeline", MAP_CASES),
    *_spelled(PIPE_MAP, "run_pipeline", SAM_CASES),
    *[(PIPE_MAP + args, "error", message) for args, message in SAM_ERRORS],
    (PIPE_ALIGN + ["--rg-id", "L"], "error", "--rg-id: not an option of --task align"),
    (PIPE_ALIGN + ["--no-sort"], "error", "--sort/--no-sort: not an option of --task align"),
    (PIPE_ALIGN + ["--compression-level", "3"], "error", "--compression-level: not an option of --task align"),
    (PIPE_MAP + ["--compression-level", "10"], "error", "10 is not in the range 0<=x<=9"),
    (SEARCH + ["--xa-limit", "1" + "0" * 20], "error", "is not in the range 0<=x<=2147483647"),
    (BLASTN + ["--db-volume-size", "lots"], "error", "'lots' is not a number of bases"),
    (BLASTN + ["--db-volume-size", "0"], "error", "'0': a volume holds at least 1 base"),
    (SEARCH + ["--db-volume-size", "1M"], "error", "--db-volume-size: these apply to --task megablast|blastn"),
    (PIPE_ALIGN + ["--traceback", "--score-only"], "run_pipeline", {"traceback": False}),
    *_spelled(PIPE_ALIGN, "run_pipeline", ALIGN_CASES),
    (["stats", "a.fa", "b.fq"], "FastxReader", {0: "b.fq", "alphabet": "dna"}),
    (["stats", "a.fa", "--protein"], "FastxReader", {"alphabet": "protein"}),
    (["stats", "a.fa", "--device", "gpu", "-p", "3", "--threads", "2", "--quiet"], "FastxReader",
     {0: "a.fa", "stderr": ""}),  # runs on the CPU and draws nothing: accepted, no effect
    (["stats", "bad", "--debug"], "raises", FastxError),
    (["--debug", "stats", "bad"], "raises", FastxError),
    (["demo"], "run_demo", {1: Path("gseek-demo")}),
    (["demo", "-o", "d1"], "run_demo", {1: Path("d1")}),
    (["demo", "--outdir", "d2", "--device", "gpu"], "run_demo", {0: ("gpu", 0), 1: Path("d2")}),
    (["demo", "-p", "3", "--quiet"], "run_demo", {0: ("auto", 3), "stderr": ""}),
    (["demo", "--threads", "2"], "run_demo", {0: ("auto", 2)}),
    (["demo", "-o", "bad", "--debug"], "raises", FastxError),
    (ALIGN + ["--scheduler", "tcp://h:8786"], "align_files", {"client": ("tcp://h:8786", None), "device": "auto"}),
    (["align", "-i", "s.fa", "--all-vs-all", "--local-cluster", "2", "-p", "3"], "align_pairs_files",
     {"client": (None, 2), "threads": 3}),
    (PAIRS + ["--scheduler", "tcp://h:8786", "--device", "cpu"], "align_pairs_files",
     {"client": ("tcp://h:8786", None), "device": "cpu"}),
    (ALIGN + ["--scheduler", "tcp://h:8786", "--local-cluster", "2"], "error", "exclude each other"),
    (PIPE_MAP + ["--scheduler", "tcp://h:8786", "--device", "gpu"], "run_pipeline",
     {"client": ("tcp://h:8786", None), "device": "gpu"}),
    (PIPE_ALIGN + ["--local-cluster", "2", "-p", "1"], "run_pipeline", {"client": (None, 2), "threads": 1}),
    (PIPE_MAP + ["--local-cluster", "0"], "error", "--local-cluster"),
    (PIPE_MAP + ["--gpus", "0", "--scheduler", "tcp://h:8786"], "error", "--gpus"),
    (["compile"], "compile_kernels", {0: ("auto", 0), 1: ("parse", "index", "map", "align", "blast"), 2: 1}),
    (["compile", "--only", "map,align", "--device", "gpu"], "compile_kernels", {0: ("gpu", 0), 1: ("map", "align")}),
    (["compile", "--processes", "3", "-p", "2"], "compile_kernels", {0: ("auto", 2), 2: 3}),
    (["compile", "--only", "blast"], "compile_kernels", {1: ("blast",)}),
    (["compile", "--only", "tblastx"], "error", "--only"),
    (["compile", "--only", "tblastx", "--quiet", "--threads", "1", "--debug"], "error", "--only"),
    (SEARCH + ["--server", "http://h:1", "--task", "megablast", "--evalue", "1e-5"], "search_on_server",
     {0: "http://h:1", 1: "idx", 2: ("r.fq",), 3: "megablast"}),
    (SEARCH + ["--server", "http://h:1", "--gpus", "0"], "error", "not with --server"),
    (SEARCH + ["--server", "http://h:1", "--task", "blastn", "-v", "1"], "error", "--mismatches: not with --server"),
    (["serve", "-x", "a=p", "--database", "q"], "serve", {0: ["a=p", "q"], 1: "127.0.0.1", 2: 8000,
                                                          "device": "auto", "threads": 0}),
    (SERVE + ["--host", "::1", "--port", "0"], "serve", {1: "::1", 2: 0, "insecure": False}),
    (SERVE + ["--host", "0.0.0.0", "--insecure"], "serve", {1: "0.0.0.0", "insecure": True}),
    (SERVE + ["--host", "0.0.0.0"], "error", "--token-file FILE (bearer token) or --insecure"),
    (SERVE + ["--token-file", "no-such-token"], "error", "--token-file no-such-token: cannot read"),
    (SERVE + ["--device", "cpu", "-p", "3", "--quiet"], "serve", {"device": "cpu", "threads": 3}),
    # workers None: serve's default_workers (two worker processes a GPU)
    (SERVE + ["--gpus", "0,1"], "serve", {"devices": ["gpu:0", "gpu:1"], "workers": None}),
    (SERVE + ["--workers", "1"], "serve", {"devices": None, "workers": 1}),
    (SERVE + ["--gpus", "1", "--workers", "3"], "serve", {"devices": ["gpu:1"], "workers": 3}),
    (SERVE + ["--workers", "2"], "serve", {"devices": None, "workers": 2}),
    (SERVE + ["--gpus", "0,0"], "error", "expected distinct GPU ordinals"),
    (SERVE + ["--workers", "0"], "serve", {"devices": None, "workers": 0}),
    (SERVE + ["--workers", "-1"], "error", "--workers"),
    (SERVE + ["--workers", "17"], "error", "--workers"),
    (["--device", "cpu", *SERVE, "--gpus", "0"], "error", "--gpus and --device cpu exclude each other"),
    (SERVE + ["--threads", "2", "--debug"], "serve", {"threads": 2}),
    (SERVE + ["--max-body", "0"], "error", "limit max-body must be > 0"),
    *[(SERVE + [f"--{name.replace('_', '-')}", str(value)], "serve", {"limits": Limits(**{name: value})})
      for name, value in [("max_body", 10), ("max_queries", 11), ("max_bases", 12), ("max_result", 13),
                          ("timeout", 1.5), ("queue", 2), ("drain", 3.0), ("window", 0.0), ("batch_queries", 5),
                          ("batch_bases", 6), ("jobs", 7), ("job_ttl", 8.0), ("job_bytes", 9),
                          ("stream_chunk", 14)]],
]


@pytest.fixture
def api(monkeypatch):
    """The API functions the commands call, replaced by recorders: name -> (args, kwargs) of the last call."""
    import gseek.backend
    import gseek.demo
    import gseek.precompile
    import gseek.pipeline
    import gseek.pipeline.cluster
    import gseek.pipeline.tasks
    import gseek.seqio
    import gseek.serve.client
    import gseek.serve.server
    from gseek.index import Index

    # the modules that bind ``get_backend`` at import, imported before it is replaced: one a command first
    # imports below (the lazy names of gseek.pipeline.tasks) would keep the fake for the rest of the session
    for module in ("gseek.align.aligner", "gseek.blast.device_rounds", "gseek.blast.searcher", "gseek.blast.shards",
                   "gseek.mapper.mapper", "gseek.serve.slots", "gseek.index.core", "gseek.pipeline.tasks.align",
                   "gseek.pipeline.tasks.blast", "gseek.pipeline.tasks.map"):
        importlib.import_module(module)
    gseek.get_backend  # noqa: B018 (gseek's lazy name, bound on first use)
    calls: dict[str, tuple] = {}

    def recorder(name, result=None):
        def fake(*args, **kwargs):
            calls[name] = (args, kwargs)
            if "bad" in map(str, [*args, *kwargs.values()]):
                raise FastxError("bad", 1, "bad record")
            return result(*args, **kwargs) if callable(result) else result
        return fake

    class Reader(list):
        format = "fasta"

    counts = dict(reads=0, mapped=0, unmapped=0, too_long=0, too_short=0, records=0, alignments=0, device="fake")
    summary = SimpleNamespace(count=lambda status: 0, seconds=0.0, path="summary.tsv", exit_status=0)
    fakes = [
        (Index, "build", recorder("build", SimpleNamespace(save=recorder("save"), summary=lambda: "index"))),
        (gseek.backend, "get_backend", recorder("get_backend", lambda device, threads=0: (device, threads))),
        (gseek.pipeline.tasks, "warm_host", lambda task="map": SimpleNamespace(join=lambda: None)),
        (gseek.pipeline, "map_files", recorder("map_files", counts)),
        (gseek.pipeline, "align_files", recorder("align_files", dict(rows=0, device="fake"))),
        (gseek.pipeline, "align_pairs_files", recorder("align_pairs_files", dict(rows=0, device="fake"))),
        (gseek.pipeline, "run_pipeline", recorder("run_pipeline", summary)),
        (gseek.pipeline, "blast_files", recorder("blast_files", dict(queries=0, hsps=0, with_hits=0,
                                                                          device="fake"))),
        (gseek.seqio, "read_fastx", lambda path, alphabet: (path, alphabet)),
        (gseek.seqio, "FastxReader", recorder("FastxReader", Reader())),
        (gseek.demo, "run_demo", recorder("run_demo", [])),
        (gseek.precompile, "compile_kernels", recorder("compile_kernels", {})),
        (gseek.serve.server, "serve", recorder("serve")),
        (gseek.serve.client, "search_on_server", recorder("search_on_server")),
        (gseek.pipeline.cluster, "cluster_client",  # the client the API gets: (scheduler, local workers)
         lambda scheduler=None, local_cluster=None: contextlib.nullcontext((scheduler, local_cluster))),
    ]
    for owner, name, fake in fakes:
        monkeypatch.setattr(owner, name, fake)
    yield calls
    kept = [m for m, module in list(sys.modules.items()) if m.startswith("gseek") and m != "gseek.backend"
            and getattr(module, "get_backend", None) is gseek.backend.get_backend]  # (the fake, until undone)
    assert not kept, f"imported while get_backend was replaced (add to the list above): {kept}"


def _fields(kwargs: dict) -> dict:
    """The API call's keywords with each options value (gseek.options) laid out as its fields, checked to be
    the value's class (the read group as the header dict the cases name)."""
    from gseek.align.options import AlignOptions
    from gseek.blast.options import BlastOptions
    from gseek.options import MapOptions, PairOptions, ReadOptions, SamOptions

    out = dict(kwargs)
    for name, cls in (("options", MapOptions), ("read_options", ReadOptions), ("sam_options", SamOptions),
                      ("pair_options", PairOptions)):
        value = out.pop(name, None)
        if value is None:
            continue
        if isinstance(value, (BlastOptions, AlignOptions)):
            cls = type(value)
        assert type(value) is cls, (name, value)
        fields = {f: getattr(value, f) for f in cls.field_names()}
        if cls is SamOptions and fields["read_group"] is not None:
            fields["read_group"] = dict(fields["read_group"])
        out.update(fields)
    return out


@pytest.mark.parametrize("argv, call, expected", OPTION_CASES, ids=[" ".join(c[0]) for c in OPTION_CASES])
def test_each_option_reaches_the_api(api, capsys, argv, call, expected):
    if call == "raises":
        with pytest.raises(expected):
            main(argv)
        return
    code, _, err = run(argv, capsys)
    if call == "error":
        assert code != 0 and expected in err
        return
    assert code == 0, err
    args, kwargs = api[call]
    kwargs = _fields(kwargs)
    expected = dict(expected)
    if "stderr" in expected:
        assert err == expected.pop("stderr")
    for key, value in expected.items():
        got = args[key] if isinstance(key, int) else kwargs[key]
        assert got == value and type(got) is type(value), (key, got, value)


def test_every_documented_option_has_a_case(capsys):
    """Every spelling of every option in each command's --help is run by a row of OPTION_CASES."""
    from gseek.cli import cli

    for name, command in cli.commands.items():
        code, out, _ = run([name, "--help"], capsys)
        assert code == 0
        argv = [a for case in OPTION_CASES if next(a for a in case[0] if a in cli.commands) == name
                for a in case[0]]
        for param in command.params:
            for spelling in param.opts + param.secondary_opts:
                if spelling.startswith("-") and spelling not in ("-h", "--help"):
                    assert spelling in out, f"{name} {spelling}: not in --help"
                    assert spelling in argv, f"{name} {spelling}: no case in OPTION_CASES"


@pytest.mark.parametrize("command", [["search", "--task", "blastn", "-x", "nowhere", "-q", "r.fa"],
                                     ["pipeline", "--queries", "l.txt", "-x", "nowhere", "--outdir", "o",
                                      "--task", "megablast"]])
def test_blast_on_a_missing_index_says_so_in_one_line(tmp_path, monkeypatch, capsys, command):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r.fa").write_text(">q\nACGT\n")
    (tmp_path / "l.txt").write_text("r.fa\n")
    code, out, err = run(command, capsys)
    assert code != 0 and out == ""
    assert err.count("\n") == 1 and err.startswith("gseek: error: ") and "nowhere" in err
    assert not (tmp_path / "o" / "r.tsv").exists()


def test_bad_option_value_is_a_usage_error(capsys):
    code, _, err = run(["search", "-x", "i", "-q", "r.fq", "--mismatches", "9"], capsys)
    assert code == 2 and "--mismatches" in err


def test_unknown_device_is_rejected(capsys):
    code, _, err = run(["--device", "tpu", "stats", "x.fa"], capsys)
    assert code == 2 and "tpu" in err


def test_stats_on_fasta_and_fastq(tmp_path, capsys):
    fa = tmp_path / "a.fa"
    fa.write_text(">a\nACGTNacgt\n>b\nAC\n")
    fq = tmp_path / "r.fq"
    fq.write_text("@r\nACGT\n+\nIIII\n")
    code, out, _ = run(["stats", str(fa), str(fq)], capsys)
    assert code == 0
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows[0][:3] == ["file", "format", "records"]
    assert rows[1][1:] == ["fasta", "2", "11", "2", "5.5", "9", "1", "4"]
    assert rows[2][1:] == ["fastq", "1", "4", "4", "4.0", "4", "0", "0"]


def test_malformed_fastq_gives_one_line_with_file_and_line(tmp_path, capsys):
    fq = tmp_path / "bad.fq"
    fq.write_text("@r1\nACGT\n+\nIIII\n@r2\nACGT\n+\nIII\n")
    code, out, err = run(["stats", str(fq)], capsys)
    assert code == 1
    assert err == f"gseek: error: {fq}:8: truncated record: quality length 3 != sequence length 4\n"


def test_debug_shows_the_traceback(tmp_path):
    fq = tmp_path / "bad.fq"
    fq.write_text("@r1\nACGT\n+\nIII\n")
    proc = subprocess.run([sys.executable, "-m", "gseek", "--debug", "stats", str(fq)], capture_output=True, text=True,
                          cwd=tmp_path)
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr and "FastxError" in proc.stderr


def test_missing_file_is_one_line(tmp_path, capsys):
    code, _, err = run(["stats", str(tmp_path / "none.fq")], capsys)
    assert code == 1 and err.strip() == f"gseek: error: {tmp_path / 'none.fq'}: cannot open: No such file or directory"


def test_options_after_the_command(tmp_path, capsys):
    fa = tmp_path / "a.fa"
    fa.write_text(">a\nAC\n")
    code, out, err = run(["stats", "--device", "cpu", "-p", "1", "--quiet", str(fa)], capsys)
    assert code == 0 and err == ""


def test_demo_maps_the_lambda_reads(tmp_path, capsys):
    import pysam

    from gseek.datasets import lambda_truth, read_truth

    code, out, err = run(["--device", "cpu", "demo", "-o", str(tmp_path / "demo")], capsys)
    assert code == 0, err
    assert "backend           cpu" in out
    placed = sum(1 for t in read_truth(lambda_truth()) if t.contig is not None)
    assert f"truth             {placed:,} of {placed:,} simulated reads reported at their true origin" in out
    # the demo maps with -v 3, gseek search defaults to -v 2: the summary says both
    from gseek.cli import cli
    from gseek.mapper import DEFAULT_MISMATCHES

    (v,) = [p for p in cli.commands["search"].params if p.name == "mismatches"]
    assert v.default == DEFAULT_MISMATCHES == 2
    (line,) = [line for line in out.splitlines() if line.startswith("mapped")]
    assert line.startswith("mapped (-v 3)     ") and line.endswith("(gseek search -v 3; its default is -v 2)")
    sam = tmp_path / "demo" / "lambda_reads.sam"
    pysam.quickcheck(str(sam))  # samtools quickcheck through pysam; raises on a bad file
    with pysam.AlignmentFile(str(sam)) as fh:
        header = fh.header.to_dict()
        records = list(fh)
    assert header["SQ"] == [{"SN": "gi|9626243|ref|NC_001416.1|", "LN": 48502}]
    assert header["PG"][0]["ID"] == "gseek"
    assert header["PG"][0]["CL"] == f"gseek --device cpu demo -o {tmp_path / 'demo'}"
    assert len(records) == 2000
    assert sum(not r.is_unmapped for r in records) == placed
    assert all(r.get_tag("NM") <= 3 for r in records if not r.is_unmapped)


def test_index_builds_a_loadable_index(tmp_path, capsys):
    from gseek.index import Index

    ref = tmp_path / "ref.fa"
    ref.write_text(">chr1 one\nACGTACGTNNACGTTTGA\n>chr2\nTTACGTA\n")
    code, out, err = run(["index", str(ref), "--sa-sample", "4", "--wgram", "3"], capsys)
    assert code == 0, err
    assert "contigs 2" in err and "bytes/base" in err and "ref.gseek written" in err
    idx = Index.load(tmp_path / "ref.gseek", device="cpu")
    assert list(idx.contigs.names) == ["chr1", "chr2"]
    assert idx.sa_sample == 4 and idx.wgram == 3
    assert idx.count(["ACGT", "TTTGA", "GTNN"]).tolist() == [4, 1, 0]


def test_index_output_prefix_and_no_wgram(tmp_path, capsys):
    from gseek.index import Index

    ref = tmp_path / "ref.fasta.gz"
    import gzip

    ref.write_bytes(gzip.compress(b">c\nACGTTGCA\n"))
    code, _, err = run(["--quiet", "index", str(ref), "-o", str(tmp_path / "out" / "x"), "--wgram", "0"], capsys)
    assert code == 0 and err == ""
    idx = Index.load(tmp_path / "out" / "x.gseek", device="cpu")
    assert idx.wgram == 0
    assert idx.count("TTGC").tolist() == [1]


def test_index_default_wgram_follows_the_reference_length_and_maps_the_same(tmp_path, capsys):
    """issue 37: ``gseek index`` of the 48.5 kb lambda wrote a 128 MiB table (w = 12 for any reference);
    the default now follows the length (w = 7: 128 KiB), and the SAM is the one w = 12 gives."""
    from gseek.datasets import lambda_genome, lambda_reads
    from gseek.index import Index

    sams = {}
    for name, extra in (("auto", []), ("w12", ["--wgram", "12"])):
        assert run(["--quiet", "index", str(lambda_genome()), "-o", str(tmp_path / name), *extra], capsys)[0] == 0
        out = tmp_path / f"{name}.sam"
        code, _, err = run(["--quiet", "--device", "cpu", "search", "-x", str(tmp_path / f"{name}.gseek"),
                            "-q", str(lambda_reads()), "-v", "3", "-o", str(out)], capsys)
        assert code == 0, err
        sams[name] = [line for line in out.read_text().splitlines() if not line.startswith("@PG")]
    assert Index.load(tmp_path / "auto.gseek", device="cpu").wgram == 7
    assert (tmp_path / "auto.gseek" / "wgram.npy").stat().st_size < 200_000
    assert (tmp_path / "w12.gseek" / "wgram.npy").stat().st_size > 128 << 20
    assert sams["auto"] == sams["w12"] and len(sams["auto"]) > 1000


def test_index_of_bad_fasta_is_one_line(tmp_path, capsys):
    ref = tmp_path / "bad.fa"
    ref.write_text(">a\nACGT\n>a\nACGT\n")
    code, _, err = run(["index", str(ref)], capsys)
    assert code == 1 and err.count("\n") == 1 and "bad.fa" in err and "duplicate" in err
    assert not (tmp_path / "bad.gseek").exists()


# ------------------------------------------------------------------ search --task map

REPEAT = "CCGATTAGCATGCAATCGTA"  # 20 bp, once in each contig
REF = (f">chr1 first\nGATTACAGATTACATTTTCCCCGGGGAAAACGTACGTTGCAGGTCCATTGACCA{REPEAT}GGAT\n"
       f">chr2\nTTGACCAGGATCCATAGCAAC{REPEAT}TT\n")


@pytest.fixture
def mapped(tmp_path, capsys):
    """An index of two contigs and a FASTQ of reads with known placements."""
    ref = tmp_path / "ref.fa"
    ref.write_text(REF)
    assert main(["--quiet", "index", str(ref), "--wgram", "4", "--sa-sample", "4"]) == 0
    reads = tmp_path / "r.fq"
    reads.write_text(
        "@exact\nACATTTTCCCCGGGGAAAAC\n+\nIIIIIIIIIIIIIIIIIIII\n"  # chr1:11, forward, 0 mismatches
        "@two_mm\nACATTTTCCACGGGGAAAGC\n+\nIIIIIIIIIIIIIIIIIIII\n"  # chr1:11, 2 mismatches
        "@reverse\nGTTGCTATGGATCCTGGTCA\n+\nABCDEFGHIJKLMNOPQRST\n"  # chr2:1, reverse strand
        "@repeat\nTTGACCAGG\n+\nIIIIIIIII\n"  # too short: 9 bp
    )
    capsys.readouterr()
    return tmp_path


def _sam(capsys, args):
    code, out, err = run(args, capsys)
    assert code == 0, err
    return [line.split("\t") for line in out.splitlines() if not line.startswith("@")], out


def test_search_maps_to_stdout_by_default(mapped, capsys):
    (mapped / "r.fq").write_text("".join((mapped / "r.fq").read_text().splitlines(True)[:12]))
    rows, out = _sam(capsys, ["--quiet", "search", "-x", str(mapped / "ref"), "-q", str(mapped / "r.fq"),
                              "-v", "0", "--device", "cpu", "-p", "1"])
    assert "@SQ\tSN:chr1\tLN:78" in out and "@SQ\tSN:chr2\tLN:43" in out and "@PG" in out
    by_name = {r[0]: r for r in rows}
    assert by_name["exact"][1:4] == ["0", "chr1", "12"] and "NM:i:0" in by_name["exact"]
    assert by_name["two_mm"][1] == "4"  # 2 mismatches > -v 0: unmapped
    assert by_name["reverse"][1:4] == ["16", "chr2", "2"]
    assert by_name["reverse"][9] == "GTTGCTATGGATCCTGGTCA"[::-1].translate(str.maketrans("ACGT", "TGCA"))
    assert by_name["reverse"][10] == "ABCDEFGHIJKLMNOPQRST"[::-1]


def _three_reads(mapped):
    (mapped / "r.fq").write_text("".join((mapped / "r.fq").read_text().splitlines(True)[:12]))
    return ["--quiet", "search", "-x", str(mapped / "ref"), "-q", str(mapped / "r.fq")]


def test_search_mismatches_option(mapped, capsys):
    rows, _ = _sam(capsys, _three_reads(mapped) + ["-v", "3"])
    two = next(r for r in rows if r[0] == "two_mm")
    assert two[1:4] == ["0", "chr1", "12"] and "NM:i:2" in two and "MD:Z:9C8A1" in two


@pytest.mark.parametrize("tty, quiet, paired", [(True, False, False), (True, False, True), (True, True, False),
                                                  (False, False, False)])
def test_search_progress_bar_only_on_a_terminal(mapped, capsys, monkeypatch, tty, quiet, paired):
    """On a terminal's stderr (a fake TTY here) and without --quiet, gseek search
    draws a tqdm bar counting the reads (pairs) as written, with their rate;
    none in a log or with --quiet. The SAM is the same either way."""
    import tqdm

    bars = []

    class Recorded(tqdm.tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            bars.append(self)

    monkeypatch.setattr(tqdm, "tqdm", Recorded)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty)
    reads = ["-q", str(mapped / "r.fq")]
    if paired:
        reads = ["-1", str(mapped / "r.fq"), "-2", str(mapped / "r.fq")]
    args = ["search", "-x", str(mapped / "ref"), *reads, "-v", "1", "--device", "cpu", "-o", str(mapped / "o.sam")]
    code, out, err = run((["--quiet"] if quiet else []) + args, capsys)
    assert code == 0, err
    if not tty or quiet:
        assert bars == [] and "gseek search:" not in err
        return
    (bar,) = bars
    unit = " pairs" if paired else " reads"
    assert (bar.desc, bar.unit, bar.n) == ("gseek search", unit, 4)
    drawn = err.rsplit("gseek search:", 1)[-1]  # the bar as closed, before the summary lines
    assert f"4.00{unit}" in drawn and (f"{unit}/s]" in drawn or f"s/{unit}]" in drawn)  # tqdm: a rate < 1 inverted
    assert err.index("gseek search:") < err.index("# reads processed")


def test_search_norc_and_nofw(mapped, capsys):
    rows, _ = _sam(capsys, _three_reads(mapped) + ["--norc"])
    assert next(r for r in rows if r[0] == "reverse")[1] == "4"
    rows, _ = _sam(capsys, _three_reads(mapped) + ["--nofw", "-v", "0"])
    assert next(r for r in rows if r[0] == "exact")[1] == "4"
    assert next(r for r in rows if r[0] == "reverse")[1] == "16"


def test_search_no_unal_and_cigar_eq(mapped, capsys):
    rows, _ = _sam(capsys, _three_reads(mapped) + ["-v", "0", "--no-unal", "--cigar-eq"])
    assert sorted(r[0] for r in rows) == ["exact", "reverse"]
    assert next(r for r in rows if r[0] == "exact")[5] == "20="


def test_search_too_short_reads_are_unmapped_with_a_reason(mapped, capsys):
    reads = mapped / "short.fq"
    reads.write_text(f"@rep\n{REPEAT}\n+\n{'I' * 20}\n@tiny\nTTGACCA\n+\nIIIIIII\n@empty\n\n+\n\n")
    code, out, err = run(["search", "-x", str(mapped / "ref"), "-q", str(reads), "--device", "cpu"], capsys)
    assert code == 0, err
    rows = {line.split("\t")[0]: line.split("\t") for line in out.splitlines() if not line.startswith("@")}
    assert rows["rep"][1] in ("0", "16")
    assert rows["tiny"][1:3] == ["4", "*"] and rows["tiny"][9:] == ["TTGACCA", "IIIIIII", "YF:Z:TOO_SHORT"]
    assert rows["empty"][1:3] == ["4", "*"] and rows["empty"][9:] == ["*", "*", "YF:Z:TOO_SHORT"]
    assert "3 reads, 1 mapped, 2 unmapped (0 too long, 2 too short)" in err


def test_search_all_k_and_max_hits(mapped, capsys):
    reads = mapped / "rep.fq"
    reads.write_text(f"@rep\n{REPEAT}\n+\n{'I' * 20}\n")
    base = ["--quiet", "search", "-x", str(mapped / "ref"), "-q", str(reads), "-v", "0"]
    rows, _ = _sam(capsys, base + ["--all"])
    assert sorted((r[2], r[3]) for r in rows) == [("chr1", "55"), ("chr2", "22")]
    rows, _ = _sam(capsys, base + ["-k", "1"])
    assert len(rows) == 1
    rows, _ = _sam(capsys, base + ["--all", "--max-hits", "1"])
    assert len(rows) == 1 and "ZH:i:2" in rows[0]
    rows, _ = _sam(capsys, base)  # best: one record, two best placements, low MAPQ
    assert len(rows) == 1 and "X0:i:2" in rows[0] and int(rows[0][4]) < 10


def test_search_xa_limit(mapped, capsys):
    reads = mapped / "rep.fq"
    reads.write_text(f"@rep\n{REPEAT}\n+\n{'I' * 20}\n")
    base = ["--quiet", "search", "-x", str(mapped / "ref"), "-q", str(reads), "-v", "0"]
    rows, _ = _sam(capsys, base)
    xa = [t for t in rows[0] if t.startswith("XA:Z:")]
    assert len(xa) == 1 and xa[0].count(";") == 1  # the other copy
    rows, _ = _sam(capsys, base + ["--xa-limit", "0"])
    assert not any(t.startswith("XA:Z:") for t in rows[0])


def test_search_bam_output(mapped, capsys):
    import pysam

    out = mapped / "out.bam"
    code, _, err = run(_three_reads(mapped) + ["-o", str(out)], capsys)
    assert code == 0, err
    pysam.quickcheck(str(out))
    with pysam.AlignmentFile(str(out)) as fh:
        assert sorted(r.query_name for r in fh) == ["exact", "reverse", "two_mm"]


def test_search_sorted_bam_cram_and_read_group(mapped, capsys):
    """``-o x.bam``: sorted, indexed, ``@PG CL`` the command line; ``-o x.cram
    --reference``: the same records; ``-R``: ``@RG`` and ``RG:Z`` on each record."""
    import shlex

    import pysam

    args = _three_reads(mapped) + ["-R", r"@RG\tID:L1\tSM:s"]
    code, _, err = run(args + ["-o", str(mapped / "x.bam"), "-p", "2"], capsys)
    assert code == 0, err
    assert (mapped / "x.bam.bai").exists()
    with pysam.AlignmentFile(str(mapped / "x.bam")) as bam:
        header = bam.header.to_dict()
        assert header["HD"]["SO"] == "coordinate" and header["RG"] == [{"ID": "L1", "SM": "s"}]
        assert header["PG"][0]["CL"] == shlex.join(["gseek", *args, "-o", str(mapped / "x.bam"), "-p", "2"])
        records = [r.to_string() for r in bam]
        assert [(r.query_name, r.get_tag("RG")) for r in bam.fetch("chr1")] == [("exact", "L1"), ("two_mm", "L1")]
    code, _, err = run(args + ["-o", str(mapped / "x.cram"), "--reference", str(mapped / "ref.fa")], capsys)
    assert code == 0, err
    with pysam.AlignmentFile(str(mapped / "x.cram"), reference_filename=str(mapped / "ref.fa")) as cram:
        assert [r.to_string().split("\t")[:11] for r in cram] == [r.split("\t")[:11] for r in records]
    assert (mapped / "x.cram.crai").exists()


@pytest.mark.parametrize("name, extra, message", [
    ("x.txt", [], "x.txt: not a SAM output name"),
    ("x.bam.tmp", [], "not a SAM output name"),
    ("x.cram", [], "x.cram: CRAM output is encoded against the reference; give --reference FASTA"),
    ("x.cram", ["--reference", "missing.fa"], "missing.fa: the CRAM reference FASTA is missing"),
    ("x.sam", ["--sort"], "x.sam: --sort applies to .bam and .cram output files"),
])
def test_search_refuses_an_output_it_cannot_write_and_writes_nothing(mapped, capsys, name, extra, message):
    before = sorted(p.name for p in mapped.iterdir())
    code, _, err = run(_three_reads(mapped) + ["-o", str(mapped / name), *extra], capsys)
    assert code == 1 and err.count("\n") == 1 and message in err, err
    assert sorted(p.name for p in mapped.iterdir()) == before


@pytest.mark.parametrize("args, message", [
    (["--max-hits", "2"], "--max-hits caps --all"),
    (["-x", None], "needs -x INDEX"),
])
def test_search_usage_errors(mapped, capsys, args, message):
    base = _three_reads(mapped)
    if args == ["-x", None]:
        base = ["search", "-q", str(mapped / "r.fq")]
        args = []
    code, _, err = run(base + args, capsys)
    assert code == 2 and message in err


def test_search_missing_index_is_one_line(tmp_path, capsys):
    reads = tmp_path / "r.fq"
    reads.write_text("@r\nACGTACGTACGTACGTACGT\n+\nIIIIIIIIIIIIIIIIIIII\n")
    code, _, err = run(["search", "-x", str(tmp_path / "nope"), "-q", str(reads)], capsys)
    assert code == 1 and err.count("\n") == 1 and "nope" in err


# ------------------------------------------------------------------ align

SEQS = ">a\nACGTACGTTAGC\n>b\nACGTACTTAGC\n>c\nTTTTGGGGCCCC\n"


@pytest.fixture
def fasta(tmp_path):
    path = tmp_path / "s.fa"
    path.write_text(SEQS)
    return path


def _tsv(capsys, args):
    code, out, err = run(args, capsys)
    assert code == 0, err
    return [line.split("\t") for line in out.splitlines()]


def test_align_all_vs_all_with_traceback(fasta, capsys):
    rows = _tsv(capsys, ["--quiet", "align", "-i", str(fasta), "--all-vs-all", "--traceback"])
    header, body = rows[0], rows[1:]
    assert "score" in header and "cigar" in header
    assert header[0] == "#qname"
    assert [(r[0], r[1]) for r in body] == [("a", "b"), ("a", "c"), ("b", "c")]
    ab = body[0]
    assert ab[header.index("cigar")] == "6=1I5=" and int(ab[header.index("score")]) == 11 * 2 - 5 - 2


def test_align_score_only_has_no_cigar(fasta, capsys):
    rows = _tsv(capsys, ["--quiet", "align", "-i", str(fasta), "--all-vs-all"])
    assert "cigar" not in rows[0] and len(rows) == 4


def test_align_pairs_and_outfmt6_to_file(fasta, tmp_path, capsys):
    pairs = tmp_path / "p.tsv"
    pairs.write_text("# query\ttarget\na\tb\nc\ta\n")
    out = tmp_path / "o.tsv"
    code, _, err = run(["--quiet", "align", "-q", str(fasta), "-t", str(fasta), "--pairs", str(pairs),
                        "--outfmt", "6", "--traceback", "-o", str(out)], capsys)
    assert code == 0, err
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    # BLAST's first ten columns, then the raw score (docs/alignment.md: no E-value for pairwise DP)
    assert [r[:2] for r in rows] == [["a", "b"], ["c", "a"]]
    assert rows[0] == ["a", "b", "91.667", "12", "0", "1", "1", "12", "1", "11", "15"]
    bad = tmp_path / "bad.tsv"
    bad.write_text("a\tnope\n")
    code, _, err = run(["align", "-q", str(fasta), "-t", str(fasta), "--pairs", str(bad)], capsys)
    assert code == 1 and f"{bad}:1: no sequence named 'nope'" in err


def test_align_min_identity_keeps_passing_pairs(fasta, capsys):
    rows = _tsv(capsys, ["--quiet", "align", "-i", str(fasta), "--all-vs-all", "--traceback",
                         "--min-identity", "0.9"])
    assert [(r[0], r[1]) for r in rows[1:]] == [("a", "b")]


def test_align_min_score(fasta, capsys):
    rows = _tsv(capsys, ["--quiet", "align", "-i", str(fasta), "--all-vs-all", "--traceback", "--min-score", "10"])
    assert [(r[0], r[1]) for r in rows[1:]] == [("a", "b")]


def test_align_local_semiglobal_and_cigar_m(fasta, capsys):
    local = _tsv(capsys, ["--quiet", "align", "-i", str(fasta), "--all-vs-all", "--mode", "local", "--traceback"])
    semi = _tsv(capsys, ["--quiet", "align", "-i", str(fasta), "--all-vs-all", "--mode", "semiglobal",
                         "--free-ends", "target_start,target_end", "--traceback", "--cigar-m"])
    assert local[0] == semi[0]
    assert all(set(r[semi[0].index("cigar")]) <= set("0123456789MID") for r in semi[1:])


def test_align_scoring_options(fasta, capsys):
    plain = _tsv(capsys, ["--quiet", "align", "-i", str(fasta), "--all-vs-all"])
    other = _tsv(capsys, ["--quiet", "align", "-i", str(fasta), "--all-vs-all", "--match", "1", "--mismatch", "-1",
                          "--gap-open", "0", "--gap-extend", "1"])
    assert plain[1][plain[0].index("score")] != other[1][other[0].index("score")]


def test_align_protein_matrix_and_unknown_matrix(tmp_path, capsys):
    prot = tmp_path / "p.fa"
    prot.write_text(">p\nMKVLA\n>q\nMKVIA\n")
    rows = _tsv(capsys, ["--quiet", "align", "-i", str(prot), "--all-vs-all", "--matrix", "BLOSUM62",
                         "--gap-open", "11", "--gap-extend", "1"])
    assert int(rows[1][rows[0].index("score")]) == 5 + 5 + 4 + 2 + 4  # BLOSUM62: M/M K/K V/V L/I A/A
    code, _, err = run(["align", "-i", str(prot), "--all-vs-all", "--matrix", "BLOSUM99"], capsys)
    assert code == 2 and "Error: unknown substitution matrix 'BLOSUM99'" in err


def test_align_needs_inputs(fasta, capsys):
    code, _, err = run(["align", "-i", str(fasta)], capsys)
    assert code == 2 and "Error: give -q FASTA -t FASTA" in err


# ------------------------------------------------------------------ options that do not apply are errors


@pytest.mark.parametrize("extra", [["--outfmt", "6"], ["--evalue", "1e-5"]])
def test_search_map_rejects_blast_options(mapped, capsys, extra):
    code, _, err = run(_three_reads(mapped) + extra, capsys)
    assert code == 2 and "apply to --task megablast|blastn" in err


def test_align_all_vs_all_rejects_pairs(fasta, tmp_path, capsys):
    pairs = tmp_path / "p.tsv"
    pairs.write_text("a\tb\n")
    code, _, err = run(["align", "-i", str(fasta), "--all-vs-all", "--pairs", str(pairs)], capsys)
    assert code == 2 and "no -q/-t/--pairs" in err


def test_align_free_ends_need_semiglobal(fasta, capsys):
    code, _, err = run(["align", "-i", str(fasta), "--all-vs-all", "--free-ends", "query_start"], capsys)
    assert code == 2 and "semiglobal" in err


def test_align_matrix_excludes_match_scores(tmp_path, capsys):
    prot = tmp_path / "p.fa"
    prot.write_text(">p\nMKVLA\n>q\nMKVIA\n")
    code, _, err = run(["align", "-i", str(prot), "--all-vs-all", "--matrix", "BLOSUM62", "--match", "5"], capsys)
    assert code == 2 and "Error: match/mismatch do not apply with a substitution matrix" in err


def test_align_cigar_m_needs_traceback(fasta, capsys):
    code, _, err = run(["align", "-i", str(fasta), "--all-vs-all", "--cigar-m"], capsys)
    assert code == 2 and "trace-back" in err


def _run_on_a_corrupted_part(part, args, out, to_stdout, capsys):
    """Flip a byte of index ``part``, then ``main(args + [output])``, the output ``out``, ``-`` (stdout) or
    a pipe's ``/dev/fd/N`` (written in place; nothing may reach it); the exit code, stdout and stderr."""
    data = bytearray(part.read_bytes())
    data[-3] ^= 0xFF
    part.write_bytes(bytes(data))
    if to_stdout != "pipe":
        return run(args + ["-" if to_stdout else str(out)], capsys)
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    try:
        code, stdout, err = run(args + [f"/dev/fd/{write_end}"], capsys)
        os.close(write_end)
        try:
            piped = os.read(read_end, 1 << 16)
        except BlockingIOError:
            piped = b""
    finally:
        os.close(read_end)
    assert piped == b""
    return code, stdout, err


@pytest.mark.parametrize("to_stdout", [False, True, "pipe"])
def test_search_with_a_corrupted_index_part_fails_and_keeps_nothing(mapped, capsys, to_stdout):
    """The SHA-256 check runs beside the search; a corrupted part stops the run
    before the output is renamed into place (or, for stdout or a pipe's ``/dev/fd/N``,
    written in place, before any byte)."""
    part = next((mapped / "ref.gseek").glob("sa_samples.npy"))
    out = mapped / "out.sam"
    code, stdout, err = _run_on_a_corrupted_part(part, _three_reads(mapped) + ["-o"], out, to_stdout, capsys)
    assert code == 1 and err.count("\n") == 1 and "sa_samples.npy: corrupted part" in err, err
    assert not out.exists() and not list(mapped.glob("out.sam*"))
    assert stdout == ""


@pytest.mark.parametrize("to_stdout", [False, True, "pipe"])
def test_blast_with_a_corrupted_index_part_fails_and_keeps_nothing(tmp_path, capsys, to_stdout):
    """As the map search: the BLAST-style search checks the text part's SHA-256 beside its work, and a
    corrupted part stops it before the output is renamed into place (or, for stdout or any output
    written in place, here a pipe's ``/dev/fd/N``, before any byte)."""
    from gseek.datasets import lambda_genome
    from gseek.seqio import read_fastx

    assert main(["--quiet", "--device", "cpu", "index", "--parts", "text", str(lambda_genome()), "-o",
                 str(tmp_path / "db.gseek")]) == 0
    queries = tmp_path / "q.fa"
    queries.write_text(">q1\n" + read_fastx(lambda_genome()).sequence(0)[1000:1600] + "\n")
    command = ["--quiet", "--device", "cpu", "search", "--task", "megablast", "-x", str(tmp_path / "db.gseek"),
               "-q", str(queries), "-o"]
    code, _, err = run(command + [str(tmp_path / "good.tsv")], capsys)
    assert code == 0 and (tmp_path / "good.tsv").read_text().startswith("q1\t"), err
    out = tmp_path / "out.tsv"
    code, stdout, err = _run_on_a_corrupted_part(tmp_path / "db.gseek" / "text.npy", command, out, to_stdout, capsys)
    assert code == 1 and err.count("\n") == 1 and "text.npy: corrupted part" in err, err
    assert not out.exists() and not list(tmp_path.glob("out.tsv*"))
    assert stdout == ""


def test_command_line_process_flushes_everything_before_it_exits(tmp_path):
    """``python -m gseek`` ends through ``exit_now`` (no interpreter teardown):
    a whole SAM on stdout (larger than a pipe's buffer), the summary on stderr,
    and the exit codes of success and of an error."""
    from gseek.datasets import lambda_genome, lambda_reads
    from gseek.index import Index

    Index.build(lambda_genome(), wgram=8, device="cpu").save(tmp_path / "lambda.gseek")
    cmd = [sys.executable, "-m", "gseek", "--device", "cpu", "search", "-x", str(tmp_path / "lambda.gseek"), "-v", "2"]
    proc = subprocess.run(cmd + ["-q", str(lambda_reads())], capture_output=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    records = [x for x in proc.stdout.splitlines() if not x.startswith(b"@")]
    assert len(proc.stdout) > 1 << 17 and len(records) == 2000 and proc.stdout.endswith(b"\n")
    assert proc.stderr.startswith(b"# reads processed: 2000\n") and proc.stderr.endswith(b"\n")
    assert proc.stderr.splitlines()[4].startswith(b"[gseek] 2,000 reads")
    proc = subprocess.run(cmd + ["-q", str(tmp_path / "none.fq")], capture_output=True, cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout == b""
    assert proc.stderr == f"gseek: error: {tmp_path / 'none.fq'}: cannot open: No such file or directory\n".encode()


def test_exit_now_flushes_and_keeps_the_code(tmp_path):
    """``exit_now`` ends the process without the interpreter's teardown: text still
    in stdout's buffer is written first, and the exit code is kept."""
    import os

    script = "import sys; from gseek.cli import exit_now; sys.stdout.write('x' * 1000); exit_now(3)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # stdout buffered, as by default
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, cwd=tmp_path, env=env)
    assert proc.returncode == 3 and proc.stdout == b"x" * 1000 and proc.stderr == b""


def test_command_with_stdout_closed_exits_cleanly(tmp_path):
    fa = tmp_path / "a.fa"
    fa.write_text(">a\nACGT\n")
    proc = subprocess.run(f"'{sys.executable}' -m gseek stats '{fa}' >&-", shell=True, capture_output=True,
                          cwd=tmp_path)
    assert b"Traceback" not in proc.stderr


def test_every_module_imports_without_scipy_blas():
    """The command's process refuses ``scipy.linalg.cython_blas`` and ``scipy.sparse`` (``gseek.cli.run``):
    no gseek module may need SciPy's linear algebra or sparse matrices."""
    script = ("import sys, importlib, pkgutil; sys.modules['scipy.linalg.cython_blas'] = None; "
              "sys.modules['scipy.sparse'] = None; import gseek; "
              "[importlib.import_module(m.name) for m in pkgutil.walk_packages(gseek.__path__, 'gseek.') "
              "if m.name != 'gseek.__main__']; "
              "from numba.np import arraymath; assert arraymath._HAVE_BLAS is False; print('ok')")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout == "ok\n", proc.stderr


def test_the_command_process_refuses_scipy_sparse():
    """``gseek.cli.run`` refuses SciPy's sparse package (and BLAS) before anything is imported, so that
    CuPy's ``cupyx`` (imported on a GPU process's first arithmetic kernel) does without it; a program that
    imported it before keeps it."""
    code = ("import sys; import gseek.cli.process as p; "
            "p.main = lambda: print([sys.modules.get(m, 'absent') for m in p.REFUSED_IMPORTS]) or 0; p.run()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "[None, None]", proc.stderr
    assert "scipy.sparse" in __import__("gseek.cli.process").cli.process.REFUSED_IMPORTS


@pytest.mark.parametrize("args, task, started, driver", [
    (["--device", "cpu"], "megablast", [], True),
    (["--device", "cpu"], "map", [], True),
    (["--device", "gpu"], "megablast", [[0]], True),
    (["--device", "gpu"], "map", [[0]], True),
    (["--gpus", "1,0"], "blastn", [[1, 0]], True),
    (["--device", "auto"], "map", [], True),  # a small input may be mapped on the CPU: nothing begun
    (["--device", "auto"], "megablast", [[0]], True),  # where CuPy is (here said to be), the BLAST search takes the GPU
    (["--device", "auto"], "megablast", [], False),  # CuPy but no driver: the CPU's search, nothing begun, no warm-up
    (["--device", "gpu", "--server", "http://localhost:9"], "megablast", [], True),  # the search is the server's
])
def test_search_begins_the_driver_set_up_of_the_gpus_it_will_use(tmp_path, capsys, monkeypatch, args, task, started,
                                                                   driver):
    """``gseek search`` begins the CUDA driver's set-up (``gseek.gpu_start.start_driver``) of the GPUs it
    will search on as it starts, beside its imports, and a BLAST search on a GPU loads its reader's Numba
    code on a thread meanwhile (``warm_host("blast")``); a CPU search begins neither. CuPy is said to be
    installed (``--device auto`` looks for it), and the CUDA driver's library to load or not (``driver``)."""
    import importlib.util
    from types import SimpleNamespace

    import gseek.gpu_start
    import gseek.pipeline.tasks

    calls, warmed = [], []
    monkeypatch.setattr(gseek.gpu_start, "start_driver", lambda ordinals=(0,), library=None: calls.append(list(ordinals)))
    monkeypatch.setattr(gseek.gpu_start, "driver_found", lambda library=None: driver)
    monkeypatch.setattr(gseek.pipeline.tasks, "warm_host",
                        lambda task="map": warmed.append(task) or SimpleNamespace(join=lambda: None))
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "cupy" else find_spec(name, *a))
    (tmp_path / "q.fa").write_text(">q\nACGT\n")
    run(["search", *args, "--task", task, "-x", str(tmp_path / "none"), "-q", str(tmp_path / "q.fa"),
         "-o", str(tmp_path / "o.tsv")], capsys)
    assert calls == started
    assert [t for t in warmed if t == "blast"] == (["blast"] if started and task != "map" else [])


def test_compile_runs_its_workloads(capsys):
    """``gseek compile`` for real (the fast workloads): each workload reports its time."""
    code, _, err = run(["--device", "cpu", "compile", "--only", "parse,index"], capsys)
    assert code == 0, err
    assert "compile: parse" in err and "compile: index" in err and "compile: done" in err


@pytest.mark.parametrize("device, small, why", [
    ("cpu", True, ""),
    ("auto", False, " (auto: no GPU found)"),
    ("auto", True, " (auto: 0.0 MiB of reads: the CPU answers before a GPU would have started)")])
def test_search_summary_names_the_device_and_why(mapped, capsys, monkeypatch, device, small, why):
    """The summary line says which backend mapped, and for --device auto why it was chosen:
    reads from regular files of less than AUTO_CPU_BELOW bytes are mapped on the CPU without
    looking for a GPU (GSEEK_DISABLE_GPU would hide none then)."""
    import gseek.backend
    from gseek.cli import search as cli

    if small:  # a GPU would be a failure: auto must not look for one
        monkeypatch.setattr(gseek.backend.GpuBackend, "__init__", lambda *a, **k: pytest.fail("GPU backend built"))
    else:
        monkeypatch.setenv("GSEEK_DISABLE_GPU", "1")  # auto finds no GPU, on any machine
        monkeypatch.setattr(cli, "AUTO_CPU_BELOW", 100)
    args = [a for a in _three_reads(mapped) if a != "--quiet"]
    code, _, err = run(["--device", device, *args, "-o", str(mapped / "o.sam")], capsys)
    assert code == 0, err
    assert err.rstrip().endswith(f" on cpu (numba, {__import__('numba').config.NUMBA_NUM_THREADS} threads){why}"), err


def test_auto_device_counts_the_reads_text_of_regular_files_only(tmp_path, monkeypatch):
    """_small_input: bytes of text (gzip at 4x its size) below AUTO_CPU_BELOW, else None; stdin,
    FIFOs and missing files give None (a FIFO is not opened: its reader would lose the data)."""
    import gzip

    from gseek.cli import search as cli

    plain, packed, fifo = tmp_path / "r.fq", tmp_path / "r.fq.gz", tmp_path / "fifo"
    plain.write_bytes(b"@r\nACGT\n+\nIIII\n" * 10)
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    os.mkfifo(fifo)
    assert cli._small_input([str(plain)]) == 150
    assert cli._small_input([str(plain), str(packed)]) == 150 + 4 * packed.stat().st_size
    for other in (["-"], [str(fifo)], [str(plain), str(tmp_path / "missing.fq")]):
        assert cli._small_input(other) is None, other
    monkeypatch.setattr(cli, "AUTO_CPU_BELOW", 150)
    assert cli._small_input([str(plain)]) is None


# ------------------------------------------------------------------ read options and summary, as bowtie

BOWTIE_IO = Path(__file__).parent / "data" / "bowtie_io"


@pytest.fixture(scope="module")
def bowtie_index(tmp_path_factory):
    from gseek.index import Index

    path = tmp_path_factory.mktemp("bowtie_io") / "ref.gseek"
    Index.build(Path(__file__).parent / "data" / "bowtie" / "ref.fa", wgram=8, device="cpu").save(path)
    return path


def _records_by_name(text):
    return [line.split("\t") for line in text.splitlines() if line and not line.startswith("@")]


@pytest.mark.parametrize("name, reads, options, un, al", [
    ("plain", "reads.fq", ["-v", "1"], "un.fq", "al.fq"),
    ("trimmed", "reads64.fq", ["-v", "1", "--phred64", "--trim5", "3", "--trim3", "5", "-s", "10", "-u", "120"],
     "un.fq", "al.fq.gz"),
    ("fasta", "reads.fa", ["-v", "2", "-s", "5", "-u", "100"], "un.fa", "al.fa"),
])
def test_read_options_agree_with_bowtie(bowtie_index, tmp_path, capsys, name, reads, options, un, al):
    """Summary lines, --un/--al files byte for byte, and the SAM records (which
    reads, flags, trimmed SEQ, converted QUAL; the placement where it is the
    one best) as bowtie 1.3.1 (fixture: tests/data/bowtie_io/README.md)."""
    import gzip

    out = tmp_path / "out.sam"
    code, _, err = run(["--device", "cpu", "search", "-x", str(bowtie_index), "-q", str(BOWTIE_IO / reads),
                        *options, "-o", str(out), "--un", str(tmp_path / un), "--al", str(tmp_path / al)], capsys)
    assert code == 0, err
    summary = (BOWTIE_IO / f"{name}.summary").read_text()
    assert err.startswith(summary) and err.count("\n") == 5 and err.splitlines()[4].startswith("[gseek] ")
    for mine, theirs in ((un, f"{name}.un.{un.split('.')[1]}"), (al, f"{name}.al.{al.split('.')[1]}")):
        data = (tmp_path / mine).read_bytes()
        assert (gzip.decompress(data) if mine.endswith(".gz") else data) == (BOWTIE_IO / theirs).read_bytes()
    ours, bowtie = _records_by_name(out.read_text()), _records_by_name((BOWTIE_IO / f"{name}.sam").read_text())
    assert [r[0] for r in ours] == [r[0] for r in bowtie]
    unique = 0
    for a, b in zip(ours, bowtie):
        assert int(a[1]) & 4 == int(b[1]) & 4, (a[0], a[1], b[1])
        if "X0:i:1" in a or int(a[1]) & 4:
            unique += 1
            assert a[1:4] + a[5:6] + a[9:10] == b[1:4] + b[5:6] + b[9:10], (a, b)
            if reads != "reads.fa":
                assert a[10] == b[10]
    assert unique > 0.9 * len(ours)


def test_phred64_quality_below_at_is_one_line_and_no_output(mapped, capsys):
    reads = mapped / "p64.fq"
    reads.write_text("@a\nACATTTTCCCCGGGGAAAAC\n+\nhhhhhhhhhhhhhhhhhhhh\n@b\nACATTTTCCCCGGGGAAAAC\n+\nhhhhhhhhh;hhhhhhhhhh\n")
    out = mapped / "out.sam"
    code, stdout, err = run(["search", "-x", str(mapped / "ref"), "-q", str(reads), "--phred64", "-o", str(out),
                             "--un", str(mapped / "un.fq")], capsys)
    assert code == 1 and stdout == ""
    assert err == f"gseek: error: {reads}:8: invalid quality character ';' (column 10) for Phred+64 ('@'..'~')\n"
    assert not out.exists() and not (mapped / "un.fq").exists() and sorted(p.name for p in mapped.iterdir()) == \
        ["p64.fq", "r.fq", "ref.fa", "ref.gseek"]


def test_phred64_converts_and_phred33_warns(mapped, capsys):
    reads = mapped / "p64.fq"
    reads.write_text("@a\nACATTTTCCCCGGGGAAAAC\n+\nhhhhhhhhhhhhhhhhhh@~\n")
    rows, _ = _sam(capsys, ["--quiet", "search", "-x", str(mapped / "ref"), "-q", str(reads), "--phred64"])
    assert rows[0][10] == "I" * 18 + "!_"
    code, out, err = run(["search", "-x", str(mapped / "ref"), "-q", str(reads)], capsys)
    assert code == 0 and _records_by_name(out)[0][10] == "hhhhhhhhhhhhhhhhhh@~"  # Phred+33: as given
    assert err.splitlines()[0] == (f"gseek: warning: {reads}: qualities look Phred+64 (none below '@', some above "
                                   "'J' in the first 1 reads); give --phred64 (phred64=True) if they are")
    code, _, err = run(["search", "-x", str(mapped / "ref"), "-q", str(reads), "--phred33", "--quiet"], capsys)
    assert code == 0 and err == ""
    reads.write_text("@a\nACATTTTCCCCGGGGAAAAC\n+\nIIIIIIIIIIIIIIIIIIII\n")  # Phred+33 up to 'I': no warning
    code, _, err = run(["search", "-x", str(mapped / "ref"), "-q", str(reads)], capsys)
    assert code == 0 and "warning" not in err


def test_trim_skip_upto(mapped, capsys):
    base = _three_reads(mapped) + ["-v", "0"]
    rows, _ = _sam(capsys, base + ["--trim5", "2", "--trim3", "1"])
    by_name = {r[0]: r for r in rows}
    assert by_name["exact"][1:4] == ["0", "chr1", "14"] and by_name["exact"][9] == "ATTTTCCCCGGGGAAAA"
    assert by_name["reverse"][1:4] == ["16", "chr2", "3"]  # the 3' end trimmed: the leftmost base goes
    assert by_name["reverse"][9] == "GACCAGGATCCATAGCA" and by_name["reverse"][10] == "SRQPONMLKJIHGFEDC"
    rows, _ = _sam(capsys, base + ["-s", "1"])
    assert [r[0] for r in rows] == ["two_mm", "reverse"]
    rows, _ = _sam(capsys, base + ["-u", "2", "-q", str(mapped / "r.fq")])  # -u counts over every -q file
    assert [r[0] for r in rows] == ["exact", "two_mm"]
    rows, _ = _sam(capsys, base + ["--skip", "2", "--upto", "2", "-q", str(mapped / "r.fq")])
    assert [r[0] for r in rows] == ["reverse", "exact"]
    bad = mapped / "bad.fq"  # -u: the input past it is not read, nor its errors seen (as bowtie)
    bad.write_text((mapped / "r.fq").read_text() + "@broken\nACGT\n+\nII\n")
    rows, _ = _sam(capsys, ["--quiet", "search", "-x", str(mapped / "ref"), "-q", str(bad), "-u", "3"])
    assert [r[0] for r in rows] == ["exact", "two_mm", "reverse"]
    code, _, err = run(["search", "-x", str(mapped / "ref"), "-q", str(bad), "-s", "3"], capsys)
    assert code == 1 and err == f"gseek: error: {bad}:16: truncated record: quality length 2 != sequence length 4\n"
    rows, _ = _sam(capsys, base + ["--trim5", "25"])  # nothing left: unmapped, as too short
    assert [r[1:3] + r[9:] for r in rows] == [["4", "*", "*", "*", "YF:Z:TOO_SHORT"]] * 3


def test_skip_past_the_end_writes_a_header_and_zero_counts(mapped, capsys):
    out, un = mapped / "out.sam", mapped / "un.fq"
    code, _, err = run(_three_reads(mapped)[1:] + ["-s", "3", "-o", str(out), "--un", str(un)], capsys)
    assert code == 0, err
    assert err.splitlines()[-5:-1] == ["# reads processed: 0", "# reads with at least one alignment: 0 (0.00%)",
                                    "# reads that failed to align: 0 (0.00%)", "No alignments"]
    assert all(line.startswith("@") for line in out.read_text().splitlines()) and un.read_text() == ""
    empty = mapped / "empty.fq"
    empty.write_text("")
    code, _, err = run(["search", "-x", str(mapped / "ref"), "-q", str(empty), "-o", str(out)], capsys)
    assert code == 1 and "no FASTA/FASTQ records (empty file)" in err  # an empty input is still an error


def test_un_and_al_write_the_reads_as_given(mapped, capsys):
    reads = mapped / "r.fa"
    reads.write_text(">exact first read\nACATTTTCC\nccggggaaaac\n>two_mm\nACATTTTCCACGGGGAAAGC\n"
                     ">reverse\nGTTGCTATGGATCCTGGTCA")
    un, al = mapped / "un.fa", mapped / "al.fa.gz"
    code, _, err = run(["search", "-x", str(mapped / "ref"), "-q", str(reads), "-v", "0", "--trim3", "1",
                        "--un", str(un), "--al", str(al)], capsys)
    assert code == 0, err
    import gzip

    assert un.read_text() == ">two_mm\nACATTTTCCACGGGGAAAGC\n"
    assert gzip.decompress(al.read_bytes()).decode() == (">exact first read\nACATTTTCC\nccggggaaaac\n"
                                                         ">reverse\nGTTGCTATGGATCCTGGTCA\n")
    assert "# reads with at least one alignment: 2 (66.67%)\n" in err and "Reported 2 alignments\n" in err


@pytest.mark.parametrize("which, target, message", [
    ("--un", "r.fq", "is also an input"),
    ("--al", "ref.gseek/header.json", "inside"),
    ("--un", "out.sam", "both the output and the un output"),
    ("--al", "-", "both the output and the al output"),
    ("--un", "nodir/un.fq", "nodir"),
])
def test_un_and_al_refused_before_the_work(mapped, capsys, which, target, message):
    before = sorted(p.name for p in mapped.iterdir())
    output = ["-o", str(mapped / "out.sam")] if target == "out.sam" else []
    code, stdout, err = run(_three_reads(mapped)[1:] + output + [which, target if target == "-" else
                                                                 str(mapped / target)], capsys)
    assert code != 0 and stdout == "" and err.count("\n") == 1 and message in err, err
    assert sorted(p.name for p in mapped.iterdir()) == before


def test_summary_counts_every_reported_alignment(mapped, capsys):
    reads = mapped / "rep.fq"
    reads.write_text(f"@rep\n{REPEAT}\n+\n{'I' * 20}\n@none\n{'A' * 20}\n+\n{'I' * 20}\n")
    base = ["search", "-x", str(mapped / "ref"), "-q", str(reads), "-v", "0"]
    for extra, alignments in (([], 1), (["-k", "2"], 2), (["--all"], 2), (["--no-unal", "-a"], 2)):
        code, out, err = run(base + extra, capsys)
        assert code == 0, err
        assert len([r for r in _records_by_name(out) if not int(r[1]) & 4]) == alignments
        assert err.splitlines()[:4] == ["# reads processed: 2", "# reads with at least one alignment: 1 (50.00%)",
                                        "# reads that failed to align: 1 (50.00%)", f"Reported {alignments} alignments"]
    code, _, err = run(["--quiet"] + base, capsys)
    assert code == 0 and err == ""


def test_first_compile_says_so_once(mapped, capsys, monkeypatch):
    """A Numba compile during a command (a kernel not in the cache) prints one
    line, once per command, and at the end how many functions took how long;
    none with --quiet, none once the command is over."""
    from numba.core import event

    from gseek.compile_notice import CompileNotice

    import gseek.pipeline

    def compiling(*args, **kwargs):
        for _ in range(2):
            with event.trigger_event("numba:compile", data={}):
                with event.trigger_event("numba:compile", data={}):  # a callee compiled with it: not counted
                    pass
        return dict(reads=0, mapped=0, unmapped=0, too_long=0, too_short=0, records=0, alignments=0, device="x")

    monkeypatch.setattr(gseek.pipeline, "map_files", compiling)
    base = ["search", "-x", str(mapped / "ref"), "-q", str(mapped / "r.fq")]
    code, _, err = run(["--quiet"] + base, capsys)
    assert code == 0 and err == ""
    code, _, err = run(base, capsys)
    lines = err.splitlines()
    assert code == 0 and lines[0] == CompileNotice.TEXT and err.count("compiling") == 1
    assert lines[-1].startswith("[gseek] compiled 2 kernel functions in ") and lines[-1].endswith(
        " s (later commands load them from the cache)")
    with event.trigger_event("numba:compile", data={}):  # outside a command: nothing
        pass
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("argv", [
    ["demo", "-o", "{tmp}/demo"],
    ["index", "{ref}", "-o", "{tmp}/ix"],
    ["align", "-q", "{ref}", "-t", "{ref}"],
    ["search", "--task", "megablast", "-x", "{mapped}/ref", "-q", "{ref}"],
    ["pipeline", "--task", "align", "--queries", "{tmp}/list", "-t", "{ref}", "--outdir", "{tmp}/out"],
])
def test_every_command_announces_its_compiles(argv, mapped, tmp_path, capsys, monkeypatch):
    """issue 37: only ``search --task map`` and ``pipeline`` announced a compile; the demo, BLAST, align
    and index sat silent for a minute. One notice now wraps every command (each one's work is replaced
    by a compile event here; tests/test_startup.py runs a real cold compile)."""
    import click
    from numba.core import event

    from gseek.compile_notice import CompileNotice

    def compiling(*args, **kwargs):
        with event.trigger_event("numba:compile", data={}):
            pass
        raise click.exceptions.Exit(0)

    import gseek.demo
    import gseek.index
    import gseek.pipeline
    import gseek.pipeline.tasks

    for module, name in ((gseek.demo, "run_demo"), (gseek.index.Index, "build"),
                         (gseek.pipeline, "align_files"), (gseek.pipeline, "blast_files"),
                         (gseek.pipeline, "run_pipeline")):
        monkeypatch.setattr(module, name, compiling)
    ref = tmp_path / "ref.fa"
    ref.write_text(">a\nACGTACGTTTGACCA\n")
    (tmp_path / "list").write_text(f"{ref}\n")
    argv = [a.format(tmp=tmp_path, ref=ref, mapped=mapped) for a in argv]
    code, _, err = run(["--device", "cpu", *argv], capsys)
    assert code == 0 and err.splitlines()[0] == CompileNotice.TEXT, err
    assert err.splitlines()[-1].startswith("[gseek] compiled 1 kernel function in ")
    code, _, err = run(["--quiet", "--device", "cpu", *argv], capsys)
    assert code == 0 and err == ""


def test_un_to_stdout_and_a_failing_un_output(mapped, capsys):
    out = mapped / "out.sam"
    code, stdout, err = run(_three_reads(mapped) + ["-v", "0", "-o", str(out), "--un", "-"], capsys)
    assert code == 0, err
    assert stdout == "@two_mm\nACATTTTCCACGGGGAAAGC\n+\nIIIIIIIIIIIIIIIIIIII\n" and out.exists()
    out.unlink()
    code, stdout, err = run(_three_reads(mapped) + ["-v", "0", "-o", str(out), "--al", "/dev/full"], capsys)
    assert code == 1 and err == "gseek: error: /dev/full: No space left on device\n"
    assert not out.exists() and not list(mapped.glob(".out.sam*"))

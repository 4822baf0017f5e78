"""Issue 36, a hostile user, round two (sections 1-3): each case on the real
``gseek`` command in a subprocess (``python -m gseek --device cpu``), with the
shell's own redirections where the case is one (``< a.fq``, ``1<>q.fa``,
``3<>a.fq``), or on the function that decides it.

Section 1: an input read from standard input is compared with every output.
Section 2: output that was silently wrong or invalid. Section 3: tracebacks
and noise where one line was due.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gseek.datasets import lambda_genome, lambda_reads
from gseek.index import Index

GSEEK = [sys.executable, "-m", "gseek", "--device", "cpu"]
TIMEOUT = 120


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A lambda index, 200 lambda reads (``r.fq``), 20 of them as FASTA queries
    (``x.fa``), the lambda genome as align targets (``t.fa``)."""
    root = tmp_path_factory.mktemp("hostile2")
    index = Index.build(lambda_genome(), wgram=6, device="cpu").save(root / "idx.gseek")
    lines = Path(lambda_reads()).read_text().splitlines(True)[: 4 * 200]
    (root / "r.fq").write_text("".join(lines))
    (root / "x.fa").write_text("".join(f">q{i}\n{lines[4 * i + 1]}" for i in range(20)))
    shutil.copy(lambda_genome(), root / "t.fa")
    return dict(root=root, index=index)


def shell(command: str, cwd: Path, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    """``command`` run by bash in ``cwd``, ``gseek`` standing for this Python's gseek on the CPU."""
    gseek = shlex.join(GSEEK)
    return subprocess.run(["bash", "-c", command.replace("gseek ", gseek + " ")], cwd=cwd, capture_output=True,
                          timeout=timeout)


def gseek_run(*args, cwd=None, timeout=TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run([*GSEEK, *map(str, args)], capture_output=True, cwd=cwd, timeout=timeout)


def one_line_error(stderr: bytes, *names) -> str:
    text = stderr.decode()
    assert text.count("\n") == 1 and text.startswith("gseek: error: "), text
    for name in names:
        assert str(name) in text, text
    return text


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name)


@pytest.fixture
def here(world, tmp_path):
    """A folder holding copies of the world's files (``idx`` links to the index)."""
    for name in ("r.fq", "x.fa", "t.fa"):
        shutil.copy(world["root"] / name, tmp_path / name)
    (tmp_path / "idx").symlink_to(world["index"])
    return tmp_path


# --------------------------------------------------------------------------- 1. standard input vs the outputs


ISSUE_36_1 = [  # (setup, command, the input that must survive): the issue's examples, each exited 0 and destroyed it
    ("cp r.fq a.fq", "gseek search -x idx -q - -o a.fq < a.fq", "a.fq"),
    ("cp r.fq a.fq", "gseek search -x idx -q - -o out.sam --un a.fq < a.fq", "a.fq"),
    ("cp r.fq a.fq", "gseek search -x idx -q - -o out.sam --al a.fq < a.fq", "a.fq"),
    ("cp x.fa q.fa", "gseek search -x idx --task megablast -q - < q.fa 1<>q.fa", "q.fa"),
    ("cp x.fa q.fa", "gseek search -x idx --task megablast -q - -o q.fa < q.fa", "q.fa"),
    ("cp r.fq a.fq", "gseek search -x idx -q - -o /dev/fd/3 < a.fq 3<>a.fq", "a.fq"),
    ("cp r.fq a.fq", "gseek search -x idx -q - -o /dev/stdout < a.fq 1<>a.fq", "a.fq"),
    ("cp r.fq a.fq", "gseek search -x idx -q - < a.fq 1<>a.fq", "a.fq"),
    ("cp x.fa q.fa", "gseek align -q - -t t.fa -o q.fa < q.fa", "q.fa"),
    ("cp x.fa s.fa", "gseek align -i - --all-vs-all -o s.fa < s.fa", "s.fa"),
    ("cp x.fa s.fa", "gseek align -i - --all-vs-all < s.fa 1<>s.fa", "s.fa"),
    ("cp r.fq a_2.fq", "gseek search -x idx --interleaved - -o out.sam --un a.fq < a_2.fq", "a_2.fq"),
    ("cp r.fq out.bam.bai", "gseek search -x idx -q - -o out.bam < out.bam.bai", "out.bam.bai"),
    ("cp r.fq out.bam.bai", "gseek search -x idx -q out.bam.bai -o out.bam", "out.bam.bai"),
]


@pytest.mark.parametrize("setup, command, kept", ISSUE_36_1, ids=[c for _, c, _ in ISSUE_36_1])
def test_1_an_input_on_standard_input_is_never_an_output(here, setup, command, kept):
    """Issue 36 §1: ``-`` is standard input's file (fstat of descriptor 0 when it is a regular
    file), compared by device and inode with every output (``-o``, ``--un``/``--al`` and their
    pair files, a BAM's index, stdout or ``/dev/fd/N`` on a file): a usage error, exit 2, one
    line, the input as it was and nothing written."""
    subprocess.run(["bash", "-c", setup], cwd=here, check=True)
    before = (here / kept).read_bytes()
    listing = sorted(os.listdir(here))
    proc = shell(command, here)
    assert proc.returncode == 2, proc.stderr
    one_line_error(proc.stderr, "an input")
    assert (here / kept).read_bytes() == before
    assert sorted(os.listdir(here)) == listing  # no output, no temporary, no index


def test_1_standard_input_that_is_no_file_still_works(here):
    """A pipe or ``/dev/null`` on standard input holds nothing an output could overwrite; a
    file on stdin that no output names is read as before."""
    proc = shell("cat r.fq | gseek --quiet search -x idx -q - -o out.sam --un un.fq", here)
    assert proc.returncode == 0, proc.stderr
    proc = shell("gseek --quiet search -x idx -q - -o out2.sam --un un2.fq < r.fq", here)
    assert proc.returncode == 0, proc.stderr
    def records(name):
        return [line for line in (here / name).read_bytes().splitlines() if not line.startswith(b"@PG")]

    assert records("out.sam") == records("out2.sam")
    assert (here / "un.fq").read_bytes() == (here / "un2.fq").read_bytes()


def test_1_an_output_that_is_an_input_is_a_usage_error_everywhere(here):
    """The clashes refused before (an input by name, inside the index, a pipeline's list
    output) are usage errors too: exit 2, as the rule of §1 says for every clash."""
    proc = gseek_run("search", "-x", "idx", "-q", "r.fq", "-o", "r.fq", cwd=here)
    assert proc.returncode == 2
    one_line_error(proc.stderr, "r.fq: is also an input")
    proc = gseek_run("search", "-x", "idx", "-q", "r.fq", "-o", "idx/header.json", cwd=here)
    assert proc.returncode == 2
    one_line_error(proc.stderr, "lies inside")
    shutil.copy(here / "r.fq", here / "s.reads")
    (here / "list.txt").write_text("s.reads\ts.reads\n")
    proc = gseek_run("pipeline", "--queries", "list.txt", "-x", "idx", "--outdir", ".", cwd=here)
    assert proc.returncode == 2
    one_line_error(proc.stderr, "list.txt:1:", "is also an input")
    assert (here / "s.reads").read_bytes() == (here / "r.fq").read_bytes()


# --------------------------------------------------------------------------- 2. silently wrong or invalid output


@pytest.mark.parametrize("name", ["*", "=chr2", "chr,2", "a[1]", "x\\y", "q'1", "b{2}", "c<3>", "caf\xe9"])
def test_2_a_reference_name_sam_cannot_hold_is_refused_at_index(tmp_path, name):
    """Issue 36 §2: a record named ``*`` (or starting with ``=``, or holding a character SAM's
    RNAME grammar forbids) was indexed, and reads placed on it read as unmapped downstream.
    ``gseek index`` refuses it: one line naming the file, the record's line and its name;
    no index written. ``*`` or ``=`` inside a name is allowed, as SAM allows it."""
    fasta = tmp_path / "ref.fa"
    fasta.write_bytes(b">ok*=\nACGTACGTACGTAAAACCCC\n>" + name.encode("latin-1") + b" desc\nACGTTTTTGGGGCCCCAAAA\n")
    proc = gseek_run("index", fasta, "-o", tmp_path / "ref", "--wgram", "4")
    assert proc.returncode == 1
    one_line_error(proc.stderr, f"{fasta}:3:", "SAM reference name")
    assert not (tmp_path / "ref.gseek").exists() and temporaries(tmp_path) == []
    proc = gseek_run("index", fasta, "-o", tmp_path / "text", "--parts", "text", "--wgram", "4")
    assert proc.returncode == 1 and not (tmp_path / "text.gseek").exists()


def test_2_pg_command_line_holds_no_tab_newline_or_return(world, tmp_path):
    """Issue 36 §2: a tab, newline or carriage return in an input path went raw into ``@PG CL:``
    (an invalid header; with ``.bam`` the run failed as "samtools sort: truncated file"). Each
    becomes a space, as samtools' ``stringify_argv`` does with a tab."""
    import pysam

    reads = tmp_path / "r\tx\ny\rz.fq"
    shutil.copy(world["root"] / "r.fq", reads)
    for out in ("o.sam", "o.bam"):
        proc = gseek_run("--quiet", "search", "-x", world["index"], "-q", reads, "-o", tmp_path / out)
        assert proc.returncode == 0, proc.stderr
    header = (tmp_path / "o.sam").read_bytes().split(b"\n@PG\t", 1)[1].split(b"\n", 1)
    assert b"/r x y z.fq'" in header[0] and header[1].startswith(b"r0001\t")
    with pysam.AlignmentFile(str(tmp_path / "o.bam")) as bam:
        assert "/r x y z.fq'" in bam.header.to_dict()["PG"][0]["CL"]
        assert sum(1 for _ in bam) == 200


@pytest.mark.parametrize("name, rule", [("n" * 255, "at most 254"), ("a@b", "does not allow")])
def test_2_blast_sam_query_names_as_the_mappers(here, name, rule):
    """Issue 36 §2: ``--outfmt sam`` wrote QNAMEs over 254 characters or with characters SAM
    forbids; refused as the mapper refuses such a read (``FILE:LINE``), nothing written.
    Tabular output keeps such a name (BLAST+ does)."""
    seq = (here / "x.fa").read_text().splitlines()[1]
    (here / "q.fa").write_text(f">q0\n{seq}\n>{name}\n{seq}\n")
    proc = gseek_run("search", "-x", "idx", "--task", "megablast", "-q", "q.fa", "--outfmt", "sam", "-o", "h.sam",
                     cwd=here)
    assert proc.returncode == 1
    one_line_error(proc.stderr, "q.fa:3:", rule)
    assert not (here / "h.sam").exists() and temporaries(here) == []
    proc = gseek_run("--quiet", "search", "-x", "idx", "--task", "megablast", "-q", "q.fa", cwd=here)
    assert proc.returncode == 0 and proc.stdout.count(name.encode()) == 1


@pytest.mark.parametrize("name", ["hits.bam", "HITS.CRAM"])
def test_2_blast_output_named_bam_or_cram_is_refused(here, name):
    """Issue 36 §2: BLAST ``-o hits.bam`` (and a pipeline output so named) wrote tabular or SAM text
    into a ``.bam`` file. Refused before the search (docs/blast.md: write SAM, convert with samtools)."""
    for outfmt in ("6", "sam"):
        proc = gseek_run("search", "-x", "idx", "--task", "megablast", "-q", "x.fa", "--outfmt", outfmt, "-o", name,
                         cwd=here)
        assert proc.returncode == 1
        one_line_error(proc.stderr, name, "not BAM or CRAM")
    (here / "list.txt").write_text(f"x.fa\t{name}\n")
    proc = gseek_run("pipeline", "--queries", "list.txt", "--task", "megablast", "-x", "idx", "--outdir", "out",
                     cwd=here)
    assert proc.returncode == 1
    one_line_error(proc.stderr, "list.txt:1:", "not BAM or CRAM")
    assert not (here / name).exists() and not (here / "out" / name).exists()


BLAST_DATA = Path(__file__).parent / "data" / "blast"
HARD_MASK_FIELDS = "6 qseqid sseqid pident length mismatch gapopen qstart qend sstart send evalue bitscore score nident btop"


@pytest.mark.parametrize("task", ["megablast", "blastn"])
def test_2_hard_masking_counts_identities_on_the_query_as_given(world, task):
    """Issue 36 §2: with ``--soft-masking false`` pident, mismatch and nident counted the masked
    (N) bases as mismatches while btop showed matches (94.286 against blastn's 100.000). As
    blastn 2.12 (tests/data/blast/README.md): every column the same, the score the masked one."""
    proc = gseek_run("--quiet", "search", "-x", world["index"], "--task", task, "--soft-masking", "false",
                     "-q", BLAST_DATA / "hard_mask_queries.fa", "--outfmt", HARD_MASK_FIELDS, "--evalue", "1e-20")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == (BLAST_DATA / f"hard_mask_{task}.tsv").read_text()


def _statuses(out: Path) -> dict[str, str]:
    rows = [line.split("\t") for line in (out / "summary.tsv").read_text().splitlines()[1:]]
    return {row[0]: row[1] for row in rows}


def test_2_resume_keeps_a_bam_only_with_its_own_index(here):
    """Issue 36 §2: ``--resume`` kept a sorted BAM whose ``.bai`` was deleted or replaced by
    another file's. A BAM is complete only with its own index: either case is redone, and the
    index written again; a BAM with its own index is skipped."""
    import pysam

    shutil.copy(here / "r.fq", here / "s.fq")
    (here / "list.txt").write_text("r.fq\tr.bam\ns.fq\ts.bam\n")
    args = ["pipeline", "--queries", "list.txt", "-x", "idx", "--outdir", "out", "--resume"]
    proc = gseek_run("--quiet", *args, cwd=here)
    assert proc.returncode == 0, proc.stderr
    out = here / "out"
    own = (out / "r.bam.bai").read_bytes()
    assert _statuses(out) == {"r.fq": "ok", "s.fq": "ok"}
    proc = gseek_run("--quiet", *args, cwd=here)
    assert proc.returncode == 0 and _statuses(out) == {"r.fq": "skipped", "s.fq": "skipped"}, proc.stderr
    (out / "r.bam.bai").unlink()
    proc = gseek_run("--quiet", *args, cwd=here)
    assert proc.returncode == 0 and _statuses(out) == {"r.fq": "ok", "s.fq": "skipped"}, proc.stderr
    assert (out / "r.bam.bai").read_bytes() == own
    # another BAM's index under its name (of half the reads)
    (here / "t.fq").write_text("".join((here / "r.fq").read_text().splitlines(True)[:400]))
    assert (here / "t.fq").stat().st_size < (here / "s.fq").stat().st_size
    proc = gseek_run("--quiet", "search", "-x", "idx", "-q", "t.fq", "-o", "t.bam", cwd=here)
    assert proc.returncode == 0, proc.stderr
    shutil.copy(here / "t.bam.bai", out / "s.bam.bai")
    proc = gseek_run("--quiet", *args, cwd=here)
    assert proc.returncode == 0 and _statuses(out) == {"r.fq": "skipped", "s.fq": "ok"}, proc.stderr
    with pysam.AlignmentFile(str(out / "s.bam")) as bam:
        assert bam.check_index() and sum(1 for _ in bam.fetch(bam.references[0])) > 0


# --------------------------------------------------------------------------- 3. tracebacks and noise


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("offset", [8, 10, 60])
def test_3_a_tampered_npy_header_is_one_line_naming_the_part(world, tmp_path, offset):
    """Issue 36 §3: a flipped byte in a part's ``.npy`` header (offset 10 or 60 of ``text.npy``) gave a
    ``tokenize.TokenError`` traceback, mapping and BLAST. One line naming the part, exit 1."""
    index = tmp_path / "t.gseek"
    shutil.copytree(world["index"], index)
    _flip(index / "text.npy", offset)
    for task, query, out in (("map", "r.fq", "out.sam"), ("megablast", "x.fa", "out.tsv")):
        proc = gseek_run("--quiet", "search", "-x", index, "--task", task, "-q", world["root"] / query,
                         "-o", tmp_path / out)
        assert proc.returncode == 1
        one_line_error(proc.stderr, index / "text.npy", "header is damaged")
        assert not (tmp_path / out).exists()


def test_3_every_header_byte_of_a_part_flipped(world, tmp_path):
    """The same for each byte of ``text.npy``'s header (through the API, without the SHA-256 check):
    :class:`~gseek.errors.IndexFormatError` naming the part, or a load whose arrays are the same
    (a flip numpy does not read, such as in the padding), never another exception."""
    from gseek.errors import IndexFormatError

    index = tmp_path / "t.gseek"
    shutil.copytree(world["index"], index)
    part = index / "text.npy"
    original = part.read_bytes()
    header_end = original.index(b"\n") + 1
    for offset in range(header_end):
        _flip(part, offset)
        try:
            Index.load(index, device="cpu", parts=["text"], verify=False)
        except IndexFormatError as exc:
            assert "text.npy" in str(exc) and "\n" not in str(exc)
        part.write_bytes(original)


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "0"])
def test_3_evalue_inf_is_refused_as_blastn_refuses_it(here, value):
    """Issue 36 §3: ``--evalue inf`` printed numpy RuntimeWarnings with source lines. blastn 2.12
    refuses ``-evalue inf`` (and nan) as it parses the value: a usage error here, nothing else said."""
    proc = gseek_run("search", "-x", "idx", "--task", "megablast", "-q", "x.fa", "--evalue", value, cwd=here)
    assert proc.returncode == 2 and proc.stdout == b""
    text = proc.stderr.decode()
    assert "evalue must be a finite number > 0" in text and "Warning" not in text, text


@pytest.fixture
def read_only(tmp_path):
    """A folder on a read-only bind mount of ``tmp_path/ro`` (root and mount(8) needed: else skip),
    holding a copy of the lambda genome without ``.fai``."""
    under, folder = tmp_path / "ro", tmp_path / "ro_mount"
    under.mkdir()
    folder.mkdir()
    shutil.copy(lambda_genome(), under / "ref.fa")
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a read-only bind mount needs root and mount(8)")
    if subprocess.run(["mount", "--bind", "-o", "ro", str(under), str(folder)], capture_output=True).returncode:
        pytest.skip("mount --bind -o ro is not allowed here")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], capture_output=True)
        if os.access(folder, os.W_OK):
            pytest.skip("the bind mount is not read-only")
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], capture_output=True)


def test_3_cram_reference_in_a_read_only_folder_is_one_line(world, tmp_path, read_only):
    """Issue 36 §3: a CRAM whose reference (without ``.fai``) sits in a read-only folder printed
    htslib's own error line beside gseek's. One line, naming the FASTA and why; nothing written.
    With its ``.fai`` beside it the folder may be read-only: nothing is written there."""
    proc = gseek_run("--quiet", "search", "-x", world["index"], "-q", world["root"] / "r.fq",
                     "-o", tmp_path / "o.cram", "--reference", read_only / "ref.fa")
    assert proc.returncode == 1
    one_line_error(proc.stderr, read_only / "ref.fa", "read-only file system")
    assert not (tmp_path / "o.cram").exists() and temporaries(tmp_path) == []
    subprocess.run([sys.executable, "-c", f"import pysam; pysam.faidx({str(tmp_path / 'ro' / 'ref.fa')!r})"],
                   check=True)
    proc = gseek_run("--quiet", "search", "-x", world["index"], "-q", world["root"] / "r.fq",
                     "-o", tmp_path / "o.cram", "--reference", read_only / "ref.fa")
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(read_only)) == ["ref.fa", "ref.fa.fai"]


def test_3_read_only_file_system_is_said_so(world, tmp_path, read_only):
    """Issue 36 §3: an output on a read-only file system was reported as "Permission denied"."""
    for args in (["search", "-x", world["index"], "-q", world["root"] / "r.fq", "-o", read_only / "o.sam"],
                 ["index", world["root"] / "t.fa", "-o", read_only / "x"],
                 ["align", "-q", world["root"] / "x.fa", "-t", world["root"] / "t.fa", "-o", read_only / "a.tsv"]):
        proc = gseek_run("--quiet", *args)
        assert proc.returncode == 1
        one_line_error(proc.stderr, "Read-only file system")


def test_3_a_failed_cram_run_leaves_no_fai_beside_the_reference(world, tmp_path):
    """Issue 36 §3: a failed CRAM run left ``ref.fa.fai`` beside the user's FASTA (htslib writes it as the
    reference is opened). Removed when the run fails; kept, as samtools keeps it, when it succeeds."""
    fasta = tmp_path / "ref.fa"
    shutil.copy(lambda_genome(), fasta)
    bad = tmp_path / "bad.fq"
    bad.write_text((world["root"] / "r.fq").read_text() + "@broken\nACGT\n+\nII\n")
    proc = gseek_run("--quiet", "search", "-x", world["index"], "-q", bad, "-o", tmp_path / "o.cram",
                     "--reference", fasta)
    assert proc.returncode == 1
    assert sorted(os.listdir(tmp_path)) == ["bad.fq", "ref.fa"], proc.stderr
    (tmp_path / "short.fa").write_text(">other\nACGT\n")
    proc = gseek_run("--quiet", "search", "-x", world["index"], "-q", world["root"] / "r.fq", "-o",
                     tmp_path / "o.cram", "--reference", tmp_path / "short.fa")
    assert proc.returncode == 1 and "holds no contig" in proc.stderr.decode()
    assert not (tmp_path / "short.fa.fai").exists()
    proc = gseek_run("--quiet", "search", "-x", world["index"], "-q", world["root"] / "r.fq", "-o",
                     tmp_path / "o.cram", "--reference", fasta)
    assert proc.returncode == 0 and (tmp_path / "ref.fa.fai").exists(), proc.stderr


def test_3_align_pairs_from_standard_input_is_a_clear_usage_error(here):
    """Issue 36 §3: ``align --pairs -`` said "-: No such file or directory"."""
    (here / "p.tsv").write_text("q0\tq1\n")
    proc = shell("gseek align -q x.fa -t x.fa --pairs - < p.tsv", here)
    assert proc.returncode == 2 and b"--pairs takes the pair list's file name" in proc.stderr, proc.stderr
    proc = shell("gseek --quiet align -q x.fa -t x.fa --pairs <(cat p.tsv)", here)
    assert proc.returncode == 0 and proc.stdout.count(b"\n") >= 1, proc.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="os.mknod of a character device needs root")
def test_3_sort_into_a_character_device_says_why(world, tmp_path):
    """Issue 36 §3: ``--sort -o nul.bam`` (a character device) said "--sort applies to .bam and .cram
    output files", of a .bam name. Now: a sorted output needs a regular file."""
    import stat

    null = tmp_path / "nul.bam"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    proc = gseek_run("--quiet", "search", "-x", world["index"], "-q", world["root"] / "r.fq", "--sort", "-o", null)
    assert proc.returncode == 1
    one_line_error(proc.stderr, null, "--sort needs a regular file, not a special file")


@pytest.mark.parametrize("queries, task, soft, fixture, fields", [
    ("n_run_queries.fa", "megablast", "false", "n_run_megablast_hard.tsv", ""),
    ("n_run_more_queries.fa", "megablast", "false", "n_run_more_megablast_hard.tsv", " nident btop"),
    ("n_run_more_queries.fa", "megablast", "true", "n_run_more_megablast.tsv", " nident btop"),
    ("n_run_more_queries.fa", "blastn", "false", "n_run_more_blastn_hard.tsv", " nident btop"),
    ("n_run_more_queries.fa", "blastn", "true", "n_run_more_blastn.tsv", " nident btop"),
])
def test_2_hsps_beside_runs_of_n_as_blastn(world, queries, task, soft, fixture, fields):
    """Issue 36 §2: 300 lambda bases + 50 N + the next 350, ``--soft-masking false``: blastn's HSPs are
    300 and 350 long, gseek's were 298 (299 at offset 20,000): DUST read the N's as A and masked the run
    and the A's beside it, where blastn reads each N as a random base. Also runs of 1-50 N at several
    distances, at either end, three in a query, one after a homopolymer; both tasks, both maskings
    (tests/data/blast/README.md)."""
    head = "6 qseqid sseqid pident length mismatch gapopen qstart qend sstart send evalue bitscore score"
    proc = gseek_run("--quiet", "search", "-x", world["index"], "--task", task, "--soft-masking", soft,
                     "--evalue", "1e-10", "-q", BLAST_DATA / queries, "--outfmt", head + fields)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == (BLAST_DATA / fixture).read_text()

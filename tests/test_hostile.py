"""Issue 13, a hostile user: one test per numbered case, each on the real
``gseek`` command in a subprocess (``python -m gseek --device cpu``), plus
fuzzers of ``header.json`` and of the FASTA/FASTQ parser.

Signals are sent at moments the test can see: the handler installed
(``SigCgt`` in ``/proc/PID/status``), a temporary output present, stdout
blocked on a pipe nobody reads, a temporary index folder present (the
process is then stopped with SIGSTOP and the moment checked before the
signal is delivered). Cases fixed in a later phase are marked
``xfail(strict=True)``: they fail today, and turn red when fixed while the
mark is left in place.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gseek
from gseek.cli import main
from gseek.datasets import lambda_genome, lambda_reads
from gseek.errors import FastxError
from gseek.index import Index

GSEEK = [sys.executable, "-m", "gseek", "--device", "cpu"]
PHASE2 = "issue 13 item {}: phase 2"
TIMEOUT = 120


def phase2(item: int):
    return pytest.mark.xfail(strict=True, reason=PHASE2.format(item))


# --------------------------------------------------------------------------- data


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A lambda index, the 2,000 lambda reads (their SAM is > 64 KiB, a pipe's
    buffer), 200 of them, and a reference of 100 small contigs."""
    root = tmp_path_factory.mktemp("hostile")
    index = Index.build(lambda_genome(), wgram=6, device="cpu").save(root / "lambda.gseek")
    reads = root / "reads.fq"
    shutil.copy(lambda_reads(), reads)
    few = root / "few.fq"
    few.write_text("".join(reads.read_text().splitlines(True)[: 4 * 200]))
    genome = "".join(Path(lambda_genome()).read_text().splitlines()[1:])
    contigs = root / "contigs.fa"
    contigs.write_text("".join(f">c{i}\n{genome[i * 300:(i + 1) * 300]}\n" for i in range(100)))
    return dict(root=root, index=index, reads=reads, few=few, contigs=contigs)


@pytest.fixture(scope="module")
def big(world):
    """150,000 reads of 100 bp: a pipeline run of seconds, caught mid-write."""
    genome = np.frombuffer("".join(Path(lambda_genome()).read_text().splitlines()[1:]).encode(), dtype=np.uint8)
    starts = np.random.default_rng(13).integers(0, genome.size - 100, 150_000)
    seqs = genome[starts[:, None] + np.arange(100)]
    lines = []
    for i, seq in enumerate(seqs):
        lines.append(f"@b{i}\n{seq.tobytes().decode()}\n+\n{'I' * 100}\n")
    path = world["root"] / "big.fq"
    path.write_text("".join(lines))
    return path


def gseek_run(*args, stdin=None, env=None, cwd=None, timeout=TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run([*GSEEK, *map(str, args)], input=stdin, capture_output=True, env=env, cwd=cwd,
                          timeout=timeout)


def gseek_start(*args, **kwargs) -> subprocess.Popen:
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen([*GSEEK, *map(str, args)], **kwargs)


def records(sam: bytes) -> list[bytes]:
    return [line for line in sam.splitlines() if line and not line.startswith(b"@")]


def one_line_error(stderr: bytes, *names) -> None:
    text = stderr.decode()
    assert text.count("\n") == 1 and text.startswith("gseek: error: "), text
    for name in names:
        assert str(name) in text, text


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name)


def wait_for(condition, proc: subprocess.Popen | None = None, timeout: float = 60.0) -> bool:
    """Poll ``condition()`` every millisecond; False when ``proc`` ended or time ran out."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        if proc is not None and proc.poll() is not None:
            return bool(condition())
        time.sleep(0.001)
    return False


def handler_installed(pid: int, signum: int) -> bool:
    """Whether process ``pid`` catches ``signum`` (its ``SigCgt`` mask)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            mask = next(int(line.split()[1], 16) for line in fh if line.startswith("SigCgt:"))
    except (OSError, StopIteration):
        return False
    return bool(mask >> (signum - 1) & 1)


def _ended_pid() -> int:
    """The PID of a process that has ended."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


needs_proc = pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs /proc (Linux)")
needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="os.mknod of a character device needs root")


# --------------------------------------------------------------------------- 1. special-file outputs


@needs_root
def test_01_outputs_are_written_into_special_files_not_renamed_over_them(world, tmp_path):
    """``-o /dev/null`` (a character device), ``-o /dev/stdout`` (a link to the
    process's stdout): written straight into, never replaced by a regular file."""
    dev = tmp_path / "dev"
    dev.mkdir()
    null = dev / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a /dev/null twin
    out = dev / "stdout"
    out.symlink_to("/proc/self/fd/1")
    proc = gseek_run("--quiet", "search", "-x", world["index"], "-q", world["few"], "-o", null)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISCHR(os.lstat(null).st_mode), "the device node was replaced"
    assert os.listdir(dev) == ["null", "stdout"] or sorted(os.listdir(dev)) == ["null", "stdout"]
    proc = gseek_run("--quiet", "search", "-x", world["index"], "-q", world["few"], "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert out.is_symlink() and len(records(proc.stdout)) == 200
    assert sorted(os.listdir(dev)) == ["null", "stdout"]


# --------------------------------------------------------------------------- 2. pipe, FIFO, stdin input


def _feed_fifo(path: Path, data: bytes) -> threading.Thread:
    def feed():
        with contextlib.suppress(BrokenPipeError), open(path, "wb") as fh:
            fh.write(data)

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    return thread


def _stats_records(stdout: bytes) -> list[int]:
    return [int(line.split(b"\t")[2]) for line in stdout.splitlines()[1:]]


def test_02_pipe_fifo_and_stdin_input_lose_nothing(world, tmp_path):
    """``-`` and /dev/stdin (plain and gzip), a FIFO (plain and gzip), for stats,
    search and index: every record read."""
    plain = world["reads"].read_bytes()
    packed = gzip.compress(plain, mtime=0)
    for data in (plain, packed):
        proc = gseek_run("stats", "-", stdin=data)
        assert proc.returncode == 0 and _stats_records(proc.stdout) == [2000], proc.stderr
    proc = gseek_run("--quiet", "search", "-x", world["index"], "-q", "/dev/stdin", stdin=packed)
    assert proc.returncode == 0 and len(records(proc.stdout)) == 2000, proc.stderr
    for name, data in (("plain", plain), ("packed", packed)):
        fifo = tmp_path / name
        os.mkfifo(fifo)
        feeder = _feed_fifo(fifo, data)
        proc = gseek_run("stats", fifo, timeout=60)
        feeder.join(5)
        assert proc.returncode == 0 and _stats_records(proc.stdout) == [2000], proc.stderr
    proc = gseek_run("--quiet", "index", "/dev/stdin", "-o", tmp_path / "piped", "--wgram", "4",
                     stdin=world["contigs"].read_bytes())
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "piped.gseek" / "header.json").read_text())["stats"]["contigs"] == 100


# --------------------------------------------------------------------------- 3. an output that is an input


def test_03_an_output_that_is_an_input_is_refused(world, tmp_path):
    """``-q x.fq -o x.fq``, a pipeline list ``s.reads<TAB>s.reads`` with the output folder
    = the list's folder, ``-o IDX.gseek/header.json``: refused, nothing changed."""
    reads = tmp_path / "x.fq"
    shutil.copy(world["few"], reads)
    before = reads.read_bytes()
    proc = gseek_run("search", "-x", world["index"], "-q", reads, "-o", reads)
    assert proc.returncode == 2 and reads.read_bytes() == before  # a usage error (issue 36)
    one_line_error(proc.stderr, reads)
    # (a second column with a FASTA/FASTQ name is a mate file: the reads take a name without one here)
    plain = tmp_path / "x.reads"
    shutil.copy(world["few"], plain)
    (tmp_path / "list.txt").write_text("x.reads\tx.reads\n")
    proc = gseek_run("pipeline", "--queries", tmp_path / "list.txt", "-x", world["index"], "--outdir", tmp_path)
    assert proc.returncode == 2 and plain.read_bytes() == before
    index = tmp_path / "copy.gseek"
    shutil.copytree(world["index"], index)
    header = (index / "header.json").read_bytes()
    proc = gseek_run("search", "-x", index, "-q", reads, "-o", index / "header.json")
    assert proc.returncode == 2 and (index / "header.json").read_bytes() == header
    one_line_error(proc.stderr, index)


# --------------------------------------------------------------------------- 4. the index header


def _edit_header(index: Path, edit) -> None:
    head = index / "header.json"
    header = json.loads(head.read_text())
    edit(header)
    head.write_text(json.dumps(header, indent=1))


def test_04_a_bad_index_header_is_refused_before_any_kernel_runs(world, tmp_path):
    """One digit of C changed: refused, not 4 of 2,000 reads mapped; pos64 true on a
    32-bit index or a short C: one line, never SIGSEGV."""
    index = tmp_path / "bad.gseek"
    for edit, rule in [
        (lambda h: h["C"].__setitem__(2, h["C"][2] + 10), "C ["),
        (lambda h: h["parameters"].__setitem__("pos64", True), "occ_interval"),
        (lambda h: h.__setitem__("C", h["C"][:3]), "C must be a list of 5 integers"),
    ]:
        shutil.rmtree(index, ignore_errors=True)
        shutil.copytree(world["index"], index)
        _edit_header(index, edit)
        proc = gseek_run("search", "-x", index, "-q", world["reads"], "-o", tmp_path / "out.sam")
        assert proc.returncode == 1, (proc.returncode, proc.stderr)
        one_line_error(proc.stderr, index / "header.json", rule)
        assert not (tmp_path / "out.sam").exists() and not temporaries(tmp_path)


# the fields a header holds, and values a user (or a bad editor) could put there
_FIELDS = (
    [("C", i) for i in range(5)]
    + [("parameters", k) for k in ("sa_sample", "wgram", "pos64", "occ_interval", "mark_rows")]
    + [("stats", k) for k in ("contigs", "bases", "ambiguous", "segments", "text_length")]
    + [("format_version",), ("source",), ("C",), ("parameters",), ("stats",), ("parts",)]
    + [("parts", p, k) for p in ("occ", "dollar_rows", "sa_samples", "wgram", "contig_offsets", "text")
       for k in ("file", "dtype", "shape", "bytes", "sha256")]
)
_VALUES = st.one_of(
    st.tuples(st.just("+"), st.integers(-3, 3).filter(bool)),  # the original number, a little off
    st.integers(-3, 3),
    st.integers(-(2**40), 2**40),
    st.booleans(),
    st.none(),
    st.text(max_size=8),
    st.lists(st.integers(-5, 100_000), max_size=6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sampled_from(["<u4", "<i8", "|u1", "<f8", "O", "occ.npy", "../header.json"]),
)


@pytest.fixture(scope="module")
def fuzz_index(world, tmp_path_factory):
    """A private copy of the index, the expected SAM of 200 reads, and a runner of
    ``gseek search`` in this process (the fuzzer's hundreds of runs)."""
    root = tmp_path_factory.mktemp("fuzzhead")
    index = root / "i.gseek"
    shutil.copytree(world["index"], index)
    out = root / "out.sam"

    def search() -> tuple[int, str, bytes | None]:
        out.unlink(missing_ok=True)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(["--quiet", "--device", "cpu", "-p", "1", "search", "-x", str(index), "-q",
                         str(world["few"]), "-o", str(out)])
        return code, err.getvalue(), out.read_bytes() if out.exists() else None

    code, err, expected = search()
    assert code == 0 and expected, err
    return dict(index=index, search=search, expected=expected, header=(index / "header.json").read_text())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          derandomize=True)
@given(edits=st.lists(st.tuples(st.sampled_from(_FIELDS), _VALUES), min_size=1, max_size=3))
def test_04_fuzz_header_values(fuzz_index, edits):
    """Any values in header.json: the run is refused with one line naming the index,
    or it gives exactly the SAM of the intact index; never a crash."""
    index = fuzz_index["index"]
    header = json.loads(fuzz_index["header"])
    for path, value in edits:
        node = header
        for key in path[:-1]:
            node = node[key] if isinstance(node, dict) and key in node else None
            if node is None:
                break
        key = path[-1]
        if not (isinstance(node, dict) or isinstance(node, list) and isinstance(key, int) and key < len(node)):
            continue
        if isinstance(value, tuple):  # ("+", delta): nudge a number (one digit of C changed)
            old = node[key] if isinstance(node, list) or key in node else None
            value = old + value[1] if type(old) is int else old
        node[key] = value
    (index / "header.json").write_text(json.dumps(header))
    try:
        code, err, sam = fuzz_index["search"]()
    finally:
        (index / "header.json").write_text(fuzz_index["header"])
    if code == 0:
        assert sam == fuzz_index["expected"], f"exit 0 with other records: {edits}"
    else:
        assert code == 1 and sam is None, (code, err)
        assert err.count("\n") == 1 and err.startswith(f"gseek: error: {index}"), err


# --------------------------------------------------------------------------- 5. SIGTERM, SIGHUP, SIGKILL


@needs_proc
@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_05_signal_before_the_first_output_byte(world, tmp_path, signum, status):
    """Sent as soon as the handler is in place (start-up, index load): one line,
    128 + the signal, nothing written."""
    out = tmp_path / "out.sam"
    proc = gseek_start("search", "-x", world["index"], "-q", world["reads"], "-o", out)
    ready = wait_for(lambda: handler_installed(proc.pid, signum), proc, timeout=30)
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=TIMEOUT)
    assert ready and proc.returncode == status, (proc.returncode, stderr)
    assert stderr.decode() == f"gseek: terminated by {signal.Signals(signum).name}\n"
    assert not out.exists() and not temporaries(tmp_path) and stdout == b""


@needs_proc
def test_05_sigterm_while_writing_stdout(world):
    """stdout is a pipe nobody reads after the first line: gseek is blocked in a
    write when SIGTERM comes."""
    proc = gseek_start("search", "-x", world["index"], "-q", world["reads"], "-q", world["reads"])
    first = proc.stdout.readline()
    assert first.startswith(b"@HD")
    assert wait_for(lambda: handler_installed(proc.pid, signal.SIGTERM), proc)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 143 and stderr == b"gseek: terminated by SIGTERM\n", stderr


def _pipeline(world, folder: Path, files, *extra) -> tuple[list, Path]:
    listing = folder / "list.txt"
    listing.write_text("".join(f"{f}\n" for f in files))
    out = folder / "out"
    return [*GSEEK, "pipeline", "--queries", listing, "-x", world["index"], "--outdir", out, "--job-mb", "0.05",
            *extra], out


def _summary(out: Path) -> list[list[str]]:
    return [line.split("\t") for line in (out / "summary.tsv").read_text().splitlines()[1:]]


@needs_proc
def test_05_pipeline_sigterm_mid_write_then_sigkill_then_rerun(world, big, tmp_path):
    """SIGTERM while an output is half written: 143, temporaries removed, summary.tsv
    rewritten. Then SIGKILL at the same moment leaves a temporary, which the next
    run on the folder removes (with --resume too)."""
    command, out = _pipeline(world, tmp_path, [world["few"], big])
    half = lambda: any(p.name.startswith(".big.sam.tmp-") and p.stat().st_size for p in out.glob(".*"))  # noqa: E731
    proc = subprocess.Popen([str(a) for a in command], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert wait_for(half, proc), proc.communicate()
    proc.send_signal(signal.SIGSTOP)  # the moment is checked before the signal is delivered
    assert half() and not (out / "big.sam").exists()
    proc.send_signal(signal.SIGTERM)
    proc.send_signal(signal.SIGCONT)
    _, stderr = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 143 and stderr.decode().splitlines()[-1] == "gseek: terminated by SIGTERM", stderr
    assert temporaries(out) == [] and not (out / "big.sam").exists()
    rows = _summary(out)
    assert [r[1] for r in rows] == ["ok", "failed"] and rows[1][5] == "terminated by SIGTERM"

    proc = subprocess.Popen([str(a) for a in command], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert wait_for(half, proc), proc.communicate()
    proc.send_signal(signal.SIGSTOP)
    assert half() and not (out / "big.sam").exists()
    proc.kill()
    proc.communicate()
    left = temporaries(out)
    assert left and left[0].startswith(".big.sam.tmp-")
    big_again = tmp_path / "big.fq"
    shutil.copy(world["few"], big_again)  # the rerun is quick: the same output name, a small input
    command, out = _pipeline(world, tmp_path, [world["few"], big_again], "--resume")
    done = subprocess.run([str(a) for a in command], capture_output=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert temporaries(out) == [] and [r[1] for r in _summary(out)] == ["skipped", "ok"]


def test_05_stale_temporaries_of_a_single_output(world, tmp_path):
    """``search -o out.sam`` and ``index -o ref``: what a killed run left
    (``.NAME.tmp-PID`` of a PID that no longer runs) is removed; a running
    process's temporary is left alone."""
    gone, alive = _ended_pid(), os.getpid()
    for name in (f".out.sam.tmp-{gone}", f".out.bam.sam.tmp-{gone}", f".out.sam.tmp-{alive}"):
        (tmp_path / name).write_text("half")
    (tmp_path / f".ref.gseek.tmp-{gone}").mkdir()
    (tmp_path / f".ref.gseek.tmp-{gone}" / "occ.npy").write_text("half")
    proc = gseek_run("--quiet", "search", "-x", world["index"], "-q", world["few"], "-o", tmp_path / "out.sam")
    assert proc.returncode == 0, proc.stderr
    proc = gseek_run("--quiet", "index", world["contigs"], "-o", tmp_path / "ref", "--wgram", "2")
    assert proc.returncode == 0, proc.stderr
    assert temporaries(tmp_path) == [f".out.bam.sam.tmp-{gone}", f".out.sam.tmp-{alive}"]


@needs_proc
def test_05_sigterm_while_an_index_is_saved(world, tmp_path):
    """The index's temporary folder is present (the process is stopped there, so
    the moment is sure) when SIGTERM comes: 143, one line, no folder left."""
    saving = False
    for attempt in range(5):
        prefix = tmp_path / f"ref{attempt}"
        proc = gseek_start("index", lambda_genome(), "-o", prefix)  # w = 12: a 128 MiB table to write
        tmp = tmp_path / f".ref{attempt}.gseek.tmp-{proc.pid}"
        if not wait_for(tmp.exists, proc):  # the save began and ended between two polls (a loaded machine)
            out, err = proc.communicate(timeout=TIMEOUT)
            assert proc.returncode == 0 and Path(f"{prefix}.gseek").exists(), (out, err)
            continue
        proc.send_signal(signal.SIGSTOP)
        saving = tmp.exists() and not Path(f"{prefix}.gseek").exists()
        proc.send_signal(signal.SIGTERM)
        proc.send_signal(signal.SIGCONT)
        _, stderr = proc.communicate(timeout=TIMEOUT)
        if saving:
            break
    assert saving, "never caught the save in 5 tries"
    assert proc.returncode == 143 and stderr.decode().splitlines()[-1] == "gseek: terminated by SIGTERM", stderr
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(f".ref{attempt}") or
            p.name == f"ref{attempt}.gseek"] == []


# --------------------------------------------------------------------------- 6. output checked up front


def test_06_an_output_that_is_a_directory_is_refused_up_front(world, tmp_path):
    folder = tmp_path / "x.sam"
    folder.mkdir()
    proc = gseek_run("search", "-x", world["index"], "-q", world["few"], "-o", folder)
    assert proc.returncode == 1
    one_line_error(proc.stderr, folder)
    assert ".tmp-" not in proc.stderr.decode() and temporaries(tmp_path) == []


# --------------------------------------------------------------------------- 7. closed stdout, early-closed pipe


def test_07_closed_stdout_is_one_line_and_exit_1(world):
    """``>&-``: nothing can be written; one line, exit 1, for search and stats."""
    for args in (["search", "-x", world["index"], "-q", world["few"]], ["stats", world["few"]]):
        proc = subprocess.run([*GSEEK, *map(str, args)], stdout=None, stderr=subprocess.PIPE,
                              pass_fds=(), close_fds=True, preexec_fn=lambda: os.close(1), timeout=TIMEOUT)
        assert proc.returncode == 1, proc.stderr
        one_line_error(proc.stderr, "standard output")


@pytest.mark.parametrize("unbuffered", ["1", ""])
@pytest.mark.parametrize("inputs", [1, 2])
def test_07_early_closed_pipe_stops_quietly_with_141(world, inputs, unbuffered):
    """``| head -1``: the reader takes one line and closes; the rest (> a pipe's
    buffer) cannot be written. gseek stops quietly with 128 + SIGPIPE, with one
    input or several, with stdout buffered or not."""
    env = dict(os.environ, PYTHONUNBUFFERED=unbuffered)
    proc = gseek_start("search", "-x", world["index"], *(["-q", world["reads"]] * inputs), env=env)
    assert proc.stdout.readline().startswith(b"@HD")
    proc.stdout.close()
    stderr = proc.stderr.read()
    proc.wait(TIMEOUT)
    assert proc.returncode == 141 and stderr == b"", stderr


# --------------------------------------------------------------------------- 8. long read names


def test_08_read_names_over_254_characters(world, tmp_path):
    """Refused up front naming file:line, or truncated with a warning; never
    SAM that samtools rejects."""
    import pysam

    reads = tmp_path / "long.fq"
    reads.write_text(world["few"].read_text() + f"@{'n' * 300}\n{'ACGT' * 10}\n+\n{'I' * 40}\n")
    out = tmp_path / "out.sam"
    proc = gseek_run("search", "-x", world["index"], "-q", reads, "-o", out)
    if proc.returncode == 0:
        assert b"warning" in proc.stderr
        with pysam.AlignmentFile(str(out)) as sam:
            assert all(len(r.query_name) <= 254 for r in sam)
    else:
        assert proc.returncode == 1 and not out.exists()
        one_line_error(proc.stderr, f"{reads}:801")


# --------------------------------------------------------------------------- 9. concurrent runs, resume by content


def test_09_a_second_run_on_the_folder_is_refused(world, big, tmp_path):
    """A --resume run started beside a running pipeline is refused at once (one
    line) and touches nothing of the first run."""
    command, out = _pipeline(world, tmp_path, [world["few"], big])
    first = subprocess.Popen([str(a) for a in command], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    half = lambda: any(p.name.startswith(".big.sam.tmp-") for p in out.glob(".*"))  # noqa: E731
    assert wait_for(half, first), first.communicate()
    first.send_signal(signal.SIGSTOP)  # held mid-write while the second run tries
    summary = (out / "summary.tsv").read_bytes() if (out / "summary.tsv").exists() else None
    second = subprocess.run([str(a) for a in command] + ["--resume"], capture_output=True, timeout=TIMEOUT)
    live = [p.name for p in out.glob(".big.sam.tmp-*")]
    first.send_signal(signal.SIGTERM)
    first.send_signal(signal.SIGCONT)
    first.communicate(timeout=TIMEOUT)
    assert second.returncode == 1
    one_line_error(second.stderr, out, "in use by another gseek run", f"pid {first.pid}")
    assert live == [f".big.sam.tmp-{first.pid}"]
    assert summary is None  # the second run wrote no summary over the first's


def test_09_resume_checks_outputs_by_content(world, tmp_path):
    """An output overwritten with garbage of the same size is redone by --resume."""
    command, out = _pipeline(world, tmp_path, [world["few"]])
    assert subprocess.run([str(a) for a in command], capture_output=True, timeout=TIMEOUT).returncode == 0
    sam = out / "few.sam"
    good = sam.read_bytes()
    sam.write_bytes(b"x" * len(good))
    done = subprocess.run([str(a) for a in command] + ["--resume"], capture_output=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert [r[1] for r in _summary(out)] == ["ok"] and records(sam.read_bytes()) == records(good)  # @PG CL differs
    done = subprocess.run([str(a) for a in command] + ["--resume"], capture_output=True, timeout=TIMEOUT)
    assert [r[1] for r in _summary(out)] == ["skipped"]


# --------------------------------------------------------------------------- 10. the rename is the only step


_KILL_AT_REPLACE = (
    "import os, signal, sys; real = os.replace\n"
    "def replace(src, dst, *a, **k):\n"
    "    if str(dst).endswith('out.sam'): os.kill(os.getpid(), signal.SIGKILL)\n"
    "    return real(src, dst, *a, **k)\n"
    "os.replace = replace\n"
    "sys.argv[0] = 'gseek'\n"
    "from gseek.cli import run; run()\n"
)


def test_10_a_kill_before_the_rename_keeps_the_old_output(world, tmp_path):
    """Killed just before the complete output is renamed into place: the previous
    output is still there (os.replace alone swaps them atomically)."""
    out = tmp_path / "out.sam"
    out.write_text("previous output\n")
    proc = subprocess.run([sys.executable, "-c", _KILL_AT_REPLACE, "--device", "cpu", "--quiet", "search", "-x",
                           str(world["index"]), "-q", str(world["few"]), "-o", str(out)], capture_output=True,
                          timeout=TIMEOUT)
    assert proc.returncode == -signal.SIGKILL
    assert out.read_text() == "previous output\n"


# --------------------------------------------------------------------------- 11. smaller ones


@pytest.mark.parametrize("case", [
    "suffix",
    "max-hits",
    "stats-closed-stdout",
    "qname",
])
def test_11_smaller_cases(world, tmp_path, case):
    if case == "suffix":  # -o x.sam.gz / x.BAM / x.cram: the format the suffix says, or refused
        for name, magic in (("x.sam.gz", b"\x1f\x8b"), ("x.BAM", b"\x1f\x8b"), ("x.cram", b"CRAM")):
            out = tmp_path / name
            proc = gseek_run("--quiet", "search", "-x", world["index"], "-q", world["few"], "-o", out)
            if proc.returncode == 0:
                assert out.read_bytes()[: len(magic)] == magic, name
            else:
                one_line_error(proc.stderr, name)
                assert not out.exists()
    elif case == "max-hits":  # the same kind of mistake, the same exit status
        a = gseek_run("search", "-x", world["index"], "-q", world["few"], "--max-hits", "2")
        b = gseek_run("search", "-x", world["index"], "-q", world["few"], "-k", "2", "--all")
        assert a.returncode == b.returncode and a.returncode in (1, 2), (a.stderr, b.stderr)
    elif case == "stats-closed-stdout":
        proc = subprocess.run([*GSEEK, "stats", str(world["few"])], stderr=subprocess.PIPE,
                              preexec_fn=lambda: os.close(1), timeout=TIMEOUT)
        assert proc.returncode == 1
        one_line_error(proc.stderr, "standard output")
    else:  # QNAME: [!-?A-~]{1,254} (SAM spec): a non-ASCII name refused naming file:line
        reads = tmp_path / "names.fq"
        reads.write_bytes("@r\u00e9ad\nACGTACGTACGTACGTACGT\n+\nIIIIIIIIIIIIIIIIIIII\n".encode())
        proc = gseek_run("search", "-x", world["index"], "-q", reads, "-o", tmp_path / "out.sam")
        assert proc.returncode == 1 and not (tmp_path / "out.sam").exists()
        one_line_error(proc.stderr, f"{reads}:1")


# --------------------------------------------------------------------------- the FASTA/FASTQ parser


_RECORD = st.one_of(
    st.builds(lambda n, s, q: f"@{n}\n{s}\n+\n{q}\n", st.text("abc_1", min_size=0, max_size=5),
              st.text("ACGTNacgtn", max_size=30), st.text("!#I~", max_size=30)),
    st.builds(lambda n, s: f">{n}\n{s}\n", st.text("abc_1 ", max_size=5), st.text("ACGTN\n", max_size=40)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          derandomize=True)
@given(data=st.one_of(
    st.binary(max_size=200),
    st.lists(_RECORD, max_size=5).map(lambda r: "".join(r).encode()),
    st.tuples(st.lists(_RECORD, min_size=1, max_size=4), st.integers(0, 10_000), st.binary(max_size=3))
    .map(lambda t: _splice("".join(t[0]).encode(), t[1], t[2])),
), gz=st.booleans())
def test_fuzz_fastx_parser(tmp_path, data, gz):
    """Any bytes, plain or gzip: records, or a FastxError naming the file; nothing else."""
    path = tmp_path / "fuzz.fq"
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    try:
        batch = gseek.read_fastx(path)
    except FastxError as exc:
        assert str(exc).startswith(str(path)) and "\n" not in str(exc), str(exc)
        return
    assert len(batch) >= 1 and batch.offsets[-1] == batch.codes.size


def _splice(text: bytes, at: int, junk: bytes) -> bytes:
    at %= len(text) + 1
    return text[:at] + junk + text[at + len(junk):]

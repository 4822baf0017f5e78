"""A first command that compiles says so (issue 37): a real cold compile in a fresh process, and the
line a terminal sees while the compiler runs."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time

import pytest

from gseek.compile_notice import CompileNotice


def test_a_cold_command_announces_its_compile_and_its_time(tmp_path):
    """``gseek stats`` with no machine code anywhere (an empty Numba cache, the prebuilt code off) compiles
    the parser: one notice line first, one line with the count and the seconds last; --quiet: neither."""
    fasta = tmp_path / "a.fa"
    fasta.write_text(">a\nACGTN\n")
    for quiet in ((), ("--quiet",)):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "GSEEK_"))}
        env.update(GSEEK_PREBUILT="0", NUMBA_CACHE_DIR=str(tmp_path / f"cache{len(quiet)}"))
        proc = subprocess.run([sys.executable, "-m", "gseek", *quiet, "stats", str(fasta)], env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines()[1].startswith(f"{fasta}\tfasta\t1\t5\t")
        if quiet:
            assert proc.stderr == ""
            continue
        lines = proc.stderr.splitlines()
        assert lines[0] == CompileNotice.TEXT and proc.stderr.count("compiling") == 1
        assert re.fullmatch(r"\[gseek\] compiled \d+ kernel functions? in \d+\.\d s \(later commands load (it|them) "
                            r"from the cache\)", lines[-1]), lines


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_line_counts_functions_and_seconds():
    from numba.core import event

    term = _Terminal()
    with CompileNotice(stream=lambda: term, interval=0.01):
        for _ in range(3):
            with event.trigger_event("numba:compile", data={}):
                time.sleep(0.05)
    shown = term.getvalue()
    updates = shown.split("\r")[1:]
    assert len(updates) >= 4 and all(u.startswith(CompileNotice.TEXT + ": ") for u in updates[:-1])
    assert f"{CompileNotice.TEXT}: 3 functions, 0 s" in shown
    assert shown.endswith("\n[gseek] compiled 3 kernel functions in 0.2 s (later commands load them from the cache)\n")


def test_the_notice_waits_for_numba_and_hears_its_first_compile():
    """Entering a notice loads no Numba (``gseek search --server`` never compiles: 0.2 s saved); a compile
    once Numba is loaded later in the command is still announced, and leaving the notice leaves no finder."""
    code = """if True:
        import io, sys
        from gseek.compile_notice import CompileNotice
        out, inner = io.StringIO(), io.StringIO()
        finders = list(sys.meta_path)
        with CompileNotice(stream=lambda: out):
            with CompileNotice(stream=lambda: inner):  # one inside another: both hear it
                assert "numba" not in sys.modules and "numpy" not in sys.modules
                from gseek.kernels._jit import njit
                assert njit()(lambda x: x + 1)(1) == 2
        assert sys.meta_path == finders
        assert inner.getvalue() == out.getvalue()
        print(out.getvalue().count("compiling"), out.getvalue().splitlines()[-1][:26])
    """
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "1 [gseek] compiled 1 kernel \n"


def test_the_command_process_puts_its_openmp_threads_to_sleep():
    """``gseek.cli.run`` sets ``OMP_WAIT_POLICY=passive`` before anything loads Numba (libgomp reads it when
    Numba's ``omp`` layer loads it), and keeps a value the environment gives."""
    code = ("import os, sys; import gseek.cli.process as p; "
            "p.main = lambda: print(os.environ.get('OMP_WAIT_POLICY'), 'numba' in sys.modules) or 0; p.run()")
    for given, shown in ((None, "passive False"), ("active", "active False")):
        env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
        env.update({} if given is None else {"OMP_WAIT_POLICY": given})
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == shown


def test_a_blast_search_imports_what_it_runs_only(tmp_path):
    """``gseek search --task megablast`` (``-outfmt 6``) loads neither the mapper, the DP aligner, the SAM
    writers (pysam), the pipeline runner, the cluster nor the XML/JSON reports (docs/startup.md, "What a BLAST
    command imports"), nor the NW/SW and X-drop DP it does not run, nor the FM-index's builder and stages, nor
    ``numpy.ma`` where it compiles nothing (Numba's typing of an argument array imports it:
    ``gseek.kernels._jit._typeof_argument``; NumPy's ``unique``: ``gseek.ragged.even_cuts``; a compile's typing
    of a constant array still does, as on a branch whose prebuilt code is stale)."""
    from gseek.datasets import lambda_genome
    from gseek.seqio import read_fastx

    genome = read_fastx(lambda_genome()).sequence(0)
    (tmp_path / "q.fa").write_text(f">q1\n{genome[2000:2600]}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GSEEK_")}
    subprocess.run([sys.executable, "-m", "gseek", "--quiet", "--device", "cpu", "index", lambda_genome(), "--parts",
                    "text", "-o", str(tmp_path / "db")], env=env, check=True, capture_output=True, timeout=300)
    unwanted = ("gseek.mapper", "gseek.align", "gseek.output.sam", "pysam", "gseek.pipeline.runner",
                "gseek.pipeline.cluster", "gseek.pipeline.tasks.map", "gseek.pipeline.tasks.align",
                "gseek.blast.xml_report", "gseek.blast.json_report", "gseek.dp.nwsw", "gseek.dp.xdrop",
                "gseek.kernels.dp", "gseek.kernels.dp_xdrop", "gseek.kernels.dp_lanes", "gseek.index.build",
                "gseek.index.search")
    code = ("import sys; from gseek.cli import main; from numba.core import event; compiled = []; "
            "event.register('numba:compile', type('Seen', (event.Listener,), {'on_start': lambda self, ev: None, "
            "'on_end': lambda self, ev: compiled.append(ev)})()); "
            f"code = main(['--quiet', '--device', 'cpu', '-p', '1', 'search', '--task', 'megablast', '-x', "
            f"{str(tmp_path / 'db')!r}, '-q', {str(tmp_path / 'q.fa')!r}, '-o', {str(tmp_path / 'o.tsv')!r}]); "
            f"print(code, sorted(m for m in {unwanted!r} if m in sys.modules), "
            "'numpy.ma' in sys.modules and not compiled)")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0 [] False", proc.stdout
    assert (tmp_path / "o.tsv").read_text().startswith("q1\t")


@pytest.mark.parametrize("task, loaded", [("blast", "1 1"), ("map", "1 0 1")])
def test_the_host_warm_up_writes_no_file(tmp_path, task, loaded):
    """``warm_host`` loads the parser's Numba code (BLAST: by threads, its chunk skim too; mapping: and the
    selection) from records given through a pipe: it needs no writable temporary folder and writes no
    file, so a signal that ends the command during its start leaves nothing behind."""
    code = ("import tempfile; tempfile.tempdir = '/nonexistent/gseek-tmp'\n"
            "from gseek.pipeline.tasks import warm_host\n"
            f"warm_host({task!r}).join()\n"
            "from gseek.seqio import parser\n"
            "n = [len(parser.parse_chunk.signatures), len(parser.skim_chunk.signatures)]\n"
            "if 'gseek.mapper.select' in __import__('sys').modules:\n"
            "    n.append(len(__import__('gseek.mapper.select').mapper.select.group.signatures))\n"
            "print(*n)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GSEEK_")}
    env["TMPDIR"] = str(tmp_path / "missing")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == loaded
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("delay", [0.2, 0.6])
def test_a_signal_during_a_blast_commands_start_leaves_nothing(tmp_path, delay):
    """SIGTERM while a BLAST command starts (imports, the host warm-up, the index's load): exit 143 (or 0
    where it had finished; or killed by the signal itself, -15 here and 143 to a shell, where it came before
    the interpreter had installed gseek's handler: seen on a loaded machine at 0.2 s), no temporary file
    anywhere, no output under its name unless complete."""
    import signal

    from gseek.datasets import lambda_genome
    from gseek.seqio import read_fastx

    genome = read_fastx(lambda_genome()).sequence(0)
    (tmp_path / "q.fa").write_text(f">q1\n{genome[2000:2600]}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GSEEK_")}
    subprocess.run([sys.executable, "-m", "gseek", "--quiet", "--device", "cpu", "index", lambda_genome(), "--parts",
                    "text", "-o", str(tmp_path / "db")], env=env, check=True, capture_output=True, timeout=300)
    (tmp_path / "tmp").mkdir()
    env["TMPDIR"] = str(tmp_path / "tmp")
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = subprocess.Popen([sys.executable, "-m", "gseek", "--quiet", "--device", "auto", "search", "--task",
                             "megablast", "-x", str(tmp_path / "db"), "-q", str(tmp_path / "q.fa"), "-o",
                             str(tmp_path / "o.tsv")], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(delay)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode in (143, 0, -signal.SIGTERM), err
    assert sorted((tmp_path / "tmp").iterdir()) == []
    after = sorted(p.name for p in tmp_path.iterdir())
    assert after in (before, sorted(before + ["o.tsv"])), after
    if proc.returncode == 0:
        assert (tmp_path / "o.tsv").read_text().startswith("q1\t")
    else:
        assert b"Traceback" not in err

"""A first command that compiles says so (issue 37): a real cold compile in a fresh process, and the
line a terminal sees while the compiler runs."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time

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

"""The command's process: the entry points (:func:`main`, :func:`run`), exit codes,
signals (SIGTERM/SIGHUP/SIGINT unwind as Ctrl-C), a closed stdout, one-line errors,
and the fast exit (docs/exit-codes.md)."""

from __future__ import annotations

import errno
import functools
import io
import os
import signal
import sys
import warnings

import click

from ..errors import GseekError, GseekWarning, Terminated, deliver_signal, one_line
from .app import STATE, BrokenPipe, cli

#: Exit status when the reader of stdout went away (``| head -1``): 128 + SIGPIPE,
#: what a shell reports for samtools or bowtie killed by SIGPIPE (docs/exit-codes.md).
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
#: Signals handled like Ctrl-C (exit 128 + the signal number: SIGTERM 143, SIGHUP 129).
TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
#: The command's OpenMP threads sleep between Numba's parallel passes (read by libgomp when Numba's
#: ``omp`` layer loads it, at the first parallel call: set before). By default each spins up to
#: ~300,000 rounds after a pass; a CPU search runs dozens of short passes, and on a host whose cores
#: are busy the spinning took the cores the work needed: megablast of 600 x 500 bp against 240 kb on
#: the loaded 2-core VM, ``-p 2``, search stage 0.30-0.95 s wall, 0.2-0.6 s CPU spinning; asleep
#: 0.14-0.33 s, 0.13-0.16 s (one thread's CPU time). A value the user set is kept.
OMP_WAIT = ("OMP_WAIT_POLICY", "passive")
#: Imports the command's own process refuses (:func:`run`); each importer falls back without it.
#: ``scipy.linalg.cython_blas``: Numba's CPU target offers ``np.dot``/``np.linalg`` in compiled code with
#: it (0.37 s on the 2-core VM, 0.52 s on the GPU host). ``scipy.sparse``: CuPy's ``cupyx.scipy.sparse``
#: converts to and from SciPy's matrices with it, and CuPy imports ``cupyx`` (and through
#: ``cupyx.linalg`` its sparse package) on a process's first arithmetic kernel: 0.17 s of SciPy's sparse
#: and array-API imports on the H200 host, on a thread beside the command's (``backend._LATE_IMPORTS``)
#: but holding the interpreter's lock from it. gseek's compiled code uses neither; CuPy's imports of
#: ``scipy.sparse`` are each guarded (``except ImportError``: its own classes without SciPy's).
REFUSED_IMPORTS = ("scipy.linalg.cython_blas", "scipy.sparse")


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI, print errors as one line, return the exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    STATE.__dict__.update(device="auto", threads=0, quiet=False, debug="--debug" in args, argv=tuple(args))
    with warnings.catch_warnings():
        warnings.simplefilter("always", GseekWarning)  # one line per warning, each time (several files)
        warnings.showwarning = functools.partial(_show_warning, warnings.showwarning)
        return _main(args)


def _show_warning(show, message, category, *args, **kwargs) -> None:
    """A :class:`~gseek.errors.GseekWarning` as one line, ``gseek: warning: ...`` (none with ``--quiet``)."""
    if not issubclass(category, GseekWarning):
        show(message, category, *args, **kwargs)
    elif not STATE.quiet:
        click.echo(f"gseek: warning: {one_line(message)}", err=True)


def _main(args: list[str]) -> int:
    try:
        code = cli.main(args=args, prog_name="gseek", standalone_mode=False)
        if sys.stdout is not None:
            sys.stdout.flush()  # an error writing what is still buffered is the command's error
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except Terminated as exc:  # SIGTERM, SIGHUP (run()): cleaned up as Ctrl-C is
        click.echo(f"gseek: {exc}", err=True)
        return exc.exit_status
    except (BrokenPipe, BrokenPipeError):  # the reader of stdout went away: stop quietly, as samtools does
        return EXIT_BROKEN_PIPE
    except click.Abort:
        click.echo("gseek: interrupted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except (GseekError, OSError, ValueError, MemoryError) as exc:
        if STATE.debug:
            raise
        click.echo(f"gseek: error: {one_line(exc)}", err=True)
        return getattr(exc, "exit_status", 1)  # OutputClash: 2, a usage error
    except KeyboardInterrupt:
        click.echo("gseek: interrupted", err=True)
        return 130
    return code if isinstance(code, int) else 0  # a command's ctx.exit(N) (pipeline: a file failed)


def run() -> None:
    """Console-script entry point (``gseek``, ``python -m gseek``): :func:`main`
    in a process of its own (see :func:`exit_now`), which Numba starts without
    SciPy's BLAS.

    Numba's CPU target imports ``scipy.linalg.cython_blas`` as it starts, when
    SciPy is installed, to offer ``np.dot`` and ``np.linalg`` in compiled code:
    0.37 s of imports on the 2-core VM and 0.52 s on the GPU host (SciPy pulls
    in ``numpy.f2py``), in every command's start-up. gseek's compiled code uses
    neither, so the command's own process refuses that import and Numba
    records that it has no BLAS; so too SciPy's sparse package, which CuPy's
    first arithmetic kernel would import (:data:`REFUSED_IMPORTS`). A program
    importing gseek is left as it is.

    The process's OpenMP threads (Numba's ``omp`` layer, GNU libgomp) also wait
    for work asleep rather than spinning (:data:`OMP_WAIT`), unless the
    environment says otherwise.
    """
    for name in REFUSED_IMPORTS:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
    os.environ.setdefault(*OMP_WAIT)
    _standard_streams()
    try:  # a signal as soon as its handler is in place (before main's own try) still says one line
        for signum in TERMINATING_SIGNALS:
            if signal.getsignal(signum) is not signal.SIG_IGN:  # ignored stays ignored (nohup: SIGHUP)
                signal.signal(signum, _terminate)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where the shell ignores it (&)
            signal.signal(signal.SIGINT, _interrupt)
        code = main()
    except Terminated as exc:  # arrived before main's own handler: said here, as main says it
        print(f"gseek: {exc}", file=sys.stderr)
        code = exc.exit_status
    except KeyboardInterrupt:
        print("gseek: interrupted", file=sys.stderr)
        code = 130
    exit_now(code)


def _terminate(signum: int, frame) -> None:
    """SIGTERM/SIGHUP handler: raise :class:`~gseek.errors.Terminated` in the main
    thread, which unwinds like Ctrl-C. Later signals (these and SIGINT) are ignored
    so that they cannot interrupt the clean-up (SIGKILL still ends the process)."""
    _ignore_later_signals()
    deliver_signal(Terminated(signum))  # raised now, or where a signals_held block ends


def _interrupt(signum: int, frame) -> None:
    """SIGINT (Ctrl-C) handler: ``KeyboardInterrupt``, as Python's own, except that
    a :class:`~gseek.errors.signals_held` block finishes first; later signals are
    ignored, as after SIGTERM."""
    _ignore_later_signals()
    deliver_signal(KeyboardInterrupt())


def _ignore_later_signals() -> None:
    for other in (*TERMINATING_SIGNALS, signal.SIGINT):
        if signal.getsignal(other) in (_terminate, _interrupt):
            signal.signal(other, signal.SIG_IGN)


class _ClosedStdout(io.TextIOBase):
    """``sys.stdout`` when the process started with descriptor 1 closed (``>&-``):
    every write raises ``OSError(EBADF)`` naming standard output, so a command
    that writes there fails with one line instead of dropping its output
    (Python would leave ``sys.stdout`` None, which click writes nothing to)."""

    encoding = "utf-8"
    errors = "strict"

    @property
    def buffer(self) -> _ClosedStdout:  # binary writers (SAM) fail the same way
        return self

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF), "standard output")


def _standard_streams() -> None:
    """Descriptors 0, 1, 2 closed at start are opened on /dev/null, so no file the
    command opens takes their number; a closed stdout then fails every write to it.

    Under ``PYTHONUNBUFFERED`` (or ``-u``) ``sys.stdout.buffer`` is the raw file,
    whose ``write`` may write part of the data (a pipe, a signal) and say so only
    in its return value; the binary writers (SAM) write through a buffered
    writer instead, which writes it all or raises. Text still goes out at once.
    """
    if isinstance(getattr(sys.stdout, "buffer", None), io.RawIOBase):
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(sys.stdout.buffer), encoding=sys.stdout.encoding,
                                      errors=sys.stdout.errors, line_buffering=sys.stdout.line_buffering,
                                      write_through=True)
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            if fd == 1:
                sys.stdout = _ClosedStdout()


def exit_now(code: int) -> None:
    """End the process with ``code`` once stdout and stderr are flushed, without
    the interpreter's teardown.

    Every output is complete and closed (renamed into place) when a command
    returns; what is left is freeing GBs of arrays one by one, the device
    context and the import state (0.25-0.3 s of mapping 200k reads on the
    2-core VM, for nothing). Only for a process run as the command line
    (``gseek``, ``python -m gseek``): :func:`main` itself returns. A BAM
    writer still open (a signal landed between its making and the block
    that closes it) is aborted first: its child killed, its temporaries removed.
    """
    for signum in (*TERMINATING_SIGNALS, signal.SIGINT):  # the process is ending: nothing may cut this short
        signal.signal(signum, signal.SIG_IGN)
    bam = sys.modules.get("gseek.output.bam")  # loaded only where a BAM or CRAM was written
    if bam is not None:
        bam.abort_open_writers()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: the descriptor was closed when the process started
                stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can be said there
            pass
    os._exit(code)

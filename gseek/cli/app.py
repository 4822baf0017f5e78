"""What every command shares: the ``gseek`` click group, the options every command takes
(``--device``, ``-p``, ``--quiet``, ``--debug``, before or after the command name) and the
state they set, the backend they choose, and the small helpers of the command modules."""

from __future__ import annotations

import errno
import shlex

import click


DEVICE_CHOICE = click.Choice(["auto", "cpu", "gpu"], case_sensitive=False)

class _State:
    device: str = "auto"
    threads: int = 0
    quiet: bool = False
    debug: bool = False
    argv: tuple[str, ...] = ()


STATE = _State()


def common(func):
    """Options every command takes; given after the command they override the group's."""

    def set_opt(name):
        def callback(ctx, param, value):
            if value is not None and value is not False:
                setattr(STATE, name, value)
            return value

        return callback

    func = click.option("--device", type=DEVICE_CHOICE, default=None, expose_value=False,
                        callback=set_opt("device"), help="Where kernels run: auto (GPU if found), cpu, gpu.")(func)
    func = click.option("-p", "--threads", type=click.IntRange(min=0), default=None, expose_value=False,
                        callback=set_opt("threads"), help="CPU threads (0 = all cores).")(func)
    func = click.option("--quiet", is_flag=True, default=None, expose_value=False,
                        callback=set_opt("quiet"), help="No progress or summary on stderr.")(func)
    func = click.option("--debug", is_flag=True, default=None, expose_value=False,
                        callback=set_opt("debug"), help="Show tracebacks on errors.")(func)
    return func


def backend(device: str | None = None):
    """The backend of ``--device`` (or of ``device``), with ``-p`` threads."""
    from ..backend import get_backend

    return get_backend(device or STATE.device, threads=STATE.threads)


def say(message: str) -> None:
    if not STATE.quiet:
        click.echo(message, err=True)


class BrokenPipe(Exception):
    """A write to a pipe whose reader went away (EPIPE), out of the command:
    click would end the process with ``sys.exit(1)``; :func:`main` returns
    :data:`~gseek.cli.process.EXIT_BROKEN_PIPE`."""


class Group(click.Group):
    def invoke(self, ctx: click.Context):
        from ..compile_notice import CompileNotice

        try:
            with CompileNotice(quiet=lambda: STATE.quiet):  # any command may compile: it says so, once
                return super().invoke(ctx)
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                raise BrokenPipe(str(exc)) from exc
            raise


def _version(ctx: click.Context, param, value) -> None:
    """``gseek --version``: the version, the backend, CuPy's and Numba's versions, and whether the shipped
    machine code is current here (:func:`gseek.precompile.status`)."""
    if value and not ctx.resilient_parsing:
        from ..precompile import status

        click.echo(str(status()))
        ctx.exit()


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_version,
              help="Show the version, the backend, Numba's and CuPy's versions and whether the shipped machine "
                   "code is current here, and exit.")
@common
def cli() -> None:
    """gseek: GPU sequence search -- FM-index read mapping, BLASTN-style search and
    batched NW/SW alignment, with an identical CPU backend."""


def remove_stale_temporaries(output: str | None) -> None:
    """What a killed earlier run left beside ``output`` (``.NAME.tmp-PID``; docs/exit-codes.md)."""
    if output and output != "-":
        from ..seqio.atomic import remove_stale_temporaries

        remove_stale_temporaries(output)


def command_line() -> str:
    """The command as the user typed it, for SAM @PG CL and BLAST headers: each tab, newline or
    carriage return a space (samtools' ``stringify_argv`` turns tabs into spaces; a header line
    holds none of them)."""
    return " ".join(shlex.quote(a) for a in ["gseek", *STATE.argv]).translate({9: " ", 10: " ", 13: " "})


def given(names) -> list[str]:
    """The options among ``names`` (parameter names) set on the command line, as ``--option`` text."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    by_name = {p.name: p for p in ctx.command.params}
    return ["/".join([max(by_name[n].opts, key=len), *by_name[n].secondary_opts]) for n in names
            if ctx.get_parameter_source(n) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)]


def gpu_list(ctx, param, value):
    """``--gpus 0,1`` as a list of ordinals."""
    if value is None:
        return None
    try:
        gpus = [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"expected GPU ordinals like 0,1, not {value!r}") from None
    if not gpus or any(g < 0 for g in gpus) or len(set(gpus)) != len(gpus):
        raise click.BadParameter(f"expected distinct GPU ordinals like 0,1, not {value!r}")
    return gpus

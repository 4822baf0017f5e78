"""``gseek demo``: the embedded lambda data, mapped and searched."""

from __future__ import annotations

import time
from pathlib import Path

import click

from .app import backend, cli, command_line, common, say


@cli.command()
@click.option("-o", "--outdir", default="gseek-demo", show_default=True, help="Where to write the demo SAM.")
@common
def demo(outdir) -> None:
    """Run gseek on the embedded lambda phage genome and reads; write SAM to OUTDIR."""
    from ..demo import run_demo

    started = time.perf_counter()
    summary = run_demo(backend(), Path(outdir), command=command_line())
    for line in summary:
        click.echo(line)
    say(f"[gseek] demo finished in {time.perf_counter() - started:.2f} s")


"""``gseek serve``: the resident search service (docs/serve.md)."""

from __future__ import annotations

import dataclasses
import functools

import click

from .app import STATE, cli, common, gpu_list
from .options import usage_errors


def with_limit_options(func):
    """``gseek serve``'s limits, one option each (``--max-body`` ...), into one ``limits`` dict."""
    from ..serve.limits import LIMIT_HELP, Limits

    fields = dataclasses.fields(Limits)

    @functools.wraps(func)
    def wrapper(**kwargs):
        given = {f.name: kwargs.pop(f.name) for f in fields}
        return func(limits={k: v for k, v in given.items() if v is not None}, **kwargs)

    for f in reversed(fields):
        wrapper = click.option(f"--{f.name.replace('_', '-')}", type=type(f.default), default=None,
                               help=f"{LIMIT_HELP[f.name]} [{f.default:,}].")(wrapper)
    return wrapper


@cli.command()
@click.option("-x", "--database", "databases", metavar="[NAME=]PATH", multiple=True, required=True,
              help="A `gseek index` directory to serve, named NAME (default: its folder's name); repeatable.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; other than loopback needs --token-file or --insecure.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="Port (0: a free one).")
@click.option("--token-file", metavar="FILE", help="Require 'Authorization: Bearer TOKEN', TOKEN the file's first line.")
@click.option("--insecure", is_flag=True, help="Allow a non-loopback --host without a token.")
@click.option("--gpus", metavar="0,1,...", callback=gpu_list,
              help="Serve on these GPUs: every database on each, each search to the least busy.")
@click.option("--workers", type=click.IntRange(0, 16), default=None,
              help="Worker processes per device, each holding the databases and searching; 0: the searches in "
                   "the service's process [2 on a GPU, 0 on the CPU].")
@with_limit_options
@common
def serve(databases, host, port, token_file, insecure, gpus, workers, limits) -> None:
    """Serve searches of DATABASES over HTTP (docs/serve.md): databases loaded once, concurrent
    requests batched; SIGTERM/SIGINT drain the requests in flight, then exit 0."""
    if gpus is not None and STATE.device not in ("auto", "gpu"):
        raise click.UsageError(f"--gpus and --device {STATE.device} exclude each other")
    from ..serve.limits import Limits
    from ..serve.server import check_exposure
    from ..serve.server import serve as run_service

    with usage_errors():
        check_exposure(host, token_file, insecure)
        checked = Limits(**limits)
    run_service(list(databases), host, port, token_file=token_file, insecure=insecure, device=STATE.device,
                threads=STATE.threads, limits=checked, devices=None if gpus is None else [f"gpu:{g}" for g in gpus],
                workers=workers)

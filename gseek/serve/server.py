"""``gseek serve``: the engine loaded and warmed, then the application served by uvicorn until SIGTERM/SIGINT.

Binds 127.0.0.1 by default; any other address needs a token file (bearer
token) or ``insecure``. Prints one line, ``gseek serve: listening on
http://HOST:PORT (databases: NAME, ...)``, once it accepts connections, and one
log line per request on stderr. At SIGTERM or SIGINT it stops accepting,
gives the requests in flight :attr:`Limits.drain <gseek.serve.engine.Limits>`
seconds to finish, and returns (the command then exits 0).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import stat
import threading
from collections.abc import Callable, Iterator
from typing import Any

from gseek.errors import OptionError

from .engine import Engine, Front, Limits

__all__ = ["GPU_WORKERS", "check_exposure", "default_workers", "front", "read_token", "serve"]

#: Worker processes a GPU unless told (``--workers``): on an H200, 64 clients at 1 Gbp, two answered
#: 1.46x the requests a second of the searches in the service's process, one 1.32x, three and four
#: fewer than two (the processes' contexts time-sliced); a lone request's latency the same
#: (``benchmarks/RESULTS.md``, 2026-11-28, fifth session).
GPU_WORKERS = 2


def default_workers(device: Any = "auto", devices: list[Any] | None = None) -> int:
    """``--workers`` when not given: :data:`GPU_WORKERS` worker processes a GPU, and on the CPU none
    (the searches in the service's process: its workers would share its cores).

    >>> default_workers("cpu"), default_workers("gpu:1"), default_workers("cpu", ["gpu:0", "gpu:1"])
    (0, 2, 2)
    """
    if devices:
        return GPU_WORKERS
    name = str(getattr(device, "spec", device)).lower()
    if name == "auto":
        from ..backend import gpu_available

        return GPU_WORKERS if gpu_available() else 0  # (counts the GPUs: no CUDA context made here)
    return GPU_WORKERS if name.startswith("gpu") else 0

LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (only this machine can connect).

    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("0.0.0.0"), is_loopback("example.org")
    (True, True, False, False)
    """
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_token(path: str | os.PathLike) -> str:
    """The bearer token in ``path`` (its first line, at least 16 characters); the file must not be
    readable by others."""
    try:
        info = os.stat(path)
        with open(path, encoding="utf-8") as fh:
            token = fh.readline().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise OptionError(f"--token-file {path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    if len(token) < 16 or any(c.isspace() for c in token):
        raise OptionError(f"--token-file {path}: the first line must be a token of at least 16 characters, no spaces")
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise OptionError(f"--token-file {path}: readable by others (mode {stat.S_IMODE(info.st_mode):o}); "
                          f"chmod 600 it")
    return token


def check_exposure(host: str, token_file: str | os.PathLike | None, insecure: bool) -> str | None:
    """The token to require (None: none), refusing a non-loopback ``host`` without one, unless ``insecure``."""
    token = None if token_file is None else read_token(token_file)
    if token is None and not insecure and not is_loopback(host):
        raise OptionError(f"--host {host}: other machines could connect; give --token-file FILE (bearer token) or "
                          f"--insecure")
    return token


def front(databases: list[str], devices: list[Any], workers: int = 0, threads: int | None = None,
          limits: Limits | None = None, warm: bool = True) -> Front:
    """The service's front over ``devices``: ``workers`` worker processes a device, loaded and warm
    (:class:`~gseek.serve.processes.WorkerPool`), or with 0 the searches in this process
    (:class:`~gseek.serve.engine.Engine`, a device thread a device, warmed where ``warm``)."""
    if workers:
        from .processes import WorkerPool

        return WorkerPool(databases, devices, workers, threads, limits, warm)
    engine = Engine(databases, threads=threads, limits=limits, devices=devices)
    try:
        if warm:
            engine.warm()
    except BaseException:
        engine.close(wait=False)
        raise
    return engine


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def serve(databases: list[str], host: str = "127.0.0.1", port: int = 8000, *, token_file: str | None = None,
          insecure: bool = False, device: Any = "auto", threads: int | None = None, limits: Limits | None = None,
          warm: bool = True, out: Callable[[str], None] | None = None, devices: list[Any] | None = None,
          workers: int | None = None) -> None:
    """Load ``databases`` (``NAME=PATH`` or ``PATH``), warm them, serve until SIGTERM/SIGINT, drain, return.

    ``out`` gets the ``listening on`` line (default: stdout); port 0 takes a free port, the line
    says which. ``devices`` (``--gpus``: several devices in place of ``device``); ``workers``:
    worker processes a device (:class:`~gseek.serve.processes.WorkerPool`), or 0: the searches
    in this process, a device thread a device (:class:`~gseek.serve.engine.Engine`); None:
    :func:`default_workers`.
    """
    import uvicorn

    from .app import create_app

    token = check_exposure(host, token_file, insecure)
    if devices and str(device) not in ("auto", "gpu"):  # (--gpus names the GPUs: a device besides them is not used)
        raise OptionError(f"--gpus and --device {device} exclude each other")
    if workers is None:
        workers = default_workers(device, devices)
    engine = front(databases, devices or [device], workers, threads, limits, warm)
    try:
        app = create_app(engine, token)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="on",
                                timeout_graceful_shutdown=max(1, round(engine.limits.drain)), server_header=False)
        names = ", ".join(engine.databases)

        def listening(bound: int) -> None:
            line = f"gseek serve: listening on http://{_url_host(host)}:{bound} (databases: {names})"
            if out is not None:
                out(line)
            else:
                print(line, flush=True)

        server = _Server(config, listening)
        server.run()
        if not server.started:
            raise OSError(f"cannot listen on {host}:{port} (see the message above)")
    finally:
        engine.close(wait=False)


class _Server:
    """uvicorn's server, saying where it listens once it does, and ending on SIGTERM/SIGINT by
    draining (uvicorn's graceful shutdown) and returning: no signal raised again after it."""

    def __new__(cls, config: Any, listening: Callable[[int], None]) -> Any:
        import uvicorn

        class Server(uvicorn.Server):
            async def startup(self, sockets: Any = None) -> None:
                await super().startup(sockets)
                if self.started and not self.should_exit:
                    bound = next((s.getsockname()[1] for srv in self.servers for s in srv.sockets), config.port)
                    listening(bound)

            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                if threading.current_thread() is not threading.main_thread():
                    yield
                    return
                handled = (signal.SIGINT, signal.SIGTERM)
                before = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
                try:
                    yield
                finally:
                    for sig, handler in before.items():
                        signal.signal(sig, handler)
                    getattr(self, "_captured_signals", []).clear()

        return Server(config)

"""The notice a command prints when it compiles: once, with its progress on a terminal and how long it took.

Numba compiles a function on its first call unless its machine code is in Numba's cache or in the
prebuilt set shipped for this Python and Numba (``docs/startup.md``). Where neither has it (another
Numba, a changed module, ``GSEEK_PREBUILT=0``), a first command spends seconds to a minute in the
compiler. While a :class:`CompileNotice` is entered, its first compile (Numba's ``numba:compile``
event, raised only for code not found in a cache) prints one line on stderr, so the command is not
taken for stuck (once: later compiles are only counted); on a terminal that line counts the
functions and seconds as they go; when the notice is left, one more line says how many functions
took how long. Nothing is printed while ``quiet()`` is true, nor for compiles outside the ``with``
block.

Entering a notice does not import Numba (0.2 s of a command such as ``gseek search --server``, which
never compiles): it listens at once where Numba's event module is loaded, and otherwise from the
moment it is (a finder on ``sys.meta_path`` that waits for ``numba.core.event`` alone, removed when
the notice is left). No compile can happen before that module is loaded: it is the one that
announces them.

>>> import io
>>> from gseek.kernels._jit import njit
>>> out = io.StringIO()
>>> with CompileNotice(stream=lambda: out):
...     njit()(lambda x: x + 1)(1)
2
>>> print(out.getvalue().replace("\\r", ""), end="")  # doctest: +ELLIPSIS
[gseek] compiling kernels on first use (once, into the cache; `gseek compile` does it ahead of time)
[gseek] compiled 1 kernel function in ... s (later commands load it from the cache)
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
import time
from typing import Any, Callable, TextIO

__all__ = ["CompileNotice"]

#: The Numba module that raises the compile events (loaded by ``import numba``).
EVENT_MODULE = "numba.core.event"


class _WhenLoaded(importlib.abc.MetaPathFinder):
    """Calls ``then(module)`` once :data:`EVENT_MODULE` has been executed (the finder's only module:
    every other import goes by as if it were not there); the first such finder on ``sys.meta_path``
    loads the module and calls every one's ``then`` (notices entered one inside another)."""

    def __init__(self, then: Callable[[Any], None]) -> None:
        self.then = then

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != EVENT_MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader

        class Loader(importlib.abc.Loader):
            def create_module(self, spec: Any) -> Any:
                return loader.create_module(spec)

            def exec_module(self, module: Any) -> None:
                loader.exec_module(module)
                for finder in [f for f in sys.meta_path if isinstance(f, _WhenLoaded)]:
                    finder.then(module)

        spec.loader = Loader()
        return spec


class CompileNotice:
    """While entered, announce the Numba compiles of the process on ``stream()`` (stderr), once.

    Arguments:
        quiet: called at each compile; true: print nothing (``--quiet``).
        stream: where to write, looked up when written (a test's captured stderr).
        interval: seconds between updates of the line on a terminal.
    """

    TEXT = "[gseek] compiling kernels on first use (once, into the cache; `gseek compile` does it ahead of time)"

    def __init__(self, quiet: Callable[[], bool] = lambda: False, stream: Callable[[], TextIO] = lambda: sys.stderr,
                 interval: float = 0.5) -> None:
        self.quiet, self.stream, self.interval = quiet, stream, interval
        self.functions = 0  # outermost compiles (what they call and inline is compiled with them)
        self.seconds = 0.0  # summed over the outermost compiles
        self._depth = 0
        self._since: float | None = None  # the start of the outermost compile under way
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._shown = False  # this notice printed the first line (and so prints the last)
        self._tty = False

    def __enter__(self) -> CompileNotice:
        self._listener: Any = None
        self._finder: _WhenLoaded | None = None
        event = sys.modules.get(EVENT_MODULE)
        if event is not None:
            self._listen(event)
        else:  # Numba not loaded: listen once it is
            self._finder = _WhenLoaded(self._listen)
            sys.meta_path.insert(0, self._finder)
        return self

    def _listen(self, event: Any) -> None:
        """Listen to ``event`` (Numba's event module) for compiles."""
        if self._listener is not None:  # the module loaded again: one listener is enough
            return
        notice = self

        class Listener(event.Listener):
            def on_start(self, ev) -> None:
                notice._started()

            def on_end(self, ev) -> None:
                notice._ended()

        self._listener = Listener()
        event.register("numba:compile", self._listener)

    def __exit__(self, *exc) -> None:
        if self._finder is not None:
            try:
                sys.meta_path.remove(self._finder)
            except ValueError:
                pass
        if self._listener is not None:
            sys.modules[EVENT_MODULE].unregister("numba:compile", self._listener)
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self._shown and not self.quiet():
            s = "" if self.functions == 1 else "s"
            self._write(f"[gseek] compiled {self.functions} kernel function{s} in {self.seconds:.1f} s "
                        f"(later commands load {'it' if self.functions == 1 else 'them'} from the cache)", end=True)

    # ----------------------------------------------------------------- events (under Numba's compiler lock)

    def _started(self) -> None:
        with self._lock:
            self._depth += 1
            if self._depth > 1:
                return
            self._since = time.perf_counter()
            self.functions += 1
            if self._shown or self.quiet():
                return
            self._shown = True
            stream = self.stream()
            self._tty = bool(getattr(stream, "isatty", lambda: False)())
            if self._tty:
                self._line()
                self._ticker = threading.Thread(target=self._tick, name="gseek-compile-notice", daemon=True)
                self._ticker.start()
            else:
                self._write(self.TEXT, end=True)

    def _ended(self) -> None:
        with self._lock:
            self._depth = max(0, self._depth - 1)
            if self._depth == 0 and self._since is not None:
                self.seconds += time.perf_counter() - self._since
                self._since = None
                if self._tty:
                    self._line()

    # ----------------------------------------------------------------- the line on a terminal

    def _elapsed(self) -> float:
        return self.seconds + (time.perf_counter() - self._since if self._since is not None else 0.0)

    def _line(self) -> None:
        s = "" if self.functions == 1 else "s"
        self._write(f"\r{self.TEXT}: {self.functions} function{s}, {self._elapsed():.0f} s\x1b[K", end=False)

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                if self._since is not None and not self.quiet():
                    self._line()
        with self._lock:
            self._write("", end=True)  # end the terminal's line before the last one

    def _write(self, text: str, *, end: bool) -> None:
        stream = self.stream()
        try:
            stream.write(text + ("\n" if end else ""))
            stream.flush()
        except (OSError, ValueError):  # a closed stderr: the notice is not worth an error
            pass

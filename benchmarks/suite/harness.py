"""Shared helpers of the benchmark suite: timing, subprocesses, the record, tables.

Not part of the installed package; ``benchmarks/run.py`` imports the suite as
``benchmarks.suite``. The test suite only checks its layout (nothing is timed).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

SUITE_DIR = Path(__file__).resolve().parent
BENCH_DIR = SUITE_DIR.parent
REPO = BENCH_DIR.parent
DATA_DIR = BENCH_DIR / "data"
#: Every run's record (git-ignored scratch).
OUT_DIR = BENCH_DIR / "out"
#: The records kept (committed): the source of the generated ``RESULTS-table.md``.
RESULTS_DIR = BENCH_DIR / "results"
RESULTS_TABLE = BENCH_DIR / "RESULTS-table.md"
PEERS_DIR = BENCH_DIR / "peers"
ENV_SH = BENCH_DIR / "env.sh"


# ----------------------------------------------------------------------- timing


@dataclass
class Timing:
    """Wall-clock seconds of ``repeat`` runs of one case, plus what it produced."""

    times: list[float]
    peak_rss_mib: float | None = None  # of the process that ran the case
    extra: dict = field(default_factory=dict)

    @property
    def best(self) -> float:
        return min(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["best"] = self.best
        d["median"] = self.median
        return d


def time_repeats(fn: Callable[[], object], repeat: int) -> tuple[list[float], object]:
    """Call ``fn`` ``repeat`` times; return the seconds of each call and the last result."""
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return times, result


def peak_rss_self_mib() -> float:
    """This process's own peak resident set size in MiB (``VmHWM``).

    Not ``getrusage(RUSAGE_SELF).ru_maxrss``: that also counts the parent's
    memory at the time this process was spawned (see ``_LAUNCHER``).
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ----------------------------------------------------------------- subprocesses


@dataclass
class ProcResult:
    """One finished child process: exit code, output, wall and CPU seconds, its own peak RSS."""

    cmd: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    cpu_s: float
    peak_rss_mib: float
    rss_floor_mib: float  # the launcher's own high-water mark: peak RSS is never below this


# The peak RSS that wait4/getrusage report for a child also counts the memory of
# the process that spawned it: Linux keeps the old address space's high-water
# mark across exec (and vfork shares the parent's). A child of a runner that
# holds 300 MiB of data would report >= 300 MiB. So every command is started
# by this small launcher (a bare interpreter, ~10 MiB), which spawns it, reaps
# it with wait4 and writes the child's own figures to a file.
_LAUNCHER = r"""
import json, os, sys, time
out, cmd = sys.argv[1], sys.argv[2:]
with open("/proc/self/status") as fh:
    floor = next((int(l.split()[1]) for l in fh if l.startswith("VmHWM:")), 0)
t0 = time.perf_counter()
try:
    pid = os.posix_spawnp(cmd[0], cmd, os.environ)
except OSError as exc:
    print(f"cannot run {cmd[0]}: {exc}", file=sys.stderr)
    sys.exit(127)
_, status, ru = os.wait4(pid, 0)
seconds = time.perf_counter() - t0
with open(out, "w") as fh:
    json.dump({"rc": os.waitstatus_to_exitcode(status), "seconds": seconds,
               "cpu_s": ru.ru_utime + ru.ru_stime, "maxrss_kib": ru.ru_maxrss,
               "floor_kib": floor}, fh)
"""


def run_process(
    cmd: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
    stdin: str | os.PathLike | None = None,
    check: bool = True,
) -> ProcResult:
    """Run ``cmd``; time it and read its own peak RSS (see ``_LAUNCHER``).

    Output goes to temporary files, so a chatty peer cannot block on a pipe.
    ``seconds`` is the wall time from spawn to exit as the launcher saw it
    (the launcher's own start-up is not in it).
    """
    cmd = [os.fspath(c) for c in cmd]
    with tempfile.TemporaryDirectory(prefix="gseek-bench-") as tmp:
        result_path = os.path.join(tmp, "result.json")
        out_path, err_path = os.path.join(tmp, "out"), os.path.join(tmp, "err")
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            fin = open(stdin, "rb") if stdin is not None else subprocess.DEVNULL
            try:
                rc = subprocess.call(
                    [sys.executable, "-I", "-S", "-c", _LAUNCHER, result_path, *cmd],
                    stdin=fin, stdout=out, stderr=err, env=env, cwd=cwd,
                )
            finally:
                if stdin is not None:
                    fin.close()  # type: ignore[union-attr]
        stdout = Path(out_path).read_text(errors="replace")
        stderr = Path(err_path).read_text(errors="replace")
        if not os.path.exists(result_path):
            raise RuntimeError(f"{shlex.join(cmd)}: launcher failed (exit {rc}):\n{stderr[-2000:]}")
        info = json.loads(Path(result_path).read_text())
    result = ProcResult(
        cmd=cmd,
        returncode=info["rc"],
        stdout=stdout,
        stderr=stderr,
        seconds=info["seconds"],
        cpu_s=info["cpu_s"],
        peak_rss_mib=info["maxrss_kib"] / 1024,
        rss_floor_mib=info["floor_kib"] / 1024,
    )
    if check and result.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} exited {result.returncode}:\n{result.stderr[-2000:]}")
    return result


def run_worker(spec: dict, *, env: dict[str, str] | None = None) -> tuple[dict, ProcResult]:
    """Run ``run.py _worker SPEC`` in a fresh interpreter; return its JSON answer.

    In-process parsers are timed in their own process so one library's caches,
    imports and heap do not colour another's numbers, and so the peak RSS is
    the parser's alone.
    """
    cmd = [sys.executable, str(BENCH_DIR / "run.py"), "_worker", json.dumps(spec)]
    proc = run_process(cmd, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"worker printed no result:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return json.loads(lines[-1]), proc


def peer_env(root: str | os.PathLike | None = None) -> dict[str, str]:
    """The environment with the carried peer tools on PATH (what ``env.sh`` sets).

    ``env.sh`` is the one place that knows the layout; this sources it in bash
    and reads the environment back. Raises if the tools are not there.
    """
    args = [str(root)] if root else []
    script = f'source {shlex.quote(str(ENV_SH))} {" ".join(map(shlex.quote, args))} >&2 && env -0'
    proc = subprocess.run(["bash", "-c", script], capture_output=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.decode(errors="replace").strip())
    pairs = (item.split("=", 1) for item in proc.stdout.decode().split("\0") if "=" in item)
    return dict(pairs)


@contextlib.contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A new temporary folder for one run's data and outputs, removed when the run ends (also on error)."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def peer_env_or_host(label: str, without: str) -> dict[str, str]:
    """``peer_env()``, or this process's environment where the peers are not there (said on stderr:
    ``  LABEL: peers unavailable (why); WITHOUT``, e.g. "gseek only")."""
    try:
        return peer_env()
    except Exception as exc:  # noqa: BLE001 - no carried peers here: the benchmark runs without them
        print(f"  {label}: peers unavailable ({exc}); {without}", file=sys.stderr)
        return dict(os.environ)


# ------------------------------------------------------------ where and what ran


def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo, with family/model numbers where vague."""
    info: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if not line.strip():
                    break  # first processor only
                key, _, value = line.partition(":")
                info[key.strip()] = value.strip()
    except OSError:
        return platform.processor() or "unknown"
    name = info.get("model name", platform.processor() or "unknown")
    if "family" not in name.lower() and "cpu family" in info:
        name += f" (family {info['cpu family']}, model {info.get('model', '?')})"
    return name


def gpu_name() -> str:
    """Name of GPU 0 as CuPy sees it, or 'none' (no CuPy, no device)."""
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "none"
        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # noqa: BLE001 - any failure means "no usable GPU"
        return "none"


def git_commit() -> str:
    """``git rev-parse --short HEAD``, plus '-dirty' if tracked or untracked files differ; ``GSEEK_COMMIT``
    when set (the device machine's copy of the tree carries a stale ``.git``: the caller names the commit)."""
    if os.environ.get("GSEEK_COMMIT"):
        return os.environ["GSEEK_COMMIT"]

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("-dirty" if dirty else "")


def versions(modules: Sequence[str]) -> dict[str, str]:
    """``__version__`` of each importable module (missing ones are left out)."""
    found = {}
    for name in modules:
        try:
            mod = __import__(name)
        except ImportError:
            continue
        found[name] = str(getattr(mod, "__version__", "?"))
    return found


def machine() -> dict:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "host": platform.node(),
        "cpu": cpu_model(),
        "cores": cores,
        "device": gpu_name(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "loadavg": list(os.getloadavg()),
    }


class HostLoad:
    """How much CPU *other* processes took while a benchmark ran.

    ``/proc/stat`` gives the host's busy CPU time; this process's own and its
    reaped children's CPU time (``getrusage``) is taken off; the rest, over
    wall time x cores, is other work that competed with the benchmark. The
    load average is no use for this: the benchmark itself keeps it near 1.
    """

    def __init__(self) -> None:
        self.start = self._sample()

    @staticmethod
    def _sample() -> tuple[float, float, float]:
        import resource

        busy = 0.0
        try:
            with open("/proc/stat") as fh:
                fields = [int(x) for x in fh.readline().split()[1:]]
            # user nice system idle iowait irq softirq steal ...: all but idle and iowait
            busy = (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            pass
        own = sum(
            r.ru_utime + r.ru_stime
            for r in (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))
        )
        return time.perf_counter(), busy, own

    def other_fraction(self) -> float:
        """Fraction of all cores that other processes kept busy since construction."""
        t1, busy1, own1 = self._sample()
        t0, busy0, own0 = self.start
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        wall = max(t1 - t0, 1e-9)
        return max(0.0, ((busy1 - busy0) - (own1 - own0)) / (wall * cores))


def idle_check(seconds: float = 1.0) -> float:
    """Fraction of all cores busy with other work over the next ``seconds``."""
    load = HostLoad()
    time.sleep(seconds)
    return load.other_fraction()


# ---------------------------------------------------------------------- records


def now_utc() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0)


def write_record(bench: str, record: dict, out_dir: Path = OUT_DIR) -> Path:
    """Write one run's record as ``out/<bench>-<UTC time>.json`` (temporary name, then rename)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.fromisoformat(record["date"]).strftime("%Y%m%dT%H%M%SZ")
    path = out_dir / f"{bench}-{stamp}.json"
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=False) + "\n")
    os.replace(tmp, path)
    return path


# ----------------------------------------------------------------------- tables


def parse_tables(text: str) -> list[dict]:
    """The Markdown tables in ``text`` as ``{"header": [...], "rows": [[...], ...]}`` (cells as strings).

    A benchmark's table holds gseek's figures and its peers' side by side; the
    record keeps them in this form (``figures``) beside the Markdown.
    """
    tables: list[dict] = []
    current: dict | None = None
    for line in text.splitlines() + [""]:
        line = line.strip()
        if line.startswith("|") and line.endswith("|"):
            cells = [c.strip() for c in line[1:-1].split("|")]
            if current is None:
                current = {"header": cells, "align": "l" * len(cells), "rows": []}
            elif not current["rows"] and all(c and set(c) <= set("-:") for c in cells):  # the rule line
                current["align"] = "".join("r" if c.endswith(":") else "l" for c in cells)
            else:
                current["rows"].append(cells)
        elif current is not None:
            tables.append(current)
            current = None
    return tables


def ratio(baseline: float, value: float) -> str:
    """Speed relative to the baseline: baseline seconds / these seconds ("2.00x" = twice as fast)."""
    if value <= 0:
        return "-"
    return f"{baseline / value:.2f}x"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]], align: str | None = None) -> str:
    """A GitHub Markdown table; ``align`` is one of 'l'/'r' per column (default: first left)."""
    align = align or "l" + "r" * (len(header) - 1)
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]

    def fmt(row: list[str]) -> str:
        parts = [c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(row, widths, align)]
        return "| " + " | ".join(parts) + " |"

    rule = "| " + " | ".join(
        ("-" * (w - 1) + ":") if a == "r" else "-" * w for w, a in zip(widths, align)
    ) + " |"
    return "\n".join([fmt(cells[0]), rule] + [fmt(r) for r in cells[1:]])


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"

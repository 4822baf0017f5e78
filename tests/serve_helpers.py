"""Helpers of the ``gseek serve`` tests: a service in a child process on a free loopback port,
bounded HTTP calls, the local command's bytes."""

from __future__ import annotations

import json
import os
import random
import selectors
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from gseek.datasets import lambda_genome

# the service's extra (gseek[serve]): the modules that use these helpers skip without it
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

#: Seconds a service may take to start (imports, index load, first compile from the cache).
START_S = 240
#: Seconds any one HTTP call may take.
CALL_S = 120


def make_queries(path: Path, n: int, seed: int, length: int = 500, bad_line: bool = False) -> Path:
    """``n`` slices of lambda with a few substitutions, and one random query (no hit)."""
    from gseek.seqio import read_fastx

    genome = read_fastx(lambda_genome()).sequence(0)
    rng = random.Random(seed)
    with open(path, "w") as fh:
        for i in range(n):
            a = rng.randrange(0, len(genome) - length)
            s = list(genome[a:a + length])
            for _ in range(length // 100):
                s[rng.randrange(length)] = "ACGT"[rng.randrange(4)]
            if rng.random() < 0.5:  # the minus strand too
                s = list("".join(s)[::-1].translate(str.maketrans("ACGT", "TGCA")))
            fh.write(f">s{seed}q{i} from {a}\n{''.join(s)}\n")
        fh.write(f">s{seed}none\n{''.join(rng.choice('ACGT') for _ in range(300))}\n")
        if bad_line:
            fh.write("@oops\n")
    return path


class Service:
    """``gseek serve`` in a child process; ``url`` once it listens; :meth:`stop` ends it (SIGTERM)."""

    def __init__(self, index: Path, *args: str, cwd: Path | None = None, device: str = "cpu", threads: int = 2,
                 name: str = "lambda", new_session: bool = False) -> None:
        cmd = [sys.executable, "-m", "gseek", "--device", device, "-p", str(threads), "serve", "-x", f"{name}={index}",
               "--port", "0", *args]
        # new_session: its own process group (as a service manager's), which a test may signal whole
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=new_session)
        self.err = b""
        # the log read as it comes: a pipe nobody reads blocks the service once ~64 kB of lines fill it
        self._err_parts: list[bytes] = []
        self._drain = threading.Thread(target=self._read_err, daemon=True)
        self._drain.start()
        self.line = self._first_line()
        self.url = self.line.split("listening on ", 1)[1].split(" ", 1)[0]

    def _read_err(self) -> None:
        for chunk in iter(lambda: os.read(self.proc.stderr.fileno(), 65536), b""):
            self._err_parts.append(chunk)

    def _ended(self, timeout: float) -> None:
        self.proc.wait(timeout=timeout)
        self._drain.join(timeout=30)
        self.err = b"".join(self._err_parts)

    def _first_line(self) -> str:
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + START_S
        data = b""
        while b"\n" not in data:
            left = deadline - time.monotonic()
            ended = False
            if left > 0 and sel.select(min(left, 1.0)):
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                data += chunk
                ended = not chunk  # stdout closed: the service ended
            if left <= 0 or ended:
                self.kill()
                raise AssertionError(f"service did not start: {data!r} {self.err!r}")
        sel.close()
        return data.decode().splitlines()[0]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        """Signal the service, wait for it to end (killed after ``timeout``), return its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self._ended(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self._ended(30)


def call(url: str, body: bytes | dict | None = None, method: str | None = None, token: str | None = None,
         headers: dict | None = None) -> tuple[int, bytes, dict]:
    """One HTTP call: (status, body bytes, headers); refusals are returned, not raised."""
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    req = urllib.request.Request(url, data=data, method=method or ("POST" if data is not None else "GET"),
                                 headers={"Content-Type": "application/json", **(headers or {})})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=CALL_S) as resp:
            return resp.status, resp.read(), dict(resp.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), dict(exc.headers)


def search_body(queries: Path, task: str = "megablast", fmt: str = "6", options: dict | None = None,
                command: str = "gseek") -> dict:
    return {"database": "lambda", "task": task, "format": fmt, "options": options or {}, "command": command,
            "queries": [{"name": queries.name, "text": queries.read_text()}]}


def local_search(index: Path, queries: Path, *args: str, cwd: Path) -> tuple[int, bytes, bytes]:
    """``gseek search`` run here: (exit status, stdout, stderr)."""
    proc = subprocess.run([sys.executable, "-m", "gseek", "--device", "cpu", "-p", "2", "search", "-x", str(index),
                           "-q", queries.name, *args], capture_output=True, cwd=cwd, timeout=CALL_S * 2)
    return proc.returncode, proc.stdout, proc.stderr


def local_outputs(folder: Path, kinds: list[tuple[str, str, str]]) -> dict[str, bytes]:
    """The local command's bytes (``@PG`` aside) of each kind of request (queries in ``folder``, task,
    format; ``map``: 2 mismatches) against ``folder/lambda.gseek``, by query file."""
    out = {}
    for name, task, fmt in kinds:
        args = ["-v", "2"] if task == "map" else ["--task", task, "--outfmt", fmt]
        code, text, _ = local_search(folder / "lambda.gseek", folder / name, *args, cwd=folder)
        assert code == 0 and text
        out[name] = without_pg(text)
    return out


def ask(url: str, folder: Path, kind: tuple[str, str, str]) -> tuple[int, bytes, dict]:
    """One search request of a kind of :func:`local_outputs` (``map``: 2 mismatches)."""
    name, task, fmt = kind
    return call(url + "/api/v1/search", search_body(folder / name, task, fmt, {"mismatches": 2} if task == "map"
                                                    else None))


def without_pg(sam: bytes) -> bytes:
    return b"".join(line for line in sam.splitlines(keepends=True) if not line.startswith(b"@PG"))


def lambda_index(folder):
    """The embedded lambda genome's index, saved as ``folder/lambda.gseek`` (what the services serve)."""
    from gseek.datasets import lambda_genome
    from gseek.index import Index

    return Index.build(lambda_genome(), wgram=8, device="cpu").save(folder / "lambda.gseek")


def request_folder(folder: Path, sizes: list[int], seed: int) -> Path:
    """``folder`` with the lambda index, ``q{k}.fa`` of ``sizes[k]`` slices each (seeds from ``seed``) and
    ``reads.fq`` (100 of lambda's reads): what the kinds of :func:`local_outputs` ask."""
    from gseek.datasets import lambda_reads

    lambda_index(folder)
    for k, n in enumerate(sizes):
        make_queries(folder / f"q{k}.fa", n, seed=seed + k)
    (folder / "reads.fq").write_text("".join(open(lambda_reads()).readlines()[:400]))
    return folder

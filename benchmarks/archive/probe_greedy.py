"""Where megablast's greedy extension spends its time on one device: synthetic seed pairs of a length and
divergence, extended by ``gseek.dp.greedy.greedy_gapped`` (score only with the score-only X-drop, then with
trace-back and the final X-drop) beside ``gseek.dp.xdrop.xdrop_gapped`` on the same pairs (megablast's scoring:
2 / -4 / a gap column 5, the DP the search ran until 2026-11-27), and the trace-back's gap edits.

usage: python benchmarks/archive/probe_greedy.py [DEVICE] [PAIRS]   (DEVICE gpu or cpu; prints a table)
"""

from __future__ import annotations

import sys
import time

import numpy as np

from gseek import get_backend
from gseek.dp import greedy as gstage
from gseek.dp.scoring import Scoring
from gseek.dp.xdrop import xdrop_gapped


def pairs(n: int, length: int, divergence: float, seed: int = 1):
    """``n`` (query, subject) pairs: a random query, the subject a mutated copy (substitutions, and a tenth
    as many indels of 1-3 bases); the seed in the middle of both."""
    rng = np.random.default_rng(seed)
    codes, q_off, q_len, t_off, t_len = [], [], [], [], []
    at = 0
    for _ in range(n):
        q = rng.integers(0, 4, length, dtype=np.uint8)
        t = q.copy()
        hit = rng.random(length) < divergence
        t[hit] = (t[hit] + rng.integers(1, 4, int(hit.sum()))) % 4
        cuts = np.flatnonzero(rng.random(length) < divergence / 10)
        t = np.delete(t, cuts[::2])
        for c in cuts[1::2][::-1]:
            c = min(int(c), t.size)
            t = np.insert(t, c, rng.integers(0, 4, int(rng.integers(1, 4)), dtype=np.uint8))
        mid, t_mid = length // 2, t.size // 2
        t[t_mid - 20:t_mid + 20] = q[mid - 20:mid + 20]  # an exact seed in the middle of both
        codes += [q, t]
        q_off.append(at)
        q_len.append(q.size)
        at += q.size
        t_off.append(at)
        t_len.append(t.size)
        at += t.size
    n_q = np.array(q_len)
    return np.concatenate(codes), np.array(q_off), n_q, np.array(t_off), np.array(t_len), n_q // 2


def timed(fn, backend):
    backend.synchronize()
    started = time.perf_counter()
    out = fn()
    backend.synchronize()
    return time.perf_counter() - started, out


def main(device: str = "gpu", count: int = 64) -> None:
    backend = get_backend(device)
    scoring = Scoring(match=2, mismatch=-4, gap_open=0, gap_extend=5)
    print(f"device {backend.describe()}; {count} pairs a case; seconds (second of two runs)")
    print("| length | divergence | greedy score X=26 | greedy score X=108 | greedy trace-back X=108 | of which the gap edits "
          "and the scripts' download | DP score X=108 | DP trace-back X=108 | greedy / DP score |")
    print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for length in (1_000, 10_000, 100_000):
        for divergence in (0.01, 0.05, 0.15):
            n = count if length < 100_000 else max(4, count // 8)
            codes, q_off, q_len, t_off, t_len, q_pos = pairs(n, length, divergence)
            t_pos = t_len // 2
            dev = backend.asarray(codes)
            args = (dev, q_off, q_len, t_off, t_len, q_pos, t_pos)
            row = [length, divergence]
            for _ in range(2):
                s26, _ = timed(lambda: gstage.greedy_gapped(backend, *args, 2, 4, 26), backend)
                s108, _ = timed(lambda: gstage.greedy_gapped(backend, *args, 2, 4, 108), backend)
                laps: dict[str, float] = {}
                tb, _ = timed(lambda: gstage.greedy_gapped(backend, *args, 2, 4, 108, traceback=True, timings=laps),
                              backend)
                edits = laps.get("greedy: gap edits", 0.0)
                d_s, _ = timed(lambda: xdrop_gapped(backend, *args, scoring, 108, traceback=False), backend)
                d_tb, _ = timed(lambda: xdrop_gapped(backend, *args, scoring, 108, traceback=True), backend)
            row += [f"{s26:.3f}", f"{s108:.3f}", f"{tb:.3f}", f"{edits:.3f}", f"{d_s:.3f}", f"{d_tb:.3f}",
                    f"{s108 / d_s:.2f}"]
            print("| " + " | ".join(str(x) for x in row) + " |", flush=True)


if __name__ == "__main__":
    main(*(sys.argv[1:2] or ["gpu"]), *(int(x) for x in sys.argv[2:3]))

"""Peak resident memory of the BLAST-style search's query side, stage by stage (issue 36: a 50 Mbp query
peaked at 2.46 GB). A thread samples the process's RSS every 2 ms; each stage reports the highest sample
while it ran, and what stays resident after it.

usage: python benchmarks/archive/probe_query_memory.py QUERIES.fa [megablast|blastn]
"""

from __future__ import annotations

import sys
import threading
import time

import numpy as np

from gseek.blast.options import BlastOptions
from gseek.blast.searcher import BlastSearcher
from gseek.seqio import read_fastx

PAGE = 4096


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


class Peak:
    def __init__(self):
        self.high, self.stop = rss(), False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop:
            self.high = max(self.high, rss())
            time.sleep(0.002)

    def stage(self, name: str, t0: float) -> float:
        now = rss()
        print(f"{name:>14}: peak {self.high / 1e9:.2f} GB, resident after {now / 1e9:.2f} GB, "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
        self.high = now
        return time.perf_counter()


def main() -> None:
    from gseek.blast import lookup, searcher
    path, task = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "megablast"
    peak = Peak()
    t = time.perf_counter()
    peak.stage("start", t)
    batch = read_fastx(path)
    t = peak.stage("read", t)
    opts = BlastOptions(task=task)
    s = BlastSearcher.__new__(BlastSearcher)  # the query side only: no index
    s.options = opts
    seq_codes, seq_mask, seq_off, seq_query, seq_strand = s._sequences(batch)
    t = peak.stage("dust+strands", t)
    words = lookup.word_codes(seq_codes, seq_off, opts.lut_word, seq_mask)
    del seq_mask  # as BlastSearcher.prepare does
    t = peak.stage("words", t)
    table = lookup.lookup_of_words(words, opts.lut_word)
    t = peak.stage("table", t)
    valid = lookup.seeding(words)
    t = peak.stage("seeding", t)
    del words
    t = peak.stage("words freed", t)
    print(f"arrays: codes {seq_codes.nbytes / 1e6:.0f} MB, table positions {table.positions.nbytes / 1e6:.0f} MB "
          f"({table.positions.dtype}), first {table.first.nbytes / 1e6:.0f} MB, valid {valid.nbytes / 1e6:.0f} MB")
    peak.stop = True
    del searcher


if __name__ == "__main__":
    main()

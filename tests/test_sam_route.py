"""The lines of a sorted BAM shared out among its parts (:mod:`gseek.output.sam_route`), against a
slow readable reference: each line's part from its RNAME and POS, the parts' lines in input order."""

from __future__ import annotations

import numpy as np
import pytest

from gseek.output.sam_route import Parts, route_lines


def reference_route(lines: list[bytes], names: list[str], lengths: list[int], n: int) -> list[list[bytes]]:
    """Each line to its part: the reference's coordinates (contigs end to end) cut into ``n`` equal
    ranges by the 1-based POS; a line whose RNAME the header lacks (``*`` too) to the last part."""
    start = dict(zip(names, np.cumsum([0, *lengths[:-1]]).tolist()))
    length = dict(zip(names, lengths))
    total = sum(lengths)
    parts: list[list[bytes]] = [[] for _ in range(n + 1)]
    for line in lines:
        fields = line.rstrip(b"\n").split(b"\t")
        name = fields[2].decode("latin-1") if len(fields) > 3 else None
        if name not in start or not fields[3].isdigit():  # "*", unknown, no RNAME/POS or a POS not a number
            parts[n].append(line)
            continue
        g = start[name] + min(int(fields[3]), length[name])  # past the end: as at the end
        parts[sum(1 for p in range(n - 1) if total * (p + 1) // n + 1 <= g)].append(line)
    return parts


ODD = [b"r\t0\n", b"r\t0\tc\n", b"r\t0\tc1\tx9\t60\n", b"r\t0\tc1\t\t60\n", b"\n", b"r\n"]  # malformed


def _lines(rng, names, lengths, count):
    lines = []
    for i in range(count):
        pick = rng.integers(0, len(names) + 4)
        if pick == len(names) + 3:
            lines.append(ODD[int(rng.integers(0, len(ODD)))])
            continue
        if pick >= len(names):  # unplaced, a name the header lacks, POS 0 or past the end
            name, pos = [("*", 0), ("chrX", 5), (names[i % len(names)], int(rng.integers(0, 2)) * 10**6)][
                pick - len(names)]
        else:
            name, pos = names[pick], int(rng.integers(1, lengths[pick] + 1))
        tail = "\t".join(["60", "4M", "*", "0", "0", "ACGT", "IIII"] + ["NM:i:0"] * int(rng.integers(0, 3)))
        lines.append(f"r{i}\t{int(rng.integers(0, 2)) * 16}\t{name}\t{pos}\t{tail}\n".encode("latin-1"))
    return lines


NAMES = ["c", "c1", "c10", "b", "chr2", "é"]  # prefixes of one another; not in sorted order; latin-1


@pytest.mark.parametrize("n", [1, 2, 3, 7])
@pytest.mark.parametrize("threads", [1, 3])
def test_route_lines_equals_the_reference(n, threads):
    """Also POS 0, POS past the reference's end, and lines without RNAME or POS (to the last part,
    none read past its newline: a line of no tab at the end of the text once crashed the process)."""
    rng = np.random.default_rng(n * 10 + threads)
    lengths = [int(x) for x in rng.integers(1, 5000, len(NAMES))]
    lines = _lines(rng, NAMES, lengths, 3000) + [b"no tab at the end\n"]
    parts = Parts(NAMES, lengths, n)
    # many chunks: lines cut across their bounds
    out, starts = route_lines(np.frombuffer(b"".join(lines), np.uint8), parts, threads=threads, chunk_bytes=97)
    want = reference_route(lines, NAMES, lengths, n)
    assert starts.tolist() == np.cumsum([0] + [sum(map(len, p)) for p in want]).tolist()
    assert [bytes(out[starts[k]:starts[k + 1]]) for k in range(n + 1)] == [b"".join(p) for p in want]
    assert all(len(p) for p in want[:n]) and len(want[n]) > 100  # every part used


def test_one_position_is_one_part_at_a_cut():
    """Records at one (reference, position) share a part, whatever their order; the cut falls
    between two positions (the ranges of 10 + 10 bases in 4: 1-5, 6-10, 11-15, 16-20)."""
    parts = Parts(["a", "b"], [10, 10], 4)
    lines = [f"r{i}\t0\t{name}\t{pos}\t60\n".encode() for i, (name, pos) in
             enumerate([("b", 6), ("a", 5), ("a", 6), ("b", 5), ("a", 6), ("b", 10), ("a", 1)])]
    out, starts = route_lines(np.frombuffer(b"".join(lines), np.uint8), parts)
    got = [bytes(out[starts[k]:starts[k + 1]]).split(b"\n")[:-1] for k in range(parts.count)]
    assert [[line.split(b"\t")[0] for line in part] for part in got] == \
        [[b"r1", b"r6"], [b"r2", b"r4"], [b"r3"], [b"r0", b"r5"], []]


def test_no_lines_and_one_range():
    out, starts = route_lines(np.zeros(0, np.uint8), Parts(["a"], [3], 1))
    assert out.size == 0 and starts.tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match="at least 1"):
        Parts(["a"], [3], 0)
    with pytest.raises(ValueError, match="end in a newline"):
        route_lines(np.frombuffer(b"r\t0\ta\t1", np.uint8), Parts(["a"], [3], 2))

#!/usr/bin/env python3
"""Records for ``benchmarks/results/`` made from the runner's sections of RESULTS.md (2026-11-28, once).

    python benchmarks/archive/import_results_md.py [OUT_DIR]   (default benchmarks/results)

Before 2026-11-28 the runs' JSON records stayed in the git-ignored ``benchmarks/out/`` and only
the Markdown went into RESULTS.md. For each section there with a one-line ``Command:
`... benchmarks/run.py NAME ...``` this writes one record: the section's title and line, the date,
device, CPU and commit of its header line, its ``Data:`` paragraph, the command, the first table
after the command (as ``figures`` and verbatim as ``table``) and the notes under it. Figures are
copied, never recomputed; ``source`` names the section, ``imported`` marks the record. Sections
whose command spans lines, and the ones written by hand, are left to the narrative.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path.append(str(BENCH.parent))
from benchmarks.suite.harness import parse_tables  # noqa: E402

COMMAND = re.compile(r"^Command: `((?:GSEEK_COMMIT=\S+ )?python3? benchmarks/run\.py (\S+)[^`]*)`\s*$")


def sections(lines: list[str]):
    """(line number of the command, the heading above it, the heading's line, its parent heading)."""
    heads: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        if line.startswith("#"):
            heads.append((i, line))
        m = COMMAND.match(line)
        if m:
            yield i, m, heads


def record_of(lines: list[str], i: int, m: re.Match, heads: list[tuple[int, str]]) -> dict:
    head_i, head = heads[-1]
    level = len(head) - len(head.lstrip("#"))
    parent = next((h for _, h in reversed(heads) if len(h) - len(h.lstrip("#")) < level), "")
    block = lines[head_i:i]
    meta = next((ln for ln in block if re.match(r"^20\d\d-\d\d-\d\d · ", ln)), "")
    text = " ".join([head, meta, parent])
    date = re.search(r"20\d\d-\d\d-\d\d", text)
    after = lines[i + 1] if i + 1 < len(lines) else ""
    upto_table = []
    for ln in lines[i + 1:]:
        if ln.startswith("|"):
            break
        upto_table.append(ln)
    around = " ".join(block + [m.group(1)] + upto_table)
    commit = re.search(r"(?:[Cc]ommits?|[Tt]rees?|GSEEK_COMMIT=) ?`?([0-9a-f]{7}(?:-dirty)?)\b", around)
    kind = re.search(r"nvidia-[\w-]+|development VM|2-core VM", " ".join([head, parent]))
    gpu = re.search(r"GPU: ([^·(]+)", meta)
    device = kind.group(0) if kind else (gpu.group(1).strip() if gpu else "?")
    cpu = meta.split(" · ")[1] if meta.count(" · ") >= 1 else ""
    original = re.search(r"records? `([^`]+\.json)`", after)
    data: list[str] = []
    j = next((k for k, ln in enumerate(block) if "Data: " in ln), None)
    if j is not None:
        data.append(block[j][block[j].index("Data: "):].strip())
        j += 1
        while j < len(block) and block[j].strip() and not block[j].startswith("Command: "):
            data.append(block[j].strip())
            j += 1
    k = i + 1
    while k < len(lines) and not lines[k].startswith("|"):
        k += 1
    table_lines = []
    while k < len(lines) and lines[k].startswith("|"):
        table_lines.append(lines[k])
        k += 1
    table = "\n".join(table_lines)
    notes = []
    k += 1 if k < len(lines) and not lines[k].strip() else 0
    while k < len(lines) and lines[k].startswith("- "):
        note = [lines[k][2:].strip()]
        k += 1
        while k < len(lines) and lines[k].startswith("  ") and lines[k].strip():
            note.append(lines[k].strip())
            k += 1
        notes.append(" ".join(note))
    title = head.strip("# ").strip()
    return {
        "schema": 1,
        "benchmark": m.group(2),
        "title": f"{parent.strip('# ').strip()}: {title}" if parent else title,
        "date": date.group(0) if date else "",
        "device": device,
        "cpu": cpu,
        "commit": commit.group(1) if commit else "?",
        "command": m.group(1),
        "data": {"summary": " ".join(data)[len("Data: "):]} if data else {},
        "data_line": " ".join(data),
        "figures": parse_tables(table),
        "peers": [],
        "notes": notes,
        "table": table,
        "results": [],
        "imported": True,
        "source": f"RESULTS.md line {i + 1}, section \"{title}\"",
        "original_record": original.group(1) if original else None,
    }


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else BENCH / "results"
    out.mkdir(parents=True, exist_ok=True)
    lines = (BENCH / "RESULTS.md").read_text().splitlines()
    for i, m, heads in sections(lines):
        record = record_of(lines, i, m, heads)
        name = f"{record['benchmark']}-{record['date'].replace('-', '')}-RESULTS.md-L{i + 1}.json"
        (out / name).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
        print(name, record["device"], record["commit"], len(record["figures"]), "tables", len(record["notes"]), "notes")
    return 0


if __name__ == "__main__":
    sys.exit(main())

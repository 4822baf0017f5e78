"""A pipeline's query list: one query file (or two mate files) a line, an optional output name
(``gseek pipeline --queries LIST``; the format in ``docs/pipeline.md``)."""

import os
from pathlib import Path

from gseek.errors import GseekError

from .engine import QueryFile

__all__ = ["QueryListError", "default_output", "read_query_list", "SUMMARY_NAME"]

#: The run's summary in the output folder (no query's output may take its name).
SUMMARY_NAME = "summary.tsv"

_QUERY_SUFFIXES = (".fastq", ".fq", ".fasta", ".fa", ".fna", ".fas")


class QueryListError(GseekError, ValueError):
    """A query list that cannot be used; the message reads ``list.txt:LINE: what is wrong``."""

    def __init__(self, path: str | os.PathLike, line: int | None, message: str) -> None:
        self.path = os.fspath(path)
        self.line = line
        self.rule = message
        super().__init__(f"{self.path}:{line}: {message}" if line else f"{self.path}: {message}")


def default_output(query: str, suffix: str = ".sam") -> str:
    """Output name of a query file: its name without FASTA/FASTQ and gzip suffixes, plus ``suffix``.

    >>> default_output("runs/s1.R1.fastq.gz"), default_output("reads.fa")
    ('s1.R1.sam', 'reads.sam')
    """
    name = Path(query).name
    for gz in (".gz", ".bgz"):
        name = name.removesuffix(gz)
    for ext in _QUERY_SUFFIXES:
        if name.lower().endswith(ext):
            name = name[: -len(ext)]
            break
    return name + suffix


def _is_reads_name(name: str) -> bool:
    """Whether ``name`` ends in a FASTA/FASTQ suffix (``.gz`` or not): a mate file, not an output."""
    name = name.lower()
    for gz in (".gz", ".bgz"):
        name = name.removesuffix(gz)
    return name.endswith(_QUERY_SUFFIXES)


def read_query_list(list_file: str | os.PathLike, *, suffix: str = ".sam") -> list[tuple[QueryFile, str]]:
    """Parse a query list: ``(query, output name)`` per entry, paths resolved against the list's folder.

    The :class:`~gseek.pipeline.engine.QueryFile` has the absolute input
    path and, as ``output``, the bare output name (joined to the output
    folder by :func:`run_pipeline`).
    """
    path = Path(list_file)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise QueryListError(path, None, "no such query list") from None
    except UnicodeDecodeError:
        raise QueryListError(path, None, "not a text file (expected one query file per line)") from None
    except OSError as exc:
        raise QueryListError(path, None, f"cannot read: {exc.strerror or exc}") from None
    base = path.parent
    entries: list[tuple[QueryFile, str]] = []
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        columns = [c.strip() for c in (line.split("\t") if "\t" in line else line.split())]
        columns = [c for c in columns if c]
        mates = len(columns) in (2, 3) and _is_reads_name(columns[1])
        if len(columns) > 3 or (len(columns) == 3 and not mates):
            raise QueryListError(path, lineno, f"expected 'QUERY [OUTPUT]', found {len(columns)} columns (or "
                                               f"'MATE1 MATE2 [OUTPUT]', MATE2 a FASTA/FASTQ name)")
        query = columns[0]
        output = columns[-1] if len(columns) == 2 + mates else default_output(query, suffix)
        if "/" in output or os.sep in output or output.startswith(".") or output in ("", SUMMARY_NAME):
            raise QueryListError(path, lineno, f"output {output!r} must be a file name inside the output folder "
                                               f"(not starting with '.', not {SUMMARY_NAME})")
        if output in seen:
            raise QueryListError(path, lineno, f"output {output!r} is also the output of line {seen[output]}")
        seen[output] = lineno
        inputs = []
        for name in columns[: 1 + mates]:
            resolved = Path(name).expanduser()
            inputs.append(os.path.abspath(resolved if resolved.is_absolute() else base / resolved))
        entries.append((QueryFile(tuple(inputs), output, name=query, line=lineno, paired=mates), output))
    if not entries:
        raise QueryListError(path, None, "no query files listed")
    return entries



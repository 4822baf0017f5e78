"""What a command reports on stderr: progress bars, bowtie's summary (the compile notice, which every
command gives, is :class:`gseek.compile_notice.CompileNotice`, entered by the group)."""

from __future__ import annotations

import sys


from .app import STATE

def bowtie_summary(reads: int, aligned: int, alignments: int, *, paired: bool = False) -> list[str]:
    """The lines bowtie 1.3.1 prints on stderr after a run (``-v`` mode, no ``-m``).

    ``paired``: ``reads`` are pairs, ``aligned`` pairs aligned concordantly,
    ``alignments`` concordant pairs reported ("paired-end alignments").

    >>> print("\\n".join(bowtie_summary(3, 2, 5)))
    # reads processed: 3
    # reads with at least one alignment: 2 (66.67%)
    # reads that failed to align: 1 (33.33%)
    Reported 5 alignments
    >>> bowtie_summary(0, 0, 0)[1:]
    ['# reads with at least one alignment: 0 (0.00%)', '# reads that failed to align: 0 (0.00%)', 'No alignments']
    >>> bowtie_summary(300, 270, 270, paired=True)[-1]
    'Reported 270 paired-end alignments'
    """

    def percent(n: int) -> str:
        return f"{100.0 * n / reads if reads else 0.0:.2f}%"

    return [f"# reads processed: {reads}",
            f"# reads with at least one alignment: {aligned} ({percent(aligned)})",
            f"# reads that failed to align: {reads - aligned} ({percent(reads - aligned)})",
            f"Reported {alignments} {'paired-end ' if paired else ''}alignments" if alignments else "No alignments"]


class CountBar:
    """A tqdm bar counting ``unit`` (its rate: ``unit``/s) on a terminal's stderr;
    none with --quiet or when stderr is not a terminal (a log). ``gseek align``
    counts pairs (``set_total`` when known), ``gseek search`` reads as their
    records are written."""

    def __init__(self, desc: str, unit: str) -> None:
        self.desc, self.unit = desc, unit
        self.total: int | None = None
        self._bar = None

    @property
    def shown(self) -> bool:
        return self._bar is not None

    def __enter__(self) -> CountBar:
        if not STATE.quiet and sys.stderr.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=self.total, desc=self.desc, unit=self.unit, unit_scale=True, file=sys.stderr)
        return self

    def set_total(self, total: int) -> None:
        if self._bar is not None:
            self._bar.total = total
            self._bar.refresh()

    def update(self, n: int) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.close()


"""The ``gseek`` command line: thin click commands over the Python API.

Commands parse options and call the API; errors print one line
(``gseek: error: ...``) and exit non-zero, with the traceback only under
``--debug``. Options that belong to every command (``--device``, ``-p``,
``--quiet``, ``--debug``) are accepted before or after the command name.

One module per command (:mod:`~gseek.cli.index`, :mod:`~gseek.cli.search`,
:mod:`~gseek.cli.align`, :mod:`~gseek.cli.pipeline`, :mod:`~gseek.cli.stats`,
:mod:`~gseek.cli.demo`, :mod:`~gseek.cli.compile`, :mod:`~gseek.cli.serve`, :mod:`~gseek.cli.blastn`: ``blastn`` and ``makeblastdb``, BLAST+'s own syntax, read by :mod:`~gseek.cli.blast_plus`); the group and what every
command shares in :mod:`~gseek.cli.app`, the shared option groups in
:mod:`~gseek.cli.options`, reporting (progress, summaries, the compile notice)
in :mod:`~gseek.cli.report`, and the process (entry points, exit codes,
signals, a closed stdout) in :mod:`~gseek.cli.process`.
"""

from __future__ import annotations

from . import align, blastn, compile, demo, index, pipeline, search, serve, stats  # noqa: F401 - the commands
from .app import cli
from .process import exit_now, main, run

__all__ = ["cli", "main", "run", "exit_now"]

"""``python -m gseek`` runs the command line."""

from .cli import run

run()

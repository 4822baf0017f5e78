"""``python -m gseek`` runs the command line."""

from .cli import exit_now, main

exit_now(main())

"""What one request, and the service, may ask for: :class:`Limits` (``gseek serve``'s limit options).

Apart from the engine so that the command line builds its options without the engine's imports.

>>> Limits(queue=8).queue
8
>>> Limits(timeout=0)
Traceback (most recent call last):
...
gseek.errors.OptionError: limit timeout must be > 0, not 0
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gseek.errors import OptionError

__all__ = ["LIMIT_HELP", "Limits"]


@dataclass(frozen=True)
class Limits:
    """What one request, and the service, may ask for (``gseek serve``'s limit options; ``docs/serve.md``).

    ``max_body`` bytes of request body; ``max_queries`` records and ``max_bases`` bases of one
    request; ``max_result`` bytes of one result; ``timeout`` seconds of one request (504 after);
    ``queue`` requests at once, searches and jobs running (429 beyond); ``drain`` seconds given
    to requests in flight at SIGTERM/SIGINT; ``window`` seconds a batch waits for more requests,
    ``batch_queries`` / ``batch_bases`` its bounds; ``jobs`` jobs kept, ``job_ttl`` seconds a
    finished job's result is kept, ``job_bytes`` bytes of results kept (a new job beyond: 429).
    ``timeout`` also bounds the reading of a request's body (408). A result larger than
    ``stream_chunk`` bytes is streamed (chunked transfer encoding) in pieces of that size.
    """

    max_body: int = 64 << 20
    max_queries: int = 100_000
    max_bases: int = 64_000_000
    max_result: int = 256 << 20
    timeout: float = 300.0
    queue: int = 64
    drain: float = 30.0
    window: float = 0.005
    batch_queries: int = 10_000
    batch_bases: int = 8 << 20
    jobs: int = 64
    job_ttl: float = 3600.0
    job_bytes: int = 1 << 30
    stream_chunk: int = 1 << 20

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not value > 0 and not (f.name == "window" and value == 0):
                raise OptionError(f"limit {f.name.replace('_', '-')} must be > 0, not {value}")


#: ``gseek serve``'s option of each limit (``--max-body`` ...): its help.
LIMIT_HELP = {
    "max_body": "bytes of one request body", "max_queries": "query records of one request",
    "max_bases": "query bases of one request", "max_result": "bytes of one result",
    "timeout": "seconds one request may take (504 after)", "queue": "requests in progress at once (429 beyond)",
    "drain": "seconds given to requests in flight at SIGTERM/SIGINT", "window": "seconds a batch waits for more "
    "requests", "batch_queries": "queries of one batch", "batch_bases": "bases of one batch",
    "jobs": "jobs kept at once", "job_ttl": "seconds a finished job's result is kept",
    "job_bytes": "bytes of the finished jobs' results kept at once (429 for a new job beyond)",
    "stream_chunk": "bytes of one piece of a streamed result (a larger result is streamed in pieces)",
}

"""``gseek serve``: a resident search service (``docs/serve.md``).

:mod:`~gseek.serve.request` checks a request, :mod:`~gseek.serve.engine`
holds the databases and warm searchers,
:mod:`~gseek.serve.batcher` gathers concurrent requests into one search on a
device worker (:mod:`~gseek.serve.slots`: ``--gpus``; worker processes,
:mod:`~gseek.serve.processes`: ``--workers``),
:mod:`~gseek.serve.app` is the HTTP API (Starlette) and the web page,
:mod:`~gseek.serve.server` runs it (uvicorn), :mod:`~gseek.serve.client` talks
to it with the standard library only. Importing this package imports nothing
else: the client starts fast.
"""

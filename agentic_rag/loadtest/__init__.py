"""The load-testing harness behind ``agentic-rag loadtest``.

Three processes take part: the command's own (plans the run, writes the report, checks the targets);
a locust worker (:mod:`agentic_rag.loadtest.worker`), which generates the load; and a sampler
(:mod:`agentic_rag.loadtest.serve_sampler`), which reads replica counts from Ray Serve and the
runs in flight from ``/metrics``.

Locust is a process of its own because it monkey-patches the standard library with gevent on import,
which must happen before ``ssl`` is imported; the command has imported it long before (httpx,
asyncpg). Nothing here imports locust: only the worker does. Nothing here imports Ray: only the sampler.
"""

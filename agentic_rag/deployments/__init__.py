"""Serving: the HTTP API (Ray-free) and the Ray Serve application that runs it over deployments.

Ray is imported only by the Serve modules (``wire``, ``models``, ``retrievers``, ``orchestrator``,
``serve_service``, ``ingress``, ``app``, ``launch``); importing this package, ``http`` or ``service``
does not import Ray, so the API also runs in-process under uvicorn.
"""

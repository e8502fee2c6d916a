"""Ray Serve, and only Ray Serve: the deployments (``ingress``, ``orchestrator``, ``models``, ``retrievers``),
what crosses a handle (``wire``), the handle-backed service the Ingress serves (``service``), the app builders
(``app``, ``graphql``), application args (``args``), a local launcher (``launch``) and the fault injector
(``faults``). The surfaces they serve are Ray-free, in :mod:`agentic_rag.api`.
"""

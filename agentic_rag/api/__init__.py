"""The Ray-free surfaces of the service: HTTP (``http/``), gRPC (``grpc/``), GraphQL (``graphql/``), the
OpenAI-compatible route (``openai``), one table from a failure's kind to its status (``errors``), API keys
(``auth``), the request's cost ledger (``costs``), and the :class:`~agentic_rag.api.service.AgentService` seam
with its in-process implementation (``service``). Nothing here imports Ray: ``agentic_rag.serve`` runs these
apps over deployment handles, and the same apps run in-process under uvicorn.
"""

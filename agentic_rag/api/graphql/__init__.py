"""The GraphQL backend (BFF): typeahead, the agent over gRPC SearchAI, and entities hydrated with DataLoaders.

``create_app(settings, grpc_target)`` builds it as a plain ASGI app (:mod:`agentic_rag.api.graphql.app`); the
schema is in :mod:`agentic_rag.api.graphql.schema`. No module here imports Ray.
"""

from agentic_rag.api.graphql.app import create_app
from agentic_rag.api.graphql.schema import build_schema

__all__ = ["build_schema", "create_app"]

"""What every resolver of one GraphQL request (or one subscription's connection) can reach."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentic_rag.api.graphql.agent import AgentClient
from agentic_rag.api.graphql.loaders import Loaders
from agentic_rag.orchestrator.trajectory import TrajectoryStore
from agentic_rag.settings import Settings
from agentic_rag.storage.sql import Pool

__all__ = ["Context"]


@dataclass
class Context:
    """The request's loaders, the backend's shared clients, and who asks.

    ``credentials`` are the caller's API key as gRPC metadata (forwarded to SearchAI, which checks the same
    keys); ``connection_params`` is what a WebSocket client sent with ``connection_init``.
    """

    settings: Settings
    pool: Pool
    loaders: Loaders
    agent: AgentClient
    store: TrajectoryStore
    tenant: str
    request_id: str
    credentials: tuple[tuple[str, str], ...] = ()
    connection_params: dict[str, Any] | None = field(default=None)

"""The retrieval seam of the loop: every executor the orchestrator may call, behind one interface.

The orchestrator only sees :class:`Retrieval`. In-process it is :class:`LocalRetrieval` over a
PostgreSQL pool and a Qdrant client; in Ray Serve the deployments wire their handles into an object
of the same shape, so the loop does not change.
"""

from __future__ import annotations

from typing import Protocol

from psycopg_pool import AsyncConnectionPool

from agentic_rag.protocol import (
    EntityLinks,
    EntityRef,
    GraphIntent,
    GraphResult,
    RetrievalResult,
    SearchIntent,
    StructuredQuery,
)
from agentic_rag.retrievers.dsl import QueryResult, run_query
from agentic_rag.retrievers.errors import RetrievalError, on_pool
from agentic_rag.retrievers.graph import PostgresGraphExecutor
from agentic_rag.retrievers.hybrid import HybridRetriever
from agentic_rag.retrievers.hydrate import labels
from agentic_rag.retrievers.vector import EmbedFn, QdrantExecutor
from agentic_rag.settings import Settings
from agentic_rag.storage.qdrant import VectorStore
from agentic_rag.understanding.asks import AskClassifier
from agentic_rag.understanding.linker import link


class Retrieval(Protocol):
    """What the loop may ask of the catalog. Each call is bounded, retried on a transient failure, and never
    writes; what still fails raises ``RetrievalError``."""

    async def search(self, intent: SearchIntent) -> RetrievalResult:
        """A Qdrant search (fused with PostgreSQL names), or a fetch by id."""
        ...

    async def graph(self, intent: GraphIntent) -> tuple[GraphResult, dict[str, str]]:
        """A graph primitive, with display labels (id -> "Name (type, year)") of every node it names."""
        ...

    async def query(self, query: StructuredQuery) -> QueryResult:
        """A structured lookup or aggregate through the query DSL."""
        ...

    async def link(self, question: str) -> EntityLinks:
        """The catalog names ``question`` mentions, each with the entities it may mean, and what it asks
        by meaning (nearest labelled exemplars)."""
        ...


class LocalRetrieval:
    """:class:`Retrieval` in-process: the shipped executors over one pool and one Qdrant client."""

    def __init__(self, pool: AsyncConnectionPool, client: VectorStore, embed: EmbedFn, settings: Settings, *,
                 graph: PostgresGraphExecutor | None = None) -> None:
        self._pool = pool
        self._timeout_s = settings.query_timeout_ms / 1000
        self._attempts = settings.retry_attempts
        self._hybrid = HybridRetriever(pool, QdrantExecutor(client, embed, settings))
        self._asks = AskClassifier(embed)
        # the graph primitives may run on a pool of their own (sized for traversal, or a replica)
        self._graph = graph or PostgresGraphExecutor(pool, settings)

    async def search(self, intent: SearchIntent) -> RetrievalResult:
        return await self._hybrid.execute(intent)

    async def graph(self, intent: GraphIntent) -> tuple[GraphResult, dict[str, str]]:
        result = await self._graph.execute(intent)
        refs: list[EntityRef] = [intent.start, *([intent.end] if intent.end else []), *result.node_ids]
        return result, await on_pool(self._pool, "postgres", lambda conn: labels(conn, refs), attempts=self._attempts)

    async def query(self, query: StructuredQuery) -> QueryResult:
        return await on_pool(self._pool, "pg_query", lambda conn: run_query(conn, query, timeout_s=self._timeout_s),
                             attempts=self._attempts)

    async def link(self, question: str) -> EntityLinks:
        links = await on_pool(self._pool, "postgres", lambda conn: link(conn, question, timeout_s=self._timeout_s),
                              attempts=self._attempts)
        try:
            asks = await self._asks(question, links)
        except RetrievalError:
            return links  # what is asked by meaning is a hint; the names stand without it
        return links.model_copy(update={"asks": asks})

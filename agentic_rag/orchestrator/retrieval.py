"""The retrieval seam of the loop: every executor the orchestrator may call, behind one interface.

The orchestrator only sees :class:`Retrieval`. In-process it is :class:`LocalRetrieval` over a
PostgreSQL pool and a Qdrant client; in Ray Serve the deployments wire their handles into an object
of the same shape, so the loop does not change. A turn's intents go to :meth:`Retrieval.execute` together: in
Serve that is one call per retriever deployment a turn, whatever the number of intents it carries.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from agentic_rag.protocol import (
    BatchIntent,
    EntityLinks,
    EntityRef,
    GraphIntent,
    GraphResult,
    RetrievalResult,
    SearchIntent,
    SimilarIntent,
    StructuredQuery,
)
from agentic_rag.protocol.reading import Analysis
from agentic_rag.retrievers.dsl import QueryResult, run_query
from agentic_rag.retrievers.errors import RetrievalError, on_pool
from agentic_rag.retrievers.graph import PostgresGraphExecutor
from agentic_rag.retrievers.hybrid import HybridRetriever
from agentic_rag.retrievers.hydrate import labels
from agentic_rag.retrievers.similar import SimilarRetriever
from agentic_rag.retrievers.vector import EmbedFn, ImageEmbedFn, QdrantExecutor
from agentic_rag.settings import Settings
from agentic_rag.storage.qdrant import VectorStore
from agentic_rag.storage.sql import Pool
from agentic_rag.understanding.asks import AskClassifier
from agentic_rag.understanding.linker import link
from agentic_rag.understanding.reading import read


class Linked(NamedTuple):
    """A linked question: the catalog names it mentions (and what it asks by meaning, when its reading turned to
    that), and its reading, which every role of the run is handed."""

    links: EntityLinks
    reading: Analysis


GraphFound = tuple[GraphResult, dict[str, str]]  # a graph primitive's result and the labels of the nodes it names
Found = RetrievalResult | GraphFound | QueryResult


@dataclass(frozen=True)
class Executed:
    """One intent's outcome: what it found, or the exception it failed with; and the time it took."""

    found: Found | None
    error: Exception | None
    ms: float


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

    async def similar(self, intent: SimilarIntent) -> RetrievalResult:
        """A recommendation: works like the examples, by Qdrant's recommendation query and the catalog graph."""
        ...

    async def execute(self, intents: Sequence[BatchIntent]) -> list[Executed]:
        """A turn's intents, concurrently: one outcome each, in order. A failing intent fails alone."""
        ...

    async def link(self, question: str, timings: MutableMapping[str, float] | None = None) -> Linked:
        """The catalog names ``question`` mentions, each with the entities it may mean, what it asks by meaning
        (nearest labelled exemplars) and its reading. ``timings["asks_ms"]`` is charged with the time the encoder
        took here (a model's time, not the loop's)."""
        ...


async def run_intent(retrieval: Retrieval, intent: BatchIntent) -> Found:
    """One intent on the executor of its kind."""
    if isinstance(intent, SearchIntent):
        return await retrieval.search(intent)
    if isinstance(intent, GraphIntent):
        return await retrieval.graph(intent)
    if isinstance(intent, SimilarIntent):
        return await retrieval.similar(intent)
    return await retrieval.query(intent)


async def timed(work: Callable[[], Awaitable[Found]]) -> Executed:
    """``work``'s outcome with its time; an exception it raises is the outcome (a cancellation is not)."""
    t0 = time.perf_counter()
    try:
        found = await work()
    except Exception as exc:
        return Executed(None, exc, (time.perf_counter() - t0) * 1000)
    return Executed(found, None, (time.perf_counter() - t0) * 1000)


async def each(retrieval: Retrieval, intents: Sequence[BatchIntent]) -> list[Executed]:
    """:meth:`Retrieval.execute` for a retrieval whose every call is local: each intent concurrently."""
    return list(await asyncio.gather(*(timed(functools.partial(run_intent, retrieval, i)) for i in intents)))


class LocalRetrieval:
    """:class:`Retrieval` in-process: the shipped executors over one pool and one Qdrant client."""

    def __init__(self, pool: Pool, client: VectorStore, embed: EmbedFn, settings: Settings, *,
                 graph: PostgresGraphExecutor | None = None, embed_image: ImageEmbedFn | None = None) -> None:
        self._pool = pool
        self._timeout_s = settings.query_timeout_ms / 1000
        self._attempts = settings.retry_attempts
        # without embed_image (no image model) a search with an image is refused as not configured
        vector = QdrantExecutor(client, embed, settings, embed_image)
        self._hybrid = HybridRetriever(pool, vector)
        self._similar = SimilarRetriever(pool, vector)
        self._asks = AskClassifier(embed)
        # the graph primitives may run on a pool of their own (sized for traversal, or a replica)
        self._graph = graph or PostgresGraphExecutor(pool, settings)

    async def search(self, intent: SearchIntent) -> RetrievalResult:
        return await self._hybrid.execute(intent)

    async def graph(self, intent: GraphIntent) -> tuple[GraphResult, dict[str, str]]:
        result = await self._graph.execute(intent)
        refs: list[EntityRef] = [intent.start, *([intent.end] if intent.end else []), *result.node_ids]
        return result, await on_pool(self._pool, "postgres", lambda conn: labels(conn, refs), attempts=self._attempts)

    async def similar(self, intent: SimilarIntent) -> RetrievalResult:
        return await self._similar.execute(intent)

    async def query(self, query: StructuredQuery) -> QueryResult:
        return await on_pool(self._pool, "pg_query", lambda conn: run_query(conn, query, timeout_s=self._timeout_s),
                             attempts=self._attempts)

    async def execute(self, intents: Sequence[BatchIntent]) -> list[Executed]:
        return await each(self, intents)

    async def link(self, question: str, timings: MutableMapping[str, float] | None = None) -> Linked:
        links = await on_pool(self._pool, "postgres", lambda conn: link(conn, question, timeout_s=self._timeout_s),
                              attempts=self._attempts)
        return await with_asks(self._asks, question, links, timings, timeout_s=self._timeout_s)


async def with_asks(asks: AskClassifier, question: str, links: EntityLinks,
                    timings: MutableMapping[str, float] | None = None, *,
                    timeout_s: float | None = None) -> Linked:
    """The question read with its ``links``, and with what it asks by meaning when its reading turns to that
    (``Analysis.by_meaning``: a name no cue word says anything about, one question in ten), so only those
    questions cost an embedding, and a second reading. The links stay as they were when the encoder cannot be
    reached within ``timeout_s``. The time it took is added to ``timings["asks_ms"]``."""
    reading = read(question, links)
    if not reading.by_meaning:
        return Linked(links, reading)
    t0 = time.perf_counter()
    try:
        # bounded: while the Embedder restarts, a call to it waits for a replica, and the names found already
        # must not wait with it (the caller would time the whole linking out and lose them)
        async with asyncio.timeout(timeout_s):
            hints = await asks(question, links)
    except (RetrievalError, TimeoutError):
        return Linked(links, reading)  # what is asked by meaning is a hint; the names stand without it
    finally:
        if timings is not None:
            timings["asks_ms"] = timings.get("asks_ms", 0.0) + (time.perf_counter() - t0) * 1000
    links = links.model_copy(update={"asks": hints})
    return Linked(links, read(question, links))

"""Retriever deployments: Qdrant search (fused with PostgreSQL names) and the PostgreSQL graph side (with entity
linking, which reads what a question asks by meaning through the Embedder).

Each method takes a contract as JSON, validates it, runs the same executor the in-process
:class:`~agentic_rag.orchestrator.retrieval.LocalRetrieval` runs, and answers with a
:mod:`~agentic_rag.serve.wire` reply.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, TypeVar

import asyncpg
from pydantic import Field, TypeAdapter
from pydantic_core import to_jsonable_python
from ray import serve
from ray.serve.deployment import Deployment
from ray.serve.handle import DeploymentHandle

from agentic_rag.errors import InvalidInput
from agentic_rag.orchestrator.retrieval import Linked, with_asks
from agentic_rag.orchestrator.state import QUESTION_MAX
from agentic_rag.protocol import MAX_BATCH, EntityRef, GraphIntent, SearchIntent, SimilarIntent, StructuredQuery
from agentic_rag.retrievers.dsl import run_query
from agentic_rag.retrievers.errors import FailureKind, RetrievalError, on_pool
from agentic_rag.retrievers.graph import PostgresGraphExecutor
from agentic_rag.retrievers.hybrid import HybridRetriever
from agentic_rag.retrievers.hydrate import MAX_HYDRATE, hydrate, labels
from agentic_rag.retrievers.similar import SimilarRetriever
from agentic_rag.retrievers.typeahead import TypeaheadQuery, typeahead
from agentic_rag.retrievers.vector import QdrantExecutor
from agentic_rag.serve.args import open_pool, replica_settings
from agentic_rag.serve.wire import (
    INTENTS,
    MAX_MESSAGE,
    GraphOutput,
    WireFailure,
    WireIntent,
    WireOutcome,
    accounted,
    handle_embed,
    handle_embed_images,
    ok,
    parse,
)
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import close_pool
from agentic_rag.storage.qdrant import QdrantStoreInUse, VectorStore, open_qdrant
from agentic_rag.storage.retry import DATABASE_FAILURES, Conn
from agentic_rag.understanding.asks import AskClassifier
from agentic_rag.understanding.linker import link

log = logging.getLogger(__name__)
T = TypeVar("T")
REFS = TypeAdapter(Annotated[list[EntityRef], Field(max_length=MAX_HYDRATE)])
EMBEDDER_WARM_S = 30.0  # how long a retriever replica's constructor waits for its first Embedder call
STORE_WAIT_S = 60.0  # how long a new VectorRetriever replica waits for its dead predecessor to let go of the store


async def _answer(source: str, work: Awaitable[Any]) -> dict[str, Any]:
    """``work``'s value as a reply. A store's failure is raised as the RetrievalError the in-process executors
    raise (a driver's own exception, which may not even pickle, never crosses the handle); anything else that is
    not ours is a bug and travels as Ray's error."""
    try:
        return ok(await work)
    except DATABASE_FAILURES as exc:
        reason: FailureKind = "timeout" if isinstance(exc, TimeoutError | asyncpg.QueryCanceledError) else "unavailable"
        raise RetrievalError(source, reason, str(exc)[:MAX_MESSAGE] or f"{source} ran past its time limit") from None


async def _execute(intents: Any, store: str, steps: Mapping[str, Callable[[Any], Awaitable[Any]]]) -> dict[str, Any]:
    """Each intent (:class:`~agentic_rag.serve.wire.WireIntent`, at most a step's batch) on the step of its kind,
    concurrently; each outcome says what it found or why it failed, so one failing intent fails alone, as
    in-process. ``store`` is what a database failure names."""
    items = parse(INTENTS, intents)
    if len(items) > MAX_BATCH:
        raise InvalidInput(f"{len(items)} intents in one call; a step has at most {MAX_BATCH}")
    for item in items:
        if item.kind not in steps:
            raise InvalidInput(f"this deployment does not run {item.kind} intents ({', '.join(steps)})")

    async def one(item: WireIntent) -> WireOutcome:
        t0 = time.perf_counter()
        try:
            value = to_jsonable_python(await steps[item.kind](item.intent))
            return WireOutcome(value=value, ms=(time.perf_counter() - t0) * 1000)
        except RetrievalError as exc:
            failure = WireFailure(source=exc.source[:40], reason=exc.reason, message=str(exc)[:MAX_MESSAGE])
        except DATABASE_FAILURES as exc:
            reason: FailureKind = ("timeout" if isinstance(exc, TimeoutError | asyncpg.QueryCanceledError)
                                   else "unavailable")
            failure = WireFailure(source=store, reason=reason, message=str(exc)[:MAX_MESSAGE] or f"{store} failed")
        except Exception as exc:  # a bug, or an intent refused: this intent fails, its siblings stand
            log.warning("a %s intent failed", item.kind, exc_info=exc)
            failure = WireFailure(source=store, message=f"{type(exc).__name__}: {exc}"[:MAX_MESSAGE])
        return WireOutcome(error=failure, ms=(time.perf_counter() - t0) * 1000)

    return ok(await asyncio.gather(*(one(item) for item in items)))


async def _warm(embed: Callable[[list[str]], Awaitable[Any]]) -> None:
    """One call to the Embedder before this replica takes a request: a handle's first call sets up its router (about
    2 s here), which the first question embedded from this replica would otherwise pay. Bounded, and a failure only
    logged: the Embedder may still be starting, and the replica works without it (a search then fails alone)."""
    try:
        async with asyncio.timeout(EMBEDDER_WARM_S):
            await embed(["warm up"])
    except Exception as exc:
        log.warning("the Embedder did not answer the warm-up call: %s", str(exc) or type(exc).__name__)


async def _open_store(settings: Settings) -> VectorStore:
    """The configured Qdrant. An embedded store that another process still holds is waited for (up to
    :data:`STORE_WAIT_S`): when a VectorRetriever replica is killed, Serve starts the next one at once, but the
    killed process can take many seconds to exit and let go of the store (about 20 s under load here), and a
    constructor that fails meanwhile only has Serve start another, and another."""
    deadline = time.monotonic() + STORE_WAIT_S
    while True:
        try:
            return await asyncio.to_thread(open_qdrant, settings)
        except QdrantStoreInUse:
            if time.monotonic() >= deadline:
                raise
            await asyncio.sleep(0.5)


class VectorReplica:
    """Hybrid search: Qdrant vectors (queries embedded by the Embedder deployment) fused with PostgreSQL names; and
    recommendations (Qdrant's recommendation query fused with the catalog graph's evidence)."""

    # Serve awaits an async constructor, so the pool is open before the replica takes a request
    async def __init__(self, args: dict[str, Any], embedder: DeploymentHandle[Any]) -> None:  # type: ignore[misc]
        settings = replica_settings(args)
        self._pool = await open_pool(settings)
        # an embedded store (edge or local mode) opens its path for this process alone: hence one replica
        self._client: VectorStore = await _open_store(settings)
        # searches by image embed it on the Embedder too, where it holds the image model
        embed = handle_embed(embedder)
        self._executor = QdrantExecutor(self._client, embed, settings,
                                        handle_embed_images(embedder) if settings.image_model is not None else None)
        self._hybrid = HybridRetriever(self._pool, self._executor)
        self._similar = SimilarRetriever(self._pool, self._executor)
        await _warm(embed)

    @accounted
    async def execute(self, intents: Any) -> dict[str, Any]:
        """A turn's searches and recommendations, concurrently: one :class:`~agentic_rag.serve.wire.WireOutcome`
        each, in order."""
        return await _execute(intents, "qdrant", {
            "search": lambda raw: self._hybrid.execute(parse(SearchIntent, raw)),
            "similar": lambda raw: self._similar.execute(parse(SimilarIntent, raw)),
        })

    @accounted
    async def ready(self) -> dict[str, Any]:
        """Whether Qdrant answers (readiness of the API)."""
        return await _answer("qdrant", asyncio.to_thread(self._executor.call, self._client.get_collections))

    async def __del__(self) -> None:
        client, pool = getattr(self, "_client", None), getattr(self, "_pool", None)
        if client is not None:
            client.close()
        if pool is not None:
            await close_pool(pool)


class GraphReplica:
    """Graph primitives, the query DSL, entity linking and the typeahead (``/v1/search``) over PostgreSQL."""

    async def __init__(self, args: dict[str, Any], embedder: DeploymentHandle[Any]) -> None:  # type: ignore[misc]
        # Serve awaits it
        self._settings = replica_settings(args)
        self._timeout_s = self._settings.query_timeout_ms / 1000
        self._pool = await open_pool(self._settings)
        self._graph = PostgresGraphExecutor(self._pool, self._settings)
        # what a question asks by meaning, read with its names: linking is one call from the Orchestrator
        embed = handle_embed(embedder)
        self._asks = AskClassifier(embed)
        await _warm(embed)

    def _db(self, source: str, op: Callable[[Conn], Awaitable[T]]) -> Awaitable[T]:
        """``op`` on a pooled connection under the retry policy (a terminated backend costs one retry)."""
        return on_pool(self._pool, source, op, attempts=self._settings.retry_attempts)

    @accounted
    async def execute(self, intents: Any) -> dict[str, Any]:
        """A turn's graph primitives and catalog queries, concurrently: one
        :class:`~agentic_rag.serve.wire.WireOutcome` each, in order."""
        return await _execute(intents, "postgres", {"graph": self._graph_step, "query": self._query_step})

    async def _graph_step(self, raw: Any) -> GraphOutput:
        parsed = parse(GraphIntent, raw)
        result = await self._graph.execute(parsed)
        refs: list[EntityRef] = [parsed.start, *([parsed.end] if parsed.end else []), *result.node_ids]
        return GraphOutput(result=result, labels=await self._db("postgres", lambda conn: labels(conn, refs)))

    async def _query_step(self, raw: Any) -> Any:
        parsed = parse(StructuredQuery, raw)
        return await self._db("pg_query", lambda conn: run_query(conn, parsed, timeout_s=self._timeout_s))

    @accounted
    async def link(self, question: Any) -> dict[str, Any]:
        """The catalog names a question mentions, what it asks by meaning, and its reading (entity linking, before
        the planner: the reading decides whether the question is embedded, and the run is handed it)."""
        text = str(question)[:QUESTION_MAX]

        async def run() -> Linked:
            links = await self._db("postgres", lambda conn: link(conn, text, timeout_s=self._timeout_s))
            return await with_asks(self._asks, text, links, timeout_s=self._timeout_s)

        return await _answer("postgres", run())

    @accounted
    async def typeahead(self, query: Any) -> dict[str, Any]:
        """The search lane: typeahead over every entity type (no model, no agent)."""
        parsed = parse(TypeaheadQuery, query)

        return await _answer("postgres", self._db("postgres",
                                                  lambda conn: typeahead(conn, parsed, timeout_s=self._timeout_s)))

    @accounted
    async def entities(self, refs: Any) -> dict[str, Any]:
        """Full records for ``refs`` in the order given (unknown ids left out)."""
        parsed = parse(REFS, refs)

        async def run(conn: Conn) -> Any:
            async with asyncio.timeout(self._timeout_s):
                return await hydrate(conn, parsed)

        return await _answer("postgres", self._db("postgres", run))

    @accounted
    async def ready(self) -> dict[str, Any]:
        """Whether PostgreSQL answers (readiness of the API)."""

        async def run() -> bool:
            async with asyncio.timeout(self._timeout_s), self._pool.acquire() as conn:
                await conn.execute("SELECT 1")
            return True

        return await _answer("postgres", run())

    async def __del__(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None:
            await close_pool(pool)


VectorRetriever: Deployment = serve.deployment(
    name="VectorRetriever",
    # waits on the Embedder and on Qdrant far more than it computes
    ray_actor_options={"num_cpus": 0.2},
    # one search in flight per concurrent run's branch; an embedded store serialises Qdrant calls anyway
    max_ongoing_requests=64,
    max_queued_requests=512,
    # with a Qdrant server (RAG_QDRANT_URL) it scales; build_app pins an embedded store to exactly one replica
    autoscaling_config={"min_replicas": 1, "max_replicas": 2, "target_ongoing_requests": 32,
                        "upscale_delay_s": 10, "downscale_delay_s": 300},
)(VectorReplica)


GraphRetriever: Deployment = serve.deployment(
    name="GraphRetriever",
    # SQL runs in PostgreSQL; the replica only sends it and shapes rows
    ray_actor_options={"num_cpus": 0.2},
    # Linking holds its slot while the Embedder reads what the question asks, with no connection held:
    # at 32 slots (about 3x the pool) the links waiting on embeddings under 64 runs kept the graph steps
    # queued for a second and more (docs/benchmarks.md, the cost account). The pool bounds the SQL in flight.
    max_ongoing_requests=96,
    max_queued_requests=512,
    autoscaling_config={"min_replicas": 1, "max_replicas": 2, "target_ongoing_requests": 48,
                        "upscale_delay_s": 10, "downscale_delay_s": 300},
)(GraphReplica)

"""Everything a run needs, built from settings in one place: the in-process wiring of the loop.

``async with open_runtime(settings) as rt: await rt.orchestrator.run(question)``. The CLI, the tests
and the benchmarks use this; Ray Serve deployments wire the same pieces from their own handles.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from agentic_rag import tracing
from agentic_rag.errors import Unavailable
from agentic_rag.models.embeddings import Embedder
from agentic_rag.models.image_embeddings import ImageEmbedder
from agentic_rag.orchestrator.guards import load_policy
from agentic_rag.orchestrator.loop import Orchestrator
from agentic_rag.orchestrator.retrieval import LocalRetrieval
from agentic_rag.orchestrator.sweep import start_sweeper
from agentic_rag.orchestrator.trajectory import TrajectoryStore
from agentic_rag.planners.factory import build_fallback, build_model
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import close_pool, make_pool, migrate, resolve_dsn
from agentic_rag.storage.qdrant import VectorStore, open_qdrant
from agentic_rag.storage.sql import Pool

CATALOG_COUNT_SQL = "SELECT count(*) FROM entity_name"


class CatalogEmpty(Unavailable, RuntimeError):
    """The catalog has not been ingested yet."""


@dataclass(slots=True)
class Runtime:
    settings: Settings
    pool: Pool
    qdrant: VectorStore
    embedder: Embedder
    store: TrajectoryStore
    orchestrator: Orchestrator


def build_orchestrator(settings: Settings, pool: Pool, client: VectorStore, embedder: Embedder, *,
                       image_embedder: ImageEmbedder | None = None) -> tuple[Orchestrator, TrajectoryStore]:
    """The orchestrator over in-process retrieval, with the configured models and guard policy (and image search
    when given the image embedder)."""
    store = TrajectoryStore(pool, settings)
    orchestrator = Orchestrator(
        settings, planner=build_model(settings, "planner"), validator=build_model(settings, "validator"),
        fallback=build_fallback(settings),
        retrieval=LocalRetrieval(pool, client, embedder.aembed, settings,
                                 embed_image=image_embedder.aembed if image_embedder is not None else None),
        store=store,
        policy=load_policy(settings.guard_policy),
    )
    return orchestrator, store


@asynccontextmanager
async def open_runtime(settings: Settings, *, require_catalog: bool = True) -> AsyncIterator[Runtime]:
    """Connect to PostgreSQL (migrating it) and Qdrant, load the models, sweep for abandoned runs (now and
    periodically), and close it all afterwards. Traces this process when an OTLP endpoint is named
    (:func:`agentic_rag.tracing.configure`)."""
    tracing.configure(settings)
    dsn = await asyncio.to_thread(resolve_dsn, settings)
    await migrate(dsn)
    pool = await make_pool(dsn, settings)
    client: VectorStore | None = None
    try:
        if require_catalog and not await pool.fetchval(CATALOG_COUNT_SQL):
            raise CatalogEmpty("the catalog is empty: run `agentic-rag ingest` first")
        client = await asyncio.to_thread(open_qdrant, settings)
        embedder = Embedder(settings)
        # load the model now: a first query must not pay for it inside its time limit
        await asyncio.to_thread(embedder.embed, ["warm up"])
        image_embedder = ImageEmbedder(settings) if settings.image_model is not None else None
        if image_embedder is not None:  # loaded now too, and refused now if it is no image model
            await asyncio.to_thread(lambda: image_embedder.dimension)
        orchestrator, store = build_orchestrator(settings, pool, client, embedder, image_embedder=image_embedder)
        # this process is heard in PostgreSQL from now on; runs a dead process left running are closed within
        # seconds of its lapse (and by the timed sweep, now and every interval)
        sweeper = await start_sweeper(store, settings, orchestrator.conversations)
        try:
            yield Runtime(settings, pool, client, embedder, store, orchestrator)
        finally:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
    finally:
        if client is not None:
            client.close()
        await close_pool(pool)

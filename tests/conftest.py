"""Real services for the tests that need them: a fresh PostgreSQL database and an embedded Qdrant store.

Fixtures are lazy: unit tests import this module but start nothing."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import asyncpg
import pytest

from agentic_rag.catalog.ingest import IngestReport, ingest_demo
from agentic_rag.dsn import to_url, with_database
from agentic_rag.models.embeddings import Embedder
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import connect, make_pool, resolve_dsn
from agentic_rag.storage.qdrant import VectorStore, open_qdrant
from agentic_rag.storage.sql import Pool, ident

# One database per test session, dropped at the end: concurrent runs never share state.
TEST_DATABASE = f"agentic_rag_test_{os.getpid()}"


@pytest.fixture(scope="session")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    data = tmp_path_factory.mktemp("data")
    # A configured DATABASE_URL names the server to use; tests always work in their own database.
    return Settings(database_name=TEST_DATABASE, qdrant_path=data / "qdrant",
                    data_dir=Path(os.environ.get("RAG_DATA_DIR", ".data")))


@pytest.fixture(scope="session")
def server(settings: Settings) -> str:
    """DSN of the PostgreSQL server's maintenance database (resolved like the app resolves it)."""
    dsn = resolve_dsn(settings.model_copy(update={"database_name": "postgres"}))
    # DATABASE_URL points at some database: tests work beside it, never in it
    return with_database(dsn, "postgres")


def admin(server: str, *statements: str) -> None:
    """Run ``statements`` one by one on ``server`` from synchronous code (a fixture, or a test inside a running
    event loop: they run on a loop of their own in a worker thread)."""
    async def run() -> None:
        conn = await asyncpg.connect(to_url(server))
        try:
            for statement in statements:
                await conn.execute(statement)
        finally:
            await conn.close()

    with ThreadPoolExecutor(1) as worker:
        worker.submit(asyncio.run, run()).result()


@contextmanager
def scratch_database(server: str, database: str) -> Iterator[str]:
    """A freshly created database, dropped afterwards; yields its DSN."""
    name = ident(database)
    admin(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)", f"CREATE DATABASE {name}")
    try:
        yield with_database(server, database)
    finally:
        admin(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="session")
def scratch(server: str) -> Callable[[str], AbstractContextManager[str]]:
    """``with scratch("name") as dsn:`` a database of the test's own."""
    return lambda database: scratch_database(server, database)


@pytest.fixture(scope="session")
def dsn(scratch: Callable[[str], AbstractContextManager[str]]) -> Iterator[str]:
    """A freshly created database for this session."""
    with scratch(TEST_DATABASE) as d:
        yield d


@pytest.fixture(scope="session")
def embedder(settings: Settings) -> Embedder:
    e = Embedder(settings)
    e.embed(["warm up"])  # load the model once, outside any timed call
    return e


@pytest.fixture(scope="session")
def qdrant(settings: Settings) -> Iterator[VectorStore]:
    """The session's one embedded store (RAG_QDRANT_ENGINE; either engine opens a path in one client)."""
    client = open_qdrant(settings)
    yield client
    client.close()


@pytest.fixture(scope="session")
async def demo(dsn: str, settings: Settings, embedder: Embedder, qdrant: VectorStore) -> IngestReport:
    """The demo catalog loaded into PostgreSQL and Qdrant once per session: the first ingest."""
    return await ingest_demo(dsn, settings, embedder=embedder, client=qdrant)


@pytest.fixture(scope="session")
async def pool(demo: IngestReport, dsn: str, settings: Settings) -> AsyncIterator[Pool]:
    p = await make_pool(dsn, settings)
    yield p
    await p.close()


@pytest.fixture
async def conn(dsn: str) -> AsyncIterator[asyncpg.Connection[asyncpg.Record]]:
    c = await connect(dsn)
    yield c
    await c.close()

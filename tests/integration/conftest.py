"""Real services for integration tests: a fresh PostgreSQL database and a Qdrant local-mode store."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from agentic_rag.catalog.ingest import IngestReport, ingest_demo
from agentic_rag.models.embeddings import Embedder
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import resolve_dsn

TEST_DATABASE = "agentic_rag_test"


@pytest.fixture(scope="session")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    data = tmp_path_factory.mktemp("data")
    # A configured DATABASE_URL names the server to use; tests always work in their own database.
    return Settings(database_name=TEST_DATABASE, qdrant_path=data / "qdrant",
                    data_dir=Path(os.environ.get("RAG_DATA_DIR", ".data")))


@pytest.fixture(scope="session")
def dsn(settings: Settings) -> Iterator[str]:
    """A freshly created test database (dropped first if an earlier run left it)."""
    server = resolve_dsn(settings.model_copy(update={"database_name": "postgres"}))
    if settings.database_url:  # DATABASE_URL points at some database: work beside it, not in it
        server = psycopg.conninfo.make_conninfo(server, dbname="postgres")
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(TEST_DATABASE)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEST_DATABASE)))
    yield psycopg.conninfo.make_conninfo(server, dbname=TEST_DATABASE)


@pytest.fixture(scope="session")
def embedder(settings: Settings) -> Embedder:
    return Embedder(settings)


@pytest.fixture(scope="session")
async def demo(dsn: str, settings: Settings) -> IngestReport:
    """The demo catalog loaded into PostgreSQL and Qdrant once per session: the first ingest."""
    return await ingest_demo(dsn, settings)


@pytest.fixture
async def conn(dsn: str) -> AsyncIterator[psycopg.AsyncConnection[tuple[object, ...]]]:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as c:
        yield c

"""With no DATABASE_URL and no server on the usual port, a private cluster is started and used."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from agentic_rag.settings import Settings
from agentic_rag.storage.devcluster import dev_dsn, stop_private_cluster
from agentic_rag.storage.postgres import DatabaseUnavailable, connect, migrate, resolve_dsn

pytestmark = pytest.mark.integration

NOBODY_HOME = "postgresql://postgres@127.0.0.1:1/postgres"  # nothing listens on port 1


@pytest.fixture
def data_dir() -> Iterator[Path]:
    # Not pytest's tmp_path: that lives under a 0700 directory the unprivileged postgres user
    # (when tests run as root) cannot enter.
    path = Path(tempfile.mkdtemp(prefix="agentic-rag-pg-"))
    path.chmod(0o755)
    yield path
    stop_private_cluster(path)


def _postmaster_uid(data_dir: Path) -> int:
    pid = (data_dir / "pg" / "data" / "postmaster.pid").read_text().split()[0]
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    return int(next(line.split()[1] for line in status if line.startswith("Uid:")))


async def test_a_private_cluster_is_started_when_no_server_answers(data_dir: Path) -> None:
    settings = Settings(data_dir=data_dir, local_postgres_port=54331, database_name="agentic_rag")
    dsn = dev_dsn(settings, system_server=NOBODY_HOME)
    assert "54331" in dsn and "agentic_rag" in dsn
    assert (data_dir / "pg" / "data" / "PG_VERSION").exists()
    conn = await connect(dsn)
    try:
        row = await conn.fetchrow("SELECT current_database(), current_setting('port')")
        assert row == ("agentic_rag", "54331")
    finally:
        await conn.close()
    assert _postmaster_uid(data_dir) != 0  # postgres never runs as root; as root we run it as nobody
    shipped = sorted(p.name for p in resources.files("agentic_rag.storage").joinpath("migrations").iterdir()
                     if p.name.endswith(".sql"))
    assert await migrate(dsn) == shipped
    # a second resolution reuses the running cluster and the existing database
    assert dev_dsn(settings, system_server=NOBODY_HOME) == dsn
    stop_private_cluster(data_dir)
    # and a later one starts it again from the same files, migrations already applied
    again = dev_dsn(settings, system_server=NOBODY_HOME)
    assert await migrate(again) == []


def test_the_served_application_never_starts_a_cluster(data_dir: Path) -> None:
    # build_app and the replicas resolve the DSN this way: no server and none configured is an error that says
    # what to do, and nothing is started or written
    settings = Settings(data_dir=data_dir, local_postgres_port=54332, database_name="agentic_rag")
    with pytest.raises(DatabaseUnavailable, match="RAG_DATABASE_URL is not set"):
        resolve_dsn(settings, system_server=NOBODY_HOME)
    assert not (data_dir / "pg").exists()


async def test_closing_a_pool_waits_for_a_lent_connection_only_so_long(dsn: str, settings: Settings) -> None:
    import asyncio
    import time

    import asyncpg

    from agentic_rag.storage.postgres import close_pool, make_pool

    pool = await make_pool(dsn, settings)
    held = await pool.acquire()  # lent and never given back: asyncpg's own close would wait for it forever
    t0 = time.perf_counter()
    await close_pool(pool, timeout_s=0.5)
    assert time.perf_counter() - t0 < 5
    with pytest.raises(asyncpg.InterfaceError):  # the pool was terminated, the lent connection taken back with it
        await held.fetchval("SELECT 1")
    pool = await make_pool(dsn, settings)
    async with pool.acquire() as conn:  # with every connection back, the close is graceful
        assert await conn.fetchval("SELECT 1") == 1
    await asyncio.wait_for(close_pool(pool), 5)

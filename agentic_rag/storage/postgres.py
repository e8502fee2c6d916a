"""PostgreSQL: finding the server, the connection pool, and versioned migrations.

The DSN is ``RAG_DATABASE_URL``/``DATABASE_URL`` if set, else the server on 127.0.0.1:5432 if one answers
(:func:`resolve_dsn`). The development commands go one step further and start a private cluster under
``<data_dir>/pg`` when neither is there (:mod:`agentic_rag.storage.devcluster`); the served application never
does.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from typing import Any, TypeVar

import asyncpg

from agentic_rag.dsn import asyncpg_args, with_database
from agentic_rag.errors import Unavailable
from agentic_rag.settings import Settings
from agentic_rag.storage.sql import Conn, Pool, ident

log = logging.getLogger(__name__)

SYSTEM_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"
# asyncpg caches (prepares once per connection) statements up to 15 KiB by default; the typeahead's typo
# probes are 17 KB, and planning them costs more than running them: every fixed statement is cached.
MAX_CACHED_STATEMENT = 64 * 1024
T = TypeVar("T")


class DatabaseUnavailable(Unavailable, RuntimeError):
    """No PostgreSQL could be reached or started; the message says what was tried."""


def _blocking(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run an asyncpg coroutine from synchronous code, on an event loop of its own (in a worker thread when
    this thread already runs one)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


async def connect(dsn: str) -> asyncpg.Connection[asyncpg.Record]:
    """One connection of its own (not pooled, no statement timeout), with the same jsonb codec as the pool's."""
    url, timeout = asyncpg_args(dsn)
    conn: asyncpg.Connection[asyncpg.Record] = await asyncpg.connect(
        url, timeout=timeout, max_cacheable_statement_size=MAX_CACHED_STATEMENT)
    try:
        await _init(conn)
    except BaseException:
        await conn.close()
        raise
    return conn


def answers(dsn: str) -> bool:
    url, _ = asyncpg_args(dsn)

    async def probe() -> bool:
        try:
            conn = await asyncpg.connect(url, timeout=2)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):  # refused, unknown database, timeout
            return False
        await conn.close()
        return True

    return _blocking(probe)


def create_database_if_missing(server_dsn: str, database: str) -> None:
    async def create() -> None:
        url, _ = asyncpg_args(server_dsn)
        conn = await asyncpg.connect(url, timeout=5)
        try:
            if not await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", database):
                try:
                    await conn.execute(f"CREATE DATABASE {ident(database)}")
                    log.info("created database %s", database)
                except asyncpg.DuplicateDatabaseError:  # another process created it since we looked
                    pass
        finally:
            await conn.close()

    _blocking(create)


def resolve_dsn(settings: Settings, *, system_server: str = SYSTEM_SERVER) -> str:
    """The DSN to use: the configured one, else the server on 127.0.0.1:5432 (its database created if missing).

    Never starts a server: a deployment names its database. The development commands start a private cluster
    when none answers (:func:`agentic_rag.storage.devcluster.dev_dsn`)."""
    if settings.database_url:
        return settings.database_url
    if not answers(system_server):
        raise DatabaseUnavailable(
            "no PostgreSQL answers on 127.0.0.1:5432 and RAG_DATABASE_URL is not set: set it to your server, or "
            "start the service with `agentic-rag serve` (or scripts/up), which starts a private development "
            f"cluster in {settings.data_dir}")
    create_database_if_missing(system_server, settings.database_name)
    return with_database(system_server, settings.database_name)


# -- migrations -------------------------------------------------------------------------------------

def _migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) of every shipped migration, in order."""
    out = []
    for item in resources.files("agentic_rag.storage").joinpath("migrations").iterdir():
        if item.name.endswith(".sql"):
            version = int(item.name.split("_", 1)[0])
            out.append((version, item.name, item.read_text(encoding="utf-8")))
    return sorted(out)


async def migrate(dsn: str) -> list[str]:
    """Apply pending migrations in one transaction; return the names applied (none: up to date).

    Idempotent and safe to run concurrently (an advisory lock serialises runners). A migration that
    was changed after being applied is an error: migrations are append-only history.
    """
    applied_now: list[str] = []
    url, timeout = asyncpg_args(dsn)
    conn = await asyncpg.connect(url, timeout=timeout)
    try:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(7243001)")
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
                " checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            done = {r[0]: r[1] for r in await conn.fetch("SELECT version, checksum FROM schema_migrations")}
            for version, name, text in _migrations():
                checksum = hashlib.sha256(text.encode()).hexdigest()
                if version in done:
                    if done[version] != checksum:
                        raise RuntimeError(f"migration {name} changed after it was applied; add a new one instead")
                    continue
                async with conn.transaction():
                    await conn.execute(text)  # a fixed file shipped with the package (several statements)
                    await conn.execute("INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                                       version, name, checksum)
                applied_now.append(name)
    finally:
        await conn.close()
    return applied_now


# -- the pool ---------------------------------------------------------------------------------------

def _encode_jsonb(value: Any) -> bytes:
    return b"\x01" + json.dumps(value, ensure_ascii=False).encode()  # jsonb's binary form: version 1, then text


def _decode_jsonb(data: bytes) -> Any:
    return json.loads(data[1:])


async def _init(conn: Conn) -> None:
    """Per new connection: jsonb comes back as Python values and goes in from them (binary, so COPY takes it)."""
    await conn.set_type_codec("jsonb", schema="pg_catalog", encoder=_encode_jsonb, decoder=_decode_jsonb,
                              format="binary")


async def _keep_session(conn: Conn) -> None:
    """What the pool does to a connection it takes back, beyond rolling back an open transaction: nothing.

    asyncpg's default resets the session (``RESET ALL``, ``CLOSE ALL``, ``UNLISTEN *``, advisory locks): a
    round trip per release, for state this code never leaves behind (its settings are ``SET LOCAL`` or
    ``set_config(..., true)``, its locks transaction-scoped)."""


POOL_CLOSE_S = 10.0  # how long closing waits for connections still lent out before it terminates them


async def close_pool(pool: Pool, timeout_s: float = POOL_CLOSE_S) -> None:
    """Close ``pool`` gracefully: wait for connections still lent out, at most ``timeout_s``, then close them.

    asyncpg's own close waits without a limit for every lent connection to come back (and advises a time
    limit); one that never does would hold a replica's shutdown or a test's teardown forever. Past the limit
    asyncpg terminates the pool (its close does on cancellation)."""
    try:
        await asyncio.wait_for(pool.close(), timeout_s)
    except TimeoutError:
        log.warning("the PostgreSQL pool still had connections in use after %g s: terminated", timeout_s)


async def make_pool(dsn: str, settings: Settings, *, timeout_s: float = 30.0) -> Pool:
    """An open pool whose every connection carries the statement timeout (server side) and the query timeout
    (client side, per call), and caches its prepared statements (asyncpg's per-connection statement cache).
    Raises when ``min_size`` connections cannot be opened within ``timeout_s``."""
    url, timeout = asyncpg_args(dsn)
    pool: Pool = asyncpg.create_pool(
        url,
        min_size=settings.pool_min_size,
        max_size=settings.pool_max_size,
        server_settings={"statement_timeout": str(settings.statement_timeout_ms)},
        command_timeout=settings.query_timeout_ms / 1000,
        init=_init,
        reset=_keep_session,
        timeout=timeout,
        max_cacheable_statement_size=MAX_CACHED_STATEMENT,
    )
    try:
        async with asyncio.timeout(timeout_s):
            await pool
    except BaseException:
        pool.terminate()
        raise
    return pool


# -- upkeep -----------------------------------------------------------------------------------------

# Tables whose rows come and go at the request rate (a slot per run served; a runner's beat every few seconds).
# Their dead rows are vacuumed by the processes that run the loop, every few seconds, whatever autovacuum does: a
# server with autovacuum off (or behind on a busy database) would otherwise let each admission count through every
# slot ever released (measured: 2.4 ms a count after 20 minutes at 24 runs a second, and growing).
HOT_TABLES = ("admission_slots", "admission_rates", "runners")


async def vacuum(pool: Pool, tables: tuple[str, ...] = HOT_TABLES) -> None:
    """``VACUUM`` each table (skipped while another process vacuums it). Small tables: milliseconds each."""
    async with pool.acquire() as conn:
        for table in tables:
            await conn.execute(f"VACUUM (SKIP_LOCKED) {ident(table)}")  # a name of our own schema, quoted


async def autovacuum_on(pool: Pool) -> bool:
    """Whether the server vacuums by itself. Off, the partial indexes over running runs (the sweeps') keep an entry
    for every run ever finished until someone runs VACUUM: each sweep reads them all."""
    async with pool.acquire() as conn:
        return str(await conn.fetchval("SHOW autovacuum")) == "on"

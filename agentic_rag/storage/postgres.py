"""PostgreSQL: finding (or starting) a server, the connection pool, and versioned migrations.

Resolution order for the DSN, so the same commands work on a laptop, in CI and in a cluster:
``RAG_DATABASE_URL``/``DATABASE_URL`` if set; else the server on 127.0.0.1:5432 if one answers;
else a private cluster under ``<data_dir>/pg`` started with the installed PostgreSQL binaries
(as an unprivileged user when we are root, since postgres refuses to run as root).
"""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import pwd
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool

from agentic_rag.settings import Settings

log = logging.getLogger(__name__)

SYSTEM_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"


class DatabaseUnavailable(RuntimeError):
    """No PostgreSQL could be reached or started; the message says what was tried."""


def _answers(dsn: str) -> bool:
    try:
        with psycopg.connect(dsn, connect_timeout=2):
            return True
    except psycopg.OperationalError:
        return False


def _with_database(server_dsn: str, database: str) -> str:
    info = psycopg.conninfo.conninfo_to_dict(server_dsn)
    info["dbname"] = database
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items() if v is not None})


def create_database_if_missing(server_dsn: str, database: str) -> None:
    with psycopg.connect(server_dsn, autocommit=True, connect_timeout=5) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
            log.info("created database %s", database)


def _pg_bin(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    if not found:
        raise DatabaseUnavailable(
            f"no PostgreSQL server answers on 127.0.0.1:5432 and '{name}' is not installed to start one; "
            "install PostgreSQL or set DATABASE_URL"
        )
    return found


def _as_user() -> list[str]:
    """Prefix that runs a command unprivileged when we are root (postgres will not run as root)."""
    if os.geteuid() != 0:
        return []
    return ["runuser", "-u", "nobody", "--"]


def start_private_cluster(data_dir: Path, port: int) -> str:
    """Start (initialising on first use) a PostgreSQL cluster under ``data_dir/pg``; return its DSN."""
    root = (data_dir / "pg").resolve()
    pgdata, sock = root / "data", root / "run"
    dsn = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    if _answers(dsn):
        return dsn
    sock.mkdir(parents=True, exist_ok=True)
    prefix = _as_user()
    if prefix:
        nobody = pwd.getpwnam("nobody")
        for p in (root, sock):
            os.chown(p, nobody.pw_uid, nobody.pw_gid)
        if pgdata.exists():
            for dirpath, _, files in os.walk(pgdata):
                os.chown(dirpath, nobody.pw_uid, nobody.pw_gid)
                for f in files:
                    os.chown(os.path.join(dirpath, f), nobody.pw_uid, nobody.pw_gid)
    if not (pgdata / "PG_VERSION").exists():
        log.info("initialising a private PostgreSQL cluster in %s", pgdata)
        subprocess.run(
            [*prefix, _pg_bin("initdb"), "-D", str(pgdata), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
            check=True, capture_output=True, text=True,
        )
    result = subprocess.run(
        [*prefix, _pg_bin("pg_ctl"), "-D", str(pgdata), "-l", str(root / "postgres.log"), "-w", "-t", "60",
         "-o", f"-p {port} -k {sock} -c listen_addresses=127.0.0.1", "start"],
        capture_output=True, text=True,
    )
    if result.returncode != 0 or not _answers(dsn):
        raise DatabaseUnavailable(
            f"could not start PostgreSQL in {pgdata} (see {root / 'postgres.log'}): {result.stderr.strip()}"
        )
    return dsn


def stop_private_cluster(data_dir: Path) -> None:
    """Stop the private cluster under ``data_dir/pg`` if it runs."""
    pgdata = (data_dir / "pg" / "data").resolve()
    if (pgdata / "postmaster.pid").exists():
        subprocess.run([*_as_user(), _pg_bin("pg_ctl"), "-D", str(pgdata), "-m", "fast", "-w", "stop"],
                       check=True, capture_output=True, text=True)


def resolve_dsn(settings: Settings, *, system_server: str = SYSTEM_SERVER) -> str:
    """The DSN to use, creating the database (and a private cluster) when none is configured."""
    if settings.database_url:
        return settings.database_url
    if _answers(system_server):
        server = system_server
    else:
        log.info("no PostgreSQL on 127.0.0.1:5432; using a private cluster in %s", settings.data_dir)
        server = start_private_cluster(settings.data_dir, settings.local_postgres_port)
    create_database_if_missing(server, settings.database_name)
    return _with_database(server, settings.database_name)


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
    async with await psycopg.AsyncConnection.connect(dsn) as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(7243001)")
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
            " checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        cur = await conn.execute("SELECT version, checksum FROM schema_migrations")
        done = {v: c for v, c in await cur.fetchall()}
        for version, name, text in _migrations():
            checksum = hashlib.sha256(text.encode()).hexdigest()
            if version in done:
                if done[version] != checksum:
                    raise RuntimeError(f"migration {name} changed after it was applied; add a new one instead")
                continue
            async with conn.transaction():
                await conn.execute(text.encode())  # a fixed file shipped with the package
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                    (version, name, checksum),
                )
            applied_now.append(name)
    return applied_now


def make_pool(dsn: str, settings: Settings) -> AsyncConnectionPool:
    """An async pool whose every connection carries the statement timeout. Open it with ``await pool.open()``."""
    return AsyncConnectionPool(
        dsn,
        min_size=settings.pool_min_size,
        max_size=settings.pool_max_size,
        kwargs={"options": f"-c statement_timeout={settings.statement_timeout_ms}"},
        open=False,
    )

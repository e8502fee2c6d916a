"""A private PostgreSQL cluster for development: what the CLI's commands and ``scripts/up`` start on a machine
with no server, so a fresh clone's two README commands work anywhere PostgreSQL is installed.

The cluster lives under ``<data_dir>/pg`` and is started with the installed PostgreSQL binaries (as an
unprivileged user when we are root, since postgres refuses to run as root). The served application never starts
one (:func:`agentic_rag.storage.postgres.resolve_dsn`); an import contract keeps ``deployments`` from importing
this module.
"""

from __future__ import annotations

import glob
import logging
import os
import pwd
import shutil
import subprocess
from pathlib import Path

from agentic_rag.dsn import with_database
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import (
    SYSTEM_SERVER,
    DatabaseUnavailable,
    answers,
    create_database_if_missing,
    resolve_dsn,
)

log = logging.getLogger(__name__)


def dev_dsn(settings: Settings, *, system_server: str = SYSTEM_SERVER) -> str:
    """:func:`~agentic_rag.storage.postgres.resolve_dsn`, and when no server answers, a private cluster in
    ``data_dir`` (started, and initialised on first use) with the database created in it."""
    if settings.database_url or answers(system_server):
        return resolve_dsn(settings, system_server=system_server)
    log.info("no PostgreSQL on 127.0.0.1:5432; using a private cluster in %s", settings.data_dir)
    server = start_private_cluster(settings.data_dir, settings.local_postgres_port)
    create_database_if_missing(server, settings.database_name)
    return with_database(server, settings.database_name)


def pg_bin(name: str) -> str:
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
    if answers(dsn):
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
            [*prefix, pg_bin("initdb"), "-D", str(pgdata), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
            check=True, capture_output=True, text=True,
        )
    result = subprocess.run(
        [*prefix, pg_bin("pg_ctl"), "-D", str(pgdata), "-l", str(root / "postgres.log"), "-w", "-t", "60",
         "-o", f"-p {port} -k {sock} -c listen_addresses=127.0.0.1", "start"],
        capture_output=True, text=True,
    )
    if result.returncode != 0 or not answers(dsn):
        raise DatabaseUnavailable(
            f"could not start PostgreSQL in {pgdata} (see {root / 'postgres.log'}): {result.stderr.strip()}"
        )
    return dsn


def stop_private_cluster(data_dir: Path) -> None:
    """Stop the private cluster under ``data_dir/pg`` if it runs."""
    pgdata = (data_dir / "pg" / "data").resolve()
    if (pgdata / "postmaster.pid").exists():
        subprocess.run([*_as_user(), pg_bin("pg_ctl"), "-D", str(pgdata), "-m", "fast", "-w", "stop"],
                       check=True, capture_output=True, text=True)

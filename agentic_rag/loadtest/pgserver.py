"""A PostgreSQL server of a fault run's own, for the restart fault (issue 41, point 3).

Restarting the machine's shared server would take every other user's database down with it, so the fault run
restarts a private cluster (:mod:`agentic_rag.storage.devcluster`) holding a copy of the catalog's database. The
served application never starts one: this module is the fault run's, outside ``serve`` (an import contract).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from agentic_rag.dsn import to_url, with_database
from agentic_rag.loadtest.faults import Fault
from agentic_rag.storage.devcluster import pg_bin, start_private_cluster, stop_private_cluster
from agentic_rag.storage.postgres import create_database_if_missing

__all__ = ["PrivatePostgres"]

# every materialized view, refreshed under the database's own search_path
REFRESH_VIEWS = """DO $$ DECLARE v record; BEGIN
  FOR v IN SELECT schemaname, matviewname FROM pg_matviews LOOP
    EXECUTE format('REFRESH MATERIALIZED VIEW %I.%I', v.schemaname, v.matviewname);
  END LOOP; END $$"""


class PrivatePostgres:
    """A PostgreSQL server of the fault run's own, holding a copy of the catalog's database: what the restart fault
    stops and starts (never the machine's shared server). Its cluster lives under ``data_dir/pg``."""

    def __init__(self, data_dir: Path, port: int) -> None:
        self.data_dir = data_dir
        self.port = port
        self.server = ""

    @classmethod
    def temporary(cls, port: int) -> PrivatePostgres:
        """One in a new directory under the system's temporary directory, readable on the way down by the
        unprivileged user the server runs as when we are root (a checkout under a private directory, as
        ``mktemp -d`` makes, is not); :meth:`remove` deletes it."""
        root = Path(tempfile.mkdtemp(prefix="agentic-rag-pg-"))
        root.chmod(0o755)
        return cls(root, port)

    def remove(self) -> None:
        """Stop it and delete its directory."""
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def start(self) -> str:
        """Start it (initialising it on first use); its server DSN."""
        self.server = start_private_cluster(self.data_dir, self.port)
        return self.server

    def stop(self) -> None:
        stop_private_cluster(self.data_dir)

    def copy_of(self, source_dsn: str, database: str) -> str:
        """A copy of ``source_dsn``'s database (schema, catalog, trajectories) as ``database`` here; its DSN."""
        create_database_if_missing(self.server, database)
        target = with_database(self.server, database)
        dump = subprocess.run([pg_bin("pg_dump"), "--format=custom", "--no-owner", to_url(source_dsn)],
                              check=True, capture_output=True)
        restored = subprocess.run([pg_bin("pg_restore"), "--no-owner", "--clean", "--if-exists", "-d", to_url(target)],
                                  input=dump.stdout, capture_output=True, text=False)
        # pg_restore refreshes materialized views under an empty search_path, where a view whose function names a
        # table unqualified fails: those are refreshed afterwards, and any other error is the copy's failure
        problems = [line for line in restored.stderr.decode(errors="replace").splitlines()
                    if line.startswith("Command was:") and "REFRESH MATERIALIZED VIEW" not in line]
        if restored.returncode not in (0, 1) or problems:
            raise RuntimeError(f"could not copy the database: {restored.stderr.decode(errors='replace')[-1000:]}")
        subprocess.run([pg_bin("psql"), "-v", "ON_ERROR_STOP=1", "-qAt", "-d", to_url(target), "-c",
                        REFRESH_VIEWS], check=True, capture_output=True)
        return target

    def restart(self, *, down_s: float) -> Fault:
        """The fault: a fast shutdown (every connection closed, as a failover or a crash-restart does), ``down_s``
        seconds down, then a start."""

        async def inject() -> str:
            began = time.monotonic()
            await asyncio.to_thread(self.stop)
            await asyncio.sleep(down_s)
            await asyncio.to_thread(self.start)
            return f"PostgreSQL stopped and started again after {time.monotonic() - began:.1f} s"

        return Fault("PostgreSQL restarted", inject)

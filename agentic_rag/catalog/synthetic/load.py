"""Loading a synthetic catalog into PostgreSQL.

:func:`load_synthetic` replaces the database's synthetic rows with a generated catalog in one
transaction (COPY into the real tables, then the edge table from the ``edge_source`` view), and is
a no-op when the same ``(n, seed)`` is already loaded.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import asyncpg

from agentic_rag.catalog.load import REFRESH_NAME_WORDS, REFRESH_PROSE, load_failure
from agentic_rag.catalog.synthetic.rows import SOURCE, SyntheticCatalog
from agentic_rag.catalog.synthetic.structure import entity_counts, fingerprint
from agentic_rag.catalog.tables import ENTITY_TABLES, RELATION_TABLES, TABLE_BY_NAME, TABLES, Row
from agentic_rag.storage.postgres import connect, migrate
from agentic_rag.storage.sql import Conn, affected, ident, idents

Progress = Callable[[str, int, int], None]


@dataclass(slots=True)
class SyntheticReport:
    """What a synthetic load did: rows per table, edge rows, timings."""

    n: int
    seed: int
    fingerprint: str
    tables: dict[str, int] = field(default_factory=dict)
    edges: int = 0
    names: int = 0  # typeahead names derived into entity_name
    deleted: int = 0  # rows of an earlier synthetic load removed first (edges included)
    seconds: float = 0.0
    skipped: bool = False  # the same (n, seed) was already loaded: nothing was changed
    phases: dict[str, float] = field(default_factory=dict)  # seconds per phase: generate, delete, copy, edge...

    @property
    def entity_rows(self) -> int:
        return sum(self.tables.get(t, 0) for t in ENTITY_TABLES)

    @property
    def relation_rows(self) -> int:
        """Rows of the relation tables plus each episode's link to its anime."""
        return sum(self.tables.get(t, 0) for t in RELATION_TABLES) + self.tables.get("episode", 0)

    @property
    def rows(self) -> int:
        """Every row written: entity and relation tables, and edges."""
        return sum(self.tables.values()) + self.edges

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 and not self.skipped else 0.0

    def describe(self) -> str:
        if self.skipped:
            return (f"synthetic catalog n={self.n} seed={self.seed} already loaded "
                    f"({self.entity_rows} entities, {self.relation_rows} relation rows, {self.edges} edges): "
                    "nothing changed.")
        per_table = ", ".join(f"{t} {c}" for t, c in self.tables.items())
        return (f"synthetic catalog n={self.n} seed={self.seed}: {self.entity_rows} entities, "
                f"{self.relation_rows} relation rows, {self.edges} edges in {self.seconds:.1f} s "
                f"({self.rows_per_second:,.0f} rows/s; replaced {self.deleted} earlier rows).\n  {per_table}")


_LOCK_KEY = 7243002  # serialises synthetic loads (migrations use 7243001)
_BULK_SETTINGS = (
    "SET LOCAL synchronous_commit = off",
    "SET LOCAL statement_timeout = 0",
    "SET LOCAL work_mem = '256MB'",
    "SET LOCAL maintenance_work_mem = '512MB'",
)
_INSERT_EDGES = (
    "INSERT INTO edge (src_id, rel, dst_id, src_type, dst_type, detail, source) "
    "SELECT DISTINCT ON (src_id, rel, dst_id) src_id, rel, dst_id, src_type, dst_type, detail, source "
    "FROM edge_source WHERE source = $1 ORDER BY src_id, rel, dst_id, detail NULLS LAST"
)
_INSERT_NAMES = (
    "INSERT INTO entity_name (entity_id, norm, entity_type, name, kind, popularity, source) "
    "SELECT entity_id, norm, entity_type, name, kind, popularity, source FROM entity_name_source WHERE source = $1"
)


async def _loaded(conn: Conn, fp: str) -> dict[str, int] | None:
    """The recorded counts if this exact catalog is loaded (and its small tables still hold it)."""
    row = await conn.fetchrow("SELECT fingerprint, counts FROM catalog_load WHERE source = $1", SOURCE)
    if row is None or row[0] != fp:
        return None
    counts: dict[str, int] = {str(k): int(v) for k, v in row[1].items()}
    for table in ("franchise", "studio", "anime"):
        got = await conn.fetchval(f"SELECT count(*) FROM {ident(table)} WHERE source = $1", SOURCE)  # noqa: S608
        if got is None or int(got) != counts.get(table):
            return None
    return counts


async def _delete_synthetic(conn: Conn) -> int:
    """Remove every synthetic row, derived tables and children first; demo rows are never touched."""
    deleted = 0
    for name in ("edge", "entity_name", *(t.name for t in reversed(TABLES))):
        deleted += affected(await conn.execute(f"DELETE FROM {ident(name)} WHERE source = $1", SOURCE))  # noqa: S608
    return deleted


async def _copy_table(conn: Conn, cat: SyntheticCatalog, table: str, progress: Progress) -> int:
    """One binary COPY of the table's rows, fed chunk by chunk as they are generated."""
    t = TABLE_BY_NAME[table]
    total, done = cat.counts[table], 0
    progress(table, 0, total)

    async def rows() -> AsyncIterator[Row]:
        nonlocal done
        for chunk in cat.chunks(table):
            for row in chunk:
                yield row
            done += len(chunk)
            progress(table, done, total)

    await conn.copy_records_to_table(t.name, records=rows(), columns=list(t.columns))
    return done


async def load_synthetic(
    dsn: str, n: int, seed: int = 0, *, progress: Progress | None = None,
) -> SyntheticReport:
    """Replace the database's synthetic catalog with the one generated from ``(n, seed)``.

    Migrates first. If ``catalog_load`` says this very catalog is loaded, nothing is changed and the
    report says ``skipped``. Otherwise one transaction deletes the earlier synthetic rows, COPYs every
    table (parents first, so the foreign keys are checked as rows arrive), derives the edge table from
    the ``edge_source`` view and records the load; then the tables are analysed. Demo rows are never
    touched. ``progress(table, rows_done, rows_total)`` is called as each table's rows go in.
    """

    entity_counts(n)  # validate before touching the database
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    step: Progress = progress or (lambda _t, _d, _n: None)
    fp = fingerprint(n, seed)
    report = SyntheticReport(n=n, seed=seed, fingerprint=fp)
    await migrate(dsn)
    t0 = time.perf_counter()
    current = "catalog_load"
    conn = await connect(dsn)
    try:
        recorded = await _loaded(conn, fp)
        if recorded is None:
            t = time.perf_counter()
            cat = SyntheticCatalog(n, seed)
            report.phases["structure"] = time.perf_counter() - t
            try:
                async with conn.transaction():
                    await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
                    recorded = await _loaded(conn, fp)  # a concurrent run may have just loaded it
                    if recorded is None:
                        for setting in _BULK_SETTINGS:
                            await conn.execute(setting)
                        t = time.perf_counter()
                        current = "delete"
                        report.deleted = await _delete_synthetic(conn)
                        report.phases["delete"] = time.perf_counter() - t
                        for table in TABLES:
                            t, current = time.perf_counter(), table.name
                            report.tables[table.name] = await _copy_table(conn, cat, table.name, step)
                            report.phases[f"copy {table.name}"] = time.perf_counter() - t
                        t, current = time.perf_counter(), "edge"
                        step("edge", 0, cat.expected_edges)
                        report.edges = affected(await conn.execute(_INSERT_EDGES, SOURCE))
                        step("edge", report.edges, cat.expected_edges)
                        report.phases["edge"] = time.perf_counter() - t
                        t, current = time.perf_counter(), "entity_name"
                        report.names = affected(await conn.execute(_INSERT_NAMES, SOURCE))
                        report.phases["entity_name"] = time.perf_counter() - t
                        t, current = time.perf_counter(), "name_word"
                        await conn.execute(REFRESH_NAME_WORDS)
                        report.phases["name_word"] = time.perf_counter() - t
                        t, current = time.perf_counter(), "entity_prose"
                        for refresh in REFRESH_PROSE:
                            await conn.execute(refresh)
                        report.phases["entity_prose"] = time.perf_counter() - t
                        current = "catalog_load"
                        await conn.execute(
                            "INSERT INTO catalog_load (source, fingerprint, counts) VALUES ($1, $2, $3) "
                            "ON CONFLICT (source) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, "
                            "counts = EXCLUDED.counts, loaded_at = now()",
                            SOURCE, fp, {**report.tables, "edge": report.edges},
                        )
            except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                raise load_failure(f"synthetic load at {current}", exc) from exc
            if recorded is None:
                t = time.perf_counter()
                # VACUUM even after a first load: it sets the visibility map that index-only scans need
                await conn.execute(f"VACUUM (ANALYZE) {idents([*(t.name for t in TABLES), 'edge', 'entity_name'])}")
                report.phases["vacuum analyze"] = time.perf_counter() - t
    finally:
        await conn.close()
    if recorded is not None:
        report.skipped = True
        report.edges = recorded.pop("edge", 0)
        report.tables = recorded
    report.seconds = time.perf_counter() - t0
    return report

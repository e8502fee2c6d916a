"""Loading table rows into PostgreSQL: one transaction, COPY into staging, then a counted merge.

A load makes the database's rows of one ``source`` (demo or synthetic) equal to the given rows:
new rows inserted, changed rows updated, rows no longer present deleted, identical rows left
alone. Running the same load twice therefore reports zero changes. Any failure rolls the whole
load back and is raised as :class:`~agentic_rag.catalog.records.CatalogError` naming the table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import asyncpg

from agentic_rag.catalog.records import CatalogError
from agentic_rag.catalog.tables import IMAGE_TABLE, TABLES, Row, Table
from agentic_rag.storage.sql import Conn, affected, ident, idents


@dataclass(slots=True)
class Change:
    """What a load did to one table."""

    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    total: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.inserted or self.updated or self.deleted)


async def _merge(conn: Conn, t: Table, rows: list[Row]) -> Change:
    stg = f"stg_{t.name}"
    await conn.execute(f"CREATE TEMP TABLE {ident(stg)} (LIKE {ident(t.name)} INCLUDING DEFAULTS) ON COMMIT DROP")
    await conn.copy_records_to_table(stg, records=rows, columns=list(t.columns))  # binary COPY
    vals, name = t.value_columns, ident(t.name)
    excl = ", ".join(f"EXCLUDED.{ident(c)}" for c in vals)
    current = ", ".join(f"{name}.{ident(c)}" for c in vals)
    flags = [bool(r[0]) for r in await conn.fetch(
        f"INSERT INTO {name} ({idents(t.columns)}) SELECT {idents(t.columns)} FROM {ident(stg)} "  # noqa: S608
        f"ON CONFLICT ({idents(t.key)}) DO UPDATE SET ({idents(vals)}) = ROW({excl}) "
        f"WHERE ({current}) IS DISTINCT FROM ({excl}) RETURNING (xmax = 0)"
    )]
    return Change(inserted=sum(flags), updated=len(flags) - sum(flags), total=len(rows))


async def _delete_stale(conn: Conn, t: Table, source: str) -> int:
    match = " AND ".join(f"s.{ident(c)} = t.{ident(c)}" for c in t.key)
    return affected(await conn.execute(
        f"DELETE FROM {ident(t.name)} t WHERE t.source = $1 "  # noqa: S608
        f"AND NOT EXISTS (SELECT 1 FROM {ident('stg_' + t.name)} s WHERE {match})", source))


SYNC_EDGES = (
    "CREATE TEMP TABLE want_edge ON COMMIT DROP AS "
    "SELECT DISTINCT ON (src_id, rel, dst_id) src_id, rel, dst_id, src_type, dst_type, detail, source "
    "FROM edge_source WHERE source = $1 ORDER BY src_id, rel, dst_id, detail NULLS LAST",
    "DELETE FROM edge e WHERE e.source = $1 AND NOT EXISTS "
    "(SELECT 1 FROM want_edge w WHERE w.src_id = e.src_id AND w.rel = e.rel AND w.dst_id = e.dst_id)",
    "INSERT INTO edge (src_id, rel, dst_id, src_type, dst_type, detail, source) "
    "SELECT src_id, rel, dst_id, src_type, dst_type, detail, source FROM want_edge "
    "ON CONFLICT (src_id, rel, dst_id) DO UPDATE SET detail = EXCLUDED.detail, source = EXCLUDED.source "
    "WHERE (edge.detail, edge.source) IS DISTINCT FROM (EXCLUDED.detail, EXCLUDED.source) RETURNING (xmax = 0)",
)


SYNC_NAMES = (
    "CREATE TEMP TABLE want_name ON COMMIT DROP AS "
    "SELECT entity_id, norm, entity_type, name, kind, popularity, source FROM entity_name_source "
    "WHERE source = $1",
    "DELETE FROM entity_name n WHERE n.source = $1 AND NOT EXISTS "
    "(SELECT 1 FROM want_name w WHERE w.entity_id = n.entity_id AND w.norm = n.norm)",
    "INSERT INTO entity_name (entity_id, norm, entity_type, name, kind, popularity, source) "
    "SELECT entity_id, norm, entity_type, name, kind, popularity, source FROM want_name "
    "ON CONFLICT (entity_id, norm) DO UPDATE SET (entity_type, name, kind, popularity, source) = "
    "ROW(EXCLUDED.entity_type, EXCLUDED.name, EXCLUDED.kind, EXCLUDED.popularity, EXCLUDED.source) "
    "WHERE (entity_name.entity_type, entity_name.name, entity_name.kind, entity_name.popularity, "
    "entity_name.source) IS DISTINCT FROM (EXCLUDED.entity_type, EXCLUDED.name, EXCLUDED.kind, "
    "EXCLUDED.popularity, EXCLUDED.source) RETURNING (xmax = 0)",
)


async def _sync(conn: Conn, steps: tuple[str, str, str], want: str, source: str) -> Change:
    """Make a derived table's rows of ``source`` equal to its source view: delete, then upsert."""
    await conn.execute(steps[0], source)
    deleted = affected(await conn.execute(steps[1], source))
    flags = [bool(r[0]) for r in await conn.fetch(steps[2])]
    total = await conn.fetchval(f"SELECT count(*) FROM {want}")  # noqa: S608  fixed temp table name
    return Change(inserted=sum(flags), updated=len(flags) - sum(flags), deleted=deleted, total=int(total or 0))


async def load_rows(
    conn: Conn,
    rows: dict[str, list[Row]],
    source: str,
    on_step: Callable[[str], None] | None = None,
) -> dict[str, Change]:
    """Make the rows of ``source`` in every catalog table equal to ``rows``, atomically."""
    changes: dict[str, Change] = {}
    step = on_step or (lambda _name: None)
    current = "?"
    try:
        async with conn.transaction():
            for t in (*TABLES, IMAGE_TABLE):
                current = t.name
                changes[t.name] = await _merge(conn, t, rows.get(t.name, []))
                step(t.name)
            for t in (IMAGE_TABLE, *reversed(TABLES)):
                current = t.name
                changes[t.name].deleted = await _delete_stale(conn, t, source)
            current = "edge"
            changes["edge"] = await _sync(conn, SYNC_EDGES, "want_edge", source)
            current = "entity_name"
            changes["entity_name"] = await _sync(conn, SYNC_NAMES, "want_name", source)
            if changes["entity_name"].changed:
                await conn.execute(REFRESH_NAME_WORDS)
            if any(changes[t].changed for t in PROSE_TABLES):
                for refresh in REFRESH_PROSE:
                    await conn.execute(refresh)
            step("edge")
    except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        raise load_failure(f"loading table {current}", exc) from exc
    return changes


# The word index of entity linking (migration 0008) follows the names it is derived from.
REFRESH_NAME_WORDS = "REFRESH MATERIALIZED VIEW name_word"
# The full-text index of descriptions (migration 0010) follows the prose it is derived from.
PROSE_TABLES = ("anime", "manga", "character", "franchise")
REFRESH_PROSE = ("REFRESH MATERIALIZED VIEW entity_prose", "REFRESH MATERIALIZED VIEW prose_word")


def load_failure(where: str, exc: asyncpg.PostgresError | asyncpg.InterfaceError) -> CatalogError:
    """A database error during a (rolled back) load, said plainly with PostgreSQL's own detail."""
    message = exc.message if isinstance(exc, asyncpg.PostgresError) else None
    detail = exc.detail if isinstance(exc, asyncpg.PostgresError) else None
    return CatalogError(f"{where} failed, nothing was changed: {message or exc}{f' ({detail})' if detail else ''}")

"""Loading table rows into PostgreSQL: one transaction, COPY into staging, then a counted merge.

A load makes the database's rows of one ``source`` (demo or synthetic) equal to the given rows:
new rows inserted, changed rows updated, rows no longer present deleted, identical rows left
alone. Running the same load twice therefore reports zero changes. Any failure rolls the whole
load back and is raised as :class:`~agentic_rag.catalog.records.CatalogError` naming the table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import psycopg
from psycopg import sql

from agentic_rag.catalog.records import CatalogError
from agentic_rag.catalog.tables import TABLES, Row, Table


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


def _ids(names: Iterable[str]) -> sql.Composed:
    return sql.SQL(", ").join(sql.Identifier(n) for n in names)


async def _copy(cur: psycopg.AsyncCursor[tuple[object, ...]], table: sql.Identifier, columns: tuple[str, ...],
                rows: Iterable[Row]) -> None:
    async with cur.copy(sql.SQL("COPY {} ({}) FROM STDIN").format(table, _ids(columns))) as copy:
        for row in rows:
            await copy.write_row(row)


async def _merge(cur: psycopg.AsyncCursor[tuple[object, ...]], t: Table, rows: list[Row]) -> Change:
    stg = sql.Identifier(f"stg_{t.name}")
    await cur.execute(
        sql.SQL("CREATE TEMP TABLE {} (LIKE {} INCLUDING DEFAULTS) ON COMMIT DROP").format(stg, sql.Identifier(t.name))
    )
    await _copy(cur, stg, t.columns, rows)
    vals = t.value_columns
    await cur.execute(
        sql.SQL(
            "INSERT INTO {t} ({cols}) SELECT {cols} FROM {stg} "
            "ON CONFLICT ({key}) DO UPDATE SET ({vals}) = ROW({excl}) "
            "WHERE ({cur}) IS DISTINCT FROM ({excl}) RETURNING (xmax = 0)"
        ).format(
            t=sql.Identifier(t.name), cols=_ids(t.columns), stg=stg, key=_ids(t.key), vals=_ids(vals),
            excl=sql.SQL(", ").join(sql.SQL("EXCLUDED.{}").format(sql.Identifier(c)) for c in vals),
            cur=sql.SQL(", ").join(sql.SQL("{}.{}").format(sql.Identifier(t.name), sql.Identifier(c)) for c in vals),
        )
    )
    flags = [bool(r[0]) for r in await cur.fetchall()]
    return Change(inserted=sum(flags), updated=len(flags) - sum(flags), total=len(rows))


async def _delete_stale(cur: psycopg.AsyncCursor[tuple[object, ...]], t: Table, source: str) -> int:
    match = sql.SQL(" AND ").join(
        sql.SQL("s.{c} = t.{c}").format(c=sql.Identifier(c)) for c in t.key
    )
    await cur.execute(
        sql.SQL("DELETE FROM {t} t WHERE t.source = %s AND NOT EXISTS (SELECT 1 FROM {stg} s WHERE {m})").format(
            t=sql.Identifier(t.name), stg=sql.Identifier(f"stg_{t.name}"), m=match
        ),
        (source,),
    )
    return cur.rowcount


SYNC_EDGES = (
    "CREATE TEMP TABLE want_edge ON COMMIT DROP AS "
    "SELECT DISTINCT ON (src_id, rel, dst_id) src_id, rel, dst_id, src_type, dst_type, detail, source "
    "FROM edge_source WHERE source = %(source)s ORDER BY src_id, rel, dst_id, detail NULLS LAST",
    "DELETE FROM edge e WHERE e.source = %(source)s AND NOT EXISTS "
    "(SELECT 1 FROM want_edge w WHERE w.src_id = e.src_id AND w.rel = e.rel AND w.dst_id = e.dst_id)",
    "INSERT INTO edge (src_id, rel, dst_id, src_type, dst_type, detail, source) "
    "SELECT src_id, rel, dst_id, src_type, dst_type, detail, source FROM want_edge "
    "ON CONFLICT (src_id, rel, dst_id) DO UPDATE SET detail = EXCLUDED.detail, source = EXCLUDED.source "
    "WHERE (edge.detail, edge.source) IS DISTINCT FROM (EXCLUDED.detail, EXCLUDED.source) RETURNING (xmax = 0)",
)


SYNC_NAMES = (
    "CREATE TEMP TABLE want_name ON COMMIT DROP AS "
    "SELECT entity_id, norm, entity_type, name, kind, popularity, source FROM entity_name_source "
    "WHERE source = %(source)s",
    "DELETE FROM entity_name n WHERE n.source = %(source)s AND NOT EXISTS "
    "(SELECT 1 FROM want_name w WHERE w.entity_id = n.entity_id AND w.norm = n.norm)",
    "INSERT INTO entity_name (entity_id, norm, entity_type, name, kind, popularity, source) "
    "SELECT entity_id, norm, entity_type, name, kind, popularity, source FROM want_name "
    "ON CONFLICT (entity_id, norm) DO UPDATE SET (entity_type, name, kind, popularity, source) = "
    "ROW(EXCLUDED.entity_type, EXCLUDED.name, EXCLUDED.kind, EXCLUDED.popularity, EXCLUDED.source) "
    "WHERE (entity_name.entity_type, entity_name.name, entity_name.kind, entity_name.popularity, "
    "entity_name.source) IS DISTINCT FROM (EXCLUDED.entity_type, EXCLUDED.name, EXCLUDED.kind, "
    "EXCLUDED.popularity, EXCLUDED.source) RETURNING (xmax = 0)",
)


async def _sync(cur: psycopg.AsyncCursor[tuple[object, ...]], steps: tuple[str, str, str], want: str,
                source: str) -> Change:
    """Make a derived table's rows of ``source`` equal to its source view: delete, then upsert."""
    await cur.execute(steps[0], {"source": source})
    await cur.execute(steps[1], {"source": source})
    deleted = cur.rowcount
    await cur.execute(steps[2], {"source": source})
    flags = [bool(r[0]) for r in await cur.fetchall()]
    await cur.execute(f"SELECT count(*) FROM {want}")  # noqa: S608  fixed temp table name
    (total,) = await cur.fetchone() or (0,)
    return Change(inserted=sum(flags), updated=len(flags) - sum(flags), deleted=deleted, total=int(str(total)))


async def load_rows(
    conn: psycopg.AsyncConnection[tuple[object, ...]],
    rows: dict[str, list[Row]],
    source: str,
    on_step: Callable[[str], None] | None = None,
) -> dict[str, Change]:
    """Make the rows of ``source`` in every catalog table equal to ``rows``, atomically."""
    changes: dict[str, Change] = {}
    step = on_step or (lambda _name: None)
    current = "?"
    try:
        async with conn.transaction(), conn.cursor() as cur:
            for t in TABLES:
                current = t.name
                changes[t.name] = await _merge(cur, t, rows.get(t.name, []))
                step(t.name)
            for t in reversed(TABLES):
                current = t.name
                changes[t.name].deleted = await _delete_stale(cur, t, source)
            current = "edge"
            changes["edge"] = await _sync(cur, SYNC_EDGES, "want_edge", source)
            current = "entity_name"
            changes["entity_name"] = await _sync(cur, SYNC_NAMES, "want_name", source)
            if changes["entity_name"].changed:
                await cur.execute(REFRESH_NAME_WORDS)
            if any(changes[t].changed for t in PROSE_TABLES):
                for refresh in REFRESH_PROSE:
                    await cur.execute(refresh)
            step("edge")
    except psycopg.Error as exc:
        raise load_failure(f"loading table {current}", exc) from exc
    return changes


# The word index of entity linking (migration 0008) follows the names it is derived from.
REFRESH_NAME_WORDS = "REFRESH MATERIALIZED VIEW name_word"
# The full-text index of descriptions (migration 0010) follows the prose it is derived from.
PROSE_TABLES = ("anime", "manga", "character", "franchise")
REFRESH_PROSE = ("REFRESH MATERIALIZED VIEW entity_prose", "REFRESH MATERIALIZED VIEW prose_word")


def load_failure(where: str, exc: psycopg.Error) -> CatalogError:
    """A database error during a (rolled back) load, said plainly with PostgreSQL's own detail."""
    diag = exc.diag
    detail = f" ({diag.message_detail})" if diag.message_detail else ""
    return CatalogError(f"{where} failed, nothing was changed: {diag.message_primary or exc}{detail}")

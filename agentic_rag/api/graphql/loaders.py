"""Batched reads of the catalog for one GraphQL request: records by type, and the edges between them.

Resolvers never query PostgreSQL themselves: they ask a :class:`Loaders` object, made fresh for each
request, whose DataLoaders collect every key asked for in one tick of the event loop and answer them
with one statement. Records are read by type (one ``WHERE id = ANY(...)`` per entity type), edges by
relation set (one window query over the graph's ``edge`` table, which holds every stored relation in
both directions), so a query for twenty anime with their studios and characters costs the same number
of statements as one for five. Every value is bound, never written into the text.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import asyncpg
from strawberry.dataloader import DataLoader

from agentic_rag.api.graphql.errors import ClientError
from agentic_rag.protocol.vocabulary import ENTITY_TYPES, STORED_EDGE_TYPES
from agentic_rag.storage.retry import DATABASE_FAILURES, with_connection
from agentic_rag.storage.sql import Conn, Pool, Query

__all__ = ["RECORD_SQL", "Edge", "Loaders"]

T = TypeVar("T")

# Every column a GraphQL type exposes; ``name`` is what the Entity interface shows for each type.
RECORD_SQL: dict[str, Query] = {
    "anime": Query("""
        SELECT id::text, title AS name, title, title_native, title_romaji, aliases, format, year, end_year,
               episode_count, status, genres, popularity, synopsis
        FROM anime WHERE id = ANY(:ids::uuid[])"""),
    "manga": Query("""
        SELECT id::text, title AS name, title, title_native, title_romaji, aliases, year, end_year, volumes, status,
               magazine, genres, popularity, synopsis
        FROM manga WHERE id = ANY(:ids::uuid[])"""),
    "character": Query("""
        SELECT id::text, name, name_native, aliases, description, popularity
        FROM character WHERE id = ANY(:ids::uuid[])"""),
    "person": Query("""
        SELECT id::text, name, native_name, aliases, popularity FROM person WHERE id = ANY(:ids::uuid[])"""),
    "studio": Query("SELECT id::text, name, founded, popularity FROM studio WHERE id = ANY(:ids::uuid[])"),
    "franchise": Query("""
        SELECT id::text, name, description, popularity FROM franchise WHERE id = ANY(:ids::uuid[])"""),
    "episode": Query("""
        SELECT e.id::text, coalesce(e.title, a.title || ' episode ' || e.number) AS name, e.title, e.number,
               e.season, e.aired, a.popularity / 4 AS popularity
        FROM episode e JOIN anime a ON a.id = e.anime_id WHERE e.id = ANY(:ids::uuid[])"""),
}
assert set(RECORD_SQL) == set(ENTITY_TYPES)

# The first ``limit`` targets of each source over the given relations: the most popular first (the target's
# primary name carries its popularity), an anime's episodes in their order.
EDGES_SQL = Query("""
    SELECT src, rel, dst, dst_type, detail FROM (
        SELECT e.src_id::text AS src, e.rel, e.dst_id::text AS dst, e.dst_type, e.detail,
               row_number() OVER (PARTITION BY e.src_id ORDER BY
                   CASE WHEN e.dst_type = 'episode' THEN 0 ELSE coalesce(n.popularity, 0) END DESC,
                   ep.number, e.rel, e.dst_id) AS rank
        FROM edge e
        LEFT JOIN entity_name n ON n.entity_id = e.dst_id AND n.kind = 'primary'
        LEFT JOIN episode ep ON e.dst_type = 'episode' AND ep.id = e.dst_id
        WHERE e.src_id = ANY(:ids::uuid[]) AND e.rel = ANY(:rels::text[])
          AND (:dst_type::text IS NULL OR e.dst_type = :dst_type)
    ) x
    WHERE rank <= :limit
    ORDER BY src, rank""")


@dataclass(frozen=True, slots=True)
class Edge:
    """One stored relation from an entity: the label, the target, and the edge's detail (a role, a kinship)."""

    rel: str
    dst: str
    dst_type: str
    detail: str | None


EdgeKey = tuple[str, int]  # (source id, most edges)
EdgeSet = tuple[tuple[str, ...], str | None]  # (relations, target type or None for any)


class Loaders:
    """The DataLoaders of one request over ``pool``; each statement gets ``attempts`` under the retry policy."""

    def __init__(self, pool: Pool, *, timeout_s: float, attempts: int) -> None:
        self._pool = pool
        self._timeout_s = timeout_s
        self._attempts = attempts
        self._records: dict[str, DataLoader[str, asyncpg.Record | None]] = {}
        self._edges: dict[EdgeSet, DataLoader[EdgeKey, list[Edge]]] = {}

    def fresh(self) -> Loaders:
        """Loaders over the same pool with empty caches (one operation's reads are never another's)."""
        return Loaders(self._pool, timeout_s=self._timeout_s, attempts=self._attempts)

    def record(self, entity_type: str, id_: str) -> Awaitable[asyncpg.Record | None]:
        """The row of one entity (the columns of :data:`RECORD_SQL`), or None when there is no such entity."""
        loader = self._records.get(entity_type)
        if loader is None:
            loader = self._records[entity_type] = DataLoader(lambda ids: self._load_records(entity_type, ids))
        return loader.load(id_)

    def edges(self, src: str, rels: Sequence[str], dst_type: str | None, limit: int) -> Awaitable[list[Edge]]:
        """The first ``limit`` edges from ``src`` labelled one of ``rels`` (to ``dst_type`` only, when given)."""
        key: EdgeSet = (tuple(sorted(set(rels) & set(STORED_EDGE_TYPES))), dst_type)
        loader = self._edges.get(key)
        if loader is None:
            loader = self._edges[key] = DataLoader(lambda keys: self._load_edges(key, keys))
        return loader.load((src, limit))

    async def _load_records(self, entity_type: str, ids: list[str]) -> list[asyncpg.Record | None]:
        rows = await self._fetch(lambda conn: RECORD_SQL[entity_type].fetch(conn, {"ids": ids}))
        by_id = {r["id"]: r for r in rows}
        return [by_id.get(i) for i in ids]

    async def _load_edges(self, edge_set: EdgeSet, keys: list[EdgeKey]) -> list[list[Edge]]:
        rels, dst_type = edge_set
        if not rels:
            return [[] for _ in keys]
        ids = list({src for src, _ in keys})
        limit = max(n for _, n in keys)  # one statement for every key; each is cut to its own limit below
        params: dict[str, Any] = {"ids": ids, "rels": list(rels), "dst_type": dst_type, "limit": limit}
        rows = await self._fetch(lambda conn: EDGES_SQL.fetch(conn, params))
        by_src: dict[str, list[Edge]] = defaultdict(list)
        for r in rows:
            by_src[r["src"]].append(Edge(rel=r["rel"], dst=r["dst"], dst_type=r["dst_type"], detail=r["detail"]))
        return [by_src.get(src, [])[:n] for src, n in keys]

    async def _fetch(self, op: Callable[[Conn], Awaitable[T]]) -> T:
        try:
            return await with_connection(self._pool, op, attempts=self._attempts, timeout_s=self._timeout_s)
        except DATABASE_FAILURES:
            raise ClientError("unavailable", "the catalog database did not answer; retry shortly") from None

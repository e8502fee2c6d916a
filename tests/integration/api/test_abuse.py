"""Abuse: injection strings, random ids, huge limits, a hub of degree 100k, timeouts, dead connections.

Each is clamped, rejected with a clear error, or answered within its time limit; none reaches SQL
as text, and the catalog is intact afterwards.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import pytest
from pydantic import ValidationError

from agentic_rag.catalog.ids import entity_id
from agentic_rag.dsn import with_database
from agentic_rag.protocol import EntityRef, GraphIntent, SearchFilters, SearchIntent
from agentic_rag.retrievers.errors import RetrievalError
from agentic_rag.retrievers.graph import PostgresGraphExecutor
from agentic_rag.retrievers.hybrid import HybridRetriever
from agentic_rag.retrievers.typeahead import TypeaheadQuery, typeahead
from agentic_rag.retrievers.vector import QdrantExecutor
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import connect, make_pool
from agentic_rag.storage.sql import Pool

pytestmark = pytest.mark.integration

INJECTIONS = [
    "'; DROP TABLE anime; --", "\" OR 1=1 --", "luffy') UNION SELECT id, key, source, 1 FROM person --",
    "%' AND pg_sleep(10) IS NULL --", "\\'; DELETE FROM edge; --", "$$; TRUNCATE character; $$", "%_%\\",
    "Robert'); DROP TABLE students;--", "１=１", "\x01\x7f", "🏴‍☠️' OR ''='",
]
HUB_DEGREE = 100_000
LUFFY = EntityRef(entity_type="character", id=str(entity_id("character", "monkey-d-luffy")))
NAMI = EntityRef(entity_type="character", id=str(entity_id("character", "nami")))


async def _catalog_intact(pool: Pool) -> None:
    async with pool.acquire() as conn:
        for table in ("anime", "character", "edge", "entity_name", "person"):
            row = await conn.fetchrow(f"SELECT count(*) > 0 FROM {table}")
            assert row == (True,), table


@pytest.mark.parametrize("text", INJECTIONS)
async def test_injection_strings_in_every_text_input_are_only_data(
    text: str, pool: Pool, vector: QdrantExecutor
) -> None:
    async with pool.acquire() as conn:
        hits = await typeahead(conn, TypeaheadQuery(q=text, types=["anime", "character"]))
    assert all(h.entity.entity_type in ("anime", "character") for h in hits)
    intent = SearchIntent(rationale=text, entity_type="anime", query=text, limit=5,
                          filters=SearchFilters(genres=[text[:40]], year_min=2000))
    assert (await vector.execute(intent)).count == 0  # no anime has that genre
    await HybridRetriever(pool, vector).execute(intent)
    await _catalog_intact(pool)


@pytest.mark.parametrize("text", INJECTIONS)
def test_injection_strings_cannot_become_ids_or_vocabulary(text: str) -> None:
    start = {"entity_type": "anime", "id": str(uuid.uuid4())}
    with pytest.raises(ValidationError):
        EntityRef.model_validate({"entity_type": "anime", "id": text})
    with pytest.raises(ValidationError):
        GraphIntent.model_validate({"rationale": "r", "query_type": "neighbors", "start": start, "edge_types": [text]})
    with pytest.raises(ValidationError):
        SearchFilters.model_validate({"anime_id": text})
    with pytest.raises(ValidationError):
        GraphIntent.model_validate({"rationale": "r", "query_type": text, "start": start})


async def test_random_uuids_are_empty_results(pool: Pool, settings: Settings,
                                              vector: QdrantExecutor) -> None:
    graph = PostgresGraphExecutor(pool, settings)
    for _ in range(20):
        ghost = EntityRef(entity_type="character", id=str(uuid.uuid4()))
        r = await graph.execute(GraphIntent(rationale="r", query_type="path", start=ghost, end=LUFFY))
        assert r.count == 0
    r2 = await vector.execute(SearchIntent(rationale="r", entity_type="character",
                                           filters=SearchFilters(id=[str(uuid.uuid4()) for _ in range(50)])))
    assert r2.count == 0


def test_huge_and_negative_limits_and_huge_lists_are_rejected() -> None:
    start = {"entity_type": "anime", "id": str(uuid.uuid4())}
    for bad in ({"max_hops": 10**9}, {"max_hops": -1}, {"limits": {"max_results": -1}},
                {"limits": {"max_results": 10**12}}, {"limits": {"max_fanout_per_hop": 0}},
                {"edge_types": ["sequel"] * 10_000}):
        with pytest.raises(ValidationError):
            GraphIntent.model_validate({"rationale": "r", "query_type": "k_hop", "start": start, **bad})
    with pytest.raises(ValidationError, match="at most 50 items"):
        SearchFilters(id=[str(uuid.uuid4()) for _ in range(10_000)])
    with pytest.raises(ValidationError, match="at most 8 items"):
        SearchFilters(genres=["action"] * 10_000)
    with pytest.raises(ValidationError):
        SearchIntent(rationale="r", entity_type="anime", query="x", limit=-5)


@pytest.fixture(scope="module")
async def hub(pool: Pool, dsn: str) -> AsyncIterator[EntityRef]:
    """An anime featuring 100k synthetic characters (and Luffy, so paths run through it).

    Built on a plain connection: the pool's statement timeout is for queries, not bulk setup.
    """
    hub_id = str(entity_id("anime", "abuse-hub"))
    conn = await connect(dsn)
    try:
        async with conn.transaction():
            await conn.execute(
                "INSERT INTO anime (id, key, source, title, format, year, status, popularity) "
                "VALUES ($1, 'abuse-hub', 'synthetic', 'Hub', 'tv', 2000, 'finished', 0)", hub_id)
            await conn.execute(
                "INSERT INTO character (id, key, source, name) SELECT gen_random_uuid(), 'abuse-' || g, 'synthetic', "
                "'Extra ' || g FROM generate_series(1, $1) g", HUB_DEGREE)
            await conn.execute(
                "INSERT INTO anime_character (anime_id, character_id, role, source) "
                "SELECT $1::uuid, id, 'supporting', 'synthetic' FROM character WHERE key LIKE 'abuse-%' "
                "UNION ALL SELECT $1::uuid, $2::uuid, 'supporting', 'synthetic'", hub_id, LUFFY.id)
            await conn.execute(
                "INSERT INTO edge (src_id, rel, dst_id, src_type, dst_type, detail, source) "
                "SELECT src_id, rel, dst_id, src_type, dst_type, detail, source FROM edge_source "
                "WHERE source = 'synthetic' AND (src_id = $1 OR dst_id = $1)", hub_id)
        await conn.execute("ANALYZE edge")
        yield EntityRef(entity_type="anime", id=hub_id)
        async with conn.transaction():
            await conn.execute("DELETE FROM edge WHERE src_id = $1 OR dst_id = $1", hub_id)
            await conn.execute("DELETE FROM anime WHERE id = $1", hub_id)
            await conn.execute("DELETE FROM character WHERE key LIKE 'abuse-%'")
    finally:
        await conn.close()


async def test_a_hub_of_degree_100k_stays_bounded(hub: EntityRef, pool: Pool,
                                                  settings: Settings) -> None:
    async with pool.acquire() as conn:
        degree = await conn.fetchrow("SELECT count(*) FROM edge WHERE src_id = $1", hub.id)
    assert degree is not None and int(str(degree[0])) > HUB_DEGREE
    graph = PostgresGraphExecutor(pool, settings)
    extra = EntityRef(entity_type="character", id=str(entity_id("character", "nami")))
    cases = [
        GraphIntent(rationale="r", query_type="neighbors", start=hub),
        GraphIntent(rationale="r", query_type="k_hop", start=hub, max_hops=6),
        GraphIntent(rationale="r", query_type="k_hop", start=LUFFY, max_hops=4, edge_types=["appears_in", "features"]),
        GraphIntent(rationale="r", query_type="path", start=hub, end=extra, max_hops=6),
        GraphIntent(rationale="r", query_type="neighbors", start=LUFFY, edge_types=["co_appears"]),
        GraphIntent(rationale="r", query_type="compare", start=hub, end=EntityRef(
            entity_type="anime", id=str(entity_id("anime", "one-piece")))),
    ]
    for intent in cases:
        t0 = time.perf_counter()
        r = await graph.execute(intent)
        elapsed = time.perf_counter() - t0
        assert elapsed < settings.query_timeout_ms / 1000, (intent.query_type, elapsed)
        assert r.count <= settings.graph_max_results and len(r.node_ids) <= 500
    # the path through the hub is found: Luffy appears in the hub too
    r = await graph.execute(GraphIntent(rationale="r", query_type="path", start=hub, end=NAMI,
                                        edge_types=["features", "teammate"]))
    assert r.count >= 1


async def test_no_query_runs_past_its_timeout(hub: EntityRef, dsn: str, settings: Settings) -> None:
    tight = settings.model_copy(update={"statement_timeout_ms": 1, "query_timeout_ms": 200, "graph_max_fanout": 10_000,
                                        "graph_max_frontier": 1_000_000})
    pool = await make_pool(dsn, tight)
    try:
        graph = PostgresGraphExecutor(pool, tight)
        t0 = time.perf_counter()
        with pytest.raises(RetrievalError) as info:
            await graph.execute(GraphIntent(rationale="r", query_type="k_hop", start=hub, max_hops=3,
                                            limits={"max_results": 500, "max_fanout_per_hop": 500}))
        assert info.value.reason == "timeout" and info.value.source == "pg_graph"
        assert time.perf_counter() - t0 < 1.0  # not retried: a timeout is a verdict
    finally:
        await pool.close()


async def test_a_dropped_connection_is_retried(pool: Pool, dsn: str, settings: Settings) -> None:
    small = await make_pool(dsn, settings.model_copy(update={"pool_min_size": 1, "pool_max_size": 1}))
    try:
        async with small.acquire() as c:
            pid = c.get_server_pid()
        killer = await connect(dsn)
        try:
            await killer.execute("SELECT pg_terminate_backend($1)", pid)
        finally:
            await killer.close()
        await asyncio.sleep(0.1)
        graph = PostgresGraphExecutor(small, settings)
        r = await graph.execute(GraphIntent(rationale="r", query_type="path", start=LUFFY, end=NAMI))
        assert r.count >= 1
    finally:
        await small.close()


async def test_an_unreachable_database_is_one_typed_error(server: str, settings: Settings) -> None:
    dead = with_database(server, "agentic_rag_no_such_database")
    pool = await make_pool(dead, settings.model_copy(update={"pool_min_size": 0, "pool_max_size": 1}))
    try:
        t0 = time.perf_counter()
        with pytest.raises(RetrievalError) as info:
            await PostgresGraphExecutor(pool, settings).execute(
                GraphIntent(rationale="r", query_type="neighbors", start=LUFFY))
        assert info.value.reason == "unavailable" and "3 attempts" in str(info.value)
        assert time.perf_counter() - t0 < 5
    finally:
        await pool.close()

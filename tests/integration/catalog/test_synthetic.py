"""The synthetic catalog loaded into a real PostgreSQL (its own scratch database, recreated per run)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager

import pytest

from agentic_rag.catalog.ids import entity_id
from agentic_rag.catalog.records import CatalogError
from agentic_rag.catalog.synthetic import SyntheticCatalog, SyntheticReport, fingerprint, load_synthetic
from agentic_rag.catalog.tables import ENTITY_TABLES, RELATION_TABLES, TABLES
from agentic_rag.storage.postgres import connect, migrate
from agentic_rag.storage.sql import Conn

pytestmark = pytest.mark.integration

DATABASE = f"agentic_rag_synth_test_{os.getpid()}"
N, SEED = 2000, 0
DEMO_FRANCHISE = "test-demo-franchise"
DEMO_ANIME = "test-demo-anime"


@pytest.fixture(scope="module")
def synth_dsn(scratch: Callable[[str], AbstractContextManager[str]]) -> Iterator[str]:
    """A fresh scratch database for this module, dropped afterwards."""
    with scratch(DATABASE) as dsn:
        yield dsn


@pytest.fixture(scope="module")
async def demo_ids(synth_dsn: str) -> dict[str, str]:
    """A demo franchise and anime (and their edges) that no synthetic load may touch."""
    await migrate(synth_dsn)
    f, a = str(entity_id("franchise", DEMO_FRANCHISE)), str(entity_id("anime", DEMO_ANIME))
    conn = await connect(synth_dsn)
    try:
        await conn.execute(
            "INSERT INTO franchise (id, key, source, name, popularity) VALUES ($1, $2, 'demo', 'Demo Franchise', 7)",
            f, DEMO_FRANCHISE,
        )
        await conn.execute(
            "INSERT INTO anime (id, key, source, title, format, year, status, franchise_id) "
            "VALUES ($1, $2, 'demo', 'Demo Anime', 'tv', 2001, 'finished', $3)",
            a, DEMO_ANIME, f,
        )
        await conn.execute(
            "INSERT INTO edge (src_id, rel, dst_id, src_type, dst_type, source) VALUES "
            "($1, 'part_of', $2, 'anime', 'franchise', 'demo'), ($2, 'includes', $1, 'franchise', 'anime', 'demo')",
            a, f,
        )
    finally:
        await conn.close()
    return {"franchise": f, "anime": a}


@pytest.fixture(scope="module")
def progress_calls() -> list[tuple[str, int, int]]:
    return []


@pytest.fixture(scope="module")
async def loaded(synth_dsn: str, demo_ids: dict[str, str], progress_calls: list[tuple[str, int, int]]
                 ) -> SyntheticReport:
    return await load_synthetic(synth_dsn, N, SEED, progress=lambda t, d, n: progress_calls.append((t, d, n)))


@pytest.fixture
async def conn(synth_dsn: str) -> AsyncIterator[Conn]:
    c = await connect(synth_dsn)
    yield c
    await c.close()


async def _scalar(conn: Conn, query: str, *params: object) -> int:
    value = await conn.fetchval(query, *params)
    assert isinstance(value, int)
    return value


async def _synthetic_counts(conn: Conn) -> dict[str, int]:
    return {t: await _scalar(conn, f"SELECT count(*) FROM {t} WHERE source = 'synthetic'")
            for t in (*ENTITY_TABLES, *RELATION_TABLES, "edge")}


async def _demo_rows(conn: Conn) -> list[tuple[object, ...]]:
    return [tuple(r) for r in await conn.fetch(
        "SELECT 'franchise', id::text, name, popularity::text FROM franchise WHERE source = 'demo' "
        "UNION ALL SELECT 'anime', id::text, title, franchise_id::text FROM anime WHERE source = 'demo' "
        "UNION ALL SELECT 'edge', src_id::text, rel, dst_id::text FROM edge WHERE source = 'demo' ORDER BY 1, 2, 3"
    )]


async def test_load_writes_the_generated_counts(loaded: SyntheticReport, conn: Conn) -> None:
    expected = SyntheticCatalog(N, SEED)
    assert not loaded.skipped
    assert loaded.tables == expected.counts
    assert loaded.entity_rows == N
    assert loaded.relation_rows == expected.relation_rows >= 4 * N
    assert loaded.edges == expected.expected_edges
    assert loaded.rows_per_second > 0
    assert await _synthetic_counts(conn) == {**expected.counts, "edge": expected.expected_edges}
    row = await conn.fetchrow("SELECT fingerprint FROM catalog_load WHERE source = 'synthetic'")
    assert row == (fingerprint(N, SEED),)


async def test_progress_reports_every_table(loaded: SyntheticReport, progress_calls: list[tuple[str, int, int]]
                                            ) -> None:
    last = {t: (d, n) for t, d, n in progress_calls}
    assert list(last) == [*(t.name for t in TABLES), "edge"]
    assert all(d == n for d, n in last.values())
    assert {t: d for t, (d, _) in last.items() if t != "edge"} == loaded.tables


async def test_every_edge_is_a_relation_and_its_endpoints_exist(loaded: SyntheticReport, conn: Conn) -> None:
    ids = " UNION ALL ".join(f"SELECT id, '{t}' AS t FROM {t}" for t in ENTITY_TABLES)
    dangling = await _scalar(conn, f"""
        WITH ids AS ({ids})
        SELECT count(*) FROM edge e WHERE e.source = 'synthetic' AND (
          NOT EXISTS (SELECT 1 FROM ids WHERE ids.id = e.src_id AND ids.t = e.src_type)
          OR NOT EXISTS (SELECT 1 FROM ids WHERE ids.id = e.dst_id AND ids.t = e.dst_type))""")
    assert dangling == 0
    for a, b in (("edge", "edge_source"), ("edge_source", "edge")):
        extra = await _scalar(conn, f"SELECT count(*) FROM (SELECT src_id, rel, dst_id FROM {a} WHERE source = "
                                    f"'synthetic' EXCEPT SELECT src_id, rel, dst_id FROM {b}) x")
        assert extra == 0, f"{a} has rows {b} lacks"
    # the schema's foreign keys hold (PostgreSQL checked them on COPY; count anyway)
    fks = {
        "anime_character": (("anime_id", "anime"), ("character_id", "character")),
        "character_relationship": (("character_id", "character"), ("related_character_id", "character")),
        "anime_staff": (("anime_id", "anime"), ("person_id", "person")),
        "episode": (("anime_id", "anime"),),
    }
    for table, refs in fks.items():
        for col, parent in refs:
            orphans = await _scalar(conn, f"SELECT count(*) FROM {table} x WHERE NOT EXISTS "
                                          f"(SELECT 1 FROM {parent} p WHERE p.id = x.{col})")
            assert orphans == 0, f"{table}.{col}"


async def test_degrees_are_heavy_tailed(loaded: SyntheticReport, conn: Conn) -> None:
    top, median = await conn.fetchrow(
        "SELECT max(c), percentile_cont(0.5) WITHIN GROUP (ORDER BY c) FROM "
        "(SELECT anime_id, count(*) AS c FROM anime_character GROUP BY anime_id) x"
    ) or (0, 0)
    assert top >= 20 * median  # type: ignore[operator]
    hub_popularity = await _scalar(conn, """
        SELECT a.popularity FROM anime a JOIN anime_character ac ON ac.anime_id = a.id
        GROUP BY a.id ORDER BY count(*) DESC LIMIT 1""")
    assert hub_popularity == 100


async def test_demo_rows_are_untouched(loaded: SyntheticReport, conn: Conn, demo_ids: dict[str, str]) -> None:
    rows = await _demo_rows(conn)
    assert rows == [
        ("anime", demo_ids["anime"], "Demo Anime", demo_ids["franchise"]),
        ("edge", demo_ids["anime"], "part_of", demo_ids["franchise"]),
        ("edge", demo_ids["franchise"], "includes", demo_ids["anime"]),
        ("franchise", demo_ids["franchise"], "Demo Franchise", "7"),
    ]


async def test_the_same_load_again_changes_nothing(loaded: SyntheticReport, synth_dsn: str, conn: Conn) -> None:
    async def state() -> tuple[object, ...]:
        counts = await _synthetic_counts(conn)
        record = await conn.fetchrow(
            "SELECT fingerprint, counts, loaded_at FROM catalog_load WHERE source = 'synthetic'")
        edges = await conn.fetchval("SELECT md5(string_agg(e::text, ',' ORDER BY src_id, rel, dst_id)) FROM edge e")
        chars = await conn.fetchval("SELECT md5(string_agg(c::text, ',' ORDER BY id)) FROM character c")
        return counts, tuple(record or ()), edges, chars

    before = await state()
    again = await load_synthetic(synth_dsn, N, SEED)
    assert again.skipped
    assert again.tables == loaded.tables and again.edges == loaded.edges
    assert "nothing changed" in again.describe()
    assert await state() == before


async def test_a_reference_into_the_synthetic_catalog_blocks_its_replacement(
    loaded: SyntheticReport, synth_dsn: str, conn: Conn,
) -> None:
    before = await _synthetic_counts(conn)
    stray = str(entity_id("anime", "test-stray"))
    await conn.execute(
        "INSERT INTO anime (id, key, source, title, format, year, status, franchise_id) "
        "VALUES ($1, 'test-stray', 'demo', 'Stray', 'tv', 2001, 'finished', $2)",
        stray, str(entity_id("franchise", "syn-franchise-0")),
    )
    try:
        with pytest.raises(CatalogError, match="nothing was changed"):
            await load_synthetic(synth_dsn, 1500, seed=1)
    finally:
        await conn.execute("DELETE FROM anime WHERE id = $1", stray)
    assert await _synthetic_counts(conn) == before
    row = await conn.fetchrow("SELECT fingerprint FROM catalog_load WHERE source = 'synthetic'")
    assert row == (fingerprint(N, SEED),)


async def test_another_seed_replaces_the_synthetic_rows_only(loaded: SyntheticReport, synth_dsn: str, conn: Conn,
                                                            demo_ids: dict[str, str]) -> None:
    """Runs last: replaces the module's catalog with another one."""
    demo_before = await _demo_rows(conn)
    other = await load_synthetic(synth_dsn, 1500, seed=1)
    assert not other.skipped
    assert loaded.names > 0
    assert other.deleted == sum(loaded.tables.values()) + loaded.edges + loaded.names
    expected = SyntheticCatalog(1500, 1)
    assert await _synthetic_counts(conn) == {**expected.counts, "edge": expected.expected_edges}
    first_anime = next(expected.rows("anime"))
    title = await conn.fetchrow("SELECT title FROM anime WHERE key = $1", first_anime[1])
    assert title == (first_anime[3],)
    assert await _demo_rows(conn) == demo_before

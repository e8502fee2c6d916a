"""Structured queries against the demo catalog in a real PostgreSQL database."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from agentic_rag.catalog.ingest import IngestReport
from agentic_rag.protocol import FIELDS, OPS_BY_KIND
from agentic_rag.retrievers.dsl import QueryResult, compile_query, run_query
from agentic_rag.storage.postgres import connect
from agentic_rag.storage.sql import Conn
from tests.support.dsl import cond, q

pytestmark = pytest.mark.integration
TIMEOUT = 5.0


async def run(conn: Conn, **kw: Any) -> QueryResult:
    return await run_query(conn, q(**kw), timeout_s=TIMEOUT)


def names(result: QueryResult) -> list[str]:
    return [r["name"] for r in result.rows]


async def scalar(conn: Conn, query: str) -> Any:
    row = await conn.fetchrow(query)
    assert row is not None
    return row[0]


async def test_episode_count_of_death_note(demo: IngestReport, conn: Conn) -> None:
    res = await run(conn, entity_type="anime", where=[cond("title", "eq", "death note")])
    assert res.count == 1 and res.rows[0]["episode_count"] == 37 and res.rows[0]["name"] == "Death Note"
    assert res.entities[0].entity_type == "anime" and res.entities[0].id == res.rows[0]["id"]
    assert "episode_count=37" in res.summary and res.rows[0]["id"] in res.summary
    agg = await run(conn, entity_type="anime", aggregate={"op": "max", "field": "episode_count"},
                    where=[cond("title", "eq", "Death Note")])
    assert agg.rows == [{"value": 37, "n": 1}] and agg.count == 1 and agg.entities == []
    assert ": 37 (over 1 matching rows)" in agg.summary


async def test_anime_by_madhouse_after_2010(demo: IngestReport, conn: Conn) -> None:
    res = await run(conn, entity_type="anime", where=[cond("studio", "eq", "Madhouse"), cond("year", "gt", 2010)],
                    limit=100)
    assert "Hunter x Hunter (2011)" in names(res) and "Death Note" not in names(res)
    assert all(r["year"] > 2010 for r in res.rows) and res.total == res.count
    everything = await run(conn, entity_type="anime", where=[cond("studio", "eq", "madhouse")], limit=100)
    assert "Death Note" in names(everything)
    not_madhouse = await run(conn, entity_type="anime", where=[cond("studio", "ne", "Madhouse")], limit=100)
    assert not set(names(not_madhouse)) & set(names(everything))


async def test_count_anime_per_studio(demo: IngestReport, conn: Conn) -> None:
    res = await run(conn, entity_type="anime", group_by="studio", aggregate={"op": "count"}, limit=100)
    per_studio = {r["group_key"]: r["value"] for r in res.rows}
    assert per_studio["Toei Animation"] >= 5
    expected = await scalar(conn, "SELECT count(*) FROM anime_studio x JOIN studio s ON s.id = x.studio_id "
                                  "WHERE s.name = 'Toei Animation'")
    assert per_studio["Toei Animation"] == expected
    assert [r["value"] for r in res.rows] == sorted((r["value"] for r in res.rows), reverse=True)
    assert res.total == await scalar(conn, "SELECT count(DISTINCT studio_id) FROM anime_studio")
    assert "- Toei Animation: " in res.summary


async def test_average_episode_count_of_bones_anime(demo: IngestReport, conn: Conn) -> None:
    res = await run(conn, entity_type="anime", aggregate={"op": "avg", "field": "episode_count"},
                    where=[cond("studio", "eq", "Bones")])
    expected = await scalar(conn, "SELECT round(avg(a.episode_count), 2) FROM anime a JOIN anime_studio x "
                                  "ON x.anime_id = a.id JOIN studio s ON s.id = x.studio_id WHERE s.name = 'Bones'")
    assert res.rows[0]["value"] == pytest.approx(float(expected))


async def test_genres(demo: IngestReport, conn: Conn) -> None:
    mecha = await run(conn, entity_type="anime", where=[cond("genres", "contains", "Mecha")], limit=100)
    assert "Neon Genesis Evangelion" in names(mecha) and all("mecha" in r["genres"] for r in mecha.rows)
    both = await run(conn, entity_type="anime", where=[cond("genres", "contains", ["mecha", "drama"])])
    assert both.count >= 1 and all({"mecha", "drama"} <= set(r["genres"]) for r in both.rows)
    either = await run(conn, entity_type="anime", where=[cond("genres", "in", ["sports", "mecha"])], limit=100)
    assert set(names(either)) == set(names(mecha))
    sports = await run(conn, entity_type="anime", where=[cond("genres", "contains", "sports")])
    assert sports.count == 0 and sports.rows == [] and sports.summary.startswith("No anime matched")
    per_genre = await run(conn, entity_type="anime", group_by="genres", limit=100)
    assert {r["group_key"]: r["value"] for r in per_genre.rows}["mecha"] == mecha.count


async def test_joins_to_people_characters_and_episodes(demo: IngestReport, conn: Conn) -> None:
    togashi = await run(conn, entity_type="manga", where=[cond("author", "ilike_substring", "togashi")])
    assert names(togashi) == ["Hunter x Hunter"]
    light = await run(conn, entity_type="anime", where=[cond("character", "eq", "Light Yagami")], limit=100)
    assert "Death Note" in names(light)
    cast = await run(conn, entity_type="character", where=[cond("anime", "eq", "Death Note")], limit=100)
    assert "Light Yagami" in names(cast) and "L Lawliet" in names(cast)
    episodes = await run(conn, entity_type="episode", where=[cond("anime", "eq", "Bleach"), cond("number", "lte", 3)],
                         order_by=[{"field": "number", "direction": "desc"}])
    assert [r["number"] for r in episodes.rows] == [3, 2, 1]
    assert episodes.rows[-1]["aired"] == "2004-10-05"
    prefix = await run(conn, entity_type="anime", where=[cond("title", "ilike_prefix", "HUNTER X HUNTER (")])
    assert set(names(prefix)) == {"Hunter x Hunter (1999)", "Hunter x Hunter (2011)", "Hunter x Hunter (OVA)"}


async def test_like_metacharacters_are_literal(demo: IngestReport, conn: Conn) -> None:
    for pattern in ("%", "_", "\\", "%%", "_eath Note", "%Note"):
        res = await run(conn, entity_type="anime", where=[cond("title", "ilike_substring", pattern)])
        assert res.count == 0, pattern


INJECTIONS = [
    "'; DROP TABLE anime; --", "Death Note'; DROP TABLE anime; --", "' OR '1'='1", "' OR 1=1 --",
    "x') OR TRUE; --", "); SELECT pg_sleep(10); --", "%(p0)s", "$1", "\\'; DROP TABLE anime; --",
    "$$; DROP TABLE anime; $$", "*/ OR 1=1 /*",
]


@pytest.mark.parametrize("value", INJECTIONS)
async def test_injection_strings_are_just_values(demo: IngestReport, conn: Conn, value: str) -> None:
    before = await scalar(conn, "SELECT count(*) FROM anime")
    for field, op in (("title", "eq"), ("title", "ilike_prefix"), ("title", "ilike_substring"), ("studio", "eq"),
                      ("staff", "ilike_substring"), ("genres", "contains"), ("format", "ne")):
        res = await run(conn, entity_type="anime", where=[cond(field, op, value)], limit=100)
        assert res.count == (before if op == "ne" else 0), (field, op)
    res = await run(conn, entity_type="anime", where=[cond("title", "in", [value, "Death Note"])])
    assert names(res) == ["Death Note"]
    assert await scalar(conn, "SELECT to_regclass('public.anime') IS NOT NULL")
    assert await scalar(conn, "SELECT count(*) FROM anime") == before


async def test_fifty_element_in_lists(demo: IngestReport, conn: Conn) -> None:
    titles = ["Death Note", "Bleach", *(f"no such title {i}" for i in range(48))]
    res = await run(conn, entity_type="anime", where=[cond("title", "in", titles)], limit=100)
    assert set(names(res)) == {"Death Note", "Bleach"}
    years = list(range(1960, 2010))
    assert len(years) == 50
    res = await run(conn, entity_type="anime", where=[cond("year", "in", years)], limit=100)
    assert res.count > 0 and all(1960 <= r["year"] < 2010 for r in res.rows)


async def test_every_template_runs(demo: IngestReport, conn: Conn) -> None:
    """Each field with each of its ops, each grouping and aggregate, each sort key: valid SQL."""
    sample: dict[str, Any] = {"numeric": 2000, "text": "a", "link": "a", "text_array": "action",
                              "date": "2004-10-05", "bool": True}
    many: dict[str, Any] = {"numeric": [2000, 2001.5], "date": None, "bool": None}
    ran = 0
    for entity_type, fields in FIELDS.items():
        numeric = [f for f, c in fields.items() if c.kind == "numeric"]
        queries: list[dict[str, Any]] = []
        for field, col in fields.items():
            for op in OPS_BY_KIND[col.kind]:
                value = many.get(col.kind, ["a", "action"]) if op == "in" else sample[col.kind]
                queries.append({"where": [cond(field, op, value)]})
            if col.kind == "text_array":
                queries.append({"where": [cond(field, "contains", ["action", "drama"])]})
            if col.kind not in ("link", "text_array"):
                queries += [{"order_by": [{"field": field, "direction": d}]} for d in ("asc", "desc")]
            if col.group:
                queries += [{"group_by": field, "aggregate": {"op": op, "field": numeric[0]}}
                            for op in ("count", "avg", "min", "max", "sum")]
                queries.append({"group_by": field, "order_by": [{"field": "group_key", "direction": "desc"}]})
        queries += [{"aggregate": {"op": op, "field": f}} for f in numeric for op in ("count", "avg", "sum")]
        for kw in queries:
            res = await run(conn, entity_type=entity_type, **kw)
            assert res.count == len(res.rows) <= 100
            if "aggregate" not in kw and "group_by" not in kw:
                assert len(res.entities) == res.count and all(r["entity_type"] == entity_type for r in res.rows)
            ran += 1
    assert ran > 150


async def test_statement_timeout_is_applied_server_side(demo: IngestReport, conn: Conn, dsn: str) -> None:
    """A query blocked behind a lock is cancelled by its own statement_timeout, before the client gives up."""
    locker = await connect(dsn)
    try:
        lock = locker.transaction()
        await lock.start()
        await locker.execute("LOCK TABLE anime IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(TimeoutError) as exc:
            await run_query(conn, q(entity_type="anime"), timeout_s=0.5)
        assert isinstance(exc.value.__cause__, asyncpg.QueryCanceledError)
        assert "statement timeout" in str(exc.value.__cause__)
        await lock.rollback()
    finally:
        await locker.close()
    assert (await run(conn, entity_type="anime", limit=1)).count == 1  # the connection is still usable


async def test_settings_do_not_outlive_the_call(demo: IngestReport, conn: Conn) -> None:
    before = await scalar(conn, "SHOW statement_timeout")
    await run(conn, entity_type="anime", limit=1)
    assert await scalar(conn, "SHOW statement_timeout") == before
    # Inside a caller's transaction it runs in a savepoint that is rolled back: the caller can still write.
    async with conn.transaction():
        await run(conn, entity_type="anime", limit=1)
        assert await scalar(conn, "SHOW statement_timeout") == before
        assert await scalar(conn, "SHOW transaction_read_only") == "off"
        await conn.execute("CREATE TEMP TABLE dsl_probe (x int) ON COMMIT DROP")


def test_only_allowlisted_names_can_be_expressed() -> None:
    for bad in ({"where": [cond("pg_sleep(10)", "eq", 1)]}, {"group_by": "1; DROP TABLE anime"},
                {"order_by": [{"field": "random()"}]}, {"aggregate": {"op": "pg_sleep", "field": "year"}},
                {"entity_type": "pg_catalog.pg_user"}):
        with pytest.raises(ValueError):
            q(**{"entity_type": "anime", **bad})
    query, _ = compile_query(q(entity_type="anime"))
    assert query.startswith("SELECT ")

"""The similar step over the demo catalog: Qdrant's recommendation query and the graph's evidence, fused.

Each test checks a property a user relies on, not a ranking: the examples' own franchise is never offered, every
pick says why it was picked and the reason is true of the catalog, the facts asked of the picks hold for every
pick, and a studio as the example means its works.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentic_rag.protocol import EntityRef, SimilarIntent
from agentic_rag.retrievers.similar import SimilarRetriever
from agentic_rag.retrievers.vector import QdrantExecutor
from agentic_rag.storage.sql import Conn, Pool

pytestmark = pytest.mark.integration


async def _id(conn: Conn, table: str, name: str) -> str:
    column = "title" if table in ("anime", "manga") else "name"
    value = await conn.fetchval(f"SELECT id::text FROM {table} WHERE {column} = $1", name)
    assert value is not None, name
    return str(value)


async def _similar(pool: Pool, vector: QdrantExecutor, **intent: Any) -> list[dict[str, Any]]:
    result = await SimilarRetriever(pool, vector).execute(SimilarIntent(rationale="test", **intent))
    assert result.count == len(result.raw_data)
    return result.raw_data


async def test_works_like_a_title_leave_its_franchise_out_and_say_why(pool: Pool, vector: QdrantExecutor) -> None:
    async with pool.acquire() as conn:
        death_note = await _id(conn, "anime", "Death Note")
        franchise = await conn.fetchval("SELECT franchise_id::text FROM anime WHERE id = $1::uuid", death_note)
        own = {r[0] for r in await conn.fetch(
            "SELECT id::text FROM anime WHERE franchise_id = $1::uuid", franchise)}
    rows = await _similar(pool, vector, entity_type="anime", like=[EntityRef(entity_type="anime", id=death_note)])
    assert 1 <= len(rows) <= 5
    assert not {r["id"] for r in rows} & own, "the example's own franchise is not a recommendation"
    assert all(r["reasons"] for r in rows)
    assert len({r.get("franchise_id") or r["id"] for r in rows}) == len(rows), "one pick per franchise"
    # a reason is a fact of the catalog: a pick "also animated by Madhouse" was animated by Madhouse
    madhouse = [r for r in rows if "Madhouse" in r["shared_studios"]]
    assert madhouse and all("Madhouse" in r["studios"] for r in madhouse)


async def test_the_facts_asked_hold_for_every_pick(pool: Pool, vector: QdrantExecutor) -> None:
    async with pool.acquire() as conn:
        bebop = await _id(conn, "anime", "Cowboy Bebop")
    rows = await _similar(pool, vector, entity_type="anime", like=[EntityRef(entity_type="anime", id=bebop)],
                          filters={"format": ["tv"], "finished": True, "year_max": 2010, "max_length": 60}, limit=8)
    assert rows
    for r in rows:
        assert r["format"] == "tv" and r["status"] == "finished" and r["year"] <= 2010, r
        assert r["episode_count"] is not None and r["episode_count"] <= 60, r


async def test_a_studio_as_the_example_means_its_works(pool: Pool, vector: QdrantExecutor) -> None:
    async with pool.acquire() as conn:
        bones = await _id(conn, "studio", "Bones")
        made = {r[0] for r in await conn.fetch(
            "SELECT anime_id::text FROM anime_studio WHERE studio_id = $1::uuid", bones)}
    rows = await _similar(pool, vector, entity_type="anime", like=[EntityRef(entity_type="studio", id=bones)],
                          filters={"format": ["movie"]})
    assert rows and {r["id"] for r in rows} <= made
    assert all(r["format"] == "movie" and r["reasons"] == ["also animated by Bones"] for r in rows)


async def test_a_work_not_wanted_takes_its_franchise_with_it(pool: Pool, vector: QdrantExecutor) -> None:
    async with pool.acquire() as conn:
        naruto = await _id(conn, "anime", "Naruto")
        bleach = await _id(conn, "anime", "Bleach")
        bleach_franchise = await conn.fetchval("SELECT franchise_id::text FROM anime WHERE id = $1::uuid", bleach)
    like = [EntityRef(entity_type="anime", id=naruto)]
    before = await _similar(pool, vector, entity_type="anime", like=like, limit=10)
    assert any(r.get("franchise_id") == bleach_franchise for r in before), "Bleach is like Naruto to begin with"
    after = await _similar(pool, vector, entity_type="anime", like=like, exclude=[bleach], limit=10)
    assert not any(r.get("franchise_id") == bleach_franchise for r in after)


async def test_a_studio_not_wanted_takes_its_works_with_it(pool: Pool, vector: QdrantExecutor) -> None:
    async with pool.acquire() as conn:
        frieren = await _id(conn, "anime", "Frieren: Beyond Journey's End")
        madhouse = await _id(conn, "studio", "Madhouse")
        made = {r[0] for r in await conn.fetch(
            "SELECT anime_id::text FROM anime_studio WHERE studio_id = $1::uuid", madhouse)}
    like = [EntityRef(entity_type="anime", id=frieren)]
    before = await _similar(pool, vector, entity_type="anime", like=like, limit=10)
    assert {r["id"] for r in before} & made, "Madhouse's works are like Frieren to begin with"
    after = await _similar(pool, vector, entity_type="anime", like=like, exclude=[madhouse], limit=10)
    assert after and not {r["id"] for r in after} & made


async def test_manga_like_an_anime_by_the_wish_alone_too(pool: Pool, vector: QdrantExecutor) -> None:
    async with pool.acquire() as conn:
        chainsaw = await _id(conn, "anime", "Chainsaw Man")
    rows = await _similar(pool, vector, entity_type="manga", like=[EntityRef(entity_type="anime", id=chainsaw)])
    assert rows and all(r["entity_type"] == "manga" for r in rows)
    assert "Chainsaw Man" not in {r["name"] for r in rows}, "the same story in print is no recommendation"
    wished = await _similar(pool, vector, entity_type="anime", query="pirates sailing the sea for treasure")
    assert wished and wished[0]["name"].startswith("One Piece"), [r["name"] for r in wished]


async def test_genres_a_wish_names_are_what_every_pick_has(pool: Pool, vector: QdrantExecutor) -> None:
    """The catalog's own genres, read from the wish's words and word pairs ("dark fantasy" is dark_fantasy); words
    that are no genre ("quiet", "manga") change nothing."""
    async with pool.acquire() as conn:
        eva = await _id(conn, "anime", "Neon Genesis Evangelion")
    rows = await _similar(pool, vector, entity_type="manga", like=[EntityRef(entity_type="anime", id=eva)],
                          query="psychological manga")
    assert rows and all("psychological" in r["genres"] for r in rows), rows
    rows = await _similar(pool, vector, entity_type="manga", query="a quiet dark fantasy please", limit=8)
    assert rows and all("dark_fantasy" in r["genres"] for r in rows), rows
    plain = await _similar(pool, vector, entity_type="manga", query="quiet and slow", limit=8)
    assert plain and not all("dark_fantasy" in r["genres"] for r in plain)
    # an adjective names its genre: "something funny" is a comedy
    funny = await _similar(pool, vector, entity_type="anime", query="something funny", limit=8)
    assert funny and all("comedy" in r["genres"] for r in funny), funny


async def test_a_long_one_asked_has_at_least_that_many_episodes(pool: Pool, vector: QdrantExecutor) -> None:
    async with pool.acquire() as conn:
        naruto = await _id(conn, "anime", "Naruto")
    rows = await _similar(pool, vector, entity_type="anime", like=[EntityRef(entity_type="anime", id=naruto)],
                          filters={"min_length": 100}, limit=8)
    assert rows and all(r["episode_count"] is not None and r["episode_count"] >= 100 for r in rows), rows


async def test_with_nothing_left_outside_its_franchise_the_franchise_s_own_works_are_offered(
        pool: Pool, vector: QdrantExecutor) -> None:
    """Mecha films from 2010 on like the Evangelion TV series: only the Rebuild films fit, all of its own franchise.
    They are offered, each saying it is from the same franchise, rather than nothing; a franchise the question left
    out stays out even so."""
    async with pool.acquire() as conn:
        eva = await _id(conn, "anime", "Neon Genesis Evangelion")
        franchise = await conn.fetchval("SELECT franchise_id::text FROM anime WHERE id = $1::uuid", eva)
    like = [EntityRef(entity_type="anime", id=eva)]
    wanted = {"format": ["movie"], "year_min": 2010, "genres": ["mecha"]}
    rows = await _similar(pool, vector, entity_type="anime", like=like, filters=wanted)
    assert rows and all(r["franchise_id"] == franchise and r["year"] >= 2010 for r in rows), rows
    assert all(r["reasons"][0] == "from the same franchise as Neon Genesis Evangelion" for r in rows)
    assert not await _similar(pool, vector, entity_type="anime", like=like, filters=wanted, exclude=[eva])


async def test_picks_with_more_of_the_wished_genres_come_first(pool: Pool, vector: QdrantExecutor) -> None:
    """"an action comedy": any one of the genres lets a pick in, and the picks with both come before the rest."""
    rows = await _similar(pool, vector, entity_type="anime", query="an action comedy", limit=8)
    shared = [len({"action", "comedy"} & set(r["genres"])) for r in rows]
    assert rows and shared[0] == 2 and shared == sorted(shared, reverse=True), [(r["name"], r["genres"]) for r in rows]


async def test_a_pick_for_a_wish_alone_says_the_wished_genres_it_has(pool: Pool, vector: QdrantExecutor) -> None:
    """No example to share anything with: the reason is the genres asked that the pick has."""
    rows = await _similar(pool, vector, entity_type="anime", query="cozy wholesome slice of life with comedy", limit=5)
    said = [(r["name"], r["reasons"]) for r in rows]
    assert rows and rows[0]["reasons"] == ["comedy and slice of life as asked"], said
    assert all(r["reasons"][0].endswith(" as asked") for r in rows)

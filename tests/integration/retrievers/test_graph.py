"""Graph primitives on the demo catalog, with gold answers."""

from __future__ import annotations

import json
import uuid

import pytest

from agentic_rag.catalog.ids import entity_id
from agentic_rag.protocol import EntityRef, GraphIntent, GraphLimits
from agentic_rag.retrievers.graph import PostgresGraphExecutor
from agentic_rag.retrievers.hydrate import hydrate
from agentic_rag.settings import Settings
from agentic_rag.storage.sql import Pool

pytestmark = pytest.mark.integration


def ref(entity_type: str, key: str) -> EntityRef:
    return EntityRef(entity_type=entity_type, id=str(entity_id(entity_type, key)))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def graph(pool: Pool, settings: Settings) -> PostgresGraphExecutor:
    return PostgresGraphExecutor(pool, settings)


def intent(query_type: str, start: EntityRef, end: EntityRef | None = None, **kw: object) -> GraphIntent:
    return GraphIntent.model_validate({"rationale": "test", "query_type": query_type, "start": start.model_dump(),
                                       "end": end.model_dump() if end else None, **kw})


async def test_path_between_luffy_and_nami_has_relation_labels(graph: PostgresGraphExecutor) -> None:
    luffy, nami = ref("character", "monkey-d-luffy"), ref("character", "nami")
    r = await graph.execute(intent("path", luffy, nami, max_hops=3))
    assert r.count >= 1
    path = r.paths[0]
    assert path.nodes[0] == luffy and path.nodes[-1] == nami
    assert len(path.rels) == len(path.nodes) - 1 >= 1
    assert "teammate" in path.rels  # both are Straw Hats
    assert "Monkey D. Luffy" in r.summary and "Nami" in r.summary
    assert {luffy, nami} <= set(r.node_ids)


async def test_path_through_story_links_from_naruto_to_boruto(graph: PostgresGraphExecutor) -> None:
    naruto, boruto = ref("anime", "naruto"), ref("anime", "boruto-naruto-next-generations")
    r = await graph.execute(intent("path", naruto, boruto, edge_types=["sequel"]))
    assert r.count == 1
    assert r.paths[0].rels == ["sequel", "sequel"]
    assert r.paths[0].nodes[1] == ref("anime", "naruto-shippuden")
    # and the character relation: Naruto is Boruto's father
    r = await graph.execute(intent("neighbors", ref("character", "boruto-uzumaki"), edge_types=["family"]))
    assert ref("character", "naruto-uzumaki") in r.node_ids


async def test_sequels_of_a_franchise_in_order(graph: PostgresGraphExecutor) -> None:
    r = await graph.execute(intent("k_hop", ref("anime", "naruto"), edge_types=["sequel"], max_hops=3))
    order = [n.id for n in r.node_ids[1:]]
    assert order[:2] == [ref("anime", "naruto-shippuden").id, ref("anime", "boruto-naruto-next-generations").id]
    assert r.meta["depths"][order[0]] == 1 and r.meta["depths"][order[1]] == 2
    r = await graph.execute(intent("k_hop", ref("anime", "dragon-ball"), edge_types=["sequel"], max_hops=2))
    depth = r.meta["depths"]
    assert depth[ref("anime", "dragon-ball-z").id] == 1
    assert depth[ref("anime", "dragon-ball-super").id] == 2


async def test_compare_hunter_x_hunter_1999_and_2011(graph: PostgresGraphExecutor) -> None:
    r = await graph.execute(intent("compare", ref("anime", "hunter-x-hunter-1999"),
                                   ref("anime", "hunter-x-hunter-2011")))
    assert r.meta["a"]["episode_count"] == 62 and r.meta["b"]["episode_count"] == 148
    assert "episode_count: 62 vs 148" in r.summary
    assert r.meta["differences"]["studios"] == {"a": ["Nippon Animation"], "b": ["Madhouse"]}
    assert "Gon Freecss (character)" in r.meta["shared"]["characters"]
    assert r.meta["direct"] == ["alternative_version"]
    json.dumps(r.model_dump())  # serialisable as a response


async def test_neighbors_with_derived_same_studio_edges(graph: PostgresGraphExecutor) -> None:
    r = await graph.execute(intent("neighbors", ref("anime", "death-note"), edge_types=["same_studio"]))
    assert ref("anime", "hunter-x-hunter-2011") in r.node_ids
    assert all(p.rels == ["animated_by", "animated"] for p in r.paths)
    assert all(p.nodes[1] == ref("studio", "madhouse") for p in r.paths)


async def test_node_type_and_year_filters(graph: PostgresGraphExecutor, pool: Pool) -> None:
    r = await graph.execute(intent("neighbors", ref("studio", "madhouse"), edge_types=["animated"],
                                   filters={"year_min": 2011}))
    works = [n for n in r.node_ids if n.entity_type == "anime"]
    async with pool.acquire() as conn:
        records = await hydrate(conn, works)
    assert records and all(rec["year"] >= 2011 for rec in records)
    assert ref("anime", "hunter-x-hunter-2011") in works and ref("anime", "death-note") not in works
    r = await graph.execute(intent("neighbors", ref("anime", "one-piece"), filters={"node_types": ["studio"]}))
    assert [n.entity_type for n in r.node_ids[1:]] == ["studio"]


async def test_an_unknown_id_gives_count_zero(graph: PostgresGraphExecutor) -> None:
    ghost = EntityRef(entity_type="anime", id=str(uuid.uuid4()))
    for qt, end in (("neighbors", None), ("k_hop", None), ("path", ref("anime", "naruto")),
                    ("compare", ref("anime", "naruto"))):
        r = await graph.execute(intent(qt, ghost, end))
        assert r.count == 0 and "No anime with id" in r.summary and r.meta["missing"] == ghost.id


async def test_no_path_is_a_result_not_an_error(graph: PostgresGraphExecutor) -> None:
    r = await graph.execute(intent("path", ref("anime", "cowboy-bebop"), ref("anime", "naruto"),
                                   edge_types=["sequel"], max_hops=2))
    assert r.count == 0 and r.paths == [] and "No path between Cowboy Bebop" in r.summary


async def test_limits_are_clamped_server_side(graph: PostgresGraphExecutor, settings: Settings) -> None:
    r = await graph.execute(intent("k_hop", ref("anime", "one-piece"), max_hops=6,
                                   limits=GraphLimits(max_results=500, max_fanout_per_hop=500).model_dump()))
    assert r.meta["clamped"] == {"max_hops": [6, settings.graph_max_hops],
                                 "max_results": [500, settings.graph_max_results],
                                 "max_fanout_per_hop": [500, settings.graph_max_fanout]}
    assert r.count <= settings.graph_max_results

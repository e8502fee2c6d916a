"""Ingestion against real PostgreSQL and real Qdrant local mode."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from qdrant_client import models

from agentic_rag.catalog.ids import entity_id
from agentic_rag.catalog.ingest import IngestReport, index_catalog, ingest_demo
from agentic_rag.catalog.load import load_rows
from agentic_rag.catalog.records import DATA_DIR, CatalogError, load_catalog
from agentic_rag.catalog.tables import ENTITY_TABLES, RELATION_TABLES, demo_rows
from agentic_rag.models.embeddings import Embedder
from agentic_rag.protocol.vocabulary import ENTITY_TYPES, STORED_EDGE_TYPES
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import connect, migrate
from agentic_rag.storage.qdrant import VectorStore, collection_name
from agentic_rag.storage.sql import Conn

pytestmark = pytest.mark.integration


async def _count(conn: Conn, table: str) -> int:
    return int(await conn.fetchval(f"SELECT count(*) FROM {table}"))


async def _snapshot(conn: Conn) -> dict[str, int]:
    return {t: await _count(conn, t) for t in (*ENTITY_TABLES, *RELATION_TABLES, "edge")}


async def test_ingestion_counts_match_the_data_files(demo: IngestReport, conn: Conn) -> None:
    rows = demo_rows(load_catalog())
    cat = load_catalog()
    for table, expected in rows.items():
        assert await _count(conn, table) == len(expected), table
    assert await _count(conn, "anime") == len(cat.anime)
    assert await _count(conn, "character") == len(cat.characters)
    assert await _count(conn, "episode") == len(cat.episodes)
    assert demo.tables["anime"].inserted == len(cat.anime)


async def test_reingestion_is_a_no_op(demo: IngestReport, dsn: str, settings: Settings, conn: Conn,
                                      embedder: Embedder, qdrant: VectorStore) -> None:
    before = await _snapshot(conn)
    again = await ingest_demo(dsn, settings, embedder=embedder, client=qdrant)
    assert not again.changed
    assert all(c.inserted == c.updated == c.deleted == 0 for c in again.tables.values())
    assert all(c.upserted == c.deleted == 0 for c in again.index.values())
    assert await _snapshot(conn) == before


async def test_migrations_apply_once(demo: IngestReport, dsn: str) -> None:
    assert await migrate(dsn) == []


async def test_every_relation_endpoint_exists(demo: IngestReport, conn: Conn) -> None:
    for table in ENTITY_TYPES:
        dangling = await conn.fetchrow(
            f"SELECT count(*) FROM edge e WHERE e.src_type = $1 AND NOT EXISTS "
            f"(SELECT 1 FROM {table} x WHERE x.id = e.src_id) OR e.dst_type = $1 AND NOT EXISTS "
            f"(SELECT 1 FROM {table} x WHERE x.id = e.dst_id)", table)
        assert dangling == (0,), table
    # Both directions of every stored relation are present.
    asym = await conn.fetchrow(
        "SELECT count(*) FROM edge e JOIN edge_type t ON t.name = e.rel WHERE NOT EXISTS "
        "(SELECT 1 FROM edge r WHERE r.src_id = e.dst_id AND r.dst_id = e.src_id AND r.rel = t.inverse)")
    assert asym == (0,)


async def test_the_graph_uses_every_stored_edge_type(demo: IngestReport, conn: Conn) -> None:
    used = {r[0] for r in await conn.fetch("SELECT DISTINCT rel FROM edge")}
    assert used == set(STORED_EDGE_TYPES)


async def test_ids_are_uuid5_of_natural_keys(demo: IngestReport, conn: Conn) -> None:
    row = await conn.fetchrow("SELECT id::text FROM character WHERE key = 'monkey-d-luffy'")
    assert row == (str(entity_id("character", "monkey-d-luffy")),)


async def test_qdrant_holds_one_collection_per_type_with_payloads(demo: IngestReport, conn: Conn,
                                                                  settings: Settings, qdrant: VectorStore) -> None:
    client = qdrant
    for entity_type in ENTITY_TYPES:
        name = collection_name(settings, entity_type)
        assert client.count(name).count == await _count(conn, entity_type), entity_type
    luffy = str(entity_id("character", "monkey-d-luffy"))
    (point,) = client.retrieve(collection_name(settings, "character"), [luffy], with_vectors=True)
    payload = point.payload or {}
    assert payload["id"] == luffy and payload["type"] == "character" and payload["name"] == "Monkey D. Luffy"
    assert str(entity_id("anime", "one-piece")) in payload["anime_ids"]
    assert len(point.vector) == 384  # type: ignore[arg-type]
    anime = client.retrieve(collection_name(settings, "anime"), [str(entity_id("anime", "one-piece"))])[0]
    assert anime.payload and anime.payload["year"] == 1999 and anime.payload["franchise_id"]


async def test_semantic_search_finds_the_described_entity(demo: IngestReport, settings: Settings,
                                                          embedder: Embedder, qdrant: VectorStore) -> None:
    client = qdrant
    vec = embedder.embed(["the rubber-bodied captain of the Straw Hat Pirates"])[0]
    hits = client.query_points(collection_name(settings, "character"), query=vec.tolist(), limit=3).points
    assert hits[0].payload and hits[0].payload["name"] == "Monkey D. Luffy"
    # a structured filter compiles to Qdrant and narrows to one anime's episodes
    one_piece = str(entity_id("anime", "one-piece"))
    flt = models.Filter(must=[models.FieldCondition(key="anime_id", match=models.MatchValue(value=one_piece))])
    eps = client.query_points(collection_name(settings, "episode"), query=vec.tolist(), query_filter=flt,
                              limit=5).points
    assert eps and all(p.payload and p.payload["anime_id"] == one_piece for p in eps)


def test_embeddings_are_384_dimensional_unit_vectors_and_semantic(embedder: Embedder) -> None:
    v = embedder.embed(["Which anime is Luffy in?", "In which anime does Luffy appear?",
                        "How do I bake sourdough bread?"])
    assert v.shape == (3, 384)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.3


async def test_reindex_rebuilds_qdrant_from_postgres_alone(demo: IngestReport, dsn: str, settings: Settings,
                                                            conn: Conn, embedder: Embedder,
                                                            qdrant: VectorStore) -> None:
    qdrant.delete_collection(collection_name(settings, "anime"))
    changes, _ = await index_catalog(dsn, settings, rebuild=True, embedder=embedder, client=qdrant)
    for entity_type, change in changes.items():
        assert change.upserted == await _count(conn, entity_type), entity_type


@pytest.fixture
def broken_data(tmp_path: Path) -> Path:
    shutil.copytree(DATA_DIR, tmp_path / "data")
    return tmp_path / "data"


async def test_a_broken_reference_names_file_and_record_and_changes_nothing(
    demo: IngestReport, broken_data: Path, dsn: str, settings: Settings, conn: Conn
) -> None:
    f = broken_data / "one_piece.yaml"
    f.write_text(f.read_text().replace("- {to: roronoa-zoro,", "- {to: no-such-character,", 1))
    before = await _snapshot(conn)
    with pytest.raises(CatalogError, match=r"one_piece\.yaml: character '[a-z-]+' references unknown "
                                           r"character 'no-such-character'"):
        await ingest_demo(dsn, settings, data_dir=broken_data, index=False)
    assert await _snapshot(conn) == before


async def test_a_malformed_record_names_file_and_record(broken_data: Path, dsn: str, settings: Settings) -> None:
    f = broken_data / "death_note.yaml"
    f.write_text(f.read_text().replace("format: tv", "format: radio_drama", 1))
    with pytest.raises(CatalogError, match=r"death_note\.yaml: record anime\[0\] \(death-note\): format: Input"):
        await ingest_demo(dsn, settings, data_dir=broken_data, index=False)
    f.write_text("anime: [unclosed")
    with pytest.raises(CatalogError, match=r"death_note\.yaml: not valid YAML"):
        await ingest_demo(dsn, settings, data_dir=broken_data, index=False)


async def test_a_database_failure_mid_load_rolls_everything_back(demo: IngestReport, dsn: str, conn: Conn) -> None:
    rows = demo_rows(load_catalog())
    rows["franchise"] = [(*rows["franchise"][0][:3], "Renamed", *rows["franchise"][0][4:]), *rows["franchise"][1:]]
    ghost = str(entity_id("anime", "ghost"))
    rows["anime_studio"] = [*rows["anime_studio"], (ghost, rows["studio"][0][0], "demo")]  # FK violation
    before = await _snapshot(conn)
    c = await connect(dsn)
    try:
        with pytest.raises(CatalogError, match="loading table anime_studio failed, nothing was changed"):
            await load_rows(c, rows, "demo")
    finally:
        await c.close()
    assert await _snapshot(conn) == before
    names = await conn.fetchrow("SELECT count(*) FROM franchise WHERE name = 'Renamed'")
    assert names == (0,)

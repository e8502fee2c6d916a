"""Each point's document is built in Python from its entity's record (catalog/index.py ``DOCUMENTS``); its text
is, byte for byte, the one the index built in SQL before (kept here, the reference, as it was), so no point is
re-embedded for the move and no search changes. The payload keeps every field it had and adds the facts the
writer reads (studios, authors, magazine, works, founded, native names, where the description starts)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import pytest
from qdrant_client import models

from agentic_rag.catalog.index import DOCUMENTS, RECORD_FIELDS, RECORD_SQL, TEXT_IN_PAYLOAD, _hash, sync_index
from agentic_rag.catalog.ingest import IngestReport
from agentic_rag.catalog.synthetic import load_synthetic
from agentic_rag.models.embeddings import Embedder
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import connect, migrate
from agentic_rag.storage.qdrant import VectorStore, collection_name
from agentic_rag.storage.sql import Conn

pytestmark = pytest.mark.integration

# The index's documents as catalog/index.py built them in SQL until they were built from records.
OLD_DOCUMENT_SQL: dict[str, str] = {
    "anime": """
        SELECT a.id::text, jsonb_build_object('id', a.id, 'type', 'anime', 'name', a.title, 'aliases', a.aliases,
                 'year', a.year, 'format', a.format, 'genres', to_jsonb(a.genres), 'franchise_id', a.franchise_id,
                 'popularity', a.popularity),
               concat_ws('. ', a.title,
                 nullif(array_to_string(a.aliases || ARRAY[a.title_native, a.title_romaji], ', '), ''),
                 upper(a.format) || ' anime from ' || a.year, 'Studio: ' || s.names,
                 'Genres: ' || nullif(array_to_string(a.genres, ', '), ''), a.synopsis)
        FROM anime a
        LEFT JOIN LATERAL (SELECT string_agg(st.name, ', ' ORDER BY st.name) AS names FROM anime_studio x
                           JOIN studio st ON st.id = x.studio_id WHERE x.anime_id = a.id) s ON true
        ORDER BY a.id""",
    "manga": """
        SELECT m.id::text, jsonb_build_object('id', m.id, 'type', 'manga', 'name', m.title, 'aliases', m.aliases,
                 'year', m.year, 'genres', to_jsonb(m.genres), 'franchise_id', m.franchise_id,
                 'popularity', m.popularity),
               concat_ws('. ', m.title,
                 nullif(array_to_string(m.aliases || ARRAY[m.title_native, m.title_romaji], ', '), ''),
                 'Manga from ' || m.year || coalesce(' by ' || p.names, ''), 'Serialized in ' || m.magazine,
                 'Genres: ' || nullif(array_to_string(m.genres, ', '), ''), m.synopsis)
        FROM manga m
        LEFT JOIN LATERAL (SELECT string_agg(DISTINCT pe.name, ', ') AS names FROM manga_author x
                           JOIN person pe ON pe.id = x.person_id WHERE x.manga_id = m.id) p ON true
        ORDER BY m.id""",
    "character": """
        SELECT c.id::text, jsonb_build_object('id', c.id, 'type', 'character', 'name', c.name, 'aliases', c.aliases,
                 'anime_ids', coalesce(w.ids, '[]'::jsonb), 'popularity', c.popularity),
               concat_ws('. ', c.name, nullif(array_to_string(c.aliases || ARRAY[c.name_native], ', '), ''),
                 'Character in ' || w.titles, c.description)
        FROM character c
        LEFT JOIN LATERAL (SELECT jsonb_agg(t.id ORDER BY t.year, t.id) AS ids,
                                  string_agg(t.title, ', ' ORDER BY t.year, t.id) AS titles FROM (
                             SELECT a.id, a.title, a.year FROM anime_character x JOIN anime a ON a.id = x.anime_id
                             WHERE x.character_id = c.id ORDER BY a.year, a.id LIMIT 20) t) w ON true
        ORDER BY c.id""",
    "episode": """
        SELECT e.id::text, jsonb_build_object('id', e.id, 'type', 'episode',
                 'name', coalesce(e.title, a.title || ' episode ' || e.number), 'anime_id', e.anime_id,
                 'number', e.number, 'year', a.year),
               concat_ws(': ', a.title || ' episode ' || e.number, e.title)
        FROM episode e JOIN anime a ON a.id = e.anime_id
        ORDER BY e.id""",
    "franchise": """
        SELECT f.id::text, jsonb_build_object('id', f.id, 'type', 'franchise', 'name', f.name,
                 'popularity', f.popularity),
               concat_ws('. ', f.name || ' franchise', f.description)
        FROM franchise f ORDER BY f.id""",
    "studio": """
        SELECT s.id::text, jsonb_build_object('id', s.id, 'type', 'studio', 'name', s.name, 'year', s.founded,
                 'popularity', s.popularity),
               concat_ws('. ', s.name, 'Animation studio' || coalesce(', founded ' || s.founded, ''),
                 'Animated ' || w.titles)
        FROM studio s
        LEFT JOIN LATERAL (SELECT string_agg(t.title, ', ') AS titles FROM (
                             SELECT a.title FROM anime_studio x JOIN anime a ON a.id = x.anime_id
                             WHERE x.studio_id = s.id ORDER BY a.popularity DESC, a.id LIMIT 20) t) w ON true
        ORDER BY s.id""",
    "person": """
        SELECT p.id::text, jsonb_build_object('id', p.id, 'type', 'person', 'name', p.name, 'aliases', p.aliases,
                 'popularity', p.popularity),
               concat_ws('. ', p.name, nullif(array_to_string(p.aliases || ARRAY[p.native_name], ', '), ''),
                 'Credited on ' || w.titles)
        FROM person p
        LEFT JOIN LATERAL (SELECT string_agg(t.title, ', ') AS titles FROM (
                             SELECT DISTINCT ON (title) title, popularity FROM (
                               SELECT a.title, a.popularity FROM anime_staff x JOIN anime a ON a.id = x.anime_id
                                WHERE x.person_id = p.id
                               UNION ALL
                               SELECT m.title, m.popularity FROM manga_author x JOIN manga m ON m.id = x.manga_id
                                WHERE x.person_id = p.id) c
                             ORDER BY title, popularity DESC LIMIT 20) t) w ON true
        ORDER BY p.id""",
}


async def _differences(conn: Conn) -> tuple[int, list[str]]:
    """How many entities were compared, and each whose text or old payload fields differ."""
    n, out = 0, []
    for entity_type, query in RECORD_SQL.items():
        old = {r[0]: (r[1], r[2]) for r in await conn.fetch(OLD_DOCUMENT_SQL[entity_type])}
        new = {d.id: d for d in (DOCUMENTS[entity_type](dict(r)) for r in await conn.fetch(query))}
        assert new.keys() == old.keys(), entity_type
        for pid, (payload, text) in old.items():
            n += 1
            doc = new[pid]
            if doc.text != text or {k: doc.payload.get(k) for k in payload} != payload:
                out.append(f"{entity_type} {pid}: {text!r} != {doc.text!r} or {payload} != {doc.payload}")
            about = doc.payload["about_at"]
            if about is not None and doc.about is not None:
                assert doc.text[about:] == doc.about, pid
    return n, out


async def test_every_demo_document_is_the_one_sql_built(demo: IngestReport, conn: Conn) -> None:
    n, differ = await _differences(conn)
    assert n > 1000
    assert differ == []


async def test_every_synthetic_document_is_the_one_sql_built(
        scratch: Callable[[str], AbstractContextManager[str]]) -> None:
    with scratch("agentic_rag_documents_test") as dsn:
        await migrate(dsn)
        await load_synthetic(dsn, 400, 3)
        conn = await connect(dsn)
        try:
            n, differ = await _differences(conn)
        finally:
            await conn.close()
    assert n >= 400
    assert differ == []


async def test_a_payload_only_change_keeps_the_stored_vector(demo: IngestReport, dsn: str, settings: Settings,
                                                             embedder: Embedder, qdrant: VectorStore) -> None:
    name = collection_name(settings, "studio")
    (point,) = qdrant.scroll(name, limit=1, with_payload=True, with_vectors=True)[0]
    payload = point.payload or {}
    stale = {**payload, "_hash": "stale", "works": []}  # as if the payload had changed, the text not
    qdrant.upsert(name, [models.PointStruct(id=point.id, vector=point.vector, payload=stale)], wait=True)  # type: ignore[arg-type]
    change = (await sync_index(dsn, qdrant, embedder, settings))["studio"]
    assert (change.upserted, change.embedded) == (1, 0)
    (back,) = qdrant.retrieve(name, [point.id], with_payload=True, with_vectors=True)
    assert back.payload == payload and back.vector == point.vector
    # a text that changed is embedded again
    qdrant.upsert(name, [models.PointStruct(id=point.id, vector=point.vector,  # type: ignore[arg-type]
                                            payload={**stale, "_text_hash": "stale"})], wait=True)
    change = (await sync_index(dsn, qdrant, embedder, settings))["studio"]
    assert (change.upserted, change.embedded) == (1, 1)


async def test_a_point_written_before_record_fields_keeps_its_vector(demo: IngestReport, dsn: str, conn: Conn,
                                                                     settings: Settings, embedder: Embedder,
                                                                     qdrant: VectorStore) -> None:
    """A point as the version before wrote it (its payload without the record fields, its ``_hash`` over text and
    that payload, no ``_text_hash``) is upgraded without embedding its text again: an index built before the move
    is not re-embedded whole."""
    name = collection_name(settings, "anime")
    (point,) = qdrant.scroll(name, limit=1, with_payload=True, with_vectors=True)[0]
    payload = point.payload or {}
    old_payload, text = next((r[1], r[2]) for r in await conn.fetch(OLD_DOCUMENT_SQL["anime"]) if r[0] == point.id)
    assert not RECORD_FIELDS & old_payload.keys()
    legacy = {**old_payload, "text": text[:TEXT_IN_PAYLOAD], "_hash": _hash(text, old_payload, embedder.model_name)}
    qdrant.upsert(name, [models.PointStruct(id=point.id, vector=point.vector, payload=legacy)], wait=True)  # type: ignore[arg-type]
    change = (await sync_index(dsn, qdrant, embedder, settings))["anime"]
    assert (change.upserted, change.embedded) == (1, 0)
    (back,) = qdrant.retrieve(name, [point.id], with_payload=True, with_vectors=True)
    assert back.payload == payload and back.vector == point.vector

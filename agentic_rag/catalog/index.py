"""Building the Qdrant index from PostgreSQL alone: one collection per entity type.

Each point is one entity: its id is the entity's uuid, its vector embeds a short description
(name, aliases, what it is, synopsis), its payload carries the id, type, name, year and parent
ids for filtering. A hash of text, payload and model is stored with the point, so a sync embeds
only what changed and a second run does nothing.

With an image model (``RAG_IMAGE_MODEL``) each collection also has an ``image`` vector, set on the points of
entities that have an image (:mod:`agentic_rag.catalog.images`), which a sync re-embeds only when the image
changed; a point rewritten for its text keeps its stored image vector. Without one, nothing of it exists.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from qdrant_client import models

from agentic_rag.catalog.images import ImageIndexer, WantedImage
from agentic_rag.models.embeddings import Embedder
from agentic_rag.models.image_embeddings import ImageEmbedder
from agentic_rag.protocol.vocabulary import ENTITY_TYPES
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import connect
from agentic_rag.storage.qdrant import (
    IMAGE_VECTOR,
    VectorStore,
    collection_name,
    drop_collections,
    ensure_collections,
)

log = logging.getLogger(__name__)

# One fixed query per entity type: (id, payload, text). Built in SQL so the same documents come out
# whichever process rebuilds the index.
DOCUMENT_SQL: dict[str, str] = {
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
TEXT_IN_PAYLOAD = 400  # the start of the embedded text, shown in search summaries
HASH_CHARS = 32  # hex digits of a point's content hash (128 bits: a changed text or payload re-embeds it)
COUNT_SQL = {t: f"SELECT count(*) FROM {t}" for t in ENTITY_TYPES}  # noqa: S608  fixed table names


@dataclass(slots=True)
class IndexChange:
    """What a sync did to one collection."""

    upserted: int = 0
    deleted: int = 0
    unchanged: int = 0
    embed_seconds: float = 0.0
    images: int = 0  # image vectors embedded
    image_errors: list[str] = field(default_factory=list)  # "<entity id>: why", one per bad image, skipped


Progress = Callable[[str, int, int], None]  # (entity type, points done now, total)
Stored = tuple[str, str | None]  # a point's text hash and image key (None: no image vector)


def _existing_hashes(client: VectorStore, collection: str) -> dict[str, Stored]:
    out: dict[str, Stored] = {}
    offset = None
    while True:
        points, offset = client.scroll(collection, limit=2048, offset=offset, with_payload=["_hash", "_image"],
                                       with_vectors=False)
        for p in points:
            payload = p.payload or {}
            image = payload.get("_image")
            out[str(p.id)] = (str(payload.get("_hash", "")), None if image is None else str(image))
        if offset is None:
            return out


def _hash(text: str, payload: dict[str, Any], model: str) -> str:
    blob = json.dumps([text, payload, model], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:HASH_CHARS]


async def sync_index(
    dsn: str,
    client: VectorStore,
    embedder: Embedder,
    settings: Settings,
    *,
    rebuild: bool = False,
    progress: Progress | None = None,
    image_embedder: ImageEmbedder | None = None,
) -> dict[str, IndexChange]:
    """Make every collection mirror its PostgreSQL table. ``rebuild`` drops the collections first.

    With ``settings.image_model`` the entities' images are embedded too (by ``image_embedder``, or one built
    from the settings)."""
    import time

    images = None
    if settings.image_model is not None:
        images = ImageIndexer(image_embedder or ImageEmbedder(settings), settings)
    dim = await asyncio.to_thread(lambda: embedder.dimension)
    image_dim = None if images is None else await asyncio.to_thread(lambda: images.dimension)
    if rebuild:
        await asyncio.to_thread(drop_collections, client, settings)
    await asyncio.to_thread(ensure_collections, client, settings, dim, image_dim)
    report: dict[str, IndexChange] = {}
    batch = settings.ingest_batch_size
    conn = await connect(dsn)
    try:
        for entity_type in ENTITY_TYPES:
            name = collection_name(settings, entity_type)
            change = report[entity_type] = IndexChange()
            existing = await asyncio.to_thread(_existing_hashes, client, name)
            total = int(await conn.fetchval(COUNT_SQL[entity_type]) or 0)
            locations = {} if images is None else await images.locations(conn, entity_type)
            seen: set[str] = set()
            async with conn.transaction():  # a server-side cursor lives in a transaction
                cur = await conn.cursor(DOCUMENT_SQL[entity_type])
                while rows := await cur.fetch(batch):
                    seen.update(pid for pid, _, _ in rows)
                    t0 = time.perf_counter()
                    points = await _changed_points(rows, existing, embedder, images, locations, client, name, change)
                    change.embed_seconds += time.perf_counter() - t0
                    if points:
                        await asyncio.to_thread(client.upsert, name, points, wait=True)
                        change.upserted += len(points)
                    if progress:
                        progress(entity_type, len(rows), total)
            stale = [pid for pid in existing if pid not in seen]
            if stale:
                await asyncio.to_thread(
                    client.delete, name, models.PointIdsList(points=stale), wait=True
                )
            change.deleted = len(stale)
    finally:
        await conn.close()
    return report


async def _changed_points(rows: list[Any], existing: dict[str, Stored], embedder: Embedder,
                          images: ImageIndexer | None, locations: dict[str, str], client: VectorStore, name: str,
                          change: IndexChange) -> list[models.PointStruct]:
    """The points of ``rows`` whose text or image changed, embedded; the unchanged ones are counted in ``change``.

    Without ``images`` a point is its text vector alone, as it always was. With it, a point is the named
    vectors: the text's (``""``) and, when its entity has a readable image, ``image``."""
    wanted: dict[str, WantedImage] = {}
    if images is not None:
        wanted = await images.wanted({pid: locations[pid] for pid, _, _ in rows if pid in locations})
    bad = {pid: w.error for pid, w in wanted.items() if w.error is not None}
    todo: list[tuple[str, dict[str, Any], str, str, WantedImage | None]] = []
    for pid, payload, text in rows:
        h = _hash(text, payload, embedder.model_name)
        want = wanted.get(pid)
        if existing.get(pid) == (h, want.key if want else None):
            change.unchanged += 1
        else:
            todo.append((pid, payload, text, h, want))
    image_vectors: dict[str, list[float]] = {}
    if images is not None and todo:
        # a point rewritten for its text keeps the image vector it has; only a changed image is embedded
        kept = [pid for pid, _, _, _, w in todo if w and w.key and existing.get(pid, ("", None))[1] == w.key]
        image_vectors = await asyncio.to_thread(_stored_image_vectors, client, name, kept)
        fresh = {pid: w for pid, _, _, _, w in todo if w and w.key and pid not in image_vectors}
        vectors, failed = await images.embed(fresh)
        image_vectors.update(vectors)
        change.images += len(vectors)
        bad.update(failed)
    for pid, error in bad.items():
        log.warning("image of %s (%s) skipped: %s", pid, wanted[pid].location, error)
        change.image_errors.append(f"{pid}: {error}")
    writes = []
    for pid, payload, text, h, want in todo:
        key = want.key if want and pid in image_vectors else None
        if existing.get(pid) == (h, key):  # only an image that failed again: nothing to write
            change.unchanged += 1
            continue
        stored = {**payload, "text": text[:TEXT_IN_PAYLOAD], "_hash": h, **({"_image": key} if key else {})}
        writes.append((pid, stored, text, key))
    if not writes:
        return []
    texts = await embedder.aembed([t for _, _, t, _ in writes])
    points = []
    for (pid, stored, _, key), vec in zip(writes, texts, strict=True):
        vector: Any = vec.tolist()
        if images is not None:
            vector = {"": vector, **({IMAGE_VECTOR: image_vectors[pid]} if key else {})}
        points.append(models.PointStruct(id=pid, vector=vector, payload=stored))
    return points


def _stored_image_vectors(client: VectorStore, name: str, ids: list[str]) -> dict[str, list[float]]:
    if not ids:
        return {}
    out = {}
    for record in client.retrieve(name, ids, with_payload=False, with_vectors=True):
        vector = record.vector.get(IMAGE_VECTOR) if isinstance(record.vector, dict) else None
        if isinstance(vector, list):
            out[str(record.id)] = [float(x) for x in vector]  # type: ignore[arg-type]  # a dense vector
    return out

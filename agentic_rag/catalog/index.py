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
from collections.abc import Callable, Mapping
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

# One fixed query per entity type: the entity's own fields and the names of what it is linked to, lists as
# arrays in the order its document lists them. :data:`DOCUMENTS` builds the point from such a row.
RECORD_SQL: dict[str, str] = {
    "anime": """
        SELECT a.id::text AS id, a.title, a.aliases, a.title_native, a.title_romaji, a.year, a.format, a.genres,
               a.franchise_id::text AS franchise_id, a.popularity, a.synopsis, coalesce(s.names, '{}') AS studios,
               a.status, a.episode_count
        FROM anime a
        LEFT JOIN LATERAL (SELECT array_agg(st.name ORDER BY st.name) AS names FROM anime_studio x
                           JOIN studio st ON st.id = x.studio_id WHERE x.anime_id = a.id) s ON true
        ORDER BY a.id""",
    "manga": """
        SELECT m.id::text AS id, m.title, m.aliases, m.title_native, m.title_romaji, m.year, m.magazine, m.genres,
               m.franchise_id::text AS franchise_id, m.popularity, m.synopsis, coalesce(p.names, '{}') AS authors,
               m.status, m.volumes
        FROM manga m
        LEFT JOIN LATERAL (SELECT array_agg(DISTINCT pe.name ORDER BY pe.name) AS names FROM manga_author x
                           JOIN person pe ON pe.id = x.person_id WHERE x.manga_id = m.id) p ON true
        ORDER BY m.id""",
    "character": """
        SELECT c.id::text AS id, c.name, c.aliases, c.name_native, c.popularity, c.description,
               coalesce(w.ids, '{}') AS anime_ids, coalesce(w.titles, '{}') AS works
        FROM character c
        LEFT JOIN LATERAL (SELECT array_agg(t.id::text ORDER BY t.year, t.id) AS ids,
                                  array_agg(t.title ORDER BY t.year, t.id) AS titles FROM (
                             SELECT a.id, a.title, a.year FROM anime_character x JOIN anime a ON a.id = x.anime_id
                             WHERE x.character_id = c.id ORDER BY a.year, a.id LIMIT 20) t) w ON true
        ORDER BY c.id""",
    "episode": """
        SELECT e.id::text AS id, e.title, e.anime_id::text AS anime_id, e.number, a.title AS anime, a.year
        FROM episode e JOIN anime a ON a.id = e.anime_id
        ORDER BY e.id""",
    "franchise": """
        SELECT f.id::text AS id, f.name, f.popularity, f.description FROM franchise f ORDER BY f.id""",
    "studio": """
        SELECT s.id::text AS id, s.name, s.founded, s.popularity, coalesce(w.titles, '{}') AS works
        FROM studio s
        LEFT JOIN LATERAL (SELECT array_agg(t.title ORDER BY t.popularity DESC, t.id) AS titles FROM (
                             SELECT a.title, a.popularity, a.id FROM anime_studio x JOIN anime a ON a.id = x.anime_id
                             WHERE x.studio_id = s.id ORDER BY a.popularity DESC, a.id LIMIT 20) t) w ON true
        ORDER BY s.id""",
    "person": """
        SELECT p.id::text AS id, p.name, p.aliases, p.native_name, p.popularity, coalesce(w.titles, '{}') AS works
        FROM person p
        LEFT JOIN LATERAL (SELECT array_agg(t.title ORDER BY t.title) AS titles FROM (
                             SELECT DISTINCT ON (title) title, popularity FROM (
                               SELECT a.title, a.popularity FROM anime_staff x JOIN anime a ON a.id = x.anime_id
                                WHERE x.person_id = p.id
                               UNION ALL
                               SELECT m.title, m.popularity FROM manga_author x JOIN manga m ON m.id = x.manga_id
                                WHERE x.person_id = p.id) c
                             ORDER BY title, popularity DESC LIMIT 20) t) w ON true
        ORDER BY p.id""",
}


@dataclass(frozen=True, slots=True)
class Document:
    """One point as it is built from its entity's record: the payload and the embedded text.

    ``head`` is the text's first sentences (name, other names, what it is, what it is linked to); the entity's
    own description (synopsis) follows them, and the payload's ``about_at`` says where (``None``: none)."""

    id: str
    payload: dict[str, Any]
    head: list[str]
    about: str | None = None

    @property
    def text(self) -> str:
        return ". ".join([*self.head, *([] if self.about is None else [self.about])])


Record = Mapping[str, Any]  # a row of RECORD_SQL


def _names(*names: Any) -> list[str]:
    return [str(n) for n in names if n is not None]


def _listed(label: str, items: list[str] | None) -> str | None:
    """``"Genres: action, drama"``; ``None`` (the sentence is left out) for no items."""
    said = ", ".join(i for i in items or [] if i is not None)
    return f"{label}{said}" if said else None


def _document(pid: str, payload: dict[str, Any], *head: str | None, about: str | None = None) -> Document:
    sentences = [h for h in head if h is not None]
    payload["about_at"] = None if about is None else len(". ".join([*sentences, ""]))
    return Document(pid, payload, sentences, about)


def _anime(r: Record) -> Document:
    native = _names(r["title_native"], r["title_romaji"])
    kind = None if r["format"] is None or r["year"] is None else f"{r['format'].upper()} anime from {r['year']}"
    payload = {"id": r["id"], "type": "anime", "name": r["title"], "aliases": r["aliases"], "year": r["year"],
               "format": r["format"], "genres": r["genres"], "franchise_id": r["franchise_id"],
               "popularity": r["popularity"], "studios": list(r["studios"]), "native_names": native,
               "status": r["status"], "episode_count": r["episode_count"]}
    return _document(r["id"], payload, r["title"], _listed("", [*(r["aliases"] or []), *native]), kind,
                     _listed("Studio: ", r["studios"]), _listed("Genres: ", r["genres"]), about=r["synopsis"])


def _manga(r: Record) -> Document:
    native = _names(r["title_native"], r["title_romaji"])
    kind = None if r["year"] is None else f"Manga from {r['year']}" + (_listed(" by ", r["authors"]) or "")
    serialized = None if r["magazine"] is None else f"Serialized in {r['magazine']}"
    payload = {"id": r["id"], "type": "manga", "name": r["title"], "aliases": r["aliases"], "year": r["year"],
               "genres": r["genres"], "franchise_id": r["franchise_id"], "popularity": r["popularity"],
               "authors": list(r["authors"]), "magazine": r["magazine"], "native_names": native,
               "status": r["status"], "volumes": r["volumes"]}
    return _document(r["id"], payload, r["title"], _listed("", [*(r["aliases"] or []), *native]), kind, serialized,
                     _listed("Genres: ", r["genres"]), about=r["synopsis"])


def _character(r: Record) -> Document:
    native = _names(r["name_native"])
    payload = {"id": r["id"], "type": "character", "name": r["name"], "aliases": r["aliases"],
               "anime_ids": list(r["anime_ids"]), "popularity": r["popularity"], "works": list(r["works"]),
               "native_names": native}
    return _document(r["id"], payload, r["name"], _listed("", [*(r["aliases"] or []), *native]),
                     _listed("Character in ", r["works"]), about=r["description"])


def _episode(r: Record) -> Document:
    said = None if r["anime"] is None or r["number"] is None else f"{r['anime']} episode {r['number']}"
    payload = {"id": r["id"], "type": "episode", "name": r["title"] if r["title"] is not None else said,
               "anime_id": r["anime_id"], "number": r["number"], "year": r["year"]}
    # one line, not sentences ("Frieren: Beyond Journey's End episode 3: Killing Magic"), which is what a titled
    # episode is about; an untitled one's line is its name
    line = ": ".join(x for x in (said, r["title"]) if x is not None)
    return _document(r["id"], payload, about=line) if r["title"] is not None else _document(r["id"], payload, line)


def _franchise(r: Record) -> Document:
    payload = {"id": r["id"], "type": "franchise", "name": r["name"], "popularity": r["popularity"]}
    return _document(r["id"], payload, None if r["name"] is None else f"{r['name']} franchise",
                     about=r["description"])


def _studio(r: Record) -> Document:
    founded = "" if r["founded"] is None else f", founded {r['founded']}"
    payload = {"id": r["id"], "type": "studio", "name": r["name"], "year": r["founded"], "founded": r["founded"],
               "popularity": r["popularity"], "works": list(r["works"])}
    return _document(r["id"], payload, r["name"], f"Animation studio{founded}", _listed("Animated ", r["works"]))


def _person(r: Record) -> Document:
    native = _names(r["native_name"])
    payload = {"id": r["id"], "type": "person", "name": r["name"], "aliases": r["aliases"],
               "popularity": r["popularity"], "works": list(r["works"]), "native_names": native}
    return _document(r["id"], payload, r["name"], _listed("", [*(r["aliases"] or []), *native]),
                     _listed("Credited on ", r["works"]))


# per entity type: its record -> its point (the document's wording lives here, next to its fields)
DOCUMENTS: dict[str, Callable[[Record], Document]] = {
    "anime": _anime, "manga": _manga, "character": _character, "episode": _episode, "franchise": _franchise,
    "studio": _studio, "person": _person,
}
# the embedded text as the payload keeps it: whole up to this many characters (search summaries show its first 400;
# an explanation quotes the description after the head, which a character of six works pushes past 400)
TEXT_IN_PAYLOAD = 2000
HASH_CHARS = 32  # hex digits of a point's content hash (128 bits: a changed text or payload re-embeds it)
COUNT_SQL = {t: f"SELECT count(*) FROM {t}" for t in ENTITY_TYPES}  # noqa: S608  fixed table names


@dataclass(slots=True)
class IndexChange:
    """What a sync did to one collection."""

    upserted: int = 0
    embedded: int = 0  # of the upserted, those whose text was embedded (the others kept their stored vector)
    deleted: int = 0
    unchanged: int = 0
    embed_seconds: float = 0.0
    images: int = 0  # image vectors embedded
    image_errors: list[str] = field(default_factory=list)  # "<entity id>: why", one per bad image, skipped


Progress = Callable[[str, int, int], None]  # (entity type, points done now, total)


@dataclass(frozen=True, slots=True)
class Stored:
    """What a sync reads back of a stored point: its content hash, its text's hash (``""`` on a point written
    before points kept it) and its image key (``None``: no image vector)."""

    hash: str
    text_hash: str
    image: str | None


def _existing_hashes(client: VectorStore, collection: str) -> dict[str, Stored]:
    out: dict[str, Stored] = {}
    offset = None
    while True:
        points, offset = client.scroll(collection, limit=2048, offset=offset,
                                       with_payload=["_hash", "_text_hash", "_image"], with_vectors=False)
        for p in points:
            payload = p.payload or {}
            image = payload.get("_image")
            out[str(p.id)] = Stored(str(payload.get("_hash", "")), str(payload.get("_text_hash", "")),
                                    None if image is None else str(image))
        if offset is None:
            return out


def _hash(text: str, payload: dict[str, Any], model: str) -> str:
    blob = json.dumps([text, payload, model], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:HASH_CHARS]


# payload fields a point has had since its document was built from records (issue 36; the status and length a
# recommendation filters on since issue 37): a point written before
# them hashed the rest, so its text is recognised by that hash and its vector kept (no re-embedding on upgrade)
RECORD_FIELDS = frozenset(("studios", "authors", "magazine", "works", "founded", "native_names", "about_at", "status",
                           "episode_count", "volumes"))


def _same_text(stored: Stored, doc: Document, model: str, text_hash: str) -> bool:
    """Whether the stored point's vector embeds ``doc``'s text (a point of an earlier version: by its old hash)."""
    if stored.text_hash:
        return stored.text_hash == text_hash
    legacy = {k: v for k, v in doc.payload.items() if k not in RECORD_FIELDS}
    return bool(stored.hash) and stored.hash == _hash(doc.text, legacy, model)


def _text_hash(text: str, model: str) -> str:
    """What the text vector depends on: a point whose payload alone changed keeps its vector."""
    return hashlib.sha256(json.dumps([text, model], ensure_ascii=False).encode()).hexdigest()[:HASH_CHARS]


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
                cur = await conn.cursor(RECORD_SQL[entity_type])
                while records := await cur.fetch(batch):
                    docs = [DOCUMENTS[entity_type](dict(r)) for r in records]
                    seen.update(d.id for d in docs)
                    t0 = time.perf_counter()
                    points = await _changed_points(docs, existing, embedder, images, locations, client, name, change)
                    change.embed_seconds += time.perf_counter() - t0
                    if points:
                        await asyncio.to_thread(client.upsert, name, points, wait=True)
                        change.upserted += len(points)
                    if progress:
                        progress(entity_type, len(docs), total)
            stale = [pid for pid in existing if pid not in seen]
            if stale:
                await asyncio.to_thread(
                    client.delete, name, models.PointIdsList(points=stale), wait=True
                )
            change.deleted = len(stale)
    finally:
        await conn.close()
    return report


async def _changed_points(docs: list[Document], existing: dict[str, Stored], embedder: Embedder,
                          images: ImageIndexer | None, locations: dict[str, str], client: VectorStore, name: str,
                          change: IndexChange) -> list[models.PointStruct]:
    """The points of ``docs`` whose text, payload or image changed; the unchanged ones are counted in ``change``.

    A changed text is embedded; a point whose text is the one its stored vector embeds (its payload alone
    changed) keeps that vector. Without ``images`` a point is its text vector alone, as it always was. With
    it, a point is the named vectors: the text's (``""``) and, when its entity has a readable image, ``image``."""
    model = embedder.model_name
    wanted: dict[str, WantedImage] = {}
    if images is not None:
        wanted = await images.wanted({d.id: locations[d.id] for d in docs if d.id in locations})
    bad = {pid: w.error for pid, w in wanted.items() if w.error is not None}
    none = Stored("", "", None)
    todo: list[tuple[Document, str, WantedImage | None]] = []
    for doc in docs:
        # the payload's text bound is hashed too: a point written under another bound is rewritten (its vector kept)
        h = _hash(doc.text, {**doc.payload, "_text_chars": TEXT_IN_PAYLOAD}, model)
        want = wanted.get(doc.id)
        stored = existing.get(doc.id, none)
        if (stored.hash, stored.image) == (h, want.key if want else None):
            change.unchanged += 1
        else:
            todo.append((doc, h, want))
    image_vectors: dict[str, list[float]] = {}
    if images is not None and todo:
        # a point rewritten for its text keeps the image vector it has; only a changed image is embedded
        kept = [d.id for d, _, w in todo if w and w.key and existing.get(d.id, none).image == w.key]
        image_vectors = await asyncio.to_thread(_stored_image_vectors, client, name, kept)
        fresh = {d.id: w for d, _, w in todo if w and w.key and d.id not in image_vectors}
        vectors, failed = await images.embed(fresh)
        image_vectors.update(vectors)
        change.images += len(vectors)
        bad.update(failed)
    for pid, error in bad.items():
        log.warning("image of %s (%s) skipped: %s", pid, wanted[pid].location, error)
        change.image_errors.append(f"{pid}: {error}")
    writes = []
    for doc, h, want in todo:
        key = want.key if want and doc.id in image_vectors else None
        stored = existing.get(doc.id, none)
        if (stored.hash, stored.image) == (h, key):  # only an image that failed again: nothing to write
            change.unchanged += 1
            continue
        th = _text_hash(doc.text, model)
        payload = {**doc.payload, "text": doc.text[:TEXT_IN_PAYLOAD], "_hash": h, "_text_hash": th,
                   **({"_image": key} if key else {})}
        writes.append((doc, payload, key, _same_text(stored, doc, model, th)))
    if not writes:
        return []
    text_vectors = await asyncio.to_thread(_stored_text_vectors, client, name, [d.id for d, _, _, same in writes
                                                                                if same])
    embed = [d for d, _, _, _ in writes if d.id not in text_vectors]
    if embed:
        for doc, vec in zip(embed, await embedder.aembed([d.text for d in embed]), strict=True):
            text_vectors[doc.id] = vec.tolist()
    change.embedded += len(embed)
    points = []
    for doc, payload, key, _ in writes:
        vector: Any = text_vectors[doc.id]
        if images is not None:
            vector = {"": vector, **({IMAGE_VECTOR: image_vectors[doc.id]} if key else {})}
        points.append(models.PointStruct(id=doc.id, vector=vector, payload=payload))
    return points


def _stored_text_vectors(client: VectorStore, name: str, ids: list[str]) -> dict[str, list[float]]:
    """The text vectors stored for ``ids`` (a point written with no text vector is left out: it is embedded)."""
    if not ids:
        return {}
    out = {}
    for record in client.retrieve(name, ids, with_payload=False, with_vectors=True):
        vector = record.vector.get("") if isinstance(record.vector, dict) else record.vector
        if isinstance(vector, list) and vector:
            out[str(record.id)] = [float(x) for x in vector]  # type: ignore[arg-type]  # a dense vector
    return out


def _stored_image_vectors(client: VectorStore, name: str, ids: list[str]) -> dict[str, list[float]]:
    if not ids:
        return {}
    out = {}
    for record in client.retrieve(name, ids, with_payload=False, with_vectors=True):
        vector = record.vector.get(IMAGE_VECTOR) if isinstance(record.vector, dict) else None
        if isinstance(vector, list):
            out[str(record.id)] = [float(x) for x in vector]  # type: ignore[arg-type]  # a dense vector
    return out

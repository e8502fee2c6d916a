"""Hydration: full records (or just display labels) for entity ids, one fixed query per entity type."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from agentic_rag.protocol import EntityRef
from agentic_rag.protocol.vocabulary import ENTITY_TYPES
from agentic_rag.storage.sql import Conn

# Full records: every column a client shows, plus the names of directly attached things.
RECORD_SQL: dict[str, str] = {
    "anime": """
        SELECT a.id::text, 'anime' AS entity_type, a.title AS name, a.title_native, a.title_romaji, a.aliases,
               a.format, a.year, a.end_year, a.episode_count, a.status, a.genres, a.popularity, a.synopsis,
               a.franchise_id::text,
               (SELECT array_agg(s.name ORDER BY s.name) FROM anime_studio x JOIN studio s ON s.id = x.studio_id
                 WHERE x.anime_id = a.id) AS studios
        FROM anime a WHERE a.id = ANY($1::uuid[])""",
    "manga": """
        SELECT m.id::text, 'manga' AS entity_type, m.title AS name, m.title_native, m.title_romaji, m.aliases,
               m.year, m.end_year, m.volumes, m.status, m.magazine, m.genres, m.popularity, m.synopsis,
               m.franchise_id::text,
               (SELECT array_agg(p.name || ' (' || x.role || ')' ORDER BY p.name) FROM manga_author x
                  JOIN person p ON p.id = x.person_id WHERE x.manga_id = m.id) AS authors
        FROM manga m WHERE m.id = ANY($1::uuid[])""",
    "character": """
        SELECT c.id::text, 'character' AS entity_type, c.name, c.name_native, c.aliases, c.description,
               c.popularity,
               (SELECT array_agg(a.title ORDER BY a.year) FROM anime_character x JOIN anime a ON a.id = x.anime_id
                 WHERE x.character_id = c.id) AS anime
        FROM character c WHERE c.id = ANY($1::uuid[])""",
    "episode": """
        SELECT e.id::text, 'episode' AS entity_type, coalesce(e.title, a.title || ' episode ' || e.number) AS name,
               e.title, e.number, e.season, e.aired, e.anime_id::text, a.title AS anime_title, a.year
        FROM episode e JOIN anime a ON a.id = e.anime_id WHERE e.id = ANY($1::uuid[])""",
    "franchise": """
        SELECT f.id::text, 'franchise' AS entity_type, f.name, f.description, f.popularity
        FROM franchise f WHERE f.id = ANY($1::uuid[])""",
    "studio": """
        SELECT s.id::text, 'studio' AS entity_type, s.name, s.founded AS year, s.popularity
        FROM studio s WHERE s.id = ANY($1::uuid[])""",
    "person": """
        SELECT p.id::text, 'person' AS entity_type, p.name, p.native_name, p.aliases, p.popularity
        FROM person p WHERE p.id = ANY($1::uuid[])""",
}
assert set(RECORD_SQL) == set(ENTITY_TYPES)

# Short labels for summaries: "One Piece (anime, 1999)".
LABEL_SQL: dict[str, str] = {
    "anime": "SELECT id::text, title, year FROM anime WHERE id = ANY($1::uuid[])",
    "manga": "SELECT id::text, title, year FROM manga WHERE id = ANY($1::uuid[])",
    "character": "SELECT id::text, name, NULL::int FROM character WHERE id = ANY($1::uuid[])",
    "episode": "SELECT e.id::text, a.title || ' episode ' || e.number || coalesce(': ' || e.title, ''), NULL::int"
               " FROM episode e JOIN anime a ON a.id = e.anime_id WHERE e.id = ANY($1::uuid[])",
    "franchise": "SELECT id::text, name, NULL::int FROM franchise WHERE id = ANY($1::uuid[])",
    "studio": "SELECT id::text, name, NULL::int FROM studio WHERE id = ANY($1::uuid[])",
    "person": "SELECT id::text, name, NULL::int FROM person WHERE id = ANY($1::uuid[])",
}
assert set(LABEL_SQL) == set(ENTITY_TYPES)

MAX_HYDRATE = 500


def _by_type(refs: Iterable[EntityRef]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for r in refs:
        if r.id not in out[r.entity_type]:
            out[r.entity_type].append(r.id)
    return out


async def hydrate(conn: Conn, refs: list[EntityRef]) -> list[dict[str, Any]]:
    """Full records for ``refs`` in the order given; unknown ids are left out. One query per type."""
    if len(refs) > MAX_HYDRATE:
        raise ValueError(f"at most {MAX_HYDRATE} entities per hydration call, got {len(refs)}")
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for entity_type, ids in _by_type(refs).items():
        for row in await conn.fetch(RECORD_SQL[entity_type], ids):
            found[(entity_type, row["id"])] = dict(row)
    return [found[(r.entity_type, r.id)] for r in refs if (r.entity_type, r.id) in found]


async def labels(conn: Conn, refs: Iterable[EntityRef]) -> dict[str, str]:
    """id -> "Name (type, year)" for every ref that exists. One query per type."""
    out: dict[str, str] = {}
    for entity_type, ids in _by_type(refs).items():
        for id_, name, year in await conn.fetch(LABEL_SQL[entity_type], ids):
            out[id_] = f"{name} ({entity_type}{', ' + str(year) if year else ''})"
    return out


async def exists(conn: Conn, ref: EntityRef) -> bool:
    return await conn.fetchrow(LABEL_SQL[ref.entity_type], [ref.id]) is not None

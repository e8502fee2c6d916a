"""The ``search`` lane: deterministic typeahead over every entity type, straight from PostgreSQL.

No model and no agent. Matches come in tiers (an exact name, then names starting with the text,
then fuzzy word matches for typos such as "Lufy"); within a tier, popularity first, then name.
Prefix matching starts at two characters; every tier reads a bounded slice of an index.
Names include aliases ("Luffy"), native ("ルフィ") and romanised titles; matching ignores case and
accents ("Konosuke" finds "Kōnosuke").
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

import psycopg
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from agentic_rag.catalog.vocabulary import ENTITY_TYPES, EntityType
from agentic_rag.protocol import EntityRef

MatchTier = Literal["exact", "prefix", "fuzzy"]
TypeaheadText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100)]


class TypeaheadQuery(BaseModel):
    """A typeahead request; bad input is rejected here with a clear message."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    q: TypeaheadText = Field(description="What the user typed.")
    types: list[EntityType] | None = Field(None, max_length=len(ENTITY_TYPES), description="Restrict to these types.")
    limit: int = Field(10, ge=1, le=50, description="Most results.")


class TypeaheadHit(BaseModel):
    """One entity found by typeahead."""

    model_config = ConfigDict(frozen=True)

    entity: EntityRef
    name: str = Field(description="The entity's primary name.")
    matched: str = Field(description="The name or alias that matched.")
    match: MatchTier
    popularity: int


_COLS = "n.entity_id::text, n.entity_type, n.name, n.popularity"
_TYPES = "(%(types)s::text[] IS NULL OR n.entity_type = ANY(%(types)s::text[]))"
NORMALISE_SQL = "SELECT lower(unaccent(%(q)s))"
EXACT_SQL = f"SELECT {_COLS} FROM entity_name n WHERE n.norm = %(norm)s AND {_TYPES}"  # noqa: S608


def _bucket(k: int) -> str:
    """Names in the query's k-letter bucket, most popular first: an index-only walk of a covering index."""
    return f"""
        SELECT {_COLS}, n.norm FROM entity_name n
        WHERE left(n.norm, {k}) = left(%(norm)s, {k}) AND {{cond}} AND {_TYPES}
        ORDER BY left(n.norm, {k}), n.popularity DESC LIMIT {{limit}}"""  # noqa: S608


# Prefix: the walk stops after `cand` matches, whatever the table size.
PREFIX_SQL = {k: _bucket(k).format(cond="n.norm LIKE %(pattern)s", limit="%(cand)s") for k in (2, 3)}
# A long prefix: the few names in its byte range, from a covering index, most popular first.
LONG_PREFIX = 6
RANGE_SQL = f"""
    SELECT {_COLS}, n.norm FROM entity_name n
    WHERE n.norm ~>=~ %(lo)s AND n.norm ~<~ %(hi)s AND {_TYPES}
    ORDER BY n.popularity DESC LIMIT %(cand)s"""  # noqa: S608
# Typos after the second or third letter: score the bucket's most popular names (bounded), best first.
NEAR_SQL = {k: f"""
    SELECT entity_id, entity_type, name, popularity FROM ({_bucket(k).format(cond="true", limit=300)}) n
    WHERE word_similarity(%(norm)s, n.norm) >= %(threshold)s
    ORDER BY round(word_similarity(%(norm)s, n.norm)::numeric, 1) DESC, n.popularity DESC, n.norm
    LIMIT %(cand)s""" for k in (3, 2)}  # noqa: S608
# Anything else (a typo in the first letters, a word inside a long title): the trigram index, only
# when nothing above matched.
FUZZY_SQL = f"""
    SELECT {_COLS} FROM entity_name n
    WHERE n.norm %%> %(norm)s AND {_TYPES}
    ORDER BY round(word_similarity(%(norm)s, n.norm)::numeric, 1) DESC, n.popularity DESC, n.norm
    LIMIT %(cand)s"""  # noqa: S608
PRIMARY_SQL = ("SELECT entity_id::text, name FROM entity_name "
               "WHERE entity_id = ANY(%(ids)s::uuid[]) AND kind = 'primary'")
FUZZY_THRESHOLD = 0.5


def _like_prefix(norm: str) -> str:
    escaped = norm.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


async def typeahead(conn: psycopg.AsyncConnection[Any], query: TypeaheadQuery, *,
                    timeout_s: float = 2.0) -> list[TypeaheadHit]:
    """Entities whose names match ``query.q``: exact, then prefix, then fuzzy; popularity first within."""
    async with asyncio.timeout(timeout_s):
        return await _typeahead(conn, query)


async def _typeahead(conn: psycopg.AsyncConnection[Any], query: TypeaheadQuery) -> list[TypeaheadHit]:
    row = await (await conn.execute(NORMALISE_SQL, {"q": query.q})).fetchone()
    norm = str(row[0]) if row else query.q.lower()
    params: dict[str, Any] = {
        "norm": norm, "pattern": _like_prefix(norm), "types": list(query.types) if query.types else None,
        "cand": query.limit * 4, "threshold": FUZZY_THRESHOLD,
    }
    hits: dict[str, tuple[MatchTier, tuple[Any, ...]]] = {}

    def take(tier: MatchTier, rows: list[tuple[Any, ...]]) -> None:
        for r in rows:
            hits.setdefault(r[0], (tier, r))

    take("exact", await (await conn.execute(EXACT_SQL, params)).fetchall())
    exact = bool(hits)
    if len(norm) >= 2:  # one letter is too little to rank a prefix by; exact names only
        if len(norm) >= LONG_PREFIX and ord(norm[-1]) < 0x10FFFF:
            prefix_params = {**params, "lo": norm, "hi": norm[:-1] + chr(ord(norm[-1]) + 1)}
            take("prefix", await (await conn.execute(RANGE_SQL, prefix_params)).fetchall())
        else:
            take("prefix", await (await conn.execute(PREFIX_SQL[min(len(norm), 3)], params)).fetchall())
    # typo candidates only when the name was not typed exactly and the list is not full yet
    for k in (3, 2):
        if exact or len(hits) >= query.limit or len(norm) < 3:
            break
        before = len(hits)
        take("fuzzy", await (await conn.execute(NEAR_SQL[k], params)).fetchall())
        if len(hits) > before:
            break
    if not hits and len(norm) >= 3:
        async with conn.transaction():
            await conn.execute("SELECT set_config('pg_trgm.word_similarity_threshold', %s, true)",
                               (str(FUZZY_THRESHOLD),))
            take("fuzzy", await (await conn.execute(FUZZY_SQL, params)).fetchall())
    order = {"exact": 0, "prefix": 1, "fuzzy": 2}
    best = sorted(hits.values(), key=lambda h: (order[h[0]], -h[1][3], h[1][2].lower()))[: query.limit]
    ids = [r[0] for _, r in best]
    primary = dict(await (await conn.execute(PRIMARY_SQL, {"ids": ids})).fetchall()) if ids else {}
    return [
        TypeaheadHit(entity=EntityRef(entity_type=r[1], id=r[0]), name=primary.get(r[0], r[2]), matched=r[2],
                     match=tier, popularity=r[3])
        for tier, r in best
    ]

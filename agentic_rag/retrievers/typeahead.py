"""The ``search`` lane: deterministic typeahead over every entity type, straight from PostgreSQL.

No model and no agent. Matches come in tiers (an exact name, then names starting with the text,
then fuzzy matches for typos such as "Lufy"); within a tier, popularity first, then name.
Prefix matching starts at two characters; every tier reads a bounded slice of an index. A typo is
one edit (two in a long query) from the start of a name, found through index probes keyed on the
name's first letters and their deletion variants; only what no probe finds (two typos early on,
a word inside a long title) falls back to the trigram index.
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
# Typo candidates: bounded probes, each an index-only walk in popularity order (a bucket, a
# deletion key of migration 0007, or a long prefix's byte range), scored together by word similarity.
# The index expressions, as migrations 0004 and 0007 create them:
_B3 = "left(n.norm, 3)"                            # the first three letters
_D1 = "substr(n.norm, 2, 3)"                       # ... with the 1st letter deleted
_D2 = "(left(n.norm, 1) || substr(n.norm, 3, 2))"  # ... with the 2nd deleted
_D3 = "(left(n.norm, 2) || substr(n.norm, 4, 1))"  # ... with the 3rd deleted
PROBE_ROWS = 100  # names read per probe, most popular first
TWO_EDITS_FROM = 8  # a query this long may hold two typos


def _probe(expr: str, key: str) -> str:
    return f"""(SELECT {_COLS}, n.norm FROM entity_name n WHERE {expr} = %({key})s AND {_TYPES}
        ORDER BY {expr}, n.popularity DESC LIMIT {PROBE_ROWS})"""  # noqa: S608


def _scored(probes: list[str]) -> str:
    # A typo in what is typed so far: the query is within %(edits)s edits of the name's first
    # len(q) - 1, len(q) or len(q) + 1 characters (an edit may shorten or lengthen it by one).
    # Trigram similarity cannot tell: "lffy" shares too few trigrams with "luffy".
    # Levenshtein counts a swap as two edits; a swap among the first four letters counts one here.
    edits = [f"levenshtein_less_equal(%(norm)s, left(n.norm, %(qlen)s{d}), %(edits)s + 1)"
             for d in (" - 1", "", " + 1")]
    swaps = [f"1 + levenshtein_less_equal(%(sw{i})s, left(n.norm, %(qlen)s), %(edits)s)" for i in range(3)]
    distance = f"least({', '.join(edits + swaps)})"
    return f"""
    SELECT entity_id, entity_type, name, popularity FROM (
        SELECT n.*, {distance} AS distance FROM ({" UNION ALL ".join(probes)}) n
    ) n
    WHERE n.distance <= %(edits)s
    ORDER BY n.distance, n.popularity DESC, n.norm
    LIMIT %(cand)s"""  # noqa: S608


# First, a typo after the third letter (most of them): the name is in the query's own 3-letter
# bucket, or, past the fifth letter, in the byte range of the query's first five.
LATE_TYPO_SQL = _scored([_probe(_B3, "q3"), f"""(SELECT {_COLS}, n.norm FROM entity_name n
        WHERE n.norm ~>=~ %(lo5)s AND n.norm ~<~ %(hi5)s AND {_TYPES}
        ORDER BY n.popularity DESC LIMIT {PROBE_ROWS})"""])  # noqa: S608
# Then one edit among the first letters, as equalities between deletion keys (d0-d2: the query's
# first four letters less one):
#   the query lacks the name's 1st/2nd/3rd letter:   D1/D2/D3 = q3
#   the query has an extra 1st/2nd/3rd letter:        B3 = d0/d1/d2
#   a substituted 1st/2nd/3rd letter:                 D1 = d0, D2 = d1, D3 = d2
#   swapped 1st-2nd or 2nd-3rd letters:               D1 = d1, D2 = d2  (3rd-4th: D3 = q3)
EARLY_TYPO_SQL = _scored([
    _probe(_D1, "q3"), _probe(_D2, "q3"), _probe(_D3, "q3"),
    _probe(_B3, "d0"), _probe(_B3, "d1"), _probe(_B3, "d2"),
    _probe(_D1, "d0"), _probe(_D2, "d1"), _probe(_D3, "d2"),
    _probe(_D1, "d1"), _probe(_D2, "d2"),
])
# Anything else (two typos in the first letters, a word inside a long title): the trigram index, only
# when nothing above matched.
FUZZY_SQL = f"""
    SELECT {_COLS} FROM entity_name n
    WHERE n.norm %%> %(norm)s AND {_TYPES}
    ORDER BY round(word_similarity(%(norm)s, n.norm)::numeric, 1) DESC, n.popularity DESC, n.norm
    LIMIT %(cand)s"""  # noqa: S608
PRIMARY_SQL = ("SELECT entity_id::text, name FROM entity_name "
               "WHERE entity_id = ANY(%(ids)s::uuid[]) AND kind = 'primary'")
FUZZY_THRESHOLD = 0.5


def _after(prefix: str) -> str | None:
    """The least string greater than every string starting with ``prefix`` (its byte range's end)."""
    if not prefix or ord(prefix[-1]) >= 0x10FFFF:
        return None
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def _typo_keys(norm: str) -> dict[str, str | int | None]:
    """The probe keys of a query; None where it is too short for one (equality with NULL reads nothing)."""
    q4 = norm[:4] if len(norm) >= 4 else None
    long = len(norm) >= 7  # a five-letter range only for a query longer than it: else the prefix tier had it
    return {
        "qlen": len(norm), "edits": 1 if len(norm) < TWO_EDITS_FROM else 2,
        "q3": norm[:3], "lo5": norm[:5] if long else None, "hi5": _after(norm[:5]) if long else None,
        "d0": q4 and q4[1:], "d1": q4 and q4[0] + q4[2:], "d2": q4 and q4[:2] + q4[3],
        # the query with letters i and i+1 swapped back
        **{f"sw{i}": norm[:i] + norm[i + 1] + norm[i] + norm[i + 2:] if len(norm) > i + 1 else None for i in range(3)},
    }


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
        if len(norm) >= LONG_PREFIX and (hi := _after(norm)) is not None:
            prefix_params = {**params, "lo": norm, "hi": hi}
            take("prefix", await (await conn.execute(RANGE_SQL, prefix_params)).fetchall())
        else:
            take("prefix", await (await conn.execute(PREFIX_SQL[min(len(norm), 3)], params)).fetchall())
    # typo candidates only when the name was not typed exactly and the list is not full yet
    for sql in (LATE_TYPO_SQL, EARLY_TYPO_SQL):
        if exact or len(hits) >= query.limit or len(norm) < 3:
            break
        before = len(hits)
        take("fuzzy", await (await conn.execute(sql, {**params, **_typo_keys(norm)})).fetchall())
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

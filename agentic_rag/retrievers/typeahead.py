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

import asyncpg
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from agentic_rag.protocol import EntityRef
from agentic_rag.protocol.vocabulary import ENTITY_TYPES, EntityType
from agentic_rag.storage.sql import Conn, Query

MatchTier = Literal["exact", "prefix", "fuzzy"]


def storable(text: str) -> str:
    """``text`` when PostgreSQL can hold it. Its text cannot hold U+0000, and JSON may carry lone surrogates that
    UTF-8 cannot encode: both are refused as the client's error, whichever API the text came through, instead of
    failing in the database."""
    if "\x00" in text:
        raise ValueError("must not contain NUL (U+0000) characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode (no unpaired surrogates)") from None
    return text


TypeaheadText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100),
                          AfterValidator(storable)]


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
_TYPES = "(:types::text[] IS NULL OR n.entity_type = ANY(:types::text[]))"
NORMALISE_SQL = Query("SELECT lower(unaccent(:q))")
EXACT_SQL = Query(f"SELECT {_COLS} FROM entity_name n WHERE n.norm = :norm AND {_TYPES}")  # noqa: S608


def _bucket(k: int) -> str:
    """Names in the query's k-letter bucket, most popular first: an index-only walk of a covering index."""
    return f"""
        SELECT {_COLS}, n.norm FROM entity_name n
        WHERE left(n.norm, {k}) = left(:norm, {k}) AND {{cond}} AND {_TYPES}
        ORDER BY left(n.norm, {k}), n.popularity DESC LIMIT {{limit}}"""  # noqa: S608


# Prefix: the walk stops after `cand` matches, whatever the table size.
PREFIX_SQL = {k: Query(_bucket(k).format(cond="n.norm LIKE :pattern", limit=":cand")) for k in (2, 3)}
# A long prefix: the few names in its byte range, from a covering index, most popular first.
LONG_PREFIX = 6
RANGE_SQL = Query(f"""
    SELECT {_COLS}, n.norm FROM entity_name n
    WHERE n.norm ~>=~ :lo AND n.norm ~<~ :hi AND {_TYPES}
    ORDER BY n.popularity DESC LIMIT :cand""")  # noqa: S608
# Typo candidates (SymSpell's deletion neighbourhood, on the first letters of a name). Migration
# 0007 indexes each name with its (p+1)-th letter deleted, for p < DELETION_DEPTH. One edit at
# position p of what was typed is then a prefix match, as a short byte-range walk of one index:
#   the query lacks the name's letter p:   name less letter p  starts with q
#   the query has an extra letter p:       name                starts with q less letter p
#   letter p substituted:                  name less letter p  starts with q less letter p
#   letters p, p+1 swapped:                name less letter p  starts with q less letter p+1
# A typo further in leaves the name next to the query in byte order (they share at least
# DELETION_DEPTH letters): two short walks on either side of it. Candidates are then scored by
# edit distance to the name's start.
DELETION_DEPTH = 12
PROBE_ROWS = 10  # names read per probe
TWO_EDITS_FROM = 8  # a query this long may hold two typos
MIN_TYPO_QUERY = 4  # shorter queries get no typo probes


def deletion_expr(p: int, col: str = "n.norm") -> str:
    """The name with its (p+1)-th letter deleted; migration 0007 indexes exactly these expressions."""
    return f"(left({col}, {p}) || substr({col}, {p + 2}))"


def _range(expr: str, key: str) -> str:
    return f"""(SELECT {_COLS}, n.norm FROM entity_name n
        WHERE {expr} ~>=~ :{key}_lo AND {expr} ~<~ :{key}_hi AND {_TYPES}
        ORDER BY {expr} USING ~<~ LIMIT {PROBE_ROWS})"""  # noqa: S608


def _typo_sql() -> str:
    probes = []
    for p in range(DELETION_DEPTH):
        probes += [_range(deletion_expr(p), "q"), _range("n.norm", f"d{p}"), _range(deletion_expr(p), f"d{p}")]
        if p + 1 < DELETION_DEPTH:
            probes.append(_range(deletion_expr(p), f"d{p + 1}"))
    probes += [f"""(SELECT {_COLS}, n.norm FROM entity_name n WHERE n.norm {op} :norm AND {_TYPES}
        ORDER BY n.norm USING {order} LIMIT {PROBE_ROWS})"""  # noqa: S608
               for op, order in (("~>=~", "~<~"), ("~<~", "~>~"))]
    # the query is within `edits` edits of the name's first len(q) - 1, len(q) or len(q) + 1
    # letters; Levenshtein counts a swap as two edits, so a swap among the first letters counts one
    edits = [f"levenshtein_less_equal(:norm, left(n.norm, :qlen{d}), :edits + 1)"
             for d in (" - 1", "", " + 1")]
    swaps = [f"1 + levenshtein_less_equal(:sw{p}, left(n.norm, :qlen), :edits)"
             for p in range(DELETION_DEPTH - 1)]
    return f"""
    SELECT entity_id, entity_type, name, popularity FROM (
        SELECT DISTINCT ON (n.entity_id, n.norm) n.*, least({', '.join(edits + swaps)}) AS distance
        FROM ({" UNION ALL ".join(probes)}) n
    ) n
    WHERE n.distance <= :edits
    ORDER BY n.distance, n.popularity DESC, n.norm
    LIMIT :cand"""  # noqa: S608


TYPO_SQL = Query(_typo_sql())
GENERIC_PLAN_SQL = "SELECT set_config('plan_cache_mode', 'force_generic_plan', true)"
# Anything else (two typos in the first letters, a word inside a long title): the trigram index, only
# when nothing above matched.
FUZZY_SQL = Query(f"""
    SELECT {_COLS} FROM entity_name n
    WHERE n.norm %> :norm AND {_TYPES}
    ORDER BY round(word_similarity(:norm, n.norm)::numeric, 1) DESC, n.popularity DESC, n.norm
    LIMIT :cand""")  # noqa: S608
PRIMARY_SQL = Query("SELECT entity_id::text, name FROM entity_name "
                    "WHERE entity_id = ANY(:ids::uuid[]) AND kind = 'primary'")
FUZZY_THRESHOLD = 0.5


def _after(prefix: str) -> str | None:
    """The least string greater than every string starting with ``prefix`` (its byte range's end)."""
    if not prefix or ord(prefix[-1]) >= 0x10FFFF:
        return None
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def _typo_keys(norm: str) -> dict[str, str | int | None]:
    """TYPO_SQL's parameters for a query; None where it is too short for a probe (NULL matches nothing)."""
    keys: dict[str, str | int | None] = {
        "qlen": len(norm), "edits": 1 if len(norm) < TWO_EDITS_FROM else 2, "q_lo": norm, "q_hi": _after(norm)}
    for p in range(DELETION_DEPTH):
        less = norm[:p] + norm[p + 1:] if len(norm) > p + 1 else None  # two letters at least
        keys[f"d{p}_lo"], keys[f"d{p}_hi"] = less, less and _after(less)
    for p in range(DELETION_DEPTH - 1):  # the query with letters p and p+1 swapped back
        keys[f"sw{p}"] = norm[:p] + norm[p + 1] + norm[p] + norm[p + 2:] if len(norm) > p + 1 else None
    return keys


def _like_prefix(norm: str) -> str:
    escaped = norm.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


async def typeahead(conn: Conn, query: TypeaheadQuery, *,
                    timeout_s: float = 2.0) -> list[TypeaheadHit]:
    """Entities whose names match ``query.q``: exact, then prefix, then fuzzy; popularity first within."""
    async with asyncio.timeout(timeout_s):
        return await _typeahead(conn, query)


def ascii_norm(q: str) -> str | None:
    """``lower(unaccent(q))`` without a round trip, for plain ASCII (unaccent's rules map only non-ASCII)."""
    return q.lower() if q.isascii() else None


async def _typeahead(conn: Conn, query: TypeaheadQuery) -> list[TypeaheadHit]:
    norm = ascii_norm(query.q)
    if norm is None:
        row = await NORMALISE_SQL.fetchrow(conn, {"q": query.q})
        norm = str(row[0]) if row else query.q.lower()
    params: dict[str, Any] = {
        "norm": norm, "pattern": _like_prefix(norm), "types": list(query.types) if query.types else None,
        "cand": query.limit * 4,
    }
    hits: dict[str, tuple[MatchTier, asyncpg.Record]] = {}

    def take(tier: MatchTier, rows: list[asyncpg.Record]) -> None:
        for r in rows:
            hits.setdefault(r[0], (tier, r))

    take("exact", await EXACT_SQL.fetch(conn, params))
    exact = bool(hits)
    if len(norm) >= 2:  # one letter is too little to rank a prefix by; exact names only
        if len(norm) >= LONG_PREFIX and (hi := _after(norm)) is not None:
            prefix_params = {**params, "lo": norm, "hi": hi}
            take("prefix", await RANGE_SQL.fetch(conn, prefix_params))
        else:
            take("prefix", await PREFIX_SQL[min(len(norm), 3)].fetch(conn, params))
    # typo candidates only when the name was not typed exactly and the list is not full yet
    # (one edit in three letters could be hundreds of names: a query that short goes to the trigram index)
    if not exact and len(hits) < query.limit and len(norm) >= MIN_TYPO_QUERY:
        async with conn.transaction():
            # Planning TYPO_SQL's ~50 probes costs more than running them (5 ms against 1-2 ms at 2M
            # names), and with "auto" PostgreSQL keeps re-planning it for each query's values. Its
            # generic plan is the right one whatever the values: every probe is a bounded walk.
            await conn.execute(GENERIC_PLAN_SQL)
            take("fuzzy", await TYPO_SQL.fetch(conn, {**params, **_typo_keys(norm)}))
    if not hits and len(norm) >= 3:
        async with conn.transaction():
            await conn.execute("SELECT set_config('pg_trgm.word_similarity_threshold', $1, true)",
                               str(FUZZY_THRESHOLD))
            take("fuzzy", await FUZZY_SQL.fetch(conn, params))
    order = {"exact": 0, "prefix": 1, "fuzzy": 2}
    best = sorted(hits.values(), key=lambda h: (order[h[0]], -h[1][3], h[1][2].lower()))[: query.limit]
    ids = [r[0] for _, r in best]
    primary = {r[0]: r[1] for r in await PRIMARY_SQL.fetch(conn, {"ids": ids})} if ids else {}
    return [
        TypeaheadHit(entity=EntityRef(entity_type=r[1], id=r[0]), name=primary.get(r[0], r[2]), matched=r[2],
                     match=tier, popularity=r[3])
        for tier, r in best
    ]

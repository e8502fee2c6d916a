"""Compiling structured queries to SQL: the safe form of text-to-SQL.

The model never writes SQL. It fills a :class:`~agentic_rag.protocol.StructuredQuery` whose every
field and operator comes from the protocol's closed vocabulary; :func:`compile_query` turns it into
SQL assembled only from the fixed fragments in this module, with every user value bound as a
positional parameter (``$1..$n``), and :func:`run_query` runs it read-only under a server-side
``statement_timeout`` and a client-side ``asyncio.timeout``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import asyncpg
from pydantic import Field

from agentic_rag import tracing
from agentic_rag.protocol import EntityRef, ProtocolModel, SummaryText
from agentic_rag.protocol.base import clip_lines
from agentic_rag.protocol.query import FIELDS, Aggregate, Condition, StructuredQuery, describe, fmt_value
from agentic_rag.protocol.vocabulary import EntityType
from agentic_rag.storage.sql import Conn, ident

__all__ = ["ENTITIES", "Col", "Entity", "QueryResult", "compile_query", "like_escape", "run_query"]


@dataclass(frozen=True, slots=True)
class Col:
    """One allowlisted field's SQL: a fixed expression over the entity's alias ``t`` (for a link, over
    ``l`` inside ``link``, a fixed ``FROM ... WHERE <joined to t>`` fragment). What may be done with
    the field (its kind, grouping) is the protocol's ``FIELDS``."""

    expr: str
    link: str | None = None


@dataclass(frozen=True, slots=True)
class Entity:
    source: str  # FROM fragment; the entity's own table is aliased t
    name: str  # display-name expression
    order: str  # default ORDER BY
    cols: dict[str, Col]


def _link(table: str, fk: str, target: str, key: str, expr: str = "l.name") -> Col:
    return Col(expr, f"{table} lj JOIN {target} l ON l.id = lj.{fk} WHERE lj.{key} = t.id")


_TITLE, _POP = Col("t.title"), Col("t.popularity")
_YEARS = {"year": Col("t.year"), "end_year": Col("t.end_year")}
_WORK = {"genres": Col("t.genres"), "popularity": _POP, "finished": Col("(t.status = 'finished')"),
         "franchise": Col("l.name", "franchise l WHERE l.id = t.franchise_id")}

ENTITIES: dict[EntityType, Entity] = {
    "anime": Entity("anime t", "t.title", "t.popularity DESC, t.title", {
        "title": _TITLE, **_YEARS, "episode_count": Col("t.episode_count"), "format": Col("t.format"),
        "status": Col("t.status"), **_WORK,
        "studio": _link("anime_studio", "studio_id", "studio", "anime_id"),
        "staff": _link("anime_staff", "person_id", "person", "anime_id"),
        "character": _link("anime_character", "character_id", "character", "anime_id"),
    }),
    "manga": Entity("manga t", "t.title", "t.popularity DESC, t.title", {
        "title": _TITLE, **_YEARS, "volumes": Col("t.volumes"), "status": Col("t.status"),
        "magazine": Col("t.magazine"), **_WORK,
        "author": _link("manga_author", "person_id", "person", "manga_id"),
        "character": _link("manga_character", "character_id", "character", "manga_id"),
    }),
    "character": Entity("character t", "t.name", "t.popularity DESC, t.name", {
        "name": Col("t.name"), "popularity": _POP,
        "anime": _link("anime_character", "anime_id", "anime", "character_id", "l.title"),
        "manga": _link("manga_character", "manga_id", "manga", "character_id", "l.title"),
    }),
    "episode": Entity("episode t JOIN anime a ON a.id = t.anime_id",
                      "coalesce(t.title, a.title || ' episode ' || t.number)", "a.title, t.number", {
        "number": Col("t.number"), "title": Col("t.title"), "season": Col("t.season"), "aired": Col("t.aired"),
        "anime": Col("a.title"),
    }),
    "studio": Entity("studio t", "t.name", "t.popularity DESC, t.name", {
        "name": Col("t.name"), "founded": Col("t.founded"), "popularity": _POP,
        "anime": _link("anime_studio", "anime_id", "anime", "studio_id", "l.title"),
    }),
    "person": Entity("person t", "t.name", "t.popularity DESC, t.name", {
        "name": Col("t.name"), "popularity": _POP,
        "anime": _link("anime_staff", "anime_id", "anime", "person_id", "l.title"),
        "manga": _link("manga_author", "manga_id", "manga", "person_id", "l.title"),
    }),
    "franchise": Entity("franchise t", "t.name", "t.popularity DESC, t.name", {
        "name": Col("t.name"), "popularity": _POP,
    }),
}
# Every field of the vocabulary has SQL here and nothing else does; links (and only links) join.
assert {t: set(e.cols) for t, e in ENTITIES.items()} == {t: set(f) for t, f in FIELDS.items()}
assert all((c.link is not None) == (FIELDS[t][f].kind == "link")
           for t, e in ENTITIES.items() for f, c in e.cols.items())

_TEXT_LIST = "(SELECT array_agg(lower(v)) FROM unnest({p}::text[]) AS v)"
# Fixed condition templates: {x} is an allowlisted column expression, {p} a bound placeholder. A number is
# bound as double precision whether it is written 3 or 2.5 (exact for every integer the protocol allows), so
# the SQL text depends on the query's shape only; no index starts with a numeric column, so the cast costs no plan.
_CMP = {"eq": "=", "ne": "IS DISTINCT FROM", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}
_COND: dict[tuple[str, str], str] = {
    **{(kind, op): f"{{x}} {sym} {{p}}{cast}" for op, sym in _CMP.items() for kind, cast in
       (("numeric", "::float8"), ("date", "::date"))},
    ("numeric", "in"): "{x} = ANY({p}::float8[])",
    ("text", "eq"): "lower({x}) = lower({p})",
    ("text", "ne"): "lower({x}) IS DISTINCT FROM lower({p})",
    ("text", "in"): "lower({x}) IN (SELECT lower(v) FROM unnest({p}::text[]) AS v)",
    ("text", "ilike_prefix"): "{x} ILIKE {p} ESCAPE '\\'",
    ("text", "ilike_substring"): "{x} ILIKE {p} ESCAPE '\\'",
    ("text_array", "contains"): "lower({p}) = ANY({x})",
    ("text_array", "contains_all"): f"{{x}} @> {_TEXT_LIST}",
    ("text_array", "in"): f"{{x}} && {_TEXT_LIST}",
    ("bool", "eq"): "{x} = {p}",
    ("bool", "ne"): "{x} IS DISTINCT FROM {p}",
}
_AGG = {"count": "count({x})", "avg": "round(avg({x})::numeric, 2)", "min": "min({x})", "max": "max({x})",
        "sum": "sum({x})"}
_DIR = {"asc": "ASC NULLS LAST", "desc": "DESC NULLS LAST"}

def like_escape(value: str) -> str:
    """``value`` with the LIKE metacharacters ``\\``, ``%`` and ``_`` escaped (escape char ``\\``)."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _bind(c: Condition, kind: str) -> Any:
    if c.op == "ilike_prefix":
        return like_escape(str(c.value)) + "%"
    if c.op == "ilike_substring":
        return "%" + like_escape(str(c.value)) + "%"
    if kind == "date":
        return dt.date.fromisoformat(str(c.value))  # the protocol checked it is YYYY-MM-DD
    if isinstance(c.value, list) and any(isinstance(v, float) for v in c.value):
        return [float(v) for v in c.value]  # one element type per bound array
    return c.value


def _condition(entity_type: EntityType, c: Condition, p: str) -> str:
    col, spec = ENTITIES[entity_type].cols[c.field], FIELDS[entity_type][c.field]
    kind, op = ("text" if spec.kind == "link" else spec.kind), str(c.op)
    if spec.kind == "text_array" and op == "contains" and isinstance(c.value, list):
        op = "contains_all"
    negate = spec.kind == "link" and op == "ne"  # "not by X" is NOT EXISTS (... = X), not "some other"
    inner = _COND[(kind, "eq" if negate else op)].format(x=col.expr, p=p)
    if col.link is None:
        return inner
    return f"{'NOT EXISTS' if negate else 'EXISTS'} (SELECT 1 FROM {col.link} AND {inner})"  # noqa: S608


def compile_query(q: StructuredQuery) -> tuple[str, list[Any]]:
    """SQL for ``q`` from fixed fragments and allowlisted names only; every value is in the parameters
    (``$1..$n``, in order)."""
    ent, args = ENTITIES[q.entity_type], []
    conds: list[str] = []
    for c in q.where:
        args.append(_bind(c, FIELDS[q.entity_type][c.field].kind))
        conds.append(_condition(q.entity_type, c, f"${len(args)}"))
    where = " WHERE " + " AND ".join(conds) if conds else ""
    source = ent.source
    if q.aggregate is None and q.group_by is None:
        shown = [(f, c) for f, c in ent.cols.items() if c.link is None and c.expr != ent.name]
        select = ", ".join([
            f"t.id::text AS id, '{q.entity_type}' AS entity_type, {ent.name} AS name",  # a key of ENTITIES
            *(f"{c.expr} AS {ident(f)}" for f, c in shown),
            "count(*) OVER () AS total",
        ])
        order = ", ".join([*(f"{ent.cols[k.field].expr} {_DIR[k.direction]}" for k in q.order_by), ent.order, "t.id"])
        args.append(q.limit)
        return f"SELECT {select} FROM {source}{where} ORDER BY {order} LIMIT ${len(args)}", args  # noqa: S608
    agg = q.aggregate or Aggregate(op="count")
    value = _AGG[agg.op].format(x=ent.cols[agg.field].expr if agg.field else "*")
    if q.group_by is None:
        return f"SELECT {value} AS value, count(*) AS n FROM {source}{where}", args  # noqa: S608
    g = ent.cols[q.group_by]
    if g.link is not None:
        source += f" JOIN LATERAL (SELECT DISTINCT {g.expr} AS k FROM {g.link}) AS g ON true"  # noqa: S608
    elif FIELDS[q.entity_type][q.group_by].kind == "text_array":
        source += f" CROSS JOIN LATERAL unnest({g.expr}) AS g(k)"
    unnested = g.link is not None or FIELDS[q.entity_type][q.group_by].kind == "text_array"
    key = "g.k" if unnested else g.expr
    by = [f"{ident(k.field)} {_DIR[k.direction]}" for k in q.order_by] or ["value DESC NULLS LAST"]
    order = ", ".join([*by, "group_key ASC NULLS LAST"])
    args.append(q.limit)
    return (f"SELECT {key} AS group_key, {value} AS value, count(*) AS n, count(*) OVER () AS total "  # noqa: S608
            f"FROM {source}{where} GROUP BY 1 ORDER BY {order} LIMIT ${len(args)}"), args


class QueryResult(ProtocolModel):
    """What a structured query returned, as the loop reads it."""

    summary: SummaryText = Field(description="Readable lines: entity rows with ids, or group values.")
    rows: list[dict[str, Any]] = Field(default_factory=list, max_length=100, description="Result rows.")
    entities: list[EntityRef] = Field(default_factory=list, max_length=100, description="Entity rows as refs.")
    count: int = Field(ge=0, description="Rows (entities or groups) returned; 0 means nothing matched.")
    total: int = Field(ge=0, description="Rows or groups matching before the limit.")
    params_bound: int = Field(ge=0, description="Number of values bound as parameters.")


def _plain(v: Any) -> Any:
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    if isinstance(v, dt.date):
        return v.isoformat()
    return v


def _summarise(q: StructuredQuery, rows: list[dict[str, Any]], total: int) -> str:
    what = describe(q)
    if not rows:
        return f"No {q.entity_type} matched: {what}." + (" The count is 0." if q.aggregate else "")
    if q.aggregate is not None and q.group_by is None:
        return f"{what}: {rows[0]['value']} (over {rows[0]['n']} matching rows)."
    if q.group_by is not None or q.aggregate is not None:
        head = f"{what} ({len(rows)} of {total} groups):"
        lines = [f"- {r['group_key']}: {r['value']} (n={r['n']})" for r in rows]
    else:
        head = f"{what} ({len(rows)} of {total} matches):"
        lines = []
        for r in rows:
            extra = ", ".join(f"{k}={fmt_value(v)}" for k, v in r.items()
                              if k not in ("id", "entity_type", "name") and v not in (None, []))
            lines.append(f"- {r['name']} ({r['entity_type']}, id {r['id']}){': ' + extra if extra else ''}")
    return clip_lines([head, *lines])


async def run_query(conn: Conn, q: StructuredQuery, *, timeout_s: float) -> QueryResult:
    """Run ``q`` read-only. The server cancels it after 0.8 * ``timeout_s`` (``statement_timeout``), the client
    gives up at ``timeout_s``; either raises :class:`TimeoutError`. No match is a result with count 0.

    It runs in its own transaction (a savepoint when ``conn`` is already in one) that is always rolled
    back, so neither the read-only mode nor the timeout outlives the call."""
    with tracing.span("query", {"agentic_rag.entity_type": q.entity_type}) as span:
        result = await _run_query(conn, q, timeout_s=timeout_s)
        span.set_attributes({"agentic_rag.rows": result.count, "agentic_rag.capped": result.total > result.count})
        return result


async def _run_query(conn: Conn, q: StructuredQuery, *, timeout_s: float) -> QueryResult:
    query, args = compile_query(q)
    try:
        async with asyncio.timeout(timeout_s):
            tx = conn.transaction()
            await tx.start()
            try:
                await conn.execute("SELECT set_config('transaction_read_only', 'on', true), "
                                   "set_config('statement_timeout', $1, true)", f"{max(1, int(timeout_s * 800))}ms")
                records = await conn.fetch(query, *args)
            finally:
                await tx.rollback()
    except asyncpg.QueryCanceledError as exc:
        raise TimeoutError(f"structured query ran past its statement timeout: {describe(q)}") from exc
    rows = [{k: _plain(v) for k, v in r.items()} for r in records]
    total = 0
    for r in rows:
        total = max(total, int(r.pop("total", 0)))
    if q.aggregate is not None and q.group_by is None and rows and rows[0]["n"] == 0:
        rows = []
    entities = [EntityRef(entity_type=r["entity_type"], id=r["id"]) for r in rows if "id" in r]
    return QueryResult(summary=_summarise(q, rows, total), rows=rows, entities=entities, count=len(rows),
                       total=total or len(rows), params_bound=len(args))

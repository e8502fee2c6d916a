"""``compare``: structured differences between two entities, what they share, and how they connect."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

from agentic_rag.protocol import EntityRef, GraphIntent, GraphPath, GraphResult
from agentic_rag.protocol.base import clip_lines
from agentic_rag.protocol.limits import max_len
from agentic_rag.protocol.vocabulary import EDGE_WORDS
from agentic_rag.retrievers.hydrate import hydrate, labels
from agentic_rag.storage.sql import Conn, Query

Run = Callable[[Conn, Query, dict[str, Any]], Awaitable[list[asyncpg.Record]]]

# Attributes compared per entity type (record columns from hydrate.RECORD_SQL).
FIELDS: dict[str, tuple[str, ...]] = {
    "anime": ("format", "year", "end_year", "episode_count", "status", "studios", "genres"),
    "manga": ("year", "end_year", "volumes", "status", "magazine", "authors", "genres"),
    "character": ("anime",),
    "episode": ("anime_title", "number", "season", "aired"),
    "franchise": (),
    "studio": ("year",),
    "person": (),
}
# What two entities can have in common: a group name for each outgoing relation (the vocabulary's words), in the
# order a comparison lists the groups.
_SHARED_ORDER = ("features", "staff", "animated_by", "part_of", "adapted_from", "appears_in", "worked_on", "animated",
                 "includes")
SHARED_BY: dict[str, str] = {rel: group for rel in _SHARED_ORDER if (group := EDGE_WORDS[rel].shared)}
NEIGHBOR_CAP = 1000  # per entity and relation; a hub cannot make compare unbounded
SHARED_SHOWN = 15  # names a comparison's line of shared neighbors lists
_NODES = max_len(GraphResult, "node_ids")

SHARED_SQL = Query("""
    SELECT f.src::text, e.rel, e.dst_id::text, e.dst_type
    FROM unnest(:ids::uuid[]) AS f(src)
    CROSS JOIN LATERAL unnest(:rels::text[]) AS r(rel)
    CROSS JOIN LATERAL (
        SELECT rel, dst_id, dst_type FROM edge WHERE edge.src_id = f.src AND edge.rel = r.rel LIMIT :cap
    ) e""")
DIRECT_SQL = Query("SELECT rel, detail FROM edge WHERE src_id = :a::uuid AND dst_id = :b::uuid ORDER BY rel")


def _fmt(value: Any) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "none"
    return str(value)


async def compare_entities(conn: Conn, intent: GraphIntent, meta: dict[str, Any], query: Run) -> GraphResult:
    """Compare ``intent.start`` with ``intent.end``; both are known to exist."""
    assert intent.end is not None  # GraphIntent guarantees it for compare
    a_ref, b_ref = intent.start, intent.end
    records = {r["id"]: r for r in await hydrate(conn, [a_ref, b_ref])}
    a, b = records[a_ref.id], records[b_ref.id]
    fields = [f for f in FIELDS[a_ref.entity_type] if a_ref.entity_type == b_ref.entity_type
              or f in FIELDS[b_ref.entity_type]]
    differences = {f: {"a": a.get(f), "b": b.get(f)} for f in fields if a.get(f) != b.get(f)}
    same = {f: a.get(f) for f in fields if a.get(f) == b.get(f) and a.get(f) is not None}

    rows = await query(conn, SHARED_SQL, {"ids": [a_ref.id, b_ref.id], "rels": list(SHARED_BY), "cap": NEIGHBOR_CAP})
    sides: dict[str, dict[str, dict[str, str]]] = {a_ref.id: {}, b_ref.id: {}}
    for src, rel, dst, dst_type in rows:
        sides[src].setdefault(SHARED_BY[rel], {})[dst] = dst_type
    shared_refs: dict[str, list[EntityRef]] = {}
    for group, a_side in sides[a_ref.id].items():
        common = sorted(set(a_side) & set(sides[b_ref.id].get(group, {})))
        if common:
            shared_refs[group] = [EntityRef(entity_type=a_side[d], id=d) for d in common]

    direct = await query(conn, DIRECT_SQL, {"a": a_ref.id, "b": b_ref.id})
    all_refs = [a_ref, b_ref, *(r for refs in shared_refs.values() for r in refs)]
    names = await labels(conn, all_refs)
    an, bn = names[a_ref.id], names[b_ref.id]
    shared = {g: [names.get(r.id, r.id) for r in refs] for g, refs in shared_refs.items()}

    lines = [f"Comparison of {an} [id {a_ref.id}] and {bn} [id {b_ref.id}]:"]
    lines += [f"- {f}: {_fmt(d['a'])} vs {_fmt(d['b'])}" for f, d in differences.items()]
    lines += [f"- both {f}: {_fmt(v)}" for f, v in same.items()]
    lines += [f"- shared {g} ({len(v)}): {', '.join(v[:SHARED_SHOWN])}{' ...' if len(v) > SHARED_SHOWN else ''}"
              for g, v in shared.items()]
    lines += [f"- directly related: {an} --{rel}--> {bn}{f' ({detail})' if detail else ''}" for rel, detail in direct]
    if not (differences or same or shared or direct):
        lines.append("- nothing comparable was found between them")
    paths = [GraphPath(nodes=[a_ref, b_ref], rels=[rel]) for rel, _ in direct]
    meta.update({
        "a": {f: a.get(f) for f in fields} | {"name": a["name"], "id": a_ref.id},
        "b": {f: b.get(f) for f in fields} | {"name": b["name"], "id": b_ref.id},
        "differences": differences, "same": same, "shared": shared, "direct": [r for r, _ in direct],
    })
    nodes = list(dict.fromkeys(all_refs))[:_NODES]
    return GraphResult(summary=clip_lines(lines), paths=paths, node_ids=nodes, count=2, meta=_jsonable(meta))


def _jsonable(value: Any) -> Any:
    """Dates and other non-JSON scalars from records become strings, so the result serialises."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)

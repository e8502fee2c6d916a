"""The heuristic planner's select role: resolve mentioned entities first, then run the one primitive
the question calls for (relation -> path, compare -> compare, sequel/adaptation/cast/staff/studio/
family -> neighbors or k_hop with those edge types, attributes -> the structured query DSL), then
finish. Zero results change the approach (the next entity type); nothing is ever asked twice.
"""

from __future__ import annotations

from typing import Any

from agentic_rag.models.heuristic.context import Resolution, norm, resolve, row_of, step_cards
from agentic_rag.models.heuristic.intent import Analysis, analyze
from agentic_rag.models.roles import SelectInput
from agentic_rag.protocol import (
    MAX_BATCH,
    Aggregate,
    Condition,
    EntityRef,
    GraphIntent,
    NextStep,
    OrderKey,
    SearchFilters,
    SearchIntent,
    StructuredQuery,
)

# intent -> (graph primitive, edge types) for intents answered by one traversal from the first mention
GRAPH_STEP: dict[str, tuple[str, list[str]]] = {
    "cast": ("neighbors", ["features"]),
    "sequel": ("k_hop", ["sequel"]),
    "prequel": ("k_hop", ["prequel"]),
    "staff": ("neighbors", ["staff"]),
    "studio": ("neighbors", ["animated_by"]),
    "family": ("neighbors", ["family"]),
}
NEEDS_NAME_ONLY = {"studio_works", "count_by_studio"}  # a structured query by name; no ids needed


def finish(why: str) -> NextStep:
    return NextStep(action="finish", rationale=why[:300])


def search(entity_type: str, query: str, why: str) -> NextStep:
    return NextStep(action="qdrant_search", rationale=why[:300], search_intent=SearchIntent.model_validate(
        {"rationale": why[:300], "entity_type": entity_type, "query": query[:500], "limit": 5}))


def graph(kind: str, start: EntityRef, why: str, *, end: EntityRef | None = None, edges: list[str] | None = None,
          hops: int = 1) -> NextStep:
    intent = GraphIntent.model_validate({"rationale": why[:300], "query_type": kind, "start": start.model_dump(),
                                         "end": end.model_dump() if end else None, "edge_types": edges or [],
                                         "max_hops": hops})
    return NextStep(action="pg_graph", rationale=why[:300], graph_intent=intent)


def query(q: dict[str, Any], why: str) -> NextStep:
    sq = StructuredQuery.model_validate({"rationale": why[:300], **q})
    return NextStep(action="pg_query", rationale=why[:300], structured_query=sq)


def select(inp: SelectInput) -> NextStep:
    a = analyze(inp.question)
    mentions = a.mentions if a.intent in NEEDS_NAME_ONLY else (inp.rewrite.mentions or a.mentions)
    if not mentions:
        return finish("the question names nothing to look up")
    if a.intent in NEEDS_NAME_ONLY:
        return _attribute_step(inp, a, mentions[0]) or finish("the structured query has run")
    resolutions = [resolve(inp.cards, m) for m in mentions]
    # every unresolved mention is independent of the others: resolve them all in one concurrent batch
    batch: list[NextStep] = []
    for r in resolutions:
        if r.entity is None:
            remaining = [t for t in a.types.get(r.mention, ()) if t not in r.tried] or (
                [] if r.tried else ["character", "anime"])
            if remaining:
                batch.append(search(remaining[0], r.mention, f"resolve '{r.mention}' as {remaining[0]}"))
    if batch:
        first_step, *rest = batch[:MAX_BATCH]
        return first_step.model_copy(update={"also": [s.search_intent for s in rest if s.search_intent]})
    found = [r for r in resolutions if r.entity is not None]
    if len(found) < len(resolutions):
        missing = ", ".join(r.mention for r in resolutions if r.entity is None)
        return finish(f"no catalog entity matches {missing}")
    return _intent_step(inp, a, found) or finish("the context holds what the question asks")


def _intent_step(inp: SelectInput, a: Analysis, found: list[Resolution]) -> NextStep | None:
    first = found[0].entity
    assert first is not None
    start = first.ref
    if a.intent in ("relation", "compare") and len(found) >= 2 and found[1].entity is not None:
        kind = "path" if a.intent == "relation" else "compare"
        end = found[1].entity.ref
        if start == end or step_cards(inp.cards, "pg_graph", kind):
            return None
        return graph(kind, start, f"{kind} between the two resolved entities", end=end, hops=3)
    if a.intent == "appears_in":
        if step_cards(inp.cards, "qdrant_search") and any(c.data.get("ids") for c in inp.cards):
            return None
        anime_ids = row_of(inp.cards, start.id).get("anime_ids") or []
        if anime_ids:
            return NextStep(action="qdrant_search", rationale="fetch the anime the character appears in",
                            search_intent=SearchIntent(rationale="fetch by id", entity_type="anime",
                                                       filters=SearchFilters(id=list(anime_ids)[:50]), limit=50))
        if step_cards(inp.cards, "pg_graph", "neighbors"):
            return None
        return graph("neighbors", start, "works the character appears in", edges=["appears_in"])
    if a.intent == "adaptation":
        if step_cards(inp.cards, "pg_graph", "neighbors"):
            return None
        edge = "adapted_from" if start.entity_type == "anime" else "adapted_into"
        return graph("neighbors", start, f"follow {edge}", edges=[edge])
    if a.intent in GRAPH_STEP:
        kind, edges = GRAPH_STEP[a.intent]
        if step_cards(inp.cards, "pg_graph", kind):
            return None
        return graph(kind, start, f"{kind} via {', '.join(edges)}", edges=edges, hops=4 if kind == "k_hop" else 1)
    if a.intent in ("episode_count", "year"):
        if step_cards(inp.cards, "pg_query"):
            return None
        entity_type = start.entity_type if start.entity_type in ("anime", "manga") else "anime"
        title = first.name.split(" (")[0]
        return query({"entity_type": entity_type, "where": [{"field": "title", "op": "eq", "value": title}],
                      "limit": 5}, f"attributes of {title}")
    return None  # lookup: the resolving search already answers it (the fast path)


def _attribute_step(inp: SelectInput, a: Analysis, name: str) -> NextStep | None:
    if step_cards(inp.cards, "pg_query"):
        return None
    where = [Condition(field="studio", op="eq", value=name)]
    if a.year_op and a.year:
        where.append(Condition(field="year", op=a.year_op, value=a.year))
    if a.intent == "count_by_studio":
        return NextStep(action="pg_query", rationale=f"count anime by {name}", structured_query=StructuredQuery(
            rationale=f"count anime by {name}", entity_type="anime", where=where, aggregate=Aggregate(op="count")))
    return NextStep(action="pg_query", rationale=f"anime by {name}", structured_query=StructuredQuery(
        rationale=f"anime by {name}", entity_type="anime", where=where, limit=50,
        order_by=[OrderKey(field="year", direction="asc")]))


__all__ = ["norm", "select"]

"""Observe: retrieval results become context cards, the only context the planner and validator read.

A card keeps what a model needs to read (a summary) and what the next step needs to act on (ids,
paths, a few structured fields), and stays small: raw rows are trimmed to the fields that carry ids
and facts. The ``data`` keys are part of the contract with the planner:

- qdrant_search: ``query`` (text or None), ``entity_type``, ``ids`` (for a fetch by id), ``rows`` (with the
  vector ``score`` of a semantic search, and the ``text_score`` and ``text_words`` its prose shares with the
  description; the ``image_score`` of a search fused with the image), ``match`` (hybrid or semantic),
  ``image`` (true when it searched by the question's image), ``quote`` (true when each row also carries
  ``quotes``: the sentences of its description nearest in meaning to the query, with their ``score``)
- request (not a step: what came with the question): ``image`` (its ``bytes`` and ``sha256`` prefix)
- pg_graph: ``kind`` (the query_type), ``start``, ``end``, ``edge_types``, ``meta``
- pg_query: ``kind`` = "query", ``rows``, ``total``
- similar: ``entity_type``, ``like`` (the examples' ids) and ``like_types``, ``query`` (the wish, or None),
  ``rows`` (each with its ``reasons`` and the ``shared_studios``, ``shared_people`` and ``shared_genres`` they come
  from), ``asked`` (the intent less its rationale, ``SimilarIntent.asked``)
"""

from __future__ import annotations

from typing import Any

from agentic_rag.protocol import (
    EntityRef,
    GraphIntent,
    GraphResult,
    RetrievalResult,
    SearchIntent,
    SimilarIntent,
    StructuredQuery,
)
from agentic_rag.protocol.limits import max_len
from agentic_rag.protocol.query import describe
from agentic_rag.protocol.roles import CardEntity, ContextCard, GradeItem
from agentic_rag.retrievers.dsl import QueryResult

ROW_FIELDS = ("id", "entity_type", "name", "year", "format", "anime_ids", "anime_id", "franchise_id", "number",
              "snippet", "matched_by", "value", "group_key", "n", "episode_count", "end_year", "status",
              "aliases", "volumes", "magazine", "founded", "genres", "aired", "score", "text_score", "text_words",
              "image_score", "studios", "authors", "works", "native_names", "about_at", "quotes", "reasons",
              "shared_studios", "shared_people", "shared_genres")
MAX_ROWS = 50
ROW_LIST_MAX = 50  # items kept of a row's list field (anime_ids, aliases, genres, text_words, works, ...)
_ENTITIES = max_len(ContextCard, "entities")
_REQUEST = max_len(ContextCard, "request")
_NAME = max_len(CardEntity, "name")
_SNIPPET = max_len(GradeItem, "snippet")  # a row's snippet is what the grader reads of it
_PATHS = max_len(ContextCard, "paths")


def _trim(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: row[k] for k in ROW_FIELDS if k in row and row[k] not in (None, [], "")}
    for key in ("anime_ids", "aliases", "genres", "text_words", "studios", "authors", "works", "native_names",
                "reasons", "shared_studios", "shared_people", "shared_genres"):
        if isinstance(out.get(key), list):
            out[key] = out[key][:ROW_LIST_MAX]
    if isinstance(out.get("snippet"), str):
        out["snippet"] = out["snippet"][:_SNIPPET]
    return out


def _detail(row: dict[str, Any]) -> str | None:
    parts = [str(row["year"])] if row.get("year") else []
    if row.get("matched_by"):
        parts.append("matched by " + ", ".join(row["matched_by"]))
    return "; ".join(parts) or None


def from_search(turn: int, intent: SearchIntent, result: RetrievalResult) -> ContextCard:
    rows = [_trim(r) for r in result.raw_data[:MAX_ROWS]]
    entities = [CardEntity(ref=EntityRef(entity_type=r["entity_type"], id=r["id"]), name=str(r.get("name", ""))[:_NAME],
                           detail=_detail(r)) for r in rows if r.get("id") and r.get("entity_type")]
    by_image = intent.image_query is not None and not intent.filters.id
    what = f"ids {', '.join(intent.filters.id[:3])}" if intent.filters.id else repr(intent.query)
    if by_image:
        what = "the image" if intent.query is None else f"the image and {what}"
    return ContextCard(turn=turn, source="qdrant_search", request=f"{intent.entity_type} search for {what}"[:_REQUEST],
                       summary=result.summary, count=result.count, entities=entities,
                       data={"query": intent.query, "entity_type": intent.entity_type,
                             "ids": list(intent.filters.id), "rows": rows, "match": intent.match, "image": by_image,
                             "quote": intent.quote})


def from_image(note: dict[str, int | str]) -> ContextCard:
    """The card that tells the planner an image came with the question, and what code does with it."""
    return ContextCard(turn=0, source="request", request="an image attached to the question", count=0, summary=(
        "The user attached an image to the question (the question's 'this' or 'he/she' is what it shows). Code "
        "adds it to every qdrant_search by meaning (not to a fetch by filters.id): with the question itself as "
        "the query the search is by the image alone; other query words are searched too, fused with the image. "
        "Search the entity type the question asks for (anime unless it says otherwise)."), data={"image": note})


def from_graph(turn: int, intent: GraphIntent, result: GraphResult, names: dict[str, str]) -> ContextCard:
    entities = [CardEntity(ref=ref, name=names.get(ref.id, ref.id)[:_NAME]) for ref in result.node_ids[:_ENTITIES]]
    target = f" and {names.get(intent.end.id, intent.end.id)}" if intent.end else ""
    request = f"{intent.query_type} from {names.get(intent.start.id, intent.start.id)}{target}"
    if intent.edge_types:
        request += f" via {', '.join(intent.edge_types)}"
    meta = {k: v for k, v in result.meta.items() if k not in ("depths",)}
    return ContextCard(turn=turn, source="pg_graph", request=request[:_REQUEST], summary=result.summary,
                       count=result.count, entities=entities, paths=result.paths[:_PATHS],
                       data={"kind": intent.query_type, "start": intent.start.id,
                             "end": intent.end.id if intent.end else None, "edge_types": list(intent.edge_types),
                             "meta": meta})


def from_query(turn: int, query: StructuredQuery, result: QueryResult) -> ContextCard:
    rows = [_trim(r) for r in result.rows[:MAX_ROWS]]
    entities = [CardEntity(ref=EntityRef(entity_type=r["entity_type"], id=r["id"]), name=str(r.get("name", ""))[:_NAME],
                           detail=_detail(r)) for r in rows if r.get("id") and r.get("entity_type")]
    return ContextCard(turn=turn, source="pg_query", request=describe(query)[:_REQUEST], summary=result.summary,
                       count=result.count, entities=entities,
                       data={"kind": "query", "rows": rows, "total": result.total})


def from_similar(turn: int, intent: SimilarIntent, result: RetrievalResult) -> ContextCard:
    rows = [_trim(r) for r in result.raw_data[:MAX_ROWS]]
    entities = [CardEntity(ref=EntityRef(entity_type=r["entity_type"], id=r["id"]), name=str(r.get("name", ""))[:_NAME],
                           detail="; ".join(r.get("reasons", []))[:_NAME] or None)
                for r in rows if r.get("id") and r.get("entity_type")]
    like = f"like {', '.join(r.id for r in intent.like[:3])}" if intent.like else f"for {intent.query!r}"
    return ContextCard(turn=turn, source="similar", request=f"{intent.entity_type} {like}"[:_REQUEST],
                       summary=result.summary, count=result.count, entities=entities,
                       data={"entity_type": intent.entity_type, "like": [r.id for r in intent.like],
                             "like_types": [r.entity_type for r in intent.like],
                             "query": intent.query, "rows": rows, "asked": intent.asked()})

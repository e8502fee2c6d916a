"""The protocol: schemas are bounded, round-trip, and reject inconsistent or out-of-bound values."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel, ValidationError

from agentic_rag import protocol as p

U1, U2, U3 = (str(uuid.uuid5(uuid.NAMESPACE_DNS, s)) for s in ("a", "b", "c"))
LUFFY = p.EntityRef(entity_type="character", id=U1)
NAMI = p.EntityRef(entity_type="character", id=U2)
PATH = p.GraphPath(nodes=[LUFFY, p.EntityRef(entity_type="anime", id=U3), NAMI], rels=["appears_in", "features"])
GRAPH = p.GraphIntent(rationale="explain relation", query_type="path", start=LUFFY, end=NAMI, edge_types=["ally"])
SEARCH = p.SearchIntent(rationale="resolve", entity_type="character", query="Luffy",
                        filters=p.SearchFilters(anime_id=U3))

# One fully populated example of every contract: each must round-trip through its JSON schema.
EXAMPLES: list[BaseModel] = [
    LUFFY,
    p.SearchFilters(id=[U1], year_min=1999, year_max=2005, format=["tv"], genres=["action"], anime_id=U3),
    p.SearchIntent(rationale="r", entity_type="anime", query="pirates", limit=5,
                   filters=p.SearchFilters(year_min=1999, format=["tv"], genres=["Action"], franchise_id=U2)),
    SEARCH,
    p.SimilarIntent(rationale="r", entity_type="anime", like=[p.EntityRef(entity_type="anime", id=U3)], query="dark",
                    filters=p.SimilarFilters(year_min=1990, year_max=1999, format=["tv"], genres=["drama"],
                                             finished=True, max_length=26), exclude=[U2], limit=3),
    p.SearchIntent(rationale="fetch", entity_type="anime", query="Luffy's anime", filters=p.SearchFilters(id=[U3])),
    GRAPH,
    p.GraphIntent(rationale="sequels", query_type="neighbors", start=LUFFY, edge_types=["sequel"],
                  limits=p.GraphLimits(max_results=5, max_fanout_per_hop=5)),
    p.NextStep(action="qdrant_search", rationale="resolve Luffy", search_intent=SEARCH),
    p.NextStep(action="pg_graph", rationale="traverse", graph_intent=GRAPH),
    p.NextStep(action="finish", rationale="enough"),
    p.NextStep(action="pg_query", rationale="count", structured_query=p.StructuredQuery(
        rationale="how many episodes", entity_type="anime",
        where=[p.Condition(field="title", op="eq", value="Death Note")],
        aggregate=p.Aggregate(op="max", field="episode_count"))),
    p.QueryRewrite(rewritten_query="Which anime features Monkey D. Luffy?", needs_external_context=True,
                   retrieval_mode="hybrid", mentions=["Luffy"], rationale="entity lookup"),
    p.RetrievalResult(summary="Monkey D. Luffy (character)", raw_data=[{"id": U1, "name": "Luffy"}], count=1),
    PATH,
    p.GraphResult(summary="1 path", paths=[PATH], node_ids=[LUFFY, NAMI], count=1, meta={"hops": 2}),
    p.GradeReport(grades=[p.DocumentGrade(index=0, relevant=True), p.DocumentGrade(index=1, relevant=False)]),
    p.Evidence(paths=[PATH], ranked=[LUFFY], facts=["Luffy captains the Straw Hats"],
               rewritten_query="q", termination_reason="sufficient"),
    p.DraftAnswer(answer="Luffy is in One Piece.", source_entities=[LUFFY], result_entities=[LUFFY],
                  citations=["One Piece"], confidence=0.9),
    p.SufficiencyReport(sufficient=False, rationale="anime missing", missing=["anime title"]),
    p.AgentResponse(answer="Which Naruto?", status="needs_clarification", confidence=0.2,
                    clarification=p.Clarification(question="Which one?", choices=[
                        p.ClarificationChoice(label="Naruto (anime)", entity=LUFFY),
                        p.ClarificationChoice(label="Naruto (manga)", entity=NAMI)])),
    p.AgentResponse(answer="Luffy is in One Piece.", result_entities=[LUFFY], confidence=0.9,
                    evidence=p.Evidence(paths=[PATH]), warnings=["fast path"]),
]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: type(e).__name__)
def test_every_contract_round_trips_through_its_json_schema(example: BaseModel) -> None:
    cls = type(example)
    schema = cls.model_json_schema()
    data = json.loads(example.model_dump_json())
    jsonschema.validate(data, schema)  # what a constrained decoder would allow admits this instance
    assert cls.model_validate(data) == example
    assert cls.model_validate_json(example.model_dump_json()) == example


def _walk(node: Any, path: str = "") -> list[str]:
    """Paths of every string without maxLength (and no enum/const/pattern-fixed length) or unbounded array."""
    bad: list[str] = []
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "string" and "maxLength" not in node and "enum" not in node and "const" not in node:
            bad.append(path)
        if kind == "array" and "maxItems" not in node:
            bad.append(path)
        for k, v in node.items():
            bad += _walk(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            bad += _walk(v, f"{path}[{i}]")
    return bad


MODEL_FACING = [p.QueryRewrite, p.NextStep, p.SearchIntent, p.GraphIntent, p.StructuredQuery, p.DraftAnswer,
                p.SufficiencyReport, p.GradeReport, p.AgentResponse]


@pytest.mark.parametrize("cls", MODEL_FACING, ids=lambda c: c.__name__)
def test_every_string_and_list_a_model_can_emit_is_bounded(cls: type[BaseModel]) -> None:
    assert _walk(cls.model_json_schema()) == []


def test_next_step_schema_admits_only_consistent_actions() -> None:
    schema = p.NextStep.model_json_schema()
    good = json.loads(p.NextStep(action="qdrant_search", rationale="r", search_intent=SEARCH).model_dump_json(
        exclude_none=True))
    jsonschema.validate(good, schema)
    mismatched = {"action": "pg_graph", "rationale": "r", "search_intent": good["search_intent"]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(mismatched, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"action": "finish", "rationale": "r", "graph_intent": json.loads(GRAPH.model_dump_json())},
                            schema)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"action": "pg_graph", "rationale": "r"}, "action='pg_graph' requires graph_intent"),
        ({"action": "qdrant_search", "rationale": "r"}, "action='qdrant_search' requires search_intent"),
        ({"action": "finish", "rationale": "r", "search_intent": SEARCH.model_dump()},
         "action='finish' must not carry search_intent"),
        ({"action": "qdrant_search", "rationale": "r", "search_intent": SEARCH.model_dump(),
          "graph_intent": GRAPH.model_dump()}, "must not carry graph_intent"),
        ({"action": "sql", "rationale": "r"},
         "Input should be 'qdrant_search', 'pg_graph', 'pg_query', 'similar' or 'finish'"),
        ({"action": "pg_query", "rationale": "r"}, "action='pg_query' requires structured_query"),
    ],
)
def test_inconsistent_next_steps_are_rejected_with_clear_messages(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        p.NextStep.model_validate(data)


@pytest.mark.parametrize(
    ("cls", "data", "message"),
    [
        (p.GraphIntent, {**GRAPH.model_dump(), "max_hops": 10**9}, "less than or equal to 6"),
        (p.GraphIntent, {**GRAPH.model_dump(), "max_hops": 0}, "greater than or equal to 1"),
        (p.GraphIntent, {**GRAPH.model_dump(), "limits": {"max_results": -5}}, "greater than or equal to 1"),
        (p.GraphIntent, {**GRAPH.model_dump(), "edge_types": ["DROP TABLE anime"]}, "Input should be 'sequel'"),
        (p.GraphIntent, {**GRAPH.model_dump(), "edge_types": ["ally"] * 13}, "at most 12 items"),
        (p.GraphIntent, {**GRAPH.model_dump(), "end": None}, "query_type='path' requires an end node"),
        (p.GraphIntent, {**GRAPH.model_dump(), "end": GRAPH.start.model_dump()}, "needs two different nodes"),
        (p.EntityRef, {"entity_type": "character", "id": "1; DROP TABLE x"}, "String should match pattern"),
        (p.EntityRef, {"entity_type": "user", "id": U1}, "Input should be 'anime'"),
        (p.SearchIntent, {"rationale": "r", "entity_type": "anime"}, "needs a query, or filters.id"),
        (p.SearchIntent, {"rationale": "r", "entity_type": "anime", "query": "x", "limit": 10_000},
         "less than or equal to 50"),
        (p.SearchIntent, {"rationale": "r", "entity_type": "anime", "query": "x" * 501}, "at most 500 characters"),
        (p.SearchFilters, {"id": [U1] * 10_000}, "at most 50 items"),
        (p.SearchIntent, {"rationale": "r", "entity_type": "anime", "query": "x", "filters": {"anime_id": U1}},
         "filters.anime_id applies to episode and character searches, not anime"),
        (p.SearchFilters, {"year_min": 2010, "year_max": 2000}, "year_min \\(2010\\) is after year_max"),
        (p.SearchFilters, {"owner": "x"}, "Extra inputs are not permitted"),
        (p.DraftAnswer, {"answer": "a", "confidence": 1.5}, "less than or equal to 1"),
        (p.GraphPath, {"nodes": [LUFFY.model_dump(), NAMI.model_dump()], "rels": []}, "needs 1 rels"),
        (p.AgentResponse, {"answer": "a", "confidence": 0.5, "status": "needs_clarification"},
         "clarification is present exactly when"),
    ],
)
def test_out_of_bound_values_are_rejected_with_clear_messages(cls: type[BaseModel], data: dict[str, Any],
                                                              message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        cls.model_validate(data)


def test_uuids_are_normalised_to_lower_case() -> None:
    assert p.EntityRef(entity_type="anime", id=U1.upper()).id == U1


def test_the_uuid_pattern_reaches_the_json_schema() -> None:
    # a constrained decoder only knows what the schema says: without the pattern it writes any string
    schema = p.EntityRef.model_json_schema()["properties"]["id"]
    assert schema["pattern"] == p.base.UUID_PATTERN and schema["maxLength"] == 36


def test_long_summaries_are_clipped_by_whole_lines_and_say_so() -> None:
    from agentic_rag.protocol.base import SUMMARY_MAX, clip_lines

    lines = [f"- node {i}: " + "Very Long Synthetic Name " * 6 for i in range(500)]
    text = clip_lines(lines)
    assert len(text) <= SUMMARY_MAX
    assert text.splitlines()[-1].startswith("... ") and "more line(s)" in text
    p.GraphResult(summary=text, count=500)  # fits the contract
    assert clip_lines(["a", "b"]) == "a\nb"
    assert len(clip_lines(["x" * 50_000])) <= SUMMARY_MAX


def test_validator_rules_are_in_the_schema_too() -> None:
    """What the validators reject, the schema a constrained decoder follows cannot produce."""
    search = p.SearchIntent.model_json_schema()
    jsonschema.validate({"rationale": "r", "entity_type": "anime", "query": "q", "filters": {"format": ["tv"]}},
                        search)
    with pytest.raises(jsonschema.ValidationError):  # no query
        jsonschema.validate({"rationale": "r", "entity_type": "anime", "filters": {"id": [U1]}}, search)
    # which filters apply to which type stays a validator rule (a schema variant per type cost regex
    # decoders too much), so the validator rejects what the schema admits here
    odd = {"rationale": "r", "entity_type": "character", "query": "q", "filters": {"format": ["tv"]}}
    jsonschema.validate(odd, search)
    with pytest.raises(ValueError, match="applies to anime"):
        p.SearchIntent.model_validate(odd)
    graph = p.GraphIntent.model_json_schema()
    start = json.loads(LUFFY.model_dump_json())
    jsonschema.validate({"rationale": "r", "query_type": "neighbors", "start": start}, graph)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"rationale": "r", "query_type": "path", "start": start}, graph)
    path = p.GraphPath.model_json_schema()
    jsonschema.validate({"nodes": [start, start], "rels": ["ally"]}, path)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"nodes": [start, start], "rels": []}, path)
    # code may still build a fetch by id without a query
    assert p.SearchIntent(rationale="fetch", entity_type="anime", filters=p.SearchFilters(id=[U1])).query is None


SOME_ID = "00000000-0000-4000-8000-000000000001"


@pytest.mark.parametrize(("data", "message"), [
    ({"entity_type": "anime"}, "needs examples (like) or a wish (query)"),
    ({"entity_type": "manga", "query": "dark", "filters": {"format": ["movie"]}}, "applies to anime"),
    ({"entity_type": "anime", "query": "x", "filters": {"year_min": 2010, "year_max": 2000}}, "is after year_max"),
    ({"entity_type": "anime", "query": "x", "filters": {"min_length": 50, "max_length": 13}}, "is above max_length"),
    ({"entity_type": "novel", "query": "x"}, "Input should be 'anime' or 'manga'"),
    ({"entity_type": "anime", "like": [{"entity_type": "anime", "id": SOME_ID}] * 6}, "at most 5 items"),
    ({"entity_type": "anime", "query": "x", "limit": 500}, "less than or equal to 20"),
])
def test_a_recommendation_is_bounded_and_says_what_is_wrong(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        p.SimilarIntent.model_validate({"rationale": "r", **data})


def test_a_similar_step_carries_exactly_its_intent() -> None:
    intent = {"rationale": "r", "entity_type": "anime", "like": [{"entity_type": "anime", "id": SOME_ID}]}
    step = p.NextStep.model_validate({"action": "similar", "rationale": "r", "similar_intent": intent})
    assert step.intents() == [p.SimilarIntent.model_validate(intent)]
    with pytest.raises(ValidationError, match="action='similar' requires similar_intent"):
        p.NextStep.model_validate({"action": "similar", "rationale": "r"})
    variant = next(v for v in p.NextStep.model_json_schema()["anyOf"] if v["title"] == "NextStep[similar]")
    assert "similar_intent" in variant["required"] and variant["properties"]["search_intent"] == {"type": "null"}
    # the key a card keeps: the same ask whatever the rationale
    assert p.SimilarIntent.model_validate({**intent, "rationale": "other"}).asked() == step.intents()[0].asked()


def test_a_draft_that_says_only_what_is_not_recorded_is_told_apart() -> None:
    from agentic_rag.protocol import NOT_RECORDED, DraftAnswer, EntityRef, Evidence
    ref = EntityRef(entity_type="manga", id="00000000-0000-0000-0000-000000000001")
    said = "The catalog does not record the volumes of X."
    unrecorded = DraftAnswer(answer=said, source_entities=[ref], confidence=0.6,
                             evidence=Evidence(facts=[f"{NOT_RECORDED}{said}"]))
    assert unrecorded.only_unrecorded
    # an entity that answers, or any fact besides, is an answer
    assert not unrecorded.model_copy(update={"result_entities": [ref]}).only_unrecorded
    assert not unrecorded.model_copy(update={"evidence": Evidence(facts=[f"{NOT_RECORDED}{said}", "X: 3"])}) \
        .only_unrecorded
    assert not DraftAnswer(answer="nothing", confidence=0.1).only_unrecorded

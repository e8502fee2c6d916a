"""How a call is put to a text model: decoding narrowed to the entities shown; compact calls as forms."""

from __future__ import annotations

import json
from typing import Any

from agentic_rag.models.prompts import render, shaper
from agentic_rag.models.roles import CardEntity, ContextCard, DraftInput, SelectInput
from agentic_rag.models.schemas import narrow, token_bound
from agentic_rag.protocol import (
    DraftAnswer,
    EntityLinks,
    EntityRef,
    LinkCandidate,
    LinkedMention,
    NextStep,
    QueryRewrite,
)

BEBOP = "1b62e624-1240-5f43-bbba-dfcca7b108d9"
SUNRISE = "8d0c6bdf-63a9-55bc-af32-d1d8b200aa0d"


def _links() -> EntityLinks:
    cand = LinkCandidate(entity=EntityRef(entity_type="anime", id=BEBOP), name="Cowboy Bebop",
                         matched="Cowboy Bebop", match="exact", year=1998)
    return EntityLinks(mentions=[LinkedMention(text="cowboy bebop", start=20, end=32, candidates=[cand])])


def _select() -> SelectInput:
    rw = QueryRewrite(rewritten_query="Which studio animated Cowboy Bebop?", needs_external_context=True,
                      retrieval_mode="graph", mentions=["cowboy bebop"], rationale="studio of an anime")
    return SelectInput(question="which studio animated cowboy bebop", links=_links(), rewrite=rw, turn=0,
                       max_turns=4)


def _variants(schema: dict[str, Any]) -> list[str]:
    return [v["properties"]["action"]["const"] for v in schema["anyOf"]]


def test_an_entity_can_be_named_only_if_the_call_was_shown_it() -> None:
    schema = narrow(NextStep.model_json_schema(), [("anime", BEBOP)])
    text = json.dumps(schema)
    assert BEBOP in text and SUNRISE not in text and "$ref" not in text
    # without any entity, no step that needs one is offered: a graph step needs its start id
    assert "pg_graph" not in _variants(narrow(NextStep.model_json_schema(), []))
    draft = narrow(DraftAnswer.model_json_schema(), [])
    assert draft["properties"]["result_entities"]["maxItems"] == 0


def test_a_compact_call_is_a_form_whose_choices_are_what_the_call_was_shown() -> None:
    messages = render(_select(), NextStep)
    shaped = shaper("compact")(messages, NextStep)
    prompt = "\n".join(m["content"] for m in shaped.messages)
    assert BEBOP not in prompt and "Cowboy Bebop (anime)" in prompt and "Output schema" not in prompt
    steps = [v["properties"]["step"]["const"] for v in shaped.schema["anyOf"]]
    assert "finish" not in steps  # nothing retrieved yet: finishing cannot answer
    related = next(v for v in shaped.schema["anyOf"] if v["properties"]["step"]["const"] == "related")
    assert related["properties"]["of"]["enum"] == ["Cowboy Bebop (anime)"]
    assert "animated_by" in related["properties"]["relation"]["enum"]
    assert "family" not in related["properties"]["relation"]["enum"]  # a relation of characters, not of anime
    # the filled form becomes the contract, with the real id
    step = NextStep.model_validate_json(shaped.restore('{"step":"related","of":"Cowboy Bebop (anime)",'
                                                       '"relation":"animated_by"}'))
    assert step.graph_intent is not None and step.graph_intent.start.id == BEBOP
    assert step.graph_intent.edge_types == ["animated_by"]
    assert token_bound(shaped.schema) < 80  # a few words, not a dozen nested fields
    # the full style keeps the loop's messages and real ids
    full = shaper("full")(messages, NextStep)
    assert full.messages == messages and BEBOP in json.dumps(full.schema)


def test_a_step_already_taken_is_not_offered_again() -> None:
    card = ContextCard(turn=0, source="pg_graph", request="neighbors from Cowboy Bebop via animated_by",
                       summary=f"Neighbors (1):\n- animated_by: Sunrise (studio) [id {SUNRISE}]", count=1,
                       entities=[CardEntity(ref=EntityRef(entity_type="studio", id=SUNRISE), name="Sunrise (studio)")],
                       data={"kind": "neighbors", "start": BEBOP, "end": None, "edge_types": ["animated_by"]})
    inp = _select().model_copy(update={"cards": [card], "turn": 1})
    shaped = shaper("compact")(render(inp, NextStep), NextStep)
    offered = {(of, r) for v in shaped.schema["anyOf"] if v["properties"]["step"]["const"] == "related"
               for of in v["properties"]["of"]["enum"] for r in v["properties"]["relation"]["enum"]}
    assert ("Cowboy Bebop (anime)", "animated_by") not in offered and ("Cowboy Bebop (anime)", "staff") in offered
    assert ("Sunrise (studio)", "animated") in offered
    assert "- animated_by: Sunrise (studio)" in shaped.messages[-1]["content"]  # ids never shown


def test_a_compact_draft_picks_entities_and_the_answer_is_the_context_line() -> None:
    card = ContextCard(turn=0, source="pg_graph", request="neighbors from Cowboy Bebop via animated_by",
                       summary=f"Neighbors (1):\n- animated_by: Sunrise (studio) [id {SUNRISE}]", count=1,
                       entities=[CardEntity(ref=EntityRef(entity_type="studio", id=SUNRISE), name="Sunrise (studio)")])
    inp = DraftInput(question="which studio animated cowboy bebop", links=_links(), rewrite=_select().rewrite,
                     cards=[card])
    shaped = shaper("compact")(render(inp, DraftAnswer), DraftAnswer)
    assert shaped.schema["properties"]["answer"]["items"]["enum"] == ["Sunrise (studio)"]  # only what was found
    draft = DraftAnswer.model_validate_json(shaped.restore('{"answer":["Sunrise (studio)"]}'))
    assert draft.result_entities == [EntityRef(entity_type="studio", id=SUNRISE)]
    assert draft.answer == "animated_by: Sunrise (studio)" and draft.confidence >= 0.6
    empty = DraftAnswer.model_validate_json(shaped.restore('{"answer":[]}'))
    assert not empty.result_entities and empty.confidence < 0.5


def test_messages_that_are_no_role_call_keep_the_whole_schema() -> None:
    shaped = shaper("compact")([{"role": "user", "content": "hello"}], QueryRewrite)
    assert shaped.schema == QueryRewrite.model_json_schema() and shaped.restore("x") == "x"

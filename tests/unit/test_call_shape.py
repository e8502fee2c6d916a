"""How a call is put to a text model: decoding narrowed to the entities shown, compact prompts, handles."""

from __future__ import annotations

import json
from typing import Any

from agentic_rag.models.prompts import render, shaper
from agentic_rag.models.roles import SelectInput
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


def test_compact_budgets_are_tighter_and_bound_the_tokens() -> None:
    full = narrow(QueryRewrite.model_json_schema(), [])
    compact = narrow(QueryRewrite.model_json_schema(), [], compact=True)
    assert compact["properties"]["rationale"]["maxLength"] < full["properties"]["rationale"]["maxLength"]
    assert 0 < token_bound(compact) < token_bound(full)
    step = json.dumps(narrow(NextStep.model_json_schema(), [("anime", BEBOP)], compact=True))
    assert '"also"' not in step and '"limits"' not in step  # optional extras a small model never writes


def test_a_compact_call_names_entities_by_handle_and_reads_back_their_ids() -> None:
    messages = render(_select(), NextStep)
    shaped = shaper("compact")(messages, NextStep)
    prompt = "\n".join(m["content"] for m in shaped.messages)
    assert BEBOP not in prompt and "id=#1" in prompt and "Output schema" not in prompt
    assert "finish" not in _variants(shaped.schema)  # nothing retrieved yet: finishing cannot answer
    text = ('{"action":"pg_graph","rationale":"studio","graph_intent":{"rationale":"hop","query_type":"neighbors",'
            '"start":{"entity_type":"anime","id":"#1"},"end":null,"max_hops":1,"edge_types":["animated_by"]},'
            '"search_intent":null,"structured_query":null}')
    step = NextStep.model_validate_json(shaped.restore(text))
    assert step.graph_intent is not None and step.graph_intent.start.id == BEBOP
    # the full style keeps the loop's messages and real ids
    full = shaper("full")(messages, NextStep)
    assert full.messages == messages and BEBOP in json.dumps(full.schema)


def test_messages_that_are_no_role_call_keep_the_whole_schema() -> None:
    shaped = shaper("compact")([{"role": "user", "content": "hello"}], QueryRewrite)
    assert shaped.schema == QueryRewrite.model_json_schema() and shaped.restore("x") == "x"

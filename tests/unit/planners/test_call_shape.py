"""How a call is put to a text model: decoding narrowed to the entities shown; compact calls as forms."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentic_rag.models.base import Message
from agentic_rag.models.schemas import closed_options, narrow
from agentic_rag.planners.llm.chat import read_input
from agentic_rag.planners.llm.forms import STEP_WORDS
from agentic_rag.planners.llm.prompts import STATE_CLOSE, STATE_OPEN, render, shaper
from agentic_rag.protocol import (
    DraftAnswer,
    EntityLinks,
    EntityRef,
    LinkCandidate,
    LinkedMention,
    NextStep,
    QueryRewrite,
    SearchIntent,
)
from agentic_rag.protocol.roles import CardEntity, ContextCard, DraftInput, SelectInput
from agentic_rag.protocol.vocabulary import EDGE_TYPES

BEBOP = "1b62e624-1240-5f43-bbba-dfcca7b108d9"
SUNRISE = "8d0c6bdf-63a9-55bc-af32-d1d8b200aa0d"


def _links(question: str = "which studio animated cowboy bebop") -> EntityLinks:
    cand = LinkCandidate(entity=EntityRef(entity_type="anime", id=BEBOP), name="Cowboy Bebop",
                         matched="Cowboy Bebop", match="exact", year=1998)
    start = question.index("cowboy bebop")
    return EntityLinks(mentions=[LinkedMention(text="cowboy bebop", start=start, end=start + 12, candidates=[cand])])


def _asking(question: str) -> SelectInput:
    return _select().model_copy(update={"question": question, "links": _links(question)})


def _select() -> SelectInput:
    rw = QueryRewrite(rewritten_query="Which studio animated Cowboy Bebop?", needs_external_context=True,
                      retrieval_mode="graph", mentions=["cowboy bebop"], rationale="studio of an anime")
    return SelectInput(question="which studio animated cowboy bebop", links=_links(), rewrite=rw, turn=0,
                       max_turns=4)


def _neighbors(start: str, edge: str, entity_type: str, found: list[tuple[str, str, str]]) -> ContextCard:
    """A one-relation step's card: (id, name, qualifier) per neighbor, its line "- edge: Name (type) (qualifier)",
    the qualifiers in its meta as the graph retriever writes them."""
    lines = "\n".join(f"- {edge}: {n} ({entity_type})" + (f" ({q})" if q else "") + f" [id {i}]" for i, n, q in found)
    return ContextCard(turn=0, source="pg_graph", request=f"neighbors from {start} via {edge}", count=len(found),
                       summary=f"Neighbors ({len(found)}):\n{lines}",
                       entities=[CardEntity(ref=EntityRef(entity_type=entity_type, id=i), name=f"{n} ({entity_type})")
                                 for i, n, _ in found],
                       data={"kind": "neighbors", "start": start, "end": None, "edge_types": [edge],
                             "meta": {"details": {i: q for i, _, q in found if q}}})


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


def _state(messages: list[Message]) -> dict[str, Any]:
    """The state block of a rendered prompt's user message, as JSON (what the prompt shows the model)."""
    user = messages[-1]["content"]
    return dict(json.loads(user[user.index(STATE_OPEN) + len(STATE_OPEN):user.index(STATE_CLOSE)]))


def _steps(schema: dict[str, Any]) -> list[str]:
    return list(schema["properties"]["step"]["enum"])


def test_a_compact_call_is_a_form_whose_choices_are_what_the_call_was_shown() -> None:
    messages = render(_select(), NextStep)
    shaped = shaper("compact")(_select(), NextStep)
    prompt = "\n".join(m["content"] for m in shaped.messages)
    assert BEBOP not in prompt and "Cowboy Bebop (anime)" in prompt and "Output schema" not in prompt
    steps = _steps(shaped.schema)
    assert "finish: the steps so far answer it" not in steps  # nothing retrieved yet: finishing cannot answer
    assert "studio that animated Cowboy Bebop (anime)" in steps
    assert not any(s.startswith("family of") for s in steps)  # a relation of characters, not of anime
    assert "search the characters by description" in steps
    # a closed choice a backend can score whole; calibrated against the call without the question
    assert closed_options(shaped.schema) == [json.dumps({"step": s}, separators=(",", ":")) for s in steps]
    assert shaped.calibration is not None and "which studio" not in shaped.calibration[-1]["content"]
    assert shaped.calibration[-1]["content"].startswith("Question: N/A")
    # the filled form becomes the contract, with the real id
    step = NextStep.model_validate_json(shaped.restore('{"step":"studio that animated Cowboy Bebop (anime)"}'))
    assert step.graph_intent is not None and step.graph_intent.start.id == BEBOP
    assert step.graph_intent.edge_types == ["animated_by"]
    search = NextStep.model_validate_json(shaped.restore('{"step":"search the characters by description"}'))
    assert search.search_intent is not None and search.search_intent.entity_type == "character"
    assert search.search_intent.query == "which studio animated cowboy bebop"  # the question's own words
    # the full style is the rendered prompt, with real ids
    full = shaper("full")(_select(), NextStep)
    assert full.messages == messages and BEBOP in json.dumps(full.schema) and full.calibration is None


def test_a_step_already_taken_is_not_offered_again() -> None:
    card = ContextCard(turn=0, source="pg_graph", request="neighbors from Cowboy Bebop via animated_by",
                       summary=f"Neighbors (1):\n- animated_by: Sunrise (studio) [id {SUNRISE}]", count=1,
                       entities=[CardEntity(ref=EntityRef(entity_type="studio", id=SUNRISE), name="Sunrise (studio)")],
                       data={"kind": "neighbors", "start": BEBOP, "end": None, "edge_types": ["animated_by"]})
    inp = _select().model_copy(update={"cards": [card], "turn": 1})
    shaped = shaper("compact")(inp, NextStep)
    steps = _steps(shaped.schema)
    assert "studio that animated Cowboy Bebop (anime)" not in steps
    assert "staff of Cowboy Bebop (anime): director, author, composer, designers" in steps
    assert "anime animated by Sunrise (studio)" in steps and "finish: the steps so far answer it" in steps
    assert "- animated_by: Sunrise (studio)" in shaped.messages[-1]["content"]  # ids never shown


def test_every_relation_has_words() -> None:
    assert set(STEP_WORDS) == {e.name for e in EDGE_TYPES}
    assert len(set(STEP_WORDS.values())) == len(STEP_WORDS)


def test_a_compact_draft_picks_entities_and_the_writer_says_them() -> None:
    card = ContextCard(turn=0, source="pg_graph", request="neighbors from Cowboy Bebop via animated_by",
                       summary=f"Neighbors (1):\n- animated_by: Sunrise (studio) [id {SUNRISE}]", count=1,
                       entities=[CardEntity(ref=EntityRef(entity_type="anime", id=BEBOP), name="Cowboy Bebop (anime)"),
                                 CardEntity(ref=EntityRef(entity_type="studio", id=SUNRISE), name="Sunrise (studio)")],
                       data={"kind": "neighbors", "start": BEBOP, "end": None, "edge_types": ["animated_by"]})
    inp = DraftInput(question="which studio animated cowboy bebop", links=_links(), rewrite=_select().rewrite,
                     cards=[card])
    shaped = shaper("compact")(inp, DraftAnswer)
    assert shaped.schema["properties"]["answer"]["items"]["enum"] == ["Sunrise (studio)"]  # only what was found
    draft = DraftAnswer.model_validate_json(shaped.restore('{"answer":["Sunrise (studio)"]}'))
    assert draft.result_entities == [EntityRef(entity_type="studio", id=SUNRISE)]
    assert draft.answer == "Cowboy Bebop was animated by Sunrise." and draft.confidence >= 0.6  # not the card's line
    empty = DraftAnswer.model_validate_json(shaped.restore('{"answer":[]}'))
    assert not empty.result_entities and empty.confidence < 0.5


def test_a_select_call_says_what_the_words_ask_for_in_the_steps_words() -> None:
    shaped = shaper("compact")(_select(), NextStep)
    user = shaped.messages[-1]["content"]
    assert 'The words ask for: studio that animated "cowboy bebop"' in user  # the reader's cue words
    assert "studio that animated Cowboy Bebop (anime)" in _steps(shaped.schema)  # ... match a step's words
    user = shaper("compact")(_asking("which studio made the sequel of cowboy bebop"),
                             NextStep).messages[-1]["content"]
    assert 'The words ask for: sequel of "cowboy bebop", then studio that animated that' in user
    user = shaper("compact")(_asking("how many episodes does cowboy bebop have"),
                             NextStep).messages[-1]["content"]
    assert 'The words ask for: details of "cowboy bebop": episode count' in user


def test_a_details_step_reads_the_record_and_its_story_in_one_turn() -> None:
    shaped = shaper("compact")(_select(), NextStep)
    words = "details of Cowboy Bebop (anime): year, episode count, genres, story"
    assert words in _steps(shaped.schema)
    step = NextStep.model_validate_json(shaped.restore(json.dumps({"step": words})))
    assert step.action == "pg_query" and step.structured_query is not None
    assert step.structured_query.entity_type == "anime"
    assert [(c.field, c.op, c.value) for c in step.structured_query.where] == [("title", "eq", "Cowboy Bebop")]
    story = step.also[0]
    assert isinstance(story, SearchIntent) and story.filters.id == [BEBOP] and story.limit == 1


def test_an_answer_says_a_records_asked_values() -> None:
    ref = EntityRef(entity_type="anime", id=BEBOP)
    row = {"id": BEBOP, "entity_type": "anime", "name": "Cowboy Bebop", "year": 1998, "episode_count": 26}
    record = ContextCard(turn=0, source="pg_query", request="anime where title eq Cowboy Bebop", count=1,
                         summary=(f"anime where title eq Cowboy Bebop (1 of 1 matches):\n"
                                  f"- Cowboy Bebop (anime, id {BEBOP}): year=1998, episode_count=26"),
                         entities=[CardEntity(ref=ref, name="Cowboy Bebop (anime)")],
                         data={"kind": "query", "rows": [row], "total": 1})
    inp = DraftInput(question="how many episodes does cowboy bebop have",
                     links=_links("how many episodes does cowboy bebop have"),
                     rewrite=_select().rewrite, cards=[record])
    shaped = shaper("compact")(inp, DraftAnswer)
    assert BEBOP not in shaped.messages[-1]["content"]  # "(anime, id ...)" is written without the id
    draft = DraftAnswer.model_validate_json(shaped.restore('{"answer":["Cowboy Bebop (anime)"]}'))
    assert draft.answer == "Cowboy Bebop has 26 episodes."


def test_a_draft_may_pick_a_steps_findings_whole_or_those_one_qualifier_marks() -> None:
    cast = [(f"{i:08d}-0000-4000-8000-000000000000", name, role) for i, (name, role) in
            enumerate([("Spike Spiegel", "main"), ("Jet Black", "main"), ("Ein", "supporting")])]
    card = _neighbors(BEBOP, "features", "character", cast)
    question = "who are the main characters of cowboy bebop"
    inp = DraftInput(question=question, links=_links(question), rewrite=_select().rewrite, cards=[card])
    shaped = shaper("compact")(inp, DraftAnswer)
    options = shaped.schema["properties"]["answer"]["items"]["enum"]
    assert options[:3] == ["all found by step 1", "those marked main in step 1", "those marked supporting in step 1"]
    assert "Ein (character)" in options
    draft = DraftAnswer.model_validate_json(shaped.restore('{"answer":["those marked main in step 1"]}'))
    assert [r.id for r in draft.result_entities] == [cast[0][0], cast[1][0]]
    assert draft.answer == "The main characters of Cowboy Bebop are Spike Spiegel and Jet Black."
    whole = DraftAnswer.model_validate_json(shaped.restore('{"answer":["all found by step 1","Ein (character)"]}'))
    assert len(whole.result_entities) == 3 and whole.citations[-1] == "Ein"
    assert whole.answer == "The characters of Cowboy Bebop are Spike Spiegel, Jet Black and Ein."  # Ein is no main


def test_an_input_that_is_not_the_output_types_role_is_refused() -> None:
    for style in ("compact", "full"):
        with pytest.raises(ValueError, match="the select role does not produce QueryRewrite"):
            shaper(style)(_select(), QueryRewrite)


def test_the_state_block_is_the_role_input_as_written_and_a_lone_surrogate_does_not_break_it() -> None:
    inp = _select()
    assert _state(render(inp, NextStep)) == inp.model_dump(mode="json", exclude_none=True)
    assert read_input(render(inp, NextStep), NextStep) == inp  # what the chat route reads back
    with pytest.raises(ValueError, match="the select role does not produce QueryRewrite"):
        read_input(render(inp, NextStep), QueryRewrite)
    # UTF-8 cannot hold a lone surrogate (a model's JSON may decode to one): the prompt is still written
    odd = inp.model_copy(update={"question": "which studio animated cowboy bebop \ud800"})
    assert _state(render(odd, NextStep))["question"].endswith("\ud800")


def test_a_state_over_its_budget_shortens_the_oldest_cards_and_keeps_their_ids() -> None:
    from agentic_rag.protocol.roles import ContextCard

    bebop = CardEntity(ref=EntityRef(entity_type="anime", id=BEBOP), name="Cowboy Bebop", detail="1998")
    cards = [ContextCard(turn=i, source="qdrant_search", request=f"step {i}", summary=f"{i} " + "x" * 7990,
                         count=1, entities=[bebop])
             for i in range(3)]
    inp = _select().model_copy(update={"cards": cards})
    messages = render(inp, NextStep)
    state = _state(messages)
    summaries = [c["summary"] for c in state["cards"]]
    assert all(len(s) <= 203 for s in summaries[:-1]) and summaries[-1] == cards[-1].summary  # the newest is kept
    assert all(c["entities"][0]["ref"]["id"] == BEBOP for c in state["cards"])


def test_only_a_full_style_prompt_is_fitted_to_its_budget() -> None:
    card = _neighbors(BEBOP, "features", "character",
                      [(f"{i:08d}-0000-4000-8000-000000000000", f"Character {i}", "main") for i in range(40)])
    inp = _select().model_copy(update={"cards": [card], "turn": 1})
    whole = render(inp, NextStep, fit=False)
    assert _state(whole)["cards"][0]["summary"] == card.summary
    full = shaper("full")(inp, NextStep)  # a full-style prompt is fitted to the role's budget ...
    assert len(_state(full.messages)["cards"][0]["summary"]) < len(card.summary)
    assert full.messages == render(inp, NextStep)
    compact = shaper("compact")(inp, NextStep)  # ... a compact form shows its own lines, from the whole card
    assert "- features: Character 13 (character) (main)" in compact.messages[-1]["content"]

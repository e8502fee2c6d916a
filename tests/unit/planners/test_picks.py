"""A model planner's answer: the model picks what answers, the heuristic's writer says it.

The model here is scripted (tests.support.scripted): its replies are fixed, and everything between the role
input and the draft (the shaper's form or prompt, the expansion, the writer, the validation) is ours, as a served
model would run through it. The catalog is made up: none of these questions is in an eval set.
"""

from __future__ import annotations

import json
from typing import Any

from agentic_rag.eval.syntax import card_syntax
from agentic_rag.models.base import StructuredGenerator
from agentic_rag.planners.heuristic.progress import Progress
from agentic_rag.planners.heuristic.writer import _pair, draft
from agentic_rag.planners.llm.prompts import PromptStyle, shaper
from agentic_rag.protocol import DraftAnswer, EntityLinks, EntityRef, GraphPath, LinkCandidate, LinkedMention
from agentic_rag.protocol.reading import Analysis
from agentic_rag.protocol.roles import CardEntity, ContextCard, DraftInput
from agentic_rag.understanding.reading import read
from tests.support.scripted import ScriptedText

SHOW = "5d7a3c36-0f6b-5d4e-9a63-0c1a7f8e2b01"  # "Star Drifters", an anime no catalog of ours holds
STUDIO = "5d7a3c36-0f6b-5d4e-9a63-0c1a7f8e2b02"
DIRECTOR = "5d7a3c36-0f6b-5d4e-9a63-0c1a7f8e2b03"
COMPOSER = "5d7a3c36-0f6b-5d4e-9a63-0c1a7f8e2b04"
SEQUEL = "5d7a3c36-0f6b-5d4e-9a63-0c1a7f8e2b05"
ELSEWHERE = "5d7a3c36-0f6b-5d4e-9a63-0c1a7f8e2b06"  # a reading of the name linking offered, never found by a step
SHOW_REF = EntityRef(entity_type="anime", id=SHOW)


def _links(question: str) -> EntityLinks:
    found = [LinkCandidate(entity=SHOW_REF, name="Star Drifters", matched="Star Drifters", match="exact", year=2003),
             LinkCandidate(entity=EntityRef(entity_type="manga", id=ELSEWHERE), name="Star Drifters",
                           matched="Star Drifters", match="exact", year=2001)]
    if "moonlit works" in question:
        found = [LinkCandidate(entity=EntityRef(entity_type="studio", id=STUDIO), name="Moonlit Works",
                               matched="Moonlit Works", match="exact")]
    text = "star drifters" if "star drifters" in question else "moonlit works"
    start = question.index(text)
    return EntityLinks(mentions=[LinkedMention(text=text, start=start, end=start + len(text), candidates=found)])


def _search() -> ContextCard:
    """The show found by name, as a search step's card holds it (its row carries its story)."""
    row = {"id": SHOW, "entity_type": "anime", "name": "Star Drifters", "year": 2003, "episode_count": 24,
           "snippet": "Star Drifters. A courier crew hauls cargo between dying moons.", "about_at": 15}
    return ContextCard(turn=0, source="qdrant_search", request="anime search for 'star drifters'", count=1,
                       summary=f"1 anime result(s):\n1. Star Drifters (anime, 2003) [id {SHOW}]",
                       entities=[CardEntity(ref=SHOW_REF, name="Star Drifters", detail="2003")],
                       data={"query": "star drifters", "entity_type": "anime", "ids": [], "rows": [row]})


def _neighbors(turn: int, start: tuple[str, str, str], edge: str,
               found: list[tuple[str, str, str, str]]) -> ContextCard:
    """A relation step's card as the graph retriever writes it: the start first among its entities, a path
    and a line per neighbor ("- Star Drifters (anime) --staff--> Ren Mori (person) (music) [end id ...]")."""
    sid, sname, stype = start
    lines = [f"- {sname} ({stype}) --{edge}--> {n} ({t})" + (f" ({q})" if q else "") + f" [end id {i}]"
             for i, n, t, q in found]
    return ContextCard(
        turn=turn, source="pg_graph", request=f"neighbors from {sname} via {edge}", count=len(found),
        summary=f"Neighbors of {sname} via {edge} ({len(found)}):\n" + "\n".join(lines),
        entities=[CardEntity(ref=EntityRef(entity_type=stype, id=sid), name=f"{sname} ({stype})"),
                  *(CardEntity(ref=EntityRef(entity_type=t, id=i), name=f"{n} ({t})") for i, n, t, _ in found)],
        paths=[GraphPath(nodes=[EntityRef(entity_type=stype, id=sid), EntityRef(entity_type=t, id=i)], rels=[edge])
               for i, _, t, _ in found],
        data={"kind": "neighbors", "start": sid, "end": None, "edge_types": [edge],
              "meta": {"details": {i: q for i, _, _, q in found if q}}})


STAFF = _neighbors(1, (SHOW, "Star Drifters", "anime"), "staff",
                   [(DIRECTOR, "Aiko Tanabe", "person", "director"), (COMPOSER, "Ren Mori", "person", "music")])


def _input(question: str, *cards: ContextCard) -> DraftInput:
    links = _links(question)
    return DraftInput(question=question, links=links, reading=read(question, links),
                      rewrite={"rewritten_query": question, "needs_external_context": True,
                               "retrieval_mode": "graph", "mentions": ["star drifters"], "rationale": "test"},
                      cards=list(cards))


async def _drafted(inp: DraftInput, reply: dict[str, Any], style: PromptStyle = "compact") -> DraftAnswer:
    model = StructuredGenerator(ScriptedText(json.dumps(reply)), shape=shaper(style))
    return (await model.generate(inp, DraftAnswer)).output


def _is_sentences(answer: str) -> bool:
    return bool(answer) and answer.endswith(".") and not card_syntax(answer)


async def test_a_small_models_pick_is_said_as_a_sentence_whichever_it_picks() -> None:
    inp = _input("who composed the music for star drifters", _search(), STAFF)
    own = draft(inp)  # the writer's own choice: the composer the question asks for
    assert [r.id for r in own.result_entities] == [COMPOSER]
    same = await _drafted(inp, {"answer": ["Ren Mori (person)"]})
    assert same.answer == own.answer == "Star Drifters has music by Ren Mori."
    # the model picks the director: its choice stands, said by the step that found him, with his credit
    other = await _drafted(inp, {"answer": ["Aiko Tanabe (person)"]})
    assert [r.id for r in other.result_entities] == [DIRECTOR] and _is_sentences(other.answer)
    assert other.answer == "The credited staff of Star Drifters: Aiko Tanabe (director)."
    assert other.citations == ["Star Drifters", "Aiko Tanabe"] and other.confidence >= 0.6
    both = await _drafted(inp, {"answer": ["all found by step 2"]})
    assert both.answer == "The credited staff of Star Drifters: Aiko Tanabe (director) and Ren Mori (music)."
    assert {r.id for r in both.result_entities} == {DIRECTOR, COMPOSER}


async def test_a_pick_outside_the_context_is_refused_for_the_writers_own_choice() -> None:
    inp = _input("who composed the music for star drifters", _search(), STAFF)
    own = draft(inp)
    # a label the form never offered (a served model decodes under the form's schema; a model may still say it)
    assert await _drafted(inp, {"answer": ["Orbit Nine (person)"]}) == own
    # a full-style draft naming a reading linking offered that no step found, or an id from nowhere
    for stray in (ELSEWHERE, "5d7a3c36-0f6b-5d4e-9a63-0c1a7f8e2bff"):
        reply = {"answer": "staff: Ren Mori (person) (music) [end id ...]", "confidence": 0.9,
                 "result_entities": [{"entity_type": "manga", "id": stray}, {"entity_type": "person", "id": COMPOSER}]}
        assert await _drafted(inp, reply, "full") == own


async def test_a_full_style_drafts_words_are_the_writers_and_its_picks_the_models() -> None:
    inp = _input("who composed the music for star drifters", _search(), STAFF)
    reply = {"answer": "Star Drifters (anime) --staff--> Aiko Tanabe (person) [end id x]", "confidence": 0.7,
             "result_entities": [{"entity_type": "person", "id": DIRECTOR}]}
    drafted = await _drafted(inp, reply, "full")
    assert drafted.answer == "The credited staff of Star Drifters: Aiko Tanabe (director)."
    assert [r.id for r in drafted.result_entities] == [DIRECTOR] and drafted.confidence == 0.7
    nothing = await _drafted(inp, {"answer": "animated_by: ?", "confidence": 0.9}, "full")
    assert not nothing.result_entities and nothing.confidence <= 0.1 and _is_sentences(nothing.answer)


async def test_a_record_is_said_by_the_values_asked_and_a_count_by_its_total() -> None:
    record = ContextCard(turn=1, source="pg_query", request="anime where title eq Star Drifters", count=1,
                         summary=f"- Star Drifters (anime, id {SHOW}): year=2003, episode_count=24",
                         entities=[CardEntity(ref=SHOW_REF, name="Star Drifters (anime)")],
                         data={"kind": "query", "total": 1, "rows": [
                             {"id": SHOW, "entity_type": "anime", "name": "Star Drifters", "year": 2003,
                              "episode_count": 24}]})
    episodes = await _drafted(_input("how many episodes does star drifters have", record, _search()),
                              {"answer": ["Star Drifters (anime)"]})
    assert episodes.answer == "Star Drifters has 24 episodes."
    what = await _drafted(_input("what is star drifters about", record, _search()),  # the record first
                          {"answer": ["Star Drifters (anime)"]})
    assert what.answer.startswith("Star Drifters is an anime from 2003") and "dying moons" in what.answer
    sequel = _neighbors(1, (SHOW, "Star Drifters", "anime"), "sequel", [(SEQUEL, "Star Drifters II", "anime", "")])
    its = ContextCard(turn=2, source="pg_query", request="anime where title eq Star Drifters II", count=1,
                      summary=f"- Star Drifters II (anime, id {SEQUEL}): year=2006, episode_count=12",
                      entities=[CardEntity(ref=EntityRef(entity_type="anime", id=SEQUEL), name="Star Drifters II")],
                      data={"kind": "query", "total": 1, "rows": [
                          {"id": SEQUEL, "entity_type": "anime", "name": "Star Drifters II", "episode_count": 12}]})
    chained = await _drafted(_input("how many episodes does the sequel of star drifters have", _search(), sequel,
                                    its), {"answer": ["Star Drifters II (anime)"]})
    # said by the relation that found it, and the value asked of it from its record
    assert chained.answer == "The sequel to Star Drifters is Star Drifters II. Star Drifters II has 12 episodes."
    works = _neighbors(1, (STUDIO, "Moonlit Works", "studio"), "animated",
                       [(SHOW, "Star Drifters", "anime", ""), (SEQUEL, "Star Drifters II", "anime", "")])
    counted = await _drafted(_input("how many anime did moonlit works animate", works),
                             {"answer": ["all found by step 1"]})
    assert counted.answer == "Moonlit Works animated Star Drifters and Star Drifters II. That is 2 in total."


async def test_a_comparison_is_said_field_by_field() -> None:
    compared = ContextCard(
        turn=1, source="pg_graph", request="compare from Star Drifters and Star Drifters II", count=2,
        summary=f"Comparison of Star Drifters [id {SHOW}] and Star Drifters II [id {SEQUEL}]:\n- year: 2003 vs 2006",
        entities=[CardEntity(ref=SHOW_REF, name="Star Drifters (anime, 2003)"),
                  CardEntity(ref=EntityRef(entity_type="anime", id=SEQUEL), name="Star Drifters II (anime, 2006)")],
        data={"kind": "compare", "start": SHOW, "end": SEQUEL,
              "meta": {"a": {"name": "Star Drifters", "year": 2003}, "b": {"name": "Star Drifters II", "year": 2006}}})
    drafted = await _drafted(_input("which is older, star drifters or its sequel", compared),
                             {"answer": ["Star Drifters (anime)"]})
    assert drafted.answer == ("Star Drifters started in 2003 and Star Drifters II in 2006, so Star Drifters came "
                              "first, by 3 years.")


def test_a_comparison_with_nothing_both_records_have_says_so_never_nothing() -> None:
    other = EntityRef(entity_type="character", id=SEQUEL)
    ents = [CardEntity(ref=SHOW_REF, name="Star Drifters (anime, 2003)"), CardEntity(ref=other, name="Ren Mori")]
    compared = ContextCard(
        turn=1, source="pg_graph", request="compare from Star Drifters and Ren Mori", count=2,
        summary=f"Comparison of Star Drifters [id {SHOW}] and Ren Mori [id {SEQUEL}]", entities=ents,
        data={"kind": "compare", "start": SHOW, "end": SEQUEL,
              "meta": {"a": {"name": "Star Drifters"}, "b": {"name": "Ren Mori"}}})
    drafted = _pair(Analysis(intent="compare", mentions=[]), Progress(card=compared), ents)
    assert drafted.answer == "The catalog records nothing to compare Star Drifters (anime) and Ren Mori (character) by."
    assert drafted.confidence < 0.85

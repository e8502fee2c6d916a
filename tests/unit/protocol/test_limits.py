"""Length limits read from the contracts: the reader agrees with the JSON schema, and what code cuts to fits."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field, StringConstraints, TypeAdapter, ValidationError

from agentic_rag.orchestrator import cards, clarify, state
from agentic_rag.planners.heuristic.writer import _result
from agentic_rag.protocol import (
    AgentResponse,
    Clarification,
    ClarificationChoice,
    DraftAnswer,
    EntityLinks,
    EntityRef,
    Evidence,
    GraphIntent,
    GraphResult,
    LinkCandidate,
    LinkedMention,
    NextStep,
    QueryRewrite,
    RetrievalResult,
    SearchFilters,
    SearchIntent,
    StructuredQuery,
    SufficiencyReport,
)
from agentic_rag.protocol.limits import clip, max_len
from agentic_rag.protocol.roles import CardEntity, ContextCard, GradeInput, GradeItem, RewriteInput, SelectInput
from agentic_rag.retrievers.typeahead import TypeaheadQuery
from agentic_rag.serve.wire import CompletionOutput, ModelOutput
from agentic_rag.understanding.linker import _candidate

# Every (contract, field, of each item) that code under agentic_rag/ cuts a value to.
CUT_TO: list[tuple[type[BaseModel], str, bool]] = [
    (AgentResponse, "answer", False), (AgentResponse, "warnings", False), (AgentResponse, "warnings", True),
    (DraftAnswer, "answer", False), (DraftAnswer, "source_entities", False), (DraftAnswer, "result_entities", False),
    (DraftAnswer, "citations", False), (DraftAnswer, "citations", True),
    (Evidence, "paths", False), (Evidence, "facts", False), (Evidence, "facts", True),
    (QueryRewrite, "rewritten_query", False), (QueryRewrite, "mentions", False), (QueryRewrite, "mentions", True),
    (SufficiencyReport, "missing", False), (SufficiencyReport, "missing", True),
    (NextStep, "rationale", False), (GraphIntent, "rationale", False), (SearchIntent, "rationale", False),
    (SearchIntent, "query", False), (SearchFilters, "id", False),
    (Clarification, "question", False), (Clarification, "choices", False), (ClarificationChoice, "label", False),
    (GraphResult, "paths", False), (GraphResult, "node_ids", False),
    (LinkCandidate, "name", False), (LinkCandidate, "matched", False), (LinkedMention, "text", False),
    (CardEntity, "name", False), (ContextCard, "request", False), (ContextCard, "summary", False),
    (ContextCard, "entities", False), (ContextCard, "paths", False),
    (GradeInput, "items", False), (GradeItem, "snippet", False), (RewriteInput, "question", False),
    (SelectInput, "missing", False), (StructuredQuery, "where", False), (EntityLinks, "asks", False),
    (TypeaheadQuery, "q", False),
    (ModelOutput, "model", False), (CompletionOutput, "model", False), (CompletionOutput, "finish_reason", False),
]


def _adapter(model: type[BaseModel], field: str) -> TypeAdapter[Any]:
    """A validator of the field alone, with every constraint the model declares on it."""
    info = model.model_fields[field]
    field_type: Any = Annotated[info.annotation, info]  # built at run time from the model's own field
    return TypeAdapter(field_type)


def _prop(model: type[BaseModel], field: str, item: bool = False) -> dict[str, Any]:
    """The field's JSON schema, without ``| None`` and, with ``item``, of its items."""
    prop: dict[str, Any] = _adapter(model, field).json_schema()
    if "anyOf" in prop:
        prop = next(p for p in prop["anyOf"] if p.get("type") != "null")
    return prop["items"] if item else prop


STRINGS = [(m, f, i) for m, f, i in CUT_TO if "maxLength" in _prop(m, f, i)]


@pytest.mark.parametrize(("model", "field", "item"), CUT_TO, ids=lambda v: getattr(v, "__name__", str(v)))
def test_the_limit_read_is_the_one_the_json_schema_declares(model: type[BaseModel], field: str, item: bool) -> None:
    prop = _prop(model, field, item)
    assert max_len(model, field, item=item) == prop.get("maxLength", prop.get("maxItems"))


@pytest.mark.parametrize(("model", "field", "item"), STRINGS, ids=lambda v: getattr(v, "__name__", str(v)))
def test_a_clipped_value_validates_and_one_character_more_does_not(model: type[BaseModel], field: str,
                                                                   item: bool) -> None:
    adapter = _adapter(model, field)
    text = clip("x" * 20_000, model, field, item=item)
    assert len(text) == max_len(model, field, item=item)
    adapter.validate_python([text] if item else text)
    with pytest.raises(ValidationError):
        adapter.validate_python([text + "x"] if item else text + "x")


class _Declared(BaseModel):
    plain: str = Field(max_length=7)
    listed: list[Annotated[str, StringConstraints(max_length=3)]] = Field(max_length=2)
    optional: Annotated[str, StringConstraints(max_length=5)] | None = None
    unbounded: str = ""


def test_every_way_a_limit_is_declared_is_read() -> None:
    assert max_len(_Declared, "plain") == 7
    assert max_len(_Declared, "listed") == 2
    assert max_len(_Declared, "listed", item=True) == 3
    assert max_len(_Declared, "optional") == 5


def test_a_field_without_a_limit_fails_loudly() -> None:
    with pytest.raises(LookupError, match="declares no max_length"):
        max_len(_Declared, "unbounded")
    with pytest.raises(LookupError, match="is not a list"):
        max_len(_Declared, "plain", item=True)


def test_constants_named_after_a_contract_are_its_limits() -> None:
    assert clarify.MAX_CHOICES == 10 == max_len(Clarification, "choices")
    assert state.QUESTION_MAX == 2000 == max_len(RewriteInput, "question")


REF = EntityRef(entity_type="anime", id=str(uuid.UUID(int=1)))


def test_what_the_loop_cuts_to_its_contracts_validates() -> None:
    long = "y" * 10_000
    budget = state.Budget(max_turns=3, deadline_ms=1000, max_failed_steps=2)
    run = state.RunState(question=long[: state.QUESTION_MAX], mode="agentic", budget=budget)
    run.warnings = [f"warning {i}" for i in range(80)]
    run.missing = [long] * 6
    response = state.not_found(run, "max_turns")
    assert len(response.warnings) == max_len(AgentResponse, "warnings")
    assert all(len(f) == max_len(Evidence, "facts", item=True) for f in response.evidence.facts)

    draft = _result(long, [REF] * 80, [REF] * 80, confidence=0.5, facts=[long] * 40, citations=[long] * 40)
    assert len(draft.answer) == max_len(DraftAnswer, "answer")
    assert len(draft.citations) == max_len(DraftAnswer, "citations")

    candidate = _candidate(REF.id, "anime", long, long, "exact", 1, None, None)
    assert len(candidate.name) == max_len(LinkCandidate, "name")
    choice = ClarificationChoice(label=clarify._label(candidate), entity=REF)
    assert len(choice.label) == max_len(ClarificationChoice, "label")

    intent = SearchIntent(rationale="r", entity_type="anime", query=long[:500])
    rows = [{"id": str(uuid.UUID(int=i)), "entity_type": "anime", "name": long, "snippet": long} for i in range(60)]
    card = cards.from_search(0, intent, RetrievalResult(summary="s", raw_data=rows, count=60))
    assert len(card.request) == max_len(ContextCard, "request")
    assert all(len(e.name) == max_len(CardEntity, "name") for e in card.entities)
    assert len(card.data["rows"][0]["snippet"]) == max_len(GradeItem, "snippet")

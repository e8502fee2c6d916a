"""What each role sees: typed inputs for rewrite, select, draft (planner) and grade, validate (validator).

The orchestrator builds one of these per call and hands it to the model as it is
(:meth:`~agentic_rag.models.base.StructuredModel.generate`). A text model renders it through its shaper
(:mod:`agentic_rag.planners.llm.prompts`: background, steps and output instructions from a template file,
then the input as a JSON state block, or a compact form); the heuristic model reads the typed input.
:data:`ROLES` is the one place that says which role takes which input and produces which contract.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentic_rag.protocol import (
    DraftAnswer,
    EntityLinks,
    EntityRef,
    GradeReport,
    GraphPath,
    NextStep,
    QueryRewrite,
    SufficiencyReport,
)
from agentic_rag.protocol.conversation import ConversationContext
from agentic_rag.protocol.reading import Analysis

Role = Literal["rewrite", "select", "draft", "grade", "validate"]
StepSource = Literal["qdrant_search", "pg_graph", "pg_query", "similar"]
# a card is a step's findings, or (``request``) what came with the question itself: an attached image
CardSource = Literal["qdrant_search", "pg_graph", "pg_query", "similar", "request"]


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CardEntity(_Input):
    """An entity a step found, with the name the context shows for it."""

    ref: EntityRef
    name: str = Field(max_length=300)
    detail: str | None = Field(None, max_length=300, description="Year, role, relation or score.")


class ContextCard(_Input):
    """One retrieval step's findings: a summary for reading plus the ids it found."""

    turn: int = Field(ge=0)
    source: CardSource
    request: str = Field(max_length=500, description="What the step asked for, in words.")
    summary: str = Field(max_length=8000)
    count: int = Field(ge=0)
    entities: list[CardEntity] = Field(default_factory=list, max_length=100)
    paths: list[GraphPath] = Field(default_factory=list, max_length=20)
    data: dict[str, Any] = Field(default_factory=dict, description="Structured extras (comparison, aggregates).")


class StepStatus(_Input):
    """How the last step went, so the next plan can broaden or change course."""

    action: StepSource
    status: Literal["ok", "empty", "error"]
    count: int = Field(ge=0)
    note: str = Field("", max_length=300)


class _Asked(_Input):
    """What every role is told of the question: its text, the names linked in it, and how it was read."""

    question: str = Field(max_length=2000)
    links: EntityLinks | None = Field(None, description="The catalog names the question mentions, with the "
                                      "entities each may mean (found by code before planning).")
    reading: Analysis | None = Field(None, description="What the reader made of the question's words (code, "
                                     "computed once per run where it is linked); not shown in a prompt's state.")
    conversation: ConversationContext | None = Field(
        None, description="The conversation's last turns when the question follows them up (the question above is "
                          "already restated to stand alone): what each asked, what its answer named.")


class RewriteInput(_Asked):
    history: list[str] = Field(
        default_factory=list, max_length=8,
        description="Earlier rewrites whose searches found nothing relevant: write a different one.",
    )


class SelectInput(_Asked):
    rewrite: QueryRewrite
    cards: list[ContextCard] = Field(default_factory=list)
    last_step: StepStatus | None = None
    missing: list[str] = Field(default_factory=list, max_length=8, description="What the validator said is missing.")
    tried: list[str] = Field(default_factory=list, description="Steps already executed (never repeat one).")
    turn: int = Field(ge=0)
    max_turns: int = Field(ge=1)


class DraftInput(_Asked):
    rewrite: QueryRewrite
    cards: list[ContextCard] = Field(default_factory=list)


class GradeItem(_Input):
    index: int = Field(ge=0)
    entity: CardEntity
    snippet: str = Field("", max_length=400)


class GradeInput(_Asked):
    items: list[GradeItem] = Field(max_length=50)


class ValidateInput(_Asked):
    rewrite: QueryRewrite
    draft: DraftAnswer
    cards: list[ContextCard] = Field(default_factory=list)


RoleInput = RewriteInput | SelectInput | DraftInput | GradeInput | ValidateInput

# Which role produces which contract, and what it reads.
ROLES: dict[type[BaseModel], tuple[Role, type[_Input]]] = {
    QueryRewrite: ("rewrite", RewriteInput),
    NextStep: ("select", SelectInput),
    DraftAnswer: ("draft", DraftInput),
    GradeReport: ("grade", GradeInput),
    SufficiencyReport: ("validate", ValidateInput),
}
ROLE_OF_INPUT: dict[type[_Input], Role] = {inp: role for role, inp in ROLES.values()}
# Each role's contract and input, by the role's name (how a role call is named on the wire).
ROLE_TYPES: dict[Role, tuple[type[BaseModel], type[_Input]]] = {role: (out, inp) for out, (role, inp) in ROLES.items()}


def role_of(role_input: RoleInput, output_type: type[BaseModel]) -> Role:
    """The role a call plays: the role whose input ``role_input`` is, checked to produce ``output_type``."""
    role = ROLE_OF_INPUT.get(type(role_input))
    if role is None:
        raise ValueError(f"{type(role_input).__name__} is not the input of any role")
    if ROLES.get(output_type, (None,))[0] != role:
        raise ValueError(f"the {role} role does not produce {output_type.__name__}")
    return role

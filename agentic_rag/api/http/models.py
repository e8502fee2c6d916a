"""Request and response bodies of the HTTP API (v1). Every input field is bounded; the schemas are the OpenAPI.

Numbers and flags are strict: ``"stream": "yes"``, ``"limit": "10"`` and ``"limit": true`` are refused (422),
not read as what they might mean; ``"limit": 10.0`` is taken, as JSON Schema's ``integer`` takes it. The schemas
state what the server enforces, so what they call valid is taken (schemathesis checks it,
tests/integration/api/test_openapi_agreement.py): a run's budget is bounded by this server's limits and an image is
offered only where there is an image model (:func:`request_models`).
"""

from __future__ import annotations

import re
import uuid
from typing import Annotated, Any, Literal

from annotated_types import Ge, Le
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    StrictBool,
    StringConstraints,
    create_model,
    model_validator,
)

from agentic_rag.models.images import IMAGE_SEARCH_OFF
from agentic_rag.orchestrator.loop import RunResult
from agentic_rag.protocol import AgentResponse, EntityRef, Mode, ResponseStatus, RunBudget, Uuid
from agentic_rag.protocol.contracts import IMAGE_QUERY_MAX
from agentic_rag.protocol.vocabulary import ENTITY_TYPES, EntityType
from agentic_rag.retrievers.typeahead import TypeaheadHit, TypeaheadQuery, storable
from agentic_rag.settings import Settings

MAX_QUESTION_CHARS = 2000
MAX_ENTITY_REFS = 100


# What str.strip() removes and what ECMA's \s matches (the schema's regex dialect), and NUL, which PostgreSQL's text
# cannot hold: a text field needs one character outside these. The schema's pattern and the server's check are this
# one class, and the lengths are checked before stripping, so both sides draw the same line (schemathesis holds us
# to it: tests/integration/api/test_openapi_agreement.py).
_BLANK = ("\\x00\\t\\n\\v\\f\\r \\x1c-\\x1f\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f"
          "\\u3000\\ufeff")
TEXT_PATTERN = f"^[^\\x00]*[^{_BLANK}][^\\x00]*$"
_VISIBLE = re.compile(f"[^{_BLANK}]")


def _visible(text: str) -> str:
    """``text`` stripped, once it is known to hold something to read (after :func:`storable`)."""
    if not _VISIBLE.search(text):
        raise ValueError("must contain a character other than spaces and line breaks")
    return text.strip()


_READABLE = (AfterValidator(storable), AfterValidator(_visible), Field(json_schema_extra={"pattern": TEXT_PATTERN}))
Question = Annotated[str, StringConstraints(min_length=1, max_length=MAX_QUESTION_CHARS), *_READABLE]
SearchText = Annotated[str, StringConstraints(min_length=1, max_length=100), *_READABLE]


def _whole(value: Any) -> Any:
    """A number with no fractional part as the integer it is (``27.0``: JSON Schema's ``integer`` takes it, so the
    server does too); anything else as it came, for the strict check (``"27"`` and ``true`` stay refused)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def whole(ge: int, le: int) -> Any:
    """An integer from ``ge`` to ``le``, strict but for a number with no fractional part (:func:`_whole`). The bounds
    come before the validator so that the JSON schema states them (``minimum``, ``maximum``)."""
    return Annotated[int, Ge(ge), Le(le), Strict(), BeforeValidator(_whole)]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SearchRequest(_Request):
    """A typeahead request."""

    q: SearchText = Field(description="What the user typed (1 to 100 characters).")
    types: list[EntityType] | None = Field(None, max_length=len(ENTITY_TYPES), description="Only these entity types.")
    limit: whole(1, 50) = Field(10, description="Most hits returned.")  # type: ignore[valid-type]

    def query(self) -> TypeaheadQuery:
        return TypeaheadQuery(q=self.q, types=self.types, limit=self.limit)


class SearchResponse(BaseModel):
    """Typeahead hits: exact names first, then prefixes, then typo matches; popularity first within."""

    hits: list[TypeaheadHit] = Field(description="The matching entities, best first.")


class QuestionRequest(_Request):
    """A natural-language question for the agent loop (on a server without an image model: no image)."""

    question: Question = Field(description="The question (1 to 2000 characters).")
    mode: Mode = Field(
        "agentic", description="agentic: the loop until the context suffices. linear: retrieve once, answer once.")
    stream: StrictBool = Field(
        False, description="Stream trajectory events as server-sent events (also: Accept: text/event-stream).")
    budget: RunBudget | None = Field(
        None, description="Lower limits for this run (turns, deadline_ms, max_failed_steps); over the server's: 422.")
    conversation_id: uuid.UUID | None = Field(
        None, description="The conversation this question follows up: the conversation_id of an earlier answer. "
                          "Left out, the question starts a new conversation. Unknown, expired or another tenant's: "
                          "404; another turn of it still running: 409 (send again once it has answered); at its "
                          "turn limit: 409 (leave it out to start a new one).")


class TextQuestionRequest(QuestionRequest):
    """A natural-language question, on a server without an image model: its schema offers no image, and one sent
    anyway is refused saying why (422)."""

    @model_validator(mode="before")
    @classmethod
    def _no_image(cls, data: Any) -> Any:
        if isinstance(data, dict) and "image" in data:
            raise ValueError(IMAGE_SEARCH_OFF)
        return data


class AskRequest(QuestionRequest):
    """A natural-language question for the agent loop, perhaps about an image."""

    image: str | None = Field(
        None, min_length=1, max_length=IMAGE_QUERY_MAX,
        description="An image the question is about (\"what anime is this from?\"): base64, or a base64 data URL. "
                    "Offered only where the server has an image model. Checked before the run starts: over the "
                    "server's size (RAG_IMAGE_MAX_BYTES) or pixel bound, not an accepted format, or not decodable "
                    "422.")


class ClarifyRequest(_Request):
    """The user's pick among the choices a run offered."""

    choice: whole(0, 9) | Uuid = Field(  # type: ignore[valid-type]
        description="The index of the offered choice, or the entity id of the choice.")
    stream: StrictBool = Field(False, description="Stream trajectory events as server-sent events.")
    budget: RunBudget | None = Field(None, description="Lower limits for the resumed run, as for a question.")


class AskResponse(BaseModel):
    """One finished run (or one that asks for a clarification): the answer and where its trajectory is."""

    trajectory_id: uuid.UUID = Field(description="Read it at GET /v1/trajectories/{id}; resume it if it asks.")
    request_id: str = Field(description="The request that started (or resumed) the run.")
    status: ResponseStatus = Field(description="How the run ended (same as response.status).")
    mode: Mode = Field(description="Which loop ran.")
    response: AgentResponse = Field(description="The answer, its entities, evidence and citations.")
    turns: int = Field(ge=0, description="Loop turns used.")
    latency_ms: float = Field(ge=0, description="Wall-clock time of the run.")
    timings: dict[str, float] = Field(description="Per-stage milliseconds (planner_llm_ms, qdrant_ms, ...).")
    conversation_id: uuid.UUID | None = Field(
        None, description="The conversation the run was a turn of: send it with a follow-up question. None when the "
                          "turn could not be kept (the answer stands).")
    turn: int | None = Field(None, ge=1, description="Which turn of the conversation this was, from 1.")

    @classmethod
    def of(cls, result: RunResult) -> AskResponse:
        return cls(trajectory_id=result.trajectory_id, request_id=result.request_id, status=result.response.status,
                   mode=result.mode, response=result.response, turns=result.turns, latency_ms=result.latency_ms,
                   timings=result.timings, conversation_id=result.conversation_id, turn=result.turn)


def server_budget(settings: Settings) -> type[RunBudget]:
    """:class:`RunBudget` as this server takes it: each limit a strict integer (``true`` is not 1) bounded by the
    server's own setting (a request may lower a limit, never raise it:
    :meth:`agentic_rag.orchestrator.state.Budget.of`), so the published schema states what the server enforces."""
    fields: dict[str, Any] = {}
    ceilings = {"max_turns": settings.agent_max_turns, "deadline_ms": settings.agent_deadline_ms,
                "max_failed_steps": settings.agent_max_failed_steps}
    for name, info in RunBudget.model_fields.items():
        floor = next(m.ge for m in info.metadata if hasattr(m, "ge"))
        top = next(m.le for m in info.metadata if hasattr(m, "le"))
        fields[name] = (whole(floor, min(top, ceilings[name])) | None,
                        Field(None, description=f"{info.description} At most {ceilings[name]} here."))
    return create_model("RunBudget", __base__=RunBudget, __module__=__name__, **fields)


def request_models(settings: Settings) -> tuple[type[QuestionRequest], type[ClarifyRequest]]:
    """The question and clarification bodies as this server takes them: the budget bounded by its settings
    (:func:`server_budget`), and an ``image`` only where it has an image model (elsewhere the field is not offered,
    and sending one is refused as any unknown field is, 422)."""
    budget: Any = server_budget(settings) | None
    base: type[QuestionRequest] = AskRequest if settings.image_model is not None else TextQuestionRequest
    about = QuestionRequest.model_fields["budget"].description
    ask = create_model("AskRequest", __base__=base, __module__=__name__, __doc__=AskRequest.__doc__,
                       budget=(budget, Field(None, description=about)))
    clarify = create_model("ClarifyRequest", __base__=ClarifyRequest, __module__=__name__,
                           __doc__=ClarifyRequest.__doc__, budget=(budget, Field(None, description=about)))
    return ask, clarify


class PlanStep(BaseModel):
    """One retrieval step the run executed."""

    turn: int = Field(ge=0, description="The loop turn (from 0) that ran it.")
    action: Literal["qdrant_search", "pg_graph", "pg_query", "similar"] = Field(description="Which executor ran it.")
    intent: str = Field(description="What it asked for, in short.")
    rationale: str = Field(description="Why the planner chose it.")


class QueryResponse(AskResponse):
    """A run, plus the retrieval steps it executed."""

    plan: list[PlanStep] = Field(description="Executed retrieval steps, in order.")


class EntitiesResponse(BaseModel):
    """Hydrated catalog records."""

    entities: list[dict[str, Any]] = Field(description="Full records, in the order asked; unknown ids left out.")
    missing: list[EntityRef] = Field(description="Asked-for entities that the catalog does not hold.")

    @classmethod
    def of(cls, refs: list[EntityRef], found: list[dict[str, Any]]) -> EntitiesResponse:
        """The records hydrated for ``refs``, and the refs none of them is."""
        seen = {(str(r.get("entity_type")), str(r.get("id"))) for r in found}
        return cls(entities=found, missing=[r for r in refs if (r.entity_type, str(r.id)) not in seen])


class ErrorDetail(BaseModel):
    type: str = Field(description="A stable error code: validation_error, not_found, overloaded, ...")
    message: str = Field(description="What went wrong, for people.")
    request_id: str | None = Field(description="The request id (also in the X-Request-ID header).")
    details: list[dict[str, Any]] = Field(default_factory=list, description="Per-field problems, for validation.")
    trajectory_id: uuid.UUID | None = Field(
        None, description="unavailable (503) during a run: the run's trajectory, which says how it ended (answered "
                          "after all, or abandoned once its process was found dead; 404 if it was never recorded).")


class ErrorResponse(BaseModel):
    """Every error of the API has this shape."""

    error: ErrorDetail


class HealthResponse(BaseModel):
    status: Literal["ok"] = "ok"


class ReadyResponse(BaseModel):
    ready: bool = Field(description="True when every check passes.")
    checks: dict[str, bool] = Field(description="postgres, qdrant, models: whether each answers now.")


__all__ = [
    "MAX_ENTITY_REFS", "AskRequest", "AskResponse", "ClarifyRequest", "EntitiesResponse", "ErrorDetail",
    "ErrorResponse", "HealthResponse", "PlanStep", "QueryResponse", "QuestionRequest", "ReadyResponse",
    "SearchRequest", "SearchResponse", "TextQuestionRequest", "request_models", "server_budget", "whole",
]

"""Request and response bodies of the HTTP API (v1). Every input field is bounded; the schemas are the OpenAPI.

Numbers and flags are strict: ``"stream": "yes"``, ``"limit": "10"`` and ``"limit": true`` are refused (422),
not read as what they might mean.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictInt, StringConstraints

from agentic_rag.orchestrator.loop import RunResult
from agentic_rag.protocol import AgentResponse, EntityRef, Mode, ResponseStatus, RunBudget, Uuid
from agentic_rag.protocol.contracts import IMAGE_QUERY_MAX
from agentic_rag.protocol.vocabulary import ENTITY_TYPES, EntityType
from agentic_rag.retrievers.typeahead import TypeaheadHit, TypeaheadQuery, storable

MAX_QUESTION_CHARS = 2000
MAX_ENTITY_REFS = 100


Question = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_QUESTION_CHARS),
    AfterValidator(storable),
]
SearchText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100),
                       AfterValidator(storable)]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SearchRequest(_Request):
    """A typeahead request."""

    q: SearchText = Field(description="What the user typed (1 to 100 characters).")
    types: list[EntityType] | None = Field(None, max_length=len(ENTITY_TYPES), description="Only these entity types.")
    limit: StrictInt = Field(10, ge=1, le=50, description="Most hits returned.")

    def query(self) -> TypeaheadQuery:
        return TypeaheadQuery(q=self.q, types=self.types, limit=self.limit)


class SearchResponse(BaseModel):
    """Typeahead hits: exact names first, then prefixes, then typo matches; popularity first within."""

    hits: list[TypeaheadHit] = Field(description="The matching entities, best first.")


class AskRequest(_Request):
    """A natural-language question for the agent loop."""

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
    image: str | None = Field(
        None, min_length=1, max_length=IMAGE_QUERY_MAX,
        description="An image the question is about (\"what anime is this from?\"): base64, or a base64 data URL. "
                    "Checked before the run starts: without an image model on the server 400; over the server's "
                    "size (RAG_IMAGE_MAX_BYTES) or pixel bound, not an accepted format, or not decodable 422.")


class ClarifyRequest(_Request):
    """The user's pick among the choices a run offered."""

    choice: Annotated[StrictInt, Field(ge=0, le=9)] | Uuid = Field(
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
    "ErrorResponse", "HealthResponse", "PlanStep", "QueryResponse", "ReadyResponse", "SearchRequest",
    "SearchResponse",
]

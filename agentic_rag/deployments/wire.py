"""What crosses a deployment handle, and the caller-side objects that hide the handles from the loop.

Every deployment method answers with a :class:`Reply`: a JSON-able value (``model_dump(mode="json")``)
or a typed :class:`Failure`. The caller validates the reply with the pydantic contracts (the other
side is never trusted) and re-raises a failure as the exception the in-process code raises, so the
loop cannot tell a handle from a local object: :class:`HandleModel` is a
:class:`~agentic_rag.models.base.StructuredModel`, :class:`HandleRetrieval` a
:class:`~agentic_rag.orchestrator.retrieval.Retrieval`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping, Sequence
from typing import Any, Literal, NoReturn, ParamSpec, TypeVar

import asyncpg
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python
from ray.exceptions import RayError
from ray.serve.exceptions import RayServeException
from ray.serve.handle import DeploymentHandle, DeploymentResponse

from agentic_rag.deployments import costs
from agentic_rag.models.base import Completion, Generation, GenerationError, Message, Usage
from agentic_rag.models.embeddings import Vectors
from agentic_rag.models.roles import ROLES
from agentic_rag.orchestrator.loop import ClarificationError, NotAwaitingClarification, RunResult
from agentic_rag.orchestrator.trajectory import TrajectoryError, TrajectoryNotFound
from agentic_rag.protocol import (
    AgentResponse,
    EntityLinks,
    GraphIntent,
    GraphResult,
    Mode,
    RetrievalResult,
    SearchIntent,
    StructuredQuery,
)
from agentic_rag.retrievers.dsl import QueryResult
from agentic_rag.retrievers.errors import FailureKind, RetrievalError
from agentic_rag.retrievers.typeahead import TypeaheadHit
from agentic_rag.retrievers.vector import EmbedFn
from agentic_rag.settings import Settings
from agentic_rag.storage.retry import DATABASE_FAILURES

log = logging.getLogger(__name__)
T = TypeVar("T", bound=BaseModel)
P = ParamSpec("P")

# The only output types a model deployment builds: the contracts the loop's roles produce. A name
# from the wire is looked up here, never imported.
OUTPUT_TYPES: dict[str, type[BaseModel]] = {t.__name__: t for t in ROLES}
MESSAGES = TypeAdapter(list[Message])
HITS = TypeAdapter(list[TypeaheadHit])
# Transport failures: the deployment is gone, overloaded (BackPressureError) or raised something unexpected.
TRANSPORT_ERRORS = (RayError, RayServeException)

FailureType = Literal["generation", "retrieval", "clarification", "not_awaiting", "not_found", "trajectory", "invalid",
                      "timeout"]


class Failure(BaseModel):
    """A failure the caller re-raises as its in-process exception."""

    model_config = ConfigDict(extra="forbid")

    kind: FailureType
    message: str = Field(max_length=4000)
    source: str = Field("", max_length=40, description="retrieval: the store that failed.")
    cause: FailureKind | None = Field(None, description="retrieval: timeout or unavailable.")
    output_type: str = Field("", max_length=100, description="generation: the contract asked for.")
    attempts: int = Field(0, ge=0)
    errors: list[str] = Field(default_factory=list, max_length=20)
    last_text: str = Field("", max_length=8000)


class Reply(BaseModel):
    """What every deployment method returns: a value or a failure, and what the call cost inside the replica."""

    model_config = ConfigDict(extra="forbid")

    value: Any = None
    error: Failure | None = None
    ms: float = Field(0.0, ge=0, description="Time inside the replica's method (set by :func:`accounted`).")
    hops: dict[str, list[float]] = Field(default_factory=dict, max_length=64,
                                         description="The handle calls the replica made for it (costs.dump).")


class ModelOutput(BaseModel):
    """A model deployment's value: the output as JSON, what it cost, and which model made it."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(max_length=200)
    output: dict[str, Any]
    usage: dict[str, float | int]


class GraphOutput(BaseModel):
    """A graph retriever's value: the result and display labels of every node it names."""

    model_config = ConfigDict(extra="forbid")

    result: GraphResult
    labels: dict[str, str]


class RunRequest(BaseModel):
    """A run of the loop, as the Orchestrator deployment takes it."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=20_000)
    mode: Mode = "agentic"
    tenant: str = Field("default", max_length=200)
    request_id: str | None = Field(None, max_length=200)
    session_id: str | None = Field(None, max_length=200)
    trajectory_id: uuid.UUID | None = Field(
        None, description="The id to record the run under: the Ingress's, so a 503 for a replica that died "
                          "mid-run can name the run.")


class ResumeRequest(BaseModel):
    """A clarification's answer, as the Orchestrator deployment takes it."""

    model_config = ConfigDict(extra="forbid")

    trajectory_id: uuid.UUID
    choice: int | str
    tenant: str = Field("default", max_length=200)
    request_id: str | None = Field(None, max_length=200)


class RunReply(BaseModel):
    """A finished run on the wire (:class:`~agentic_rag.orchestrator.loop.RunResult` as JSON)."""

    model_config = ConfigDict(extra="forbid")

    trajectory_id: uuid.UUID
    request_id: str
    response: AgentResponse
    turns: int = Field(ge=0)
    latency_ms: float = Field(ge=0)
    timings: dict[str, float]
    mode: Mode
    degraded: list[Literal["postgres", "qdrant", "models"]] = Field(
        default_factory=list, max_length=3, description="The dependencies that failed a step of the run.")

    @classmethod
    def of(cls, r: RunResult) -> RunReply:
        return cls(trajectory_id=r.trajectory_id, request_id=r.request_id, response=r.response, turns=r.turns,
                   latency_ms=r.latency_ms, timings=r.timings, mode=r.mode, degraded=list(r.degraded))

    def result(self) -> RunResult:
        return RunResult(trajectory_id=self.trajectory_id, request_id=self.request_id, response=self.response,
                         turns=self.turns, latency_ms=self.latency_ms, timings=self.timings, mode=self.mode,
                         degraded=tuple(self.degraded))


class StreamItem(BaseModel):
    """One item of a streamed run: a trajectory event as written, then the run's reply (or its failure)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["event", "reply"]
    data: dict[str, Any]


# -- the replica side ---------------------------------------------------------------------------------

def failure_of(exc: BaseException, *, source: str = "", invalid: tuple[type[Exception], ...] = ()) -> Failure | None:
    """The wire form of an expected failure; None for anything else (it travels as a Ray error)."""
    text = str(exc)[:4000]
    if isinstance(exc, GenerationError):
        return Failure(kind="generation", message=text, output_type=exc.output_type[:100], attempts=exc.attempts,
                       errors=[e[:500] for e in exc.errors[-20:]], last_text=exc.last_text[:8000])
    if isinstance(exc, RetrievalError):
        return Failure(kind="retrieval", message=text, source=exc.source[:40], cause=exc.kind)
    if isinstance(exc, DATABASE_FAILURES) and source:
        cause: FailureKind = "timeout" if isinstance(exc, TimeoutError | asyncpg.QueryCanceledError) else "unavailable"
        return Failure(kind="retrieval", message=text or f"{source} ran past its time limit", source=source,
                       cause=cause)
    if isinstance(exc, NotAwaitingClarification):
        return Failure(kind="not_awaiting", message=text)
    if isinstance(exc, ClarificationError):
        return Failure(kind="clarification", message=text)
    if isinstance(exc, TrajectoryNotFound):
        return Failure(kind="not_found", message=text)
    if isinstance(exc, TrajectoryError):
        return Failure(kind="trajectory", message=text)
    if isinstance(exc, (ValidationError, *invalid)):
        return Failure(kind="invalid", message=text)
    return None


def accounted(method: Callable[P, Awaitable[dict[str, Any]]]) -> Callable[P, Coroutine[Any, Any, dict[str, Any]]]:
    """A unary replica method whose reply says how long the method took and which handle calls it made, so
    the caller's ledger (:mod:`~agentic_rag.deployments.costs`) can tell the hop's own cost from the work."""

    @functools.wraps(method)
    async def timed(*args: P.args, **kwargs: P.kwargs) -> dict[str, Any]:
        t0 = time.perf_counter()
        with costs.ledger() as hops:
            reply = await method(*args, **kwargs)
        reply["ms"] = (time.perf_counter() - t0) * 1000
        if hops:
            reply["hops"] = costs.dump(hops)
        return reply

    return timed


def ok(value: Any) -> dict[str, Any]:
    """A successful reply; pydantic models and UUIDs become plain JSON values."""
    return {"value": to_jsonable_python(value)}


def failed(failure: Failure) -> dict[str, Any]:
    return {"error": failure.model_dump(mode="json")}


# -- the caller side ----------------------------------------------------------------------------------

def _unreachable(deployment: str, exc: BaseException) -> str:
    """A deployment that did not take the call, in our words; Ray's own text (actor ids, node addresses,
    whole tracebacks) goes to this replica's log only."""
    log.warning("%s did not take the call: %s: %s", deployment, type(exc).__name__, exc)
    return f"the {deployment} deployment is unavailable (its replica stopped, is restarting or is overloaded)"


def raise_failure(f: Failure) -> NoReturn:
    """Re-raise a failure as the exception the in-process code would have raised."""
    if f.kind == "generation":
        raise GenerationError(f.output_type, f.attempts, list(f.errors), f.last_text)
    if f.kind == "retrieval":
        raise RetrievalError(f.source or "retrieval", f.cause or "unavailable", f.message)
    if f.kind == "not_awaiting":
        raise NotAwaitingClarification(f.message)
    if f.kind == "clarification":
        raise ClarificationError(f.message)
    if f.kind == "not_found":
        raise TrajectoryNotFound(f.message)
    if f.kind == "trajectory":
        raise TrajectoryError(f.message)
    if f.kind == "timeout":
        raise TimeoutError(f.message)
    raise ValueError(f.message)


def unwrap(raw: Any) -> Any:
    """The value of a reply, validated as an envelope; a failure is raised."""
    reply = Reply.model_validate(raw)
    if reply.error is not None:
        raise_failure(reply.error)
    return reply.value


async def settle(response: Any, hop: str) -> Any:
    """Await a unary handle call to ``hop`` (``Deployment.method``) and enter it in the request's ledger; a
    caller that stops waiting (deadline, client gone) cancels it downstream."""
    if not isinstance(response, DeploymentResponse):
        raise TypeError(f"expected a unary DeploymentResponse, got {type(response).__name__}")
    t0 = time.perf_counter()
    try:
        raw = await response
    except asyncio.CancelledError:
        response.cancel()
        raise
    wall_ms = (time.perf_counter() - t0) * 1000
    if isinstance(raw, dict):
        inside, nested = raw.get("ms"), raw.get("hops")
        costs.record(hop, wall_ms, float(inside) if isinstance(inside, int | float) else 0.0,
                     nested if isinstance(nested, dict) and len(nested) <= 64 else None)
    return raw


class HandleModel:
    """A :class:`~agentic_rag.models.base.StructuredModel` served by a model deployment."""

    def __init__(self, handle: DeploymentHandle[Any], name: str) -> None:
        self._handle = handle
        self._deployment = name
        # the deployment name until the first reply says which model actually runs there
        self.name = name

    async def generate(self, messages: list[Message], output_type: type[T], *, max_tokens: int = 512,
                       temperature: float = 0.0) -> Generation[T]:
        type_name = output_type.__name__
        if OUTPUT_TYPES.get(type_name) is not output_type:
            raise ValueError(f"{type_name} is not an output type a model deployment produces")
        try:
            raw = await settle(self._handle.generate.remote(list(messages), type_name, max_tokens, temperature),
                               f"{self._deployment}.generate")
        except TRANSPORT_ERRORS as exc:
            # the loop falls back to the heuristic on a GenerationError: an unreachable model is one
            raise GenerationError(type_name, 0, [_unreachable(self.name, exc)]) from exc
        try:
            reply = ModelOutput.model_validate(unwrap(raw))
            output = output_type.model_validate(reply.output)
            usage = Usage(prompt_tokens=int(reply.usage.get("prompt_tokens", 0)),
                          completion_tokens=int(reply.usage.get("completion_tokens", 0)),
                          attempts=int(reply.usage.get("attempts", 0)),
                          latency_ms=float(reply.usage.get("latency_ms", 0.0)))
        except ValidationError as exc:
            raise GenerationError(type_name, 1, [f"invalid reply from {self.name}: {exc}"[:500]]) from exc
        self.name = reply.model
        return Generation(output=output, usage=usage)


class CompletionOutput(BaseModel):
    """A model deployment's chat completion (:class:`~agentic_rag.models.base.Completion` as JSON)."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(max_length=200)
    text: str = Field(max_length=1_000_000)
    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    finish_reason: str | None = Field(None, max_length=40)


class HandleTextBackend:
    """A :class:`~agentic_rag.models.base.TextBackend` served by a model deployment (its chat-completions side).

    Raises as a local backend does, so :mod:`agentic_rag.models.openai_server` answers alike: ``ValueError``
    for a request the model refuses (400), ``TimeoutError`` (504), ``ConnectionError`` when the deployment
    is gone or over its queue (503).
    """

    def __init__(self, handle: DeploymentHandle[Any], name: str) -> None:
        self._handle = handle
        self._deployment = self.name = name

    async def complete(self, messages: list[Message], schema: dict[str, Any] | None, *, max_tokens: int,
                       temperature: float, calibration: list[Message] | None = None) -> Completion:
        # the route's calls are decoded as asked; a calibrated choice is the loop's, made inside the replica
        try:
            raw = await settle(self._handle.complete.remote(list(messages), schema, max_tokens, temperature),
                               f"{self._deployment}.complete")
        except TRANSPORT_ERRORS as exc:
            raise ConnectionError(_unreachable(self.name, exc)) from exc
        try:
            out = CompletionOutput.model_validate(unwrap(raw))
        except ValidationError as exc:
            raise RuntimeError(f"invalid reply from {self.name}: {exc}"[:500]) from exc
        return Completion(text=out.text, prompt_tokens=out.prompt_tokens, completion_tokens=out.completion_tokens,
                          finish_reason=out.finish_reason)


class HandleRetrieval:
    """:class:`~agentic_rag.orchestrator.retrieval.Retrieval` over the VectorRetriever and GraphRetriever."""

    def __init__(self, vector: DeploymentHandle[Any], graph: DeploymentHandle[Any], settings: Settings) -> None:
        self._vector = vector
        self._graph = graph
        self._deployments = {"qdrant": "VectorRetriever", "postgres": "GraphRetriever"}
        # the replica bounds its own work; this bounds the queue in front of it and the transport
        self._timeout_s = 2 * settings.query_timeout_ms / 1000 + 1.0

    async def _call(self, source: str, method: str, response: Any) -> Any:
        try:
            async with asyncio.timeout(self._timeout_s):
                return unwrap(await settle(response, f"{self._deployments[source]}.{method}"))
        except TimeoutError as exc:
            raise RetrievalError(source, "timeout", f"{source} did not answer within {self._timeout_s:g} s") from exc
        except TRANSPORT_ERRORS as exc:
            raise RetrievalError(source, "unavailable", _unreachable(self._deployments[source], exc)) from exc

    async def search(self, intent: SearchIntent) -> RetrievalResult:
        value = await self._call("qdrant", "search", self._vector.search.remote(intent.model_dump(mode="json")))
        return RetrievalResult.model_validate(value)

    async def graph(self, intent: GraphIntent) -> tuple[GraphResult, dict[str, str]]:
        value = GraphOutput.model_validate(
            await self._call("postgres", "graph", self._graph.graph.remote(intent.model_dump(mode="json"))))
        return value.result, value.labels

    async def query(self, query: StructuredQuery) -> QueryResult:
        value = await self._call("postgres", "query", self._graph.query.remote(query.model_dump(mode="json")))
        return QueryResult.model_validate(value)

    async def link(self, question: str, timings: MutableMapping[str, float] | None = None) -> EntityLinks:
        # asks_ms stays 0 here: the question is embedded in the GraphRetriever, whose Embedder call the
        # request's cost account (Server-Timing, Embedder.embed) shows
        # the names and what is asked by meaning, in one call (the GraphRetriever asks the Embedder itself)
        raw = await self._call("postgres", "link", self._graph.link.remote(question[:2000]))
        return EntityLinks.model_validate(raw)


def handle_embed(handle: DeploymentHandle[Any]) -> EmbedFn:
    """An :data:`~agentic_rag.retrievers.vector.EmbedFn` over the Embedder deployment."""

    async def embed(texts: Sequence[str]) -> Vectors:
        try:
            raw = unwrap(await settle(handle.embed.remote([str(t) for t in texts]), "Embedder.embed"))
        except TRANSPORT_ERRORS as exc:
            raise RetrievalError("embedder", "unavailable", _unreachable("Embedder", exc)) from exc
        vectors = np.asarray(raw, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise RetrievalError("embedder", "unavailable",
                                 f"the Embedder returned shape {vectors.shape} for {len(texts)} text(s)")
        return vectors

    return embed

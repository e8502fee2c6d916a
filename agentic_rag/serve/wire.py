"""What crosses a deployment handle, and the caller-side objects that hide the handles from the loop.

Every deployment method answers with a :class:`Reply`: a JSON-able value (``model_dump(mode="json")``;
measured cheaper to cross a handle than a pickled pydantic object, ``scripts/bench_wire.py``), which the
caller validates with the pydantic contracts (the other side is never trusted). A failure is not a value:
the replica raises the :class:`~agentic_rag.errors.AgenticRagError` the in-process code raises, Ray carries
it, and :func:`settle` re-raises it in the caller, so the loop cannot tell a handle from a local object:
:class:`HandleModel` is a
:class:`~agentic_rag.models.base.StructuredModel`, :class:`HandleRetrieval` a
:class:`~agentic_rag.orchestrator.retrieval.Retrieval`.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping, Sequence
from typing import Any, Literal, NoReturn, ParamSpec, TypeVar, cast, overload

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python
from ray.exceptions import RayError, RayTaskError
from ray.serve.exceptions import RayServeException
from ray.serve.handle import DeploymentHandle, DeploymentResponse

from agentic_rag.api import costs
from agentic_rag.errors import AgenticRagError, InvalidInput
from agentic_rag.logs import ERROR_TEXT_MAX
from agentic_rag.models.base import Completion, Generation, GenerationError, Message, ModelUnavailable, Usage
from agentic_rag.models.embeddings import Vectors
from agentic_rag.orchestrator.loop import RunResult
from agentic_rag.orchestrator.retrieval import Executed, Found, Linked
from agentic_rag.orchestrator.state import QUESTION_MAX
from agentic_rag.protocol import (
    AgentResponse,
    BatchIntent,
    GraphIntent,
    GraphResult,
    Mode,
    RetrievalResult,
    RunBudget,
    SearchIntent,
    SimilarIntent,
    StructuredQuery,
)
from agentic_rag.protocol.contracts import IMAGE_QUERY_MAX
from agentic_rag.protocol.roles import RoleInput, role_of
from agentic_rag.retrievers.dsl import QueryResult
from agentic_rag.retrievers.errors import RetrievalError
from agentic_rag.retrievers.typeahead import TypeaheadHit
from agentic_rag.retrievers.vector import EmbedFn, ImageEmbedFn
from agentic_rag.settings import Settings

log = logging.getLogger(__name__)
LINKED = TypeAdapter(Linked)  # a link reply: the names and the question's reading
T = TypeVar("T", bound=BaseModel)
M = TypeVar("M")
P = ParamSpec("P")

HITS = TypeAdapter(list[TypeaheadHit])
# the deployment that holds a role's model, where the application deploys one (serve.app.MODEL_DEPLOYMENTS)
MODEL_DEPLOYMENT = {"planner": "PlannerModel", "validator": "ValidatorModel"}
MAX_MESSAGE = 4000  # the longest error message a replica sends back (pydantic's can run to pages)
# Transport failures: the deployment is gone, overloaded (BackPressureError) or raised something unexpected.
TRANSPORT_ERRORS = (RayError, RayServeException)

class Reply(BaseModel):
    """What every deployment method returns: its value, and what the call cost inside the replica."""

    model_config = ConfigDict(extra="forbid")

    value: Any = None
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
    budget: RunBudget | None = None
    image: str | None = Field(
        None, max_length=IMAGE_QUERY_MAX, description="The question's image as base64, verified by the Ingress.")
    conversation_id: uuid.UUID | None = Field(None, description="The conversation the question follows up.")

    def image_bytes(self) -> bytes | None:
        return base64.b64decode(self.image, validate=True) if self.image is not None else None


class ResumeRequest(BaseModel):
    """A clarification's answer, as the Orchestrator deployment takes it."""

    model_config = ConfigDict(extra="forbid")

    trajectory_id: uuid.UUID
    choice: int | str
    tenant: str = Field("default", max_length=200)
    request_id: str | None = Field(None, max_length=200)
    budget: RunBudget | None = None


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
    conversation_id: uuid.UUID | None = None
    turn: int | None = Field(None, ge=1)

    @classmethod
    def of(cls, r: RunResult) -> RunReply:
        return cls(trajectory_id=r.trajectory_id, request_id=r.request_id, response=r.response, turns=r.turns,
                   latency_ms=r.latency_ms, timings=r.timings, mode=r.mode, degraded=list(r.degraded),
                   conversation_id=r.conversation_id, turn=r.turn)

    def result(self) -> RunResult:
        return RunResult(trajectory_id=self.trajectory_id, request_id=self.request_id, response=self.response,
                         turns=self.turns, latency_ms=self.latency_ms, timings=self.timings, mode=self.mode,
                         degraded=tuple(self.degraded), conversation_id=self.conversation_id, turn=self.turn)


class StreamItem(BaseModel):
    """One item of a streamed run: a trajectory event as written, then the run's reply (a failure is raised)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["event", "reply"]
    data: dict[str, Any]


# -- the replica side ---------------------------------------------------------------------------------

def invalid(exc: ValidationError | ValueError) -> InvalidInput:
    """A request a replica refuses, as the error the caller sees (pydantic's own errors do not pickle)."""
    return InvalidInput(str(exc)[:MAX_MESSAGE])


@overload
def parse(schema: type[T], raw: Any) -> T: ...


@overload
def parse(schema: TypeAdapter[M], raw: Any) -> M: ...


def parse(schema: type[BaseModel] | TypeAdapter[Any], raw: Any) -> Any:
    """What a replica method was sent, validated (the caller is not trusted), or refused as :class:`InvalidInput`."""
    try:
        return schema.validate_python(raw) if isinstance(schema, TypeAdapter) else schema.model_validate(raw)
    except ValidationError as exc:
        raise invalid(exc) from None


def accounted(method: Callable[P, Awaitable[dict[str, Any]]]) -> Callable[P, Coroutine[Any, Any, dict[str, Any]]]:
    """A unary replica method whose reply says how long the method took and which handle calls it made, so
    the caller's ledger (:mod:`~agentic_rag.api.costs`) can tell the hop's own cost from the work."""

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


# -- the caller side ----------------------------------------------------------------------------------

def _unreachable(deployment: str, exc: BaseException) -> str:
    """A deployment that did not take the call, in our words; Ray's own text (actor ids, node addresses,
    whole tracebacks) goes to this replica's log only."""
    log.warning("%s did not take the call: %s: %s", deployment, type(exc).__name__, exc)
    return f"the {deployment} deployment is unavailable (its replica stopped, is restarting or is overloaded)"


def unwrap(raw: Any) -> Any:
    """The value of a reply, validated as an envelope."""
    return Reply.model_validate(raw).value


def reraise_ours(exc: RayTaskError) -> NoReturn:
    """An exception a replica raised: ours is raised again as itself (the caller catches it by its class; Ray's
    text with its traceback and addresses goes nowhere), anything else is a bug and stays Ray's error."""
    if isinstance(exc.cause, AgenticRagError):
        raise exc.cause from None
    raise exc


async def settle(response: Any, hop: str) -> Any:
    """Await a unary handle call to ``hop`` (``Deployment.method``) and enter it in the request's ledger; a
    caller that stops waiting (deadline, client gone) cancels it downstream. What the replica raised of ours is
    raised here as itself (:func:`reraise_ours`)."""
    if not isinstance(response, DeploymentResponse):
        raise TypeError(f"expected a unary DeploymentResponse, got {type(response).__name__}")
    t0 = time.perf_counter()
    try:
        raw = await response
    except asyncio.CancelledError:
        response.cancel()
        raise
    except RayTaskError as exc:  # the replica raised: the hop still cost its time
        costs.record(hop, (time.perf_counter() - t0) * 1000, 0.0, None)
        reraise_ours(exc)
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

    async def generate(self, role_input: RoleInput, output_type: type[T], *, max_tokens: int = 512,
                       temperature: float = 0.0) -> Generation[T]:
        # the role names the call on the wire (the replica looks it up in ROLES); its input travels as JSON
        role = role_of(role_input, output_type)
        type_name = output_type.__name__
        state = role_input.model_dump(mode="json", exclude_none=True)
        try:
            raw = await settle(self._handle.generate.remote(role, state, max_tokens, temperature),
                               f"{self._deployment}.generate")
        except TRANSPORT_ERRORS as exc:  # the loop falls back to the heuristic on it
            raise ModelUnavailable(_unreachable(self.name, exc), retryable=True) from exc
        try:
            reply = ModelOutput.model_validate(unwrap(raw))
            output = output_type.model_validate(reply.output)
            usage = Usage(prompt_tokens=int(reply.usage.get("prompt_tokens", 0)),
                          completion_tokens=int(reply.usage.get("completion_tokens", 0)),
                          attempts=int(reply.usage.get("attempts", 0)),
                          latency_ms=float(reply.usage.get("latency_ms", 0.0)))
        except ValidationError as exc:
            raise GenerationError(type_name, 1, [f"invalid reply from {self.name}: {exc}"[:ERROR_TEXT_MAX]]) from exc
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

    Raises as a local backend does, so :mod:`agentic_rag.api.openai` answers alike: ``ValueError``
    for a request the model refuses (400), ``TimeoutError`` (504), :class:`ModelUnavailable` (a
    ``ConnectionError``) when the deployment is gone or over its queue, or its engine failed (503).
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
            raise ModelUnavailable(_unreachable(self.name, exc), retryable=True) from exc
        try:
            out = CompletionOutput.model_validate(unwrap(raw))
        except ValidationError as exc:
            raise RuntimeError(f"invalid reply from {self.name}: {exc}"[:ERROR_TEXT_MAX]) from exc
        return Completion(text=out.text, prompt_tokens=out.prompt_tokens, completion_tokens=out.completion_tokens,
                          finish_reason=out.finish_reason)


IntentKind = Literal["search", "similar", "graph", "query"]
INTENT_KINDS: dict[type[BaseModel], IntentKind] = {SearchIntent: "search", SimilarIntent: "similar",
                                                   GraphIntent: "graph", StructuredQuery: "query"}


class WireIntent(BaseModel):
    """One intent of a turn, as a retriever deployment's ``execute`` takes it."""

    model_config = ConfigDict(extra="forbid")

    kind: IntentKind
    intent: dict[str, Any]


class WireFailure(BaseModel):
    """Why one intent failed in the replica, in the replica's own bounded words: a store's failure
    (``reason`` set: raised as the RetrievalError the in-process executors raise) or another error."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(max_length=40)
    reason: Literal["timeout", "unavailable"] | None = None
    message: str = Field(max_length=MAX_MESSAGE)


class WireOutcome(BaseModel):
    """One intent's outcome: its value (the executor's result as JSON) or its failure, and its time."""

    model_config = ConfigDict(extra="forbid")

    value: Any = None
    error: WireFailure | None = None
    ms: float = Field(0.0, ge=0)


INTENTS = TypeAdapter(list[WireIntent])
OUTCOMES = TypeAdapter(list[WireOutcome])


class StepFailed(AgenticRagError, RuntimeError):
    """An intent failed in its retriever replica for a reason other than its store's (the replica logged it)."""


class HandleRetrieval:
    """:class:`~agentic_rag.orchestrator.retrieval.Retrieval` over the VectorRetriever and GraphRetriever: a turn's
    intents cross in one ``execute`` call per deployment (searches and recommendations to the VectorRetriever,
    graph primitives and catalog queries to the GraphRetriever), run concurrently inside it."""

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

    async def execute(self, intents: Sequence[BatchIntent]) -> list[Executed]:
        by_source: dict[str, list[int]] = {}
        for n, intent in enumerate(intents):
            by_source.setdefault("qdrant" if isinstance(intent, SearchIntent | SimilarIntent) else "postgres",
                                 []).append(n)
        outcomes: list[Executed | None] = [None] * len(intents)

        async def call(source: str, indexes: list[int]) -> None:
            handle = self._vector if source == "qdrant" else self._graph
            sent = [WireIntent(kind=INTENT_KINDS[type(intents[n])], intent=intents[n].model_dump(mode="json"))
                    for n in indexes]
            t0 = time.perf_counter()
            try:
                raw = await self._call(source, "execute", handle.execute.remote([w.model_dump() for w in sent]))
                got = OUTCOMES.validate_python(raw)
                if len(got) != len(indexes):
                    raise StepFailed(f"{self._deployments[source]} answered {len(got)} of {len(indexes)} intents")
            except (AgenticRagError, ValidationError) as exc:  # the whole call failed (refused, store down, a bad
                # reply): each of its intents did, and the other deployment's intents stand
                ms = (time.perf_counter() - t0) * 1000
                failed = exc if isinstance(exc, AgenticRagError) else StepFailed(
                    f"invalid reply from {self._deployments[source]}: {exc}"[:ERROR_TEXT_MAX])
                for n in indexes:
                    outcomes[n] = Executed(None, failed, ms)
                return
            for n, outcome in zip(indexes, got, strict=True):
                outcomes[n] = _executed(intents[n], outcome)

        await asyncio.gather(*(call(source, indexes) for source, indexes in by_source.items()))
        return [o if o is not None else Executed(None, StepFailed("not executed"), 0.0) for o in outcomes]

    async def _one(self, intent: BatchIntent) -> Found:
        (done,) = await self.execute([intent])
        if done.error is not None:
            raise done.error
        assert done.found is not None
        return done.found

    async def search(self, intent: SearchIntent) -> RetrievalResult:
        return cast(RetrievalResult, await self._one(intent))

    async def graph(self, intent: GraphIntent) -> tuple[GraphResult, dict[str, str]]:
        return cast(tuple[GraphResult, dict[str, str]], await self._one(intent))

    async def query(self, query: StructuredQuery) -> QueryResult:
        return cast(QueryResult, await self._one(query))

    async def similar(self, intent: SimilarIntent) -> RetrievalResult:
        return cast(RetrievalResult, await self._one(intent))

    async def link(self, question: str, timings: MutableMapping[str, float] | None = None) -> Linked:
        # asks_ms stays 0 here: the question is embedded in the GraphRetriever, whose Embedder call the
        # request's cost account (Server-Timing, Embedder.embed) shows
        # the names, what is asked by meaning and the reading, in one call (the GraphRetriever asks the Embedder)
        raw = await self._call("postgres", "link", self._graph.link.remote(question[:QUESTION_MAX]))
        return LINKED.validate_python(raw)


def _executed(intent: BatchIntent, outcome: WireOutcome) -> Executed:
    """An intent's outcome from the wire: its result validated as the contract of its kind (never trusted), or its
    failure raised as the in-process code would have raised it."""
    if outcome.error is not None:
        e = outcome.error
        error: Exception = (RetrievalError(e.source, e.reason, e.message) if e.reason is not None
                            else StepFailed(e.message))
        return Executed(None, error, outcome.ms)
    try:
        found: Found
        if isinstance(intent, GraphIntent):
            graph = GraphOutput.model_validate(outcome.value)
            found = (graph.result, graph.labels)
        elif isinstance(intent, StructuredQuery):
            found = QueryResult.model_validate(outcome.value)
        else:
            found = RetrievalResult.model_validate(outcome.value)
    except ValidationError as exc:
        return Executed(None, StepFailed(f"invalid result: {exc}"[:ERROR_TEXT_MAX]), outcome.ms)
    return Executed(found, None, outcome.ms)


def handle_embed(handle: DeploymentHandle[Any]) -> EmbedFn:
    """An :data:`~agentic_rag.retrievers.vector.EmbedFn` over the Embedder deployment."""

    async def embed(texts: Sequence[str]) -> Vectors:
        return await _embedded(lambda: handle.embed.remote([str(t) for t in texts]), "Embedder.embed",
                               len(texts), "text(s)")

    return embed


def handle_embed_images(handle: DeploymentHandle[Any]) -> ImageEmbedFn:
    """An :data:`~agentic_rag.retrievers.vector.ImageEmbedFn` over the Embedder deployment's image model."""

    async def embed_images(images: Sequence[bytes]) -> Vectors:
        return await _embedded(lambda: handle.embed_images.remote([bytes(b) for b in images]),
                               "Embedder.embed_images", len(images), "image(s)")

    return embed_images


async def _embedded(call: Callable[[], Any], hop: str, count: int, what: str) -> Vectors:
    """The Embedder's vectors for ``count`` inputs: one row each, or the embedder is unavailable."""
    try:
        raw = unwrap(await settle(call(), hop))
    except TRANSPORT_ERRORS as exc:
        raise RetrievalError("embedder", "unavailable", _unreachable("Embedder", exc)) from exc
    vectors = np.asarray(raw, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != count:
        raise RetrievalError("embedder", "unavailable",
                             f"the Embedder returned shape {vectors.shape} for {count} {what}")
    return vectors

"""The HTTP API (v1): typeahead, the agent loop (JSON or server-sent events), trajectories, hydration, probes.

``create_app(service, settings)`` builds a FastAPI app over any :class:`AgentService`; it knows nothing
of Ray, so the same app runs under uvicorn with a :class:`LocalAgentService` and behind Ray Serve's
``@serve.ingress`` with handles. The OpenAPI document is at ``/openapi.json``. The planner and validator
models are also served over OpenAI's chat-completions API under ``/openai/v1``
(:mod:`agentic_rag.api.openai`).
"""

# No ``from __future__ import annotations``: FastAPI reads the route signatures at runtime, and they
# name dependencies local to create_app.
import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, FastAPI, Header, Path, Query, Request
from fastapi.responses import JSONResponse, Response
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import StringConstraints

from agentic_rag import tracing
from agentic_rag.api import openai as openai_server
from agentic_rag.api.admission import ANONYMOUS, Admission, key_id
from agentic_rag.api.auth import matched_key
from agentic_rag.api.errors import RETRY_AFTER, ApiError
from agentic_rag.api.http.errors import MAX_BODY_BYTES, ApiMiddleware, install_error_handlers, request_id_of
from agentic_rag.api.http.metrics import ApiMetrics
from agentic_rag.api.http.models import (
    MAX_ENTITY_REFS,
    AskRequest,
    AskResponse,
    ClarifyRequest,
    EntitiesResponse,
    ErrorResponse,
    HealthResponse,
    QueryResponse,
    QuestionRequest,
    ReadyResponse,
    SearchRequest,
    SearchResponse,
    request_models,
)
from agentic_rag.api.http.runs import RunExecutor
from agentic_rag.api.service import AgentService
from agentic_rag.api.signatures import retyped
from agentic_rag.logs import QUOTED_INPUT_MAX
from agentic_rag.models.images import base64_body_bytes, read_request_image
from agentic_rag.orchestrator.conversations import Conversation
from agentic_rag.orchestrator.trajectory import Trajectory
from agentic_rag.protocol import EntityRef
from agentic_rag.protocol.vocabulary import ENTITY_TYPES
from agentic_rag.settings import Settings

__all__ = ["API_VERSION", "REF", "TENANT_PATTERN", "create_app", "parse_refs"]

API_VERSION = "1.0.0"
OPENAI_PREFIX = "/openai"
TENANT_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"
UUID_RE = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
REF = f"({'|'.join(ENTITY_TYPES)}):{UUID_RE}"  # an entity reference, "anime:<uuid>"
IDS = f"^{REF}(,{REF}){{0,{MAX_ENTITY_REFS - 1}}}$"  # up to MAX_ENTITY_REFS references, comma-separated
EVENT_STREAM = "text/event-stream"
_ERRORS = {"model": ErrorResponse}
ERROR_RESPONSES: dict[int | str, dict[str, object]] = {
    401: {**_ERRORS, "description": "An API key is required (when the server is configured with keys)."},
    400: {**_ERRORS, "description": "The body is not valid JSON."},
    413: {**_ERRORS, "description": "The body is too large."},
    422: {**_ERRORS, "description": "The request does not validate."},
    503: {**_ERRORS, "description": "Overloaded or a store is down; retry after Retry-After seconds."},
}
RUN_RESPONSES: dict[int | str, dict[str, object]] = {
    **ERROR_RESPONSES,
    200: {"content": {EVENT_STREAM: {"schema": {
        "type": "object", "title": "RunStreamEvent", "required": ["event", "data"],
        "description": (
            "With stream=true, one server-sent event each: `trajectory` per recorded event in seq order (data: "
            "the event as JSON, id: its seq), then `response` (data: the JSON body of the non-streamed answer), "
            "then `end`. `error` (data: the error body plus its status) replaces `response` if the run fails."),
        "properties": {
            "event": {"type": "string", "enum": ["trajectory", "response", "error", "end"]},
            "data": {"type": "string", "description": "JSON."},
            "id": {"type": "string", "description": "The trajectory event's seq."},
        },
    }}}},
    504: {**_ERRORS, "description": "The run did not finish in time."},
}
# a question may follow up a conversation: its id may be unknown (404) or the conversation busy or full (409)
ASK_RESPONSES: dict[int | str, dict[str, object]] = {
    **RUN_RESPONSES,
    404: {**_ERRORS, "description": "conversation_id names no conversation of this tenant (unknown or expired)."},
    409: {**_ERRORS, "description": "Another turn of the conversation is still running (send this again once it "
                                    "has answered), or the conversation holds its turn limit (start a new one)."},
}


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asks: the tenant, and this request's id."""

    tenant: str
    request_id: str


# async, as every dependency here: FastAPI runs a plain ``def`` dependency in its thread pool, a thread handoff on
# every request (about a tenth of the Ingress replica's samples under 64 runs, docs/benchmarks.md)
async def _caller(request: Request, tenant: Annotated[str, Header(
        alias="X-Tenant", pattern=TENANT_PATTERN, description="Whose runs these are (default: default).",
)] = "default") -> Caller:
    return Caller(tenant=tenant, request_id=request_id_of(request))


def _wants_stream(request: Request, stream: bool) -> bool:
    return stream or EVENT_STREAM in request.headers.get("accept", "")


def parse_refs(ids: str | None, refs: list[str]) -> list[EntityRef]:
    raw = [*(p for p in (ids or "").split(",") if p), *refs]  # none asked, none answered (both are optional)
    if len(raw) > 2 * MAX_ENTITY_REFS:  # at most MAX_ENTITY_REFS in each parameter (their schemas say so)
        raise ApiError("validation_error", f"at most {MAX_ENTITY_REFS} entities per parameter")
    out: list[EntityRef] = []
    for item in raw:
        entity_type, _, id_ = item.partition(":")
        try:
            out.append(EntityRef.model_validate({"entity_type": entity_type, "id": str(uuid.UUID(id_))}))
        except ValueError:
            raise ApiError("validation_error", f"{item[:QUOTED_INPUT_MAX]!r} is not type:uuid with a type among "
                                                    f"{', '.join(ENTITY_TYPES)}") from None
    return out


KeyDependency = Callable[..., Awaitable[str]]


def _caller_key(settings: Settings) -> KeyDependency:
    """The dependency that names the caller's key by its id (admission counts by it), refusing a request without
    a valid key when keys are configured (documented in OpenAPI); without keys every caller is anonymous."""
    if not settings.api_keys:
        async def anonymous() -> str:
            return ANONYMOUS

        return anonymous
    keys = list(settings.api_keys)
    bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer <api key>")
    header = APIKeyHeader(name="X-API-Key", auto_error=False, description="X-API-Key: <api key>")

    async def require_key(creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
                          api_key: Annotated[str | None, Depends(header)]) -> str:
        matched = matched_key((creds.credentials if creds else None, api_key), keys)
        if matched is None:
            raise ApiError("unauthorized", "a valid API key is required (Authorization: Bearer or X-API-Key)",
                           headers={"WWW-Authenticate": "Bearer"})
        return key_id(matched)

    return require_key


def _openai_error(err: ApiError, request_id: str | None) -> Response:
    """An error of the outer middleware (a bad request id, the last-resort 500) on the OpenAI route, in its shape."""
    return openai_server.status_error(err.status, err.message, headers=err.headers)


def create_app(service: AgentService, settings: Settings, *, proxy_sets_request_id: bool = False,
               admission: Admission | None = None) -> FastAPI:
    """The versioned HTTP API over ``service``; metrics live in a registry of this app's own.

    ``proxy_sets_request_id``: a proxy in front (Ray Serve's) assigns ``X-Request-ID`` and echoes it on every
    response, so the app uses its id and adds no header of its own (:class:`ApiMiddleware`). ``admission``: the
    per-key bounds every run is admitted under (429 over them); None: only this process's own limit."""
    metrics = ApiMetrics()
    if admission is not None:
        for collector in admission.collectors:
            metrics.registry.register(collector)
    runs = RunExecutor(metrics, settings)
    # FastAPI's own telemetry opens each request's span (from the caller's traceparent) where tracing is on
    app = FastAPI(title="agentic-rag", version=API_VERSION, telemetry=tracing.HTTP_TELEMETRY,  # type: ignore[arg-type]
                  description="Question answering over the anime catalog: typeahead, and a typed agent loop.")
    install_error_handlers(app)
    # a question may carry an image (base64 in the JSON) where an image model is configured: those two routes
    # take a body as large as the largest accepted image, every other route keeps the default bound
    ask_bytes = MAX_BODY_BYTES + base64_body_bytes(settings) if settings.image_model is not None else MAX_BODY_BYTES
    app.add_middleware(ApiMiddleware, metrics=metrics, proxy_sets_request_id=proxy_sets_request_id,
                       mounted={OPENAI_PREFIX: _openai_error},
                       body_limits={"/v1/search_ai": ask_bytes, "/v1/query": ask_bytes})
    in_flight = 0

    caller_key = _caller_key(settings)

    async def run_slot(key: Annotated[str, Depends(caller_key)]) -> AsyncIterator[None]:
        # Held until the response (a stream included) has been sent. Over this process's limit the answer is an
        # immediate 503 (a queue here would only turn overload into timeouts); over the key's own, a 429.
        nonlocal in_flight
        if in_flight >= settings.max_inflight_runs:
            raise ApiError("overloaded", f"{in_flight} runs in flight, the limit; retry shortly",
                           headers=RETRY_AFTER)
        async with admission.slot(key) if admission is not None else contextlib.nullcontext():
            in_flight += 1
            metrics.runs_in_flight.inc()
            try:
                yield
            finally:
                in_flight -= 1
                metrics.runs_in_flight.dec()

    v1 = APIRouter(prefix="/v1", dependencies=[Depends(caller_key)] if settings.api_keys else [],
                   responses=ERROR_RESPONSES)
    CallerDep = Annotated[Caller, Depends(_caller)]
    SlotDep = Annotated[None, Depends(run_slot)]

    @v1.post("/search", response_model=SearchResponse, summary="Typeahead over every entity type")
    async def search(body: SearchRequest) -> SearchResponse:
        return SearchResponse(hits=await service.search(body.query()))

    # the bodies as this server takes them: a budget within its limits, an image only with an image model
    Ask, Clarify = request_models(settings)

    async def image_of(body: QuestionRequest) -> bytes | None:
        # the image is checked (bounds, format, decodable) before the run starts, off the event loop
        image = body.image if isinstance(body, AskRequest) else None
        return None if image is None else await asyncio.to_thread(read_request_image, image, settings)

    @v1.post("/search_ai", response_model=AskResponse, responses=ASK_RESPONSES, summary="Ask the agent loop")
    @retyped(body=Ask)
    async def search_ai(body: QuestionRequest, request: Request, caller: CallerDep, _: SlotDep) -> Response:
        image = await image_of(body)
        return await runs.respond(
            request, lambda sink: service.ask(body.question, mode=body.mode, tenant=caller.tenant,
                                              request_id=caller.request_id, sink=sink, budget=body.budget,
                                              image=image, conversation_id=body.conversation_id),
            mode=body.mode, stream=_wants_stream(request, body.stream), with_plan=False)

    @v1.post("/query", response_model=QueryResponse, responses=ASK_RESPONSES,
             summary="Ask the agent loop; the answer lists the executed retrieval steps")
    @retyped(body=Ask)
    async def query(body: QuestionRequest, request: Request, caller: CallerDep, _: SlotDep) -> Response:
        image = await image_of(body)
        return await runs.respond(
            request, lambda sink: service.ask(body.question, mode=body.mode, tenant=caller.tenant,
                                              request_id=caller.request_id, sink=sink, budget=body.budget,
                                              image=image, conversation_id=body.conversation_id),
            mode=body.mode, stream=_wants_stream(request, body.stream), with_plan=True)

    @v1.post("/search_ai/{trajectory_id}/clarify", response_model=AskResponse, summary="Answer a clarification",
             responses={**RUN_RESPONSES, 404: {**_ERRORS, "description": "No such trajectory for this tenant."},
                        409: {**_ERRORS, "description": "The run is not waiting for a clarification."}})
    @retyped(body=Clarify)
    async def clarify(trajectory_id: uuid.UUID, body: ClarifyRequest, request: Request, caller: CallerDep,
                      _: SlotDep) -> Response:
        return await runs.respond(
            request, lambda sink: service.resume(trajectory_id, body.choice, tenant=caller.tenant,
                                                 request_id=caller.request_id, sink=sink, budget=body.budget),
            mode="agentic", stream=_wants_stream(request, body.stream), with_plan=False)

    @v1.get("/trajectories/{trajectory_id}", response_model=Trajectory, summary="A run's trajectory with events",
            responses={404: {**_ERRORS, "description": "No such trajectory for this tenant."}})
    async def trajectory(trajectory_id: Annotated[uuid.UUID, Path(description="The trajectory id.")],
                         caller: CallerDep) -> Trajectory:
        found = await service.trajectory(trajectory_id, tenant=caller.tenant)
        if found is None:
            raise ApiError("not_found", f"trajectory {trajectory_id} not found")
        return found

    @v1.get("/conversations/{conversation_id}", response_model=Conversation,
            summary="A conversation's turns, each with the question as asked and as read, and its run",
            responses={404: {**_ERRORS, "description": "No such conversation for this tenant, or it expired."}})
    async def conversation(conversation_id: Annotated[uuid.UUID, Path(description="The conversation id.")],
                           caller: CallerDep) -> Conversation:
        found = await service.conversation(conversation_id, tenant=caller.tenant)
        if found is None:
            raise ApiError("not_found", f"conversation {conversation_id} not found")
        return found

    @v1.delete("/conversations/{conversation_id}", status_code=204, response_class=Response,
               summary="Forget a conversation: it and its turns are deleted (their runs' trajectories stay, unlinked)",
               responses={404: {**_ERRORS, "description": "No such conversation for this tenant."}})
    async def forget(conversation_id: Annotated[uuid.UUID, Path(description="The conversation id.")],
                     caller: CallerDep) -> Response:
        if not await service.forget(conversation_id, tenant=caller.tenant):
            raise ApiError("not_found", f"conversation {conversation_id} not found")
        return Response(status_code=204)

    @v1.get("/entities", response_model=EntitiesResponse, summary="Hydrate entity records by reference")
    async def entities(
        ids: Annotated[str | None, Query(max_length=MAX_ENTITY_REFS * 48, pattern=IDS, description=(
            "Comma-separated type:uuid references, e.g. anime:6f1c...,character:0a2b..."))] = None,
        ref: Annotated[list[Annotated[str, StringConstraints(pattern=f"^{REF}$")]] | None, Query(
            max_length=MAX_ENTITY_REFS, description="One type:uuid reference per parameter (repeatable).")] = None,
    ) -> EntitiesResponse:
        refs = parse_refs(ids, ref or [])
        return EntitiesResponse.of(refs, await service.entities(refs) if refs else [])

    app.include_router(v1)

    @app.get("/healthz", response_model=HealthResponse, summary="The process is up")
    async def healthz() -> HealthResponse:
        return HealthResponse()

    @app.get("/readyz", response_model=ReadyResponse, summary="PostgreSQL, Qdrant, the models and the loop answer",
             responses={503: {"model": ReadyResponse, "description": "Not ready; the body says which check failed."}})
    async def readyz() -> JSONResponse:
        checks = await service.ready()
        body = ReadyResponse(ready=all(checks.values()) and bool(checks), checks=checks)
        return JSONResponse(body.model_dump(), status_code=200 if body.ready else 503)

    @app.get("/metrics", include_in_schema=False)
    async def prometheus() -> Response:
        return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    # The planner and validator models over OpenAI's chat-completions API (its own OpenAPI document,
    # /openai/openapi.json, and OpenAI's error shape): an OpenAI client's base_url is <server>/openai/v1.
    app.mount(OPENAI_PREFIX, openai_server.create_app(service.chat_models(), api_keys=settings.api_keys))
    return app

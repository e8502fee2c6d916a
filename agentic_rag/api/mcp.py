"""The Model Context Protocol front door: the catalog's typeahead, entity resolution and the agent loop as MCP tools.

:func:`create_mcp` builds an MCP server (the official SDK's ``MCPServer``) over any
:class:`~agentic_rag.api.service.AgentService`, as :func:`agentic_rag.api.http.app.create_app` builds the HTTP API:
in one process for ``agentic-rag mcp`` (stdio, for local clients) and, under Ray Serve, over the Ingress's handles
(streamable HTTP at ``/mcp``, :func:`mcp_http_app`). The tools' input and output schemas are generated from the same
pydantic contracts as the HTTP API's, with the same bounds:

- ``search``: the typeahead lane (text, types, limit) -> hits.
- ``resolve``: seed 004's Mapper, ``resolve_term(text, domain) -> candidates``: entity linking over the catalog's
  names, each candidate with its id, type, primary name, the name it matched, how it matched and a score.
- ``ask``: search_ai (a question, optionally the conversation it follows up, a budget) -> the answer, its entities,
  evidence, warnings and trajectory id, or the clarification with its choices. The run's progress is reported stage by
  stage (MCP progress notifications) when the client asks for it.
- ``clarify``: resume a run that asked, with the chosen option.
- ``get_entities``: hydrate up to 100 ``type:uuid`` references.
- ``get_trajectory``: a run's recorded decisions.

Records are also resources: ``catalog://{entity_type}/{id}`` reads one entity. Over HTTP the same API keys as the
HTTP API are required (``Authorization: Bearer <key>``), and the tenant is the ``X-Tenant`` header; over stdio the
caller is whoever started the process, with the tenant it was given.
"""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated, Any

from fastapi import FastAPI
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, Field, StringConstraints
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from agentic_rag import tracing
from agentic_rag.api.admission import ANONYMOUS, Admission, TooManyRuns, key_id
from agentic_rag.api.auth import key_matches, matched_key
from agentic_rag.api.errors import RETRY_AFTER
from agentic_rag.api.http.app import REF, TENANT_PATTERN, parse_refs
from agentic_rag.api.http.models import (
    MAX_ENTITY_REFS,
    AskResponse,
    EntitiesResponse,
    Question,
    SearchResponse,
    SearchText,
    server_budget,
    whole,
)
from agentic_rag.api.service import AgentService
from agentic_rag.api.signatures import retyped
from agentic_rag.errors import Unavailable
from agentic_rag.orchestrator.loop import ClarificationError, NotAwaitingClarification
from agentic_rag.orchestrator.trajectory import Trajectory
from agentic_rag.protocol import EntityRef, Mode, RunBudget
from agentic_rag.protocol.links import LinkMatch
from agentic_rag.protocol.vocabulary import EntityType
from agentic_rag.retrievers.typeahead import TypeaheadQuery
from agentic_rag.settings import Settings

__all__ = ["MCP_PATH", "ResolveCandidate", "ResolveResponse", "create_mcp", "mcp_http_app", "mount_mcp"]

MCP_PATH = "/mcp"
MAX_REQUEST_ID = 200
TENANT_RE = re.compile(TENANT_PATTERN)  # the HTTP API's X-Tenant
Ref = Annotated[str, StringConstraints(pattern=f"^{REF}$")]
MATCH_SCORE: dict[str, float] = {"exact": 1.0, "alias": 0.9, "reordered": 0.8, "typo": 0.7, "partial": 0.5}


class ResolveCandidate(BaseModel):
    """One catalog entity a surface form may name."""

    id: uuid.UUID
    entity_type: EntityType
    name: str = Field(description="The entity's primary name.")
    matched: str = Field(description="The name or alias the text matched.")
    match: LinkMatch = Field(description="How it matched: exact (the primary name), alias (another stored name), "
                                         "typo (one edit in a word), reordered (a person's or character's name in "
                                         "another order), partial (one rare word of a longer name).")
    score: float = Field(ge=0.0, le=1.0, description="How well it matched, from the kind of match and the entity's "
                                                     "rank among the mention's candidates; best first.")
    mention: str = Field(description="The part of the text that names it.")
    year: int | None = Field(None, description="First year of a work; founding year of a studio.")


class ResolveResponse(BaseModel):
    """Ranked candidates for the names a text mentions, and the name-like words that match nothing."""

    candidates: list[ResolveCandidate]
    unknown: list[str] = Field(description="Words that look like a name and match no name in the catalog.")


def _candidates(links: Any, types: list[EntityType] | None, limit: int) -> ResolveResponse:
    out: list[ResolveCandidate] = []
    for mention in links.mentions:
        for rank, c in enumerate(mention.candidates):
            if types and c.entity.entity_type not in types:
                continue
            score = MATCH_SCORE.get(c.match, 0.5) * (1.0 - min(rank, 9) * 0.05)
            out.append(ResolveCandidate(id=c.entity.id, entity_type=c.entity.entity_type, name=c.name,
                                        matched=c.matched, match=c.match, score=round(score, 4),
                                        mention=mention.text, year=c.year))
    out.sort(key=lambda c: -c.score)
    return ResolveResponse(candidates=out[:limit], unknown=list(links.unknown or []))


def _tenant(ctx: Context, default: str) -> str:
    headers = ctx.headers
    if headers is None:  # stdio: the process's tenant
        return default
    tenant = headers.get("x-tenant", "default")
    if not TENANT_RE.match(tenant):
        raise ToolError("X-Tenant must be 1 to 64 letters, digits, '-' or '_'")
    return tenant


def _trace_meta(ctx: Context) -> dict[str, str]:
    """``traceparent`` and ``tracestate`` from the request's ``_meta``, where a client put them."""
    meta = ctx.request_context.meta or {}
    return {k: v for k in ("traceparent", "tracestate") if isinstance(v := meta.get(k), str)}


def _request_id(ctx: Context) -> str:
    """The run's request id: the HTTP request's (``X-Request-ID``, set by the proxy or the client) over HTTP, else
    one of its own (``mcp-<uuid>``)."""
    given = (ctx.headers or {}).get("x-request-id")
    return given[:MAX_REQUEST_ID] if given else f"mcp-{uuid.uuid4()}"


def _key(ctx: Context, keys: list[str]) -> str:
    """The caller's key id (admission counts by it); the door has already refused a request without a valid key."""
    headers = ctx.headers
    if headers is None or not keys:  # stdio, or a server without keys: one anonymous tenant
        return ANONYMOUS
    auth = headers.get("authorization", "")
    bearer = auth[7:] if auth.lower().startswith("bearer ") else None
    matched = matched_key((bearer, headers.get("x-api-key")), keys)
    if matched is None:
        raise ToolError("a valid API key is required (Authorization: Bearer <key>)")
    return key_id(matched)


async def _failing_clearly(work: Callable[[], Awaitable[Any]]) -> Any:
    """``work()``, with the service's failures as tool errors a client can show (never a crash of the session)."""
    try:
        return await work()
    except TooManyRuns as exc:
        raise ToolError(f"{exc} ({exc.retry_after} s)") from exc
    except NotAwaitingClarification as exc:
        raise ToolError(f"that run is not waiting for a clarification: {exc}") from exc
    except ClarificationError as exc:
        raise ToolError(f"not one of the offered choices: {exc}") from exc
    except Unavailable as exc:
        raise ToolError(f"the service is unavailable for now, retry shortly ({exc})") from exc


class _Progress:
    """A run's event sink that reports each recorded step to the client as an MCP progress notification: progress is
    the event's position in the run (the total is not known ahead), the message its stage and kind ("retrieve:
    action")."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    async def __call__(self, event: dict[str, Any]) -> None:
        await self._ctx.report_progress(float(event.get("seq") or 0), None,
                                        message=f"{event.get('stage', '')}: {event.get('type', '')}")


def create_mcp(service: AgentService, settings: Settings, *, tenant: str = "default",
               admission: Admission | None = None) -> MCPServer:
    """The MCP server over ``service``. ``tenant``: whose runs these are when the transport carries no headers
    (stdio); over HTTP it is the request's ``X-Tenant``. ``admission``: the per-key bounds ``ask`` and ``clarify``
    run under (over them: a tool error saying when to retry)."""
    keys = list(settings.api_keys)

    def admitted(ctx: Context) -> AbstractAsyncContextManager[None]:
        return admission.slot(_key(ctx, keys)) if admission is not None else contextlib.nullcontext()

    async def run(ctx: Context, work: Callable[[], Awaitable[Any]]) -> Any:
        # a caller's trace context in the request's _meta (how MCP carries it over stdio, where there are no
        # headers; over HTTP the headers' traceparent opened the request's span already)
        with tracing.attached(_trace_meta(ctx)):
            async with admitted(ctx):
                return await work()

    budgets = server_budget(settings) | None  # a budget within this server's limits (the schema says which)
    server: MCPServer = MCPServer(
        name="agentic-rag", version="1.0.0",
        instructions="Question answering over an anime catalog. search: typeahead by name. resolve: which catalog "
                     "entities a name may mean. ask: a natural-language question (answers, or asks to clarify: then "
                     "call clarify with the chosen option). get_entities / the catalog:// resources: full records.",
        log_level="WARNING",
    )

    @server.tool(description="Typeahead over every entity type: names that match what was typed, best first.")
    async def search(q: SearchText, types: list[EntityType] | None = None,
                     limit: whole(1, 50) = 10) -> SearchResponse:  # type: ignore[valid-type]
        return SearchResponse(hits=await _failing_clearly(
            lambda: service.search(TypeaheadQuery(q=q, types=types, limit=limit))))

    @server.tool(description="Resolve a surface form to catalog entities (the Mapper): ranked candidates with id, "
                             "type, matched name, how it matched and a score.")
    async def resolve(text: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)],
                      types: list[EntityType] | None = None,
                      limit: whole(1, 50) = 10) -> ResolveResponse:  # type: ignore[valid-type]
        links = await _failing_clearly(lambda: service.resolve(text))
        return _candidates(links, types, limit)

    @server.tool(description="Ask the agent loop a natural-language question. The answer names its entities and "
                             "evidence; status 'needs_clarification' means it asks which of response.clarification's "
                             "choices was meant: answer with clarify. Send conversation_id from an earlier answer to "
                             "follow it up.")
    @retyped(budget=budgets)
    async def ask(question: Question, ctx: Context, conversation_id: uuid.UUID | None = None,
                  budget: RunBudget | None = None, mode: Mode = "agentic") -> AskResponse:
        caller = _tenant(ctx, tenant)
        result = await _failing_clearly(lambda: run(ctx, lambda: service.ask(
            question, mode=mode, tenant=caller, request_id=_request_id(ctx), sink=_Progress(ctx),
            budget=budget, conversation_id=conversation_id)))
        return AskResponse.of(result)

    @server.tool(description="Answer a clarification: the run resumes with the chosen option (its index, or its "
                             "entity id).")
    @retyped(budget=budgets)
    async def clarify(trajectory_id: uuid.UUID, choice: whole(0, 9) | uuid.UUID,  # type: ignore[valid-type]
                      ctx: Context, budget: RunBudget | None = None) -> AskResponse:
        caller = _tenant(ctx, tenant)
        picked: int | str = choice if isinstance(choice, int) else str(choice)
        result = await _failing_clearly(lambda: run(ctx, lambda: service.resume(
            trajectory_id, picked, tenant=caller, request_id=_request_id(ctx), sink=_Progress(ctx),
            budget=budget)))
        return AskResponse.of(result)

    @server.tool(description=f"Full catalog records for up to {MAX_ENTITY_REFS} type:uuid references.")
    async def get_entities(ids: Annotated[list[Ref], Field(min_length=1, max_length=MAX_ENTITY_REFS)]
                           ) -> EntitiesResponse:
        refs = parse_refs(None, ids)
        return EntitiesResponse.of(refs, await _failing_clearly(lambda: service.entities(refs)))

    @server.tool(description="A run's trajectory: every decision it made, in order.")
    async def get_trajectory(trajectory_id: uuid.UUID, ctx: Context) -> Trajectory:
        found: Trajectory | None = await _failing_clearly(
            lambda: service.trajectory(trajectory_id, tenant=_tenant(ctx, tenant)))
        if found is None:
            raise ToolError(f"trajectory {trajectory_id} not found")
        return found

    @server.resource("catalog://{entity_type}/{entity_id}", mime_type="application/json",
                     description="One catalog record: catalog://anime/<uuid>, catalog://character/<uuid>, ...")
    async def entity(entity_type: str, entity_id: str) -> str:
        try:
            ref = EntityRef.model_validate({"entity_type": entity_type, "id": entity_id})
        except ValueError as exc:
            raise ValueError(f"not a catalog entity: {entity_type}/{entity_id}") from exc
        found = await _failing_clearly(lambda: service.entities([ref]))
        if not found:
            raise ValueError(f"no {entity_type} {entity_id} in the catalog")
        return json.dumps(found[0], default=str)

    return server


class _Door:
    """ASGI middleware in front of the MCP transport: no valid API key (``Authorization: Bearer`` or ``X-API-Key``),
    no tools (401); more than ``limit`` MCP requests in flight (a run's request lasts as long as its run), an
    immediate 503 with Retry-After, as the HTTP API answers over its run limit (a queue would only turn overload
    into timeouts)."""

    def __init__(self, app: ASGIApp, keys: list[str], limit: int) -> None:
        self._app = app
        self._keys = keys
        self._limit = limit
        self._in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        if self._keys:
            request = Request(scope)
            auth = request.headers.get("authorization", "")
            bearer = auth[7:] if auth.lower().startswith("bearer ") else None
            if not key_matches((bearer, request.headers.get("x-api-key")), self._keys):
                await _refuse(401, "unauthorized", "a valid API key is required (Authorization: Bearer <key>)",
                              {"WWW-Authenticate": "Bearer"}, scope, receive, send)
                return
        if self._in_flight >= self._limit:
            await _refuse(503, "overloaded", f"{self._in_flight} MCP requests in flight, the limit; retry shortly",
                          dict(RETRY_AFTER), scope, receive, send)
            return
        self._in_flight += 1
        try:
            await self._app(scope, receive, send)
        finally:
            self._in_flight -= 1


async def _refuse(status: int, kind: str, message: str, headers: dict[str, str], scope: Scope, receive: Receive,
                  send: Send) -> None:
    await JSONResponse({"error": {"type": kind, "message": message}}, status_code=status, headers=headers)(
        scope, receive, send)


Running = Callable[[], AbstractAsyncContextManager[None]]


def mcp_http_app(server: MCPServer, settings: Settings) -> tuple[ASGIApp, Running]:
    """The streamable HTTP transport of ``server``: the ASGI app to route :data:`MCP_PATH` to, behind the API keys, and
    the context its host app's lifespan must hold open (the SDK's session manager). Stateless: every request stands
    alone (a progress notification rides the request's own stream), so any Ingress replica can take any request and
    no session affinity is needed behind a load balancer. The SDK's DNS-rebinding check (Host and Origin must be
    localhost) guards a server without keys; with keys, the key is the guard and any Host is served."""
    security = (TransportSecuritySettings(enable_dns_rebinding_protection=False) if settings.api_keys else None)
    server.streamable_http_app(streamable_http_path=MCP_PATH, stateless_http=True, transport_security=security,
                               max_sessions=settings.max_inflight_runs)
    manager = server.session_manager
    door = _Door(StreamableHTTPASGIApp(manager), list(settings.api_keys), settings.max_inflight_runs)
    return door, manager.run


def mount_mcp(app: FastAPI, service: AgentService, settings: Settings, *,
              admission: Admission | None = None) -> FastAPI:
    """``app`` (the HTTP API of :func:`~agentic_rag.api.http.app.create_app`) serving ``service``'s MCP tools at
    :data:`MCP_PATH` too, the MCP session manager running for the app's lifespan. The route goes through the app's
    middleware (request ids, metrics, the body bound) as every other; runs are admitted under ``admission``."""
    route, running = mcp_http_app(create_mcp(service, settings, admission=admission), settings)
    app.router.routes.append(Route(MCP_PATH, endpoint=route, methods=["GET", "POST", "DELETE"],
                                   include_in_schema=False))
    app.router.lifespan_context = lambda _app: running()
    return app

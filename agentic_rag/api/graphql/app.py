"""The GraphQL backend (BFF) as a plain ASGI app: ``create_app(settings, grpc_target)``.

It serves ``/graphql`` over HTTP (queries and mutations as JSON; subscriptions as server-sent events with the
``graphql-sse`` protocol, ``Accept: text/event-stream``) and over WebSocket (``graphql-transport-ws``). Its own
PostgreSQL pool answers typeahead and hydrates entities; the agent is reached through SearchAI over gRPC at
``grpc_target``. Both open on first use (or at startup, where the server runs the app's lifespan) and close
at shutdown. Nothing here imports Ray: the same app runs under uvicorn or behind a Serve ingress.

The doors are the HTTP API's: with API keys configured, ``Authorization: Bearer <key>`` or ``X-API-Key``
(a WebSocket client may send either in ``connection_init``'s payload instead); ``X-Tenant`` names whose runs
and trajectories these are (default ``default``), with the same pattern; ``X-Request-ID`` is passed on to
the agent when it is well-formed.

The web playground (``playground/``: one static page, its script and styles) is served beside the endpoint,
at ``/graphql/playground/`` (under Serve's route prefix ``/graphql`` too), and ``/`` redirects there; the
page holds no data, so it needs no key, and sends the key typed into it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.subscriptions import GRAPHQL_SSE_PROTOCOL, GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.types.unset import UnsetType

from agentic_rag.api.auth import key_matches
from agentic_rag.api.graphql.agent import RUN_GRACE_S, AgentClient
from agentic_rag.api.graphql.context import Context
from agentic_rag.api.graphql.loaders import Loaders
from agentic_rag.api.graphql.schema import build_schema
from agentic_rag.api.http.app import TENANT_PATTERN
from agentic_rag.api.http.errors import MAX_BODY_BYTES, REQUEST_ID_PATTERN
from agentic_rag.errors import ErrorKind
from agentic_rag.models.images import base64_body_bytes
from agentic_rag.orchestrator.trajectory import TrajectoryStore
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import close_pool, make_pool, resolve_dsn
from agentic_rag.storage.sql import Pool

__all__ = ["APPLICATION", "Backend", "create_app"]

log = logging.getLogger(__name__)

APPLICATION = "agentic_rag"  # the Serve application whose Ingress answers SearchAI (the proxy routes by it)
TENANT = re.compile(TENANT_PATTERN)
MAX_SUBSCRIPTIONS = 4  # runs one WebSocket may watch at once (each is a run of the agent)
PLAYGROUND = Path(__file__).parent / "playground"  # the web playground's static page, script and styles


class Backend:
    """The clients the backend shares across requests: its PostgreSQL pool and its channel to SearchAI."""

    def __init__(self, settings: Settings, grpc_target: str, *, application: str, pool: Pool | None) -> None:
        self.settings = settings
        self._target = grpc_target
        self._application = application
        self._pool = pool
        self._owns_pool = pool is None
        self._channel: grpc.aio.Channel | None = None
        self._agent: AgentClient | None = None
        self._lock = asyncio.Lock()

    async def open(self) -> tuple[Pool, AgentClient]:
        """The pool and the agent's client, opened on the first call."""
        if self._pool is None or self._agent is None:
            async with self._lock:
                if self._pool is None:
                    dsn = await asyncio.to_thread(resolve_dsn, self.settings)
                    self._pool = await make_pool(dsn, self.settings)
                if self._agent is None:
                    self._channel = grpc.aio.insecure_channel(self._target)
                    self._agent = AgentClient(self._channel, application=self._application,
                                              timeout_s=self.settings.agent_deadline_ms / 1000 + RUN_GRACE_S)
        return self._pool, self._agent

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel, self._agent = None, None
        if self._owns_pool and self._pool is not None:
            await close_pool(self._pool)
            self._pool = None


def _credentials(headers: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The caller's API key as it came (Authorization: Bearer, X-API-Key), to forward as gRPC metadata."""
    out: list[tuple[str, str]] = []
    scheme, _, token = str(headers.get("authorization") or "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        out.append(("authorization", f"Bearer {token.strip()}"))
    if key := str(headers.get("x-api-key") or "").strip():
        out.append(("x-api-key", key))
    return tuple(out)


def _offered(credentials: tuple[tuple[str, str], ...]) -> list[str]:
    return [v.removeprefix("Bearer ") for _, v in credentials]


class GraphQLView(GraphQL[Context, None]):
    """Strawberry's ASGI view with this backend's context and doors."""

    def __init__(self, backend: Backend) -> None:
        super().__init__(build_schema(), graphql_ide=None, allow_queries_via_get=False,
                         subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_SSE_PROTOCOL),
                         max_subscriptions_per_connection=MAX_SUBSCRIPTIONS)
        self.backend = backend

    async def get_context(self, request: Request | WebSocket, response: Any) -> Context:
        pool, agent = await self.backend.open()
        settings = self.backend.settings
        offered_id = request.headers.get("x-request-id", "")
        return Context(
            settings=settings, pool=pool, loaders=Loaders(pool, timeout_s=settings.query_timeout_ms / 1000,
                                                       attempts=settings.retry_attempts),
            agent=agent, store=TrajectoryStore(pool, settings),
            tenant=request.headers.get("x-tenant") or "default",
            request_id=offered_id if REQUEST_ID_PATTERN.match(offered_id) else uuid.uuid4().hex,
            credentials=_credentials(request.headers))

    async def on_ws_connect(self, context: Context) -> UnsetType | dict[str, object] | None:
        params = context.connection_params or {}
        if not isinstance(params, dict):
            raise ConnectionRejectionError()
        given = _credentials({k.lower(): v for k, v in params.items() if isinstance(v, str)})
        if given:
            context.credentials = given
        keys = self.backend.settings.api_keys
        if keys and not key_matches(_offered(context.credentials), keys):
            raise ConnectionRejectionError({"code": "unauthorized", "message": "a valid API key is required"})
        tenant = params.get("tenant")
        if isinstance(tenant, str) and tenant:
            context.tenant = tenant
        if not TENANT.match(context.tenant):
            raise ConnectionRejectionError({"code": "validation_error",
                                            "message": "tenant: 1 to 64 of A-Z a-z 0-9 _ -"})
        return await super().on_ws_connect(context)


def _refusal(status: int, code: ErrorKind, message: str, headers: Mapping[str, str] | None = None) -> Response:
    body = {"data": None, "errors": [{"message": message, "extensions": {"code": code}}]}
    return Response(json.dumps(body), status_code=status, media_type="application/json", headers=headers)


class Doors:
    """Checks an HTTP request's API key, tenant and size before GraphQL sees it (WebSockets: at connection_init),
    and that the backend's clients are open."""

    def __init__(self, view: GraphQLView, backend: Backend) -> None:
        self._view = view
        self._backend = backend
        self._keys = list(backend.settings.api_keys)
        # searchAi may carry an image (base64) where an image model is configured: a body as large as one
        self._max_body = MAX_BODY_BYTES + (base64_body_bytes(backend.settings)
                                           if backend.settings.image_model is not None else 0)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = self._check(Request(scope)) if scope["type"] == "http" else None
        if refusal is None:
            try:
                await self._backend.open()
            except Exception:
                log.exception("the GraphQL backend could not open its database pool or its channel to SearchAI")
                refusal = _refusal(503, "unavailable", "the backend cannot reach the catalog; retry shortly",
                                   {"Retry-After": "1"})
        if refusal is None:
            await self._view(scope, receive, send)
        elif scope["type"] == "http":
            await refusal(scope, receive, send)
        else:
            await WebSocket(scope, receive, send).close(1011)

    def _check(self, request: Request) -> Response | None:
        if self._keys and not key_matches(_offered(_credentials(request.headers)), self._keys):
            return _refusal(401, "unauthorized", "a valid API key is required (Authorization: Bearer or X-API-Key)",
                            {"WWW-Authenticate": "Bearer"})
        tenant = request.headers.get("x-tenant")
        if tenant is not None and not TENANT.match(tenant):
            return _refusal(400, "validation_error", "X-Tenant: 1 to 64 of A-Z a-z 0-9 _ -")
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > self._max_body:
            return _refusal(413, "payload_too_large", f"the request body is over {self._max_body} bytes")
        return None


async def _to_playground(request: Request) -> Response:
    return RedirectResponse(request.url_for("playground", path="/").path)


def create_app(settings: Settings, grpc_target: str, *, application: str = APPLICATION, pool: Pool | None = None,
               path: str = "/graphql") -> Starlette:
    """The GraphQL backend at ``path``, calling SearchAI at ``grpc_target`` (``host:port``).

    ``pool``: a PostgreSQL pool to use (and leave open) instead of opening one from ``settings``."""
    backend = Backend(settings, grpc_target, application=application, pool=pool)
    doors = Doors(GraphQLView(backend), backend)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await backend.open()
        try:
            yield
        finally:
            await backend.close()

    app = Starlette(routes=[Route(path, doors, methods=["GET", "POST"]), WebSocketRoute(path, doors),
                            # beside the endpoint (``/graphql/playground/``), where the page finds it under any prefix
                            Mount(f"{path.rstrip('/')}/playground", StaticFiles(directory=PLAYGROUND, html=True),
                                  name="playground"),
                            Route("/", _to_playground)],
                    lifespan=lifespan)
    app.state.backend = backend
    return app

"""The GraphQL backend (:mod:`agentic_rag.api.graphql`) as a Ray Serve application of its own, beside the agent's.

``import_path: agentic_rag.serve.graphql:build_graphql_app`` with ``route_prefix: /graphql``: GraphQL at
``/graphql`` (HTTP and WebSocket) and the web playground at ``/graphql/playground/``, on the same port as the
HTTP API. The backend reaches the agent as any client would, through SearchAI over Serve's gRPC proxy
(``graphql_agent_target``), and hydrates entities from PostgreSQL with a pool of its own.
"""

from __future__ import annotations

from typing import Any

from ray import serve
from ray.serve import Application
from ray.serve.deployment import Deployment
from starlette.types import ASGIApp, Receive, Scope, Send

from agentic_rag.api.graphql.app import create_app
from agentic_rag.serve.args import replica_settings, settings_from
from agentic_rag.storage.postgres import resolve_dsn


class _PrefixRoot:
    """Serve mounts the app at its route prefix (``root_path``): the prefix itself, ``/graphql``, is the GraphQL
    endpoint, where Starlette would otherwise redirect a POST to ``/graphql/``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and scope.get("path") == scope.get("root_path"):
            scope = {**scope, "path": f"{scope['path']}/", "raw_path": f"{scope['path']}/".encode()}
        await self.app(scope, receive, send)


class GraphQLReplica:
    """The backend's ASGI app, built in the replica (Serve's late-bound ingress, as the Ingress does)."""

    def __init__(self, args: dict[str, Any]) -> None:
        self._settings = replica_settings(args)
        self._app = create_app(self._settings, self._settings.graphql_agent_target, path="/")

    def __serve_build_asgi_app__(self) -> ASGIApp:
        return _PrefixRoot(self._app)

    async def __del__(self) -> None:
        await self._app.state.backend.close()


GraphQL: Deployment = serve.deployment(
    name="GraphQL",
    # parses GraphQL and batches PostgreSQL reads; a run's work happens in the agent's application
    ray_actor_options={"num_cpus": 0.1},
    # a subscription holds its request for the whole run: many at once, each mostly waiting on the agent
    max_ongoing_requests=256,
    max_queued_requests=100,
    autoscaling_config={"min_replicas": 1, "max_replicas": 2, "target_ongoing_requests": 96,
                        "upscale_delay_s": 10, "downscale_delay_s": 300},
    graceful_shutdown_timeout_s=50,
)(serve.ingress()(GraphQLReplica))


def build_graphql_app(args: dict[str, Any]) -> Application:
    """Bind the GraphQL deployment; ``args`` override settings fields (as for the agent's application)."""
    args = dict(args)
    settings = settings_from(args)
    if settings.database_url is None:
        args["database_url"] = resolve_dsn(settings)
    return GraphQL.bind(args)

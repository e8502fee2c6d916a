"""The Ingress deployment: the Ray-free HTTP app (:func:`agentic_rag.api.http.app.create_app`) over handles.

Serve routes HTTP to an application's ingress only, so the model deployments' OpenAI-compatible
chat-completions route (``/openai/v1``) is served here, over handles to PlannerModel and
ValidatorModel, whose ``complete`` runs the model layer's constrained decoding (the router-plus-
model-server shape of Ray Serve LLM's OpenAI app). A role the application deployed no model for (a weightless
backend) is answered here, by the role's own model, as in-process.

The app is built in the replica, after the constructor, from a
:class:`~agentic_rag.serve.service.ServeAgentService`: Serve's late-bound ingress
(``@serve.ingress()`` with ``__serve_build_asgi_app__``), so the same ``create_app`` serves
in-process under uvicorn and here.

The same replica serves the SearchAI gRPC service (``proto/searchai.proto``) through Serve's gRPC
proxy, which calls the method named like the RPC (``Ask``, ``Search``, ``Clarify``, ``AskStream``,
``ClarifyStream``) with the request
message and, by the parameter name ``grpc_context``, the call's context.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
from fastapi import FastAPI
from ray import serve
from ray.serve.deployment import Deployment
from ray.serve.grpc_util import RayServegRPCContext
from ray.serve.handle import DeploymentHandle

from agentic_rag.api.admission import Admission
from agentic_rag.api.grpc.proto import searchai_pb2 as pb
from agentic_rag.api.grpc.service import SearchAIApi
from agentic_rag.api.http.app import create_app
from agentic_rag.api.mcp import mount_mcp
from agentic_rag.models.base import ModelRole, TextBackend
from agentic_rag.planners.factory import build_model
from agentic_rag.planners.llm.chat import text_backend_of
from agentic_rag.serve.args import open_pool, replica_dsn, replica_settings
from agentic_rag.serve.service import ServeAgentService
from agentic_rag.serve.wire import MODEL_DEPLOYMENT, HandleTextBackend
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import close_pool, migrate

ADMISSION_POOL = 4  # connections of an Ingress replica's pool: admission only, a short statement each


class IngressReplica:
    """HTTP and gRPC in front of the Orchestrator and the retrievers."""

    # async: Serve awaits it (a database out of reach fails the deploy, not a request)
    async def __init__(self, args: dict[str, Any], orchestrator: DeploymentHandle[Any],  # type: ignore[misc]
                       graph: DeploymentHandle[Any], vector: DeploymentHandle[Any], embedder: DeploymentHandle[Any],
                       planner: DeploymentHandle[Any] | None, validator: DeploymentHandle[Any] | None) -> None:
        self._settings = replica_settings(args)
        chat = {"planner": _chat(self._settings, "planner", planner),
                "validator": _chat(self._settings, "validator", validator)}
        self._service = ServeAgentService(orchestrator, graph, vector, embedder, chat)
        # the per-key bounds, shared by every Ingress replica through PostgreSQL (api/admission.py); a small pool:
        # two short statements a run
        settings = self._settings.model_copy(update={"pool_min_size": 1, "pool_max_size": ADMISSION_POOL})
        dsn = await replica_dsn(settings)
        await migrate(dsn)  # idempotent (an advisory lock serialises replicas); admission's function is in it
        self._pool = await open_pool(settings, dsn)
        self._admission = Admission(self._pool, self._settings)
        self._grpc = SearchAIApi(self._service, self._settings, admission=self._admission)

    def __serve_build_asgi_app__(self) -> FastAPI:
        # Serve's proxy sets X-Request-ID (the client's, or one of its own) and echoes it on every response
        app = create_app(self._service, self._settings, proxy_sets_request_id=True, admission=self._admission)
        return mount_mcp(app, self._service, self._settings, admission=self._admission)

    async def __del__(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None:
            await close_pool(pool)

    async def Ask(self, request: pb.AskRequest, grpc_context: RayServegRPCContext) -> pb.AskReply:
        """SearchAI.Ask: one run of the agent loop."""
        return await self._grpc.ask(request, grpc_context)

    async def Search(self, request: pb.SearchRequest, grpc_context: RayServegRPCContext) -> pb.SearchReply:
        """SearchAI.Search: typeahead."""
        return await self._grpc.search(request, grpc_context)

    async def Clarify(self, request: pb.ClarifyRequest, grpc_context: RayServegRPCContext) -> pb.AskReply:
        """SearchAI.Clarify: resume a run that asked for a clarification."""
        return await self._grpc.clarify(request, grpc_context)

    async def AskStream(self, request: pb.AskRequest,
                        grpc_context: RayServegRPCContext) -> AsyncIterator[pb.RunUpdate]:
        """SearchAI.AskStream: a run's trajectory events as they are written, then its reply."""
        async for update in _with_status(self._grpc.ask_stream(request, grpc_context), grpc_context):
            yield update

    async def ClarifyStream(self, request: pb.ClarifyRequest,
                            grpc_context: RayServegRPCContext) -> AsyncIterator[pb.RunUpdate]:
        """SearchAI.ClarifyStream: a resumed run as it happens."""
        async for update in _with_status(self._grpc.clarify_stream(request, grpc_context), grpc_context):
            yield update


def _chat(settings: Settings, role: ModelRole, handle: DeploymentHandle[Any] | None) -> TextBackend:
    """The chat-completions side of a role: its model deployment, or the role's own model in this replica."""
    if handle is None:
        return text_backend_of(build_model(settings, role))
    return HandleTextBackend(handle, MODEL_DEPLOYMENT[role])


class StreamFailed(Exception):
    """Ends a stream whose status the API set on the context (bad input, a store down, ...)."""


async def _with_status(updates: AsyncIterator[pb.RunUpdate],
                       grpc_context: RayServegRPCContext) -> AsyncIterator[pb.RunUpdate]:
    """A stream's updates; when the API set an error status instead, raise after them. Serve's proxy sends a
    streaming call's context along with each message only, so a status set after the last one (or with none at
    all) would be lost and the stream would end OK; raised, it reaches the client with the code and details
    that were set (the proxy logs it, with a traceback, as the price)."""
    async for update in updates:
        yield update
    if grpc_context.code() not in (None, grpc.StatusCode.OK):
        raise StreamFailed(grpc_context.details())


Ingress: Deployment = serve.deployment(
    name="Ingress",
    # parses JSON and relays handle calls; the work happens in the deployments behind it
    ray_actor_options={"num_cpus": 0.1},
    # above the app's own limit of runs in flight (max_inflight_runs, 256) plus typeahead and probes, so
    # overload is answered by the app (JSON 503 with Retry-After; gRPC UNAVAILABLE), not queued in the proxy
    max_ongoing_requests=320,
    # a short queue at the proxy covers a scale-up; beyond it the proxy answers 503 at once
    max_queued_requests=100,
    autoscaling_config={"min_replicas": 1, "max_replicas": 2, "target_ongoing_requests": 128,
                        "upscale_delay_s": 10, "downscale_delay_s": 300},
    # a streamed run may last the loop's deadline (30 s) plus its grace period: let it finish on scale-down
    graceful_shutdown_timeout_s=50,
)(serve.ingress()(IngressReplica))

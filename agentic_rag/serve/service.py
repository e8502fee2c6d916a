"""The :class:`~agentic_rag.api.service.AgentService` the Ingress serves: calls to deployment handles.

It raises what :class:`~agentic_rag.api.service.LocalAgentService` raises, so the HTTP app
maps failures to the same statuses in either place. Runs with an event sink stream from the
Orchestrator (``stream=True``), one trajectory event per item, so SSE clients see the run as it goes.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from pydantic import TypeAdapter
from ray.exceptions import RayActorError, RayTaskError
from ray.serve.exceptions import BackPressureError, RayServeException
from ray.serve.handle import DeploymentHandle, DeploymentResponseGenerator

from agentic_rag.api.service import Degradations, ServiceUnavailable, recorded_as
from agentic_rag.logs import ERROR_TEXT_MAX
from agentic_rag.models.base import TextBackend
from agentic_rag.orchestrator.conversations import Conversation
from agentic_rag.orchestrator.loop import EventSink, RunResult
from agentic_rag.orchestrator.trajectory import Trajectory
from agentic_rag.protocol import EntityLinks, EntityRef, Mode, RunBudget
from agentic_rag.retrievers.errors import RetrievalError
from agentic_rag.retrievers.typeahead import TypeaheadHit, TypeaheadQuery
from agentic_rag.serve.wire import (
    HITS,
    LINKED,
    ResumeRequest,
    RunReply,
    RunRequest,
    StreamItem,
    reraise_ours,
    settle,
    unwrap,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

READY_TIMEOUT_S = 2.0
RECORDS = TypeAdapter(list[dict[str, Any]])
# The deployment is gone, restarting or over its queue limit: worth retrying (503). An exception raised
# inside a replica (RayTaskError) is a bug and stays one (500).
UNAVAILABLE = (RayServeException, RayActorError)


async def _available(what: str, call: Callable[[], Awaitable[T]], component: str = "the catalog",
                     trajectory_id: uuid.UUID | None = None) -> T:
    """``call()``; a deployment that did not take it or failed under it is :class:`ServiceUnavailable`, naming
    ``trajectory_id`` (the run the call may have started) unless the call was refused at the door."""
    try:
        return await call()
    except (*UNAVAILABLE, RetrievalError) as exc:
        # over the queue limit (BackPressureError) the call never reached a replica: no run was started
        tid = None if isinstance(exc, BackPressureError) else trajectory_id
        raise ServiceUnavailable(f"{what}: {type(exc).__name__}: {exc}"[:ERROR_TEXT_MAX], component=component,
                                 trajectory_id=tid) from exc


class ServeAgentService:
    """:class:`~agentic_rag.api.service.AgentService` over the Orchestrator and retriever handles."""

    def __init__(self, orchestrator: DeploymentHandle[Any], graph: DeploymentHandle[Any],
                 vector: DeploymentHandle[Any], embedder: DeploymentHandle[Any],
                 chat: Mapping[str, TextBackend]) -> None:
        self._orchestrator = orchestrator
        self._chat = dict(chat)
        self._orchestrator_stream = orchestrator.options(stream=True)
        self._graph = graph
        self._vector = vector
        self._embedder = embedder
        self._degraded = Degradations()  # what failed runs lately: readiness says so too

    async def search(self, q: TypeaheadQuery) -> list[TypeaheadHit]:
        async def call() -> list[TypeaheadHit]:
            return HITS.validate_python(unwrap(await settle(self._graph.typeahead.remote(q.model_dump(mode="json")),
                                                               "GraphRetriever.typeahead")))

        return await _available("typeahead", call)

    async def resolve(self, text: str) -> EntityLinks:
        async def call() -> EntityLinks:
            raw = unwrap(await settle(self._graph.link.remote(text), "GraphRetriever.link"))
            return LINKED.validate_python(raw).links

        return await _available("entity linking", call)

    async def ask(self, question: str, *, mode: Mode, tenant: str, request_id: str,
                  sink: EventSink | None = None, budget: RunBudget | None = None,
                  image: bytes | None = None, conversation_id: uuid.UUID | None = None) -> RunResult:
        # the run's id is given here, so a 503 for a replica that died mid-run can still name it
        tid = uuid.uuid4()
        request = RunRequest(question=question, mode=mode, tenant=tenant, request_id=request_id, trajectory_id=tid,
                             budget=budget, image=base64.b64encode(image).decode("ascii") if image else None,
                             conversation_id=conversation_id)
        return await self._run("run", request.model_dump(mode="json"), sink, tid)

    async def resume(self, trajectory_id: uuid.UUID, choice: int | str, *, tenant: str, request_id: str,
                     sink: EventSink | None = None, budget: RunBudget | None = None) -> RunResult:
        request = ResumeRequest(trajectory_id=trajectory_id, choice=choice, tenant=tenant, request_id=request_id,
                                budget=budget)
        return await self._run("resume", request.model_dump(mode="json"), sink, trajectory_id)

    async def trajectory(self, trajectory_id: uuid.UUID, *, tenant: str) -> Trajectory | None:
        async def call() -> Trajectory | None:
            value = unwrap(await settle(self._orchestrator.trajectory.remote(str(trajectory_id), tenant),
                                       "Orchestrator.trajectory"))
            return None if value is None else Trajectory.model_validate(value)

        return await _available("trajectory store", call, "the trajectory store")

    async def conversation(self, conversation_id: uuid.UUID, *, tenant: str) -> Conversation | None:
        async def call() -> Conversation | None:
            value = unwrap(await settle(self._orchestrator.conversation.remote(str(conversation_id), tenant),
                                       "Orchestrator.conversation"))
            return None if value is None else Conversation.model_validate(value)

        return await _available("conversations", call, "the conversation store")

    async def forget(self, conversation_id: uuid.UUID, *, tenant: str) -> bool:
        async def call() -> bool:
            return bool(unwrap(await settle(self._orchestrator.forget.remote(str(conversation_id), tenant),
                                            "Orchestrator.forget")))

        return await _available("conversations", call, "the conversation store")

    async def entities(self, refs: list[EntityRef]) -> list[dict[str, Any]]:
        async def call() -> list[dict[str, Any]]:
            dumped = [r.model_dump(mode="json") for r in refs]
            raw = await settle(self._graph.entities.remote(dumped), "GraphRetriever.entities")
            return RECORDS.validate_python(unwrap(raw))

        return await _available("hydration", call)

    async def ready(self) -> dict[str, bool]:
        postgres, qdrant, models, orchestrator = await asyncio.gather(
            self._check("postgres", "GraphRetriever.ready", lambda: self._graph.ready.remote()),
            self._check("qdrant", "VectorRetriever.ready", lambda: self._vector.ready.remote()),
            # the planner and validator fall back to the heuristic; the embedder has no fallback
            self._check("models", "Embedder.embed", lambda: self._embedder.embed.remote(["ready"])),
            # a replica that can run the loop: it reads a trajectory that does not exist (one indexed lookup), so
            # with every Orchestrator replica gone or restarting the service says so instead of queueing runs
            self._check("orchestrator", "Orchestrator.trajectory",
                        lambda: self._orchestrator.trajectory.remote(str(uuid.uuid4()), "readyz")),
        )
        return self._degraded.apply({"postgres": postgres, "qdrant": qdrant, "models": models,
                                     "orchestrator": orchestrator})

    def chat_models(self) -> Mapping[str, TextBackend]:
        return self._chat

    # -- runs ----------------------------------------------------------------------------------------

    async def _run(self, method: str, request: dict[str, Any], sink: EventSink | None,
                   trajectory_id: uuid.UUID) -> RunResult:
        async def unary() -> RunResult:
            raw = await _available("orchestrator", lambda: settle(getattr(self._orchestrator, method).remote(request),
                                                          f"Orchestrator.{method}"),
                                   "the orchestrator", trajectory_id)
            return RunReply.model_validate(unwrap(raw)).result()

        if sink is None:
            return self._degraded.saw(await recorded_as(trajectory_id, unary()))
        stream = self._orchestrator_stream
        response = (stream.run_stream if method == "run" else stream.resume_stream).remote(request)
        if not isinstance(response, DeploymentResponseGenerator):
            raise TypeError(f"expected a streaming response, got {type(response).__name__}")
        try:
            return self._degraded.saw(await recorded_as(trajectory_id, _available(
                "orchestrator", lambda: self._drain(response, sink), "the orchestrator", trajectory_id)))
        except asyncio.CancelledError:
            response.cancel()  # the client went away: the replica cancels the run, which records it as cancelled
            raise

    @staticmethod
    async def _drain(response: DeploymentResponseGenerator[Any], sink: EventSink) -> RunResult:
        try:
            async for raw in response:
                item = StreamItem.model_validate(raw)
                if item.kind == "event":
                    await sink(item.data)
                else:
                    return RunReply.model_validate(unwrap(item.data)).result()
        except RayTaskError as exc:  # the run failed in the replica: its own error, as in-process
            reraise_ours(exc)
        raise ServiceUnavailable("the orchestrator ended the stream without a reply", component="the orchestrator")

    @staticmethod
    async def _check(name: str, hop: str, call: Callable[[], Any]) -> bool:
        try:
            async with asyncio.timeout(READY_TIMEOUT_S):
                unwrap(await settle(call(), hop))
        except Exception as exc:
            log.warning("readiness: %s is not ready: %s", name, str(exc) or type(exc).__name__)
            return False
        return True


"""The Orchestrator deployment: the agent loop over handles to the model and retriever deployments.

It builds the same :class:`agentic_rag.orchestrator.loop.Orchestrator` the CLI runs in-process, with
:class:`~agentic_rag.serve.wire.HandleModel` and :class:`~agentic_rag.serve.wire.HandleRetrieval`
in place of local objects, and a TrajectoryStore on a pool of its own. A role with no model deployment
(its backend holds no weights: the heuristic, a remote OpenAI-compatible server's client) runs here, in the
replica. A run spends nearly all its time waiting on other deployments and PostgreSQL, so one replica holds
many runs at once. Each replica
sweeps for runs a dead replica left running (:mod:`agentic_rag.orchestrator.sweep`) when it starts and
periodically.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from pydantic_core import to_jsonable_python
from ray import serve
from ray.serve.deployment import Deployment
from ray.serve.handle import DeploymentHandle

from agentic_rag.models.base import ModelRole, StructuredModel
from agentic_rag.orchestrator import loop
from agentic_rag.orchestrator.guards import load_policy
from agentic_rag.orchestrator.runtime import CATALOG_COUNT_SQL, CatalogEmpty
from agentic_rag.orchestrator.sweep import start_sweeper
from agentic_rag.orchestrator.trajectory import MAX_LABEL_CHARS, TrajectoryStore
from agentic_rag.planners.factory import build_fallback, build_model
from agentic_rag.serve.args import open_pool, replica_dsn, replica_settings
from agentic_rag.serve.wire import (
    MODEL_DEPLOYMENT,
    HandleModel,
    HandleRetrieval,
    ResumeRequest,
    RunReply,
    RunRequest,
    accounted,
    invalid,
    ok,
    parse,
)
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import close_pool, migrate

Work = Callable[[loop.EventSink | None], Awaitable[loop.RunResult]]


class OrchestratorReplica:
    """Runs and resumes questions through the loop; streams trajectory events when asked."""

    # Serve awaits an async constructor: an empty catalog or a dead database fails the deploy, not a request
    async def __init__(self, args: dict[str, Any], planner: DeploymentHandle[Any] | None,  # type: ignore[misc]
                       validator: DeploymentHandle[Any] | None, vector: DeploymentHandle[Any],
                       graph: DeploymentHandle[Any]) -> None:
        settings = replica_settings(args)
        dsn = await replica_dsn(settings)
        await migrate(dsn)  # idempotent; an advisory lock serialises concurrent replicas
        self._pool = await open_pool(settings, dsn)
        async with self._pool.acquire() as conn:
            row = await conn.fetchrow(CATALOG_COUNT_SQL)
        if not row or not row[0]:
            raise CatalogEmpty("the catalog is empty: run `agentic-rag ingest` first")
        self._store = TrajectoryStore(self._pool, settings)
        self._loop = loop.Orchestrator(
            settings, planner=_model(settings, "planner", planner), validator=_model(settings, "validator", validator),
            fallback=build_fallback(settings),
            retrieval=HandleRetrieval(vector, graph, settings), store=self._store,
            policy=load_policy(settings.guard_policy),
        )
        # this replica is heard in PostgreSQL from now on; runs a dead replica left running are closed within
        # seconds of its lapse (and by the timed sweep, now and every interval)
        self._sweeper = await start_sweeper(self._store, settings, self._loop.conversations)

    # -- unary ---------------------------------------------------------------------------------------

    # A failure of the run (a choice not offered, the trajectory store down ...) is raised as the loop raised it:
    # Ray carries it to the caller (agentic_rag.serve.wire.settle).

    @accounted
    async def run(self, request: Any) -> dict[str, Any]:
        """Answer one question: a :class:`RunReply` as JSON."""
        return ok(RunReply.of(await self._run_work(parse(RunRequest, request))(None)))

    @accounted
    async def resume(self, request: Any) -> dict[str, Any]:
        """Continue a run that asked for clarification."""
        return ok(RunReply.of(await self._resume_work(parse(ResumeRequest, request))(None)))

    @accounted
    async def trajectory(self, trajectory_id: Any, tenant: Any) -> dict[str, Any]:
        """The tenant's trajectory with its events, or None."""
        try:
            tid = uuid.UUID(str(trajectory_id))
        except ValueError as exc:
            raise invalid(exc) from None
        return ok(await self._store.get(tid, tenant=str(tenant)[:MAX_LABEL_CHARS]))

    @accounted
    async def conversation(self, conversation_id: Any, tenant: Any) -> dict[str, Any]:
        """The tenant's conversation with its turns, or None."""
        return ok(await self._loop.conversations.get(_uuid(conversation_id), tenant=str(tenant)[:MAX_LABEL_CHARS]))

    @accounted
    async def forget(self, conversation_id: Any, tenant: Any) -> dict[str, Any]:
        """Delete the tenant's conversation and its turns; whether there was one."""
        return ok(await self._loop.conversations.delete(_uuid(conversation_id), tenant=str(tenant)[:MAX_LABEL_CHARS]))

    # -- streamed ------------------------------------------------------------------------------------

    async def run_stream(self, request: Any) -> AsyncIterator[dict[str, Any]]:
        """A run as it happens: one ``{"kind": "event"}`` item per trajectory event, then ``{"kind": "reply"}``."""
        async for item in self._streamed(self._run_work(parse(RunRequest, request))):
            yield item

    async def resume_stream(self, request: Any) -> AsyncIterator[dict[str, Any]]:
        """A resumed run as it happens (as :meth:`run_stream`)."""
        async for item in self._streamed(self._resume_work(parse(ResumeRequest, request))):
            yield item

    # -- shared --------------------------------------------------------------------------------------

    def _run_work(self, r: RunRequest) -> Work:
        return lambda sink: self._loop.run(r.question, mode=r.mode, request_id=r.request_id,
                                           session_id=r.session_id, tenant=r.tenant, sink=sink,
                                           trajectory_id=r.trajectory_id, budget=r.budget, image=r.image_bytes(),
                                           conversation_id=r.conversation_id)

    def _resume_work(self, r: ResumeRequest) -> Work:
        # one resume per clarification on any number of replicas: the loop claims the run in PostgreSQL
        return lambda sink: self._loop.resume(r.trajectory_id, r.choice, tenant=r.tenant, request_id=r.request_id,
                                              sink=sink, budget=r.budget)

    async def _streamed(self, work: Work) -> AsyncIterator[dict[str, Any]]:
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

        async def sink(event: dict[str, Any]) -> None:
            # payloads may hold UUIDs and datetimes: the wire carries plain JSON only
            await queue.put({"kind": "event", "data": to_jsonable_python(event)})

        async def produce() -> None:
            try:
                await queue.put({"kind": "reply", "data": ok(RunReply.of(await work(sink)))})
            finally:
                await queue.put(None)

        task = asyncio.create_task(produce())
        try:
            while (item := await queue.get()) is not None:
                yield item
            await task  # the run's failure, raised as the stream's error
        finally:
            # the caller went away (client disconnect, deadline): stop the run; the loop records it as cancelled
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def __del__(self) -> None:
        sweeper = getattr(self, "_sweeper", None)
        if sweeper is not None:
            sweeper.cancel()
        pool = getattr(self, "_pool", None)
        if pool is not None:
            await close_pool(pool)


Orchestrator: Deployment = serve.deployment(
    name="Orchestrator",
    # the loop's own CPU work is small (pydantic, JSON); the models and stores do the heavy lifting
    ray_actor_options={"num_cpus": 0.2},
    # a run mostly waits (models, retrievers, trajectory writes): one replica holds many at once
    max_ongoing_requests=100,
    # past this, a new question is refused at once (503) rather than waiting behind a full replica
    max_queued_requests=200,
    autoscaling_config={"min_replicas": 1, "max_replicas": 2, "target_ongoing_requests": 64,
                        "upscale_delay_s": 10, "downscale_delay_s": 300},
    # a replica being scaled down lets its runs finish: the loop's deadline (30 s) plus its final writes
    graceful_shutdown_timeout_s=45,
    # an empty catalog or an unreachable database will not fix itself by retrying for minutes
    max_constructor_retry_count=3,
)(OrchestratorReplica)


def _model(settings: Settings, role: ModelRole, handle: DeploymentHandle[Any] | None) -> StructuredModel:
    """The role's model deployment, or, where the application deployed none for it, the role's own model here."""
    if handle is None:
        return build_model(settings, role)
    return HandleModel(handle, MODEL_DEPLOYMENT[role])


def _uuid(value: Any) -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except ValueError as exc:
        raise invalid(exc) from None

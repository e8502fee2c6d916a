"""What the HTTP API asks of the service, as a protocol, and its in-process implementation.

The FastAPI app (:mod:`agentic_rag.deployments.http`) depends only on :class:`AgentService`. In one
process it gets a :class:`LocalAgentService` over a :class:`~agentic_rag.orchestrator.runtime.Runtime`;
under Ray Serve the ingress passes an object of the same shape that calls deployment handles.

Failures an implementation reports, and what the API makes of them:

- :class:`~agentic_rag.orchestrator.trajectory.TrajectoryNotFound`: no such trajectory for that tenant (404).
- :class:`NotAwaitingClarification`: a resume of a run that is not waiting for a clarification (409).
- :class:`~agentic_rag.orchestrator.loop.ClarificationError`: a choice that was not offered (422).
- :class:`~agentic_rag.orchestrator.trajectory.TrajectoryError` or :class:`ServiceUnavailable`: a
  backing store did not answer (503, worth retrying).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Protocol, TypeVar

import psycopg
from psycopg_pool import PoolTimeout

from agentic_rag.models.base import TextBackend
from agentic_rag.models.chat import text_backend_of
from agentic_rag.orchestrator.loop import ClarificationError, EventSink, RunResult
from agentic_rag.orchestrator.runtime import Runtime, open_runtime
from agentic_rag.orchestrator.state import Mode
from agentic_rag.orchestrator.trajectory import Trajectory, TrajectoryNotFound
from agentic_rag.protocol import EntityRef
from agentic_rag.retrievers.hydrate import hydrate
from agentic_rag.retrievers.typeahead import TypeaheadHit, TypeaheadQuery, typeahead
from agentic_rag.settings import Settings

__all__ = [
    "AgentService",
    "LocalAgentService",
    "NotAwaitingClarification",
    "ServiceUnavailable",
    "open_local_service",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

READY_TIMEOUT_S = 2.0
READY_SQL = "SELECT 1"


class ServiceUnavailable(RuntimeError):
    """A backing store (PostgreSQL, Qdrant) did not answer; the request may be retried."""


class NotAwaitingClarification(ClarificationError):
    """The trajectory exists but is not waiting for a clarification (finished, or being resumed now)."""


class AgentService(Protocol):
    """Everything the HTTP API needs: the two lanes, clarification, trajectories, hydration, readiness."""

    async def search(self, q: TypeaheadQuery) -> list[TypeaheadHit]:
        """The typeahead lane: ranked name matches, no model."""
        ...

    async def ask(self, question: str, *, mode: Mode, tenant: str, request_id: str,
                  sink: EventSink | None = None) -> RunResult:
        """The search_ai lane: one run of the agent loop; ``sink`` receives each trajectory event as it is written."""
        ...

    async def resume(self, trajectory_id: uuid.UUID, choice: int | str, *, tenant: str, request_id: str,
                     sink: EventSink | None = None) -> RunResult:
        """Continue a run that asked for a clarification, with the index or entity id the user chose."""
        ...

    async def trajectory(self, trajectory_id: uuid.UUID, *, tenant: str) -> Trajectory | None:
        """The tenant's trajectory with its events; None when absent or another tenant's."""
        ...

    async def entities(self, refs: list[EntityRef]) -> list[dict[str, Any]]:
        """Full records for ``refs`` in the order given; unknown ids are left out."""
        ...

    async def ready(self) -> dict[str, bool]:
        """Whether each dependency answers now: ``postgres``, ``qdrant``, ``models``."""
        ...

    def chat_models(self) -> Mapping[str, TextBackend]:
        """The planner's and the validator's model by name, for the OpenAI-compatible chat-completions route."""
        ...


class LocalAgentService:
    """:class:`AgentService` in-process, over one runtime (pool, Qdrant client, embedder, orchestrator)."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime
        self._timeout_s = runtime.settings.query_timeout_ms / 1000
        # Resumes in progress in this process: a second resume of the same run is a conflict, not a
        # second writer racing the first for the trajectory's next seq.
        self._resuming: set[uuid.UUID] = set()

    async def search(self, q: TypeaheadQuery) -> list[TypeaheadHit]:
        async def run() -> list[TypeaheadHit]:
            async with self._rt.pool.connection() as conn:
                return await typeahead(conn, q, timeout_s=self._timeout_s)

        return await _available("typeahead", run)

    async def ask(self, question: str, *, mode: Mode, tenant: str, request_id: str,
                  sink: EventSink | None = None) -> RunResult:
        return await self._rt.orchestrator.run(question, mode=mode, tenant=tenant, request_id=request_id, sink=sink)

    async def resume(self, trajectory_id: uuid.UUID, choice: int | str, *, tenant: str, request_id: str,
                     sink: EventSink | None = None) -> RunResult:
        # The orchestrator says "cannot resume" in one exception type; the API tells its cases apart.
        traj = await self._rt.store.get(trajectory_id, tenant=tenant)
        if traj is None:
            raise TrajectoryNotFound(f"trajectory {trajectory_id} not found")
        if traj.status != "needs_clarification" or trajectory_id in self._resuming:
            state = "being resumed" if trajectory_id in self._resuming else f"status {traj.status}"
            raise NotAwaitingClarification(f"trajectory {trajectory_id} is not waiting for a clarification ({state})")
        self._resuming.add(trajectory_id)
        try:
            return await self._rt.orchestrator.resume(trajectory_id, choice, tenant=tenant, request_id=request_id,
                                                      sink=sink)
        finally:
            self._resuming.discard(trajectory_id)

    async def trajectory(self, trajectory_id: uuid.UUID, *, tenant: str) -> Trajectory | None:
        return await self._rt.store.get(trajectory_id, tenant=tenant)

    async def entities(self, refs: list[EntityRef]) -> list[dict[str, Any]]:
        async def run() -> list[dict[str, Any]]:
            async with asyncio.timeout(self._timeout_s), self._rt.pool.connection() as conn:
                return await hydrate(conn, refs)

        return await _available("hydration", run)

    async def ready(self) -> dict[str, bool]:
        postgres, qdrant, models = await asyncio.gather(
            _check("postgres", self._postgres), _check("qdrant", self._qdrant), _check("models", self._models))
        return {"postgres": postgres, "qdrant": qdrant, "models": models}

    def chat_models(self) -> Mapping[str, TextBackend]:
        orchestrator = self._rt.orchestrator
        return {"planner": text_backend_of(orchestrator.planner), "validator": text_backend_of(orchestrator.validator)}

    async def _postgres(self) -> None:
        async with self._rt.pool.connection() as conn:
            await conn.execute(READY_SQL)

    async def _qdrant(self) -> None:
        await asyncio.to_thread(self._rt.qdrant.get_collections)

    async def _models(self) -> None:
        # The planner and validator fall back to the heuristic when they fail; the embedder has no fallback.
        vectors = await self._rt.embedder.aembed(["ready"])
        if vectors.shape[0] != 1:
            raise RuntimeError(f"the embedder returned {vectors.shape[0]} vectors for one text")


async def _available(what: str, op: Callable[[], Awaitable[T]]) -> T:
    """Run ``op``; a database that does not answer becomes :class:`ServiceUnavailable`."""
    try:
        return await op()
    except (psycopg.OperationalError, PoolTimeout, TimeoutError) as exc:
        raise ServiceUnavailable(f"{what}: the catalog database did not answer ({str(exc) or 'timeout'})") from exc


async def _check(name: str, probe: Callable[[], Awaitable[None]]) -> bool:
    try:
        async with asyncio.timeout(READY_TIMEOUT_S):
            await probe()
    except Exception as exc:
        log.warning("readiness: %s is not ready: %s", name, str(exc) or type(exc).__name__)
        return False
    return True


@asynccontextmanager
async def open_local_service(settings: Settings) -> AsyncIterator[LocalAgentService]:
    """A :class:`LocalAgentService` over a runtime opened from ``settings`` (closed on exit)."""
    async with open_runtime(settings) as rt:
        yield LocalAgentService(rt)

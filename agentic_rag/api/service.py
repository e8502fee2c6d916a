"""What the HTTP API asks of the service, as a protocol, and its in-process implementation.

The FastAPI app (:mod:`agentic_rag.api.http.app`) depends only on :class:`AgentService`. In one
process it gets a :class:`LocalAgentService` over a :class:`~agentic_rag.orchestrator.runtime.Runtime`;
under Ray Serve the ingress passes an object of the same shape that calls deployment handles.

Failures an implementation reports, and what the API makes of them:

- :class:`~agentic_rag.orchestrator.trajectory.TrajectoryNotFound`: no such trajectory for that tenant (404).
- :class:`~agentic_rag.orchestrator.loop.NotAwaitingClarification`: a resume of a run that is not waiting for a
  clarification: it ended otherwise (abandoned included), or a concurrent resume claimed it first (409).
- :class:`~agentic_rag.orchestrator.loop.ClarificationError`: a choice that was not offered (422).
- :class:`~agentic_rag.orchestrator.trajectory.TrajectoryError` or :class:`ServiceUnavailable`: a
  backing store did not answer (503, worth retrying). A run's failure names its trajectory
  (:func:`recorded_as`): the service gives each run its id before it starts.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Protocol, TypeVar

from agentic_rag.errors import Unavailable
from agentic_rag.models.base import TextBackend
from agentic_rag.orchestrator.conversations import Conversation
from agentic_rag.orchestrator.loop import EventSink, NotAwaitingClarification, RunResult
from agentic_rag.orchestrator.runtime import Runtime, open_runtime
from agentic_rag.orchestrator.trajectory import Trajectory, TrajectoryError, TrajectoryNotFound
from agentic_rag.planners.llm.chat import text_backend_of
from agentic_rag.protocol import EntityLinks, EntityRef, Mode, RunBudget
from agentic_rag.retrievers.hydrate import hydrate
from agentic_rag.retrievers.typeahead import TypeaheadHit, TypeaheadQuery, typeahead
from agentic_rag.settings import Settings
from agentic_rag.storage.retry import DATABASE_FAILURES, Conn, with_connection
from agentic_rag.understanding.linker import link

__all__ = [
    "AgentService",
    "Degradations",
    "LocalAgentService",
    "NotAwaitingClarification",
    "ServiceUnavailable",
    "open_local_service",
    "recorded_as",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

READY_TIMEOUT_S = 2.0
READY_SQL = "SELECT 1"
# How long readiness reports a dependency down after it last failed a run's step: past one probe period of the
# manifests in k8s/ (5 s), so a load balancer that probes sees it
DEGRADED_HOLD_S = 5.0


class ServiceUnavailable(Unavailable, RuntimeError):
    """A backing store (PostgreSQL, Qdrant) or a deployment did not answer; the request may be retried.

    The message is for the log; ``component`` ("the catalog", "the orchestrator") is what the client is told,
    with ``trajectory_id`` when a run may have been recorded before the failure (its trajectory says how it
    ended: answered after all, or abandoned once the sweep finds it; 404 if it was never recorded)."""

    def __init__(self, message: str, *, component: str = "the catalog",
                 trajectory_id: uuid.UUID | None = None) -> None:
        super().__init__(message)
        self.component = component
        self.trajectory_id = trajectory_id


class Degradations:
    """Which dependencies failed a run's step lately; readiness reports each down for ``hold_s`` after.

    An active probe can pass while runs still fail: a caller's router that has not yet learned of a
    replacement replica, a timeout under a queue the probe does not wait in. The runs are the truth: readiness
    reports a dependency down for as long as it degrades answers, and a little after (:data:`DEGRADED_HOLD_S`).
    """

    def __init__(self, hold_s: float = DEGRADED_HOLD_S) -> None:
        self._hold_s = hold_s
        self._last: dict[str, float] = {}

    def saw(self, result: RunResult) -> RunResult:
        """Note the dependencies that failed ``result``'s steps; return it."""
        now = time.monotonic()
        for dependency in result.degraded:
            self._last[dependency] = now
        return result

    def apply(self, checks: dict[str, bool]) -> dict[str, bool]:
        """``checks`` with every dependency that failed a run within the hold reported down."""
        now = time.monotonic()
        return {name: ok and (name not in self._last or now - self._last[name] >= self._hold_s)
                for name, ok in checks.items()}


async def recorded_as(trajectory_id: uuid.UUID, work: Awaitable[T]) -> T:
    """``work``, a run recorded as ``trajectory_id``: when the trajectory store fails it, the failure names the
    run (:class:`ServiceUnavailable`), so the client can read how it ended once the store answers again."""
    try:
        return await work
    except TrajectoryNotFound:
        raise
    except TrajectoryError as exc:
        raise ServiceUnavailable(str(exc), component="the trajectory store", trajectory_id=trajectory_id) from exc


class AgentService(Protocol):
    """Everything the HTTP API needs: the two lanes, clarification, trajectories, hydration, readiness."""

    async def search(self, q: TypeaheadQuery) -> list[TypeaheadHit]:
        """The typeahead lane: ranked name matches, no model."""
        ...

    async def resolve(self, text: str) -> EntityLinks:
        """Entity linking over the catalog's names (seed 004's Mapper): every name ``text`` mentions, each with the
        entities it may mean, best first, and the name-like words that match nothing."""
        ...

    async def ask(self, question: str, *, mode: Mode, tenant: str, request_id: str,
                  sink: EventSink | None = None, budget: RunBudget | None = None,
                  image: bytes | None = None, conversation_id: uuid.UUID | None = None) -> RunResult:
        """The search_ai lane: one run of the agent loop; ``sink`` receives each trajectory event as it is written;
        ``budget`` lowers the run's limits; ``image`` is one the question is about, verified by the caller
        (:func:`~agentic_rag.models.images.read_request_image`); ``conversation_id`` the conversation it follows
        up (None: a new one; unknown, expired or another tenant's: ``ConversationNotFound``; a turn still running:
        ``ConversationBusy``; at its turn limit: ``ConversationFull``)."""
        ...

    async def conversation(self, conversation_id: uuid.UUID, *, tenant: str) -> Conversation | None:
        """The tenant's conversation with its turns; None when unknown, expired or another tenant's."""
        ...

    async def forget(self, conversation_id: uuid.UUID, *, tenant: str) -> bool:
        """Delete the tenant's conversation and its turns; whether there was one."""
        ...

    async def resume(self, trajectory_id: uuid.UUID, choice: int | str, *, tenant: str, request_id: str,
                     sink: EventSink | None = None, budget: RunBudget | None = None) -> RunResult:
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
        self._degraded = Degradations()

    async def search(self, q: TypeaheadQuery) -> list[TypeaheadHit]:
        return await self._db("typeahead", lambda conn: typeahead(conn, q, timeout_s=self._timeout_s))

    async def resolve(self, text: str) -> EntityLinks:
        return await self._db("entity linking", lambda conn: link(conn, text, timeout_s=self._timeout_s))

    async def ask(self, question: str, *, mode: Mode, tenant: str, request_id: str,
                  sink: EventSink | None = None, budget: RunBudget | None = None,
                  image: bytes | None = None, conversation_id: uuid.UUID | None = None) -> RunResult:
        tid = uuid.uuid4()
        return self._degraded.saw(await recorded_as(tid, self._rt.orchestrator.run(
            question, mode=mode, tenant=tenant, request_id=request_id, sink=sink, trajectory_id=tid, budget=budget,
            image=image, conversation_id=conversation_id)))

    async def conversation(self, conversation_id: uuid.UUID, *, tenant: str) -> Conversation | None:
        return await self._rt.orchestrator.conversations.get(conversation_id, tenant=tenant)

    async def forget(self, conversation_id: uuid.UUID, *, tenant: str) -> bool:
        return await self._rt.orchestrator.conversations.delete(conversation_id, tenant=tenant)

    async def resume(self, trajectory_id: uuid.UUID, choice: int | str, *, tenant: str, request_id: str,
                     sink: EventSink | None = None, budget: RunBudget | None = None) -> RunResult:
        # one resume per clarification: the orchestrator claims the run in PostgreSQL
        return self._degraded.saw(await recorded_as(trajectory_id, self._rt.orchestrator.resume(
            trajectory_id, choice, tenant=tenant, request_id=request_id, sink=sink, budget=budget)))

    async def trajectory(self, trajectory_id: uuid.UUID, *, tenant: str) -> Trajectory | None:
        return await self._rt.store.get(trajectory_id, tenant=tenant)

    async def entities(self, refs: list[EntityRef]) -> list[dict[str, Any]]:
        return await self._db("hydration", lambda conn: hydrate(conn, refs))

    async def ready(self) -> dict[str, bool]:
        postgres, qdrant, models = await asyncio.gather(
            _check("postgres", self._postgres), _check("qdrant", self._qdrant), _check("models", self._models))
        return self._degraded.apply({"postgres": postgres, "qdrant": qdrant, "models": models})

    def chat_models(self) -> Mapping[str, TextBackend]:
        orchestrator = self._rt.orchestrator
        return {"planner": text_backend_of(orchestrator.planner), "validator": text_backend_of(orchestrator.validator)}

    async def _db(self, what: str, op: Callable[[Conn], Awaitable[T]]) -> T:
        """``op`` on a pooled connection under the retry policy; a database that does not answer becomes
        :class:`ServiceUnavailable`."""
        try:
            return await with_connection(self._rt.pool, op, attempts=self._rt.settings.retry_attempts,
                                         timeout_s=self._timeout_s)
        except DATABASE_FAILURES as exc:  # a time limit, or the connection (PoolTimeout is one)
            raise ServiceUnavailable(f"{what}: the catalog database did not answer ({str(exc) or 'timeout'})") \
                from exc

    async def _postgres(self) -> None:
        async with self._rt.pool.acquire() as conn:
            await conn.execute(READY_SQL)

    async def _qdrant(self) -> None:
        await asyncio.to_thread(self._rt.qdrant.get_collections)

    async def _models(self) -> None:
        # The planner and validator fall back to the heuristic when they fail; the embedder has no fallback.
        vectors = await self._rt.embedder.aembed(["ready"])
        if vectors.shape[0] != 1:
            raise RuntimeError(f"the embedder returned {vectors.shape[0]} vectors for one text")


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

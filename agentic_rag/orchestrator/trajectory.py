"""The trajectory store: every run's decisions, actions, observations and timings, in PostgreSQL.

A run gets a :class:`Recorder` from :meth:`TrajectoryStore.start`. By default
(``RAG_TRAJECTORY_WRITES=turn``) it keeps a turn's events and writes them in one round trip when the
loop says the turn is over (:meth:`Recorder.flush`), and the last ones in the same transaction as the
run's end, so a crash leaves a readable trajectory up to the last finished turn; with ``event`` every
event is written as it happens (one round trip each). Events are append-only history: migration 0005 makes
the database refuse to change or remove them, and to delete a trajectory, to all but the retention's prune (migration
0017, :mod:`agentic_rag.orchestrator.retention`). A run that asked for a
clarification is resumed from any process with :meth:`TrajectoryStore.reopen`, which claims it in one
conditional update: of any number of concurrent resumes, on any number of processes, exactly one wins.
A run whose process died is closed as ``abandoned`` by :meth:`TrajectoryStore.abandon_stale`.

Every statement goes through the one retry policy (:mod:`agentic_rag.storage.retry`) and then fails as
:class:`TrajectoryError`; nothing is swallowed, because a run must not be reported as succeeded unless
its trajectory is persisted.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import math
import os
import re
import socket
import uuid
from collections.abc import Awaitable, Callable
from datetime import date, datetime
from enum import Enum
from pathlib import PurePath
from typing import Any, Literal, TypeVar, get_args

import asyncpg
from pydantic import BaseModel, ConfigDict, Field

from agentic_rag.errors import Conflict, InvalidInput, NotFound, Unavailable
from agentic_rag.protocol import Mode
from agentic_rag.settings import Settings
from agentic_rag.storage.retry import CONNECTION_ERRORS, with_connection
from agentic_rag.storage.sql import Conn, Pool, Query, affected

__all__ = [
    "EventType",
    "Recorder",
    "Trajectory",
    "TrajectoryError",
    "TrajectoryEvent",
    "TrajectoryNotFound",
    "TrajectoryNotWaiting",
    "TrajectoryStatus",
    "TrajectoryStore",
    "TrajectorySummary",
]

# migration 0005's CHECK also admits "thought", a type nothing writes (the loop keeps no chain of thought)
EventType = Literal["action", "observation", "decision", "guard", "error"]
# abandoned: the process running it stopped before it finished (migration 0011); set by the sweep only
TrajectoryStatus = Literal[
    "running", "answered", "not_found", "best_effort", "needs_clarification", "blocked", "failed", "cancelled",
    "abandoned",
]

# The same bounds as the CHECK constraints of migration 0005, checked here first for a clear message.
MAX_QUERY_CHARS = 4000
MAX_STAGE_CHARS = 40
MAX_LABEL_CHARS = 200  # request_id, session_id, tenant
MAX_PAYLOAD_BYTES = 64 * 1024
TRUNCATED_HEAD_CHARS = 2000
MAX_LIST = 200
MAX_UNSETTLED = 10_000  # runs a process remembers to close once the store is back

_EVENT_TYPES = frozenset(get_args(EventType))
_FINAL_STATUSES = frozenset(get_args(TrajectoryStatus)) - {"running", "abandoned"}
_MODES = frozenset(get_args(Mode))
# PostgreSQL text and jsonb cannot hold U+0000; an escaped NUL is one preceded by an even run of backslashes.
_JSON_NUL = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")

T = TypeVar("T")

_HOST = socket.gethostname()


_HEARD: set[str] = set()  # the runner names this process has registered (a fork is another name)


def runner() -> str:
    """This process, as a run's ``runner`` names it: ``host:pid`` (the pid read per call: a forked worker is
    another process on the same host)."""
    return f"{_HOST}:{os.getpid()}"[:MAX_LABEL_CHARS]


INSERT_TRAJECTORY_SQL = Query("""
    INSERT INTO trajectories (id, request_id, session_id, tenant, query, mode, status, runner, trace_id)
    VALUES (:id, :request_id, :session_id, :tenant, :query, :mode, 'running', :runner, :trace_id)
    ON CONFLICT (id) DO NOTHING""")

SAME_START_SQL = Query("""
    SELECT request_id = :request_id AND tenant = :tenant AND query = :query
    FROM trajectories WHERE id = :id""")

INSERT_EVENT_SQL = Query("""
    INSERT INTO trajectory_events (trajectory_id, seq, stage, type, payload, latency_ms)
    VALUES (:id, :seq, :stage, :type, :payload::text::jsonb, :latency_ms)
    ON CONFLICT (trajectory_id, seq) DO NOTHING
    RETURNING seq""")

SAME_EVENT_SQL = Query("""
    SELECT stage = :stage AND type = :type AND payload = :payload::text::jsonb
    FROM trajectory_events WHERE trajectory_id = :id AND seq = :seq""")

FINISH_SQL = Query("""
    UPDATE trajectories
    SET status = :status, final_response = :response::text::jsonb, timings = :timings::text::jsonb,
        finished_at = now(), updated_at = now()
    WHERE id = :id""")

# The claim of a resume: only a run still waiting is reopened. Concurrent claims queue on the row's lock and
# each re-checks the status once the one before it committed, so exactly one of them matches.
REOPEN_SQL = Query("""
    UPDATE trajectories SET status = 'running', finished_at = NULL, updated_at = now(), runner = :runner
    WHERE id = :id AND (:tenant::text IS NULL OR tenant = :tenant) AND status = 'needs_clarification'
    RETURNING request_id,
              (SELECT coalesce(max(seq), 0) FROM trajectory_events WHERE trajectory_id = :id) AS last_seq""")

STATUS_SQL = Query("""
    SELECT status FROM trajectories WHERE id = :id AND (:tenant::text IS NULL OR tenant = :tenant)""")

# A run that has neither (re)started nor written an event for idle_s is closed; its events stay as they are.
ABANDON_SQL = Query("""
    UPDATE trajectories t SET status = 'abandoned', finished_at = now(), updated_at = now()
    WHERE t.status = 'running' AND t.updated_at < now() - make_interval(secs => :idle_s)
      AND NOT EXISTS (SELECT 1 FROM trajectory_events e
                      WHERE e.trajectory_id = t.id AND e.created_at >= now() - make_interval(secs => :idle_s))
    RETURNING t.id""")

# A run whose end could not be written (the store was down when it ended) is closed once the store answers: it
# failed, and what its finished turns wrote stays as written.
SETTLE_SQL = Query("""
    UPDATE trajectories SET status = 'failed', finished_at = now(), updated_at = now()
    WHERE id = ANY(:ids::uuid[]) AND status = 'running'
    RETURNING id""")

# This process is heard (migration 0018): the first beat of a process (re)starts its runner, the rest renew it.
BEAT_SQL = Query("""
    INSERT INTO runners (runner) VALUES (:runner)
    ON CONFLICT (runner) DO UPDATE
    SET seen_at = now(), started_at = CASE WHEN :fresh THEN now() ELSE runners.started_at END""")

# A running run is closed when its runner went unheard for lapse_s and the run did nothing for as long, or when
# its runner restarted (the pid came back as another process) and the run did nothing since. Runs with no runner
# row (a process that never beats: a test's loop) are left to the timed sweep. SKIP LOCKED: a run finishing now
# is not waited for (its own update decides it).
LAPSED_SQL = Query("""
    WITH lapsed AS (
      SELECT t.id FROM trajectories t JOIN runners r ON r.runner = t.runner
      WHERE t.status = 'running'
        AND greatest(t.updated_at, (SELECT max(e.created_at) FROM trajectory_events e WHERE e.trajectory_id = t.id))
            < CASE WHEN r.seen_at < now() - make_interval(secs => :lapse_s) THEN now() - make_interval(secs => :lapse_s)
                   ELSE r.started_at END
      FOR UPDATE OF t SKIP LOCKED)
    UPDATE trajectories t SET status = 'abandoned', finished_at = now(), updated_at = now()
    FROM lapsed WHERE t.id = lapsed.id AND t.status = 'running'
    RETURNING t.id, t.runner""")

# Runners unheard for a day with no run left running are forgotten (a replica's host:pid does not come back).
FORGET_RUNNERS_SQL = Query("""
    DELETE FROM runners r WHERE r.seen_at < now() - interval '1 day'
      AND NOT EXISTS (SELECT 1 FROM trajectories t WHERE t.status = 'running' AND t.runner = r.runner)""")

GET_SQL = Query("""
    SELECT id, request_id, session_id, tenant, query, mode, status, final_response, timings, created_at, finished_at,
           runner, trace_id
    FROM trajectories
    WHERE id = :id AND (:tenant::text IS NULL OR tenant = :tenant)""")

BY_REQUEST_SQL = Query("""
    SELECT id, request_id, session_id, tenant, query, mode, status, final_response, timings, created_at, finished_at,
           runner, trace_id
    FROM trajectories
    WHERE request_id = :request_id AND (:tenant::text IS NULL OR tenant = :tenant)
    ORDER BY created_at DESC, id
    LIMIT 1""")

LIST_SQL = Query("""
    SELECT id, request_id, session_id, tenant, query, mode, status, final_response, timings, created_at, finished_at,
           runner, trace_id
    FROM trajectories
    WHERE tenant = :tenant
    ORDER BY created_at DESC, id
    LIMIT :limit""")

EVENTS_SQL = Query("""
    SELECT trajectory_id, seq, stage, type, payload, latency_ms, created_at
    FROM trajectory_events WHERE trajectory_id = :id ORDER BY seq""")


class TrajectoryError(Unavailable):
    """The trajectory store could not persist or read a trajectory; the message says what and why."""


class TrajectoryNotFound(NotFound, TrajectoryError):
    """No trajectory with that id (visible to that tenant)."""


class TrajectoryNotWaiting(Conflict):
    """A resume of a run that is not waiting for a clarification: it ended otherwise, or another caller claimed
    it first (then its status is ``running``)."""

    def __init__(self, trajectory_id: uuid.UUID, status: str) -> None:
        super().__init__(f"trajectory {trajectory_id} is not waiting for a clarification (status {status})")
        self.trajectory_id = trajectory_id
        self.status = status


class TrajectoryEvent(BaseModel):
    """One step of a run, as recorded."""

    model_config = ConfigDict(frozen=True)

    trajectory_id: uuid.UUID = Field(description="The run this event belongs to.")
    seq: int = Field(description="Position in the run, from 1, without gaps.")
    stage: str = Field(description="The loop stage that wrote it (guard, rewrite, select, retrieve, ...).")
    type: EventType = Field(description="What kind of record this is.")
    payload: dict[str, Any] = Field(description="The event's data; a truncated form when it was over 64 KiB.")
    latency_ms: float | None = Field(description="How long the step took, when it is a timed step.")
    created_at: datetime = Field(description="When it was written.")


class TrajectorySummary(BaseModel):
    """A run without its events."""

    model_config = ConfigDict(frozen=True)

    id: uuid.UUID = Field(description="The trajectory id.")
    request_id: str = Field(description="The request that started the run.")
    session_id: str | None = Field(description="The client session, when it gave one.")
    tenant: str = Field(description="Whose run this is; other tenants cannot see it.")
    query: str = Field(description="The question as asked.")
    mode: Mode = Field(description="agentic (the loop) or linear (retrieve once, answer once).")
    status: TrajectoryStatus = Field(description="running until the run finishes, then how it ended.")
    final_response: dict[str, Any] | None = Field(description="The response returned to the client.")
    timings: dict[str, float] = Field(description="Per-stage timings in milliseconds.")
    created_at: datetime = Field(description="When the run started.")
    finished_at: datetime | None = Field(description="When it last finished; None while running.")
    runner: str | None = Field(None, description="The process that last (re)started the run, as host:pid (which "
                                                 "replica ran it); None on runs recorded before migration 0016.")
    trace_id: str | None = Field(None, description="The OpenTelemetry trace the run was recorded under (32 hex "
                                                   "digits); None when tracing was off or the run not sampled.")


class Trajectory(TrajectorySummary):
    """A run with its events in order."""

    events: list[TrajectoryEvent] = Field(description="Every recorded event, ordered by seq.")


def _json_default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, uuid.UUID | PurePath):
        return str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    return repr(value)  # a log must not fail on what it logs


def _dumps(value: Any) -> str:
    text = json.dumps(value, default=_json_default, ensure_ascii=False, allow_nan=False)
    return _JSON_NUL.sub(r"\1\\ufffd", text)


def _payload(payload: dict[str, Any] | None) -> str:
    """The payload as JSON text for a jsonb column, bounded: over MAX_PAYLOAD_BYTES it becomes a truncated form,
    never an error. The statements cast it (``::text::jsonb``): it is sent as it was measured."""
    try:
        text = _dumps(payload or {})
    except ValueError as exc:  # NaN/infinity or a circular reference
        text = _dumps({"unserializable": True, "error": str(exc), "head": repr(payload)[:TRUNCATED_HEAD_CHARS]})
    size = len(text.encode())
    if size > MAX_PAYLOAD_BYTES:
        text = _dumps({"truncated": True, "bytes": size, "head": text[:TRUNCATED_HEAD_CHARS]})
    return text


def _bounded(name: str, value: str | None, limit: int) -> None:
    if value is not None and len(value) > limit:
        raise InvalidInput(f"{name} is {len(value)} characters; the trajectory store keeps at most {limit}")


class Recorder:
    """Writes one run's events. Safe to share between concurrent branches of the run (one asyncio.Lock)."""

    def __init__(self, store: TrajectoryStore, trajectory_id: uuid.UUID, request_id: str, last_seq: int = 0,
                 *, buffered: bool = False) -> None:
        self._store = store
        self._trajectory_id = trajectory_id
        self._request_id = request_id
        self._seq = last_seq
        self._lock = asyncio.Lock()
        self._buffered = buffered
        self._pending: list[dict[str, Any]] = []  # events handed a seq, not yet written (buffered only)

    @property
    def trajectory_id(self) -> uuid.UUID:
        return self._trajectory_id

    @property
    def request_id(self) -> str:
        return self._request_id

    @property
    def last_seq(self) -> int:
        """The seq of the last event written (0 before the first)."""
        return self._seq

    async def event(
        self, stage: str, type: EventType, payload: dict[str, Any] | None = None, *, latency_ms: float | None = None
    ) -> int:
        """Record one event and return its seq: written now, or at the next :meth:`flush` or :meth:`finish` when
        buffered. Raises ``TrajectoryError`` if it cannot be persisted."""
        _bounded("stage", stage, MAX_STAGE_CHARS)
        if type not in _EVENT_TYPES:
            raise ValueError(f"event type {type!r} is not one of {sorted(_EVENT_TYPES)}")
        params: dict[str, Any] = {
            "id": self._trajectory_id, "stage": stage, "type": type, "payload": _payload(payload),
            "latency_ms": latency_ms,
        }
        # The lock spans the write: seqs are handed out without gaps and land in seq order. Unbuffered, a seq
        # is only taken once its write succeeded, so a failed write leaves no hole; buffered, a failed flush
        # keeps its events pending, and the next flush or the finish writes them in the same order.
        async with self._lock:
            params["seq"] = self._seq + 1
            if self._buffered:
                self._pending.append(params)
            else:
                await self._store._execute(f"event {params['seq']}", lambda conn: _insert_events(conn, [params]))
            self._seq = params["seq"]
        return int(params["seq"])

    async def flush(self) -> None:
        """Write the buffered events in one round trip (one transaction). Raises ``TrajectoryError``; the events
        stay buffered, so a later flush or the finish writes them again (each write is idempotent)."""
        async with self._lock:
            if self._pending:
                batch = list(self._pending)
                await self._store._execute(f"events {batch[0]['seq']}-{batch[-1]['seq']}",
                                           lambda conn: _insert_events(conn, batch))
                del self._pending[: len(batch)]

    async def finish(self, *, status: str, response: dict[str, Any] | None, timings: dict[str, float]) -> None:
        """Record how the run ended. Raises ``TrajectoryError`` rather than leave the end unrecorded."""
        if status not in _FINAL_STATUSES:
            raise ValueError(f"final status {status!r} is not one of {sorted(_FINAL_STATUSES)}")
        if not all(math.isfinite(v) for v in timings.values()):
            raise ValueError(f"timings must be finite numbers: {timings}")
        params = {
            "id": self._trajectory_id, "status": status, "timings": _dumps(timings),
            "response": None if response is None else _dumps(response),
        }

        async with self._lock:  # after every event already handed a seq
            batch = list(self._pending)

            async def run(conn: Conn) -> None:  # the last events and the end, in one transaction
                async with conn.transaction() if batch else contextlib.nullcontext():
                    await _insert_events(conn, batch)
                    if not affected(await FINISH_SQL.execute(conn, params)):
                        raise TrajectoryNotFound(f"trajectory {self._trajectory_id} not found")

            await self._store._execute("finish", run)
            del self._pending[: len(batch)]


async def _insert_events(conn: Conn, batch: list[dict[str, Any]]) -> None:
    if not batch:
        return
    # asyncpg's executemany (returning the seqs written): one round trip, all rows or none
    if len(await INSERT_EVENT_SQL.fetchmany(conn, batch)) == len(batch):
        return
    # Some seqs exist: our own write whose commit we did not hear about (a retry), or another writer.
    for params in batch:
        row = await SAME_EVENT_SQL.fetchrow(conn, params)
        if not (row and row[0]):
            raise TrajectoryError(
                f"trajectory store refused event {params['seq']} of {params['id']}: that seq is taken "
                "(is another process recording this trajectory?)"
            )


class TrajectoryStore:
    """Runs' trajectories in PostgreSQL (tables of migration 0005)."""

    def __init__(self, pool: Pool, settings: Settings) -> None:
        self._pool = pool
        self._attempts = settings.retry_attempts
        self._timeout = settings.query_timeout_ms / 1000
        self._buffered = settings.trajectory_writes == "turn"
        # runs of this process that ended while their end could not be written (the store was down): closed as
        # failed once it answers again (:meth:`settle`), in order, at most MAX_UNSETTLED remembered
        self._unsettled: dict[uuid.UUID, None] = {}

    @property
    def pool(self) -> Pool:
        return self._pool

    def unsettled(self, trajectory_id: uuid.UUID) -> None:
        """Remember a run of this process that ended without its end written; :meth:`settle` closes it."""
        self._unsettled[trajectory_id] = None
        while len(self._unsettled) > MAX_UNSETTLED:  # the oldest is left to the timed sweep
            del self._unsettled[next(iter(self._unsettled))]

    async def settle(self) -> builtins.list[uuid.UUID]:
        """Close as ``failed`` the remembered runs still running (the store is back); return those closed. Raises
        :class:`TrajectoryError` (and keeps them) while the store is still out of reach."""
        if not self._unsettled:
            return []
        ids = builtins.list(self._unsettled)

        async def run(conn: Conn) -> builtins.list[uuid.UUID]:
            return [r[0] for r in await SETTLE_SQL.fetch(conn, {"ids": ids})]

        closed = await self._execute("settle", run)
        for tid in ids:
            self._unsettled.pop(tid, None)
        return closed

    async def _execute(self, what: str, op: Callable[[Conn], Awaitable[T]]) -> T:
        """Run ``op`` on a pooled connection under the retry policy."""
        try:
            return await with_connection(self._pool, op, attempts=self._attempts, timeout_s=self._timeout)
        except (TimeoutError, asyncpg.QueryCanceledError) as exc:  # the client's time limit, or the server's
            raise TrajectoryError(f"trajectory store unavailable: {what} got no answer within {self._timeout:g} s") \
                from exc
        except CONNECTION_ERRORS as exc:
            raise TrajectoryError(
                f"trajectory store unavailable: {what} failed after {self._attempts} attempts: {exc}"
            ) from exc
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise TrajectoryError(f"trajectory store refused {what}: {exc}") from exc

    async def start(
        self, *, query: str, request_id: str, tenant: str = "default", session_id: str | None = None,
        mode: str = "agentic", trajectory_id: uuid.UUID | None = None, trace_id: str | None = None,
    ) -> Recorder:
        """Record a new run (status running) and return its recorder; ``trace_id``: the trace it runs in."""
        query = query.replace("\x00", "\ufffd")
        _bounded("query", query, MAX_QUERY_CHARS)
        for name, value in (("request_id", request_id), ("session_id", session_id), ("tenant", tenant)):
            _bounded(name, value, MAX_LABEL_CHARS)
        if mode not in _MODES:
            raise ValueError(f"mode {mode!r} is not one of {sorted(_MODES)}")
        tid = trajectory_id or uuid.uuid4()
        params = {
            "id": tid, "request_id": request_id, "session_id": session_id, "tenant": tenant, "query": query,
            "mode": mode, "runner": runner(), "trace_id": trace_id,
        }

        async def run(conn: Conn) -> None:
            if affected(await INSERT_TRAJECTORY_SQL.execute(conn, params)):
                return
            row = await SAME_START_SQL.fetchrow(conn, params)
            if not (row and row[0]):  # not merely our own insert, retried
                raise TrajectoryError(f"trajectory store refused start: trajectory {params['id']} already exists")

        await self._execute("start", run)
        return Recorder(self, tid, request_id, buffered=self._buffered)

    async def reopen(self, trajectory_id: uuid.UUID, *, tenant: str | None = None) -> Recorder:
        """Claim a run waiting for a clarification: set it back to running and return a recorder that continues
        its seqs. Raises ``TrajectoryNotWaiting`` when it is not waiting (a concurrent resume claimed it first),
        ``TrajectoryNotFound`` when there is no such run for ``tenant``."""
        params = {"id": trajectory_id, "tenant": tenant, "runner": runner()}

        async def run(conn: Conn) -> asyncpg.Record:
            claimed = await REOPEN_SQL.fetchrow(conn, params)
            if claimed is not None:
                return claimed
            found = await STATUS_SQL.fetchrow(conn, {"id": trajectory_id, "tenant": tenant})
            if found is None:
                raise TrajectoryNotFound(f"trajectory {trajectory_id} not found")
            raise TrajectoryNotWaiting(trajectory_id, str(found[0]))

        row = await self._execute("reopen", run)
        return Recorder(self, trajectory_id, row[0], row[1], buffered=self._buffered)

    async def abandon_stale(self, idle_s: float) -> builtins.list[uuid.UUID]:
        """Mark ``abandoned`` every running run that has not (re)started nor written an event for ``idle_s``
        seconds (its process died); return their ids. Also forgets runners gone for a day with nothing running."""

        async def run(conn: Conn) -> builtins.list[uuid.UUID]:
            closed = [r[0] for r in await ABANDON_SQL.fetch(conn, {"idle_s": float(idle_s)})]
            await FORGET_RUNNERS_SQL.execute(conn)  # the timed sweep's, not each beat's: runners gone for a day
            return closed

        return await self._execute("abandon_stale", run)

    async def beat(self) -> None:
        """Say this process (its :func:`runner`) is alive. Its first beat also (re)starts its runner: a run still
        running under the same name from before then belongs to an earlier process with this pid, and
        :meth:`close_lapsed` closes it."""
        me = runner()
        fresh = me not in _HEARD
        await self._execute("beat", lambda conn: BEAT_SQL.execute(conn, {"runner": me, "fresh": fresh}))
        _HEARD.add(me)

    async def close_lapsed(self, lapse_s: float) -> builtins.list[tuple[uuid.UUID, str]]:
        """Mark ``abandoned`` every running run whose runner went unheard for ``lapse_s`` seconds (or restarted)
        and that did nothing for as long; return (run id, runner) of each."""

        async def run(conn: Conn) -> builtins.list[tuple[uuid.UUID, str]]:
            return [(r[0], r[1]) for r in await LAPSED_SQL.fetch(conn, {"lapse_s": float(lapse_s)})]

        return await self._execute("close_lapsed", run)

    async def get(self, trajectory_id: uuid.UUID, *, tenant: str | None = None) -> Trajectory | None:
        """The trajectory with its events ordered by seq; None if absent (or another tenant's)."""
        return await self._execute("get", lambda conn: _read(conn, GET_SQL, {"id": trajectory_id, "tenant": tenant}))

    async def by_request_id(self, request_id: str, *, tenant: str | None = None) -> Trajectory | None:
        """The newest trajectory started by that request, with its events."""
        params = {"request_id": request_id, "tenant": tenant}
        return await self._execute("by_request_id", lambda conn: _read(conn, BY_REQUEST_SQL, params))

    async def list(self, *, tenant: str, limit: int = 20) -> builtins.list[TrajectorySummary]:
        """A tenant's trajectories, newest first; ``limit`` is clamped to 1..200."""
        params = {"tenant": tenant, "limit": max(1, min(limit, MAX_LIST))}

        async def run(conn: Conn) -> builtins.list[TrajectorySummary]:
            return [TrajectorySummary.model_validate(dict(r)) for r in await LIST_SQL.fetch(conn, params)]

        return await self._execute("list", run)


async def _read(conn: Conn, query: Query, params: dict[str, Any]) -> Trajectory | None:
    row = await query.fetchrow(conn, params)  # one of the fixed statements above
    if row is None:
        return None
    events = [TrajectoryEvent.model_validate(dict(r)) for r in await EVENTS_SQL.fetch(conn, {"id": row["id"]})]
    return Trajectory.model_validate({**dict(row), "events": events})

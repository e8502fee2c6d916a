"""Retention: the trajectories of runs that finished long ago, and expired conversations, deleted while serving.

``agentic-rag prune`` (a CronJob in k8s/) calls :func:`prune`. It first deletes the expired conversations
(:meth:`ConversationStore.expire`, as the sweep does), then the runs that finished before the cutoff
(``trajectory_retention`` ago, fixed when the prune starts), a batch at a time, each batch one short transaction
under the pool's statement and query time limits: it locks the oldest such runs that no conversation turn points at,
skipping any row another transaction holds (``FOR UPDATE SKIP LOCKED``: a run being resumed, or written, is left for
the next prune, never waited on), deletes their events, then them. The database allows this delete only to a
transaction that sets ``agentic_rag.prune`` and never for a run still ``running`` (migration 0017): history stays
append-only against every other DELETE. A run a live conversation's turn points at stays with the conversation and
is counted, not silently skipped.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

import asyncpg

from agentic_rag.orchestrator.conversations import ConversationStore
from agentic_rag.orchestrator.trajectory import TrajectoryError
from agentic_rag.settings import Settings, parse_duration
from agentic_rag.storage.retry import CONNECTION_ERRORS, with_connection
from agentic_rag.storage.sql import Conn, Pool, Query, affected

__all__ = ["DEFAULT_BATCH", "MAX_BATCH", "PruneReport", "prune", "survey"]

T = TypeVar("T")

DEFAULT_BATCH = 1000  # runs a transaction deletes: well inside the default statement time limit with their events
MAX_BATCH = 10_000

CUTOFF_SQL = Query("SELECT now() - make_interval(secs => :older_than_s)")

# the batch: the oldest finished runs before the cutoff that no turn points at (the foreign key would refuse them)
PICK_SQL = Query("""
    SELECT t.id FROM trajectories t
    WHERE t.status <> 'running' AND t.finished_at < :cutoff
      AND NOT EXISTS (SELECT 1 FROM conversation_turns c WHERE c.trajectory_id = t.id)
    ORDER BY t.finished_at
    LIMIT :batch
    FOR UPDATE OF t SKIP LOCKED""")

ALLOW_SQL = Query("SELECT set_config('agentic_rag.prune', 'on', true)")  # this transaction only (SET LOCAL)
DELETE_EVENTS_SQL = Query("DELETE FROM trajectory_events WHERE trajectory_id = ANY(:ids::uuid[])")
DELETE_RUNS_SQL = Query("DELETE FROM trajectories WHERE id = ANY(:ids::uuid[])")

# what is left before the cutoff once a prune is done: held by a live conversation, or skipped (locked by another)
LEFT_SQL = Query("""
    SELECT count(*) FILTER (WHERE held) AS kept, count(*) FILTER (WHERE NOT held) AS skipped
    FROM (SELECT EXISTS (SELECT 1 FROM conversation_turns c WHERE c.trajectory_id = t.id) AS held
          FROM trajectories t WHERE t.status <> 'running' AND t.finished_at < :cutoff) s""")

# a dry run: what a prune now would do (it expires conversations first, so only an unexpired one's turns hold a run)
SURVEY_SQL = Query("""
    SELECT count(*) FILTER (WHERE NOT held) AS runs, coalesce(sum(events) FILTER (WHERE NOT held), 0) AS events,
           count(*) FILTER (WHERE held) AS kept,
           (SELECT count(*) FROM conversations WHERE expires_at <= now()) AS conversations
    FROM (SELECT EXISTS (SELECT 1 FROM conversation_turns ct JOIN conversations c ON c.id = ct.conversation_id
                         WHERE ct.trajectory_id = t.id AND c.expires_at > now()) AS held,
                 (SELECT count(*) FROM trajectory_events e WHERE e.trajectory_id = t.id) AS events
          FROM trajectories t WHERE t.status <> 'running' AND t.finished_at < :cutoff) s""")


@dataclass(frozen=True, slots=True)
class PruneReport:
    """What a prune deleted (or, for a dry run, would delete), and what it left."""

    cutoff: datetime  # runs that finished before this went
    runs: int  # runs deleted, with their events
    events: int
    conversations: int  # expired conversations deleted, with their turns
    kept: int  # runs before the cutoff kept because a live conversation's turn points at them
    skipped: int = 0  # runs before the cutoff another transaction held: the next prune takes them
    batches: int = 0  # transactions that deleted runs


async def _execute(pool: Pool, settings: Settings, what: str, op: Callable[[Conn], Awaitable[T]]) -> T:
    """``op`` under the one retry policy and the query time limit; failures as :class:`TrajectoryError`."""
    timeout_s = settings.query_timeout_ms / 1000
    try:
        return await with_connection(pool, op, attempts=settings.retry_attempts, timeout_s=timeout_s)
    except (TimeoutError, asyncpg.QueryCanceledError) as exc:
        raise TrajectoryError(f"prune: {what} got no answer within the time limits (query {timeout_s:g} s, statement "
                              f"{settings.statement_timeout_ms} ms): a smaller --batch takes less at once") from exc
    except CONNECTION_ERRORS as exc:
        raise TrajectoryError(f"prune: {what} failed after {settings.retry_attempts} attempts: {exc}") from exc
    except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        raise TrajectoryError(f"prune: the database refused {what}: {exc}") from exc


async def _cutoff(pool: Pool, settings: Settings, older_than: timedelta | None) -> datetime:
    """The database's own now, less ``older_than`` (default: the setting): one clock for every batch and process."""
    span = settings.trajectory_retention if older_than is None else parse_duration(older_than)  # > 0, always
    params = {"older_than_s": span.total_seconds()}
    row = await _execute(pool, settings, "the cutoff", lambda conn: CUTOFF_SQL.fetchrow(conn, params))
    assert row is not None
    cutoff: datetime = row[0]
    return cutoff


async def _delete_batch(conn: Conn, cutoff: datetime, batch: int) -> tuple[int, int]:
    """One transaction: lock up to ``batch`` prunable runs (skipping locked ones), delete their events, then them."""
    async with conn.transaction():
        ids: list[uuid.UUID] = [r[0] for r in await PICK_SQL.fetch(conn, {"cutoff": cutoff, "batch": batch})]
        if not ids:
            return 0, 0
        await ALLOW_SQL.execute(conn)
        events = affected(await DELETE_EVENTS_SQL.execute(conn, {"ids": ids}))
        runs = affected(await DELETE_RUNS_SQL.execute(conn, {"ids": ids}))
    return runs, events


async def prune(pool: Pool, settings: Settings, *, older_than: timedelta | None = None, batch: int = DEFAULT_BATCH,
                on_batch: Callable[[int, int], None] | None = None) -> PruneReport:
    """Delete the expired conversations, then the runs that finished more than ``older_than`` ago (default:
    ``settings.trajectory_retention``) with their events, ``batch`` runs a transaction; ``on_batch(runs, events)``
    after each. Raises :class:`TrajectoryError` (what failed stays as it was: each batch is all or nothing)."""
    if not 1 <= batch <= MAX_BATCH:
        raise ValueError(f"batch must be 1 to {MAX_BATCH}, not {batch}")
    cutoff = await _cutoff(pool, settings, older_than)
    conversations = await ConversationStore(pool, settings).expire()
    runs = events = batches = 0
    while True:
        done, gone = await _execute(pool, settings, f"batch {batches + 1}",
                                    lambda conn: _delete_batch(conn, cutoff, batch))
        if done:
            batches += 1
            runs += done
            events += gone
            if on_batch is not None:
                on_batch(done, gone)
        if done < batch:  # the last (a short batch: nothing unlocked is left before the cutoff)
            break
    left = await _execute(pool, settings, "the count of runs left",
                          lambda conn: LEFT_SQL.fetchrow(conn, {"cutoff": cutoff}))
    assert left is not None
    return PruneReport(cutoff=cutoff, runs=runs, events=events, conversations=conversations, kept=left["kept"],
                       skipped=left["skipped"], batches=batches)


async def survey(pool: Pool, settings: Settings, *, older_than: timedelta | None = None) -> PruneReport:
    """A dry run: what :func:`prune` would delete now, and keep; nothing is changed."""
    cutoff = await _cutoff(pool, settings, older_than)
    row = await _execute(pool, settings, "the survey", lambda conn: SURVEY_SQL.fetchrow(conn, {"cutoff": cutoff}))
    assert row is not None
    return PruneReport(cutoff=cutoff, runs=row["runs"], events=int(row["events"]),
                       conversations=row["conversations"], kept=row["kept"])

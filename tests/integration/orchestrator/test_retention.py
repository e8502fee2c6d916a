"""Retention against a real PostgreSQL: what a prune deletes, what it never deletes, and what the database refuses.

Each test has a freshly migrated database of its own, so every count a prune reports is the test's own."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager
from datetime import timedelta

import asyncpg
import pytest

from agentic_rag.orchestrator.retention import prune, survey
from agentic_rag.orchestrator.trajectory import TrajectoryStore
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import close_pool, connect, make_pool, migrate
from agentic_rag.storage.sql import Conn, Pool

pytestmark = pytest.mark.integration

DATABASE = f"agentic_rag_retention_test_{os.getpid()}"
DAY = timedelta(days=1)


@pytest.fixture
async def retention_dsn(scratch: Callable[[str], AbstractContextManager[str]]) -> AsyncIterator[str]:
    with scratch(DATABASE) as dsn:
        assert "0017_retention.sql" in await migrate(dsn)
        yield dsn


@pytest.fixture
async def prune_pool(retention_dsn: str, settings: Settings) -> AsyncIterator[Pool]:
    p = await make_pool(retention_dsn, settings)
    yield p
    await close_pool(p)


@pytest.fixture
def store(prune_pool: Pool, settings: Settings) -> TrajectoryStore:
    return TrajectoryStore(prune_pool, settings.model_copy(update={"trajectory_writes": "event"}))


@pytest.fixture
async def db(retention_dsn: str) -> AsyncIterator[Conn]:
    conn = await connect(retention_dsn)
    yield conn
    await conn.close()


async def run(store: TrajectoryStore, db: Conn, *, status: str = "answered", days_ago: float = 0,
              events: int = 3) -> uuid.UUID:
    """A run with ``events`` events that ended as ``status`` (or is still running) ``days_ago`` days ago."""
    rec = await store.start(query="who directed Akira?", request_id=f"req-{uuid.uuid4().hex[:12]}")
    for i in range(events):
        await rec.event("select", "decision", {"i": i})
    if status == "abandoned":  # only the sweep sets it: as the sweep does
        await db.execute("UPDATE trajectories SET status = 'abandoned', finished_at = now() WHERE id = $1",
                         rec.trajectory_id)
    elif status != "running":
        await rec.finish(status=status, response={}, timings={})
    await db.execute("""
        UPDATE trajectories
        SET created_at = now() - make_interval(secs => $2), updated_at = now() - make_interval(secs => $2),
            finished_at = CASE WHEN status = 'running' THEN NULL ELSE now() - make_interval(secs => $2) END
        WHERE id = $1""", rec.trajectory_id, days_ago * 86_400.0)
    return rec.trajectory_id


async def conversation(db: Conn, *runs: uuid.UUID, expired: bool = False) -> uuid.UUID:
    """A conversation whose turns were ``runs``: live, or past its expiry."""
    cid = uuid.uuid4()
    await db.execute("INSERT INTO conversations (id, tenant, turns, expires_at) "
                     "VALUES ($1, 'conv', $2, now() + make_interval(secs => $3))",
                     cid, len(runs), -1.0 if expired else 3600.0)
    for seq, tid in enumerate(runs, 1):
        await db.execute("INSERT INTO conversation_turns (conversation_id, seq, trajectory_id, question, standalone, "
                         "status) VALUES ($1, $2, $3, 'q', 'q', 'answered')", cid, seq, tid)
    return cid


async def present(db: Conn, *ids: uuid.UUID) -> dict[uuid.UUID, int]:
    """The runs of ``ids`` still there, with the number of events each still has."""
    rows = await db.fetch("SELECT t.id, (SELECT count(*) FROM trajectory_events e WHERE e.trajectory_id = t.id) "
                          "FROM trajectories t WHERE t.id = ANY($1::uuid[])", list(ids))
    return {r[0]: r[1] for r in rows}


async def test_runs_that_finished_before_the_cutoff_go_with_their_events(
    store: TrajectoryStore, db: Conn, prune_pool: Pool, settings: Settings
) -> None:
    old = [await run(store, db, status=s, days_ago=3) for s in ("answered", "failed", "abandoned",
                                                               "needs_clarification")]
    recent = await run(store, db, days_ago=0.5)
    running = await run(store, db, status="running", days_ago=40)  # started long ago, never finished: never deleted
    report = await prune(prune_pool, settings, older_than=DAY)
    assert (report.runs, report.events, report.batches) == (4, 12, 1)
    assert (report.kept, report.skipped, report.conversations) == (0, 0, 0)
    assert await present(db, *old, recent, running) == {recent: 3, running: 3}
    # a waiting run that went is gone for a resume too: 404, not a run without its history
    assert await store.get(old[3]) is None
    again = await prune(prune_pool, settings, older_than=DAY)
    assert (again.runs, again.events, again.batches) == (0, 0, 0)


async def test_the_default_cutoff_is_the_setting(store: TrajectoryStore, db: Conn, prune_pool: Pool,
                                                 settings: Settings) -> None:
    month = await run(store, db, days_ago=31)
    fortnight = await run(store, db, days_ago=14)
    assert settings.trajectory_retention == timedelta(days=30)
    assert (await prune(prune_pool, settings)).runs == 1
    assert set(await present(db, month, fortnight)) == {fortnight}
    week = settings.model_copy(update={"trajectory_retention": timedelta(days=7)})
    assert (await prune(prune_pool, week)).runs == 1
    assert await present(db, fortnight) == {}


async def test_a_run_a_live_conversation_holds_is_kept_and_counted(
    store: TrajectoryStore, db: Conn, prune_pool: Pool, settings: Settings
) -> None:
    held = await run(store, db, days_ago=5)
    also_held = await run(store, db, days_ago=4)
    of_expired = await run(store, db, days_ago=5)
    free = await run(store, db, days_ago=5)
    live = await conversation(db, held, also_held)
    await conversation(db, of_expired, expired=True)

    dry = await survey(prune_pool, settings, older_than=DAY)
    assert await present(db, held, also_held, of_expired, free) == {held: 3, also_held: 3, of_expired: 3, free: 3}
    report = await prune(prune_pool, settings, older_than=DAY)
    # the expired conversation goes first, and with it what held its run
    assert (report.conversations, report.runs, report.events, report.kept) == (1, 2, 6, 2)
    assert (dry.conversations, dry.runs, dry.events, dry.kept) == (1, 2, 6, 2)  # the dry run said so
    assert set(await present(db, held, also_held, of_expired, free)) == {held, also_held}
    # once the conversation is forgotten, its runs go with the next prune
    await db.execute("DELETE FROM conversations WHERE id = $1", live)
    assert (await prune(prune_pool, settings, older_than=DAY)).runs == 2


async def test_batches_are_short_transactions_until_none_is_left(
    store: TrajectoryStore, db: Conn, prune_pool: Pool, settings: Settings
) -> None:
    ids = [await run(store, db, days_ago=10 - i, events=i) for i in range(5)]
    seen: list[tuple[int, int]] = []
    report = await prune(prune_pool, settings, older_than=DAY, batch=2, on_batch=lambda r, e: seen.append((r, e)))
    assert seen == [(2, 0 + 1), (2, 2 + 3), (1, 4)]  # oldest first
    assert (report.runs, report.events, report.batches) == (5, 10, 3)
    assert await present(db, *ids) == {}


async def test_a_run_another_transaction_holds_is_skipped_not_waited_for(
    store: TrajectoryStore, db: Conn, prune_pool: Pool, settings: Settings
) -> None:
    resumed = await run(store, db, status="needs_clarification", days_ago=3)
    other = await run(store, db, days_ago=3)
    # a resume's claim (TrajectoryStore.reopen's UPDATE), not yet committed: it holds the row's lock
    tx = db.transaction()
    await tx.start()
    try:
        await db.execute("UPDATE trajectories SET status = 'running', finished_at = NULL WHERE id = $1", resumed)
        report = await asyncio.wait_for(prune(prune_pool, settings, older_than=DAY), 10)
        assert (report.runs, report.skipped) == (1, 1)
        assert set(await present(db, resumed, other)) == {resumed}
    finally:
        await tx.rollback()  # the resume failed: the run waits again, as old as it was
    report = await prune(prune_pool, settings, older_than=DAY)
    assert (report.runs, report.skipped) == (1, 0)
    assert await present(db, resumed) == {}


async def test_a_dry_run_changes_nothing(store: TrajectoryStore, db: Conn, prune_pool: Pool,
                                         settings: Settings) -> None:
    old = await run(store, db, days_ago=2, events=4)
    await conversation(db, await run(store, db, days_ago=0), expired=True)
    dry = await survey(prune_pool, settings, older_than=DAY)
    assert (dry.runs, dry.events, dry.conversations, dry.kept) == (1, 4, 1, 0)
    assert await present(db, old) == {old: 4}
    assert await db.fetchval("SELECT count(*) FROM conversations") == 1


async def test_history_is_refused_to_every_delete_but_a_prune(store: TrajectoryStore, db: Conn) -> None:
    finished = await run(store, db, days_ago=3)
    running = await run(store, db, status="running", days_ago=3)
    for statement, refused in (("DELETE FROM trajectory_events WHERE trajectory_id = $1", "trajectory_events"),
                               ("DELETE FROM trajectories WHERE id = $1", "trajectories")):
        with pytest.raises(asyncpg.RaiseError, match=f"append-only: DELETE on {refused} refused"):
            await db.execute(statement, finished)

    async def pruning(statement: str, *args: object) -> None:
        async with db.transaction():
            await db.execute("SET LOCAL agentic_rag.prune = 'on'")
            await db.execute(statement, *args)

    # even in a prune: never a run in progress nor its events; never an UPDATE of an event, nor a TRUNCATE
    with pytest.raises(asyncpg.RaiseError, match="is running: the events of a run in progress are never deleted"):
        await pruning("DELETE FROM trajectory_events WHERE trajectory_id = $1", running)
    with pytest.raises(asyncpg.RaiseError, match="is running: a run in progress is never deleted"):
        await pruning("DELETE FROM trajectories WHERE id = $1", running)
    with pytest.raises(asyncpg.RaiseError, match="append-only: UPDATE on trajectory_events refused"):
        await pruning("UPDATE trajectory_events SET stage = 'x' WHERE trajectory_id = $1", finished)
    with pytest.raises(asyncpg.RaiseError, match="append-only: TRUNCATE on trajectory_events refused"):
        await pruning("TRUNCATE trajectory_events")
    assert await present(db, finished, running) == {finished: 3, running: 3}

    # a prune's own transaction may; the setting ends with it
    await pruning("DELETE FROM trajectory_events WHERE trajectory_id = $1", finished)
    with pytest.raises(asyncpg.RaiseError, match="append-only: DELETE on trajectories refused"):
        await db.execute("DELETE FROM trajectories WHERE id = $1", finished)
    await pruning("DELETE FROM trajectories WHERE id = $1", finished)
    assert await present(db, finished, running) == {running: 3}


async def test_the_migration_can_be_applied_again(retention_dsn: str, db: Conn) -> None:
    from importlib import resources

    sql = resources.files("agentic_rag.storage").joinpath("migrations", "0017_retention.sql").read_text()
    await db.execute(sql)  # again: its statements replace what they make, never add a second of it
    triggers = {r[0] for r in await db.fetch(
        "SELECT tgname FROM pg_trigger WHERE tgrelid IN ('trajectories'::regclass, 'trajectory_events'::regclass) "
        "AND NOT tgisinternal")}
    assert triggers == {"trajectory_events_no_update", "trajectory_events_prune_only", "trajectory_events_not_running",
                        "trajectory_events_no_truncate", "trajectories_prune_only", "trajectories_not_running",
                        "trajectories_no_truncate"}

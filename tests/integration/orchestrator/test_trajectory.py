"""The trajectory store against a real PostgreSQL (its own scratch database, migrated from scratch)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime

import asyncpg
import pytest
from pydantic import BaseModel

from agentic_rag.orchestrator.sweep import start_sweeper
from agentic_rag.orchestrator.trajectory import (
    MAX_PAYLOAD_BYTES,
    Recorder,
    TrajectoryError,
    TrajectoryNotFound,
    TrajectoryNotWaiting,
    TrajectoryStore,
)
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import connect, make_pool, migrate
from agentic_rag.storage.sql import Conn

pytestmark = pytest.mark.integration

DATABASE = f"agentic_rag_trajectory_test_{os.getpid()}"
UNREACHABLE = "postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=1"  # nothing listens on port 1


@pytest.fixture(scope="module")
async def traj_dsn(scratch: Callable[[str], AbstractContextManager[str]]) -> AsyncIterator[str]:
    with scratch(DATABASE) as dsn:
        applied = await migrate(dsn)
        assert "0005_trajectories.sql" in applied
        yield dsn


@pytest.fixture(scope="module")
async def store(traj_dsn: str, settings: Settings) -> AsyncIterator[TrajectoryStore]:
    pool = await make_pool(traj_dsn, settings)
    # each event written as it happens: the tests below read them back without a flush
    yield TrajectoryStore(pool, settings.model_copy(update={"trajectory_writes": "event"}))
    await pool.close()


@pytest.fixture
async def db(traj_dsn: str) -> AsyncIterator[Conn]:
    conn = await connect(traj_dsn)
    yield conn
    await conn.close()


def rid() -> str:
    return f"req-{uuid.uuid4().hex[:12]}"


async def test_round_trip(store: TrajectoryStore) -> None:
    request_id = rid()
    rec = await store.start(query="who directed Akira?", request_id=request_id, session_id="s1", tenant="t-round")
    seqs = [
        await rec.event("guard", "guard", {"verdict": "allow"}),
        await rec.event("rewrite", "decision", {"mode": "graph"}, latency_ms=12.5),
        await rec.event("retrieve", "observation", {"ids": [str(uuid.uuid4())]}, latency_ms=3.0),
    ]
    assert seqs == [1, 2, 3]
    await rec.finish(status="answered", response={"answer": "Katsuhiro Otomo"}, timings={"total_ms": 40.5})

    got = await store.get(rec.trajectory_id)
    assert got is not None
    assert (got.request_id, got.session_id, got.tenant, got.mode) == (request_id, "s1", "t-round", "agentic")
    assert got.status == "answered" and got.final_response == {"answer": "Katsuhiro Otomo"}
    assert got.timings == {"total_ms": 40.5}
    assert got.runner == f"{socket.gethostname()}:{os.getpid()}"  # which process ran it (migration 0016)
    assert got.finished_at is not None and got.finished_at >= got.created_at
    assert [(e.seq, e.stage, e.type) for e in got.events] == [
        (1, "guard", "guard"), (2, "rewrite", "decision"), (3, "retrieve", "observation")
    ]
    assert got.events[1].payload == {"mode": "graph"} and got.events[1].latency_ms == 12.5
    assert got.events[0].latency_ms is None

    by_request = await store.by_request_id(request_id)
    assert by_request is not None and by_request.id == rec.trajectory_id and len(by_request.events) == 3
    listed = await store.list(tenant="t-round")
    assert [s.id for s in listed] == [rec.trajectory_id]
    assert listed[0].status == "answered"


async def test_list_newest_first_and_clamped(store: TrajectoryStore) -> None:
    ids = [(await store.start(query=f"q{i}", request_id=rid(), tenant="t-list", mode="linear")).trajectory_id
           for i in range(3)]
    listed = await store.list(tenant="t-list", limit=500)
    assert [s.id for s in listed] == ids[::-1]
    assert all(s.mode == "linear" and s.status == "running" for s in listed)
    assert [s.id for s in await store.list(tenant="t-list", limit=0)] == [ids[-1]]


async def test_concurrent_branches_get_distinct_ordered_seqs(store: TrajectoryStore) -> None:
    rec = await store.start(query="fan out", request_id=rid())
    seqs: dict[int, int] = {}

    async def branch(i: int) -> None:
        seqs[i] = await rec.event("retrieve", "action", {"branch": i})

    async with asyncio.TaskGroup() as tg:
        for i in range(20):
            tg.create_task(branch(i))
    assert sorted(seqs.values()) == list(range(1, 21))
    got = await store.get(rec.trajectory_id)
    assert got is not None
    assert [e.seq for e in got.events] == list(range(1, 21))
    assert {e.seq: e.payload["branch"] for e in got.events} == {s: i for i, s in seqs.items()}
    # written in seq order: each write committed before the next seq was handed out
    assert all(a.created_at <= b.created_at for a, b in zip(got.events, got.events[1:], strict=False))


@pytest.mark.parametrize(
    ("statement", "refused"),
    [
        ("UPDATE trajectory_events SET stage = 'x' WHERE trajectory_id = $1", "UPDATE on trajectory_events"),
        ("DELETE FROM trajectory_events WHERE trajectory_id = $1", "DELETE on trajectory_events"),
        ("DELETE FROM trajectories WHERE id = $1", "DELETE on trajectories"),
        ("TRUNCATE trajectory_events", "TRUNCATE on trajectory_events"),
        ("TRUNCATE trajectories CASCADE", "TRUNCATE on trajectories"),
    ],
)
async def test_history_is_append_only(
    store: TrajectoryStore, db: Conn, statement: str, refused: str
) -> None:
    rec = await store.start(query="keep me", request_id=rid())
    await rec.event("draft", "decision", {"text": "first"})
    params = (rec.trajectory_id,) if "$1" in statement else ()
    with pytest.raises(asyncpg.RaiseError, match=f"trajectory history is append-only: {refused} refused"):
        await db.execute(statement, *params)
    got = await store.get(rec.trajectory_id)
    assert got is not None and [(e.stage, e.payload) for e in got.events] == [("draft", {"text": "first"})]


async def test_trajectory_row_may_be_updated(store: TrajectoryStore, db: Conn) -> None:
    rec = await store.start(query="update me", request_id=rid())
    await db.execute("UPDATE trajectories SET status = 'cancelled' WHERE id = $1", rec.trajectory_id)
    got = await store.get(rec.trajectory_id)
    assert got is not None and got.status == "cancelled"


async def test_tenant_isolation(store: TrajectoryStore) -> None:
    request_id = rid()
    rec = await store.start(query="mine", request_id=request_id, tenant="tenant-a")
    await rec.event("guard", "guard", {"secret": "a's"})
    assert await store.get(rec.trajectory_id, tenant="tenant-b") is None
    assert await store.by_request_id(request_id, tenant="tenant-b") is None
    assert all(s.id != rec.trajectory_id for s in await store.list(tenant="tenant-b"))
    with pytest.raises(TrajectoryNotFound):
        await store.reopen(rec.trajectory_id, tenant="tenant-b")
    mine = await store.get(rec.trajectory_id, tenant="tenant-a")
    assert mine is not None and mine.events[0].payload == {"secret": "a's"}
    assert await store.get(rec.trajectory_id) is not None  # no tenant: an operator's view


async def test_reopen_continues_seqs(store: TrajectoryStore, traj_dsn: str, settings: Settings) -> None:
    rec = await store.start(query="Naruto?", request_id=rid(), tenant="t-resume")
    await rec.event("clarify", "decision", {"choices": ["Naruto (2002)", "Naruto Shippuden"]})
    await rec.event("finalize", "decision", {"status": "needs_clarification"})
    await rec.finish(status="needs_clarification", response={"choices": 2}, timings={"total_ms": 5.0})

    # resumed from another process: a store of its own over a pool of its own
    pool = await make_pool(traj_dsn, settings)
    try:
        other = TrajectoryStore(pool, settings)
        resumed = await other.reopen(rec.trajectory_id, tenant="t-resume")
        assert resumed.request_id == rec.request_id and resumed.last_seq == 2
        running = await other.get(rec.trajectory_id)
        assert running is not None and running.status == "running" and running.finished_at is None
        assert await resumed.event("clarify", "observation", {"choice": 0}) == 3
        await resumed.finish(status="answered", response={"answer": "Naruto (2002)"}, timings={"total_ms": 9.0})
    finally:
        await pool.close()
    got = await store.get(rec.trajectory_id)
    assert got is not None and got.status == "answered" and [e.seq for e in got.events] == [1, 2, 3]
    with pytest.raises(TrajectoryNotFound):
        await store.reopen(uuid.uuid4())


async def test_two_writers_of_one_trajectory_are_caught(store: TrajectoryStore) -> None:
    a = await store.start(query="twice", request_id=rid())
    b = Recorder(store, a.trajectory_id, a.request_id)  # a process that believes it records this run too
    assert await a.event("select", "action", {"by": "a"}) == 1
    with pytest.raises(TrajectoryError, match="seq is taken"):
        await b.event("select", "action", {"by": "b"})


async def waiting(store: TrajectoryStore, tenant: str = "default") -> Recorder:
    """A run that asked for a clarification."""
    rec = await store.start(query="Naruto?", request_id=rid(), tenant=tenant)
    await rec.event("clarify", "decision", {"choices": ["Naruto (2002)", "Naruto Shippuden"]})
    await rec.finish(status="needs_clarification", response={"choices": 2}, timings={"total_ms": 5.0})
    return rec


async def test_only_a_waiting_run_is_reopened(store: TrajectoryStore) -> None:
    running = await store.start(query="still going", request_id=rid())
    with pytest.raises(TrajectoryNotWaiting, match="status running") as info:
        await store.reopen(running.trajectory_id)
    assert info.value.status == "running"
    rec = await waiting(store)
    await store.reopen(rec.trajectory_id)
    with pytest.raises(TrajectoryNotWaiting):  # claimed once: a second claim is refused
        await store.reopen(rec.trajectory_id)


async def test_concurrent_resumes_from_many_processes_claim_a_run_once(
    store: TrajectoryStore, traj_dsn: str, settings: Settings
) -> None:
    rec = await waiting(store, tenant="t-race")
    pools = [await make_pool(traj_dsn, settings) for _ in range(4)]  # four replicas, each with its own pool
    try:
        stores = [TrajectoryStore(p, settings) for p in pools]
        outcomes = await asyncio.gather(*(stores[i % 4].reopen(rec.trajectory_id, tenant="t-race")
                                          for i in range(24)), return_exceptions=True)
    finally:
        for p in pools:
            await p.close()
    won = [o for o in outcomes if isinstance(o, Recorder)]
    lost = [o for o in outcomes if isinstance(o, TrajectoryNotWaiting)]
    assert len(won) == 1 and len(lost) == 23, outcomes
    assert {o.status for o in lost} == {"running"}


async def test_oversized_payload_is_stored_truncated(store: TrajectoryStore) -> None:
    rec = await store.start(query="big", request_id=rid())
    blob = "x" * (MAX_PAYLOAD_BYTES + 10)
    await rec.event("retrieve", "observation", {"rows": blob})
    fits = {"rows": "y" * (MAX_PAYLOAD_BYTES - 100)}
    await rec.event("retrieve", "observation", fits)
    got = await store.get(rec.trajectory_id)
    assert got is not None
    big = got.events[0].payload
    assert big["truncated"] is True and big["bytes"] > MAX_PAYLOAD_BYTES
    assert len(big["head"]) == 2000 and big["head"].startswith('{"rows": "xxx')
    assert got.events[1].payload == fits


async def test_awkward_payloads_are_recorded(store: TrajectoryStore) -> None:
    class Card(BaseModel):
        id: uuid.UUID

    card_id, when = uuid.uuid4(), datetime(2024, 1, 2, tzinfo=UTC)
    rec = await store.start(query="nul \x00 in the query", request_id=rid())
    awkward = {"card": Card(id=card_id), "at": when, "text": "a\x00b", "raw": "\\u0000"}
    await rec.event("observe", "observation", awkward)
    await rec.event("grade", "error", {"score": float("nan")})
    got = await store.get(rec.trajectory_id)
    assert got is not None and got.query == "nul \ufffd in the query"
    assert got.events[0].payload == {
        "card": {"id": str(card_id)}, "at": when.isoformat(), "text": "a\ufffdb", "raw": "\\u0000"
    }
    assert got.events[1].payload["unserializable"] is True


async def test_bad_arguments_are_refused_before_the_database(store: TrajectoryStore) -> None:
    with pytest.raises(ValueError, match="query is 4001 characters"):
        await store.start(query="q" * 4001, request_id=rid())
    with pytest.raises(ValueError, match="mode"):
        await store.start(query="q", request_id=rid(), mode="loop")
    rec = await store.start(query="q", request_id=rid())
    with pytest.raises(ValueError, match="stage"):
        await rec.event("s" * 41, "decision")
    with pytest.raises(ValueError, match="final status 'running'"):
        await rec.finish(status="running", response=None, timings={})
    assert rec.last_seq == 0


async def test_crashed_run_reads_back_partial(store: TrajectoryStore, traj_dsn: str, settings: Settings) -> None:
    rec = await store.start(query="crash midway", request_id=rid())
    await rec.event("rewrite", "decision", {"mode": "vector"})
    await rec.event("retrieve", "action", {"intent": "qdrant_search"})
    del rec  # the process dies here: no finish

    pool = await make_pool(traj_dsn, settings)
    try:
        latest = await TrajectoryStore(pool, settings).list(tenant="default", limit=200)
        crashed = next(s for s in latest if s.query == "crash midway")
        got = await TrajectoryStore(pool, settings).get(crashed.id)
    finally:
        await pool.close()
    assert got is not None and got.status == "running" and got.finished_at is None
    assert got.final_response is None and got.timings == {}
    assert [(e.seq, e.stage) for e in got.events] == [(1, "rewrite"), (2, "retrieve")]


async def test_a_turn_of_events_is_one_transaction_and_a_crash_keeps_the_finished_turns(
    traj_dsn: str, settings: Settings, db: Conn
) -> None:
    pool = await make_pool(traj_dsn, settings)
    try:
        turns = TrajectoryStore(pool, settings.model_copy(update={"trajectory_writes": "turn"}))
        rec = await turns.start(query="turn by turn", request_id=rid())
        assert [await rec.event("select", "decision", {"n": i}) for i in range(3)] == [1, 2, 3]
        got = await turns.get(rec.trajectory_id)
        assert got is not None and got.events == []  # held until the turn is over
        await rec.flush()
        await rec.event("draft", "decision", {"n": 3})
        await rec.flush()
        await rec.event("final", "decision", {"n": 4})
        del rec  # the process dies in its third turn: the first two are readable
        got = await turns.get(got.id)
        assert got is not None and got.status == "running" and [e.seq for e in got.events] == [1, 2, 3, 4]
        xmins = await db.fetchval("SELECT count(DISTINCT xmin::text) FROM trajectory_events "
                                  "WHERE trajectory_id = $1 AND seq <= 3", got.id)
        assert xmins == 1  # one transaction for the first turn's three events

        done = await turns.start(query="to the end", request_id=rid())
        await done.event("select", "decision", {})
        await done.finish(status="answered", response={"answer": "x"}, timings={"total_ms": 1.0})
        end = await turns.get(done.trajectory_id)
        assert end is not None and end.status == "answered" and [e.seq for e in end.events] == [1]
        # a second writer of one trajectory is caught when its turn is written
        a = Recorder(turns, done.trajectory_id, done.request_id, 1, buffered=True)
        b = Recorder(turns, done.trajectory_id, done.request_id, 1, buffered=True)
        await a.event("select", "action", {"by": "a"})
        await a.flush()
        await b.event("select", "action", {"by": "b"})
        with pytest.raises(TrajectoryError, match="seq is taken"):
            await b.flush()
    finally:
        await pool.close()


async def test_unreachable_database_raises_trajectory_error_quickly(settings: Settings) -> None:
    pool = await make_pool(UNREACHABLE, settings.model_copy(update={"pool_min_size": 0}))  # opens none yet
    store = TrajectoryStore(pool, settings.model_copy(update={"retry_attempts": 3, "query_timeout_ms": 1000}))
    try:
        began = time.monotonic()
        with pytest.raises(TrajectoryError, match="trajectory store unavailable: start failed after 3 attempts"):
            await store.start(query="anyone there?", request_id=rid())
        # the end of a run is never silently lost: finish raises too
        with pytest.raises(TrajectoryError, match="trajectory store unavailable: finish"):
            await Recorder(store, uuid.uuid4(), rid()).finish(status="answered", response={}, timings={})
        assert time.monotonic() - began < 10
    finally:
        await pool.close()


async def test_a_run_without_progress_is_abandoned(store: TrajectoryStore, db: Conn) -> None:
    async def backdated(minutes: int, *, event_minutes: int | None = None, finish: bool = False) -> uuid.UUID:
        rec = await store.start(query="crashed?", request_id=rid())
        if finish:
            await rec.finish(status="answered", response={}, timings={})
        await db.execute("UPDATE trajectories SET created_at = now() - make_interval(mins => $1), "
                         "updated_at = now() - make_interval(mins => $1) WHERE id = $2", minutes, rec.trajectory_id)
        if event_minutes is not None:  # events cannot be changed, only written: this one as if written then
            await db.execute("INSERT INTO trajectory_events (trajectory_id, seq, stage, type, created_at) "
                             "VALUES ($1, 1, 'select', 'decision', now() - make_interval(mins => $2))",
                             rec.trajectory_id, event_minutes)
        return rec.trajectory_id

    dead = await backdated(10)
    dead_after_a_turn = await backdated(10, event_minutes=9)
    slow_but_moving = await backdated(10, event_minutes=0)
    fresh = await backdated(0)
    finished = await backdated(10, finish=True)

    closed = await store.abandon_stale(idle_s=120)
    assert {dead, dead_after_a_turn} <= set(closed)
    assert not {slow_but_moving, fresh, finished} & set(closed)
    got = await store.get(dead)
    assert got is not None and got.status == "abandoned" and got.finished_at is not None
    for tid, status in ((slow_but_moving, "running"), (fresh, "running"), (finished, "answered")):
        other = await store.get(tid)
        assert other is not None and other.status == status
    assert dead not in await store.abandon_stale(idle_s=120)  # once
    with pytest.raises(TrajectoryNotWaiting, match="status abandoned"):
        await store.reopen(dead)


async def test_terminated_backends_cost_one_retry(traj_dsn: str, settings: Settings,
                                                  db: Conn) -> None:
    pool = await make_pool(traj_dsn, settings.model_copy(update={"pool_min_size": 3, "pool_max_size": 3}))
    try:
        # two attempts, three pooled connections, every backend terminated: a dead connection is not lent again
        store = TrajectoryStore(pool, settings.model_copy(update={"retry_attempts": 2}))
        rec = await store.start(query="still here?", request_id=rid())
        async with pool.acquire() as c1, pool.acquire() as c2, pool.acquire() as c3:
            pids = [c.get_server_pid() for c in (c1, c2, c3)]
        await db.execute("SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid", pids)
        got = await store.get(rec.trajectory_id)
        assert got is not None and got.status == "running"
    finally:
        await pool.close()


# A process that runs the loop, as an Orchestrator replica does: it is heard, starts a run, prints its id and waits.
RUNNER_SCRIPT = """
import asyncio, sys
from agentic_rag.orchestrator.sweep import start_sweeper
from agentic_rag.orchestrator.trajectory import TrajectoryStore
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import make_pool

async def main():
    settings = Settings(runner_lapse_ms=1000)
    store = TrajectoryStore(await make_pool(sys.argv[1], settings), settings)
    await start_sweeper(store, settings)
    rec = await store.start(query="who directed Akira?", request_id="req-doomed")
    print(rec.trajectory_id, flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


async def test_the_runs_of_a_killed_process_close_within_seconds(traj_dsn: str, settings: Settings) -> None:
    """Issue 41, point 7: the process running a run is killed (SIGKILL: no clean-up); a live one closes its run
    as abandoned within seconds of the lapse, not after the deadline and grace; its own running run stays."""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", RUNNER_SCRIPT, traj_dsn,
                                                stdout=asyncio.subprocess.PIPE)
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
        doomed = uuid.UUID(line.decode().strip())
    finally:
        proc.kill()
        await proc.wait()
    killed = time.monotonic()
    settings = settings.model_copy(update={"runner_lapse_ms": 1000})
    pool = await make_pool(traj_dsn, settings)
    live = TrajectoryStore(pool, settings)
    sweeper = await start_sweeper(live, settings)  # this process is heard before it starts a run
    mine = await live.start(query="still thinking", request_id=rid())
    try:
        while (got := await live.get(doomed)) is not None and got.status == "running":
            assert time.monotonic() - killed < 15, "the dead process's run was not closed"
            await asyncio.sleep(0.1)
        closed_s = time.monotonic() - killed
        await asyncio.sleep(2.5)  # more than two lapses: this process is heard, so its run is not touched
        assert (await live.get(mine.trajectory_id)).status == "running"  # type: ignore[union-attr]
    finally:
        sweeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sweeper
        await mine.finish(status="answered", response={}, timings={})
        await pool.close()
    assert got is not None and got.status == "abandoned" and got.runner is not None
    assert got.runner.endswith(f":{proc.pid}")
    assert 1.0 <= closed_s < 15  # a lapse at least; the default deadline (30 s) plus grace (60 s) would be 90 s


async def test_a_run_of_an_earlier_process_with_the_same_pid_is_closed(store: TrajectoryStore, db: Conn) -> None:
    """A runner that (re)started after a run's last activity did not run it: a pid that came back (a restarted
    container) is another process. A run that did something since stays."""
    ghost = f"ghost-{uuid.uuid4().hex[:8]}:1"
    old = await store.start(query="before the restart", request_id=rid())
    new = await store.start(query="after the restart", request_id=rid())
    await db.execute("UPDATE trajectories SET runner = $1, updated_at = now() - interval '1 minute' WHERE id = $2",
                     ghost, old.trajectory_id)
    await db.execute("UPDATE trajectories SET runner = $1 WHERE id = $2", ghost, new.trajectory_id)
    await db.execute("INSERT INTO runners (runner, started_at, seen_at) VALUES ($1, now() - interval '5 seconds', "
                     "now())", ghost)
    closed = await store.close_lapsed(60)
    assert (old.trajectory_id, ghost) in closed and all(tid != new.trajectory_id for tid, _ in closed)
    assert (await store.get(new.trajectory_id)).status == "running"  # type: ignore[union-attr]
    # its runner goes unheard: a run that did something within the lapse is not closed yet, and keeps the runner
    await db.execute("UPDATE runners SET seen_at = now() - interval '2 days' WHERE runner = $1", ghost)
    await db.execute("INSERT INTO runners (runner, seen_at) VALUES ($1, now() - interval '2 days')", ghost + "0")
    assert await store.close_lapsed(60) == []
    await store.abandon_stale(idle_s=3600)  # the timed sweep
    assert (await store.get(new.trajectory_id)).status == "running"  # type: ignore[union-attr]
    assert await db.fetchval("SELECT array_agg(runner) FROM runners WHERE runner LIKE $1", ghost[:14] + "%") == [ghost]
    # once it has done nothing for the lapse it is closed; then a runner long gone with nothing running is forgotten
    await db.execute("UPDATE trajectories SET updated_at = now() - interval '2 minutes' WHERE id = $1",
                     new.trajectory_id)
    assert await store.close_lapsed(60) == [(new.trajectory_id, ghost)]
    await store.abandon_stale(idle_s=3600)  # the timed sweep
    assert await db.fetchval("SELECT count(*) FROM runners WHERE runner LIKE $1", ghost[:14] + "%") == 0


async def test_runs_that_ended_unrecorded_are_closed_once_the_store_is_back(traj_dsn: str, settings: Settings,
                                                                          store: TrajectoryStore) -> None:
    """Issue 41, point 3: a run whose end could not be written (the store was down) is remembered by its process and
    closed as failed as soon as the store answers, not left running until the timed sweep."""
    cut_off = await store.start(query="cut off by a restart", request_id=rid())
    ended = await store.start(query="ended after all", request_id=rid())
    await ended.finish(status="answered", response={}, timings={})
    down = await make_pool(UNREACHABLE, settings.model_copy(update={"pool_min_size": 0}))
    try:
        unreachable = TrajectoryStore(down, settings.model_copy(update={"retry_attempts": 1}))
        unreachable.unsettled(cut_off.trajectory_id)
        with pytest.raises(TrajectoryError):
            await unreachable.settle()
    finally:
        await down.close()
    for tid in (cut_off.trajectory_id, ended.trajectory_id, uuid.uuid4()):  # an unknown one changes nothing
        store.unsettled(tid)
    assert await store.settle() == [cut_off.trajectory_id]
    assert await store.settle() == []  # forgotten once settled
    got = await store.get(cut_off.trajectory_id)
    assert got is not None and got.status == "failed" and got.finished_at is not None
    assert (await store.get(ended.trajectory_id)).status == "answered"  # type: ignore[union-attr]


async def test_the_tables_rows_come_and_go_in_are_vacuumed_by_the_process(traj_dsn: str, store: TrajectoryStore,
                                                                         db: Conn) -> None:
    """Issue 41, point 4 (what the soak found): admission slots come and go at the request rate; a server with
    autovacuum off (this machine's) let an admission's count read every slot ever released. The processes that run
    the loop vacuum those tables themselves."""
    from agentic_rag.storage.postgres import HOT_TABLES, vacuum

    await db.execute("INSERT INTO admission_slots (id, key, expires_at) SELECT gen_random_uuid(), 'k-dead', now() "
                     "FROM generate_series(1, 500)")
    await db.execute("DELETE FROM admission_slots WHERE key = 'k-dead'")
    await vacuum(store.pool)
    # the pages of the deleted rows are free again: a VACUUM that ran leaves no dead row behind in the table
    dead = await db.fetchval("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'admission_slots'")
    vacuumed = await db.fetchval("SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = 'admission_slots'")
    assert "admission_slots" in HOT_TABLES and vacuumed >= 1 and dead == 0

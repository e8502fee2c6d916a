"""Closing runs whose process died: they are marked ``abandoned``, within seconds when their runner is known dead.

Each process that runs the loop is a *runner* (``host:pid``, recorded on every run it (re)starts) and is heard
in PostgreSQL every quarter of ``runner_lapse_ms`` (:func:`start_sweeper` registers it before its first run). A
run whose runner has gone unheard for the lapse, and that did nothing for as long, is closed by whichever live
process looks first (every beat); so is one left by an earlier process with the same pid. A process just back
from losing PostgreSQL judges nobody until it has itself been heard for a whole lapse: the others lost it too,
and get the same time to be heard again. This is how a killed Orchestrator replica's runs close in seconds.

Every lapse the same loop vacuums the tables whose rows come and go at the request rate (admission slots,
runners), whatever the server's autovacuum does.

The timed sweep stays as the backstop, for runs of a process that never beat. A run ends within the loop's
deadline (``agent_deadline_ms``) plus its final writes. One still ``running`` with neither a new event nor a
(re)start for longer than that plus a grace period (``run_abandon_grace_ms``) belongs to a process that stopped.
Every process that runs the loop sweeps once when it starts and then every ``run_sweep_interval_ms``. A sweep is
one idempotent UPDATE, so processes sweeping at once do no harm. The same sweep deletes the conversations that
expired (``conversation_ttl_s`` after their last turn): one DELETE.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid

import asyncpg

from agentic_rag.orchestrator.conversations import ConversationStore, ConversationStoreError
from agentic_rag.orchestrator.trajectory import TrajectoryError, TrajectoryStore
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import autovacuum_on, vacuum
from agentic_rag.storage.retry import DATABASE_FAILURES

__all__ = ["idle_limit_s", "start_sweeper", "sweep_abandoned"]

log = logging.getLogger(__name__)
# a vacuum that fails is tried again a lapse later (a table not there yet on an old schema, the server away)
UPKEEP_FAILURES: tuple[type[BaseException], ...] = (*DATABASE_FAILURES, asyncpg.PostgresError)
VACUUM_EVERY = 4  # beats between two vacuums of the hot tables (storage/postgres.py: HOT_TABLES): every lapse
LOGGED_RUNS = 20  # run ids the abandoned-runs warning lists (it says how many there were)


def idle_limit_s(settings: Settings) -> float:
    """How long a run may go without progress before it counts as abandoned."""
    return (settings.agent_deadline_ms + settings.run_abandon_grace_ms) / 1000


async def sweep_abandoned(store: TrajectoryStore, settings: Settings,
                          conversations: ConversationStore | None = None) -> None:
    """Sweep now, then every interval, until cancelled. A failed sweep is logged and tried again next time."""
    idle_s = idle_limit_s(settings)
    while True:
        if conversations is not None:
            try:
                if expired := await conversations.expire():
                    log.info("deleted %d expired conversation(s)", expired)
            except ConversationStoreError as exc:
                log.warning("the sweep for expired conversations failed: %s", exc)
        try:
            closed = await store.abandon_stale(idle_s)
        except TrajectoryError as exc:
            log.warning("the sweep for abandoned runs failed: %s", exc)
        else:
            if closed:
                log.warning("marked %d run(s) abandoned after %g s without progress: %s", len(closed), idle_s,
                            ", ".join(str(i) for i in closed[:LOGGED_RUNS]))
                await _release(conversations, closed)
        await asyncio.sleep(settings.run_sweep_interval_ms / 1000)


async def start_sweeper(store: TrajectoryStore, settings: Settings,
                        conversations: ConversationStore | None = None) -> asyncio.Task[None]:
    """Register this process as a runner (before it starts a run: an earlier process's runs under the same name
    are told from its own by that moment), then keep it heard and sweep in the background until the task is
    cancelled. Raises :class:`TrajectoryError` when PostgreSQL cannot register it."""
    await store.beat()
    try:
        if not await autovacuum_on(store.pool):
            log.warning("PostgreSQL's autovacuum is off: the indexes the sweeps read grow with every finished run "
                        "until VACUUM runs (this process vacuums only its small hot tables); turn autovacuum on, or "
                        "run VACUUM trajectories regularly")
    except UPKEEP_FAILURES as exc:
        log.info("could not read the server's autovacuum setting: %s", exc)

    async def both() -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(keep_heard(store, settings, conversations))
            group.create_task(sweep_abandoned(store, settings, conversations))

    return asyncio.create_task(both())


async def keep_heard(store: TrajectoryStore, settings: Settings,
                     conversations: ConversationStore | None = None) -> None:
    """Every quarter lapse: say this process is alive, then close the runs of runners that are not. Failures are
    logged and tried again; until cancelled."""
    lapse_s = settings.runner_lapse_ms / 1000
    heard_since: float | None = time.monotonic()  # start_sweeper's registration was a beat
    for beat in itertools.count(1):
        await asyncio.sleep(lapse_s / 4)
        if beat % VACUUM_EVERY == 0:
            try:
                await vacuum(store.pool)
            except UPKEEP_FAILURES as exc:  # the next time will do
                log.info("vacuuming the tables rows come and go in failed: %s", exc)
        try:
            await store.beat()
        except TrajectoryError as exc:
            if heard_since is not None:
                log.warning("this process could not say it is alive: %s", exc)
            heard_since = None
            continue
        if heard_since is None:
            heard_since = time.monotonic()
        try:
            if settled := await store.settle():
                log.warning("closed %d run(s) of this process as failed: they ended while the trajectory store "
                            "was out of reach: %s", len(settled), ", ".join(str(i) for i in settled[:LOGGED_RUNS]))
        except TrajectoryError as exc:
            log.warning("closing this process's runs that ended unrecorded failed: %s", exc)
        if time.monotonic() - heard_since < lapse_s:
            continue  # back from an outage the others shared: they get a lapse to be heard before being judged
        try:
            closed = await store.close_lapsed(lapse_s)
        except TrajectoryError as exc:
            log.warning("the check for runs of dead processes failed: %s", exc)
            continue
        if closed:
            runners = sorted({r for _, r in closed})
            log.warning("marked %d run(s) abandoned: their process is gone (%s unheard for %g s, or restarted): %s",
                        len(closed), ", ".join(runners[:LOGGED_RUNS]), lapse_s,
                        ", ".join(str(i) for i, _ in closed[:LOGGED_RUNS]))
            await _release(conversations, [i for i, _ in closed])


async def _release(conversations: ConversationStore | None, closed: list[uuid.UUID]) -> None:
    """The conversations whose turn one of ``closed`` was running take their next turn now, not when the claim's
    lease lapses."""
    if conversations is None:
        return
    try:
        if freed := await conversations.release_runs(closed):
            log.info("released %d conversation(s) claimed by abandoned runs", freed)
    except ConversationStoreError as exc:  # the lease lapses by itself
        log.warning("releasing the conversations of abandoned runs failed: %s", exc)

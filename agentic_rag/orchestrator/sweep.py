"""Closing runs whose process died: a sweep that marks them ``abandoned``.

A run ends within the loop's deadline (``agent_deadline_ms``) plus its final writes. One still
``running`` with neither a new event nor a (re)start for longer than that plus a grace period
(``run_abandon_grace_ms``) belongs to a process that stopped: a crashed or killed Orchestrator replica,
a CLI killed mid-run. Every process that runs the loop sweeps once when it starts and then every
``run_sweep_interval_ms``. A sweep is one idempotent UPDATE, so processes sweeping at once do no harm. The same
sweep deletes the conversations that expired (``conversation_ttl_s`` after their last turn): one DELETE.
"""

from __future__ import annotations

import asyncio
import logging

from agentic_rag.orchestrator.conversations import ConversationStore, ConversationStoreError
from agentic_rag.orchestrator.trajectory import TrajectoryError, TrajectoryStore
from agentic_rag.settings import Settings

__all__ = ["idle_limit_s", "sweep_abandoned"]

log = logging.getLogger(__name__)
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
        await asyncio.sleep(settings.run_sweep_interval_ms / 1000)

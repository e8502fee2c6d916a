"""A real service whose runs can be held at a gate, for tests that need a run in flight (streamed, cancelled,
overloaded, seen half way in a browser). Nothing of ours is mocked: the runs are the real loop's."""

from __future__ import annotations

import asyncio
from typing import Any

from agentic_rag.api.service import LocalAgentService
from agentic_rag.orchestrator.loop import RunResult
from agentic_rag.orchestrator.runtime import Runtime


class GatedService(LocalAgentService):
    """The real service, its runs held at ``gate``: once a run has recorded ``hold_after`` events (the event goes out
    to the run's sink first), or before it starts when ``hold_after`` is None. ``opened``: the gate starts open, so
    runs pass until a test clears it. ``entered`` is set once a run began, ``held`` once one waits at the gate,
    ``cancelled`` once one was cancelled; ``request_ids`` are the runs' request ids, in order."""

    def __init__(self, runtime: Runtime, *, hold_after: int | None = None, opened: bool = False) -> None:
        super().__init__(runtime)
        self.gate = asyncio.Event()
        if opened:
            self.gate.set()
        self.entered = asyncio.Event()
        self.held = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.hold_after = hold_after
        self.request_ids: list[str] = []

    async def _wait(self) -> None:
        if not self.gate.is_set():
            self.held.set()
            await self.gate.wait()

    async def ask(self, question: str, **options: Any) -> RunResult:
        self.entered.set()
        self.request_ids.append(str(options.get("request_id")))
        sink = options.get("sink")

        async def held(event: dict[str, Any]) -> None:
            if sink is not None:  # the stream's: the event goes out before the run waits
                await sink(event)
            if event["seq"] == self.hold_after:
                await self._wait()

        try:
            if self.hold_after is None:
                await self._wait()
                return await super().ask(question, **options)
            return await super().ask(question, **{**options, "sink": held})
        except asyncio.CancelledError:
            self.cancelled.set()
            raise

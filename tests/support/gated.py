"""A real service whose runs can be held at a gate, for tests that need a run in flight (cancelled, overloaded)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from agentic_rag.api.service import LocalAgentService
from agentic_rag.orchestrator.loop import EventSink, RunResult
from agentic_rag.orchestrator.runtime import Runtime
from agentic_rag.protocol import Mode, RunBudget


class GatedService(LocalAgentService):
    """The real service, with runs held at a gate: after ``hold_after`` events, or before they start. Records each
    run's request id; ``held`` is set once a run waits at the gate, ``cancelled`` once one was cancelled."""

    def __init__(self, runtime: Runtime, *, hold_after: int | None = None) -> None:
        super().__init__(runtime)
        self.gate = asyncio.Event()
        self.held = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.hold_after = hold_after
        self.request_ids: list[str] = []

    async def ask(self, question: str, *, mode: Mode, tenant: str, request_id: str,
                  sink: EventSink | None = None, budget: RunBudget | None = None,
                  image: bytes | None = None, conversation_id: uuid.UUID | None = None) -> RunResult:
        self.request_ids.append(request_id)

        async def held(event: dict[str, Any]) -> None:
            if sink is not None:
                await sink(event)
            if event["seq"] == self.hold_after:
                self.held.set()
                await self.gate.wait()

        try:
            if self.hold_after is None:
                self.held.set()
                await self.gate.wait()
            return await super().ask(question, mode=mode, tenant=tenant, request_id=request_id,
                                     sink=held if self.hold_after is not None else sink, budget=budget, image=image,
                                     conversation_id=conversation_id)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise

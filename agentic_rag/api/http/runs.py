"""Serving one agent run over HTTP: as one JSON body, or as server-sent events while it runs.

Both ways share the rules: a run is bounded by the loop's deadline plus a grace period (never a hung
request), a client that goes away cancels its run (the orchestrator records it as cancelled), and
every outcome is counted in the app's metrics. A streamed response starts only with the run's first
event, so a run that cannot start (unknown trajectory, store down) still gets a proper status code.
"""

from __future__ import annotations

import asyncio
import heapq
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import anyio
import pydantic_core
from pydantic import ValidationError
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from agentic_rag.api.errors import ApiError, api_error
from agentic_rag.api.http.errors import error_body, request_id_of
from agentic_rag.api.http.metrics import ApiMetrics
from agentic_rag.api.http.models import AskResponse, PlanStep, QueryResponse
from agentic_rag.orchestrator.loop import EventSink, RunResult
from agentic_rag.orchestrator.state import DESCRIBED_INTENT_MAX, describe
from agentic_rag.protocol import GraphIntent, SearchIntent, SimilarIntent, StructuredQuery
from agentic_rag.protocol.limits import max_len
from agentic_rag.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")

StartRun = Callable[[EventSink | None], Awaitable[RunResult]]
RUN_GRACE_S = 15.0  # past the loop's own deadline: final trajectory writes, their retries
CANCEL_WAIT_S = 10.0  # how long a cancelled run may take to record that it was cancelled
CLIENT_CLOSED = 499  # nginx's code for "the client closed the request", seen only in metrics and logs
_INTENT_MODELS: dict[str, type[SearchIntent] | type[GraphIntent] | type[StructuredQuery] | type[SimilarIntent]] = {
    "qdrant_search": SearchIntent, "pg_graph": GraphIntent, "pg_query": StructuredQuery, "similar": SimilarIntent,
}


class ClientGone(Exception):
    """The client disconnected before its run finished."""


def plan_of(events: list[dict[str, Any]]) -> list[PlanStep]:
    """The retrieval steps a run executed, from its select and retrieve events."""
    steps: list[PlanStep] = []
    turn = 0
    for e in events:
        payload = e.get("payload") or {}
        if e.get("stage") == "select" and e.get("type") == "decision" and isinstance(payload.get("turn"), int):
            turn = payload["turn"]
        elif e.get("stage") == "retrieve" and e.get("type") == "action" and payload.get("source") in _INTENT_MODELS:
            intent = payload.get("intent") or {}
            if isinstance(payload.get("image"), dict):  # the run's image went with it (its bytes are not recorded)
                intent = {**intent, "image_query": f"sha256:{payload['image'].get('sha256')}"}
            try:
                summary = describe(_INTENT_MODELS[payload["source"]].model_validate(intent))
            except ValidationError:  # recorded by a newer loop than this reader: show it raw
                summary = json.dumps(intent, default=str)[:DESCRIBED_INTENT_MAX]
            steps.append(PlanStep(turn=turn, action=payload["source"], intent=summary,
                                  rationale=str(intent.get("rationale", ""))[:max_len(SearchIntent, "rationale")]))
    return steps


class InOrder:
    """Collects a run's events and releases them in seq order.

    Concurrent branches of a turn write their events in seq order but may hand them to the sink out of
    order; a client reading the stream should not have to sort.
    """

    def __init__(self, out: asyncio.Queue[Any] | None = None) -> None:  # a queue that takes event dicts
        self.events: list[dict[str, Any]] = []
        self._out = out
        self._held: list[tuple[int, int, dict[str, Any]]] = []
        self._next: int | None = None

    async def __call__(self, event: dict[str, Any]) -> None:
        seq = int(event.get("seq", 0))
        heapq.heappush(self._held, (seq, len(self.events) + len(self._held), event))
        if self._next is None:
            self._next = seq
        while self._held and self._held[0][0] <= self._next:
            self._release(heapq.heappop(self._held)[2])
            self._next += 1

    def flush(self) -> None:
        """The run is over: release what waits for a seq that never came."""
        while self._held:
            self._release(heapq.heappop(self._held)[2])

    def _release(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        if self._out is not None:
            self._out.put_nowait(event)


class RunExecutor:
    """Runs ``start(sink)`` for a request and answers with JSON or a stream."""

    def __init__(self, metrics: ApiMetrics, settings: Settings) -> None:
        self.metrics = metrics
        self.timeout_s = settings.agent_deadline_ms / 1000 + RUN_GRACE_S

    async def respond(self, request: Request, start: StartRun, *, mode: str, stream: bool,
                      with_plan: bool) -> Response:
        if stream:
            return await self._stream(start, mode=mode, with_plan=with_plan, request_id=request_id_of(request))
        events = InOrder() if with_plan else None
        try:
            result = await self._bounded(_until_disconnect(request, self._bounded_run(start, events)), mode)
        except ClientGone:
            return Response(status_code=CLIENT_CLOSED)
        body = self._body(result, events)
        return JSONResponse(body.model_dump(mode="json"))

    async def _bounded_run(self, start: StartRun, events: InOrder | None) -> RunResult:
        async with asyncio.timeout(self.timeout_s):
            return await start(events)

    async def _bounded(self, work: Awaitable[RunResult], mode: str) -> RunResult:
        """Await a run, count how it ended, and turn its limit into a 504."""
        try:
            result = await work
        except TimeoutError:
            self.metrics.run_failed("timeout", mode)
            raise ApiError("timeout", f"the run did not finish within {self.timeout_s:g} s") from None
        except ClientGone:
            self.metrics.run_failed("cancelled", mode)
            raise
        except Exception as exc:
            known = api_error(exc)
            self.metrics.run_failed("error" if known is None or known.status >= 500 else "rejected", mode)
            raise
        self.metrics.run_finished(result)
        return result

    def _body(self, result: RunResult, events: InOrder | None) -> AskResponse:
        if events is None:
            return AskResponse.of(result)
        events.flush()
        return QueryResponse(**AskResponse.of(result).model_dump(), plan=plan_of(events.events))

    async def _stream(self, start: StartRun, *, mode: str, with_plan: bool, request_id: str) -> Response:
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        events = InOrder(queue)
        task = asyncio.create_task(self._bounded(self._bounded_run(start, events), mode))
        task.add_done_callback(lambda _: queue.put_nowait(None))
        first = asyncio.ensure_future(queue.get())
        try:
            await asyncio.wait({task, first}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # the request itself was cancelled: so is its run
            task.cancel()
            first.cancel()
            raise
        head = first.result() if first.done() else None
        if not first.done():
            first.cancel()  # an item it was woken for stays in the queue
        if head is None:  # the run ended before its first event
            failure = task.exception()
            if failure is not None:  # refused (unknown trajectory, store down): it keeps its status code
                raise failure
            if first.done():
                queue.put_nowait(None)  # ``first`` took the end-of-run mark; the stream needs it
        stream = self._events(task, queue, events, head, mode=mode, with_plan=with_plan, request_id=request_id)
        return EventSourceResponse(stream, ping=10)

    async def _events(self, task: asyncio.Task[RunResult], queue: asyncio.Queue[dict[str, Any] | None],
                      events: InOrder, head: dict[str, Any] | None, *, mode: str, with_plan: bool,
                      request_id: str) -> AsyncIterator[ServerSentEvent]:
        try:
            event = head if head is not None else await queue.get()
            while event is not None:
                yield ServerSentEvent(data=_json(event), event="trajectory", id=str(event.get("seq", "")))
                event = await queue.get()
            events.flush()
            while not queue.empty():
                if (held := queue.get_nowait()) is not None:
                    yield ServerSentEvent(data=_json(held), event="trajectory", id=str(held.get("seq", "")))
            try:
                result = task.result()
            except Exception as exc:
                err = api_error(exc) or ApiError("internal_error", "an internal error occurred; it was logged")
                if err.status == 500:
                    log.error("streamed run failed", exc_info=exc)
                body = error_body(err, request_id).model_dump(mode="json")
                yield ServerSentEvent(data=_json({**body, "status": err.status}), event="error")
            else:
                yield ServerSentEvent(data=self._body(result, events if with_plan else None).model_dump_json(),
                                      event="response")
            yield ServerSentEvent(data="{}", event="end")
        finally:
            if not task.done():  # the client went away (or the server is shutting down): stop its run
                task.cancel()
                self.metrics.run_failed("cancelled", mode)
                # shielded: this cleanup runs inside the stream's cancelled scope
                with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_WAIT_S):
                    await asyncio.wait({task})


async def _until_disconnect(request: Request, work: Awaitable[T]) -> T:
    """Await ``work``; if the client disconnects first, cancel it and raise :class:`ClientGone`."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=CANCEL_WAIT_S)
    if task.cancelled():
        raise ClientGone("the client disconnected")
    return task.result()


async def _disconnected(request: Request) -> None:
    # the body has been read; the next message a server sends is the disconnect
    try:
        while (await request.receive())["type"] != "http.disconnect":
            pass
    except Exception as exc:  # a server that cannot receive any more has lost its client too
        log.info("client connection lost: %s", exc)


def _json(value: Any) -> str:
    return pydantic_core.to_json(value, fallback=repr).decode()

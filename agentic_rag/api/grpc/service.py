"""The SearchAI gRPC API (``proto/searchai.proto``) over an :class:`~agentic_rag.api.service.AgentService`.

Ray-free, like the HTTP app: the Ingress deployment calls :class:`SearchAIApi` from the methods
Serve's gRPC proxy invokes (``Ask``, ``Search``, ``Clarify``, and the streamed ``AskStream`` and
``ClarifyStream``) with Serve's ``RayServegRPCContext``;
a plain ``grpc.aio`` server can call it with its own servicer context. Input is validated by the
HTTP API's request models and failures go through :func:`~agentic_rag.api.errors.api_error`,
so both APIs refuse the same requests and fail the same way: one table gives each kind of failure its HTTP
status and its gRPC code.

A failure is answered by setting the code and details on the context and returning an empty reply,
not by raising (a stream ends after the messages sent so far): Serve's proxy passes the code through to the
client as it is. Raising after setting
the code would also work, but the proxy then logs a traceback for every client mistake. The price:
Serve's own access log and request metrics count such a call as OK, so this module logs each refusal
with its code and request id.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar

import grpc
from pydantic import ValidationError
from pydantic_core import to_json

from agentic_rag.api.admission import ANONYMOUS, CALLER, Admission, TooManyRuns, key_id
from agentic_rag.api.auth import matched_key
from agentic_rag.api.errors import ApiError, api_error
from agentic_rag.api.grpc.proto import searchai_pb2 as pb
from agentic_rag.api.grpc.proto import searchai_pb2_grpc as pb_grpc
from agentic_rag.api.http.app import TENANT_PATTERN
from agentic_rag.api.http.errors import REQUEST_ID_PATTERN
from agentic_rag.api.http.models import AskRequest, ClarifyRequest, SearchRequest
from agentic_rag.api.http.runs import RUN_GRACE_S, InOrder
from agentic_rag.api.service import AgentService
from agentic_rag.logs import request_context
from agentic_rag.models.images import read_request_image
from agentic_rag.orchestrator.loop import EventSink, RunResult
from agentic_rag.protocol import AgentResponse, EntityRef, Mode
from agentic_rag.retrievers.typeahead import MatchTier, TypeaheadHit
from agentic_rag.settings import Settings

__all__ = ["SearchAIApi", "SearchAIServicer", "StatusContext", "ask_reply", "search_reply", "trajectory_event"]

log = logging.getLogger(__name__)
R = TypeVar("R")
# how an RPC starts its run, once its request is checked: under a request id, with an event sink (streams) or not
Start = Callable[[str, EventSink | None], Awaitable[RunResult]]

TENANT = re.compile(TENANT_PATTERN)  # the HTTP API's X-Tenant header, the same rule
MAX_DETAILS = 1000  # status details travel in HTTP/2 trailers, which are small
INTERNAL_DETAILS = "an internal error occurred; it has been logged"
MODES_IN: dict[int, Mode] = {pb.MODE_UNSPECIFIED: "agentic", pb.MODE_AGENTIC: "agentic", pb.MODE_LINEAR: "linear"}
MODES_OUT: dict[str, pb.Mode] = {"agentic": pb.MODE_AGENTIC, "linear": pb.MODE_LINEAR}
STATUSES: dict[str, pb.Status] = {
    "answered": pb.STATUS_ANSWERED, "not_found": pb.STATUS_NOT_FOUND, "best_effort": pb.STATUS_BEST_EFFORT,
    "needs_clarification": pb.STATUS_NEEDS_CLARIFICATION, "blocked": pb.STATUS_BLOCKED,
}
MATCH_TIERS: dict[MatchTier, pb.MatchTier] = {
    "exact": pb.MATCH_TIER_EXACT, "prefix": pb.MATCH_TIER_PREFIX, "fuzzy": pb.MATCH_TIER_FUZZY,
}


class StatusContext(Protocol):
    """What the API uses of a servicer context: Serve's ``RayServegRPCContext`` or ``grpc.aio.ServicerContext``."""

    def set_code(self, code: grpc.StatusCode) -> Any: ...

    def set_details(self, details: str) -> Any: ...

    def invocation_metadata(self) -> Iterable[tuple[str, str | bytes]] | None: ...

    def set_trailing_metadata(self, trailing_metadata: Any) -> Any: ...


def _budget(request: pb.AskRequest | pb.ClarifyRequest) -> dict[str, int] | None:
    """The run's budget as the request gives it (validated with the request: a limit is 0 when unset), or None."""
    if not request.HasField("budget"):
        return None
    b = request.budget
    return {name: value for name in ("max_turns", "deadline_ms", "max_failed_steps") if (value := getattr(b, name))}


class SearchAIApi:
    """The three RPCs. Each answers its reply, or sets an error status on the context and answers an empty one."""

    def __init__(self, service: AgentService, settings: Settings, *, admission: Admission | None = None) -> None:
        self._service = service
        self._settings = settings
        self._admission = admission
        self._keys = list(settings.api_keys)
        self._max_runs = settings.max_inflight_runs
        self._timeout_s = settings.agent_deadline_ms / 1000 + RUN_GRACE_S
        self._runs = 0

    async def ask(self, request: pb.AskRequest, context: StatusContext) -> pb.AskReply:
        start = self._asked(request)
        return await self._answer(context, request.request_id,
                                  lambda rid: self._reply(start(rid, None)), pb.AskReply)

    async def ask_stream(self, request: pb.AskRequest, context: StatusContext) -> AsyncIterator[pb.RunUpdate]:
        """Ask, as it happens: each trajectory event as it is written, then the reply; a failure ends the stream
        with its status on ``context``, as Ask's would."""
        async for update in self._stream(context, request.request_id, self._asked(request)):
            yield update

    async def search(self, request: pb.SearchRequest, context: StatusContext) -> pb.SearchReply:
        async def call(_: str) -> pb.SearchReply:
            body = SearchRequest.model_validate({"q": request.q, "types": list(request.types) or None,
                                                 "limit": request.limit or 10})
            return search_reply(await self._service.search(body.query()))

        return await self._answer(context, "", call, pb.SearchReply)

    async def clarify(self, request: pb.ClarifyRequest, context: StatusContext) -> pb.AskReply:
        start = self._clarified(request)
        return await self._answer(context, request.request_id,
                                  lambda rid: self._reply(start(rid, None)), pb.AskReply)

    async def clarify_stream(self, request: pb.ClarifyRequest,
                             context: StatusContext) -> AsyncIterator[pb.RunUpdate]:
        """Clarify, as it happens (as :meth:`ask_stream`)."""
        async for update in self._stream(context, request.request_id, self._clarified(request)):
            yield update

    # -- runs ----------------------------------------------------------------------------------------

    def _asked(self, request: pb.AskRequest) -> Start:
        """How to start the run ``request`` asks for; validated when started, inside the call's status handling."""

        def start(request_id: str, sink: EventSink | None) -> Awaitable[RunResult]:
            if request.mode not in MODES_IN:
                raise ApiError("validation_error", f"mode: unknown value {request.mode}")
            body = AskRequest(question=request.question, mode=MODES_IN[request.mode], budget=_budget(request),
                              conversation_id=_conversation(request.conversation_id))
            tenant = _tenant(request.tenant)

            async def started() -> RunResult:
                # the image is checked before the run takes a slot, off the event loop
                image = await asyncio.to_thread(read_request_image, request.image, self._settings) \
                    if request.image else None
                return await self._run(lambda: self._service.ask(body.question, mode=body.mode, tenant=tenant,
                                                                 request_id=request_id, sink=sink, image=image,
                                                                 budget=body.budget,
                                                                 conversation_id=body.conversation_id))

            return started()

        return start

    def _clarified(self, request: pb.ClarifyRequest) -> Start:
        def start(request_id: str, sink: EventSink | None) -> Awaitable[RunResult]:
            try:
                trajectory_id = uuid.UUID(request.trajectory_id)
            except ValueError:
                raise ApiError("validation_error", "trajectory_id: not a UUID") from None
            which = request.WhichOneof("choice")
            if which is None:
                raise ApiError("validation_error", "choice: give the index or the entity_id of a choice")
            body = ClarifyRequest(choice=request.index if which == "index" else request.entity_id,
                                  budget=_budget(request))
            tenant = _tenant(request.tenant)
            return self._run(lambda: self._service.resume(trajectory_id, body.choice, tenant=tenant,
                                                          request_id=request_id, sink=sink, budget=body.budget))

        return start

    @staticmethod
    async def _reply(run: Awaitable[RunResult]) -> pb.AskReply:
        return ask_reply(await run)

    async def _stream(self, context: StatusContext, request_id: str, start: Start) -> AsyncIterator[pb.RunUpdate]:
        """The run ``start`` begins, as updates: its events through a queue as the loop writes them, then the
        reply. The run is a task of its own (with the request's context); a caller that goes away cancels it,
        which the loop records as cancelled."""
        updates: asyncio.Queue[dict[str, Any] | pb.RunUpdate | None] = asyncio.Queue()
        in_order = InOrder(updates)  # concurrent branches may hand their events over out of seq order

        async def call(rid: str) -> None:
            reply = await self._reply(start(rid, in_order))
            in_order.flush()
            await updates.put(pb.RunUpdate(reply=reply))

        async def produce() -> None:
            try:
                await self._answer(context, request_id, call, lambda: None)
            finally:
                in_order.flush()
                await updates.put(None)

        task = asyncio.create_task(produce())
        try:
            while (update := await updates.get()) is not None:
                yield update if isinstance(update, pb.RunUpdate) else pb.RunUpdate(event=trajectory_event(update))
            await task
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _answer(self, context: StatusContext, request_id: str, call: Callable[[str], Awaitable[R]],
                      empty: Callable[[], R]) -> R:
        """``call`` under the request's id; any failure becomes a status on ``context`` (never an exception)."""
        metadata = {k.lower(): v for k, v in context.invocation_metadata() or () if isinstance(v, str)}
        offered = request_id or metadata.get("request_id", "")
        with request_context(offered if REQUEST_ID_PATTERN.match(offered) else None) as rid:
            try:
                if request_id and rid != request_id:
                    raise ApiError("validation_error", "request_id: 1 to 128 of A-Z a-z 0-9 . _ : -, "
                                                            "starting with a letter or digit")
                CALLER.set(self._authorize(metadata))  # this call's own context: its run reads it
                return await call(rid)
            except Exception as exc:
                code, details = _status(exc)
                log.info("SearchAI call answered %s: %s", code.name, details)
                if isinstance(exc, TooManyRuns):  # when to come back, in gRPC's own retry pushback trailer
                    context.set_trailing_metadata([("grpc-retry-pushback-ms", str(int(exc.retry_after) * 1000))])
                context.set_code(code)
                context.set_details(details[:MAX_DETAILS])
                return empty()

    async def _run(self, start: Callable[[], Awaitable[RunResult]]) -> RunResult:
        # Beyond the limit the answer is UNAVAILABLE at once: a queue here would only turn overload into
        # timeouts. The HTTP app counts its own runs; Serve's max_ongoing_requests bounds both together.
        if self._runs >= self._max_runs:
            raise ApiError("overloaded", f"{self._runs} runs in flight, the limit; retry shortly")
        async with self._admission.slot(CALLER.get()) if self._admission is not None else contextlib.nullcontext():
            self._runs += 1
            try:
                async with asyncio.timeout(self._timeout_s):
                    return await start()
            except TimeoutError:
                raise ApiError("timeout", f"the run did not finish within {self._timeout_s:g} s") from None
            finally:
                self._runs -= 1

    def _authorize(self, metadata: Mapping[str, str]) -> str:
        """The caller's key id; UNAUTHENTICATED without a valid key when keys are configured."""
        if not self._keys:
            return ANONYMOUS
        scheme, _, token = metadata.get("authorization", "").partition(" ")
        matched = matched_key((token if scheme.lower() == "bearer" else None, metadata.get("x-api-key")), self._keys)
        if matched is None:
            raise ApiError("unauthorized", "a valid API key is required (metadata authorization: Bearer "
                                                "<key>, or x-api-key)")
        return key_id(matched)


class SearchAIServicer(pb_grpc.SearchAIServicer):
    """SearchAI for a plain ``grpc.aio`` server, without Ray (Serve's proxy calls the Ingress's methods instead):
    ``pb_grpc.add_SearchAIServicer_to_server(SearchAIServicer(api), server)``."""

    def __init__(self, api: SearchAIApi) -> None:
        self.api = api

    async def Ask(self, request: pb.AskRequest, context: StatusContext) -> pb.AskReply:
        return await self.api.ask(request, context)

    async def Search(self, request: pb.SearchRequest, context: StatusContext) -> pb.SearchReply:
        return await self.api.search(request, context)

    async def Clarify(self, request: pb.ClarifyRequest, context: StatusContext) -> pb.AskReply:
        return await self.api.clarify(request, context)

    async def AskStream(self, request: pb.AskRequest, context: StatusContext) -> AsyncIterator[pb.RunUpdate]:
        async for update in self.api.ask_stream(request, context):
            yield update

    async def ClarifyStream(self, request: pb.ClarifyRequest,
                            context: StatusContext) -> AsyncIterator[pb.RunUpdate]:
        async for update in self.api.clarify_stream(request, context):
            yield update


def _tenant(tenant: str) -> str:
    if not tenant:
        return "default"
    if not TENANT.match(tenant):
        raise ApiError("validation_error", "tenant: 1 to 64 of A-Z a-z 0-9 _ -")
    return tenant


def _status(exc: Exception) -> tuple[grpc.StatusCode, str]:
    if isinstance(exc, ValidationError):
        problems = [f"{'.'.join(str(p) for p in e['loc']) or 'request'}: {e['msg']}" for e in exc.errors()[:5]]
        return grpc.StatusCode.INVALID_ARGUMENT, "; ".join(problems) or "invalid request"
    err = api_error(exc)
    if err is None or err.kind == "internal_error":
        log.error("a SearchAI call failed", exc_info=exc)
        return grpc.StatusCode.INTERNAL, INTERNAL_DETAILS
    return err.grpc_code, err.message


def _ref(ref: EntityRef) -> pb.EntityRef:
    return pb.EntityRef(entity_type=ref.entity_type, id=ref.id)


def _evidence(response: AgentResponse) -> pb.Evidence:
    ev = response.evidence
    return pb.Evidence(
        paths=[pb.EvidencePath(nodes=[_ref(n) for n in p.nodes], rels=list(p.rels)) for p in ev.paths],
        ranked=[_ref(r) for r in ev.ranked], facts=list(ev.facts), rewritten_query=ev.rewritten_query or "",
        termination_reason=ev.termination_reason or "",
    )


def trajectory_event(event: Mapping[str, Any]) -> pb.TrajectoryEvent:
    """A trajectory event as the sink receives it (``seq``, ``stage``, ``type``, ``payload``, ``latency_ms``,
    ``trajectory_id``)."""
    return pb.TrajectoryEvent(seq=int(event.get("seq") or 0), stage=str(event.get("stage", "")),
                              type=str(event.get("type", "")),
                              payload_json=to_json(event.get("payload") or {}).decode(),
                              latency_ms=float(event.get("latency_ms") or 0.0),
                              trajectory_id=str(event.get("trajectory_id") or ""))


def _conversation(value: str) -> uuid.UUID | None:
    """A request's conversation id: empty is none (a new conversation)."""
    if not value:
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        raise ApiError("validation_error", "conversation_id: not a UUID") from None


def ask_reply(result: RunResult) -> pb.AskReply:
    """A finished run (or one that asks for a clarification) as the wire message."""
    r = result.response
    clarification = None if r.clarification is None else pb.Clarification(
        question=r.clarification.question,
        choices=[pb.ClarificationChoice(label=c.label, entity=_ref(c.entity)) for c in r.clarification.choices])
    return pb.AskReply(
        trajectory_id=str(result.trajectory_id), request_id=result.request_id, status=STATUSES[r.status],
        mode=MODES_OUT[result.mode], answer=r.answer, confidence=r.confidence,
        result_entities=[_ref(e) for e in r.result_entities], source_entities=[_ref(e) for e in r.source_entities],
        evidence=_evidence(r), citations=list(r.citations), warnings=list(r.warnings), clarification=clarification,
        turns=result.turns, latency_ms=result.latency_ms, timings=result.timings,
        conversation_id=str(result.conversation_id or ""), turn=result.turn or 0,
    )


def search_reply(hits: list[TypeaheadHit]) -> pb.SearchReply:
    """Typeahead hits as the wire message, best first."""
    return pb.SearchReply(hits=[
        pb.SearchHit(entity=_ref(h.entity), name=h.name, matched=h.matched, match=MATCH_TIERS[h.match],
                     popularity=h.popularity)
        for h in hits])

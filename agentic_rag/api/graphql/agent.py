"""The agent, as the GraphQL backend reaches it: the SearchAI gRPC service (``api/grpc/proto/searchai.proto``),
its unary calls and its streams (a run's trajectory events as they are written, then its reply).

Natural-language questions and clarifications go over gRPC, as the seeds draw the system: the backend holds
one channel to the service (Ray Serve's gRPC proxy, or any server of :class:`SearchAIApi`) and sends each call
with the application's name (the proxy routes by it), the caller's API key and the caller's tenant. A status
the service sets on purpose (bad input, no such trajectory, not waiting, overloaded) reaches the client as a
:class:`~agentic_rag.api.graphql.errors.ClientError` of the same kind; the transport's own failures (no server, a
broken connection) say only that the agent did not answer, never an address or a stack.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import grpc

from agentic_rag import tracing
from agentic_rag.api.graphql.errors import ClientError
from agentic_rag.api.grpc.proto import searchai_pb2 as pb
from agentic_rag.api.grpc.proto import searchai_pb2_grpc as pb_grpc
from agentic_rag.errors import ErrorKind

__all__ = ["RUN_GRACE_S", "AgentClient"]

log = logging.getLogger(__name__)

# Past the loop's own deadline: the service's grace for its final writes, and the hop to it
RUN_GRACE_S = 20.0
# The service's own statuses, whose details it writes for the client (grpc_api.py), by the kind they carry
PASSED_ON: dict[grpc.StatusCode, ErrorKind] = {
    grpc.StatusCode.INVALID_ARGUMENT: "validation_error",
    grpc.StatusCode.NOT_FOUND: "not_found",
    grpc.StatusCode.FAILED_PRECONDITION: "conflict",
}
# Statuses a transport can also produce: the client gets a fixed message (the details may name hosts)
FIXED: dict[grpc.StatusCode, tuple[ErrorKind, str]] = {
    grpc.StatusCode.UNAUTHENTICATED: ("unauthorized", "the agent refused the API key"),
    grpc.StatusCode.UNAVAILABLE: ("unavailable", "the agent is unavailable or overloaded; retry shortly"),
    grpc.StatusCode.RESOURCE_EXHAUSTED: ("overloaded", "the agent is overloaded; retry shortly"),
    grpc.StatusCode.DEADLINE_EXCEEDED: ("timeout", "the run did not finish in time"),
    grpc.StatusCode.CANCELLED: ("unavailable", "the call to the agent was cancelled"),
}


class AgentClient:
    """Calls SearchAI's Ask and Clarify over one channel; each call carries the caller's credentials."""

    def __init__(self, channel: grpc.aio.Channel, *, application: str, timeout_s: float) -> None:
        self._stub = pb_grpc.SearchAIStub(channel)  # type: ignore[no-untyped-call]  # generated, untyped
        self._application = application
        self._timeout_s = timeout_s

    async def ask(self, question: str, mode: pb.Mode, *, tenant: str, request_id: str,
                  credentials: Sequence[tuple[str, str]], image: bytes = b"",
                  budget: pb.RunBudget | None = None, conversation_id: uuid.UUID | None = None) -> pb.AskReply:
        """One run of the agent loop over ``question`` (and the ``image`` it is about, if any: SearchAI checks it),
        within ``budget`` when given, as a turn of ``conversation_id`` when given."""
        request = pb.AskRequest(question=question, mode=mode, tenant=tenant, request_id=request_id, image=image,
                                budget=budget, conversation_id=str(conversation_id or ""))
        return await self._call(self._stub.Ask(request, metadata=self._metadata(credentials),
                                               timeout=self._timeout_s))

    async def clarify(self, trajectory_id: uuid.UUID, choice: int | str, *, tenant: str, request_id: str,
                      credentials: Sequence[tuple[str, str]], budget: pb.RunBudget | None = None) -> pb.AskReply:
        """Resume a run that asked for a clarification with the chosen index or entity id."""
        request = _clarify_request(trajectory_id, choice, tenant=tenant, request_id=request_id, budget=budget)
        return await self._call(self._stub.Clarify(request, metadata=self._metadata(credentials),
                                                   timeout=self._timeout_s))

    async def ask_stream(self, question: str, mode: pb.Mode, *, tenant: str, request_id: str,
                         credentials: Sequence[tuple[str, str]], image: bytes = b"",
                         budget: pb.RunBudget | None = None,
                         conversation_id: uuid.UUID | None = None) -> AsyncIterator[pb.RunUpdate]:
        """A run over ``question`` as it happens (SearchAI.AskStream): its events as written, then its reply."""
        request = pb.AskRequest(question=question, mode=mode, tenant=tenant, request_id=request_id, image=image,
                                budget=budget, conversation_id=str(conversation_id or ""))
        async for update in self._stream(self._stub.AskStream(request, metadata=self._metadata(credentials),
                                                              timeout=self._timeout_s)):
            yield update

    async def clarify_stream(self, trajectory_id: uuid.UUID, choice: int | str, *, tenant: str, request_id: str,
                             credentials: Sequence[tuple[str, str]],
                             budget: pb.RunBudget | None = None) -> AsyncIterator[pb.RunUpdate]:
        """A resumed run as it happens (SearchAI.ClarifyStream)."""
        request = _clarify_request(trajectory_id, choice, tenant=tenant, request_id=request_id, budget=budget)
        async for update in self._stream(self._stub.ClarifyStream(request, metadata=self._metadata(credentials),
                                                                  timeout=self._timeout_s)):
            yield update

    def _metadata(self, credentials: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
        # the caller's trace goes on into SearchAI (Serve reads traceparent from gRPC metadata)
        return (("application", self._application), *credentials, *tracing.carrier().items())

    async def _call(self, call: grpc.aio.UnaryUnaryCall) -> pb.AskReply:
        try:
            reply: pb.AskReply = await call
        except grpc.aio.AioRpcError as exc:
            raise _client_error(exc) from None
        return reply


    @staticmethod
    async def _stream(call: Any) -> AsyncIterator[pb.RunUpdate]:
        """The updates of a streaming call; a consumer that stops early (a subscriber gone) cancels the call, and
        the service cancels the run with it."""
        try:
            async for update in call:
                yield update
        except grpc.aio.AioRpcError as exc:
            raise _client_error(exc) from None
        finally:
            call.cancel()


def _clarify_request(trajectory_id: uuid.UUID, choice: int | str, *, tenant: str, request_id: str,
                     budget: pb.RunBudget | None) -> pb.ClarifyRequest:
    request = pb.ClarifyRequest(trajectory_id=str(trajectory_id), tenant=tenant, request_id=request_id, budget=budget)
    if isinstance(choice, int):
        request.index = choice
    else:
        request.entity_id = choice
    return request


def _client_error(exc: grpc.aio.AioRpcError) -> ClientError:
    code = exc.code()
    pushback = dict(exc.trailing_metadata() or ()).get("grpc-retry-pushback-ms")
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and isinstance(pushback, str) and pushback.isdigit():
        # the caller's API key is over its own bound (SearchAI's admission): its message, and when to retry
        return ClientError("too_many_requests", exc.details() or "too many requests",
                           retryAfter=max(1, int(pushback) // 1000))
    if code in PASSED_ON:
        return ClientError(PASSED_ON[code], exc.details() or code.name.lower())
    if code in FIXED:
        kind, message = FIXED[code]
        log.info("SearchAI answered %s: %s", code.name, exc.details())
        return ClientError(kind, message)
    log.error("SearchAI call failed with %s: %s", code.name, exc.details())
    return ClientError("internal_error", "the agent failed; the failure has been logged")

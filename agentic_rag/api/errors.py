"""Failures as clients see them: one table from a failure's kind to its HTTP status and its gRPC code.

Every failure raised on purpose is an :class:`~agentic_rag.errors.AgenticRagError` whose ``kind`` names a row
of :data:`STATUSES`; :func:`api_error` turns any exception into the :class:`ApiError` both APIs answer with
(the HTTP app as ``{"error": {...}}``, the gRPC service as a status code and details), or None for a bug,
which is logged and answered as a bare internal error.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, get_args

import grpc
from starlette.exceptions import HTTPException as StarletteHTTPException

from agentic_rag.api.admission import TooManyRuns
from agentic_rag.api.service import ServiceUnavailable
from agentic_rag.errors import AgenticRagError, ErrorKind, Unavailable
from agentic_rag.orchestrator.trajectory import TrajectoryError

log = logging.getLogger(__name__)

RETRY_AFTER = {"Retry-After": "1"}
Code = grpc.StatusCode


@dataclass(frozen=True, slots=True)
class Status:
    """How one kind of failure is answered."""

    http: int
    grpc: grpc.StatusCode


STATUSES: dict[ErrorKind, Status] = {
    "validation_error": Status(422, Code.INVALID_ARGUMENT),
    "invalid_choice": Status(422, Code.INVALID_ARGUMENT),
    "not_found": Status(404, Code.NOT_FOUND),
    "conflict": Status(409, Code.FAILED_PRECONDITION),
    "unavailable": Status(503, Code.UNAVAILABLE),
    "overloaded": Status(503, Code.UNAVAILABLE),
    "timeout": Status(504, Code.DEADLINE_EXCEEDED),
    # the loop falls back to the heuristic on it; only a route that calls a model directly shows it
    "model_error": Status(502, Code.UNAVAILABLE),
    "internal_error": Status(500, Code.INTERNAL),
    "bad_request": Status(400, Code.INVALID_ARGUMENT),
    "invalid_json": Status(400, Code.INVALID_ARGUMENT),
    "unauthorized": Status(401, Code.UNAUTHENTICATED),
    "forbidden": Status(403, Code.PERMISSION_DENIED),
    "method_not_allowed": Status(405, Code.UNIMPLEMENTED),
    "not_acceptable": Status(406, Code.INVALID_ARGUMENT),
    "payload_too_large": Status(413, Code.RESOURCE_EXHAUSTED),
    "unsupported_media_type": Status(415, Code.INVALID_ARGUMENT),
    "too_many_requests": Status(429, Code.RESOURCE_EXHAUSTED),
}
assert set(STATUSES) == set(get_args(ErrorKind)), "every kind of failure has a status"
# an HTTP status the framework raised (404 for an unknown route, 405 ...), read back as a kind: the first row
KIND_OF_HTTP: dict[int, ErrorKind] = {}
for _kind, _status in STATUSES.items():
    KIND_OF_HTTP.setdefault(_status.http, _kind)


class ApiError(AgenticRagError):
    """A failure as a client is told it: its kind (hence status), message, and what else it carries."""

    def __init__(self, kind: ErrorKind, message: str, *, headers: Mapping[str, str] | None = None,
                 details: list[dict[str, Any]] | None = None, trajectory_id: uuid.UUID | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.headers = dict(headers or {})
        self.details = details or []
        self.trajectory_id = trajectory_id

    @property
    def status(self) -> int:
        return STATUSES[self.kind].http

    @property
    def grpc_code(self) -> grpc.StatusCode:
        return STATUSES[self.kind].grpc


def api_error(exc: BaseException) -> ApiError | None:
    """The client-facing form of a known failure; None for an unexpected one (a bug)."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, TooManyRuns):  # the caller's own key is over its bound: it is told when to come back
        return ApiError(exc.kind, str(exc), headers={"Retry-After": exc.retry_after})
    if isinstance(exc, Unavailable):
        # the detail names hosts and internals: it goes to the log, the client learns to retry
        log.warning("unavailable: %s", exc)
        if isinstance(exc, ServiceUnavailable):
            what, tid = exc.component, exc.trajectory_id
        else:
            what, tid = _component(exc), None
        # a run that may have been recorded is named: its trajectory says how it ended
        run = f"; the run is trajectory {tid}" if tid else ""
        return ApiError(exc.kind, f"{what} is unavailable right now; retry shortly{run}", headers=RETRY_AFTER,
                        trajectory_id=tid)
    if isinstance(exc, AgenticRagError):
        return ApiError(exc.kind, str(exc))
    if isinstance(exc, StarletteHTTPException):
        return ApiError(KIND_OF_HTTP.get(exc.status_code, "bad_request" if exc.status_code < 500 else "internal_error"),
                        str(exc.detail), headers=exc.headers)
    return None


def _component(exc: Unavailable) -> str:
    """What a client is told was unavailable (never a host name or a driver's message)."""
    return "the trajectory store" if isinstance(exc, TrajectoryError) else "a backing service"

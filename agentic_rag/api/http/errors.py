"""Errors as the API shows them, and the outermost middleware: request ids, body limit, metrics, last-resort 500.

Every error body is ``{"error": {"type", "message", "request_id"}}``. Known failures (every
:class:`~agentic_rag.errors.AgenticRagError`) map to a status in one table (:mod:`agentic_rag.api.errors`);
anything else is logged with its traceback and answered with
a bare 500, so no stack trace or internal message ever reaches a client. The OpenAI route, mounted under
``/openai``, keeps OpenAI's error shape and its own body limit (:class:`ApiMiddleware`'s ``mounted``).
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable, Mapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentic_rag import tracing
from agentic_rag.api import costs
from agentic_rag.api.errors import ApiError, api_error
from agentic_rag.api.http.metrics import ApiMetrics
from agentic_rag.api.http.models import ErrorDetail, ErrorResponse
from agentic_rag.errors import AgenticRagError
from agentic_rag.logs import request_context

log = logging.getLogger(__name__)

REQUEST_ID_HEADER = "X-Request-ID"
REQUEST_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
MAX_BODY_BYTES = 64 * 1024
MAX_DETAILS = 20  # validation problems listed in one error body (a huge bad request lists the first)


def error_body(err: ApiError, request_id: str | None) -> ErrorResponse:
    return ErrorResponse(error=ErrorDetail(type=err.kind, message=err.message, request_id=request_id,
                                           details=err.details, trajectory_id=err.trajectory_id))


def error_response(err: ApiError, request_id: str | None) -> JSONResponse:
    return JSONResponse(error_body(err, request_id).model_dump(mode="json"), status_code=err.status,
                        headers=err.headers)


# How a mounted app with an error shape of its own (the OpenAI route) writes an error of ApiMiddleware's
ErrorShape = Callable[[ApiError, str | None], Response]


def request_id_of(request: Request) -> str:
    """The id the middleware gave this request."""
    rid = request.scope.get("state", {}).get("request_id")
    return rid if isinstance(rid, str) else uuid.uuid4().hex


def _validation_error(exc: RequestValidationError) -> ApiError:
    details = [{"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", "")), "type": str(e.get("type"))}
               for e in exc.errors()[:MAX_DETAILS]]
    if any(d["type"] == "json_invalid" for d in details):
        return ApiError("invalid_json", "the request body is not valid JSON", details=details)
    summary = "; ".join(f"{'.'.join(d['loc'])}: {d['msg']}" for d in details[:5])
    return ApiError("validation_error", summary or "invalid request", details=details)


def _methods_at(request: Request) -> list[str]:
    """Every method some route of the app answers at the request's path (the ``Allow`` of a 405; HEAD, which
    Starlette adds to every GET and the schema does not list, left out)."""
    allowed = []
    for method in ("DELETE", "GET", "PATCH", "POST", "PUT"):
        scope = {**request.scope, "method": method}
        if any(route.matches(scope)[0] == Match.FULL for route in request.app.router.routes):
            allowed.append(method)
    return allowed


def install_error_handlers(app: FastAPI) -> None:
    """Answer every known failure as JSON in the one error shape."""

    async def known(request: Request, exc: Exception) -> JSONResponse:
        err = api_error(exc)
        assert err is not None  # registered only for the classes api_error knows
        if err.status == 405:  # Starlette names the methods of the first route with this path; there may be more
            err.headers["Allow"] = ", ".join(_methods_at(request))
        return error_response(err, request_id_of(request))

    async def invalid(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return error_response(_validation_error(exc), request_id_of(request))

    for cls in (AgenticRagError, StarletteHTTPException):
        app.add_exception_handler(cls, known)
    app.add_exception_handler(RequestValidationError, invalid)


class ApiMiddleware:
    """Outermost layer of the app (pure ASGI, so streamed responses pass straight through).

    Gives each request an id (a valid ``X-Request-ID`` or a new one), echoes it, and runs the request
    inside :func:`agentic_rag.logs.request_context`; reports where its time went (``Server-Timing``: the app,
    then each deployment hop, :mod:`agentic_rag.api.costs`); refuses bodies over :data:`MAX_BODY_BYTES`; counts
    requests by route template; and turns an unexpected exception into a logged, trace-free 500.

    Behind Ray Serve's HTTP proxy (``proxy_sets_request_id``) the proxy owns the header: it gives a request
    without one an id, passes it in, and adds ``X-Request-ID`` to every response itself, the client's value as
    sent. So the app takes the proxy's id, adds no header of its own (the response carries exactly one), and
    answers an id it cannot use (not 1 to 128 of ``A-Z a-z 0-9 . _ : -``) with 422 rather than run under an id
    that differs from the one the client is shown.

    ``mounted`` maps the path prefix of a mounted app with an error shape of its own (the OpenAI route) to how
    that shape words this middleware's errors; such an app bounds its request bodies itself. ``body_limits``
    gives a path a body bound of its own instead of :data:`MAX_BODY_BYTES` (a question with an image).
    """

    def __init__(self, app: ASGIApp, metrics: ApiMetrics, *, proxy_sets_request_id: bool = False,
                 mounted: Mapping[str, ErrorShape] | None = None, body_limits: Mapping[str, int] | None = None) -> None:
        self.app = app
        self.metrics = metrics
        self.proxy_sets_request_id = proxy_sets_request_id
        self.mounted = dict(mounted or {})
        self.body_limits = dict(body_limits or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        offered = headers.get(REQUEST_ID_HEADER.lower(), "")
        valid = bool(REQUEST_ID_PATTERN.match(offered))
        rid = offered if valid else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = rid
        t0 = time.perf_counter()
        status = 0
        echo = not self.proxy_sets_request_id

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                # where the time went so far (a stream's later hops are not in it): the app, then each hop
                extra = [(b"server-timing", costs.server_timing((time.perf_counter() - t0) * 1000, hops).encode())]
                if echo:
                    extra.append((b"x-request-id", rid.encode("latin-1")))
                if (parent := tracing.traceparent()) is not None:  # the trace this request is in, to look it up
                    extra.append((b"traceparent", parent.encode("latin-1")))
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        received = 0
        path = str(scope.get("path", ""))
        limit = self.body_limits.get(path.rstrip("/") or "/", MAX_BODY_BYTES)

        async def bounded_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > limit:
                raise StarletteHTTPException(413, f"the request body is over {limit} bytes")
            return message

        own = next((s for p, s in self.mounted.items() if path == p or path.startswith(f"{p}/")), None)
        shape = own or error_response
        length = headers.get("content-length", "")
        too_large = own is None and length.isdigit() and int(length) > limit
        with request_context(rid), costs.ledger() as hops:
            try:
                if too_large:  # refused before a byte of it is read
                    err = ApiError("payload_too_large", f"the request body is over {limit} bytes")
                    await shape(err, rid)(scope, receive, send_with_id)
                elif offered and not valid and not echo:
                    err = ApiError("validation_error", "X-Request-ID: 1 to 128 of A-Z a-z 0-9 . _ : -, starting "
                                                            "with a letter or digit (or leave it out)")
                    await shape(err, None)(scope, receive, send_with_id)
                else:
                    await self.app(scope, receive if own else bounded_receive, send_with_id)
            except Exception:
                log.exception("unhandled error in %s %s", scope.get("method"), scope.get("path"))
                if status == 0:  # nothing sent yet: the client still gets a JSON answer
                    err = ApiError("internal_error", "an internal error occurred; it has been logged")
                    await shape(err, rid)(scope, receive, send_with_id)
            finally:
                route = getattr(scope.get("route"), "path", None) or "unmatched"
                self.metrics.request(route, scope.get("method", ""), status or 500, time.perf_counter() - t0)

"""A small OTLP/HTTP trace receiver that keeps what it is sent in memory: for the tests of tracing and for the
benchmark of its cost, where no OpenTelemetry Collector can be installed (its binary is on no package registry
this project installs from).

It speaks the protocol the OTLP exporters speak (``POST /v1/traces``, an ``ExportTraceServiceRequest`` in
protobuf, gzip or not), decoded with the ``opentelemetry-proto`` messages, and answers as a collector does. Point
``OTEL_EXPORTER_OTLP_ENDPOINT`` at :attr:`OtlpReceiver.endpoint`.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

__all__ = ["OtlpReceiver", "ReceivedSpan", "receiving"]

MAX_BODY = 64 * 2**20


@dataclass(frozen=True, slots=True)
class ReceivedSpan:
    """One span as a receiver sees it: ids in hex, as trace viewers and ``traceparent`` write them."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    service: str
    attributes: dict[str, Any] = field(default_factory=dict)
    resource: dict[str, Any] = field(default_factory=dict)
    start_ns: int = 0
    end_ns: int = 0

    @property
    def ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind) if kind is not None else None


def decode(body: bytes) -> list[ReceivedSpan]:
    """The spans of one ``ExportTraceServiceRequest``."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    out = []
    for rs in request.resource_spans:
        resource = {kv.key: _value(kv.value) for kv in rs.resource.attributes}
        service = str(resource.get("service.name", ""))
        for ss in rs.scope_spans:
            for s in ss.spans:
                out.append(ReceivedSpan(
                    trace_id=s.trace_id.hex(), span_id=s.span_id.hex(),
                    parent_id=s.parent_span_id.hex() if s.parent_span_id else None, name=s.name, service=service,
                    attributes={kv.key: _value(kv.value) for kv in s.attributes}, resource=resource,
                    start_ns=s.start_time_unix_nano, end_ns=s.end_time_unix_nano))
    return out


class OtlpReceiver:
    """``POST /v1/traces`` on ``host:port`` (0: a free port), in a thread of its own; :attr:`spans` is what came."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._lock = threading.Lock()
        self._spans: list[ReceivedSpan] = []
        self.requests = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's name
                if self.path.rstrip("/") != "/v1/traces":
                    self.send_error(404)
                    return
                length = int(self.headers.get("Content-Length") or 0)
                if not 0 <= length <= MAX_BODY:
                    self.send_error(413)
                    return
                body = self.rfile.read(length)
                if self.headers.get("Content-Encoding", "").lower() == "gzip":
                    body = gzip.decompress(body)
                try:
                    spans = decode(body)
                except Exception:  # not an ExportTraceServiceRequest
                    self.send_error(400)
                    return
                receiver._add(spans)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:  # http.server's signature
                pass

        self._host = host
        self._server = ThreadingHTTPServer((host, port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-receiver", daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://{self._host}:{self._server.server_port}"

    def _add(self, spans: list[ReceivedSpan]) -> None:
        with self._lock:
            self._spans.extend(spans)
            self.requests += 1

    @property
    def spans(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self._spans)

    def trace(self, trace_id: str) -> list[ReceivedSpan]:
        return [s for s in self.spans if s.trace_id == trace_id]

    def clear(self) -> None:
        with self._lock:
            self._spans.clear()

    def wait_for(self, done: Callable[[list[ReceivedSpan]], bool], *, timeout_s: float = 30.0,
                 poll_s: float = 0.2) -> list[ReceivedSpan]:
        """The spans once ``done(spans)`` holds; raises ``TimeoutError`` with what came when it does not in time."""
        deadline = time.monotonic() + timeout_s
        while True:
            spans = self.spans
            if done(spans):
                return spans
            if time.monotonic() > deadline:
                names = sorted({s.name for s in spans})
                raise TimeoutError(f"{len(spans)} spans after {timeout_s:g} s; names: {names[:40]}")
            time.sleep(poll_s)

    def start(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def receiving(host: str = "127.0.0.1", port: int = 0) -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver(host, port).start()
    try:
        yield receiver
    finally:
        receiver.stop()

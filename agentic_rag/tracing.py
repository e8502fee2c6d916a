"""OpenTelemetry traces: one trace per request, from the door through every deployment to each SQL statement.

Off unless an OTLP endpoint is named by OpenTelemetry's own environment variables
(``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``; ``OTEL_SDK_DISABLED=true`` turns it off
again); then spans go there by OTLP (``OTEL_EXPORTER_OTLP_PROTOCOL``: ``http/protobuf``, the default, or ``grpc``),
sampled at ``RAG_TRACE_RATIO`` of new traces (a request that arrives with a ``traceparent`` follows its caller's
decision). The SDK reads the rest of the standard variables itself (headers, timeout, ``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``, the batch processor's sizes).

Who sets the tracer provider:

- **in-process** (``agentic-rag api``, ``ask``, ``mcp``, ``eval``): :func:`configure`, once per process;
- **under Ray Serve**: Serve itself. Its ``tracing_config`` (which :mod:`agentic_rag.serve.launch` adds to a config
  when tracing is on) makes every replica set a provider with Serve's sampler and the span processors
  :func:`serve_processors` returns. Serve then opens a span around each request a replica handles, from the
  ``traceparent`` a client sent over HTTP or gRPC, and carries the W3C context of the caller's current span in the
  metadata of every handle call (``RequestMetadata.tracing_context``): a span one deployment opens is the parent
  of the spans the deployments it calls open, with no argument of ours on the wire.

Our own spans (:func:`span`): the run, each turn and stage, each model call, each retrieval step, each Qdrant
query and embedding batch. PostgreSQL statements are spans of OpenTelemetry's asyncpg instrumentation, named by
:class:`StatementNames` after what they do ("SELECT trajectories"), and outgoing HTTP (the OpenAI-compatible
backend) of its httpx instrumentation. Span attributes carry ids, counts, names of steps and models, never the
question, the answer or catalog text, unless ``RAG_TRACE_CONTENT`` allows the question; SQL parameters are never
captured.

When tracing is off, :func:`span` is a ``nullcontext``: nothing is created, nothing is attached.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

    from agentic_rag.settings import Settings

__all__ = ["HTTP_TELEMETRY", "SERVE_EXPORTER", "StatementNames", "attached", "carrier", "configure",
           "current_trace_id", "enabled", "endpoint", "on", "serve_processors", "span", "stop", "traceparent"]

TRACER_NAME = "agentic_rag"
SERVICE_NAME = "agentic-rag"
# Serve's tracing_config.exporter_import_path: called (without arguments) in each Serve process that sets tracing up
SERVE_EXPORTER = "agentic_rag.tracing:serve_processors"
_ASYNCPG_SCOPE = "opentelemetry.instrumentation.asyncpg"

_tracer = trace.get_tracer(TRACER_NAME)  # a proxy: it follows the provider set later, ours or Serve's
_on = False  # whether this process exports spans: the one check :func:`span` makes when tracing is off
_lock = threading.Lock()


def endpoint(environ: Mapping[str, str] | None = None) -> str | None:
    """The OTLP endpoint OpenTelemetry's variables name for traces, or None: tracing is off."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if env.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() == "none":
        return None
    url = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    return url.strip() or None if url else None


def enabled() -> bool:
    """Whether this process records and exports spans."""
    return _on


def on() -> None:
    """Mark this process as tracing (its provider is set): :func:`span` opens spans from now on."""
    global _on
    _on = True


def span(name: str, attributes: Mapping[str, Any] | None = None, *,
         kind: SpanKind = SpanKind.INTERNAL) -> AbstractContextManager[Span]:
    """A span named ``name`` around the block, a child of the current one, made current inside it; with tracing
    off, nothing at all (the block gets the invalid span, whose methods do nothing)."""
    if not _on:
        return nullcontext(INVALID_SPAN)
    attrs = {k: v for k, v in (attributes or {}).items() if v is not None}
    return _tracer.start_as_current_span(name, kind=kind, attributes=attrs)


def current_trace_id() -> str | None:
    """The current span's trace id (32 hex digits), when a sampled span is current; else None."""
    ctx = trace.get_current_span().get_span_context()
    if not (ctx.is_valid and ctx.trace_flags.sampled):
        return None
    return format(ctx.trace_id, "032x")


def traceparent() -> str | None:
    """The W3C ``traceparent`` of the current span (for a response header), or None when none is current."""
    return carrier().get("traceparent")


def carrier() -> dict[str, str]:
    """The current W3C context as headers (``traceparent``, ``tracestate``) for a call this process makes by hand
    (the GraphQL backend's gRPC calls to SearchAI); empty when tracing is off."""
    if not _on:
        return {}
    from opentelemetry import propagate

    out: dict[str, str] = {}
    propagate.inject(out)
    return out


# FastAPI's own OpenTelemetry support (its native telemetry, on by default): each request's server span, from the
# caller's traceparent, when a tracer provider is set. Its metrics and log records stay off (Prometheus and the JSON
# logs have them), as do its spans for dependencies and serialization, and the probes are not traced.
_UNTRACED_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


def _probe(scope: MutableMapping[str, Any]) -> bool:
    return str(scope.get("path", "")) in _UNTRACED_PATHS


HTTP_TELEMETRY: dict[str, Any] = {"tracing": True, "metrics": False, "logs": False, "operation_spans": False,
                                  "exclude": _probe}


# -- naming SQL statements -------------------------------------------------------------------------------------------

_LEADING_COMMENT = re.compile(r"^\s*(?:/\*.*?\*/\s*)*", re.S)
_FIRST_WORD = re.compile(r"[A-Za-z]+")
_TARGET = re.compile(r'\b(FROM|INTO|UPDATE|TABLE|JOIN)\s+(?:ONLY\s+)?("(?:[^"]|"")+"|[A-Za-z_][\w.]*)', re.I)
_MAIN_VERB = re.compile(r"\)\s*(SELECT|INSERT|UPDATE|DELETE)\b", re.I)  # after a WITH's last subquery


@functools.lru_cache(maxsize=1024)  # the statements are the code's own, a few hundred texts: each parsed once
def statement_name(sql: str) -> str:
    """What a statement does, as OpenTelemetry names database spans: its operation and the first table it names
    ("SELECT trajectories", "INSERT trajectory_events"), or the operation alone; never its text or values."""
    text = _LEADING_COMMENT.sub("", sql)
    first = _FIRST_WORD.match(text)
    if first is None:
        return "SQL"
    verb = first.group(0).upper()
    if verb == "WITH" and (main := list(_MAIN_VERB.finditer(text))):
        verb = main[-1].group(1).upper()
    for m in _TARGET.finditer(text):
        called = text[m.end():].lstrip().startswith("(")  # FROM unnest($1): a function, not a table
        if not (called and m.group(1).upper() in ("FROM", "JOIN")):
            return f"{verb} {m.group(2).strip(chr(34))}"
    return verb


class StatementNames(SpanProcessor):
    """A span processor that names each asyncpg span after what its statement does (:func:`statement_name`),
    as ``db.query.summary`` too; the asyncpg instrumentation names them by their first word only ("SELECT")."""

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        scope = getattr(span, "instrumentation_scope", None)
        if scope is None or scope.name != _ASYNCPG_SCOPE:
            return
        attributes = getattr(span, "attributes", None) or {}
        sql = attributes.get("db.statement") or attributes.get("db.query.text")
        if isinstance(sql, str):
            name = statement_name(sql)
            span.update_name(name)
            span.set_attribute("db.query.summary", name)


# -- setting it up --------------------------------------------------------------------------------------------------

def _exporter() -> SpanExporter:
    """The OTLP exporter the environment asks for; it reads its endpoint, headers and timeout itself."""
    protocol = (os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
                or "http/protobuf").strip().lower()
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter()
    if protocol != "http/protobuf":
        raise ValueError(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not supported: use http/protobuf or grpc")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def processors(exporter: SpanExporter | None = None) -> list[SpanProcessor]:
    """What a provider of ours runs: statement naming, then export in batches (``exporter``: OTLP by default;
    a test's in-memory exporter is exported at once)."""
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    naming = StatementNames()
    if exporter is not None:
        return [naming, SimpleSpanProcessor(exporter)]
    return [naming, BatchSpanProcessor(_exporter())]


def instrument() -> None:
    """OpenTelemetry's own instrumentations of the libraries we call out with: asyncpg (each statement a span,
    its parameters never captured) and httpx. Idempotent."""
    from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor

    asyncpg = AsyncPGInstrumentor(capture_parameters=False)  # type: ignore[no-untyped-call]
    for instrumentor in (asyncpg, HTTPXClientInstrumentor()):
        if not instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.instrument()


def serve_processors() -> list[SpanProcessor]:
    """Serve's exporter hook (:data:`SERVE_EXPORTER`): called in each replica and proxy that sets tracing up,
    before Serve sets its provider. The process's instrumentations go on with it. A process whose environment names
    no endpoint exports nothing and opens no span of ours (a config that turns tracing on for pods that may or may
    not run a collector: configs/gpu.yaml)."""
    if endpoint() is None:
        return []
    os.environ.setdefault("OTEL_SERVICE_NAME", SERVICE_NAME)  # the provider Serve builds reads it for its resource
    instrument()
    on()
    return processors()


def configure(settings: Settings, *, exporter: SpanExporter | None = None) -> TracerProvider | None:
    """Trace this process when an endpoint is named (or ``exporter`` given): set the global provider (once: a
    second call returns the one set), sampling ``settings.trace_ratio`` of new traces and following a caller's
    decision, and instrument asyncpg and httpx. None when tracing is off."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    if exporter is None and endpoint() is None:
        return None
    with _lock:
        current = trace.get_tracer_provider()
        if isinstance(current, TracerProvider):  # set already (a process configures once; a test's exporter joins)
            if exporter is not None:
                for processor in processors(exporter)[1:]:
                    current.add_span_processor(processor)
            instrument()
            on()
            return current
        resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME") or SERVICE_NAME})
        provider = TracerProvider(resource=resource, sampler=ParentBased(TraceIdRatioBased(settings.trace_ratio)))
        for processor in processors(exporter):
            provider.add_span_processor(processor)
        trace.set_tracer_provider(provider)
        instrument()
        on()
        return provider


def stop() -> None:
    """Stop tracing in this process: export what its provider holds, take the instrumentations off, and open no span
    from now on (the provider stays: OpenTelemetry sets one a process, and flushes it at exit)."""
    global _on
    from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.sdk.trace import TracerProvider

    _on = False
    for instrumentor in (AsyncPGInstrumentor(), HTTPXClientInstrumentor()):  # type: ignore[no-untyped-call]
        if instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.uninstrument()
    provider = trace.get_tracer_provider()
    if isinstance(provider, TracerProvider):
        provider.force_flush()


@contextmanager
def attached(carrier: Mapping[str, str]) -> Iterator[None]:
    """The W3C context in ``carrier`` (``traceparent``/``tracestate``, as headers or gRPC metadata carry them)
    made current inside the block, for a door that no instrumentation or Serve opens a span at."""
    from opentelemetry import context, propagate

    if not _on or not carrier:
        yield
        return
    # over the current context: a carrier without a valid traceparent leaves it as it is
    token = context.attach(propagate.extract(dict(carrier), context=context.get_current()))
    try:
        yield
    finally:
        context.detach(token)

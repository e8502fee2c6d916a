"""Tracing's switches and names (agentic_rag/tracing.py), and the OTLP receiver the tests and the benchmark use."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from agentic_rag import tracing
from agentic_rag.loadtest.otlp import receiving


@pytest.mark.parametrize(("environ", "expected"), [
    ({}, None),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, "http://collector:4318"),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://a:4318/v1/traces", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://b"},
     "http://a:4318/v1/traces"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"}, None),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"}, None),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, None),
])
def test_tracing_is_on_only_where_an_endpoint_is_named(environ: dict[str, str], expected: str | None) -> None:
    assert tracing.endpoint(environ) == expected


@pytest.mark.parametrize(("sql", "name"), [
    ("INSERT INTO trajectories (id, query) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING", "INSERT trajectories"),
    ("  SELECT id, name FROM entity_names n JOIN entities e ON e.id = n.id WHERE n.name = $1", "SELECT entity_names"),
    ("UPDATE trajectories SET status = $1 WHERE id = $2", "UPDATE trajectories"),
    ("DELETE FROM runners r WHERE r.seen_at < now()", "DELETE runners"),
    ("WITH picked AS (SELECT id FROM admission_slots WHERE key = $1) DELETE FROM admission_slots s USING picked",
     "DELETE admission_slots"),
    ('SELECT count(*) FROM "anime"', "SELECT anime"),
    ("SELECT u.id FROM unnest($1::uuid[]) AS u(id) JOIN entities e ON e.id = u.id", "SELECT entities"),
    ("SELECT * FROM unnest($1::text[])", "SELECT"),
    ("/* a note */ SELECT 1", "SELECT"),
    ("SET statement_timeout = 5", "SET"),
    ("", "SQL"),
])
def test_a_statement_is_named_by_what_it_does_never_by_its_values(sql: str, name: str) -> None:
    assert tracing.statement_name(sql) == name


def test_off_a_span_is_nothing() -> None:
    if tracing.enabled():
        pytest.skip("this process traces (an earlier test turned it on)")
    with tracing.span("nothing", {"x": 1}) as span:
        assert not span.is_recording() and not span.get_span_context().is_valid
    assert tracing.traceparent() is None and tracing.current_trace_id() is None and tracing.carrier() == {}


def test_the_receiver_takes_what_the_otlp_exporter_sends() -> None:
    """OpenTelemetry's own OTLP/HTTP exporter against the receiver: parents, names, attributes and resource kept."""
    with receiving() as receiver:
        provider = TracerProvider(resource=Resource.create({"service.name": "probe"}))
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{receiver.endpoint}/v1/traces")))
        tracer = provider.get_tracer("probe")
        with tracer.start_as_current_span("outer", attributes={"n": 3, "tags": ["a", "b"]}) as outer, \
                tracer.start_as_current_span("inner"):
            pass
        provider.shutdown()
        spans = receiver.wait_for(lambda got: len(got) == 2, timeout_s=10)
    by_name = {s.name: s for s in spans}
    assert by_name["inner"].parent_id == by_name["outer"].span_id and by_name["outer"].parent_id is None
    assert by_name["outer"].trace_id == format(outer.get_span_context().trace_id, "032x")
    assert by_name["outer"].attributes == {"n": 3, "tags": ["a", "b"]} and by_name["outer"].service == "probe"
    assert by_name["outer"].ms >= 0

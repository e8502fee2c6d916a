"""Traces in-process: the span tree of a real two-turn run, exported to OpenTelemetry's in-memory exporter, and over
HTTP (uvicorn, FastAPI's own telemetry) a caller's ``traceparent`` honoured and answered.

Everything under the spans is real: PostgreSQL (asyncpg's instrumentation names each statement), Qdrant local
mode, the embedding model, the heuristic planner and validator.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import grpc
import httpx
import pytest
from mcp import Client
from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentic_rag import tracing
from agentic_rag.api.graphql.agent import AgentClient
from agentic_rag.api.grpc.proto import searchai_pb2 as pb
from agentic_rag.api.grpc.proto import searchai_pb2_grpc as pb_grpc
from agentic_rag.api.http.app import create_app
from agentic_rag.api.mcp import create_mcp
from agentic_rag.api.service import LocalAgentService
from agentic_rag.orchestrator.loop import Orchestrator
from agentic_rag.orchestrator.runtime import Runtime
from agentic_rag.settings import Settings
from tests.support.helpers import eid, served

pytestmark = pytest.mark.integration

ONE_PIECE = eid("anime", "one-piece")
QUESTION = "Which anime is Luffy in?"
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.fixture(scope="module")
def exporter(settings: Settings) -> Iterator[InMemorySpanExporter]:
    """This process traced into memory for the module; tracing off again after it."""
    out = InMemorySpanExporter()
    assert tracing.configure(settings, exporter=out) is not None
    try:
        yield out
    finally:
        tracing.stop()
        out.shutdown()


def _tree(spans: tuple[ReadableSpan, ...], trace_id: int) -> tuple[ReadableSpan, dict[int, list[ReadableSpan]]]:
    """The trace's root and each span's children, by span id."""
    mine = [s for s in spans if s.context.trace_id == trace_id]
    children: dict[int, list[ReadableSpan]] = {}
    for s in mine:
        if s.parent is not None:
            children.setdefault(s.parent.span_id, []).append(s)
    roots = [s for s in mine if s.parent is None]
    assert len(roots) == 1, [s.name for s in roots]
    return roots[0], children


def _below(span: ReadableSpan, children: dict[int, list[ReadableSpan]]) -> list[ReadableSpan]:
    out, todo = [], list(children.get(span.context.span_id, []))
    while todo:
        s = todo.pop()
        out.append(s)
        todo.extend(children.get(s.context.span_id, []))
    return out


def _kids(span: ReadableSpan, children: dict[int, list[ReadableSpan]], name: str) -> list[ReadableSpan]:
    return [c for c in children.get(span.context.span_id, []) if c.name == name]


async def test_a_two_turn_run_is_one_trace_of_its_turns_stages_calls_and_statements(
        orchestrator: Orchestrator, exporter: InMemorySpanExporter) -> None:
    exporter.clear()
    result = await orchestrator.run(QUESTION)
    assert result.turns == 2 and ONE_PIECE in {e.id for e in result.response.result_entities}
    spans = exporter.get_finished_spans()
    run = next(s for s in spans if s.name == "run"
               and s.attributes.get("agentic_rag.trajectory_id") == str(result.trajectory_id))
    root, children = _tree(spans, run.context.trace_id)
    assert root is run  # the run is the trace's root in-process: nothing opened a span above it
    assert run.attributes["agentic_rag.status"] == "answered" and run.attributes["agentic_rag.turns"] == 2
    assert run.attributes["agentic_rag.termination"] == "sufficient"

    # the stages before the first turn, then one span a turn, in order
    top = [c.name for c in sorted(children[run.context.span_id], key=lambda s: s.start_time)]
    assert {"link", "rewrite"} <= set(top), top
    turns = sorted(_kids(run, children, "turn"), key=lambda s: s.start_time)
    assert [t.attributes["agentic_rag.turn"] for t in turns] == [1, 2]
    for turn in turns:
        names = {c.name for c in children[turn.context.span_id]}
        assert {"select", "retrieve", "draft", "validate"} <= names, names
        (select,) = _kids(turn, children, "select")
        (model,) = _kids(select, children, "model")  # the model call under its stage, with what it cost
        assert model.attributes["agentic_rag.backend"] == "heuristic" and model.attributes["agentic_rag.attempts"] >= 1
        assert select.attributes["agentic_rag.model"] == "heuristic"
    # each turn's step under its retrieve span: the character first, then its anime, each fetched from Qdrant by
    # the id linking found
    searches = [[s for s in _below(t, children) if s.name == "search"] for t in turns]
    assert [s[0].attributes["agentic_rag.entity_type"] for s in searches] == ["character", "anime"]
    for (search,) in searches:
        assert search.attributes["agentic_rag.rows"] > 0
        (qdrant,) = [s for s in _below(search, children) if s.name.startswith("qdrant.")]
        assert qdrant.attributes["db.collection.name"] and qdrant.attributes["agentic_rag.rows"] > 0

    # every SQL statement is a span (asyncpg's instrumentation; a batch of ours), named by what it does, under the
    # stage that ran it
    sql = [s for s in _below(run, children) if "postgresql" in (s.attributes.get("db.system"),
                                                                 s.attributes.get("db.system.name"))]
    names = {s.name for s in sql}
    assert "INSERT trajectories" in names, names
    assert any(n.startswith("INSERT trajectory_events") for n in names), names
    link = _kids(run, children, "link")[0]
    assert any(s in sql for s in _below(link, children)), "entity linking's statements are under its span"
    assert all("db.statement.parameters" not in s.attributes for s in sql)

    # no question text in any attribute (the trajectory keeps it; the trace keeps ids, counts and names)
    for s in [*_below(run, children), run]:
        for value in s.attributes.values():
            assert "luffy" not in str(value).lower(), (s.name, value)

    # the trajectory names its trace
    traj = await orchestrator.store.get(result.trajectory_id)
    assert traj is not None and traj.trace_id == format(run.context.trace_id, "032x")


async def test_a_search_by_meaning_shows_its_embedding_and_the_question_only_where_a_setting_allows(
        orchestrator: Orchestrator, exporter: InMemorySpanExporter) -> None:
    allowing = Orchestrator(orchestrator.settings.model_copy(update={"trace_content": True}),
                            planner=orchestrator.planner, validator=orchestrator.validator,
                            fallback=orchestrator.fallback, retrieval=orchestrator.retrieval, store=orchestrator.store,
                            policy=orchestrator.policy)
    question = "an anime about a notebook that kills whoever's name is written in it"
    exporter.clear()
    result = await allowing.run(question)
    spans = exporter.get_finished_spans()
    run = next(s for s in spans if s.name == "run")
    assert run.attributes["agentic_rag.question"] == question
    assert run.attributes["agentic_rag.trajectory_id"] == str(result.trajectory_id)
    _, children = _tree(spans, run.context.trace_id)
    below = _below(run, children)
    (embed, *_) = [s for s in below if s.name == "embed"]
    assert embed.attributes["agentic_rag.texts"] >= 1 and embed.attributes["agentic_rag.runtime"] in ("onnx", "torch")
    assert any(s.name == "qdrant.query" for s in below)
    # the setting puts the question on the run's span, nowhere else
    assert not [s.name for s in below for v in s.attributes.values() if "notebook" in str(v)]
    # and as the input guard left it: personal data is redacted there as in the trajectory
    exporter.clear()
    await allowing.run("who directed death note? write to me at jane.doe@example.com")
    (run,) = [s for s in exporter.get_finished_spans() if s.name == "run"]
    said = str(run.attributes["agentic_rag.question"])
    assert said.startswith("who directed death note?") and "jane.doe@example.com" not in said


async def test_over_http_a_caller_s_traceparent_is_honoured_and_answered(
        runtime: Runtime, settings: Settings, exporter: InMemorySpanExporter) -> None:
    exporter.clear()
    app = create_app(LocalAgentService(runtime), settings)  # tracing is on: FastAPI's own telemetry traces it
    async with served(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as http:
        # a client of someone else's: not traced by this process's httpx instrumentation (which would send a
        # traceparent of its own in place of the caller's)
        HTTPXClientInstrumentor.uninstrument_client(http)
        sent = f"00-{CALLER_TRACE}-00f067aa0ba902b7-01"
        reply = await http.post("/v1/search_ai", json={"question": QUESTION}, headers={"traceparent": sent})
        assert reply.status_code == 200, reply.text
        # the response names the trace it ran in: the caller's, with the server's own span
        version, trace_id, span_id, flags = reply.headers["traceparent"].split("-")
        assert (version, trace_id, flags) == ("00", CALLER_TRACE, "01") and span_id != "00f067aa0ba902b7"
        traj = (await http.get(f"/v1/trajectories/{reply.json()['trajectory_id']}")).json()
        assert traj["trace_id"] == CALLER_TRACE
        # without one, a trace of its own, still answered
        alone = await http.post("/v1/search", json={"q": "lufy"})
        assert alone.headers["traceparent"].split("-")[1] != CALLER_TRACE
    spans = [s for s in exporter.get_finished_spans() if format(s.context.trace_id, "032x") == CALLER_TRACE]
    server = [s for s in spans if s.parent is not None and s.parent.is_remote]
    assert len(server) == 1 and server[0].parent is not None and server[0].parent.span_id == 0x00f067aa0ba902b7
    assert {"run", "turn", "select", "model", "search"} <= {s.name for s in spans}


async def test_an_mcp_caller_s_trace_context_in_meta_is_honoured(
        runtime: Runtime, settings: Settings, exporter: InMemorySpanExporter) -> None:
    """Over MCP without headers (the in-memory transport, as stdio), the caller's traceparent comes in the request's
    ``_meta``, and the run joins that trace."""
    exporter.clear()
    caller_trace = "0af7651916cd43dd8448eb211c80319c"
    async with Client(create_mcp(LocalAgentService(runtime), settings, tenant="mcp-trace")) as client:
        result = await client.call_tool("ask", {"question": QUESTION},
                                        meta={"traceparent": f"00-{caller_trace}-b7ad6b7169203331-01"})
        assert not result.is_error, result
        trajectory_id = result.structured_content["trajectory_id"]
        # a malformed one is ignored: the run is traced all the same, as a trace of its own
        other = await client.call_tool("ask", {"question": QUESTION}, meta={"traceparent": "not-a-traceparent"})
        assert not other.is_error
    runs = {str(s.attributes["agentic_rag.trajectory_id"]): s for s in exporter.get_finished_spans()
            if s.name == "run"}
    assert format(runs[trajectory_id].context.trace_id, "032x") == caller_trace
    assert runs[trajectory_id].parent is not None and runs[trajectory_id].parent.span_id == 0xb7ad6b7169203331
    assert {format(s.context.trace_id, "032x") for s in runs.values()} - {caller_trace}
    traj = await runtime.store.get(uuid.UUID(trajectory_id))
    assert traj is not None and traj.trace_id == caller_trace


async def test_the_graphql_backend_carries_the_trace_into_its_grpc_calls(exporter: InMemorySpanExporter) -> None:
    """The GraphQL backend asks SearchAI over gRPC: the call's metadata carries the current trace context, which
    Serve's gRPC ingress (or any OpenTelemetry server) continues."""
    seen: list[dict[str, str]] = []

    class Recording(pb_grpc.SearchAIServicer):  # type: ignore[misc]  # generated, untyped
        async def Ask(self, request: pb.AskRequest, context: grpc.aio.ServicerContext) -> pb.AskReply:
            seen.append({k: v for k, v in context.invocation_metadata() if isinstance(v, str)})
            return pb.AskReply(answer="ok")

    server = grpc.aio.server()
    pb_grpc.add_SearchAIServicer_to_server(Recording(), server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            client = AgentClient(channel, application="agentic_rag", timeout_s=10)
            with tracing.span("graphql") as span:
                await client.ask("q", pb.MODE_AGENTIC, tenant="t", request_id="r", credentials=[])
    finally:
        await server.stop(None)
    ctx = span.get_span_context()
    assert seen[0]["traceparent"] == f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"
    assert seen[0]["application"] == "agentic_rag"

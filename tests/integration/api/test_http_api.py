"""The HTTP API end to end: a real service (PostgreSQL, Qdrant local mode, the embedder, the loop) behind the app.

Requests go through ``httpx.ASGITransport``; the streaming-disconnect test runs uvicorn on a free port,
because only a real connection can be dropped half way. Slow runs are real runs held at a gate
(an ``asyncio.Event``) by a thin wrapper around the service: nothing of ours is mocked.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import openai
import pytest
import uvicorn
from fastapi import FastAPI

from agentic_rag.api.http.app import create_app
from agentic_rag.api.openai import MAX_BODY_BYTES as MAX_ROUTE_BODY
from agentic_rag.api.service import LocalAgentService
from agentic_rag.models.base import CallShape, StructuredGenerator, schema_for
from agentic_rag.models.openai_backend import OpenAIBackend, response_format
from agentic_rag.orchestrator.runtime import Runtime, build_orchestrator
from agentic_rag.orchestrator.sweep import sweep_abandoned
from agentic_rag.planners.llm.prompts import render
from agentic_rag.protocol import EntityRef, GradeReport, NextStep, QueryRewrite
from agentic_rag.protocol.roles import CardEntity, GradeInput, GradeItem, RewriteInput, SelectInput
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import make_pool
from agentic_rag.storage.sql import Pool
from tests.support.gated import GatedService
from tests.support.helpers import client_for, eid

pytestmark = pytest.mark.integration


LUFFY, NAMI, ONE_PIECE = eid("character", "monkey-d-luffy"), eid("character", "nami"), eid("anime", "one-piece")


@pytest.fixture(scope="module")
def service(runtime: Runtime) -> LocalAgentService:
    return LocalAgentService(runtime)


@pytest.fixture(scope="module")
def app(service: LocalAgentService, settings: Settings) -> FastAPI:
    return create_app(service, settings)


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(app) as c:
        yield c


def sse_events(text: str) -> list[tuple[str, str]]:
    """(event, data) pairs of a server-sent event stream; comments (pings) are skipped."""
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, list[str]] = {}
        for line in block.split("\n"):
            if line and not line.startswith(":"):
                name, _, value = line.partition(":")
                fields.setdefault(name, []).append(value.removeprefix(" "))
        if fields:
            out.append((fields.get("event", ["message"])[0], "\n".join(fields.get("data", []))))
    return out


def assert_error(resp: httpx.Response, status: int, type_: str | None = None) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    error = resp.json()["error"]
    assert set(error) >= {"type", "message", "request_id"}
    assert error["request_id"] == resp.headers["x-request-id"]
    if type_ is not None:
        assert error["type"] == type_
    assert "Traceback" not in resp.text
    return dict(error)


# -- the lanes ---------------------------------------------------------------------------------------


async def test_typeahead_finds_luffy_from_a_typo(client: httpx.AsyncClient) -> None:
    resp = await client.post("/v1/search", json={"q": "lufy", "types": ["character"], "limit": 5})
    assert resp.status_code == 200, resp.text
    hits = resp.json()["hits"]
    assert hits[0]["entity"] == {"entity_type": "character", "id": LUFFY}
    assert hits[0]["match"] == "fuzzy"
    assert resp.headers["x-request-id"]


async def test_search_ai_answers_which_anime_luffy_is_in(client: httpx.AsyncClient) -> None:
    resp = await client.post("/v1/search_ai", json={"question": "Which anime is Luffy in?"},
                             headers={"X-Request-ID": "req-luffy-1"})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["status"] == "answered" and body["response"]["status"] == "answered"
    assert ONE_PIECE in {e["id"] for e in body["response"]["result_entities"]}
    assert body["request_id"] == "req-luffy-1" == resp.headers["x-request-id"]
    assert body["turns"] >= 1 and body["latency_ms"] > 0 and body["timings"]["qdrant_ms"] > 0
    uuid.UUID(body["trajectory_id"])


async def test_search_ai_relation_comes_with_paths(client: httpx.AsyncClient) -> None:
    resp = await client.post("/v1/search_ai", json={"question": "How is Luffy related to Nami?"})
    assert resp.status_code == 200, resp.text
    r = resp.json()["response"]
    assert {e["id"] for e in r["result_entities"]} == {LUFFY, NAMI}
    assert r["evidence"]["paths"], "the relation chain is in evidence.paths"


async def test_a_conversation_over_http(client: httpx.AsyncClient) -> None:
    first = await client.post("/v1/search_ai", json={"question": "who directed Death Note?"})
    assert first.status_code == 200, first.text
    conversation = first.json()["conversation_id"]
    assert first.json()["turn"] == 1
    follow = await client.post("/v1/query", json={"question": "what else did he direct?",
                                                  "conversation_id": conversation})
    assert follow.status_code == 200, follow.text
    assert follow.json()["turn"] == 2 and "Attack on Titan" in follow.json()["response"]["answer"]
    # the SSE stream carries the conversation too, in its final event
    streamed = await client.post("/v1/search_ai", json={"question": "is it finished?", "conversation_id":
                                                        conversation, "stream": True})
    final = json.loads([data for event, data in sse_events(streamed.text) if event == "response"][-1])
    assert final["conversation_id"] == conversation and final["turn"] == 3
    listed = await client.get(f"/v1/conversations/{conversation}")
    assert listed.status_code == 200, listed.text
    turns = listed.json()["turns"]
    assert [t["question"] for t in turns] == ["who directed Death Note?", "what else did he direct?",
                                              "is it finished?"]
    assert turns[1]["standalone"] == "what else did Tetsurō Araki direct?"
    # another tenant sees nothing, and cannot follow it up
    assert_error(await client.get(f"/v1/conversations/{conversation}", headers={"X-Tenant": "other"}), 404,
                 "not_found")
    assert_error(await client.post("/v1/search_ai", json={"question": "and its manga?", "conversation_id":
                                                          conversation}, headers={"X-Tenant": "other"}), 404)
    # forgotten: gone for its tenant, and a follow-up is a 404
    assert (await client.delete(f"/v1/conversations/{conversation}")).status_code == 204
    assert_error(await client.get(f"/v1/conversations/{conversation}"), 404)
    assert_error(await client.delete(f"/v1/conversations/{conversation}"), 404)
    assert_error(await client.post("/v1/search_ai", json={"question": "and its manga?", "conversation_id":
                                                          conversation}), 404)


async def test_bad_conversation_ids_are_clear_4xx(client: httpx.AsyncClient) -> None:
    assert_error(await client.post("/v1/search_ai", json={"question": "is it finished?",
                                                          "conversation_id": "not-a-uuid"}), 422)
    assert_error(await client.post("/v1/search_ai", json={"question": "is it finished?",
                                                          "conversation_id": str(uuid.uuid4())}), 404, "not_found")
    assert_error(await client.get("/v1/conversations/not-a-uuid"), 422)


async def test_query_lists_the_executed_steps(client: httpx.AsyncClient) -> None:
    resp = await client.post("/v1/query", json={"question": "Which anime is Luffy in?"})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    plan = body["plan"]
    assert [s["action"] for s in plan] == ["qdrant_search", "qdrant_search"]
    assert [s["turn"] for s in plan] == [0, 1]
    assert "character ids" in plan[0]["intent"] and "anime ids" in plan[1]["intent"]
    assert ONE_PIECE in {e["id"] for e in body["response"]["result_entities"]}


async def test_linear_mode(client: httpx.AsyncClient) -> None:
    resp = await client.post("/v1/search_ai", json={"question": "Which anime is Luffy in?", "mode": "linear"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["mode"] == "linear"
    assert resp.json()["response"]["evidence"]["termination_reason"] == "linear"


async def test_a_request_may_lower_its_runs_budget_but_not_raise_it(client: httpx.AsyncClient,
                                                                     settings: Settings) -> None:
    # the question takes two turns (find Luffy, then his anime): a budget of one ends it at the limit
    resp = await client.post("/v1/search_ai", json={"question": "Which anime is Luffy in?",
                                                     "budget": {"max_turns": 1}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["response"]["evidence"]["termination_reason"] == "max_turns"
    over = settings.agent_max_turns + 1
    resp = await client.post("/v1/search_ai", json={"question": "Which anime is Luffy in?",
                                                     "budget": {"max_turns": over}})
    assert resp.status_code == 422, resp.text
    error = resp.json()["error"]
    assert error["type"] == "validation_error"
    # refused by the body's schema, which carries this server's limit (the OpenAPI states it)
    assert f"max_turns: Input should be less than or equal to {settings.agent_max_turns}" in error["message"]
    resp = await client.post("/v1/search_ai", json={"question": "Which anime is Luffy in?",
                                                     "budget": {"max_turns": 0, "tokens": 5}})
    assert resp.status_code == 422 and {tuple(d["loc"][-1:]) for d in resp.json()["error"]["details"]} == {
        ("max_turns",), ("tokens",)}


async def test_grpc_ask_may_lower_its_runs_budget_but_not_raise_it(service: LocalAgentService,
                                                                  settings: Settings) -> None:
    import grpc

    from agentic_rag.api.grpc.proto import searchai_pb2 as pb
    from agentic_rag.api.grpc.proto import searchai_pb2_grpc as pb_grpc
    from agentic_rag.api.grpc.service import SearchAIApi, SearchAIServicer

    server = grpc.aio.server()
    servicer = SearchAIServicer(SearchAIApi(service, settings))
    pb_grpc.add_SearchAIServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]  # generated, untyped
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.SearchAIStub(channel)  # type: ignore[no-untyped-call]
            reply = await stub.Ask(pb.AskRequest(question="Which anime is Luffy in?", budget=pb.RunBudget(max_turns=1)))
            assert reply.evidence.termination_reason == "max_turns" and reply.turns == 1
            over = settings.agent_max_turns + 1
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.Ask(pb.AskRequest(question="Which anime is Luffy in?",
                                             budget=pb.RunBudget(max_turns=over)))
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            details = refused.value.details() or ""
            assert f"max_turns {over} is over this server's {settings.agent_max_turns}" in details
    finally:
        await server.stop(None)


# -- streaming ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["body", "accept"])
async def test_streamed_run_sends_events_in_order_then_the_response(client: httpx.AsyncClient, how: str) -> None:
    if how == "body":
        resp = await client.post("/v1/query", json={"question": "How is Luffy related to Nami?", "stream": True})
    else:
        resp = await client.post("/v1/query", json={"question": "How is Luffy related to Nami?"},
                                 headers={"Accept": "text/event-stream"})
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/event-stream")
    events = sse_events(resp.text)
    kinds = [k for k, _ in events]
    assert kinds[-2:] == ["response", "end"] and set(kinds[:-2]) == {"trajectory"}
    trajectory = [json.loads(d) for k, d in events if k == "trajectory"]
    assert [e["seq"] for e in trajectory] == list(range(1, len(trajectory) + 1))
    assert trajectory[-1]["stage"] == "final"
    body = json.loads(events[-2][1])
    assert {e["id"] for e in body["response"]["result_entities"]} == {LUFFY, NAMI}
    assert body["plan"], "the /query body carries its plan in the stream too"
    # the stream is the trajectory: the same events are stored
    stored = (await client.get(f"/v1/trajectories/{body['trajectory_id']}")).json()["events"]
    assert [(e["seq"], e["stage"], e["type"]) for e in stored] == \
           [(e["seq"], e["stage"], e["type"]) for e in trajectory]


@pytest.mark.parametrize("stream", [True, False])
async def test_a_client_that_disconnects_cancels_its_run(runtime: Runtime, settings: Settings, stream: bool) -> None:
    service = GatedService(runtime, hold_after=2)
    app = create_app(service, settings)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    serving = asyncio.create_task(server.serve())
    request_id = f"req-walks-away-{stream}"
    body = {"question": "Which anime is Luffy in?", "stream": stream}
    try:
        while not server.started:  # noqa: ASYNC110 (uvicorn has a flag for this, not an event)
            await asyncio.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            if stream:
                seen: list[dict[str, Any]] = []
                async with http.stream("POST", "/v1/search_ai", json=body,
                                       headers={"X-Request-ID": request_id}) as resp:
                    assert resp.status_code == 200
                    async for line in resp.aiter_lines():
                        if line.startswith("data:"):
                            seen.append(json.loads(line.removeprefix("data:")))
                        if len(seen) == 2:
                            break  # leaving the block closes the connection half way through the run
                assert [e["seq"] for e in seen] == [1, 2]
            else:
                with pytest.raises(httpx.ReadTimeout):  # the client gives up and hangs up
                    await http.post("/v1/search_ai", json=body, headers={"X-Request-ID": request_id}, timeout=1)
        async with asyncio.timeout(15):
            await service.cancelled.wait()
            while True:  # the orchestrator records the cancellation in the trajectory
                traj = await runtime.store.by_request_id(request_id)
                if traj is not None and traj.status == "cancelled":
                    break
                await asyncio.sleep(0.05)
            while True:  # and its slot is given back
                if "agentic_rag_runs_in_flight 0.0" in await http_get_metrics(app):
                    break
                await asyncio.sleep(0.05)
        assert traj.events[-1].type == "error" and traj.events[-1].payload["status"] == "cancelled"
    finally:
        service.gate.set()
        server.should_exit = True
        await serving


async def http_get_metrics(app: FastAPI) -> str:
    async with client_for(app) as c:
        return (await c.get("/metrics")).text


# -- clarification and trajectories ------------------------------------------------------------------


async def test_clarification_round_trip(client: httpx.AsyncClient) -> None:
    asked = (await client.post("/v1/search_ai", json={"question": "Tell me about Naruto"})).json()
    assert asked["status"] == "needs_clarification"
    choices = asked["response"]["clarification"]["choices"]
    index = next(i for i, c in enumerate(choices) if c["entity"]["entity_type"] == "character")
    tid = asked["trajectory_id"]

    not_offered = await client.post(f"/v1/search_ai/{tid}/clarify", json={"choice": 9})
    assert "not one of the offered choices" in assert_error(not_offered, 422, "invalid_choice")["message"]
    stranger = await client.post(f"/v1/search_ai/{tid}/clarify", json={"choice": index},
                                 headers={"X-Tenant": "someone-else"})
    assert_error(stranger, 404, "not_found")

    done = await client.post(f"/v1/search_ai/{tid}/clarify", json={"choice": index})
    assert done.status_code == 200, done.text
    body = done.json()
    assert body["trajectory_id"] == tid and body["status"] == "answered"
    assert choices[index]["entity"] in body["response"]["result_entities"]

    again = await client.post(f"/v1/search_ai/{tid}/clarify", json={"choice": index})
    assert_error(again, 409, "conflict")
    unknown = await client.post(f"/v1/search_ai/{uuid.uuid4()}/clarify", json={"choice": 0})
    assert_error(unknown, 404, "not_found")


async def test_concurrent_clarifications_resolve_exactly_once(client: httpx.AsyncClient, runtime: Runtime) -> None:
    asked = (await client.post("/v1/search_ai", json={"question": "Tell me about Naruto"})).json()
    tid = asked["trajectory_id"]
    replies = await asyncio.gather(*(client.post(f"/v1/search_ai/{tid}/clarify", json={"choice": i % 3})
                                     for i in range(8)))
    assert sorted(r.status_code for r in replies) == [200] + [409] * 7, [r.text for r in replies]
    for r in replies:
        if r.status_code == 409:
            assert "not waiting for a clarification" in assert_error(r, 409, "conflict")["message"]
    traj = await runtime.store.get(uuid.UUID(tid))
    assert traj is not None and len([e for e in traj.events if "chosen" in e.payload]) == 1


async def test_an_abandoned_run_reads_as_such_and_cannot_be_resumed(client: httpx.AsyncClient, runtime: Runtime,
                                                                    pool: Pool) -> None:
    rec = await runtime.store.start(query="Tell me about Naruto", request_id="req-crashed")
    async with pool.acquire() as conn:  # its replica died ten minutes ago
        await conn.execute("UPDATE trajectories SET updated_at = now() - interval '10 minutes' WHERE id = $1",
                           rec.trajectory_id)
    sweeper = asyncio.create_task(sweep_abandoned(runtime.store, runtime.settings))  # as an orchestrator starts it
    try:
        for _ in range(200):  # its first pass runs at once
            read = (await client.get(f"/v1/trajectories/{rec.trajectory_id}")).json()
            if read["status"] != "running":
                break
            await asyncio.sleep(0.05)
    finally:
        sweeper.cancel()
    assert read["status"] == "abandoned" and read["finished_at"] is not None
    resp = await client.post(f"/v1/search_ai/{rec.trajectory_id}/clarify", json={"choice": 0})
    assert "it was abandoned" in assert_error(resp, 409, "conflict")["message"]


async def test_clarify_by_entity_id(client: httpx.AsyncClient) -> None:
    asked = (await client.post("/v1/search_ai", json={"question": "Tell me about Naruto"})).json()
    character = next(c["entity"] for c in asked["response"]["clarification"]["choices"]
                     if c["entity"]["entity_type"] == "character")
    done = await client.post(f"/v1/search_ai/{asked['trajectory_id']}/clarify",
                             json={"choice": character["id"].upper()})  # ids compare case-insensitively
    assert done.status_code == 200, done.text
    assert character in done.json()["response"]["result_entities"]


async def test_a_trajectory_is_read_back_by_its_own_tenant_only(client: httpx.AsyncClient) -> None:
    tenant = {"X-Tenant": "team_a"}
    run = (await client.post("/v1/search_ai", json={"question": "Which anime is Luffy in?"}, headers=tenant)).json()
    resp = await client.get(f"/v1/trajectories/{run['trajectory_id']}", headers=tenant)
    assert resp.status_code == 200, resp.text
    traj = resp.json()
    assert traj["tenant"] == "team_a" and traj["status"] == "answered" and traj["request_id"] == run["request_id"]
    assert [e["seq"] for e in traj["events"]] == list(range(1, len(traj["events"]) + 1))
    assert traj["final_response"]["answer"] == run["response"]["answer"]
    for other in ({"X-Tenant": "team_b"}, {}):
        assert_error(await client.get(f"/v1/trajectories/{run['trajectory_id']}", headers=other), 404, "not_found")
    assert_error(await client.get("/v1/trajectories/x", headers={"X-Tenant": "no spaces!"}), 422)


async def test_entities_are_hydrated_in_the_order_asked(client: httpx.AsyncClient) -> None:
    missing = str(uuid.uuid4())
    resp = await client.get("/v1/entities", params={"ids": f"anime:{ONE_PIECE},character:{LUFFY}",
                                                    "ref": [f"character:{NAMI}", f"anime:{missing}"]})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert [e["id"] for e in body["entities"]] == [ONE_PIECE, LUFFY, NAMI]
    assert body["entities"][0]["name"] == "One Piece" and "studios" in body["entities"][0]
    assert body["missing"] == [{"entity_type": "anime", "id": missing}]
    too_many = ",".join(f"anime:{uuid.uuid4()}" for _ in range(101))
    assert_error(await client.get("/v1/entities", params={"ids": too_many}), 422)
    assert_error(await client.get("/v1/entities", params={"ids": "robot:123"}), 422, "validation_error")
    # none asked, none answered: both parameters are optional (the schema says so, and schemathesis holds us to it)
    assert (await client.get("/v1/entities")).json() == {"entities": [], "missing": []}
    assert_error(await client.get("/v1/entities", params={"ref": [f"anime:{uuid.uuid4()}"] * 101}), 422)


# -- operations --------------------------------------------------------------------------------------


async def test_probes(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json() == {"ready": True, "checks": {"postgres": True, "qdrant": True, "models": True}}


async def test_metrics_show_the_run(service: LocalAgentService, settings: Settings) -> None:
    async with client_for(create_app(service, settings)) as c:
        assert (await c.post("/v1/search_ai", json={"question": "Which anime is Luffy in?"})).status_code == 200
        assert (await c.post("/v1/search_ai", json={"question": ""})).status_code == 422
        text = (await c.get("/metrics")).text
    assert 'agentic_rag_runs_total{mode="agentic",status="answered"} 1.0' in text
    assert 'agentic_rag_run_stage_duration_seconds_count{stage="total"} 1.0' in text
    assert 'agentic_rag_run_stage_duration_seconds_count{stage="qdrant"} 1.0' in text
    assert 'agentic_rag_run_stage_duration_seconds_bucket{le="+Inf",stage="planner_llm"} 1.0' in text
    assert 'agentic_rag_run_turns_count 1.0' in text
    assert 'agentic_rag_runs_in_flight 0.0' in text
    assert 'agentic_rag_http_requests_total{method="POST",route="/v1/search_ai",status="200"} 1.0' in text
    assert 'agentic_rag_http_requests_total{method="POST",route="/v1/search_ai",status="422"} 1.0' in text
    assert 'agentic_rag_http_request_duration_seconds_count{method="POST",route="/v1/search_ai"} 2.0' in text


@pytest.mark.parametrize(("method", "path", "body", "status"), [
    ("POST", "/v1/search_ai", {"question": ""}, 422),
    ("POST", "/v1/search_ai", {"question": "   "}, 422),
    ("POST", "/v1/search_ai", {"question": "x" * 5000}, 422),
    ("POST", "/v1/search_ai", {"question": "Who is Luffy?", "mode": "psychic"}, 422),
    ("POST", "/v1/search_ai", {"question": "Who is\x00 Luffy?"}, 422),
    ("POST", "/v1/search_ai", {"question": "Who is Luffy?", "extra": 1}, 422),
    ("POST", "/v1/search_ai", ["not", "an", "object"], 422),
    ("POST", "/v1/search_ai", None, 422),
    ("POST", "/v1/search", {"q": ""}, 422),
    ("POST", "/v1/search", {"q": "luffy", "limit": 0}, 422),
    ("POST", "/v1/search", {"q": "luffy", "types": ["robot"]}, 422),
    # strict types: nothing is read as what it might mean
    ("POST", "/v1/search", {"q": "luffy", "limit": "10"}, 422),
    ("POST", "/v1/search", {"q": "luffy", "limit": True}, 422),
    ("POST", "/v1/search", {"q": "luffy", "limit": 10.5}, 422),
    ("POST", "/v1/search_ai", {"question": "Who is Luffy?", "stream": "yes"}, 422),
    ("POST", "/v1/search_ai", {"question": "Who is Luffy?", "stream": 1}, 422),
    ("POST", f"/v1/search_ai/{uuid.uuid4()}/clarify", {"choice": 0, "stream": "true"}, 422),
    ("POST", f"/v1/search_ai/{uuid.uuid4()}/clarify", {"choice": True}, 422),
    ("POST", "/v1/search_ai/not-a-uuid/clarify", {"choice": 0}, 422),
    ("POST", f"/v1/search_ai/{uuid.uuid4()}/clarify", {"choice": -1}, 422),
    ("POST", f"/v1/search_ai/{uuid.uuid4()}/clarify", {"choice": "Naruto"}, 422),
    ("GET", "/v1/trajectories/not-a-uuid", None, 422),
    ("GET", f"/v1/trajectories/{uuid.uuid4()}", None, 404),
    ("GET", "/v1/nowhere", None, 404),
    ("GET", "/v1/search_ai", None, 405),
])
async def test_bad_input_gets_a_json_4xx(client: httpx.AsyncClient, method: str, path: str, body: Any,
                                         status: int) -> None:
    resp = await client.request(method, path, json=body)
    assert_error(resp, status)


async def test_what_the_schema_calls_valid_is_taken(client: httpx.AsyncClient, settings: Settings) -> None:
    """Cases schemathesis found where the published schema and the server disagreed (issue 40), each now agreeing:
    an integral number written with a fraction is the integer JSON Schema says it is; no references asked, none
    answered; a question of control characters only is refused by the guard (a blocked answer), not a 500; a
    405's Allow names every method of the path."""
    assert (await client.post("/v1/search", json={"q": "luffy", "limit": 2.0})).status_code == 200
    assert (await client.post(f"/v1/search_ai/{uuid.uuid4()}/clarify", json={"choice": 1.0})).status_code == 404
    assert (await client.get("/v1/entities")).json() == {"entities": [], "missing": []}
    blocked = await client.post("/v1/search_ai", json={"question": "\u0004\u200b", "mode": "linear"})
    assert blocked.status_code == 200 and blocked.json()["status"] == "blocked", blocked.text
    options = await client.options(f"/v1/conversations/{uuid.uuid4()}")
    assert options.status_code == 405 and options.headers["allow"] == "DELETE, GET"
    # the budget's ceilings are the server's, in the schema too
    schema = (await client.get("/openapi.json")).json()["components"]["schemas"]
    turns = schema["RunBudget"]["properties"]["max_turns"]["anyOf"][0]
    assert turns["maximum"] == settings.agent_max_turns


async def test_malformed_or_huge_bodies(client: httpx.AsyncClient) -> None:
    headers = {"content-type": "application/json"}
    assert_error(await client.post("/v1/search_ai", content=b'{"question": "Luffy', headers=headers), 400,
                 "invalid_json")
    assert_error(await client.post("/v1/search_ai", content=b"\xff\xfe", headers=headers), 400)
    # a lone surrogate is valid JSON but not storable text
    assert_error(await client.post("/v1/search_ai", content=b'{"question": "\\ud800 Luffy"}', headers=headers), 422)
    huge = json.dumps({"question": "x" * 100_000}).encode()
    assert_error(await client.post("/v1/search_ai", content=huge, headers=headers), 413, "payload_too_large")


# issue 15's corpus: strings that must only ever be data, in every field, header and path a client controls
HOSTILE = ["'; DROP TABLE anime; --", "luffy') UNION SELECT id FROM person --", "%' AND pg_sleep(10) IS NULL --",
           "{{7*7}} ${jndi:ldap://x/a}", "../../etc/passwd", "<script>alert(1)</script>", "\u202e\ufeff 🏴‍☠️"]


async def test_hostile_input_in_every_field_is_data_or_a_4xx(client: httpx.AsyncClient) -> None:
    headers = {"content-type": "application/json"}
    # 1000-deep JSON: a body that cannot be parsed (the parser's recursion limit), not a 500
    deep = b'{"question": ' + b"[" * 1000 + b"]" * 1000 + b"}"
    assert_error(await client.post("/v1/search_ai", content=deep, headers=headers), 400)
    for limit in (10**12, -(2**63), 51):
        assert_error(await client.post("/v1/search", json={"q": "luffy", "limit": limit}), 422)
    assert_error(await client.post("/v1/search", json={"q": "luffy", "types": ["anime"] * 1000}), 422)
    for text in HOSTILE:
        hits = await client.post("/v1/search", json={"q": text[:100]})
        assert hits.status_code == 200, hits.text
        ran = await client.post("/v1/search_ai", json={"question": text}, headers={"X-Request-ID": "hostile-1"})
        assert ran.status_code == 200 and "Traceback" not in ran.text, ran.text
        # header values go as raw bytes (UTF-8), as a hostile client sends them
        assert_error(await client.get(f"/v1/trajectories/{uuid.uuid4()}", headers={b"X-Tenant": text.encode()}), 422)
        replaced = await client.post("/v1/search", json={"q": "luffy"}, headers={b"X-Request-ID": text.encode()})
        assert replaced.status_code == 200 and len(replaced.headers["x-request-id"]) == 32
        assert (await client.get(f"/v1/trajectories/{text}")).status_code in (404, 422)
    assert (await client.post("/v1/search", json={"q": "luffy"})).json()["hits"], "the catalog is intact"


async def test_a_bad_request_id_is_replaced(client: httpx.AsyncClient) -> None:
    resp = await client.post("/v1/search", json={"q": "luffy"}, headers={"X-Request-ID": "no spaces allowed"})
    assert resp.status_code == 200 and resp.headers["x-request-id"] != "no spaces allowed"
    assert len(resp.headers["x-request-id"]) == 32
    assert len(resp.headers.get_list("x-request-id")) == 1


async def test_strict_types_say_what_was_expected(client: httpx.AsyncClient) -> None:
    resp = await client.post("/v1/search_ai", json={"question": "Who is Luffy?", "stream": "yes"})
    assert "stream: Input should be a valid boolean" in assert_error(resp, 422, "validation_error")["message"]
    resp = await client.post("/v1/search", json={"q": "luffy", "limit": "10"})
    assert "limit: Input should be a valid integer" in assert_error(resp, 422, "validation_error")["message"]


async def test_behind_a_proxy_that_sets_the_request_id_the_app_adds_none(service: LocalAgentService,
                                                                         settings: Settings) -> None:
    proxied = create_app(service, settings, proxy_sets_request_id=True)
    async with client_for(proxied) as c:
        # Ray Serve's proxy passes its id in (the client's, or one of its own) and echoes it on the response
        resp = await c.post("/v1/search_ai", json={"question": "Which anime is Luffy in?"},
                            headers={"X-Request-ID": "from-the-proxy-1"})
        assert resp.status_code == 200, resp.text
        assert "x-request-id" not in resp.headers and resp.json()["request_id"] == "from-the-proxy-1"
        bad = await c.post("/v1/search", json={"q": "luffy"}, headers={"X-Request-ID": "no spaces allowed"})
        assert bad.status_code == 422 and "x-request-id" not in bad.headers
        assert bad.json()["error"]["message"].startswith("X-Request-ID: 1 to 128 of")


async def test_api_keys_are_enforced_when_configured(service: LocalAgentService, settings: Settings) -> None:
    keyed = create_app(service, settings.model_copy(update={"api_keys": ["k-one", "k-two"]}))
    async with client_for(keyed) as c:
        missing = await c.post("/v1/search", json={"q": "luffy"})
        assert_error(missing, 401, "unauthorized")
        assert missing.headers["www-authenticate"] == "Bearer"
        assert_error(await c.post("/v1/search", json={"q": "luffy"}, headers={"Authorization": "Bearer nope"}), 401)
        assert_error(await c.get(f"/v1/trajectories/{uuid.uuid4()}", headers={"X-API-Key": "k-on"}), 401)
        ok = await c.post("/v1/search", json={"q": "luffy"}, headers={"Authorization": "Bearer k-two"})
        assert ok.status_code == 200
        ok = await c.post("/v1/search", json={"q": "luffy"}, headers={"X-API-Key": "k-one"})
        assert ok.status_code == 200
        assert (await c.get("/healthz")).status_code == 200, "probes stay open"
        schema = (await c.get("/openapi.json")).json()
        assert {"HTTPBearer", "APIKeyHeader"} <= set(schema["components"]["securitySchemes"])
    async with client_for(create_app(service, settings)) as c:
        assert (await c.post("/v1/search", json={"q": "luffy"})).status_code == 200, "no keys configured: open"


async def test_overload_is_refused_at_once_with_retry_after(runtime: Runtime, settings: Settings) -> None:
    service = GatedService(runtime)
    async with client_for(create_app(service, settings.model_copy(update={"max_inflight_runs": 1}))) as c:
        first = asyncio.create_task(c.post("/v1/search_ai", json={"question": "Which anime is Luffy in?"}))
        await asyncio.wait_for(service.entered.wait(), 10)
        async with asyncio.timeout(5):  # refused, not queued
            second = await c.post("/v1/search_ai", json={"question": "Who is Nami?"})
            streamed = await c.post("/v1/search_ai", json={"question": "Who is Nami?", "stream": True})
        for refused in (second, streamed):
            assert_error(refused, 503, "overloaded")
            assert refused.headers["retry-after"] == "1"
        assert (await c.post("/v1/search", json={"q": "nami"})).status_code == 200, "typeahead is not limited"
        service.gate.set()
        assert (await first).status_code == 200
        assert (await c.post("/v1/search_ai", json={"question": "Who is Nami?"})).status_code == 200, "slot freed"
        assert "agentic_rag_runs_in_flight 0.0" in (await c.get("/metrics")).text


async def test_an_unreachable_store_is_a_503_with_retry_after(runtime: Runtime, settings: Settings) -> None:
    dead = await make_pool("host=127.0.0.1 port=1 connect_timeout=1",
                           settings.model_copy(update={"pool_min_size": 0, "pool_max_size": 1}))
    try:
        fast = settings.model_copy(update={"retry_attempts": 1, "query_timeout_ms": 1000})
        orchestrator, store = build_orchestrator(fast, dead, runtime.qdrant, runtime.embedder)
        down = LocalAgentService(Runtime(fast, dead, runtime.qdrant, runtime.embedder, store, orchestrator))
        async with client_for(create_app(down, fast)) as c:
            for resp in (await c.post("/v1/search_ai", json={"question": "Which anime is Luffy in?"}),
                         await c.post("/v1/search_ai", json={"question": "Which anime is Luffy in?", "stream": True}),
                         await c.post("/v1/search", json={"q": "luffy"}),
                         await c.get(f"/v1/trajectories/{uuid.uuid4()}")):
                error = assert_error(resp, 503, "unavailable")
                assert resp.headers["retry-after"] == "1" and "port=1" not in error["message"]
            ready = await c.get("/readyz")
            assert ready.status_code == 503
            assert ready.json()["checks"] == {"postgres": False, "qdrant": True, "models": True}
    finally:
        await dead.close()


async def test_64_concurrent_runs_all_succeed(client: httpx.AsyncClient) -> None:
    questions = ["Which anime is Luffy in?", "How is Luffy related to Nami?", "What is the sequel of Naruto?",
                 "Who is Nami?"]
    responses = await asyncio.gather(*(
        client.post("/v1/search_ai", json={"question": questions[i % len(questions)]}) for i in range(64)))
    assert [r.status_code for r in responses] == [200] * 64, [r.text for r in responses if r.status_code != 200][:2]
    bodies = [r.json() for r in responses]
    assert len({b["trajectory_id"] for b in bodies}) == 64
    for i, b in enumerate(bodies[:4]):  # same question, same answer, whatever ran beside it
        assert all(o["response"]["answer"] == b["response"]["answer"] for o in bodies[i::4])


def openai_client(app: FastAPI, api_key: str = "unused") -> openai.AsyncOpenAI:
    """The official OpenAI client, pointed at the app's chat-completions route."""
    return openai.AsyncOpenAI(base_url="http://api/openai/v1", api_key=api_key, max_retries=0,
                              http_client=client_for(app))


def rewrite_request(question: str) -> dict[str, Any]:
    return {"messages": render(RewriteInput(question=question), QueryRewrite),
            "response_format": response_format(schema_for(QueryRewrite))}


async def test_the_models_answer_openai_clients(app: FastAPI, runtime: Runtime) -> None:
    client = openai_client(app)
    assert sorted(m.id for m in (await client.models.list()).data) == ["planner", "validator"]
    request = rewrite_request("How is Luffy related to Nami?")
    done = await client.chat.completions.create(model="planner", temperature=0, **request)
    assert done.object == "chat.completion" and done.model == "planner"
    assert done.choices[0].finish_reason == "stop"
    served = QueryRewrite.model_validate_json(done.choices[0].message.content or "")
    direct = await runtime.orchestrator.planner.generate(RewriteInput(question="How is Luffy related to Nami?"),
                                                         QueryRewrite)
    assert served == direct.output, "the route serves exactly what the loop gets from the same model"
    # the loop's own client (OpenAIBackend through StructuredGenerator) reads it as a model like any other
    generator = StructuredGenerator(OpenAIBackend(runtime.settings, "validator", client=client))
    luffy = CardEntity(ref=EntityRef(entity_type="character", id=LUFFY), name="Monkey D. Luffy")
    nami = CardEntity(ref=EntityRef(entity_type="character", id=NAMI), name="Nami")
    items = [GradeItem(index=0, entity=luffy, snippet="Monkey D. Luffy, captain of the Straw Hat Pirates"),
             GradeItem(index=1, entity=nami, snippet="Nami, navigator of the Straw Hat Pirates")]
    grade = GradeInput(question="Which anime is Luffy in?", items=items)
    shaped = CallShape(messages=render(grade, GradeReport), schema=schema_for(GradeReport))
    assert (await generator.generate_shaped(shaped, GradeReport)).output.model_dump() == \
        (await runtime.orchestrator.validator.generate(grade, GradeReport)).output.model_dump()


async def test_the_models_refuse_what_they_cannot_serve_in_openai_shape(app: FastAPI) -> None:
    client = openai_client(app)
    with pytest.raises(openai.NotFoundError, match=r"model_not_found|does not exist"):
        await client.chat.completions.create(model="gpt-4o", **rewrite_request("Luffy"))
    with pytest.raises(openai.BadRequestError, match="json_schema response_format"):
        await client.chat.completions.create(model="planner", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.BadRequestError, match="no state block"):
        await client.chat.completions.create(
            model="planner", messages=[{"role": "user", "content": "hi"}],
            response_format=response_format(schema_for(QueryRewrite)))
    async with client_for(app) as raw:
        resp = await raw.post("/openai/v1/chat/completions", json={"model": "planner", "messages": [], "seed": 1})
        assert resp.status_code == 400
        assert resp.json()["error"]["type"] == "invalid_request_error"


async def test_the_model_route_takes_the_api_keys_too(service: LocalAgentService, settings: Settings) -> None:
    keyed = create_app(service, settings.model_copy(update={"api_keys": ["k-one"]}))
    with pytest.raises(openai.AuthenticationError):
        await openai_client(keyed, "nope").models.list()
    done = await openai_client(keyed, "k-one").chat.completions.create(model="validator",
                                                                       **rewrite_request("Luffy"))
    assert QueryRewrite.model_validate_json(done.choices[0].message.content or "")


async def test_the_model_route_bounds_its_bodies_and_answers_in_openai_shape(service: LocalAgentService,
                                                                             settings: Settings) -> None:
    behind_proxy = create_app(service, settings, proxy_sets_request_id=True)
    select = SelectInput(question="Which anime is Luffy in?", rewrite=QueryRewrite(
        rewritten_query="Which anime is Monkey D. Luffy in?", needs_external_context=True, retrieval_mode="vector",
        rationale="lookup"), turn=0, max_turns=4)
    async with client_for(behind_proxy) as raw:
        # the official client's parse(NextStep) sends its strict schema (35 kB) beside the prompt: more than the
        # API's own body limit, well within the route's
        parsed = await openai_client(behind_proxy).beta.chat.completions.parse(
            model="planner", messages=render(select, NextStep), response_format=NextStep)  # type: ignore[arg-type]
        assert isinstance(parsed.choices[0].message.parsed, NextStep)
        big = json.dumps({"model": "planner", "messages": [{"role": "user", "content": "x" * MAX_ROUTE_BODY}]})
        json_type = {"content-type": "application/json"}
        bad_id = {"x-request-id": "not an id!"}
        for path, request, status in (("/openai/v1/chat/completions", {"content": big, "headers": json_type}, 413),
                                      ("/openai/v1/models", {"headers": bad_id}, 422)):
            resp = await raw.request("GET" if status == 422 else "POST", path, **request)
            assert resp.status_code == status, resp.text
            assert sorted(resp.json()["error"]) == ["code", "message", "param", "type"]
        # the API's own routes keep theirs
        too_large = await raw.post("/v1/search_ai", content=big, headers=json_type)
        assert too_large.status_code == 413 and too_large.json()["error"]["type"] == "payload_too_large"
        unusable = await raw.get("/healthz", headers=bad_id)
        assert unusable.status_code == 422 and unusable.json()["error"]["type"] == "validation_error"


def _sync_callables(app: FastAPI | Any) -> list[str]:
    """Every endpoint and dependency of ``app`` (included routers and mounted apps too) that FastAPI would run in
    its thread pool."""
    import inspect

    from fastapi.dependencies.models import Dependant
    from fastapi.dependencies.utils import get_dependant
    from fastapi.routing import APIRoute
    from starlette.routing import Mount

    def is_async(call: Any) -> bool:
        # a class instance (HTTPBearer, APIKeyHeader) is called through its __call__
        return any(f(c) for f in (inspect.iscoroutinefunction, inspect.isasyncgenfunction)
                   for c in (call, type(call).__call__ if not inspect.isroutine(call) else None))

    def walk(d: Dependant, where: str) -> list[str]:
        here = [] if d.call is None or is_async(d.call) else [f"{where}: {getattr(d.call, '__name__', d.call)}"]
        return here + [s for sub in d.dependencies for s in walk(sub, where)]

    found: list[str] = []
    for route in app.routes:
        if isinstance(route, APIRoute):
            found += walk(route.dependant, route.path)
        elif isinstance(route, Mount):
            found += _sync_callables(route.app)
        elif (router := getattr(route, "original_router", None)) is not None:  # FastAPI's included router
            found += _sync_callables(router)
            found += [s for dep in router.dependencies
                      for s in walk(get_dependant(path=router.prefix, call=dep.dependency), router.prefix)]
    return found


def test_no_endpoint_or_dependency_runs_in_the_thread_pool(service: LocalAgentService, settings: Settings) -> None:
    # a plain def costs a thread handoff on every request: under load, a tenth of the Ingress replica's samples
    keyed = settings.model_copy(update={"api_keys": ["k"]})
    for app in (create_app(service, settings), create_app(service, keyed)):
        routes = _sync_callables(app)
        assert routes == []

"""The GraphQL backend end to end: real PostgreSQL, and the agent behind a real SearchAI gRPC server.

The gRPC server is a plain ``grpc.aio`` server in this process, serving :class:`SearchAIApi` over the
in-process service (the runtime of the HTTP API's tests: PostgreSQL, Qdrant local mode, the embedder, the
loop); the backend reaches it over a TCP channel as it reaches Serve's gRPC proxy. The backend's own pool
logs every statement it sends (asyncpg's query logger), which is how batching is measured.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import grpc
import httpx
import hypothesis_graphql
import pytest
import strawberry
import uvicorn
import websockets
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from starlette.applications import Starlette
from websockets import Subprotocol

from agentic_rag.api.graphql import build_schema, create_app
from agentic_rag.api.graphql.errors import INTERNAL_MESSAGE, MaskInternalErrors
from agentic_rag.api.graphql.limits import MAX_COST, MAX_DEPTH
from agentic_rag.api.grpc.proto import searchai_pb2_grpc as pb_grpc
from agentic_rag.api.grpc.service import SearchAIApi, SearchAIServicer
from agentic_rag.api.service import LocalAgentService
from agentic_rag.catalog.ids import entity_id
from agentic_rag.catalog.ingest import IngestReport
from agentic_rag.models.embeddings import Embedder
from agentic_rag.orchestrator.runtime import Runtime, build_orchestrator
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import close_pool, make_pool
from agentic_rag.storage.qdrant import VectorStore
from agentic_rag.storage.sql import Pool
from tests.support.gated import GatedService

pytestmark = pytest.mark.integration

LUFFY, NAMI = str(entity_id("character", "monkey-d-luffy")), str(entity_id("character", "nami"))
ONE_PIECE = str(entity_id("anime", "one-piece"))
KEY = "graphql-test-key"


@dataclass(eq=False)  # hashable: asyncpg keeps its loggers in a set
class Statements:
    """Every statement the backend's pool sends, in order (asyncpg's query logger on each connection)."""

    sent: list[str] = field(default_factory=list)

    def __call__(self, record: asyncpg.connection.LoggedQuery) -> None:
        self.sent.append(record.query)

    def during(self) -> StatementWindow:
        return StatementWindow(self)


class StatementWindow:
    def __init__(self, log: Statements) -> None:
        self._log = log
        self.sent: list[str] = []

    def __enter__(self) -> StatementWindow:
        self._start = len(self._log.sent)
        return self

    def __exit__(self, *_: object) -> None:
        self.sent = self._log.sent[self._start:]


async def _grpc_server(runtime: Runtime, settings: Settings) -> tuple[grpc.aio.Server, str]:
    server = grpc.aio.server()
    pb_grpc.add_SearchAIServicer_to_server(  # type: ignore[no-untyped-call]  # generated, untyped
        SearchAIServicer(SearchAIApi(LocalAgentService(runtime), settings)), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"


@pytest.fixture(scope="module")
async def grpc_target(runtime: Runtime, settings: Settings) -> AsyncIterator[str]:
    """SearchAI over the real service, on a free local port."""
    server, target = await _grpc_server(runtime, settings)
    yield target
    await server.stop(None)


@pytest.fixture(scope="module")
async def counted(demo: IngestReport, dsn: str, settings: Settings) -> AsyncIterator[tuple[Pool, Statements]]:
    """The backend's pool, two connections, each logging its statements."""
    log = Statements()
    pool = await make_pool(dsn, settings.model_copy(update={"pool_min_size": 2, "pool_max_size": 2}))
    held = [await pool.acquire() for _ in range(2)]
    for conn in held:
        conn.add_query_logger(log)
    for conn in held:
        await pool.release(conn)
    yield pool, log
    await pool.close()


@pytest.fixture(scope="module")
async def app(counted: tuple[Pool, Statements], grpc_target: str, settings: Settings) -> AsyncIterator[Starlette]:
    bff = create_app(settings, grpc_target, pool=counted[0])
    yield bff
    await bff.state.backend.close()


@pytest.fixture
async def client(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://bff", timeout=60) as c:
        yield c


async def gql(client: httpx.AsyncClient, query: str, variables: dict[str, Any] | None = None,
              headers: dict[str, str] | None = None) -> dict[str, Any]:
    resp = await client.post("/graphql", json={"query": query, "variables": variables or {}}, headers=headers)
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


def ok(body: dict[str, Any]) -> dict[str, Any]:
    assert not body.get("errors"), body.get("errors")
    data: dict[str, Any] = body["data"]
    return data


def error(body: dict[str, Any]) -> dict[str, Any]:
    assert body.get("errors"), body
    first: dict[str, Any] = body["errors"][0]
    return first


# -- typeahead and hydration -----------------------------------------------------------------------------

HYDRATE = """
query ($refs: [EntityRefInput!]!) {
  entities(refs: $refs) {
    id name entityType
    ... on Anime { title year studios { name founded } characters(limit: 5) { name anime(limit: 3) { title } } }
  }
}"""


async def _anime_ids(pool: Pool, n: int) -> list[str]:
    async with pool.acquire() as conn:
        return [r[0] for r in await conn.fetch("SELECT id::text FROM anime ORDER BY popularity DESC LIMIT $1", n)]


async def test_twenty_anime_with_studios_and_characters_cost_the_statements_of_five(
        client: httpx.AsyncClient, counted: tuple[Pool, Statements]) -> None:
    pool, log = counted
    counts: dict[int, int] = {}
    for n in (5, 20, 5):  # the first round also fills each connection's statement cache
        refs = [{"entityType": "ANIME", "id": i} for i in await _anime_ids(pool, n)]
        with log.during() as window:
            data = ok(await gql(client, HYDRATE, {"refs": refs}))
        assert [e["id"] for e in data["entities"]] == [r["id"] for r in refs]
        assert all(e["entityType"] == "ANIME" and e["studios"] and e["characters"] for e in data["entities"])
        assert any(c["anime"] for e in data["entities"] for c in e["characters"])
        counts[n] = len(window.sent)
    # anime, the features edges, characters, their appears_in edges, the anime they lead to, the animated_by
    # edges, studios: one statement each, whatever the number of anime
    assert counts[5] == counts[20] <= 8, counts
    print(f"statements per request: 5 anime -> {counts[5]}, 20 anime -> {counts[20]}")


async def test_typeahead_hits_come_hydrated_in_a_fixed_number_of_statements(
        client: httpx.AsyncClient, counted: tuple[Pool, Statements]) -> None:
    query = """query ($limit: Int!) { search(q: "my", types: [ANIME], limit: $limit) {
        name match popularity ref { entityType id }
        entity { ... on Anime { title studios { name } characters { name } } } } }"""
    _, log = counted
    counts = []
    for limit in (3, 12, 3):
        with log.during() as window:
            hits = ok(await gql(client, query, {"limit": limit}))["search"]
        assert len(hits) == limit and all(h["entity"]["title"] == h["name"] for h in hits)
        assert all(h["match"] == "PREFIX" and h["name"].lower().startswith("my") for h in hits)
        counts.append(len(window.sent))
    assert counts[1] == counts[2], counts
    print(f"statements per request: typeahead 3 hits -> {counts[2]}, 12 hits -> {counts[1]}")


async def test_typeahead_finds_luffy_from_a_typo(client: httpx.AsyncClient) -> None:
    data = ok(await gql(client, """{ search(q: "lufy", types: [CHARACTER], limit: 5) {
        match entity { id ... on Character { name anime(limit: 1) { title } } } } }"""))
    first = data["search"][0]
    assert first["match"] == "FUZZY" and first["entity"]["id"] == LUFFY
    assert first["entity"]["anime"] == [{"title": "One Piece"}]


async def test_relations_and_links_read_both_directions(client: httpx.AsyncClient) -> None:
    data = ok(await gql(client, """query ($id: ID!) { entity(entityType: ANIME, id: $id) {
        ... on Anime { franchise { name anime(limit: 50) { id } } sourceManga { title adaptations { id } }
                       links(relations: ["animated_by", "features"], limit: 50) { relation detail entity { id } } }
    } }""", {"id": ONE_PIECE}))
    anime = data["entity"]
    assert ONE_PIECE in {a["id"] for a in anime["franchise"]["anime"]}
    assert anime["sourceManga"] and ONE_PIECE in {a["id"] for a in anime["sourceManga"][0]["adaptations"]}
    luffy = [link for link in anime["links"] if link["entity"]["id"] == LUFFY]
    assert luffy == [{"relation": "features", "detail": "main", "entity": {"id": LUFFY}}]
    assert {link["relation"] for link in anime["links"]} == {"animated_by", "features"}
    missing = "query ($id: ID!) { entity(entityType: STUDIO, id: $id) { id } }"
    assert ok(await gql(client, missing, {"id": str(uuid.uuid4())}))["entity"] is None


# -- the agent over gRPC ---------------------------------------------------------------------------------

SEARCH_AI = """query ($q: String!) { searchAi(question: $q) {
  trajectoryId requestId status mode answer confidence citations warnings turns latencyMs timings { stage ms }
  resultEntities { id entityType ... on Character { name anime(limit: 2) { title studios { name } } } }
  sourceEntities { id }
  evidence { paths { rels nodes { entityType id entity { name } } } ranked { id } facts terminationReason }
  clarification { question choices { label ref { id entity { name } } } }
} }"""


async def test_search_ai_answers_through_grpc_with_typed_hydrated_entities(
        client: httpx.AsyncClient, counted: tuple[Pool, Statements]) -> None:
    _, log = counted
    with log.during() as window:
        body = await gql(client, SEARCH_AI, {"q": "How is Luffy related to Nami?"},
                         headers={"X-Request-ID": "gql-relation-1"})
    r = ok(body)["searchAi"]
    assert r["status"] == "ANSWERED" and r["mode"] == "AGENTIC" and r["requestId"] == "gql-relation-1"
    assert {e["id"] for e in r["resultEntities"]} == {LUFFY, NAMI}
    assert all(e["entityType"] == "CHARACTER" and e["anime"][0]["title"] == "One Piece" for e in r["resultEntities"])
    assert r["evidence"]["paths"] and all(n["entity"]["name"] for p in r["evidence"]["paths"] for n in p["nodes"])
    assert r["turns"] >= 1 and r["latencyMs"] > 0 and r["clarification"] is None
    uuid.UUID(r["trajectoryId"])
    # only hydration ran on the backend's pool (the run's own statements are the agent's): a few per type
    assert 0 < len(window.sent) <= 8, window.sent


FOLLOW_UP = """
query ($q: String!, $c: ID) {
  searchAi(question: $q, conversationId: $c) { status answer conversationId turn }
}"""
CONVERSATION = """
query ($id: ID!) { conversation(id: $id) { id turns { seq question standalone status trajectoryId } } }"""


async def test_a_conversation_through_grpc(client: httpx.AsyncClient) -> None:
    first = ok(await gql(client, FOLLOW_UP, {"q": "who directed Death Note?"}))["searchAi"]
    assert first["turn"] == 1 and "Tetsurō Araki" in first["answer"]
    follow = ok(await gql(client, FOLLOW_UP, {"q": "what else did he direct?", "c": first["conversationId"]}))
    r = follow["searchAi"]
    assert r["conversationId"] == first["conversationId"] and r["turn"] == 2 and "Attack on Titan" in r["answer"]
    kept = ok(await gql(client, CONVERSATION, {"id": first["conversationId"]}))["conversation"]
    assert [t["question"] for t in kept["turns"]] == ["who directed Death Note?", "what else did he direct?"]
    assert kept["turns"][1]["standalone"] == "what else did Tetsurō Araki direct?"
    # another tenant: no conversation, and no follow-up of it
    other = await gql(client, CONVERSATION, {"id": first["conversationId"]}, headers={"X-Tenant": "other"})
    assert ok(other)["conversation"] is None
    refused = await gql(client, FOLLOW_UP, {"q": "is it finished?", "c": first["conversationId"]},
                        headers={"X-Tenant": "other"})
    assert error(refused)["extensions"]["code"] == "not_found"


async def test_a_run_may_lower_its_budget_but_not_raise_it(client: httpx.AsyncClient, settings: Settings) -> None:
    budgeted = """query ($q: String!, $b: RunBudgetInput) { searchAi(question: $q, budget: $b) {
        turns evidence { terminationReason } } }"""
    # the question takes two turns (find Luffy, then his anime): a budget of one ends it at the limit
    r = ok(await gql(client, budgeted, {"q": "Which anime is Luffy in?", "b": {"maxTurns": 1}}))["searchAi"]
    assert r["turns"] == 1 and r["evidence"]["terminationReason"] == "max_turns"
    over = settings.agent_max_turns + 1
    refused = error(await gql(client, budgeted, {"q": "Which anime is Luffy in?", "b": {"maxTurns": over}}))
    assert f"max_turns {over} is over this server's {settings.agent_max_turns}" in refused["message"]
    assert refused["extensions"]["code"] == "validation_error"
    out_of_range = error(await gql(client, budgeted, {"q": "Which anime is Luffy in?", "b": {"deadlineMs": 5}}))
    assert out_of_range["message"].startswith("budget.deadline_ms:")


async def test_a_clarification_round_trip_and_the_trajectory(client: httpx.AsyncClient) -> None:
    asked = ok(await gql(client, SEARCH_AI, {"q": "Tell me about Naruto"}))["searchAi"]
    assert asked["status"] == "NEEDS_CLARIFICATION"
    choices = asked["clarification"]["choices"]
    assert choices and all(c["ref"]["entity"]["name"] for c in choices)
    tid = asked["trajectoryId"]
    clarify = """mutation ($t: ID!, $i: Int, $e: ID) { clarify(trajectoryId: $t, index: $i, entityId: $e) {
        status resultEntities { id } } }"""

    bad = error(await gql(client, clarify, {"t": tid, "i": 9}))
    assert bad["extensions"]["code"] == "validation_error" and "not one of the offered choices" in bad["message"]
    stranger = error(await gql(client, clarify, {"t": tid, "i": 0}, headers={"X-Tenant": "someone-else"}))
    assert stranger["extensions"]["code"] == "not_found"
    both = error(await gql(client, clarify, {"t": tid, "i": 0, "e": LUFFY}))
    assert both["message"] == "give exactly one of index and entityId"

    chosen = choices[0]["ref"]["id"]
    done = ok(await gql(client, clarify, {"t": tid, "e": chosen}))["clarify"]
    assert done["status"] == "ANSWERED" and chosen in {e["id"] for e in done["resultEntities"]}
    again = error(await gql(client, clarify, {"t": tid, "i": 0}))
    assert again["extensions"]["code"] == "conflict"

    trajectory = """query ($id: ID!) { trajectory(id: $id) { id query status events { seq stage type payload } } }"""
    t = ok(await gql(client, trajectory, {"id": tid}))["trajectory"]
    assert t["id"] == tid and t["query"] == "Tell me about Naruto" and t["status"] == "answered"
    assert [e["seq"] for e in t["events"]] == list(range(1, len(t["events"]) + 1))
    assert any("chosen" in e["payload"] for e in t["events"])
    assert ok(await gql(client, trajectory, {"id": tid}, headers={"X-Tenant": "someone-else"}))["trajectory"] is None


def sse(text: str) -> list[tuple[str, str]]:
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n") if ": " in line and not line.startswith(":"))
        if "event" in fields:
            out.append((fields["event"], fields.get("data", "")))
    return out


async def test_a_subscription_streams_the_run_then_its_result(client: httpx.AsyncClient) -> None:
    query = """subscription ($q: String!) { searchAiRun(question: $q) {
        __typename ... on RunEvent { seq stage type latencyMs }
        ... on SearchAiResult { status trajectoryId resultEntities { id } } } }"""
    resp = await client.post("/graphql", json={"query": query, "variables": {"q": "Which anime is Luffy in?"}},
                             headers={"Accept": "text/event-stream"})
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream"), resp.text
    frames = sse(resp.text)
    assert frames[-1][0] == "complete"
    updates = [json.loads(data)["data"]["searchAiRun"] for kind, data in frames if kind == "next"]
    *events, result = updates
    assert result["__typename"] == "SearchAiResult" and result["status"] == "ANSWERED"
    assert ONE_PIECE in {e["id"] for e in result["resultEntities"]}
    assert events and all(e["__typename"] == "RunEvent" for e in events)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert {"retrieve", "draft"} <= {e["stage"] for e in events}


async def test_a_clarification_streams_the_resumed_run(client: httpx.AsyncClient) -> None:
    asked = ok(await gql(client, SEARCH_AI, {"q": "Tell me about Naruto"}))["searchAi"]
    assert asked["status"] == "NEEDS_CLARIFICATION"
    query = """subscription ($t: ID!, $i: Int) { clarifyRun(trajectoryId: $t, index: $i) {
        __typename ... on RunEvent { seq stage trajectoryId } ... on SearchAiResult { status trajectoryId } } }"""
    refused = await client.post("/graphql", json={"query": query, "variables": {"t": asked["trajectoryId"], "i": 9}},
                                headers={"Accept": "text/event-stream"})
    [(_, data)] = [f for f in sse(refused.text) if f[0] == "next"]
    assert "not one of the offered choices" in json.loads(data)["errors"][0]["message"]
    resp = await client.post("/graphql", json={"query": query, "variables": {"t": asked["trajectoryId"], "i": 0}},
                             headers={"Accept": "text/event-stream"})
    updates = [json.loads(data)["data"]["clarifyRun"] for kind, data in sse(resp.text) if kind == "next"]
    *events, result = updates
    assert result == {"__typename": "SearchAiResult", "status": "ANSWERED", "trajectoryId": asked["trajectoryId"]}
    # the resumed run goes on in the same trajectory, after the events of the first part
    assert events and {e["trajectoryId"] for e in events} == {asked["trajectoryId"]}
    assert events[0]["stage"] == "clarify" and events[0]["seq"] > 1
    assert [e["seq"] for e in events] == list(range(events[0]["seq"], events[0]["seq"] + len(events)))


@pytest.mark.parametrize("stay", [True, False])
async def test_a_subscription_streams_events_while_the_run_goes(
        pool: Pool, qdrant: VectorStore, embedder: Embedder, settings: Settings,
        counted: tuple[Pool, Statements], stay: bool) -> None:
    """Events arrive while the run is held half way; a subscriber that leaves cancels the run over gRPC."""
    orchestrator, store = build_orchestrator(settings, pool, qdrant, embedder)
    service = GatedService(Runtime(settings, pool, qdrant, embedder, store, orchestrator), hold_after=3)
    server = grpc.aio.server()
    pb_grpc.add_SearchAIServicer_to_server(  # type: ignore[no-untyped-call]  # generated, untyped
        SearchAIServicer(SearchAIApi(service, settings)), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    bff = create_app(settings, f"127.0.0.1:{port}", pool=counted[0])
    http_server = uvicorn.Server(uvicorn.Config(bff, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    serving = asyncio.create_task(http_server.serve())
    query = """subscription { searchAiRun(question: "Which anime is Luffy in?") {
        __typename ... on RunEvent { seq } ... on SearchAiResult { status } } }"""
    try:
        while not http_server.started:  # noqa: ASYNC110 (uvicorn has a flag for this, not an event)
            await asyncio.sleep(0.02)
        bff_port = http_server.servers[0].sockets[0].getsockname()[1]
        updates: list[dict[str, Any]] = []
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{bff_port}", timeout=30) as http, \
                http.stream("POST", "/graphql", json={"query": query},
                            headers={"Accept": "text/event-stream"}) as resp:
            assert resp.status_code == 200
            async for line in resp.aiter_lines():
                if not line.startswith("data: {"):
                    continue
                updates.append(json.loads(line.removeprefix("data: "))["data"]["searchAiRun"])
                if len(updates) == 3:
                    assert not service.gate.is_set() and not service.cancelled.is_set()
                    assert [u["seq"] for u in updates] == [1, 2, 3]  # streamed while the run waits at seq 3
                    if not stay:
                        break  # leaving the block closes the connection half way through the run
                    service.gate.set()
        if stay:
            assert updates[-1] == {"__typename": "SearchAiResult", "status": "ANSWERED"}
            assert [u["seq"] for u in updates[:-1]] == list(range(1, len(updates)))
        else:
            async with asyncio.timeout(10):
                await service.cancelled.wait()
    finally:
        service.gate.set()
        http_server.should_exit = True
        await serving
        await bff.state.backend.close()
        await server.stop(None)


async def test_a_websocket_subscription_takes_its_key_and_tenant_in_connection_init(
        runtime: Runtime, counted: tuple[Pool, Statements], settings: Settings) -> None:
    keyed = settings.model_copy(update={"api_keys": [KEY]})
    server, target = await _grpc_server(runtime, keyed)
    bff = create_app(keyed, target, pool=counted[0])
    http_server = uvicorn.Server(uvicorn.Config(bff, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    serving = asyncio.create_task(http_server.serve())
    subscribe = {"id": "1", "type": "subscribe", "payload": {"query": """subscription {
        searchAiRun(question: "Which anime is Luffy in?") { __typename ... on SearchAiResult { trajectoryId } } }"""}}
    try:
        while not http_server.started:  # noqa: ASYNC110 (uvicorn has a flag for this, not an event)
            await asyncio.sleep(0.02)
        url = f"ws://127.0.0.1:{http_server.servers[0].sockets[0].getsockname()[1]}/graphql"
        async with websockets.connect(url, subprotocols=[Subprotocol("graphql-transport-ws")]) as ws:
            await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await ws.recv()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403
        async with websockets.connect(url, subprotocols=[Subprotocol("graphql-transport-ws")]) as ws:
            await ws.send(json.dumps({"type": "connection_init",
                                      "payload": {"authorization": f"Bearer {KEY}", "tenant": "team_ws"}}))
            assert json.loads(await ws.recv())["type"] == "connection_ack"
            await ws.send(json.dumps(subscribe))
            messages: list[dict[str, Any]] = []
            while not messages or messages[-1]["type"] != "complete":
                messages.append(json.loads(await asyncio.wait_for(ws.recv(), 30)))
        updates = [m["payload"]["data"]["searchAiRun"] for m in messages if m["type"] == "next"]
        assert {u["__typename"] for u in updates} == {"RunEvent", "SearchAiResult"}
        tid = updates[-1]["trajectoryId"]
        # the run is the connection's tenant's: another tenant cannot read it
        async with httpx.AsyncClient(transport=httpx.ASGITransport(bff), base_url="http://bff") as c:
            query = {"query": "query ($id: ID!) { trajectory(id: $id) { id } }", "variables": {"id": tid}}
            for tenant, found in (("team_ws", True), ("default", False)):
                resp = await c.post("/graphql", json=query, headers={"X-API-Key": KEY, "X-Tenant": tenant})
                assert (ok(resp.json())["trajectory"] is not None) is found
    finally:
        http_server.should_exit = True
        await serving
        await bff.state.backend.close()
        await server.stop(None)


# -- bounds, doors and errors ----------------------------------------------------------------------------

async def test_a_deep_query_is_refused_before_it_runs(client: httpx.AsyncClient,
                                                      counted: tuple[Pool, Statements]) -> None:
    nested = "name"
    for _ in range(6):
        nested = f"anime {{ characters {{ {nested} }} }}"
    _, log = counted
    with log.during() as window:
        body = await gql(client, f"query ($id: ID!) {{ entity(entityType: CHARACTER, id: $id) "
                                 f"{{ ... on Character {{ {nested} }} }} }}", {"id": LUFFY})
    assert f"exceeds maximum operation depth of {MAX_DEPTH}" in error(body)["message"]
    assert body.get("data") is None and window.sent == []


async def test_a_costly_query_is_refused_with_its_cost(client: httpx.AsyncClient) -> None:
    query = """{ search(q: "a", limit: 50) { entity { ... on Anime {
        characters(limit: 50) { anime(limit: 50) { studios(limit: 50) { name } } } } } } }"""
    err = error(await gql(client, query))
    assert err["extensions"]["code"] == "validation_error"
    assert f"over the limit of {MAX_COST}" in err["message"] and "costs 6" in err["message"]
    # the same query with small pages is served
    small = query.replace("limit: 50", "limit: 3")
    ok(await gql(client, small))


async def test_other_bounds(client: httpx.AsyncClient) -> None:
    two_runs = '{ a: searchAi(question: "Who is Luffy?") { answer } b: searchAi(question: "Who is Nami?") { answer } }'
    assert "starts 2 runs of the agent" in error(await gql(client, two_runs))["message"]
    aliases = "{ " + " ".join(f'a{i}: search(q: "x") {{ name }}' for i in range(40)) + " }"
    assert "aliases" in error(await gql(client, aliases))["message"].lower()
    big_page = error(await gql(client, '{ search(q: "my", limit: 51) { name } }'))
    assert big_page["message"] == "limit: must be 1 to 50, got 51"
    tokens = "{ " + "__typename " * 3000 + "}"
    assert "token" in error(await gql(client, tokens))["message"].lower()
    long_q = error(await gql(client, "query ($q: String!) { searchAi(question: $q) { answer } }", {"q": "x" * 2001}))
    assert long_q["extensions"]["code"] == "validation_error" and "question" in long_q["message"]
    not_uuid = error(await gql(client, '{ trajectory(id: "nope") { id } }'))
    assert not_uuid["message"] == "id: not a UUID"


async def test_api_keys_and_tenants_are_the_http_apis(runtime: Runtime, counted: tuple[Pool, Statements],
                                                      settings: Settings) -> None:
    keyed = settings.model_copy(update={"api_keys": [KEY]})
    server, target = await _grpc_server(runtime, keyed)  # the agent checks the same keys
    bff = create_app(keyed, target, pool=counted[0])
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(bff), base_url="http://bff", timeout=60) as c:
            query = {"query": '{ searchAi(question: "Which anime is Luffy in?") { status } }'}
            refused = await c.post("/graphql", json=query)
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
            assert refused.json()["errors"][0]["extensions"]["code"] == "unauthorized"
            wrong = await c.post("/graphql", json=query, headers={"X-API-Key": "not-it"})
            assert wrong.status_code == 401
            for header in ({"Authorization": f"Bearer {KEY}"}, {"X-API-Key": KEY}):  # forwarded to SearchAI
                assert ok((await c.post("/graphql", json=query, headers=header)).json())["searchAi"]["status"] \
                    == "ANSWERED"
            bad_tenant = await c.post("/graphql", json=query, headers={"X-API-Key": KEY, "X-Tenant": "no spaces"})
            assert bad_tenant.status_code == 400 and "X-Tenant" in bad_tenant.json()["errors"][0]["message"]
            huge = await c.post("/graphql", content=b"{" + b" " * 70_000 + b"}", headers={
                "X-API-Key": KEY, "Content-Type": "application/json"})
            assert huge.status_code == 413
    finally:
        await bff.state.backend.close()
        await server.stop(None)


async def test_an_agent_that_does_not_answer_is_a_clear_error(counted: tuple[Pool, Statements],
                                                             settings: Settings) -> None:
    server = grpc.aio.server()
    port = server.add_insecure_port("127.0.0.1:0")  # bound, never started: nothing answers there
    bff = create_app(settings.model_copy(update={"agent_deadline_ms": 1000}), f"127.0.0.1:{port}",
                     pool=counted[0])
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(bff), base_url="http://bff", timeout=60) as c:
            err = error(await gql(c, '{ searchAi(question: "Which anime is Luffy in?") { answer } }'))
        assert err["extensions"]["code"] in ("unavailable", "timeout")
        assert "127.0.0.1" not in err["message"] and str(port) not in err["message"]
    finally:
        await bff.state.backend.close()
        await server.stop(None)


async def test_an_unreachable_database_is_a_clear_error(settings: Settings) -> None:
    dead = await make_pool("host=127.0.0.1 port=1 connect_timeout=1",
                           settings.model_copy(update={"pool_min_size": 0, "pool_max_size": 1}))
    fast = settings.model_copy(update={"retry_attempts": 1, "query_timeout_ms": 1000})
    bff = create_app(fast, "127.0.0.1:1", pool=dead)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(bff), base_url="http://bff", timeout=60) as c:
            for query in ('{ search(q: "luffy") { name } }', f'{{ trajectory(id: "{uuid.uuid4()}") {{ id }} }}',
                          f'{{ entity(entityType: CHARACTER, id: "{LUFFY}") {{ name }} }}'):
                err = error(await gql(c, query))
                assert err["extensions"]["code"] == "unavailable", err
                assert "port=1" not in err["message"] and "retry" in err["message"]
    finally:
        await bff.state.backend.close()
        await dead.close()


async def test_a_backend_that_cannot_open_its_pool_answers_503(settings: Settings) -> None:
    nowhere = settings.model_copy(update={"database_url": "postgresql://postgres@127.0.0.1:1/catalog"})
    bff = create_app(nowhere, "127.0.0.1:1")  # opens its own pool on first use
    async with httpx.AsyncClient(transport=httpx.ASGITransport(bff), base_url="http://bff", timeout=60) as c:
        resp = await c.post("/graphql", json={"query": '{ search(q: "luffy") { name } }'})
    assert resp.status_code == 503 and resp.headers["retry-after"] == "1"
    err = resp.json()["errors"][0]
    assert err["extensions"]["code"] == "unavailable" and "127.0.0.1" not in err["message"]
    await bff.state.backend.close()


async def test_an_internal_failure_is_masked() -> None:
    @strawberry.type
    class Broken:
        @strawberry.field
        def secret(self) -> str:
            raise RuntimeError("password=hunter2 at /srv/db")

    schema = strawberry.Schema(query=Broken, extensions=[MaskInternalErrors])
    result = await schema.execute("{ secret }")
    assert result.errors and result.errors[0].message == INTERNAL_MESSAGE
    assert result.errors[0].extensions == {"code": "internal_error"}


# -- fuzzing ---------------------------------------------------------------------------------------------

class LoopThread:
    """An event loop in a thread of its own, for hypothesis's synchronous tests (one pool per loop)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Any, timeout: float = 60) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@dataclass
class FuzzTarget:
    loop: LoopThread
    client: httpx.AsyncClient
    seen: list[int] = field(default_factory=list)


@pytest.fixture(scope="module")
def fuzz_target(demo: IngestReport, dsn: str, settings: Settings) -> Iterator[FuzzTarget]:
    loop = LoopThread()
    # the gRPC server lives on the session's loop, which does not run during a synchronous test: the fuzzed
    # fields are those that need only PostgreSQL (searchAi and clarify are covered above), so no agent is
    # reachable at the target
    pool = loop.run(make_pool(dsn, settings))
    bff = create_app(settings, "127.0.0.1:1", pool=pool)
    client = httpx.AsyncClient(transport=httpx.ASGITransport(bff), base_url="http://bff", timeout=60)
    yield FuzzTarget(loop, client)
    loop.run(client.aclose())
    loop.run(close_pool(pool))
    loop.stop()


SCHEMA = str(build_schema())


@hypothesis_settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(query=hypothesis_graphql.queries(SCHEMA, fields=["search", "entity", "entities", "trajectory"]))
def test_generated_queries_get_no_internal_error(fuzz_target: FuzzTarget, query: str) -> None:
    """Valid queries over the fields that read PostgreSQL: data, or a client error; never an internal one."""
    resp = fuzz_target.loop.run(fuzz_target.client.post("/graphql", json={"query": query}))
    assert resp.status_code < 500, resp.text
    fuzz_target.seen.append(resp.status_code)
    body = resp.json()
    for err in body.get("errors") or []:
        assert err.get("extensions", {}).get("code") != "internal_error", (query, err)
        assert "Traceback" not in err["message"]


def test_enough_queries_were_generated(fuzz_target: FuzzTarget) -> None:
    assert len(fuzz_target.seen) >= 100 and set(fuzz_target.seen) == {200}

"""Admission per API key (issue 41, point 1) against a real PostgreSQL: the bounds themselves, shared by two
"replicas" (two pools), and each front door's answer over them: HTTP 429 with Retry-After, gRPC
RESOURCE_EXHAUSTED with a retry pushback, GraphQL's too_many_requests, MCP's tool error. Runs held in flight are
real runs held at a gate (:class:`GatedService`)."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import grpc
import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from prometheus_client import CollectorRegistry

from agentic_rag.api.admission import ANONYMOUS, Admission, AdmissionUnavailable, TooManyRuns, key_id
from agentic_rag.api.graphql.app import create_app as create_graphql
from agentic_rag.api.grpc.proto import searchai_pb2 as pb
from agentic_rag.api.grpc.proto import searchai_pb2_grpc as pb_grpc
from agentic_rag.api.grpc.service import SearchAIApi, SearchAIServicer
from agentic_rag.api.http.app import create_app
from agentic_rag.api.mcp import MCP_PATH, mount_mcp
from agentic_rag.orchestrator.runtime import Runtime
from agentic_rag.settings import KeyLimit, Settings
from agentic_rag.storage.postgres import make_pool
from agentic_rag.storage.sql import Pool
from tests.support.gated import GatedService
from tests.support.helpers import client_for, served

pytestmark = pytest.mark.integration

FLOOD, CALM = "flood-key-0123456789", "calm-key-9876543210"
QUESTION = {"question": "which studio animated death note"}


def keyed(settings: Settings, **limits: KeyLimit) -> Settings:
    return settings.model_copy(update={"api_keys": [FLOOD, CALM], "key_limits": limits})


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def prefix() -> str:
    """A key id of this test's own, so counts left by other tests never meet it."""
    return f"k-{uuid.uuid4().hex[:12]}"


# -- the bounds --------------------------------------------------------------------------------------


async def test_a_key_holds_at_most_its_runs_and_other_keys_are_not_touched(pool: Pool, settings: Settings,
                                                                          prefix: str) -> None:
    admission = Admission(pool, settings.model_copy(update={"key_limits": {prefix: KeyLimit(max_runs=2)}}))
    async with contextlib.AsyncExitStack() as held:
        for _ in range(2):
            await held.enter_async_context(admission.slot(prefix))
        with pytest.raises(TooManyRuns, match=r"2 runs in flight, its bound") as refused:
            async with admission.slot(prefix):
                pass
        assert refused.value.reason == "runs" and refused.value.retry_after == "1"
        async with admission.slot(ANONYMOUS):  # another key's bound is its own (by default half of 256)
            pass
    async with admission.slot(prefix):  # both given back: a slot again
        pass
    registry = CollectorRegistry()
    registry.register(admission.decisions)
    assert registry.get_sample_value("agentic_rag_admission_total", {"key": prefix, "outcome": "runs"}) == 1


async def test_the_bound_holds_across_replicas(dsn: str, settings: Settings, prefix: str) -> None:
    """Two processes' worth of admission (each its own pool) count against one bound: the state is in PostgreSQL."""
    limited = settings.model_copy(update={"key_limits": {prefix: KeyLimit(max_runs=3)}})
    pools = [await make_pool(dsn, settings) for _ in range(2)]
    try:
        replicas = [Admission(p, limited) for p in pools]
        gate, decided = asyncio.Event(), asyncio.Event()
        outcomes: list[str] = []

        def record(outcome: str) -> None:
            outcomes.append(outcome)
            if len(outcomes) == 10:
                decided.set()

        async def one(admission: Admission) -> None:
            try:
                async with admission.slot(prefix):
                    record("admitted")
                    await gate.wait()  # held: the bound counts it until the gate opens
            except TooManyRuns:
                record("refused")

        tasks = [asyncio.create_task(one(replicas[i % 2])) for i in range(10)]
        await asyncio.wait_for(decided.wait(), timeout=30)
        gate.set()
        await asyncio.gather(*tasks)
        assert sorted(outcomes) == ["admitted"] * 3 + ["refused"] * 7
    finally:
        for p in pools:
            await p.close()


async def test_a_rate_admits_its_burst_then_says_when_the_next_one_is_taken(pool: Pool, settings: Settings,
                                                                           prefix: str) -> None:
    admission = Admission(pool, settings.model_copy(update={
        "key_limits": {prefix: KeyLimit(rate_per_s=4, burst=2)}}))
    for _ in range(2):
        async with admission.slot(prefix):
            pass
    with pytest.raises(TooManyRuns, match=r"more than 4 runs a second \(burst 2\)") as refused:
        async with admission.slot(prefix):
            pass
    assert refused.value.reason == "rate" and 0 < refused.value.retry_after_s <= 0.25 + 0.05
    await asyncio.sleep(refused.value.retry_after_s + 0.02)
    async with admission.slot(prefix):  # told when, and taken then
        pass


async def test_a_flood_over_its_rate_is_refused_without_reaching_the_database(dsn: str, settings: Settings,
                                                                             prefix: str) -> None:
    """Once the store has said when a key's next run may start, this replica refuses the key until then itself."""
    one = await make_pool(dsn, settings.model_copy(update={"pool_min_size": 1, "pool_max_size": 1}))
    sent: list[str] = []
    try:
        async with one.acquire() as conn:
            conn.add_query_logger(lambda record: sent.append(record.query))
        admission = Admission(one, settings.model_copy(update={
            "key_limits": {prefix: KeyLimit(rate_per_s=1, burst=1)}}))
        async with admission.slot(prefix):
            pass
        for _ in range(50):
            with pytest.raises(TooManyRuns, match="more than 1 runs a second") as refused:
                async with admission.slot(prefix):
                    pass
            assert 0 < refused.value.retry_after_s <= 1.0
        admits = [q for q in sent if "agentic_rag_admit" in q]
        assert len(admits) == 2, "the first run and the first refusal asked the store; the other 49 did not"
    finally:
        await one.close()


async def test_a_slot_whose_holder_died_lapses(pool: Pool, settings: Settings, prefix: str) -> None:
    admission = Admission(pool, settings.model_copy(update={"key_limits": {prefix: KeyLimit(max_runs=1)}}))
    async with pool.acquire() as conn:  # a replica took it and was killed before giving it back
        await conn.execute("INSERT INTO admission_slots (id, key, expires_at) VALUES ($1, $2, now() + "
                           "interval '1 hour')", uuid.uuid4(), prefix)
        with pytest.raises(TooManyRuns):
            async with admission.slot(prefix):
                pass
        await conn.execute("UPDATE admission_slots SET expires_at = now() - interval '1 second' WHERE key = $1",
                           prefix)
    async with admission.slot(prefix):
        pass


async def test_no_database_is_a_503_not_an_open_door(settings: Settings) -> None:
    unreachable = await make_pool("postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=1",
                                  settings.model_copy(update={"pool_min_size": 0}))
    try:
        with pytest.raises(AdmissionUnavailable):
            async with Admission(unreachable, settings.model_copy(update={"retry_attempts": 1})).slot(ANONYMOUS):
                pass
    finally:
        await unreachable.close()


# -- the front doors ---------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def flooded(runtime: Runtime, settings: Settings) -> AsyncIterator[tuple[GatedService, Admission, Settings]]:
    """The service with its runs held at a gate and ``FLOOD`` allowed one run at a time, its one run in flight."""
    limited = keyed(settings, **{key_id(FLOOD): KeyLimit(max_runs=1)})
    service = GatedService(runtime)
    admission = Admission(runtime.pool, limited)
    # clear what an earlier test may have left under these keys (a slot lapses by itself, later)
    await runtime.pool.execute("DELETE FROM admission_slots WHERE key = ANY($1::text[])",
                               [key_id(FLOOD), key_id(CALM)])
    yield service, admission, limited
    service.gate.set()


async def test_http_over_the_key_s_bound_is_a_429_and_the_other_key_is_served(runtime: Runtime,
                                                                              settings: Settings) -> None:
    async with flooded(runtime, settings) as (service, admission, limited), \
            client_for(create_app(service, limited, admission=admission)) as client:
        first = asyncio.create_task(client.post("/v1/search_ai", json=QUESTION, headers=bearer(FLOOD)))
        await service.held.wait()
        refused = await client.post("/v1/search_ai", json=QUESTION, headers=bearer(FLOOD))
        assert refused.status_code == 429, refused.text
        assert refused.headers["retry-after"] == "1"
        error = refused.json()["error"]
        assert error["type"] == "too_many_requests" and "1 runs in flight, its bound" in error["message"]
        service.gate.set()  # the calm key was never refused, and the flooder's held run finishes
        calm = await client.post("/v1/search_ai", json=QUESTION, headers=bearer(CALM))
        assert calm.status_code == 200 and (await first).status_code == 200
        again = await client.post("/v1/search_ai", json=QUESTION, headers=bearer(FLOOD))
        assert again.status_code == 200, "the slot came back when the held run ended"
        metrics = (await client.get("/metrics")).text
        assert f'agentic_rag_admission_total{{key="{key_id(FLOOD)}",outcome="runs"}} 1.0' in metrics
        assert f'agentic_rag_admission_total{{key="{key_id(CALM)}",outcome="admitted"}}' in metrics
        assert FLOOD not in metrics and CALM not in metrics  # a key is named by its id only


async def test_grpc_and_graphql_over_the_bound_are_resource_exhausted_and_too_many_requests(
        runtime: Runtime, settings: Settings) -> None:
    async with flooded(runtime, settings) as (service, admission, limited):
        server = grpc.aio.server()
        pb_grpc.add_SearchAIServicer_to_server(  # type: ignore[no-untyped-call]  # generated, untyped
            SearchAIServicer(SearchAIApi(service, limited, admission=admission)), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = pb_grpc.SearchAIStub(channel)  # type: ignore[no-untyped-call]
                auth = (("authorization", f"Bearer {FLOOD}"),)
                first = asyncio.ensure_future(stub.Ask(pb.AskRequest(question=QUESTION["question"]), metadata=auth))
                await service.held.wait()
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await stub.Ask(pb.AskRequest(question=QUESTION["question"]), metadata=auth)
                assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert "runs in flight, its bound" in (refused.value.details() or "")
                assert ("grpc-retry-pushback-ms", "1000") in tuple(refused.value.trailing_metadata() or ())
                # GraphQL asks SearchAI with the caller's key: the same bound, in its own words
                bff = create_graphql(limited, f"127.0.0.1:{port}", pool=runtime.pool)
                try:
                    async with httpx.AsyncClient(transport=httpx.ASGITransport(bff), base_url="http://bff",
                                                 timeout=60) as http:
                        body = (await http.post("/graphql", headers=bearer(FLOOD), json={
                            "query": "query { searchAi(question: \"which studio animated death note\") { status } }"
                        })).json()
                finally:
                    await bff.state.backend.close()
                err = body["errors"][0]
                assert err["extensions"] == {"code": "too_many_requests", "retryAfter": 1}, err
                service.gate.set()
                assert (await first).status == pb.STATUS_ANSWERED
        finally:
            await server.stop(None)


async def test_mcp_over_the_bound_is_a_tool_error_saying_when_to_retry(runtime: Runtime, settings: Settings) -> None:
    async with flooded(runtime, settings) as (service, admission, limited):
        app = mount_mcp(create_app(service, limited, admission=admission), service, limited, admission=admission)
        async with served(app) as base, \
                httpx2.AsyncClient(headers=bearer(FLOOD), timeout=120) as http, \
                streamable_http_client(f"{base}{MCP_PATH}", http_client=http) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            first = asyncio.create_task(session.call_tool("ask", QUESTION))
            await service.held.wait()
            began = time.monotonic()
            refused = await session.call_tool("ask", QUESTION)
            assert time.monotonic() - began < 5, "refused at once, not queued"
            assert refused.is_error
            text: Any = refused.content[0]
            assert "too many requests for this API key" in text.text and "(1 s)" in text.text
            service.gate.set()
            assert not (await first).is_error

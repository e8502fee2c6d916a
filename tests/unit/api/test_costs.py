"""The per-request ledger of deployment hops: what a replica reports, what its caller keeps, what HTTP shows."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agentic_rag.api import costs
from agentic_rag.serve.wire import Reply, accounted


class Replica:
    """A replica method that makes one handle call of its own (recorded as the real ``settle`` records it)."""

    @accounted
    async def search(self, delay_s: float) -> dict[str, Any]:
        await asyncio.sleep(delay_s)
        costs.record("Embedder.embed", 3.0, 2.0)
        return {"value": [1, 2]}


def test_a_replica_reply_carries_its_time_inside_and_the_hops_it_made() -> None:
    reply = asyncio.run(Replica().search(0.02))
    parsed = Reply.model_validate(reply)
    assert parsed.value == [1, 2]
    assert 15.0 <= parsed.ms < 1000.0
    assert parsed.hops == {"Embedder.embed": [1, 3.0, 2.0]}


def test_the_callers_ledger_adds_the_callees_hops_and_keeps_bad_names_out() -> None:
    with costs.ledger() as hops:
        nested: dict[str, list[float]] = {"Embedder.embed": [2, 4.0, 3.0], "bad name;dur=1": [1, 1, 1],
                                          "GraphRetriever.link": [1, 2.0]}
        costs.record("VectorRetriever.search", 10.0, 7.0, nested)
        costs.record("VectorRetriever.search", 5.0, 4.0)
    assert set(hops) == {"VectorRetriever.search", "Embedder.embed"}
    search = hops["VectorRetriever.search"]
    assert (search.calls, search.wall_ms, search.inside_ms, search.transport_ms) == (2, 15.0, 11.0, 4.0)
    assert hops["Embedder.embed"].transport_ms == 1.0


def test_nothing_is_kept_outside_a_ledger_and_ledgers_do_not_mix() -> None:
    costs.record("Orchestrator.run", 1.0, 1.0)  # no ledger open: dropped, no error

    async def request(name: str) -> costs.Ledger:
        with costs.ledger() as hops:
            await asyncio.sleep(0)
            costs.record(name, 2.0, 1.0)
            await asyncio.sleep(0)
        return hops

    async def both() -> list[costs.Ledger]:
        return list(await asyncio.gather(request("A.a"), request("B.b")))

    first, second = asyncio.run(both())
    assert set(first) == {"A.a"} and set(second) == {"B.b"}


def test_server_timing_round_trips_and_skips_metrics_it_did_not_write() -> None:
    hops = {"Orchestrator.run": costs.Hop(1, 40.5, 38.25), "Embedder.embed": costs.Hop(3, 9.0, 6.0)}
    value = costs.server_timing(42.0, hops)
    assert value.startswith("app;dur=42.00, ")
    app_ms, parsed = costs.parse_server_timing(f"cdn-cache;desc=HIT, {value}, db;dur=3")
    assert app_ms == 42.0
    assert parsed == hops


@pytest.mark.parametrize("path", ["/healthz", "/v1/nothing-here"])
def test_every_http_response_says_how_long_the_app_took(path: str) -> None:
    from agentic_rag.api.http.app import create_app
    from agentic_rag.settings import Settings

    class Nothing:  # the routes probed here never reach the service
        def chat_models(self) -> dict[str, Any]:
            return {}

    with TestClient(create_app(Nothing(), Settings())) as client:  # type: ignore[arg-type]
        r = client.get(path)
    app_ms, hops = costs.parse_server_timing(r.headers["server-timing"])
    assert app_ms > 0.0 and hops == {}

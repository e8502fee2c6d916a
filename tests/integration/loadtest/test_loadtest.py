"""``agentic-rag loadtest`` end to end against a real service: the HTTP app in-process under uvicorn.

The service is the same FastAPI app Ray Serve's ingress serves, over a :class:`LocalAgentService` (real
PostgreSQL, Qdrant local mode, embedder, loop), without Ray: replica sampling is turned off, and the
report must say so rather than fail. The command runs as a child process, as a user runs it; it starts
its own locust worker, so gevent never enters this test process.
"""

from __future__ import annotations

import asyncio
import csv
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import uvicorn

from agentic_rag.api.http.app import create_app
from agentic_rag.api.service import LocalAgentService
from agentic_rag.models.embeddings import Embedder
from agentic_rag.orchestrator.runtime import Runtime, build_orchestrator
from agentic_rag.settings import Settings
from agentic_rag.storage.qdrant import VectorStore
from agentic_rag.storage.sql import Pool

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
async def base_url(pool: Pool, qdrant: VectorStore, embedder: Embedder,
                   settings: Settings) -> AsyncIterator[str]:
    orchestrator, store = build_orchestrator(settings, pool, qdrant, embedder)
    runtime = Runtime(settings, pool, qdrant, embedder, store, orchestrator)
    app = create_app(LocalAgentService(runtime), settings)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    serving = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 (uvicorn has a flag for this, not an event)
        await asyncio.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    await serving


async def loadtest(*args: str | Path, timeout_s: float = 120) -> tuple[int, str]:
    """Run the command while this event loop goes on serving; its exit status and output."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agentic_rag.cli", "loadtest", *(str(a) for a in args),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env={**os.environ, "COLUMNS": "200"})
    out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def test_a_short_sweep_reports_and_gates(base_url: str, tmp_path: Path, settings: Settings) -> None:
    out = tmp_path / "report"
    passing = tmp_path / "pass.yaml"
    passing.write_text("objectives:\n"
                       "  - {metric: p95_ms, max: 30000, concurrency: 4, lane: search_ai}\n"
                       "  - {metric: error_rate, max: 0}\n"
                       "  - {metric: ok_rps, min: 0.5, lane: search_ai}\n", encoding="utf-8")
    code, text = await loadtest("--url", base_url, "--concurrency", "1,4", "--duration", "4", "--warmup", "1",
                                "--timeout", "30", "--ray-address", "none", "--targets", passing, "--out", out)
    assert code == 0, text
    assert "targets met" in text and "replicas: unavailable" in text

    report = json.loads((out / "report.json").read_text())
    assert [s["label"] for s in report["steps"]] == ["c1", "c4"]
    for step in report["steps"]:
        ai = step["lanes"]["search_ai"]
        assert step["errors"] == 0 and step["requests"] >= 3, step
        assert 0 < ai["latency"]["p50_ms"] <= ai["latency"]["p95_ms"] <= ai["latency"]["p99_ms"] < 30_000
        assert step["throughput_rps"] > 0.5 and step["warmup_requests"] >= 1
        # every answered run reported its turns, each within the turn budget, and some run retrieved
        turns = step["turns"]
        assert sum(turns["histogram"].values()) == ai["ok"], turns
        assert 1 <= turns["max"] <= settings.agent_max_turns, turns
        weighted = sum(int(k) * n for k, n in turns["histogram"].items()) / ai["ok"]
        assert turns["mean"] == pytest.approx(weighted), turns
        assert "total_ms" in step["stages"]
        assert step["lanes"]["search"]["requests"] >= 1  # the typeahead lane was loaded too
    assert report["knee"]["label"] in ("c1", "c4")
    assert report["replicas"]["available"] is False and "turned off" in report["replicas"]["reason"]
    # the server's runs-in-flight gauge was read from /metrics while the load ran
    assert report["replicas"]["max_runs_in_flight"] >= 1

    with (out / "samples.csv").open() as f:
        samples = list(csv.DictReader(f))
    assert len(samples) == sum(s["requests"] for s in report["steps"])
    assert all(float(s["latency_ms"]) > 0 for s in samples)
    assert "Targets: PASSED" in (out / "report.html").read_text()
    for png in ("latency_vs_load.png", "throughput_vs_load.png", "replicas_over_time.png", "in_flight_over_time.png"):
        assert (out / png).stat().st_size > 1000

    # the same recorded run against a target it misses: exit status 1, no new load
    failing = tmp_path / "fail.yaml"
    failing.write_text("objectives:\n  - {metric: p50_ms, max: 0.001, concurrency: 4}\n"
                       "min_replicas_reached: {Orchestrator: 2}\n", encoding="utf-8")
    code, text = await loadtest("--from", out, "--targets", failing, timeout_s=60)
    assert code == 1, text
    assert "targets NOT met" in text and "replica counts unavailable" in text

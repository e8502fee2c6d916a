"""The MCP server (issue 40) with the official SDK's client, a client we did not write: over stdio against
``agentic-rag mcp`` (a subprocess: the command a desktop client starts), and over streamable HTTP against the HTTP
API's ``/mcp`` route served by uvicorn with API keys. The service behind is the real one (PostgreSQL, Qdrant local
mode, the embedder, the loop); the Serve app's ``/mcp`` is tested in tests/integration/serve/test_serve_app.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from agentic_rag.api.http.app import create_app
from agentic_rag.api.mcp import MCP_PATH, create_mcp, mount_mcp
from agentic_rag.api.service import LocalAgentService
from agentic_rag.catalog.ingest import IngestReport
from agentic_rag.orchestrator.runtime import Runtime
from agentic_rag.settings import Settings
from tests.support.gated import GatedService
from tests.support.helpers import eid, served

pytestmark = pytest.mark.integration
KEY = "mcp-test-key"
DEATH_NOTE = eid("anime", "death-note")
TOOLS = {"search", "resolve", "ask", "clarify", "get_entities", "get_trajectory"}


@asynccontextmanager
async def _served(settings: Settings, runtime: Runtime, service: LocalAgentService | None = None,
                  **overrides: Any) -> AsyncIterator[str]:
    """The HTTP API with its /mcp route, API keys required, on uvicorn (lifespan on: it runs the MCP sessions); its
    MCP URL."""
    keyed = settings.model_copy(update={"api_keys": [KEY], **overrides})
    service = service or LocalAgentService(runtime)
    async with served(mount_mcp(create_app(service, keyed), service, keyed)) as base:
        yield f"{base}{MCP_PATH}"


@asynccontextmanager
async def _session(url: str, *, key: str | None = KEY, tenant: str = "mcp-a") -> AsyncIterator[ClientSession]:
    headers = {"X-Tenant": tenant, **({"Authorization": f"Bearer {key}"} if key else {})}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http, \
            streamable_http_client(url, http_client=http) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def _cli() -> str:
    found = shutil.which("agentic-rag", path=str(Path(sys.executable).parent))
    assert found, "the agentic-rag command is installed beside the interpreter"
    return found


@asynccontextmanager
async def _stdio_session(settings: Settings, dsn: str, tmp_path: Path) -> AsyncIterator[ClientSession]:
    # the embedded Qdrant store opens in one process at a time: the command gets a copy of the indexed one
    store = tmp_path / "qdrant"
    shutil.copytree(settings.qdrant_path, store)
    env = {**os.environ, "RAG_DATABASE_URL": dsn, "RAG_QDRANT_PATH": str(store), "HF_HUB_OFFLINE": "1"}
    params = StdioServerParameters(command=_cli(), args=["mcp", "--tenant", "mcp-stdio"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def _ask_and_follow(session: ClientSession) -> dict[str, Any]:
    """What both transports must do: list the tools with their schemas, search, resolve, ask (with progress),
    read the run's trajectory and the answer's entities, read a record as a resource."""
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == TOOLS
    # the schemas state the server's bounds, generated from the same contracts as the HTTP API's
    assert tools["search"].input_schema["properties"]["limit"]["maximum"] == 50
    assert tools["get_entities"].input_schema["properties"]["ids"]["maxItems"] == 100
    assert all(t.output_schema for t in tools.values())  # structured output, not text blobs

    hits = (await session.call_tool("search", {"q": "death no", "limit": 3})).structured_content
    assert hits and hits["hits"][0]["name"] == "Death Note"
    resolved = (await session.call_tool("resolve", {"text": "who animated fmab", "types": ["anime"]}))
    candidates = resolved.structured_content["candidates"]  # type: ignore[index]
    assert candidates[0]["name"] == "Fullmetal Alchemist: Brotherhood" and candidates[0]["match"] == "alias"
    assert 0 < candidates[0]["score"] <= 1

    progress: list[tuple[float, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, message))

    asked = await session.call_tool("ask", {"question": "which studio animated death note"},
                                    progress_callback=on_progress)
    answer = asked.structured_content
    assert answer and not asked.is_error
    assert "Madhouse" in answer["response"]["answer"] and answer["status"] == "answered"
    assert len(progress) >= 3 and [p for p, _ in progress] == sorted(p for p, _ in progress)  # stage by stage
    trajectory = (await session.call_tool("get_trajectory", {"trajectory_id": answer["trajectory_id"]}))
    assert trajectory.structured_content["status"] == "answered"  # type: ignore[index]

    named = [*answer["response"]["result_entities"], *answer["response"]["source_entities"]]
    refs = [f"{e['entity_type']}:{e['id']}" for e in named]
    missing = f"anime:{uuid.UUID(int=7)}"
    records = (await session.call_tool("get_entities", {"ids": [*refs, missing]})).structured_content
    assert refs and records and len(records["entities"]) == len(refs)
    assert records["missing"][0]["id"] == str(uuid.UUID(int=7))
    read = await session.read_resource(f"catalog://anime/{DEATH_NOTE}")
    assert json.loads(read.contents[0].text)["name"] == "Death Note"  # type: ignore[union-attr]

    # a follow-up names the conversation its first answer started
    follow = (await session.call_tool("ask", {"question": "what else did he direct?",
                                              "conversation_id": (await _directed(session))})).structured_content
    assert follow and "Attack on Titan" in follow["response"]["answer"] and follow["turn"] == 2
    # a clarification is answered with clarify, by the index of the choice meant
    asked_which = (await session.call_tool("ask", {"question": "Tell me about Naruto"})).structured_content
    assert asked_which and asked_which["status"] == "needs_clarification"
    choices = asked_which["response"]["clarification"]["choices"]
    index = next(i for i, c in enumerate(choices) if c["entity"]["entity_type"] == "character")
    resumed = await session.call_tool("clarify", {"trajectory_id": asked_which["trajectory_id"], "choice": index})
    assert resumed.structured_content and resumed.structured_content["status"] == "answered"
    again = await session.call_tool("clarify", {"trajectory_id": asked_which["trajectory_id"], "choice": index})
    assert again.is_error  # one resume per clarification
    return answer


async def _directed(session: ClientSession) -> str:
    first = (await session.call_tool("ask", {"question": "who directed Death Note?"})).structured_content
    assert first and "Tetsurō Araki" in first["response"]["answer"] and first["conversation_id"]
    return str(first["conversation_id"])


async def _refuses_bad_input(session: ClientSession) -> None:
    """Bad arguments, unknown tools and runs that do not exist are MCP errors; the session goes on."""
    for name, args in [("search", {"q": "x" * 500}), ("search", {"q": "naruto", "limit": 500}),
                       ("search", {"q": "naruto", "limit": "ten"}), ("search", {}),
                       ("get_entities", {"ids": [f"anime:{uuid.UUID(int=n)}" for n in range(101)]}),
                       ("get_entities", {"ids": ["anime:not-a-uuid"]}),
                       ("ask", {"question": ""}), ("ask", {"question": "hi", "budget": {"max_turns": 10_000}}),
                       ("get_trajectory", {"trajectory_id": str(uuid.UUID(int=1))}),
                       ("clarify", {"trajectory_id": str(uuid.UUID(int=1)), "choice": 0}),
                       ("no_such_tool", {})]:
        result = await session.call_tool(name, args)
        assert result.is_error, (name, args)
    assert (await session.call_tool("search", {"q": "naruto", "limit": 1})).structured_content


async def test_the_tools_answer_over_stdio(demo: IngestReport, settings: Settings, dsn: str, runtime: Runtime,
                                           tmp_path: Path) -> None:
    async with _stdio_session(settings, dsn, tmp_path) as session:
        answer = await _ask_and_follow(session)
        await _refuses_bad_input(session)
    # the run was recorded under the tenant the command was started with
    assert await runtime.store.get(uuid.UUID(answer["trajectory_id"]), tenant="mcp-stdio") is not None


async def test_the_tools_answer_over_streamable_http_with_a_key(settings: Settings, runtime: Runtime) -> None:
    async with _served(settings, runtime) as url:
        async with _session(url) as session:
            answer = await _ask_and_follow(session)
            await _refuses_bad_input(session)
        # tenants are the HTTP API's: another tenant does not see the run
        async with _session(url, tenant="mcp-b") as other:
            assert (await other.call_tool("get_trajectory", {"trajectory_id": answer["trajectory_id"]})).is_error
        # no key, no tools: the SDK's client cannot even start a session, and the answer says why
        for key in (None, "wrong-key"):
            with pytest.raises(BaseException, match="unhandled errors"):
                async with _session(url, key=key):
                    pass
            initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
            async with httpx2.AsyncClient(timeout=30) as http:
                refused = await http.post(url, json=initialize, headers={
                    "Accept": "application/json, text/event-stream",
                    **({"Authorization": f"Bearer {key}"} if key else {})})
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
            assert refused.json()["error"]["type"] == "unauthorized"


async def test_a_cancelled_call_cancels_its_run(settings: Settings, runtime: Runtime) -> None:
    """A client that cancels its ``ask`` (the SDK sends notifications/cancelled) cancels the run, which its trajectory
    records as cancelled; the session goes on."""
    service = GatedService(runtime, hold_after=2)
    async with Client(create_mcp(service, settings, tenant="mcp-cancel")) as client:
        call = asyncio.create_task(client.call_tool("ask", {"question": "Which anime is Luffy in?"}))
        async with asyncio.timeout(30):
            await service.held.wait()
            call.cancel()
            await service.cancelled.wait()
            # the orchestrator records the cancellation as the run unwinds: poll the store for it
            traj = await runtime.store.by_request_id(service.request_ids[0])
            while traj is None or traj.status != "cancelled":
                await asyncio.sleep(0.05)
                traj = await runtime.store.by_request_id(service.request_ids[0])
        assert traj.tenant == "mcp-cancel" and traj.events[-1].payload["status"] == "cancelled"
        assert (await client.call_tool("search", {"q": "luffy", "limit": 1})).structured_content


async def test_the_door_is_bounded(settings: Settings, runtime: Runtime) -> None:
    """Over the limit of requests in flight, an immediate 503 that says so (not a queue, not a crash); a body over the
    API's bound, 413; both leave the server serving."""
    service = GatedService(runtime, hold_after=2)
    async with _served(settings, runtime, service, max_inflight_runs=1) as url, _session(url) as first:
        held = asyncio.create_task(first.call_tool("ask", {"question": "Which anime is Luffy in?"}))
        async with asyncio.timeout(30):
            await service.held.wait()
        async with httpx2.AsyncClient(timeout=30, headers={"Authorization": f"Bearer {KEY}"}) as http:
            busy = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                   headers={"Accept": "application/json, text/event-stream"})
            assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
            assert "in flight" in busy.json()["error"]["message"]
            service.gate.set()
            assert not (await held).is_error
            huge = await http.post(url, content=b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "x": "'
                                   + b"x" * 2_000_000 + b'"}', headers={
                                       "Accept": "application/json, text/event-stream",
                                       "Content-Type": "application/json"})
            assert huge.status_code == 413
        assert (await first.call_tool("search", {"q": "luffy", "limit": 1})).structured_content


INSPECTOR = Path(__file__).resolve().parents[3] / ".data" / "node" / "node_modules" / ".bin" / "mcp-inspector"


def _inspector(*argv: str, tmp_path: Path, env: dict[str, str] | None = None) -> Any:
    """The MCP Inspector's command-line mode (npm @modelcontextprotocol/inspector, installed by .ci/run): its JSON."""
    # the stdio server imports and loads its models before it answers: on a busy machine (CI's) past the Inspector's
    # default connect timeout of 15 s
    done = subprocess.run([str(INSPECTOR), "--cli", *argv, "--connect-timeout", "120000"], capture_output=True,
                          text=True, timeout=180,
                          env={**os.environ, "MCP_CATALOG_PATH": str(tmp_path / "catalog.json"), **(env or {})})
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-2000:]
    return json.loads(done.stdout)


@pytest.mark.skipif(not INSPECTOR.exists() and not os.environ.get("RAG_REQUIRE_INSPECTOR"),
                    reason="the MCP Inspector is not installed (.ci/run installs it: npm, into .data/node)")
async def test_the_mcp_inspector_lists_and_calls_the_tools(demo: IngestReport, settings: Settings, dsn: str,
                                                           runtime: Runtime, tmp_path: Path) -> None:
    """A client we did not write, the way a user tries a server: the Inspector's CLI lists the tools of
    ``agentic-rag mcp`` over stdio, then calls search and ask on the HTTP app's /mcp with a key."""
    store = tmp_path / "qdrant"
    shutil.copytree(settings.qdrant_path, store)
    listed = await asyncio.to_thread(
        _inspector, _cli(), "mcp", "-e", f"RAG_DATABASE_URL={dsn}", "-e", f"RAG_QDRANT_PATH={store}",
        "-e", "HF_HUB_OFFLINE=1", "--method", "tools/list", tmp_path=tmp_path)
    assert {t["name"] for t in listed["tools"]} == TOOLS
    async with _served(settings, runtime) as url:
        key = ["--transport", "http", "--header", f"Authorization: Bearer {KEY}"]
        found = await asyncio.to_thread(_inspector, url, *key, "--method", "tools/call", "--tool-name", "search",
                                        "--tool-arg", "q=death no", "limit=3", tmp_path=tmp_path)
        assert found["structuredContent"]["hits"][0]["name"] == "Death Note"
        asked = await asyncio.to_thread(_inspector, url, *key, "--method", "tools/call", "--tool-name", "ask",
                                        "--tool-arg", "question=which studio animated death note", tmp_path=tmp_path)
        assert "Madhouse" in asked["structuredContent"]["response"]["answer"] and not asked.get("isError")

"""Small helpers several test modules share: a free port, an in-process HTTP client, an app served on a real socket,
a catalog entity's id."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import uvicorn
from fastapi import FastAPI

from agentic_rag.catalog.ids import entity_id


def free_port() -> int:
    """A loopback port free a moment ago (for a server the test starts on it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def client_for(app: FastAPI) -> httpx.AsyncClient:
    """An HTTP client that calls ``app`` in process (no server, no socket)."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://api", timeout=60)


@asynccontextmanager
async def served(app: FastAPI) -> AsyncIterator[str]:
    """``app`` on uvicorn on a free loopback port, its lifespan run (the MCP route's sessions need it); its base URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    serving = asyncio.create_task(server.serve())
    try:
        while not server.started:  # noqa: ASYNC110 (uvicorn has a flag for this, not an event)
            await asyncio.sleep(0.02)
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        await serving


def eid(entity_type: str, key: str) -> str:
    """The id of the catalog entity ``key`` of ``entity_type``, as a string."""
    return str(entity_id(entity_type, key))

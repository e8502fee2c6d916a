"""Small helpers several test modules share: a free port, an in-process HTTP client, a catalog entity's id."""

from __future__ import annotations

import socket

import httpx
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


def eid(entity_type: str, key: str) -> str:
    """The id of the catalog entity ``key`` of ``entity_type``, as a string."""
    return str(entity_id(entity_type, key))

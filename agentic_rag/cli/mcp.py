"""``agentic-rag mcp``: the catalog's tools over MCP on stdio, for a local client (a desktop assistant, an IDE).

The client starts this command and speaks MCP on its standard input and output; the service runs in this process
(the in-process runtime, as ``agentic-rag ask``). Logs go to standard error. The tools are those of the served
``/mcp`` route (:mod:`agentic_rag.api.mcp`); the caller is whoever started the process, and its runs are recorded
under ``--tenant``.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from agentic_rag.api.mcp import TENANT_RE, create_mcp
from agentic_rag.api.service import open_local_service
from agentic_rag.cli._app import app, fail, load_settings, with_dev_database


@app.command("mcp")
def mcp_stdio(tenant: Annotated[str, typer.Option(help="Whose runs these are (1 to 64 of a-z A-Z 0-9 - _).")]
              = "default") -> None:
    """Serve the MCP tools (search, resolve, ask, clarify, get_entities, get_trajectory) on stdio."""
    if not TENANT_RE.match(tenant):
        raise fail(f"--tenant {tenant!r}: 1 to 64 letters, digits, '-' or '_'")
    settings = with_dev_database(load_settings())

    async def serve() -> None:
        async with open_local_service(settings) as service:
            await create_mcp(service, settings, tenant=tenant).run_stdio_async()

    asyncio.run(serve())

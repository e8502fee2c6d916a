"""The published OpenAPI and the server agree (issue 40): schemathesis's own command line, as a new user would run
it, with every check (a 5xx, an undocumented status, a schema-valid request refused, an invalid one accepted, a
response off its schema, a wrong Allow header, ...) over the examples, coverage and fuzzing phases, against the HTTP
app served by uvicorn over the real service. Whatever the schema calls valid the server takes, and the reverse."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentic_rag.api.http.app import create_app
from agentic_rag.api.mcp import mount_mcp
from agentic_rag.api.service import LocalAgentService
from agentic_rag.catalog.ingest import IngestReport
from agentic_rag.orchestrator.runtime import Runtime
from agentic_rag.settings import Settings
from tests.support.helpers import served

pytestmark = pytest.mark.integration
EXAMPLES = 60  # per operation and phase: about a minute on two cores
SEED = "20261128"  # fixed, so a landing is not decided by the draw; change it to explore


async def test_schemathesis_finds_the_schema_and_the_server_in_agreement(demo: IngestReport, runtime: Runtime,
                                                                       settings: Settings) -> None:
    st = shutil.which("st", path=str(Path(sys.executable).parent))
    assert st, "schemathesis's st command is installed beside the interpreter (the dev extra)"
    service = LocalAgentService(runtime)
    async with served(mount_mcp(create_app(service, settings), service, settings)) as base:
        done = await asyncio.to_thread(subprocess.run, [
            st, "run", f"{base}/openapi.json", "--checks", "all", "--phases", "examples,coverage,fuzzing",
            "--max-examples", str(EXAMPLES), "--seed", SEED, "--request-timeout", "60", "--no-color",
        ], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "passed" in done.stdout and " 0 passed" not in done.stdout

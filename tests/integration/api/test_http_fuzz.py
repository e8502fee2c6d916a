"""Schemathesis against the app's own OpenAPI, in-process: generated requests never get a 5xx, never hang.

Schemathesis drives an ASGI app from an event loop of its own (one shared thread), and an asyncpg pool
belongs to the loop that opened it; so the service here opens its own pool on that loop,
over the session's database, on first use. The service behind it is the real one.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from agentic_rag.api.http.app import create_app
from agentic_rag.api.service import LocalAgentService
from agentic_rag.catalog.ingest import IngestReport
from agentic_rag.models.base import TextBackend
from agentic_rag.models.embeddings import Embedder
from agentic_rag.orchestrator.conversations import Conversation
from agentic_rag.orchestrator.loop import EventSink, RunResult
from agentic_rag.orchestrator.runtime import Runtime, build_orchestrator
from agentic_rag.orchestrator.trajectory import Trajectory
from agentic_rag.planners.factory import build_model
from agentic_rag.planners.llm.chat import text_backend_of
from agentic_rag.protocol import EntityRef, Mode, RunBudget
from agentic_rag.retrievers.typeahead import TypeaheadHit, TypeaheadQuery
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import make_pool
from agentic_rag.storage.qdrant import VectorStore
from agentic_rag.storage.sql import Pool

pytestmark = pytest.mark.integration

EXAMPLES_PER_OPERATION = 75  # 8 operations
MIN_REQUESTS = 500
REQUEST_TIMEOUT_S = 60  # a request that takes longer is a hang
sent: list[str] = []
openai_sent: list[str] = []


class LoopLocalService:
    """The real :class:`LocalAgentService`, built on first use on the loop that serves the app."""

    def __init__(self) -> None:
        self.config: tuple[str, Settings, VectorStore, Embedder] | None = None
        self.inner: LocalAgentService | None = None
        self.pool: Pool | None = None
        self.lock = asyncio.Lock()

    async def _service(self) -> LocalAgentService:
        async with self.lock:
            if self.inner is None:
                assert self.config is not None, "the fuzz_service fixture gives the database and the models"
                dsn, settings, qdrant, embedder = self.config
                self.pool = await make_pool(dsn, settings)
                orchestrator, store = build_orchestrator(settings, self.pool, qdrant, embedder)
                self.inner = LocalAgentService(Runtime(settings, self.pool, qdrant, embedder, store, orchestrator))
            return self.inner

    async def close(self) -> None:
        """Close the pool; a later request builds the service again."""
        async with self.lock:
            if self.pool is not None:
                await self.pool.close()
            self.pool = self.inner = None

    async def search(self, q: TypeaheadQuery) -> list[TypeaheadHit]:
        return await (await self._service()).search(q)

    async def ask(self, question: str, *, mode: Mode, tenant: str, request_id: str,
                  sink: EventSink | None = None, budget: RunBudget | None = None,
                  image: bytes | None = None, conversation_id: uuid.UUID | None = None) -> RunResult:
        return await (await self._service()).ask(question, mode=mode, tenant=tenant, request_id=request_id, sink=sink,
                                                 budget=budget, image=image, conversation_id=conversation_id)

    async def resume(self, trajectory_id: uuid.UUID, choice: int | str, *, tenant: str, request_id: str,
                     sink: EventSink | None = None, budget: RunBudget | None = None) -> RunResult:
        service = await self._service()
        return await service.resume(trajectory_id, choice, tenant=tenant, request_id=request_id, sink=sink,
                                    budget=budget)

    async def trajectory(self, trajectory_id: uuid.UUID, *, tenant: str) -> Trajectory | None:
        return await (await self._service()).trajectory(trajectory_id, tenant=tenant)

    async def conversation(self, conversation_id: uuid.UUID, *, tenant: str) -> Conversation | None:
        return await (await self._service()).conversation(conversation_id, tenant=tenant)

    async def forget(self, conversation_id: uuid.UUID, *, tenant: str) -> bool:
        return await (await self._service()).forget(conversation_id, tenant=tenant)

    async def entities(self, refs: list[EntityRef]) -> list[dict[str, Any]]:
        return await (await self._service()).entities(refs)

    async def ready(self) -> dict[str, bool]:
        return await (await self._service()).ready()

    def chat_models(self) -> Mapping[str, TextBackend]:
        # the models the settings name, as LocalAgentService serves them (they need no database)
        return {role: text_backend_of(build_model(Settings(), role)) for role in ("planner", "validator")}


SERVICE = LoopLocalService()


@asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    try:
        yield
    finally:  # on the loop the pool was opened on
        await SERVICE.close()


# Loaded at import, as schemathesis' pytest integration wants; the service connects on first use.
APP = create_app(SERVICE, Settings())
APP.router.lifespan_context = lifespan
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)
# the models' OpenAI-compatible route, mounted under /openai with an OpenAPI document of its own
openai_schema = schemathesis.openapi.from_asgi("/openai/openapi.json", APP)


@pytest.fixture(scope="module", autouse=True)
def fuzz_service(demo: IngestReport, dsn: str, settings: Settings, qdrant: VectorStore,
                 embedder: Embedder) -> None:
    # Schemathesis ends the app's lifespan (closing the pool) after each test; the next one reconnects.
    SERVICE.config = (dsn, settings, qdrant, embedder)


FUZZ = hypothesis_settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None, derandomize=True,
                           suppress_health_check=list(HealthCheck))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@schema.parametrize()
@FUZZ
def test_generated_requests_get_no_server_error(case: Any) -> None:
    sent.append(case.operation.label)
    case.call_and_validate(timeout=REQUEST_TIMEOUT_S, checks=CHECKS)


@openai_schema.parametrize()
@FUZZ
def test_generated_model_requests_get_no_server_error(case: Any) -> None:
    openai_sent.append(case.operation.label)
    case.call_and_validate(timeout=REQUEST_TIMEOUT_S, checks=CHECKS)


def test_enough_requests_were_generated() -> None:
    if not sent:
        pytest.skip("run with test_generated_requests_get_no_server_error")
    assert len(sent) >= MIN_REQUESTS, {op: sent.count(op) for op in set(sent)}
    assert len(set(sent)) == 10, set(sent)  # every operation of the API, the conversation routes included
    if openai_sent:
        assert len(set(openai_sent)) == 3 and len(openai_sent) >= 3 * 50, {op: openai_sent.count(op)
                                                                          for op in set(openai_sent)}

"""A random model is a fuzzer: the loop under a tiny randomly initialised transformer stays inside every bound.

Planner and validator are the real transformers backend (constrained by outlines) on the tiny model
the model-layer tests build. Its outputs are valid and meaningless, so this drives the loop through
arbitrary steps, ids and queries. Every run must end within ``max_turns`` and the deadline with a
valid response and a persisted trajectory, and every SQL statement that reaches PostgreSQL must be one
of the fixed templates in our code (or the DSL's compilation of a validated StructuredQuery).

``RAG_FUZZ_RUNS`` sets the number of runs (CI: 16; the issue's 200 runs: ``RAG_FUZZ_RUNS=200``).
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import os
import pkgutil
import re
from pathlib import Path
from typing import Any, ClassVar

import asyncpg
import asyncpg.introspection
import pytest

import agentic_rag
from agentic_rag.eval import load_demo_questions
from agentic_rag.models.base import CallShape, StructuredGenerator, schema_for
from agentic_rag.models.embeddings import Embedder
from agentic_rag.models.transformers_backend import TransformersBackend
from agentic_rag.orchestrator.guards import load_policy
from agentic_rag.orchestrator.loop import Orchestrator
from agentic_rag.orchestrator.retrieval import LocalRetrieval
from agentic_rag.orchestrator.trajectory import TrajectoryStore
from agentic_rag.planners.factory import build_fallback
from agentic_rag.planners.llm.prompts import render
from agentic_rag.protocol import AgentResponse, StructuredQuery
from agentic_rag.protocol.roles import ROLES
from agentic_rag.retrievers.dsl import compile_query
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import make_pool
from agentic_rag.storage.qdrant import VectorStore
from agentic_rag.storage.sql import Pool, Query

pytestmark = pytest.mark.integration
RUNS = int(os.environ.get("RAG_FUZZ_RUNS", "16"))


class Recording:
    """The text of every statement sent on a pool's connections (asyncpg's query loggers)."""

    seen: ClassVar[list[str]] = []

    @classmethod
    def log(cls, query: Any) -> None:
        cls.seen.append(query.query)

    @classmethod
    async def attach(cls, pool: Pool, size: int) -> None:
        """A query logger on each of the pool's ``size`` connections (all of them held at once)."""
        held = [await pool.acquire() for _ in range(size)]
        for conn in held:
            conn.add_query_logger(cls.log)
        for conn in held:
            await pool.release(conn)


# What asyncpg itself sends: transaction control (no values) and its own type introspection.
TRANSACTION = re.compile(r"(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE SAVEPOINT)\b")
ASYNCPG_OWN = {v for v in vars(asyncpg.introspection).values() if isinstance(v, str)}


def fixed_templates() -> set[str]:
    """Every SQL text our code can send: string constants in the source and the str values of module globals.

    Only the packages that talk to PostgreSQL are read (the Ray deployments only wire these together).
    """
    out: set[str] = set()
    for info in pkgutil.walk_packages(agentic_rag.__path__, "agentic_rag."):
        if not info.name.startswith(("agentic_rag.storage", "agentic_rag.retrievers", "agentic_rag.orchestrator",
                                     "agentic_rag.catalog", "agentic_rag.eval", "agentic_rag.understanding")):
            continue
        module = importlib.import_module(info.name)
        if module.__file__ and module.__file__.endswith(".py"):
            tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
            out |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        stack: list[Any] = [v for v in vars(module).values() if isinstance(v, str | dict | tuple | list | Query)]
        seen: set[int] = set()
        while stack:
            v = stack.pop()
            if id(v) in seen:
                continue
            seen.add(id(v))
            if isinstance(v, str):
                out.add(v)
            elif isinstance(v, Query):  # a statement with named parameters, as compiled for asyncpg
                out.add(v.text)
            elif isinstance(v, dict):
                stack.extend(x for x in v.values() if isinstance(x, str | dict | tuple | list | Query))
            elif isinstance(v, tuple | list):
                stack.extend(x for x in v if isinstance(x, str | dict | tuple | list | Query))
    return out


@pytest.fixture(scope="module")
async def fuzz_orchestrator(dsn: str, pool: Pool, qdrant: VectorStore, embedder: Embedder,
                            settings: Settings, tiny_backend: TransformersBackend) -> Orchestrator:
    backend = tiny_backend  # shared with the backend tests: its constraint indexes are built once a session
    # the constraint indexes are built before the runs, so the model's own output drives every stage
    # (built inside the first runs, the short per-call limit would hand most calls to the fallback)
    await backend.prepare([schema_for(t) for t in ROLES])
    # each call the whole full-style prompt under its role's whole schema (the indexes prepared above), not
    # narrowed to the entities shown: the random model's own output, unhelped, drives every stage
    model = StructuredGenerator(backend, max_attempts=2,
                                shape=lambda inp, t: CallShape(render(inp, t, fit=False), schema_for(t)))
    # short limits: a slow model call falls back to the heuristic, so runs also reach the later stages
    s = settings.model_copy(update={"agent_max_turns": 3, "agent_deadline_ms": 8_000,
                                    "generation_timeout_ms": 2_500})
    return Orchestrator(s, planner=model, validator=model, fallback=build_fallback(s),
                        retrieval=LocalRetrieval(pool, qdrant, embedder.aembed, s),
                        store=TrajectoryStore(pool, s), policy=load_policy())


async def test_random_models_never_break_the_loop(fuzz_orchestrator: Orchestrator, dsn: str, qdrant: VectorStore,
                                                  embedder: Embedder) -> None:
    o = fuzz_orchestrator
    # every statement of these runs is recorded by the connection that sends it
    traced = await make_pool(dsn, o.settings.model_copy(update={"pool_min_size": 4, "pool_max_size": 4}))
    await Recording.attach(traced, 4)
    Recording.seen.clear()
    o.retrieval = LocalRetrieval(traced, qdrant, embedder.aembed, o.settings)
    o.store = TrajectoryStore(traced, o.settings)
    questions = [q.question for q in load_demo_questions()]
    deadline_s = o.settings.agent_deadline_ms / 1000
    queries: list[StructuredQuery] = []
    statuses: dict[str, int] = {}
    try:
        for i in range(RUNS):
            t0 = asyncio.get_running_loop().time()
            result = await o.run(questions[i % len(questions)])
            elapsed = asyncio.get_running_loop().time() - t0
            assert elapsed < deadline_s + 5, f"run {i} took {elapsed:.1f} s"
            assert 0 <= result.turns <= o.settings.agent_max_turns
            AgentResponse.model_validate(result.response.model_dump(mode="json"))
            traj = await o.store.get(result.trajectory_id)
            assert traj is not None and traj.status == result.response.status and traj.final_response
            statuses[result.response.status] = statuses.get(result.response.status, 0) + 1
            print(f"run {i}: {elapsed:.1f} s, {result.turns} turn(s), {result.response.status}, "
                  f"{ {k: round(v) for k, v in result.timings.items() if v} }")
            for e in traj.events:
                if e.stage == "retrieve" and e.type == "action" and e.payload["source"] == "pg_query":
                    queries.append(StructuredQuery.model_validate(e.payload["intent"]))
    finally:
        await traced.close()
    print(f"\n{RUNS} runs: {statuses}")
    allowed = fixed_templates() | ASYNCPG_OWN | {compile_query(q)[0] for q in queries}
    unknown = {t for t in Recording.seen if t not in allowed and not TRANSACTION.match(t)}
    assert Recording.seen, "the runs sent SQL"
    assert not unknown, f"SQL outside the fixed templates reached the database: {sorted(unknown)[:3]}"

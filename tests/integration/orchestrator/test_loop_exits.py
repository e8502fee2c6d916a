"""Every documented exit of the loop, driven by scripted models so that each run takes the same path.

The planner and validator here follow a fixed script for the decision under test and leave every other
call to the heuristic; retrieval, the trajectory store and PostgreSQL are real. Each test checks what a
client reads (the response's termination reason, status and warnings) and what the trajectory keeps.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any, TypeVar, cast

import pytest
from pydantic import BaseModel

from agentic_rag.catalog.ids import entity_id
from agentic_rag.errors import InvalidInput
from agentic_rag.models.base import (
    Generation,
    GenerationError,
    ModelOverloaded,
    ModelUnavailable,
    StructuredModel,
    Usage,
)
from agentic_rag.models.embeddings import Embedder
from agentic_rag.orchestrator.guards import load_policy
from agentic_rag.orchestrator.loop import Orchestrator, RunResult
from agentic_rag.orchestrator.retrieval import LocalRetrieval
from agentic_rag.orchestrator.trajectory import Trajectory, TrajectoryStore
from agentic_rag.planners.heuristic import HeuristicModel
from agentic_rag.protocol import (
    DocumentGrade,
    GradeReport,
    NextStep,
    RunBudget,
    SearchFilters,
    SearchIntent,
    SufficiencyReport,
)
from agentic_rag.protocol.roles import RoleInput
from agentic_rag.settings import Settings
from agentic_rag.storage.qdrant import VectorStore
from agentic_rag.storage.sql import Pool

pytestmark = pytest.mark.integration

T = TypeVar("T", bound=BaseModel)
HEURISTIC = HeuristicModel()
LUFFY, ONE_PIECE = str(entity_id("character", "monkey-d-luffy")), str(entity_id("anime", "one-piece"))
QUESTION = "Which anime is Luffy in?"  # the heuristic answers it in two turns: find Luffy, fetch his anime
ABOUT = "Tell me about Monkey D. Luffy"  # one search answers it


class Scripted:
    """A model that answers ``output_type`` from ``script`` (given how many such calls came before) and
    leaves every other call to the heuristic."""

    def __init__(self, name: str, output_type: type[BaseModel], script: Callable[[int], Any]) -> None:
        self.name = name
        self.output_type = output_type
        self.script = script
        self.calls = 0

    async def generate(self, role_input: RoleInput, output_type: type[T], *, max_tokens: int = 512,
                       temperature: float = 0.0) -> Generation[T]:
        if output_type is not self.output_type:
            return await HEURISTIC.generate(role_input, output_type, max_tokens=max_tokens, temperature=temperature)
        self.calls += 1
        out = self.script(self.calls - 1)
        if asyncio.iscoroutine(out):
            out = await out
        return Generation(cast(T, out), Usage(attempts=1))


class Broken:
    """A model that never gives valid output (a server that answers garbage every attempt)."""

    name = "broken"

    async def generate(self, role_input: RoleInput, output_type: type[T], *, max_tokens: int = 512,
                       temperature: float = 0.0) -> Generation[T]:
        raise GenerationError(output_type.__name__, attempts=3, errors=["not valid JSON"] * 3)


class Unavailable:
    """A model whose engine is gone (vLLM's EngineDeadError, an OpenAI server over its queue: the backends raise
    these typed errors for them)."""

    name = "dead-engine"

    def __init__(self, error: ModelUnavailable) -> None:
        self.error = error

    async def generate(self, role_input: RoleInput, output_type: type[T], *, max_tokens: int = 512,
                       temperature: float = 0.0) -> Generation[T]:
        raise self.error


class Hanging:
    """A model that never answers."""

    name = "hanging"

    async def generate(self, role_input: RoleInput, output_type: type[T], *, max_tokens: int = 512,
                       temperature: float = 0.0) -> Generation[T]:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")


def search(query: str | None = None, *, ids: list[str] | None = None) -> NextStep:
    intent = SearchIntent(rationale="scripted", entity_type="character", query=query,
                          filters=SearchFilters(id=ids or []))
    return NextStep(action="qdrant_search", rationale="scripted", search_intent=intent)


def never_sufficient(_: int) -> SufficiencyReport:
    return SufficiencyReport(sufficient=False, rationale="scripted", missing=["the anime"])


@pytest.fixture
def build(pool: Pool, qdrant: VectorStore, embedder: Embedder,
          settings: Settings) -> Callable[..., Orchestrator]:
    def make(planner: StructuredModel = HEURISTIC, validator: StructuredModel = HEURISTIC,
             **changes: object) -> Orchestrator:
        s = settings.model_copy(update=changes)
        return Orchestrator(s, planner=planner, validator=validator, fallback=HeuristicModel(),
                            retrieval=LocalRetrieval(pool, qdrant, embedder.aembed, s),
                            store=TrajectoryStore(pool, s), policy=load_policy())
    return make


async def trajectory(o: Orchestrator, result: RunResult) -> Trajectory:
    traj = await o.store.get(result.trajectory_id)
    assert traj is not None
    final = traj.events[-1]
    assert final.stage == "final" and final.payload["termination"] == result.response.evidence.termination_reason
    assert traj.status == result.response.status
    return traj


async def test_failed_models_fall_back_to_the_heuristic_and_still_answer(build: Callable[..., Orchestrator]) -> None:
    o = build(planner=Broken(), validator=Hanging(), generation_timeout_ms=200)
    result = await o.run(QUESTION)
    r = result.response
    # the heuristic decided every stage, so the run is the heuristic's own
    assert r.status == "answered" and r.evidence.termination_reason == "sufficient"
    assert ONE_PIECE in {e.id for e in r.result_entities}
    assert "rewrite: the planner model gave no valid output; used the heuristic" in r.warnings
    assert "validate: the validator model did not answer in time; used the heuristic" in r.warnings
    traj = await trajectory(o, result)
    errors = {(e.stage, e.payload["model"], e.payload["fallback"]) for e in traj.events if e.type == "error"}
    assert {("rewrite", "broken", "heuristic"), ("select", "broken", "heuristic"), ("draft", "broken", "heuristic"),
            ("validate", "hanging", "heuristic")} <= errors
    assert all("not valid JSON" in e.payload["error"] for e in traj.events
               if e.type == "error" and e.payload["model"] == "broken")
    # the usage of a stage names what decided it, the heuristic, and which model failed before it
    used = {(e.stage, e.payload["usage"]["model"], e.payload["usage"].get("failed_model")) for e in traj.events
            if e.type == "decision" and "usage" in e.payload}
    assert {("rewrite", "heuristic", "broken"), ("select", "heuristic", "broken"),
            ("validate", "heuristic", "hanging")} <= used
    assert not any(model in {"broken", "hanging"} for _, model, _ in used)


@pytest.mark.parametrize("error", [ModelUnavailable("planner: the vLLM engine died", retryable=False),
                                   ModelOverloaded("planner is over its queue")])
async def test_an_unavailable_model_falls_back_to_the_heuristic(build: Callable[..., Orchestrator],
                                                                error: ModelUnavailable) -> None:
    o = build(planner=Unavailable(error), validator=Unavailable(error))
    result = await o.run(QUESTION)
    r = result.response
    assert r.status == "answered" and ONE_PIECE in {e.id for e in r.result_entities}
    assert "rewrite: the planner model is unavailable; used the heuristic" in r.warnings
    assert "validate: the validator model is unavailable; used the heuristic" in r.warnings
    traj = await trajectory(o, result)
    assert {e.payload["error"] for e in traj.events if e.type == "error"} == {str(error)}


async def test_repeating_the_same_step_ends_as_loop_detected(build: Callable[..., Orchestrator]) -> None:
    planner = Scripted("repeater", NextStep, lambda _: search("Monkey D. Luffy"))
    validator = Scripted("doubter", SufficiencyReport, never_sufficient)
    o = build(planner=planner, validator=validator, agent_fast_path=False, agent_max_turns=6)
    result = await o.run(ABOUT)
    r = result.response
    assert r.evidence.termination_reason == "loop_detected"
    assert result.turns == 3  # the step ran once, then was repeated twice
    # answered from what the one step found, and marked as not validated
    assert r.status == "best_effort" and LUFFY in {e.id for e in r.result_entities}
    traj = await trajectory(o, result)
    assert len([e for e in traj.events if e.stage == "retrieve" and e.type == "action"]) == 1
    repeats = [e.payload["loop_detected"] for e in traj.events if "loop_detected" in e.payload]
    assert len(repeats) == 2 and all(len(r) == 1 for r in repeats)


async def test_steps_that_find_nothing_end_as_failed_steps(build: Callable[..., Orchestrator]) -> None:
    # a fetch of an id no entity has: a new step every turn, and every one finds nothing
    planner = Scripted("prober", NextStep, lambda _: search(ids=[str(uuid.uuid4())]))
    validator = Scripted("doubter", SufficiencyReport, never_sufficient)
    o = build(planner=planner, validator=validator, agent_max_failed_steps=2, agent_max_turns=6)
    result = await o.run(QUESTION)
    r = result.response
    assert r.evidence.termination_reason == "failed_steps"
    assert r.status == "not_found" and not r.result_entities
    assert result.turns == 2 and "2 steps found nothing" in r.warnings
    traj = await trajectory(o, result)
    observed = [e.payload for e in traj.events if e.stage == "observe"]
    assert [(p["status"], p["failed_steps"]) for p in observed] == [("empty", 1), ("empty", 2)]


async def test_a_model_that_hangs_past_the_deadline_ends_the_run_with_what_was_found(
        build: Callable[..., Orchestrator]) -> None:
    async def first_then_hang(call: int) -> NextStep:
        if call == 0:
            return search("Monkey D. Luffy")
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    planner = Scripted("stalls", NextStep, first_then_hang)
    validator = Scripted("doubter", SufficiencyReport, never_sufficient)
    # time enough for the first turn on a busy machine; the second select then waits until the deadline
    o = build(planner=planner, validator=validator, agent_fast_path=False, agent_deadline_ms=4000)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    result = await o.run(ABOUT)
    assert 4 <= loop.time() - t0 < 8
    r = result.response
    assert r.evidence.termination_reason == "deadline"
    assert "deadline of 4000 ms reached; answered from what was found" in r.warnings
    # no time is left for a model: the heuristic drafts from the card the first turn found
    assert r.status == "best_effort" and LUFFY in {e.id for e in r.result_entities}
    traj = await trajectory(o, result)
    assert [e.payload for e in traj.events if e.stage == "budget"] == [{"rule": "deadline", "ms": 4000}]
    assert planner.calls == 2  # the first turn ran whole; the deadline cut the second select
    assert not [e for e in traj.events if e.type == "error"], "running out of time is not a model failure"


async def test_a_finish_the_validator_rejects_goes_on_until_a_real_exit(build: Callable[..., Orchestrator]) -> None:
    planner = Scripted("quitter", NextStep, lambda call: search("Monkey D. Luffy") if call == 0
                       else NextStep(action="finish", rationale="scripted"))
    validator = Scripted("doubter", SufficiencyReport, never_sufficient)
    o = build(planner=planner, validator=validator, agent_fast_path=False, agent_max_turns=3)
    result = await o.run(ABOUT)
    r = result.response
    # the rejected finishes did not end the run; the turn budget did, so max_turns is what happened
    assert r.evidence.termination_reason == "max_turns" and result.turns == 3
    assert "turn budget of 3 reached; this is the best answer from what was found" in r.warnings
    assert r.status == "best_effort" and LUFFY in {e.id for e in r.result_entities}
    traj = await trajectory(o, result)
    rejected = [e.payload for e in traj.events if e.payload.get("finish") == "rejected by the validator"]
    assert len(rejected) == 2 and all(p["missing"] == ["the anime"] for p in rejected)


async def test_grading_that_leaves_too_few_results_records_the_rewrite_it_triggers(
        build: Callable[..., Orchestrator]) -> None:
    grader = Scripted("picky", GradeReport,
                      lambda _: GradeReport(grades=[DocumentGrade(index=i, relevant=False) for i in range(50)]))
    searcher = Scripted("searcher", NextStep, lambda _: search("Monkey D. Luffy"))
    o = build(planner=searcher, validator=grader, agent_fast_path=False, agent_max_turns=1)
    result = await o.run(ABOUT)
    traj = await trajectory(o, result)
    stages = [(e.stage, e.payload.get("rewrite")) for e in traj.events if e.type == "decision"]
    why = ("grade", "too few relevant results; rewriting the query")
    assert why in stages
    # the rewrite comes right after the grade that asked for it
    after = stages[stages.index(why) + 1]
    assert after[0] == "rewrite"


async def test_a_run_keeps_the_budget_its_caller_gives_it(build: Callable[..., Orchestrator]) -> None:
    # one orchestrator (the server's limits: 6 turns, 3 failed steps); each run asks for less
    o = build(planner=Scripted("prober", NextStep, lambda _: search(ids=[str(uuid.uuid4())])),
              validator=Scripted("doubter", SufficiencyReport, never_sufficient),
              agent_max_turns=6, agent_max_failed_steps=3)
    one_failure = await o.run(QUESTION, budget=RunBudget(max_failed_steps=1))
    assert one_failure.response.evidence.termination_reason == "failed_steps" and one_failure.turns == 1
    one_turn = await o.run(QUESTION, budget=RunBudget(max_turns=1))
    assert one_turn.response.evidence.termination_reason == "max_turns" and one_turn.turns == 1
    traj = await trajectory(o, one_turn)
    assert [e.payload for e in traj.events if e.stage == "budget"] == [{"rule": "max_turns", "turns": 1}]
    default = await o.run(QUESTION)
    assert default.response.evidence.termination_reason == "failed_steps" and default.turns == 3


async def test_a_budget_over_the_servers_limits_is_refused_before_the_run_starts(
        build: Callable[..., Orchestrator]) -> None:
    o = build(agent_max_turns=6, agent_deadline_ms=30_000)
    tid = uuid.uuid4()
    with pytest.raises(InvalidInput, match="max_turns 7 is over this server's 6") as refused:
        await o.run(QUESTION, budget=RunBudget(max_turns=7, deadline_ms=60_000), trajectory_id=tid)
    assert "deadline_ms 60000 is over this server's 30000" in str(refused.value)
    assert await o.store.get(tid) is None  # nothing was recorded

"""The fault suite's pieces without a served app: what counts as degraded or leaked, readiness held after a
degraded run, the 503 that names its run, the fault config, the table."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from agentic_rag.api.errors import api_error
from agentic_rag.api.http.errors import error_body
from agentic_rag.api.service import Degradations, ServiceUnavailable
from agentic_rag.loadtest.faults import LEAKED, FaultRun, Outcome, Phase, Probe, Verdict, markdown
from agentic_rag.orchestrator.loop import RunResult
from agentic_rag.orchestrator.state import dependency_of
from agentic_rag.protocol import AgentResponse
from agentic_rag.retrievers.errors import RetrievalError
from agentic_rag.serve import launch
from agentic_rag.serve.args import settings_from
from agentic_rag.serve.faults import FAULT_ARGS, fault_config

CONFIG = Path(__file__).resolve().parents[3] / "configs" / "local.yaml"


def _answer(*warnings: str, status: int = 200) -> Outcome:
    body = {"status": "answered", "response": {"warnings": list(warnings)}}
    return Outcome("ask", "r-1", 0.0, 1.0, status, body=body if status == 200 else None)


def test_an_answer_is_degraded_when_a_warning_says_a_dependency_failed() -> None:
    assert _answer("the names in the question could not be looked up: the catalog's name index is unavailable").degraded
    assert _answer("qdrant_search anime 'x' failed: the vector search did not answer in time").degraded
    assert not _answer("2 steps found nothing").degraded
    assert not _answer("deadline of 15000 ms reached; answered from what was found").degraded
    assert _answer().clean and not _answer(status=503).clean


@pytest.mark.parametrize(("text", "leaks"), [
    ("the orchestrator is unavailable right now; retry shortly; the run is trajectory 1b4e...", False),
    ("pg_graph neighbors 8cd649b6 failed: the graph retriever is unavailable", False),
    ("ActorDiedError: The actor died unexpectedly before finishing this task.", True),
    ("asyncpg.exceptions.ConnectionDoesNotExistError: connection was closed", True),
    ("connection to server at 127.0.0.1, port 5432 failed", True),
    ("Traceback (most recent call last):", True),
])
def test_library_text_is_told_from_our_own_words(text: str, leaks: bool) -> None:
    assert bool(LEAKED.search(text)) is leaks


def _result(*degraded: str) -> RunResult:
    response = AgentResponse(answer="x", confidence=0.5)
    return RunResult(uuid.uuid4(), "r", response, 1, 1.0, {}, "agentic", degraded=degraded)


def test_readiness_reports_a_dependency_down_for_a_while_after_it_failed_a_run() -> None:
    held = Degradations(hold_s=0.2)
    checks = {"postgres": True, "qdrant": True, "models": True}
    assert held.apply(checks) == checks
    held.saw(_result("postgres"))
    assert held.apply(checks) == {"postgres": False, "qdrant": True, "models": True}
    assert held.apply({**checks, "qdrant": False})["qdrant"] is False, "a failed probe stays failed"
    time.sleep(0.25)
    assert held.apply(checks) == checks


def test_a_failed_step_counts_against_the_store_that_failed() -> None:
    assert dependency_of("qdrant_search", RetrievalError("embedder", "unavailable", "x")) == "models"
    assert dependency_of("qdrant_search", RetrievalError("postgres", "timeout", "x")) == "postgres"
    assert dependency_of("qdrant_search", TimeoutError()) == "qdrant"
    assert dependency_of("pg_graph", RetrievalError("pg_graph", "unavailable", "x")) == "postgres"


def test_a_503_during_a_run_names_the_run() -> None:
    tid = uuid.uuid4()
    err = api_error(ServiceUnavailable("Orchestrator: ActorDiedError: ...", component="the orchestrator",
                                       trajectory_id=tid))
    assert err is not None and err.status == 503 and err.headers == {"Retry-After": "1"}
    assert err.message == f"the orchestrator is unavailable right now; retry shortly; the run is trajectory {tid}"
    assert error_body(err, "r-1").error.trajectory_id == tid
    refused = api_error(ServiceUnavailable("full", component="the orchestrator"))
    assert refused is not None and refused.trajectory_id is None and "trajectory" not in refused.message


def test_the_fault_config_pins_the_orchestrators_and_shortens_the_deadline() -> None:
    config = fault_config(launch.load_config(CONFIG), orchestrators=2, args=FAULT_ARGS)
    app = config.applications[0]
    orchestrator = next(d for d in app.deployments if d.name == "Orchestrator")
    assert isinstance(orchestrator.autoscaling_config, dict)
    assert orchestrator.autoscaling_config["min_replicas"] == orchestrator.autoscaling_config["max_replicas"] == 2
    settings = settings_from(app.args)
    assert settings.agent_deadline_ms == 15_000 and settings.planner_backend == "heuristic"
    # a killed replica's runs are closed by the others once it is unheard, not by a sweep shortened for the run
    assert (settings.run_sweep_interval_ms, settings.runner_lapse_ms) == (60_000, 10_000)


async def test_the_table_has_a_row_per_phase_and_names_what_failed() -> None:
    async with FaultRun("http://127.0.0.1:9", ["q"], tenant="t", clients=1) as run:
        base = Phase("baseline", 0.0, note="no fault", outcomes=[_answer()])
        base.probes = [Probe(0.0, 0.1, True, {})]
        killed = Phase("Embedder replica killed", 1.0, note="killed 1 of 1", recovered=True, recovery_s=4.2,
                       outcomes=[_answer("x failed: the embedding model is unavailable"), _answer(status=503)])
        killed.probes = [Probe(1.0, 1.5, False, {}), Probe(2.0, 2.5, True, {})]
        run.phases = [base, killed]
        verdict = Verdict()
        verdict.fail("readiness", "r-9: degraded answer while /readyz said ready")
        table = markdown(run, verdict)
    assert "| Embedder replica killed | killed 1 of 1 | 2 | 1 | 1 | 1 | 0 | 4.2 s | 1.0 s |" in table
    assert "FAILED: /readyz is unready while answers are degraded: 1 problem(s)" in table
